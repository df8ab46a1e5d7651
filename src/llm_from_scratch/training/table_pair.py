"""A table and its tokenizer belong together: what a table file records of its tokenizer.

A table's rows are meaningful only with the tokenizer whose IDs select them. A table file
written for a tokenizer records two facts about that tokenizer's vocabulary in its safetensors
metadata (``__metadata__``, text values), :func:`tokenizer_metadata`:

- ``tokenizer_vocabulary_size`` (:data:`VOCABULARY_SIZE_KEY`): the number of tokens, in decimal;
- ``tokenizer_fingerprint`` (:data:`FINGERPRINT_KEY`): :func:`vocabulary_fingerprint` of the
  tokens in ID order.

The **vocabulary fingerprint** is the SHA-256, as 64 lower-case hexadecimal digits, of the tokens
in ID order, each encoded as UTF-8 and followed by a line feed: what ``printf '%s\\n' TOKEN...
| sha256sum`` prints. The same tokens at the same IDs give the same fingerprint; a token renamed,
added, dropped or moved to another ID changes it. (Tokens that hold a line feed could make two
vocabularies of one size share a fingerprint; the sizes are compared as well.)

``ch18 neighbours`` refuses a table and a tokenizer whose sizes differ, or whose fingerprints
differ when the table records one
(:class:`~llm_from_scratch.demos.ch18_token_embeddings.pretrained.TokenizerMismatchError`).
This module imports only the standard library, so that the code that writes a table and the
code that reads one can both use it.

    >>> vocabulary_fingerprint(["to", "be", "[UNK]"])
    '52938276942a4a83f1f9275328ab5c273c2707face1a2fe73d00439b47460d8f'
    >>> tokenizer_metadata(["to", "be", "[UNK]"])[VOCABULARY_SIZE_KEY]
    '3'
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = [
    "FINGERPRINT_KEY",
    "VOCABULARY_SIZE_KEY",
    "tokenizer_metadata",
    "vocabulary_fingerprint",
]

#: The metadata key of the tokenizer's vocabulary size, a decimal integer.
VOCABULARY_SIZE_KEY: Final = "tokenizer_vocabulary_size"
#: The metadata key of the tokenizer's :func:`vocabulary_fingerprint`.
FINGERPRINT_KEY: Final = "tokenizer_fingerprint"


def vocabulary_fingerprint(tokens: Iterable[str]) -> str:
    """The SHA-256 (64 lower-case hex digits) of ``tokens``, in the order given (ID order),
    each as UTF-8 followed by a line feed.

    Args:
        tokens: the tokenizer's tokens, the token of ID 0 first.

    Raises:
        UnicodeEncodeError: a token that UTF-8 cannot encode (a lone surrogate).

    Example:
        >>> import hashlib
        >>> vocabulary_fingerprint(["a", "b"]) == hashlib.sha256(b"a\\nb\\n").hexdigest()
        True
    """
    digest = hashlib.sha256()
    for token in tokens:
        digest.update(token.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def tokenizer_metadata(tokens: Sequence[str]) -> dict[str, str]:
    """The two metadata entries a table file records of its tokenizer: its vocabulary size and
    its vocabulary fingerprint.

    Args:
        tokens: the tokenizer's tokens in ID order (the token of ID ``i`` at index ``i``).

    Example:
        >>> sorted(tokenizer_metadata(["a", "b"]))
        ['tokenizer_fingerprint', 'tokenizer_vocabulary_size']
    """
    return {
        VOCABULARY_SIZE_KEY: str(len(tokens)),
        FINGERPRINT_KEY: vocabulary_fingerprint(tokens),
    }
