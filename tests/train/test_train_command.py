"""``llm-from-scratch ch18 train`` on a small corpus: the files, their reproducibility, the report,
the options it refuses, and Ctrl-C and failed writes that leave the folder as it was."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

import llm_from_scratch.demos.ch18_token_embeddings.train as train_module
import llm_from_scratch.training.saved as saved_module
from llm_from_scratch.cli import main
from llm_from_scratch.demos.ch18_token_embeddings.neighbours import DEFAULT_GROUPS, present_groups
from llm_from_scratch.demos.ch18_token_embeddings.pretrained import load_word_pieces
from llm_from_scratch.demos.ch18_token_embeddings.train_command import processor_count
from llm_from_scratch.nn import Embedding, SplitMix64, load_metadata
from llm_from_scratch.training.options import TrainOptions, planned_megabytes
from llm_from_scratch.training.skipgram import SkipGram
from llm_from_scratch.training.vocabulary import Vocabulary
from llm_from_scratch.vectors.table_pair import vocabulary_fingerprint

from checks import raises_rule
from conftest import require_tokenizers
from train_support import folder_bytes, interrupt_at_piece, run_train, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def trained(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    output = tmp_path_factory.mktemp("trained") / "out"
    status, out, err = run_train(corpus, output, "--seed", "3", "--threads", "1")
    assert status == 0, err
    return output, out, err


def test_the_files_are_the_table_and_its_tokenizer(trained: tuple[Path, str, str]) -> None:
    output, _, _ = trained
    assert sorted(folder_bytes(output)) == ["table.safetensors", "tokenizer.json"]
    tensors = load_file(str(output / "table.safetensors"))
    assert list(tensors) == ["token_embedding.weight"]
    table = tensors["token_embedding.weight"]
    vocabulary = json.loads((output / "tokenizer.json").read_text(encoding="utf-8"))
    words = vocabulary["model"]["vocab"]
    assert table.shape == (len(words), 8) and table.dtype == np.float32
    assert words["[UNK]"] == len(words) - 1
    metadata = load_metadata(output / "table.safetensors")
    assert metadata["seed"] == "3" and metadata["optimizer"] == "SGD"
    tokens = sorted(words, key=words.__getitem__)
    assert metadata["tokenizer_vocabulary_size"] == str(len(tokens))
    assert metadata["tokenizer_fingerprint"] == vocabulary_fingerprint(tokens)


def test_two_runs_with_one_seed_write_the_same_bytes(
    corpus: Path, trained: tuple[Path, str, str], tmp_path: Path
) -> None:
    status, _, _ = run_train(corpus, tmp_path / "again", "--seed", "3", "--threads", "1")
    assert status == 0
    assert folder_bytes(tmp_path / "again") == folder_bytes(trained[0])
    status, _, _ = run_train(corpus, tmp_path / "other", "--seed", "4", "--threads", "1")
    assert folder_bytes(tmp_path / "other") != folder_bytes(trained[0])


def test_the_report_shows_neighbours_and_groups_before_and_after(
    trained: tuple[Path, str, str],
) -> None:
    _, out, err = trained
    assert "Nearest words by cosine" in out
    assert "  before  " in out and "  after   " in out
    for group in ("family", "numbers", "royalty", "time of day"):
        assert f"  {group} " in out
    assert "inside - between: before" in out
    assert "Wrote " in out and "table.safetensors" in out
    assert [line.split()[:2] for line in err.splitlines()] == [["epoch", "1/2"], ["epoch", "2/2"]]


def test_training_separates_the_groups_of_the_small_corpus(corpus: Path, tmp_path: Path) -> None:
    options = TrainOptions(corpus, tmp_path, dim=8, window=2, epochs=20, min_count=2)
    report = train_module.train(options, processor_count())
    assert abs(report.before.separation) < 0.2
    assert report.after.separation > 0.3


def test_zero_epochs_write_the_initial_table(corpus: Path, tmp_path: Path) -> None:
    status, out, _ = run_train(corpus, tmp_path, "--epochs", "0", "--seed", "9")
    assert status == 0
    table = load_file(str(tmp_path / "table.safetensors"))["token_embedding.weight"]
    initial = SkipGram.new(table.shape[0], 8, seed=9).inputs.table.tensor.numpy()
    assert table.tobytes() == initial.tobytes()
    expected = Embedding.new(
        "token_embedding.weight", table.shape[0], 8, SplitMix64.from_seed(9), dtype=np.float32
    )
    assert table.tobytes() == expected.table.tensor.numpy().tobytes()
    assert "0 epochs" in out


def test_the_report_speaks_russian(corpus: Path, tmp_path: Path) -> None:
    status, out, _ = run_train(corpus, tmp_path, "--lang", "ru", "--epochs", "1")
    assert status == 0
    assert "Ближайшие по косинусу слова" in out and "семья" in out and "Записаны" in out


def test_neighbours_reads_the_trained_table_without_naming_its_tensor(
    trained: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    require_tokenizers()
    output = trained[0]
    table, tokenizer = output / "table.safetensors", output / "tokenizer.json"
    argv = ["ch18", "neighbours", "king", "--table", str(table), "--tokenizer", str(tokenizer)]
    assert main([*argv, "--count", "3"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Table token_embedding.weight: ")
    assert "Word king: word piece king (ID " in printed


def test_the_neighbours_figure_draws_the_default_groups_the_trained_vocabulary_has(
    trained: tuple[Path, str, str], tmp_path: Path
) -> None:
    require_tokenizers()
    output, page = trained[0], tmp_path / "figure.html"
    argv = ["ch18", "neighbours", "--figure", str(page)]
    argv += ["--table", str(output / "table.safetensors")]
    assert main([*argv, "--tokenizer", str(output / "tokenizer.json")]) == 0
    html = page.read_text(encoding="utf-8")
    present = dict(present_groups(load_word_pieces(output / "tokenizer.json")))
    assert sorted(present) == ["numbers", "royalty"]
    for group, words in DEFAULT_GROUPS:
        for word in words:
            assert (f">{word}<" in html) == (word in present.get(group, ())), word


BAD_OPTIONS: list[tuple[list[str], str]] = [
    (["--dim", "0"], "--dim must be an integer from 1 to 10000, got 0"),
    (["--window", "-2"], "--window must be an integer from 1 to 1000, got -2"),
    (["--negatives", "0"], "--negatives must be"),
    (["--epochs", "-1"], "--epochs must be an integer from 0 to 10000, got -1"),
    (["--seed", "-5"], "--seed must be an integer from 0 to 18446744073709551615"),
    (["--seed", str(2**80)], "--seed must be an integer from 0 to 18446744073709551615"),
    (["--threads", "0"], "--threads must be an integer from 1 to"),
    (["--min-count", "0"], "--min-count must be an integer from 1 to"),
    (["--checkpoint-minutes", "-1"], "--checkpoint-minutes must be a number from 0 to 10000"),
    (["--checkpoint-minutes", "nan"], "--checkpoint-minutes must be a number from 0 to 10000"),
    (["--min-count", "100000"], "no word of the corpus occurs 100000 times or more"),
    (["--method", "batch"], "--method must be one of hogbatch, pairs, got 'batch'"),
    (["--method", ""], "--method must be one of hogbatch, pairs, got ''"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_bad_options_are_one_line_with_status_2_and_no_file(
    corpus: Path, tmp_path: Path, options: list[str], message: str
) -> None:
    status, out, err = run_train(corpus, tmp_path / "out", *options)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not (tmp_path / "out").exists()


def test_a_method_given_to_the_library_is_checked_as_on_the_command_line(tmp_path: Path) -> None:
    from llm_from_scratch.errors import OptionError

    options = TrainOptions(corpus=tmp_path, output=tmp_path / "out", method="Pairs")
    with raises_rule(OptionError, "train.option") as caught:
        options.checked(1)
    assert (caught.value.option, caught.value.value) == ("method", "'Pairs'")
    assert TrainOptions().method == "hogbatch"


def test_too_many_threads_are_refused(corpus: Path, tmp_path: Path) -> None:
    limit = processor_count()
    status, _, err = run_train(corpus, tmp_path / "out", "--threads", str(limit + 1))
    assert status == 2 and f"from 1 to {limit}" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no corpus at"),
        ("", "the corpus has no words"),
        ("1234 ... 5678 !!!\n", "the corpus has no words"),
        ("lonely words only once\n", "no word of the corpus occurs 2 times or more"),
    ],
)
def test_corpora_without_a_vocabulary_are_refused(
    tmp_path: Path, text: str | None, message: str
) -> None:
    corpus = tmp_path / "corpus.txt"
    if text is not None:
        corpus.write_text(text, encoding="utf-8")
    status, _, err = run_train(corpus, tmp_path / "out")
    assert status == 2 and err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_a_corpus_path_with_a_line_break_is_echoed_on_one_line(tmp_path: Path) -> None:
    status, out, err = run_train(tmp_path / "no\nsuch.txt", tmp_path / "out")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "no corpus at" in err and "no\\nsuch.txt" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("option", "name", "reason"),
    [
        ("output", "\U0001f600" * 70, "more than 255"),
        ("output", "out\x00put", "NUL character"),
        ("corpus", "corpus\x00.txt", "NUL character"),
    ],
)
def test_a_path_the_system_cannot_take_is_refused_before_the_corpus_is_read(
    corpus: Path, tmp_path: Path, option: str, name: str, reason: str
) -> None:
    paths = {"corpus": corpus, "output": tmp_path / "out", option: tmp_path / name}
    status, out, err = run_train(paths["corpus"], paths["output"])
    assert status == 2 and out == "" and err.count("\n") == 1
    assert f"--{option} must be a path the system can take" in err and reason in err
    assert sorted(tmp_path.iterdir()) == []


def test_an_output_that_is_a_file_is_refused(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "out").write_text("not a folder")
    status, _, err = run_train(corpus, tmp_path / "out")
    assert status == 2 and "--output must be a folder" in err


def test_an_output_below_a_file_is_refused_before_training(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    status, _, err = run_train(corpus, tmp_path / "file" / "deeper" / "out")
    assert status == 2 and err.count("\n") == 1
    assert f"--output must be a folder, got {tmp_path}/file/deeper/out, below the file" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("name", ["table.safetensors", "tokenizer.json", "checkpoint.safetensors"])
def test_a_folder_where_a_file_of_the_run_goes_is_refused_before_training(
    corpus: Path, tmp_path: Path, name: str
) -> None:
    (tmp_path / "out" / name).mkdir(parents=True)
    status, _, err = run_train(corpus, tmp_path / "out")
    assert status == 2 and err.count("\n") == 1
    assert f"--output must be a folder where {name} can be written" in err
    assert [path.name for path in (tmp_path / "out").iterdir()] == [name]


def test_a_table_over_the_memory_budget_is_refused_before_any_file(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = str(planned_megabytes(47, 10000) - 1)
    status, _, err = run_train(
        corpus, tmp_path / "out", "--dim", "10000", "--memory-budget", budget
    )
    assert status == 2 and err.count("\n") == 1
    assert f"--memory-budget must be at least {int(budget) + 1} MB for a 47x10000 table" in err
    assert err.rstrip().endswith(f"got {budget} MB") and not (tmp_path / "out").exists()
    monkeypatch.setenv("LLM_FROM_SCRATCH_MEMORY_BUDGET", "1")
    status, _, err = run_train(corpus, tmp_path / "out")
    assert status == 2 and "got 1 MB" in err
    monkeypatch.setenv("LLM_FROM_SCRATCH_MEMORY_BUDGET", "lots")
    status, _, err = run_train(corpus, tmp_path / "out")
    assert status == 2 and "from LLM_FROM_SCRATCH_MEMORY_BUDGET" in err and "'lots'" in err


def test_a_failed_second_rename_leaves_no_new_table_where_there_was_none(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_replace = os.replace
    renames: list[object] = []

    def fail_second(source: Any, target: Any) -> None:
        renames.append(target)
        if len(renames) == 2:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", fail_second)
    output = tmp_path / "out"
    status, _, err = run_train(corpus, output, "--epochs", "1")
    assert status == 1 and "No space left on device" in err
    assert sorted(path.name for path in output.iterdir()) == ["checkpoint.safetensors"]


# Ctrl-C and failed writes ----------------------------------------------------------------------


@pytest.fixture
def earlier(corpus: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """An output folder holding the files of an earlier run."""
    output = tmp_path / "out"
    assert run_train(corpus, output, "--epochs", "0", "--seed", "1")[0] == 0
    return output, folder_bytes(output)


def test_ctrl_c_while_training_leaves_the_earlier_files(
    corpus: Path, earlier: tuple[Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    output, before = earlier
    interrupt_at_piece(monkeypatch, 1)
    status, out, err = run_train(corpus, output, "--seed", "2")
    assert status == 130 and out == ""
    assert err.splitlines()[-1] == f"error: interrupted: {output} holds the files it held before"
    assert folder_bytes(output) == before


def test_ctrl_c_after_an_epoch_keeps_its_checkpoint_beside_the_earlier_files(
    corpus: Path, earlier: tuple[Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    output, before = earlier
    interrupt_at_piece(monkeypatch, 2)  # the small corpus is one piece: the second epoch's
    status, _, err = run_train(corpus, output, "--seed", "2")
    assert status == 130
    assert err.splitlines()[-1] == (
        f"error: interrupted: {output} holds the files it held before and the run's checkpoint; "
        f"--resume {output} goes on from it"
    )
    after = folder_bytes(output)
    assert sorted(after) == ["checkpoint.safetensors", "table.safetensors", "tokenizer.json"]
    assert {name: after[name] for name in before} == before


@pytest.mark.parametrize("stage", ["table", "tokenizer", "rename"])
def test_ctrl_c_while_writing_leaves_the_earlier_files_and_no_temporary_one(
    corpus: Path,
    earlier: tuple[Path, dict[str, bytes]],
    monkeypatch: pytest.MonkeyPatch,
    stage: str,
) -> None:
    output, before = earlier
    target = {"table": "save_parameters", "tokenizer": "write_tokenizer", "rename": ""}
    owner = Vocabulary if stage == "tokenizer" else saved_module  # the one tokenizer writer
    real = getattr(owner, target[stage], None)
    renames: list[object] = []

    def interrupted(*args: Any) -> None:
        if real is not None:
            real(*args)  # the staged file is complete: the rename is what must not happen
        raise KeyboardInterrupt

    if stage == "rename":
        real_replace = os.replace

        def replace_once(source: Any, target_path: Any) -> None:
            renames.append(target_path)
            if len(renames) == 2:
                raise KeyboardInterrupt
            real_replace(source, target_path)

        monkeypatch.setattr(os, "replace", replace_once)
    else:
        monkeypatch.setattr(owner, target[stage], interrupted)
    status, _, err = run_train(corpus, output, "--seed", "2", "--epochs", "1")
    assert status == 130 and f"--resume {output} goes on from it" in err
    names = sorted(path.name for path in output.iterdir())
    # no staged file is left; the trained run's checkpoint stays until its files are written
    assert names == ["checkpoint.safetensors", "table.safetensors", "tokenizer.json"]
    after = folder_bytes(output)
    assert {name: after[name] for name in before} == before


def test_a_signal_while_writing_waits_until_both_new_files_are_in_place(
    corpus: Path, earlier: tuple[Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    output, before = earlier
    real = saved_module.save_parameters

    def signalled(*args: Any, **options: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, in the middle of the writes
        real(*args, **options)

    monkeypatch.setattr(saved_module, "save_parameters", signalled)
    status, _, err = run_train(corpus, output, "--seed", "2", "--epochs", "1")
    assert status == 130
    assert err.splitlines()[-1] == f"error: interrupted: the new files were written to {output}"
    after = folder_bytes(output)
    assert sorted(after) == ["table.safetensors", "tokenizer.json"]
    assert after["table.safetensors"] != before["table.safetensors"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_failed_write_is_one_line_and_leaves_the_earlier_files(
    corpus: Path, earlier: tuple[Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    output, before = earlier

    def full_disk(vocabulary: Vocabulary, path: str) -> None:
        raise OSError(28, "No space left on device", path)

    monkeypatch.setattr(Vocabulary, "write_tokenizer", full_disk)
    status, _, err = run_train(corpus, output, "--seed", "2", "--epochs", "1")
    assert status == 1 and err.count("\n") == 2  # the progress line, then the error
    assert "No space left on device" in err.splitlines()[-1]
    after = folder_bytes(output)  # the earlier files, and the checkpoint to write them from
    assert {name: after[name] for name in before} == before
    assert sorted(after) == ["checkpoint.safetensors", *sorted(before)]


def test_two_threads_learn_as_well_as_one_and_one_thread_repeats_its_bytes(
    corpus: Path, tmp_path: Path
) -> None:
    reports = {}
    for name, threads in (("one", 1), ("again", 1), ("two", 2)):
        options = TrainOptions(
            corpus, tmp_path / name, dim=8, window=2, epochs=20, min_count=2, threads=threads
        )
        reports[name] = train_module.train(options, 2)
    assert folder_bytes(tmp_path / "one") == folder_bytes(tmp_path / "again")
    assert reports["two"].after.separation > 0.3
    assert reports["two"].after.separation == pytest.approx(
        reports["one"].after.separation, abs=0.1
    )


def test_the_command_asks_for_sleeping_kernel_threads_before_numba_loads(
    corpus: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    script = (
        "import os, sys\n"
        "from llm_from_scratch.cli import main\n"
        f"status = main(['ch18', 'train', '--corpus', {str(corpus)!r}, '--output', "
        f"{str(tmp_path / 'out')!r}, '--dim', '8', '--epochs', '1', '--min-count', '2'])\n"
        "policy = os.environ.get('OMP_WAIT_POLICY')\n"
        "print(status, policy, 'numba' in sys.modules, file=sys.stderr)\n"
    )
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
    }
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment
    )
    assert result.stderr.splitlines()[-1].split() == ["0", "PASSIVE", "True"], result.stderr


def test_neighbours_refuses_a_trained_table_beside_another_runs_tokenizer(
    trained: tuple[Path, str, str], corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tokenizers()
    other, text = tmp_path / "other", tmp_path / "other.txt"
    text.write_text("the king and the queen\n" * 3, encoding="utf-8")
    assert run_train(text, other, "--epochs", "0")[0] == 0
    table, tokenizer = trained[0] / "table.safetensors", other / "tokenizer.json"
    argv = ["ch18", "neighbours", "king", "--table", str(table), "--tokenizer", str(tokenizer)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "do not belong together" in err


def test_ctrl_c_before_the_first_checkpoint_leaves_no_folder_the_run_made(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt_at_piece(monkeypatch, 1)
    status, _, _ = run_train(corpus, tmp_path / "new" / "out")
    assert status == 130 and sorted(tmp_path.iterdir()) == []
