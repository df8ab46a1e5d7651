"""``load_word_pieces`` reads ``tokenizer.json`` through the one bounded reader: a file the system
cannot open, a folder, an endless device or a file that is not UTF-8 is a ``FormatError``
(``tokenizer.file``) with a one-line detail, and a file of our own still loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import llm_from_scratch.vectors.pair as pretrained
from llm_from_scratch.errors import FormatError
from llm_from_scratch.vectors.pair import load_word_pieces

from checks import raises_rule, within_seconds
from conftest import require_tokenizers, unavailable


def whole_words(folder: Path) -> Path:
    tokenizers = require_tokenizers()
    model = tokenizers.models.WordLevel(vocab={"[UNK]": 0, "sun": 1}, unk_token="[UNK]")
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = folder / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def test_a_tokenizer_file_of_our_own_loads(tmp_path: Path) -> None:
    pieces = load_word_pieces(whole_words(tmp_path))
    assert pieces.pieces("sun") == (("sun", 1),)
    assert pieces.unknown_token == "[UNK]"


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("a\0b.json", "the path holds a NUL character at index"),
        ("\ud800.json", "which the file system encoding"),
        ("", "the path names a folder, not a file"),
        ("missing.json", "No such file or directory"),
    ],
)
def test_a_path_that_cannot_be_read_is_a_tokenizer_file_error(
    tmp_path: Path, name: str, detail: str
) -> None:
    require_tokenizers()
    path = Path(f"{tmp_path}/{name}") if name else tmp_path
    with raises_rule(FormatError, "tokenizer.file") as caught:
        load_word_pieces(path)
    assert detail in caught.value.detail and "\n" not in caught.value.detail
    assert caught.value.path == str(path)


def test_an_endless_device_is_too_large_at_once() -> None:
    require_tokenizers()
    if not os.path.exists("/dev/zero"):
        unavailable("needs a /dev/zero device", ci_provides=True)
    with within_seconds(5.0), raises_rule(FormatError, "tokenizer.file") as caught:
        load_word_pieces(Path("/dev/zero"))
    limit = pretrained.TOKENIZER_BYTE_LIMIT
    assert caught.value.detail == f"more than {limit} bytes, the most read from such a file"


def test_a_file_over_the_limit_or_not_utf8_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = whole_words(tmp_path)
    monkeypatch.setattr(pretrained, "TOKENIZER_BYTE_LIMIT", path.stat().st_size - 1)
    with raises_rule(FormatError, "tokenizer.file") as caught:
        load_word_pieces(path)
    caught.match("more than")
    monkeypatch.undo()
    path.write_bytes(b"\xff" + path.read_bytes())
    with raises_rule(FormatError, "tokenizer.file") as caught:
        load_word_pieces(path)
    caught.match("can't decode byte 0xff")
