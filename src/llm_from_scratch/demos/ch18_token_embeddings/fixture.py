"""The chapter's known inputs: a 4x2 table, repeated IDs and a non-uniform upstream seed.

These are inputs only. Every output of the demo and the trace is computed from them.
"""

from __future__ import annotations

from typing import Final

FIXTURE_NAME: Final = "known-table-repeated-id"
TABLE_NAME: Final = "token_embedding.weight"
TABLE_SHAPE: Final = (4, 2)
TABLE_VALUES: Final = (10.0, 11.0, 20.0, 21.0, 30.0, 31.0, 40.0, 41.0)
TOKEN_IDS: Final = (2, 1, 2)
TOKEN_SHAPE: Final = (1, 3)
UPSTREAM_SHAPE: Final = (1, 3, 2)
UPSTREAM_VALUES: Final = (1.0, 0.0, 0.0, 2.0, 3.0, 4.0)
INIT_SEED: Final = 18
OUT_OF_VOCABULARY_ID: Final = 4
EMPTY_SHAPE: Final = (0,)
