"""``llm-from-scratch bench vectors``: ``WordVectors`` against gensim's ``KeyedVectors`` on the
same float32 vectors, taking turns: ``most_similar`` and ``evaluate_word_analogies`` on the
Google analogies, their answers compared (a speed-up with other answers would be none)."""

from __future__ import annotations

import operator
import platform
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy as np

from llm_from_scratch.bench.rounds import Timed, lines, round_robin_medians, run_cases
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


def _pair(rows: int, width: int, words: list[str], seed: int) -> tuple[list[str], WordVectors, Any]:
    """Ours and gensim's on one random float32 table: ``words`` first, then ``w0``, ``w1``..."""
    from gensim.models import KeyedVectors

    names = words + [f"w{index}" for index in range(rows - len(words))]
    table = np.random.default_rng(seed).standard_normal((rows, width), dtype=np.float32)
    theirs = KeyedVectors(width)
    theirs.add_vectors(names, table)
    return names, WordVectors(names, table), theirs


def _measured(
    case: str,
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    same: Callable[[Any, Any], bool],
    repeats: int,
) -> Measured:
    """Both answers compared (also the warm-up), then both sides timed taking turns."""
    agree = same(ours(), theirs())
    timed = {"ours": Timed(ours), "gensim": Timed(theirs)}
    medians = round_robin_medians(timed, repeats, warm_up=False)
    return Measured(case, medians["ours"], medians["gensim"], agree)


def most_similar_case(rows: int, width: int, repeats: int) -> Measured:
    """``most_similar(positive=[b, c], negative=[a], topn=10)`` for ``QUERIES`` analogies."""
    names, ours, theirs = _pair(rows, width, [], seed=0)
    generator = np.random.default_rng(1)
    queries = [
        tuple(names[i] for i in generator.choice(rows, 3, replace=False)) for _ in range(QUERIES)
    ]

    def ask(vectors: Any) -> list[Any]:
        return [vectors.most_similar(positive=[b, c], negative=[a], topn=10) for a, b, c in queries]

    case = f"most_similar, {rows} x {width} float32, {QUERIES} analogy queries a sample"
    return _measured(case, partial(ask, ours), partial(ask, theirs), _same_answers, repeats)


def analogies_case(path: Path, rows: int, width: int, repeats: int) -> Measured:
    """``evaluate_word_analogies`` on the Google file, its words first in the table."""
    words = sorted(
        {word.lower() for word in path.read_text(encoding="utf-8").split() if word != ":"}
    )
    names, ours, theirs = _pair(max(rows, len(words)), width, words, seed=2)
    case = f"evaluate_word_analogies, {path.name}, {len(names)} x {width} float32"
    first = partial(ours.evaluate_word_analogies, path)
    second = partial(theirs.evaluate_word_analogies, str(path))
    return _measured(case, first, second, operator.eq, repeats)


def _same_answers(ours: list[Any], theirs: list[Any]) -> bool:
    for mine, other in zip(ours, theirs, strict=True):
        if [word for word, _ in mine] != [word for word, _ in other]:
            return False
        if not np.allclose([s for _, s in mine], [s for _, s in other], atol=1e-5):
            return False
    return True


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
    cases = {
        "most_similar": (
            f"most_similar on {rows} x {width} ({{count}} rounds)...",
            partial(most_similar_case, rows, width),
        ),
        "analogies": (
            "evaluate_word_analogies ({count} rounds)...",
            partial(analogies_case, path, analogy_rows, width),
        ),
    }
    chosen = [case for name, case in cases.items() if only in (None, name)]
    return run_cases(repeats, chosen, lambda results: report(results, repeats, versions))
