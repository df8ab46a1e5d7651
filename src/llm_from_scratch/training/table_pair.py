"""What a table file records of its tokenizer, declared in the vectors' ``table_pair`` (below
the trainer, so that the vectors read it too) and named here for the trainer's callers."""

from llm_from_scratch.vectors.table_pair import (
    FINGERPRINT_KEY,
    VOCABULARY_SIZE_KEY,
    tokenizer_metadata,
    vocabulary_fingerprint,
)

__all__ = ["FINGERPRINT_KEY", "VOCABULARY_SIZE_KEY", "tokenizer_metadata", "vocabulary_fingerprint"]
