"""``llm-from-scratch bench vectors``: ``WordVectors`` against gensim's ``KeyedVectors`` on the
same float32 vectors, taking turns in every round: ``most_similar`` (an analogy query, top 10) on
a 400,000 x 300 table, and ``evaluate_word_analogies`` on the Google analogies (gensim's
``questions-words.txt``) with a table of their words and more random ones. The answers are
compared too: a speed-up with other answers would be no speed-up.
"""

from __future__ import annotations

import platform
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.bench.rounds import Timed, in_turns, lines
from llm_from_scratch.errors import MissingPackageError
from llm_from_scratch.vectors import WordVectors

#: The most_similar table: rows and width, and the analogy table's rows (the Google file's words
#: first, then random words), at full size and with ``--quick``.
SIZES: Final = {False: (400_000, 300, 20_000), True: (20_000, 100, 2_000)}
QUERIES: Final = 20
"""most_similar queries a sample (each a different analogy)."""


@dataclass(frozen=True)
class Measured:
    """The median seconds of each side of one case, and whether the answers were the same."""

    case: str
    ours: float
    gensim: float
    same: bool


def _table(
    rows: int, width: int, words: list[str], seed: int
) -> tuple[list[str], npt.NDArray[np.float32]]:
    names = words + [f"w{index}" for index in range(rows - len(words))]
    generator = np.random.default_rng(seed)
    return names, generator.standard_normal((rows, width), dtype=np.float32)


def _pair(names: list[str], table: npt.NDArray[np.float32]) -> tuple[WordVectors, Any]:
    from gensim.models import KeyedVectors

    theirs = KeyedVectors(table.shape[1])
    theirs.add_vectors(names, table)
    return WordVectors(names, table), theirs


def most_similar_case(rows: int, width: int, repeats: int) -> Measured:
    """``most_similar(positive=[b, c], negative=[a], topn=10)`` for ``QUERIES`` analogies."""
    names, table = _table(rows, width, [], seed=0)
    ours, theirs = _pair(names, table)
    del table
    generator = np.random.default_rng(1)
    queries = [
        tuple(names[i] for i in generator.choice(rows, 3, replace=False)) for _ in range(QUERIES)
    ]

    def ask(vectors: Any) -> list[Any]:
        return [vectors.most_similar(positive=[b, c], negative=[a], topn=10) for a, b, c in queries]

    same = _same_answers(ask(ours), ask(theirs))  # also the warm-up: unit vectors, norms
    medians = _medians(
        {"ours": Timed(lambda: ask(ours)), "gensim": Timed(lambda: ask(theirs))}, repeats
    )
    case = f"most_similar, {rows} x {width} float32, {QUERIES} analogy queries a sample"
    return Measured(case, medians["ours"], medians["gensim"], same)


def analogies_case(path: Path, rows: int, width: int, repeats: int) -> Measured:
    """``evaluate_word_analogies`` on the Google file, its words first in the table."""
    words = sorted(
        {word.lower() for word in path.read_text(encoding="utf-8").split() if word != ":"}
    )
    names, table = _table(max(rows, len(words)), width, words, seed=2)
    ours, theirs = _pair(names, table)
    del table
    first, second = ours.evaluate_word_analogies(path), theirs.evaluate_word_analogies(str(path))
    same = first == second
    actions = {
        "ours": Timed(lambda: ours.evaluate_word_analogies(path)),
        "gensim": Timed(lambda: theirs.evaluate_word_analogies(str(path))),
    }
    medians = _medians(actions, repeats)
    case = f"evaluate_word_analogies, {path.name}, {len(names)} x {width} float32"
    return Measured(case, medians["ours"], medians["gensim"], same)


def _same_answers(ours: list[Any], theirs: list[Any]) -> bool:
    for mine, other in zip(ours, theirs, strict=True):
        if [word for word, _ in mine] != [word for word, _ in other]:
            return False
        if not np.allclose([s for _, s in mine], [s for _, s in other], atol=1e-5):
            return False
    return True


def _medians(actions: dict[str, Timed], repeats: int) -> dict[str, float]:
    samples = in_turns({name: timed.seconds for name, timed in actions.items()}, repeats)
    return {name: statistics.median(found) for name, found in samples.items()}


def report(results: list[Measured], repeats: int, versions: str) -> str:
    """Each case's medians, gensim's over ours, and whether the answers agree."""
    rows = [f"{platform.machine()} {platform.processor() or ''}".strip(), versions]
    for found in results:
        rows += [
            found.case,
            f"  ours    {found.ours * 1e3:10.1f} ms (median of {repeats})",
            f"  gensim  {found.gensim * 1e3:10.1f} ms",
            f"  gensim / ours = {found.gensim / found.ours:.2f} (above 1: ours is faster); "
            f"same answers: {'yes' if found.same else 'NO'}",
        ]
    return lines(rows)


def run(repeats: int, quick: bool, analogies: Path | None, only: str | None) -> int:
    """Measure and print, ``repeats`` rounds (``only``: one case, ``most_similar`` or
    ``analogies``). Needs gensim (the test extra)."""
    count = repeats
    try:
        import gensim
    except ImportError as error:
        install = "pip install -e '.[test]'"
        raise MissingPackageError(
            "bench.package", bench="vectors", package="gensim", install=install
        ) from error
    path = analogies or Path(gensim.__file__).parent / "test" / "test_data" / "questions-words.txt"
    rows, width, analogy_rows = SIZES[quick]
    versions = f"numpy {np.__version__}, gensim {gensim.__version__}"
    results = []
    if only in (None, "most_similar"):
        print(f"most_similar on {rows} x {width} ({count} rounds)...", file=sys.stderr, flush=True)
        results.append(most_similar_case(rows, width, count))
    if only in (None, "analogies"):
        print(f"evaluate_word_analogies ({count} rounds)...", file=sys.stderr, flush=True)
        results.append(analogies_case(path, analogy_rows, width, count))
    sys.stdout.write(report(results, count, versions))
    return 0
