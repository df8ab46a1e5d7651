"""What a table file records of its tokenizer, so that ``ch18 neighbours`` can refuse a table
beside another tokenizer: in its safetensors metadata, the vocabulary size and the
:func:`vocabulary_fingerprint` (standard library only).

    >>> tokenizer_metadata(["to", "be", "[UNK]"])
    {'tokenizer_vocabulary_size': '3', \
'tokenizer_fingerprint': '52938276942a4a83f1f9275328ab5c273c2707face1a2fe73d00439b47460d8f'}
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Final

VOCABULARY_SIZE_KEY: Final = "tokenizer_vocabulary_size"
FINGERPRINT_KEY: Final = "tokenizer_fingerprint"


def vocabulary_fingerprint(tokens: Iterable[str]) -> str:
    """The SHA-256 (64 lower-case hex digits) of the tokens in ID order, each as UTF-8 followed
    by a line feed: what ``printf '%s\\n' TOKEN... | sha256sum`` prints. A token renamed, added,
    dropped or moved changes it (tokens holding a line feed could collide: sizes are compared
    too).

    Raises:
        UnicodeEncodeError: a token that UTF-8 cannot encode (a lone surrogate).

    Example:
        >>> vocabulary_fingerprint(["a", "b"]) == hashlib.sha256(b"a\\nb\\n").hexdigest()
        True
    """
    digest = hashlib.sha256()
    for token in tokens:
        digest.update(token.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def tokenizer_metadata(tokens: Sequence[str]) -> dict[str, str]:
    """The two metadata entries a table file records of the tokenizer of ``tokens`` (in ID
    order): its vocabulary size and its vocabulary fingerprint."""
    return {VOCABULARY_SIZE_KEY: str(len(tokens)), FINGERPRINT_KEY: vocabulary_fingerprint(tokens)}
