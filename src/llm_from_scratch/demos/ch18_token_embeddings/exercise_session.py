"""The command ``llm-from-scratch ch18 exercises``: ask, check (``--answers``) or reveal the eleven
exercises against values computed when it runs; status 0 only when every checked answer is right,
1 otherwise, 2 for an answers file that cannot be read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO, cast

from llm_from_scratch.demos.ch18_token_embeddings.exercise_data import (
    KINDS,
    Exercise,
    ExerciseSet,
    load_exercises,
)
from llm_from_scratch.demos.ch18_token_embeddings.exercises import (
    ChapterFacts,
    Json,
    answer_matches,
    answer_text,
    chapter_facts,
    expected_answers,
    read_answers,
)
from llm_from_scratch.errors import (
    FileAccessError,
    FormatError,
    MismatchError,
    MissingPackageError,
    WordedError,
)
from llm_from_scratch.files import FILE_BYTE_LIMIT, load_json, read_line
from llm_from_scratch.labels import Labels, cosine_text, label

#: The words whose neighbours exercise 9 compares (as many of each kind as ``ch18 neighbours``).
COMPARED_WORDS: Final = ("king", "monday")
_UNREADABLE: Final = object()


@dataclass(frozen=True)
class Verdict:
    """One checked exercise: ``right``, ``wrong`` or ``missing`` (unanswered: skipped, left out
    of the answers file or after the end of the input), and the computed answer."""

    number: int
    status: str
    expected: Json


def check_answers(answers: Mapping[int, object], expected: Mapping[int, Json]) -> list[Verdict]:
    """Compare the given answers with the computed ones, in exercise order."""
    verdicts = []
    for number, value in sorted(expected.items()):
        if number not in answers:
            status = "missing"
        else:
            status = "right" if answer_matches(KINDS[number], answers[number], value) else "wrong"
        verdicts.append(Verdict(number, status, value))
    return verdicts


def run_exercises(
    lang: str,
    answers_path: Path | None,
    reveal: bool,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Run the exercises as the options say; the exit status (``stderr`` takes nothing: an
    answers file that cannot be read raises a :class:`WordedError` in ``lang``)."""
    data = load_exercises(lang)
    facts = chapter_facts()
    expected = expected_answers(facts)
    session = _Session(data, facts, stdout)
    verdicts: list[Verdict] | None = None
    if answers_path is not None:
        try:
            answers = read_answers(answers_path)
        except FormatError as error:  # worded in the session's language
            raise WordedError(_file_error(error, data.ui), error) from error
        verdicts = check_answers(answers, expected)
        session.say(*(session.verdict_line(verdict) for verdict in verdicts))
    elif not reveal:
        verdicts = session.interactive(stdin, expected)
    if reveal:
        session.reveal(expected)
    if verdicts is None:
        return 0
    session.say(*session.summary(verdicts))
    return 0 if all(verdict.status == "right" for verdict in verdicts) else 1


def _line(stdin: TextIO) -> str:
    """One line of input; ``""`` at its end or for a line over the limit."""
    try:
        return read_line(stdin, FILE_BYTE_LIMIT)
    except OSError:  # a line over the limit: the rest of the input is not read
        return ""


def _file_error(error: FormatError, ui: Labels) -> str:
    path, problem, detail = (error.fields[name] for name in ("path", "problem", "detail"))
    title, problem = (label(ui, "answers_file", key) for key in ("title", str(problem)))
    return f"{title} {path}: {problem} ({detail})"


