"""What a word of a corpus is, one grammar for the trainer and the tokenizer file it writes
(``docs/training.md``, "Words"): a text case-folded, then NFC-normalized; its words the matches
of :data:`WORD_PATTERN`, at most :data:`LONGEST_WORD` letters counted; a line ends at ``\\n``,
``\\r\\n`` or ``\\r``. A pre-tokenized corpus (:data:`TOKENS`) is read otherwise: its tokens
are the runs of characters between white space, kept as they are.

    >>> line_words("Th' ARE! don't rock'n'roll, café 2B Straße ОТЕЦ")
    ['th', 'are', "don't", "rock'n", 'roll', 'café', 'b', 'strasse', 'отец']
    >>> TOKENS.words("new_york  2024 Café\\tU.S.")
    ['new_york', '2024', 'Café', 'U.S.']
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

WORD_PATTERN: Final = r"[^\W\d_]+(?:'[^\W\d_]+)?"
"""A word of a normalized text (Python's ``re`` syntax)."""
ASCII_WORD_PATTERN: Final = r"[a-zA-Z]+(?:'[a-zA-Z]+)?"
""":data:`WORD_PATTERN` for a text of ASCII characters only, where its letters are
``[a-zA-Z]``: the same words, found in two thirds of the time."""
LONGEST_WORD: Final = 100
"""The most characters of a word a vocabulary counts."""
LINE_ENDS: Final = ("\r\n", "\r", "\n")
"""The tokens that end a line."""
LINE_END_PATTERN: Final = r"\r\n?|\n"
"""A line end (the tokens of :data:`LINE_ENDS`)."""
_TOKENIZER_LETTER: Final = r"[\p{L}\p{Nl}\p{No}]"
"""A letter, as the ``tokenizers`` package's regular expressions (Oniguruma) write it."""

WHITE_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""Unicode's ``White_Space`` characters (a regular-expression class body): what separates the
tokens of a pre-tokenized corpus, as the ``tokenizers`` package's ``WhitespaceSplit`` (Rust's
``char::is_whitespace``) separates them."""
VERBATIM_PATTERN: Final = f"[^{WHITE_SPACE}]+"
"""A token of a pre-tokenized text (Python's ``re`` syntax)."""

Finder = Callable[[str], list[str]]
"""A ``findall`` of a compiled pattern."""


def normalized(text: str) -> str:
    """``text`` case-folded, then NFC-normalized."""
    return unicodedata.normalize("NFC", text.casefold())


def line_words(line: str) -> list[str]:
    """The words of one line of text (see the module docstring)."""
    return WORDS.words(line)


def tokenizer_normalizer() -> dict[str, object]:
    """The ``normalizer`` of the tokenizer file: the normalization of :func:`normalized`."""
    replacements = [
        {"type": "Replace", "pattern": {"String": character}, "content": folded}
        for character, folded in _foldings_beyond_lower_case()
    ]
    return {
        "type": "Sequence",
        "normalizers": [
            {"type": "NFC"},
            {"type": "Lowercase"},
            *replacements,
            {"type": "NFC"},
        ],
    }


def tokenizer_pre_tokenizer() -> dict[str, object]:
    """The ``pre_tokenizer`` of the tokenizer file: it keeps the words of :data:`WORD_PATTERN`
    and drops everything else."""
    letters = f"{_TOKENIZER_LETTER}+"
    return {
        "type": "Split",
        "pattern": {"Regex": f"{letters}(?:'{letters})?"},
        "behavior": "Removed",
        "invert": True,
    }


@functools.cache
def _foldings_beyond_lower_case() -> tuple[tuple[str, str], ...]:
    """Each lower-case character whose case folding differs from it, with its folding (``ß``
    and ``ss``, ``ς`` and ``σ``, ...), in code-point order."""
    found = []
    for code in range(sys.maxunicode + 1):
        character = chr(code)
        folded = character.casefold()
        if folded != character and character.lower() == character:
            found.append((character, folded))
    return tuple(found)


@dataclass(frozen=True)
class Reading:
    """How a text becomes words: case-folded and NFC-normalized words of letters (:data:`WORDS`),
    or white-space separated tokens kept as they are (:data:`TOKENS`, a pre-tokenized corpus)."""

    verbatim: bool
    word_pattern: str
    longest: int | None
    """The most characters of a word a vocabulary counts (None: any)."""
    ascii_pattern: str | None = None
    """``word_pattern`` for a text of ASCII characters only (None: the same)."""

    def normalized(self, text: str) -> str:
        """``text`` as its words are found in it."""
        return text if self.verbatim else normalized(text)

    def finder(self, text: str, line_ends: bool = False) -> Finder:
        """The ``findall`` of the words (and the line ends, with ``line_ends``) of a normalized
        ``text`` and of its parts: ``ascii_pattern``'s when ``text`` is ASCII."""
        fast = self.ascii_pattern is not None and text.isascii()
        pattern = self.ascii_pattern if fast else self.word_pattern
        return compiled(f"{pattern}|{LINE_END_PATTERN}" if line_ends else pattern).findall

    def words(self, text: str) -> list[str]:
        """The words of ``text``, in order."""
        text = self.normalized(text)
        return self.finder(text)(text)

    def tokenizer_parts(self) -> dict[str, object]:
        """The ``normalizer`` and ``pre_tokenizer`` of a tokenizer file reading as this does."""
        if self.verbatim:
            return {"normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}}
        return {"normalizer": tokenizer_normalizer(), "pre_tokenizer": tokenizer_pre_tokenizer()}


WORDS: Final = Reading(False, WORD_PATTERN, LONGEST_WORD, ASCII_WORD_PATTERN)
"""Words of letters in a normalized text (``docs/training.md``, "Words")."""
TOKENS: Final = Reading(True, VERBATIM_PATTERN, None)
"""The tokens of a pre-tokenized text, kept verbatim (``--tokenized``)."""


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled once."""
    return re.compile(pattern)
