"""The per-language label tables of the figure."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest

from llm_from_scratch.errors import FormatError
from llm_from_scratch.labels import LABEL_KEYS, LANGUAGES, check_labels, load_labels

from checks import raises_rule


def raw_table(lang: str) -> dict[str, object]:
    source = resources.files("llm_from_scratch.labels").joinpath(f"{lang}.json")
    table: dict[str, object] = json.loads(source.read_text(encoding="utf-8"))
    return table


def without(table: dict[str, object], path: str) -> dict[str, object]:
    changed = copy.deepcopy(table)
    *parents, last = path.split(".")
    node = changed
    for key in parents:
        node = node[key]  # type: ignore[assignment]
    del node[last]
    return changed


def replaced(table: dict[str, object], path: str, value: object) -> dict[str, object]:
    changed = copy.deepcopy(table)
    *parents, last = path.split(".")
    node = changed
    for key in parents:
        node = node[key]  # type: ignore[assignment]
    node[last] = value
    return changed


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_language_has_every_label_and_no_other(lang: str) -> None:
    labels = load_labels(lang)

    assert labels["title"]
    assert isinstance(labels["reverse"], dict)
    assert labels["reverse"]["title"]


def test_english_and_russian_labels_differ_but_share_the_symbols() -> None:
    english, russian = load_labels("en"), load_labels("ru")

    assert english["title"] != russian["title"]
    assert english["symbols"] == russian["symbols"]


@pytest.mark.parametrize("path", ["reverse.title", "states.selected-once", "title"])
def test_a_missing_label_fails_with_its_key_path(path: str) -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("ru", without(raw_table("ru"), path))
    caught.match(f"^ru: {path}: the label is missing$")

    assert (caught.value.lang, caught.value.key_path) == ("ru", path)


def test_a_missing_label_group_names_the_group() -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", without(raw_table("en"), "forward"))

    assert caught.value.key_path == "forward"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_a_blank_label_fails_with_its_key_path(blank: str) -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", replaced(raw_table("en"), "table.gradient", blank))
    caught.match(r"^en: table\.gradient: the label is blank$")


def test_a_label_that_is_not_text_fails_with_its_key_path() -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", replaced(raw_table("en"), "ids.id", 7))
    caught.match(r"^en: ids\.id: expected text$")


def test_an_unknown_label_fails_with_its_key_path() -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("ru", replaced(raw_table("ru"), "reverse.subtitle", "lost"))
    caught.match(r"^ru: reverse\.subtitle: unknown label")


def test_a_table_that_is_not_an_object_fails() -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        check_labels("en", ["title"])
    caught.match(r"^en: expected a JSON object")


def test_an_unknown_language_fails_by_name() -> None:
    with raises_rule(FormatError, "labels.table") as caught:
        load_labels("de")
    caught.match(r"^de: no label table")


def test_the_key_list_has_no_duplicates() -> None:
    assert len(set(LABEL_KEYS)) == len(LABEL_KEYS)