@dataclass(frozen=True)
class _Session:
    data: ExerciseSet
    facts: ChapterFacts
    out: TextIO

    def ui(self, *path: str) -> str:
        return label(self.data.ui, *path)

    def say(self, *lines: str) -> None:
        for line in lines:
            self.out.write(f"{line}\n")

    def heading(self, number: int) -> str:
        return f"{self.ui('exercise')} {number} {self.ui('of')} {len(self.data.exercises)}"

    def shown(self, value: Json) -> str:
        if isinstance(value, bool):
            return f"{self.ui('yes' if value else 'no')} ({json.dumps(value)})"
        return answer_text(value)

    def verdict_line(self, verdict: Verdict) -> str:
        value = self.shown(verdict.expected)
        said = {
            "right": self.ui("right"),
            "wrong": f"{self.ui('wrong')} {value}",
            "missing": f"{self.ui('missing')}; {self.ui('computed_value')}: {value}",
        }
        return f"{self.heading(verdict.number)}: {said[verdict.status]}"

    def summary(self, verdicts: list[Verdict]) -> list[str]:
        right = sum(verdict.status == "right" for verdict in verdicts)
        lines = [f"{self.ui('score')}: {right} {self.ui('of')} {len(verdicts)}"]
        for status, key in (("wrong", "wrong_exercises"), ("missing", "unanswered_exercises")):
            numbers = [str(verdict.number) for verdict in verdicts if verdict.status == status]
            if numbers:
                lines.append(f"{self.ui(key)}: {', '.join(numbers)}")
        if right == len(verdicts):
            lines.append(self.ui("all_right"))
        return lines

    def introduction(self) -> None:
        facts = self.facts
        given = (
            f"{self.ui('given')}: {self.ui('table')} {answer_text(facts['table'])}; "
            f"{self.ui('token_ids')} {answer_text(facts['ids'])}; "
            f"{self.ui('upstream')} {answer_text(facts['upstream'])}"
        )
        self.say(self.ui("title"), self.ui("intro"), given)

    def explain(self, exercise: Exercise) -> None:
        evidence = exercise.evidence.format(**self.evidence_fields(exercise.number))
        self.say(
            f"{self.ui('explanation')}: {exercise.explanation}",
            f"{self.ui('evidence')}: {evidence}",
        )

    def reveal(self, expected: Mapping[int, Json]) -> None:
        self.introduction()
        for exercise in self.data.exercises:
            self.say("", self.heading(exercise.number), exercise.prompt)
            if exercise.checked:
                self.say(f"{self.ui('reveal')}: {self.shown(expected[exercise.number])}")
            else:
                self.say(self.ui("explanation_only"))
            self.explain(exercise)

    def interactive(self, stdin: TextIO, expected: Mapping[int, Json]) -> list[Verdict]:
        self.introduction()
        answers: dict[int, object] = {}
        for exercise in self.data.exercises:
            self.say("", self.heading(exercise.number), exercise.prompt)
            if not self.ask(exercise, stdin, answers):
                break
            if exercise.checked:
                [verdict] = check_answers(answers, {exercise.number: expected[exercise.number]})
                self.say(self.verdict_line(verdict))
            self.explain(exercise)
        self.say("")
        return check_answers(answers, expected)

    def ask(self, exercise: Exercise, stdin: TextIO, answers: dict[int, object]) -> bool:
        """Read one answer into ``answers``; ``False`` at the end of the input."""
        if not exercise.checked:
            self.say(self.ui("no_answer"), self.ui("continue"))
            return _line(stdin) != ""
        self.say(self.ui("answer_formats", exercise.kind), self.ui("skip"))
        if exercise.true_means is not None:
            self.say(f"{self.ui('true_means')}: {exercise.true_means}")
        while True:
            self.out.write(f"{self.ui('your_prediction')}: ")
            self.out.flush()
            line = _line(stdin)
            if line == "":
                self.say("")
                return False
            if not line.strip():  # an empty line: the exercise stays unanswered
                return True
            answer = self.parse(line, exercise.kind)
            if answer is not _UNREADABLE:
                answers[exercise.number] = answer
                return True
            self.say(f"{self.ui('unreadable')}; {self.ui('try_again')}")

    def parse(self, line: str, kind: str) -> object:
        text = line.strip()
        if kind == "boolean":
            words = {self.ui("yes").casefold(): True, self.ui("no").casefold(): False}
            if text.casefold() in words:
                return words[text.casefold()]
        try:
            answer: object = load_json(text)
        except ValueError:
            return _UNREADABLE
        return answer

    def evidence_fields(self, number: int) -> dict[str, str]:
        if number == 9:
            return {"comparison": self.comparison()}
        facts = self.facts
        shown = {
            key: fact if isinstance(fact, str) else answer_text(fact) for key, fact in facts.items()
        }
        vectors = cast(list[Json], facts["contributions"])
        shown["contributions"] = " + ".join(answer_text(vector) for vector in vectors)
        kinds = cast(list[str], facts["order"])
        shown["order"] = " → ".join(self.ui("error_kinds", kind) for kind in kinds)
        return shown

    def comparison(self) -> str:  # exercise 9's evidence
        from llm_from_scratch.demos.ch18_token_embeddings.neighbours import (
            DEFAULT_COUNT,
            neighbours_report,
        )
        from llm_from_scratch.demos.ch18_token_embeddings.pretrained import (
            open_table,
            packaged_files,
        )

        try:
            files = packaged_files()
            table, pieces = open_table(files)
        except (MissingPackageError, FileAccessError, FormatError, MismatchError):
            return self.ui("neighbours", "table_missing")
        report = neighbours_report(table, pieces, COMPARED_WORDS, DEFAULT_COUNT, files.shown)
        mean = self.ui("neighbours", "mean_cosine")
        parts = []
        for word in report.words:
            by_id = ", ".join(str(n.token) for n in word.id_neighbours)
            by_vector = ", ".join(str(n.token) for n in word.vector_neighbours)
            parts.append(
                f"{word.word}: {self.ui('neighbours', 'id_neighbours')} ({by_id}) {mean} "
                f"{cosine_text(word.id_mean_cosine)}; {self.ui('neighbours', 'vector_neighbours')}"
                f" ({by_vector}) {mean} {cosine_text(word.vector_mean_cosine)}"
            )
        return "\n  ".join(["", *parts])
