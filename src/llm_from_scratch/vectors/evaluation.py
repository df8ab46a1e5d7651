"""gensim's two evaluations of word vectors, with its answers: word pairs scored by people
(WordSim-353, SimLex-999) and the Google analogies (``questions-words.txt``).

The analogies are solved many at a time: the means of a block of questions against every unit
vector in one matrix product, the best few rows of each kept. Where the best candidates are
closer than :data:`CLOSE_CALL` (a difference the order of float32 sums could flip), the question
is scored again exactly as gensim scores it, so the counts are gensim's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import FileAccessError, FormatError
from llm_from_scratch.files import read_file
from llm_from_scratch.vectors.correlation import (
    PearsonRResult,
    SignificanceResult,
    pearsonr,
    spearmanr,
)
from llm_from_scratch.vectors.kernels import top_columns
from llm_from_scratch.vectors.similarity import best_rows


class WordVectors(Protocol):
    """What the evaluations read of a :class:`~llm_from_scratch.vectors.WordVectors`."""

    @property
    def index_to_key(self) -> list[str]: ...

    @property
    def vectors(self) -> npt.NDArray[np.float32]: ...

    @property
    def norms(self) -> npt.NDArray[np.float32]: ...

    def get_normed_vectors(self) -> npt.NDArray[np.float32]: ...

    def similarity(self, w1: str | int, w2: str | int) -> np.float32: ...


EVALUATION_BYTE_LIMIT: Final = 64 << 20
"""The most bytes of an evaluation file (the Google analogies take 0.6 MB)."""
CLOSE_CALL: Final = 1e-4
"""Candidates whose cosines differ by less are ordered again by gensim's own arithmetic."""
TOPN: Final = 5
"""How many candidates gensim looks through for an answer that is not a question word."""
SCORES_PER_BLOCK: Final = 1 << 25
"""The most cosines computed in one matrix product (128 MiB of float32)."""

Quadruple = tuple[str, str, str, str]
Section = dict[str, object]


def evaluation_lines(path: str) -> list[str]:
    """The lines of a UTF-8 evaluation file, with their line feeds (``vectors.read``,
    ``vectors.evaluation-file`` when not UTF-8)."""
    try:
        data = read_file(path, EVALUATION_BYTE_LIMIT)
    except OSError as error:
        detail = error.strerror or str(error)
        raise FileAccessError("vectors.read", path=path, detail=detail) from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        detail = f"not UTF-8 ({error.reason} at byte {error.start})"
        raise FormatError("vectors.evaluation-file", path=path, detail=detail) from error
    return text.replace("\r\n", "\n").replace("\r", "\n").splitlines(keepends=True)


def known_words(words: Sequence[str], restrict_vocab: int | None, upper: bool) -> dict[str, int]:
    """gensim's ``ok_vocab``: each of the first ``restrict_vocab`` words (upper-cased with
    ``upper``) and the first row that spells it so."""
    known: dict[str, int] = {}
    for row, word in enumerate(words[:restrict_vocab]):
        known.setdefault(word.upper() if upper else word, row)
    return known


def word_pairs(
    wv: WordVectors,
    path: str,
    delimiter: str,
    restrict_vocab: int | None,
    case_insensitive: bool,
    dummy4unknown: bool,
) -> tuple[PearsonRResult, SignificanceResult, float]:
    """``evaluate_word_pairs``: Pearson's and Spearman's correlations of the cosines with the
    people's scores, and the percentage of pairs with a word outside the vocabulary."""
    known = known_words(wv.index_to_key, restrict_vocab, case_insensitive)
    people: list[float] = []
    model: list[float] = []
    unknown = 0
    for line in evaluation_lines(path):
        if not line or line.startswith("#"):
            continue
        fields = [field.upper() if case_insensitive else field for field in line.split(delimiter)]
        try:
            first, second, text = fields
            score = float(text)
        except ValueError:
            continue
        if first not in known or second not in known:
            unknown += 1
            if dummy4unknown:
                people.append(score)
                model.append(0.0)
            continue
        people.append(score)
        model.append(float(wv.similarity(known[first], known[second])))
    if len(people) < 2:
        found = len(people)
        detail = f"{found} lines hold two words of the vocabulary and a score, not two or more"
        raise FormatError("vectors.evaluation-file", path=path, detail=detail)
    scored = len(people) if dummy4unknown else len(people) + unknown
    return pearsonr(people, model), spearmanr(people, model), unknown / scored * 100


@dataclass(frozen=True)
class Questions:
    """The analogies of a file: their sections, and the rows of the questions to solve."""

    sections: list[tuple[str, list[tuple[Quadruple, int | None]]]]
    rows: npt.NDArray[np.intp]
    count: int


