"""The commands ``ch18 evaluate`` and ``ch18 export``: a table's words and vectors
(:class:`~llm_from_scratch.vectors.WordVectors`), scored by gensim's evaluations or written
as word2vec or Embedding Projector files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from llm_from_scratch.demos.ch18_token_embeddings.pretrained import chosen_files
from llm_from_scratch.errors import OptionError
from llm_from_scratch.vectors import WordVectors


@dataclass(frozen=True)
class VectorsSource:
    """Where the vectors come from: a table and its tokenizer (neither: the MiniLM pair), or a
    word2vec file (``.bin``: binary, else text)."""

    table: Path | None = None
    tokenizer: Path | None = None
    tensor: str | None = None
    vectors: Path | None = None


def open_vectors(source: VectorsSource, command: str) -> tuple[WordVectors, str]:
    """The vectors, and the name of their file as output shows it.

    Raises:
        OptionError: ``vectors.source``; and what the readers raise.
    """
    pair = (source.table, source.tokenizer)
    if source.vectors is not None:
        if pair != (None, None):
            detail = "give a pair or --vectors, not both"
            raise OptionError("vectors.source", command=command, detail=detail)
        binary = source.vectors.suffix == ".bin"
        return WordVectors.load_word2vec_format(source.vectors, binary=binary), str(source.vectors)
    if (source.table is None) != (source.tokenizer is None):
        detail = "give both --table and --tokenizer, or neither for the packaged MiniLM table"
        raise OptionError("vectors.source", command=command, detail=detail)
    files = chosen_files(source.table, source.tokenizer, source.tensor)
    return WordVectors.load(files.table, files.tokenizer, files.tensor), files.shown


def run_evaluate(
    source: VectorsSource, pairs: Path | None, analogies: Path | None, out: TextIO
) -> int:
    """Print gensim's figures for the vectors: the word pairs' correlations, the analogies'
    accuracy by section (``evaluate_word_pairs``, ``evaluate_word_analogies``).

    Raises:
        OptionError: ``vectors.no-evaluation``, ``vectors.source``; the readers' errors.
    """
    if pairs is None and analogies is None:
        raise OptionError("vectors.no-evaluation")
    vectors, shown = open_vectors(source, "evaluate")
    lines = [f"vectors {shown}: {len(vectors)} words, width {vectors.vector_size}"]
    if pairs is not None:
        pearson, spearman, unknown = vectors.evaluate_word_pairs(pairs)
        lines += [
            f"word pairs {pairs}:",
            f"  Pearson {pearson.statistic:.4f} (p-value {pearson.pvalue:.3g})",
            f"  Spearman {spearman.statistic:.4f} (p-value {spearman.pvalue:.3g})",
            f"  pairs with unknown words {unknown:.1f}%",
        ]
    if analogies is not None:
        score, sections = vectors.evaluate_word_analogies(analogies)
        lines.append(f"analogies {analogies}: {100 * score:.1f}% right")
        lines += [f"  {_section_line(section)}" for section in sections]
    out.write("".join(f"{line}\n" for line in lines))
    return 0


def _section_line(section: dict[str, object]) -> str:
    right = len(section["correct"])  # type: ignore[arg-type]
    done = right + len(section["incorrect"])  # type: ignore[arg-type]
    share = 100.0 * right / done if done else 0.0
    return f"{section['section']}: {share:.1f}% ({right}/{done})"


def run_export(source: VectorsSource, form: str, output: Path, out: TextIO) -> int:
    """Write the vectors as a word2vec file (text or binary) or the projector's two files.

    Raises:
        OptionError: ``vectors.source``; FileAccessError ``vectors.write``; the readers' errors.
    """
    vectors, shown = open_vectors(source, "export")
    if form == "projector":
        written = ", ".join(str(path) for path in vectors.save_projector(output))
    else:
        vectors.save_word2vec_format(output, binary=form == "word2vec-binary")
        written = str(output)
    out.write(
        f"wrote {len(vectors)} vectors of width {vectors.vector_size} from {shown}: {written}\n"
    )
    return 0
