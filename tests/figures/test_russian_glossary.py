"""The Russian labels and exercises speak the lesson's terms.

The glossary is drawn from the course's Russian lesson (chapter 18, «Сопоставьте ID токенов с
обучаемыми векторами»), which is not part of this repository: each term comes with the line of
the lesson it is taken from, quoted. Every term must appear in the Russian texts it names, and
the words the lesson does not use for these things («поиск» for the row lookup, «сверху» for the
upstream gradient) must appear in none of them.
"""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from llm_from_scratch.labels import (
    DEMO_LABELS,
    NEIGHBOUR_LABELS,
    TOKEN_EMBEDDING_LABELS,
    TRAIN_LABELS,
    LabelTable,
    load_labels,
)

FIGURE = "figure"
DEMO = "demo"
EXERCISES = "exercises"

#: (the term as a pattern over inflections, the texts that must use it, the lesson's line).
GLOSSARY = [
    (r"выбор\w* строк", (FIGURE, DEMO, EXERCISES),
     "Выбор строк без хранения нулей"),
    (r"входящ\w+ градиент", (FIGURE, DEMO, EXERCISES),
     "В обратной части каждый вектор входящего градиента сопоставляется со строкой, которая его "
     "получает."),
    (r"прям\w+ проход", (FIGURE,),
     "В прямом проходе в каждую выходную позицию копируется одна выбранная строка."),
    (r"обратн\w+ проход", (FIGURE, EXERCISES),
     "При обратном проходе градиенты передаются по тем же связям от выходных позиций к выбранным "
     "строкам."),
    (r"one-hot-индикатор", (FIGURE,),
     "Единица one-hot-индикатора выбирает одну строку таблицы; реализация получает эту строку "
     "напрямую."),
    (r"равносильное произведение", (FIGURE,),
     "Позиция	ID токена	One-hot-индикатор	Равносильное произведение	Выбранная строка"),
    (r"накопленн\w+ градиент", (FIGURE,),
     "Накопленный градиент строки"),
    (r"накоплени\w+ в общих строках", (FIGURE,),
     "Накопление в общих строках"),
    (r"плоск\w+ позици", (FIGURE,),
     "Плоские позиции, давшие вклад"),
    (r"общая для повторов", (FIGURE,),
     "Общая для повторов"),
    (r"повторы — сложить вклады", (FIGURE,),
     "Повторы — сложить вклады"),
    (r"таблиц\w+ эмбеддингов", (FIGURE,),
     "повторяющиеся вхождения по-прежнему используют одну строку таблицы эмбеддингов."),
]  # fmt: skip

#: Words the lesson does not use for the figure's things, with the lesson's word instead.
FORBIDDEN = [
    (r"поиск", "выбор строк (the lookup)"),
    (r"сверху", "входящий градиент (the upstream)"),
    (r"прям\w+ пут|обратн\w+ пут", "прямой / обратный проход (the rails)"),
    (r"унитарн", "one-hot-индикатор"),
]

LABEL_TABLES: dict[str, LabelTable] = {FIGURE: TOKEN_EMBEDDING_LABELS, DEMO: DEMO_LABELS}


def leaves(node: object) -> list[str]:
    if isinstance(node, dict):
        return [text for value in node.values() for text in leaves(value)]
    if isinstance(node, list):
        return [text for value in node for text in leaves(value)]
    return [node] if isinstance(node, str) else []


def russian(texts: str) -> str:
    if texts == EXERCISES:
        source = resources.files("llm_from_scratch.demos.ch18_token_embeddings").joinpath(
            "exercises", "ru.json"
        )
        return "\n".join(leaves(json.loads(source.read_text(encoding="utf-8"))))
    return "\n".join(leaves(load_labels("ru", LABEL_TABLES[texts])))


def every_russian_text() -> str:
    tables = (TOKEN_EMBEDDING_LABELS, DEMO_LABELS, NEIGHBOUR_LABELS, TRAIN_LABELS)
    return "\n".join(
        [russian(EXERCISES), *("\n".join(leaves(load_labels("ru", table))) for table in tables)]
    )


@pytest.mark.parametrize(("term", "where", "quote"), GLOSSARY, ids=[g[0] for g in GLOSSARY])
def test_each_glossary_term_of_the_lesson_is_used_where_it_belongs(
    term: str, where: tuple[str, ...], quote: str
) -> None:
    assert re.search(term, quote, re.I), "the term must be the quoted line's"
    for texts in where:
        assert re.search(term, russian(texts), re.I), f"{texts} lacks {term}"


@pytest.mark.parametrize(("word", "instead"), FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
def test_no_russian_text_uses_a_word_the_lesson_does_not(word: str, instead: str) -> None:
    found = re.findall(rf"\w*(?:{word})\w*", every_russian_text(), re.I)

    assert found == [], f"say {instead}"


def test_the_figure_and_the_exercises_name_the_upstream_the_same_way() -> None:
    upstream = load_labels("ru")["reverse"]
    assert isinstance(upstream, dict)

    assert upstream["upstream"] == "Входящий градиент"
    assert "входящий градиент" in russian(EXERCISES)