def read_questions(path: str, known: dict[str, int], upper: bool, dummy4unknown: bool) -> Questions:
    """The sections of an analogy file; a question with a word not ``known`` is skipped, or
    counted wrong with ``dummy4unknown`` (its index None)."""
    sections: list[tuple[str, list[tuple[Quadruple, int | None]]]] = []
    rows: list[tuple[int, int, int, int]] = []
    count = 0
    for number, line in enumerate(evaluation_lines(path), start=1):
        if line.startswith(": "):
            sections.append((line.lstrip(": ").strip(), []))
            continue
        if not sections:
            detail = f"line {number} comes before the first ': section' line"
            raise FormatError("vectors.evaluation-file", path=path, detail=detail)
        words = [word.upper() if upper else word for word in line.split()]
        if len(words) != 4:
            continue
        count += 1
        quadruple = (words[0], words[1], words[2], words[3])
        if all(word in known for word in quadruple):
            sections[-1][1].append((quadruple, len(rows)))
            rows.append((known[words[0]], known[words[1]], known[words[2]], known[words[3]]))
        elif dummy4unknown:
            sections[-1][1].append((quadruple, None))
    if count == 0:
        detail = "no line holds an analogy of four words"
        raise FormatError("vectors.evaluation-file", path=path, detail=detail)
    table = np.array(rows, dtype=np.intp).reshape(-1, 4)
    return Questions(sections, table, count)


def analogies(
    wv: WordVectors,
    path: str,
    restrict_vocab: int | None,
    case_insensitive: bool,
    dummy4unknown: bool,
) -> tuple[float, list[Section]]:
    """``evaluate_word_analogies``: the share answered right by 3CosAdd, and the sections."""
    words = wv.index_to_key
    known = known_words(words, restrict_vocab, case_insensitive)
    questions = read_questions(path, known, case_insensitive, dummy4unknown)
    end = len(words[:restrict_vocab])
    spelled = [word.upper() for word in words[:end]] if case_insensitive else words[:end]
    answers = _Solver(wv, end, spelled, known).answers(questions.rows)
    sections: list[Section] = []
    all_right: list[Quadruple] = []
    all_wrong: list[Quadruple] = []
    for name, entries in questions.sections:
        right = [quad for quad, index in entries if index is not None and answers[index]]
        wrong = [quad for quad, index in entries if index is None or not answers[index]]
        sections.append({"section": name, "correct": right, "incorrect": wrong})
        all_right.extend(right)
        all_wrong.extend(wrong)
    sections.append({"section": "Total accuracy", "correct": all_right, "incorrect": all_wrong})
    done = len(all_right) + len(all_wrong)
    return (len(all_right) / done if done else 0.0), sections


@dataclass(frozen=True)
class _Solver:
    """The analogies' answers over the first ``end`` words, spelled as compared."""

    wv: WordVectors
    end: int
    spelled: Sequence[str]
    known: dict[str, int]

    def answers(self, rows: npt.NDArray[np.intp]) -> list[bool]:
        """Whether each question's answer (the first of the best rows not spelled as a question
        word) is its fourth word."""
        unit = self.wv.get_normed_vectors()
        means = _means(unit, rows)
        block = max(1, SCORES_PER_BLOCK // max(self.end, 1))
        wanted = min(self.end, TOPN + 4)
        answers: list[bool] = []
        for start in range(0, rows.shape[0], block):
            scores = means[start : start + block] @ unit[: self.end].T
            best = top_columns(scores, wanted)
            for offset, row_best in enumerate(best):
                at = start + offset
                answers.append(self.answer(rows[at], means[at], scores[offset], row_best))
        return answers

    def answer(
        self,
        question: npt.NDArray[np.intp],
        mean: npt.NDArray[np.float32],
        scores: npt.NDArray[np.float32],
        best: npt.NDArray[np.intp],
    ) -> bool:
        excluded = {int(question[0]), int(question[1]), int(question[2])}
        candidates = [int(row) for row in best if int(row) not in excluded]
        position = self.chosen(candidates[:TOPN], question)
        close = [scores[row] for row in candidates[: position + 2]]
        if any(first - second < CLOSE_CALL for first, second in itertools.pairwise(close)):
            exact = np.dot(self.wv.vectors[: self.end], mean) / self.wv.norms[: self.end]
            candidates = best_rows(exact, TOPN, excluded)
            position = self.chosen(candidates, question)
        if not candidates:
            return False
        return self.spelled[candidates[position]] == self.spelled[int(question[3])]

    def chosen(self, candidates: list[int], question: npt.NDArray[np.intp]) -> int:
        """The position gensim's loop stops at: the first candidate spelled as no question
        word."""
        spelled = self.spelled
        ignored = {spelled[int(question[0])], spelled[int(question[1])], spelled[int(question[2])]}
        for position, row in enumerate(candidates):
            if spelled[row] in self.known and spelled[row] not in ignored:
                return position
        return max(len(candidates) - 1, 0)


def _means(unit: npt.NDArray[np.float32], rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
    """gensim's mean of ``b + c - a`` for each question: float32 sums, a float64 division by
    the total weight 3, then the unit vector in float64, stored as float32."""
    summed = (unit[rows[:, 1]] + unit[rows[:, 2]]) - unit[rows[:, 0]]
    wide = summed.astype(np.float64) / 3.0
    lengths = np.linalg.norm(wide, axis=1)
    lengths[lengths == 0] = 1.0
    means: npt.NDArray[np.float32] = (wide * (1.0 / lengths)[:, np.newaxis]).astype(np.float32)
    return means
