"""What a word of a corpus is, one grammar for the trainer and the tokenizer file it writes
(``docs/training.md``, "Words"): a text case-folded, then NFC-normalized; its words the matches
of :data:`WORD_PATTERN`, at most :data:`LONGEST_WORD` letters counted; a line ends at ``\\n``,
``\\r\\n`` or ``\\r``.

    >>> line_words("Th' ARE! don't rock'n'roll, café 2B Straße ОТЕЦ")
    ['th', 'are', "don't", "rock'n", 'roll', 'café', 'b', 'strasse', 'отец']
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Final

WORD_PATTERN: Final = r"[^\W\d_]+(?:'[^\W\d_]+)?"
"""A word of a normalized text (Python's ``re`` syntax)."""
LONGEST_WORD: Final = 100
"""The most characters of a word a vocabulary counts."""
LINE_ENDS: Final = ("\r\n", "\r", "\n")
"""The tokens of :data:`TOKEN_PATTERN` that end a line."""
TOKEN_PATTERN: Final = WORD_PATTERN + r"|\r\n?|\n"
"""A word or a line end."""
_TOKENIZER_LETTER: Final = r"[\p{L}\p{Nl}\p{No}]"
"""A letter, as the ``tokenizers`` package's regular expressions (Oniguruma) write it."""

_WORDS: Final = re.compile(WORD_PATTERN)


def normalized(text: str) -> str:
    """``text`` case-folded, then NFC-normalized."""
    return unicodedata.normalize("NFC", text.casefold())


def line_words(line: str) -> list[str]:
    """The words of one line of text (see the module docstring)."""
    return _WORDS.findall(normalized(line))


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
