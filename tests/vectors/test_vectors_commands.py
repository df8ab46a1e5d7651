"""The command line of the vectors: ``ch18 evaluate`` prints gensim's figures, ``ch18 export``
writes files gensim reads back, ``ch18 neighbours --analogy`` answers as ``most_similar``, with
the table's own caption, a random-pair baseline, and every unknown word named in one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_from_scratch.demos.ch18_token_embeddings.neighbours import CosineTable, random_pair_cosine
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_pretrained_embedding
from llm_from_scratch.labels import cosine_text
from llm_from_scratch.vectors import WordVectors

from cli_support import run_cli
from conftest import import_optional, require_pretrained, require_tokenizers
from train_support import run_train, write_corpus
from vectors_support import gensim_data

pytestmark = pytest.mark.filterwarnings("ignore:attribute count not present")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    require_tokenizers()
    folder = tmp_path_factory.mktemp("trained")
    status, _, err = run_train(write_corpus(folder), folder / "out")
    assert status == 0, err
    return folder / "out" / "table.safetensors", folder / "out" / "tokenizer.json"


def keyed_vectors() -> Any:
    return import_optional("gensim.models.keyedvectors", "gensim").KeyedVectors


def as_gensim(wv: WordVectors) -> Any:
    keyed = keyed_vectors()(wv.vector_size)
    keyed.add_vectors(wv.index_to_key, np.array(wv.vectors))
    return keyed


def pair_options(trained: tuple[Path, Path]) -> list[str]:
    return ["--table", str(trained[0]), "--tokenizer", str(trained[1])]


PAIRS = (
    "king\tqueen\t8.5\nmother\tfather\t7.9\none\ttwo\t6.0\nking\tmorning\t0.5\nson\tnight\t0.8\n"
)
ANALOGIES = (
    ": family\nfather mother son daughter\nbrother sister father mother\n"
    ": numbers\none two three four\ntwo three four five\nking queen prince princess\n"
)


def test_evaluate_prints_gensims_figures_for_a_trained_pair(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path], tmp_path: Path
) -> None:
    pairs, analogies = tmp_path / "pairs.tsv", tmp_path / "analogies.txt"
    pairs.write_text(PAIRS, encoding="utf-8")
    analogies.write_text(ANALOGIES, encoding="utf-8")
    status, out, err = run_cli(
        capsys, "ch18", "evaluate", *pair_options(trained),
        "--pairs", str(pairs), "--analogies", str(analogies),
    )  # fmt: skip
    assert (status, err) == (0, "")
    keyed = as_gensim(WordVectors.load(*trained))
    pearson, spearman, unknown = keyed.evaluate_word_pairs(str(pairs))
    score, sections = keyed.evaluate_word_analogies(str(analogies))
    assert f"  Pearson {pearson.statistic:.4f} (p-value {pearson.pvalue:.3g})" in out
    assert f"  Spearman {spearman.statistic:.4f} (p-value {spearman.pvalue:.3g})" in out
    assert f"  pairs with unknown words {unknown:.1f}%" in out
    assert f"{100 * score:.1f}% right" in out
    total = sections[-1]
    done = len(total["correct"]) + len(total["incorrect"])
    assert out.endswith(f"Total accuracy: {100 * score:.1f}% ({len(total['correct'])}/{done})\n")


def test_evaluate_reads_a_word2vec_file(capsys: pytest.CaptureFixture[str]) -> None:
    vectors, pairs = gensim_data("euclidean_vectors.bin"), gensim_data("simlex999.txt")
    status, out, _ = run_cli(
        capsys, "ch18", "evaluate", "--vectors", str(vectors), "--pairs", str(pairs)
    )
    keyed = keyed_vectors().load_word2vec_format(str(vectors), binary=True)
    pearson, spearman, _ = keyed.evaluate_word_pairs(str(pairs))
    assert status == 0
    assert out.splitlines()[0] == f"vectors {vectors}: 2747 words, width 10"
    assert f"Pearson {pearson.statistic:.4f}" in out and f"Spearman {spearman.statistic:.4f}" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "error: ch18 evaluate needs --pairs FILE, --analogies FILE or both\n"),
        (
            ("--table", "t.safetensors", "--pairs", "p.tsv"),
            "error: ch18 evaluate reads --table with --tokenizer, or --vectors FILE; give both "
            "--table and --tokenizer, or neither for the packaged MiniLM table\n",
        ),
        (
            ("--vectors", "v.vec", "--table", "t", "--tokenizer", "k", "--pairs", "p.tsv"),
            "error: ch18 evaluate reads --table with --tokenizer, or --vectors FILE; give a pair "
            "or --vectors, not both\n",
        ),
    ],
)
def test_evaluate_refuses_what_it_cannot_run_in_one_line(
    capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...], message: str
) -> None:
    assert run_cli(capsys, "ch18", "evaluate", *arguments) == (2, "", message)


def test_a_missing_pairs_file_is_refused_input_naming_it(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "none.tsv"
    status, out, err = run_cli(
        capsys, "ch18", "evaluate", *pair_options(trained), "--pairs", str(missing)
    )
    assert (status, out) == (2, "")  # a path that names nothing (docs/errors.md)
    assert err == f"error: cannot read {missing}: No such file or directory\n"


@pytest.mark.parametrize("form", ["word2vec", "word2vec-binary"])
def test_export_writes_what_gensim_reads_back(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path], tmp_path: Path, form: str
) -> None:
    output = tmp_path / "table.vec"
    status, out, err = run_cli(
        capsys, "ch18", "export", *pair_options(trained), "--format", form, "--output", str(output)
    )
    wv = WordVectors.load(*trained)
    assert (status, err) == (0, "")
    assert out == f"wrote {len(wv)} vectors of width 8 from {trained[0]}: {output}\n"
    keyed = keyed_vectors().load_word2vec_format(str(output), binary=form == "word2vec-binary")
    assert keyed.index_to_key == wv.index_to_key and np.array_equal(keyed.vectors, wv.vectors)


def test_export_writes_the_projector_files(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "projector"
    status, _, _ = run_cli(
        capsys, "ch18", "export", *pair_options(trained), "--format", "projector",
        "--output", str(folder),
    )  # fmt: skip
    wv = WordVectors.load(*trained)
    assert status == 0
    assert (folder / "metadata.tsv").read_text(encoding="utf-8").splitlines() == wv.index_to_key
    rows = (folder / "vectors.tsv").read_text(encoding="utf-8").splitlines()
    assert np.array_equal(np.array([row.split("\t") for row in rows], np.float32), wv.vectors)


def test_an_analogy_answers_as_most_similar_with_the_tables_caption_and_baseline(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path]
) -> None:
    status, out, err = run_cli(
        capsys, "ch18", "neighbours", "--analogy", "king", "queen", "prince", "--count", "3",
        *pair_options(trained),
    )  # fmt: skip
    assert (status, err) == (0, "")
    lines = out.splitlines()
    rows = len(WordVectors.load(*trained)) + 1  # and [UNK]
    assert lines[0] == f"Table token_embedding.weight: {rows} rows, width 8; file {trained[0]}"
    assert lines[1].startswith("Analogy: king is to queen as prince is to ?")
    answers = WordVectors.load(*trained).most_similar(
        positive=["queen", "prince"], negative=["king"], topn=3
    )
    assert [line.split() for line in lines[3:6]] == [
        [str(rank), word, cosine_text(cosine)] for rank, (word, cosine) in enumerate(answers, 1)
    ]
    table = CosineTable.of(load_pretrained_embedding(trained[0], None))
    assert lines[6] == (
        "Random-pair baseline: the mean cosine of 10000 random pairs of distinct rows is "
        f"{cosine_text(random_pair_cosine(table))}; read every cosine against it."
    )
    assert "MiniLM" not in out


def test_every_word_outside_the_vocabulary_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path]
) -> None:
    for arguments in (("--analogy", "king", "kng", "qeen"), ("king", "kng", "qeen")):
        status, out, err = run_cli(capsys, "ch18", "neighbours", *arguments, *pair_options(trained))
        assert (status, out) == (2, "")
        assert err == (
            "error: 2 of the words are not single word pieces of the table: 'kng', 'qeen'\n"
        )


def test_the_figure_of_a_trained_table_shows_its_baseline_and_no_other_tables_name(
    capsys: pytest.CaptureFixture[str], trained: tuple[Path, Path], tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    status, _, err = run_cli(
        capsys, "ch18", "neighbours", "--figure", str(page), *pair_options(trained)
    )
    assert (status, err) == (0, "")
    text = page.read_text(encoding="utf-8")
    table = CosineTable.of(load_pretrained_embedding(trained[0], None))
    assert "MiniLM" not in text
    found = re.search(r"random-pair mean cosine</dt><dd><span[^>]*>([^<]+)<", text)
    assert found is not None and found.group(1) == cosine_text(random_pair_cosine(table))


def test_an_analogy_takes_no_words_and_no_figure(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "ch18", "neighbours", "king", "--analogy", "a", "b", "c")
    assert (status, out, err) == (2, "", "error: --analogy A B C takes no WORD and no --figure\n")


def test_the_minilm_table_answers_man_woman_king_with_queen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_pretrained()
    status, out, _ = run_cli(capsys, "ch18", "neighbours", "--analogy", "man", "woman", "king")
    assert status == 0
    assert out.splitlines()[3].split()[:2] == ["1", "queen"]
