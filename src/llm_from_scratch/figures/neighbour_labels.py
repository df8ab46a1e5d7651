"""The label tables of ``llm-from-scratch ch18 neighbours``: its text, its figure, its errors.

``labels/neighbours/<lang>.json`` holds every word the command prints and the figure shows, the
names of the word groups, and one message per error of the neighbours and of the pretrained
table, a ``str.format`` template over the error's fields (the English one is the error's own
message; an error worded by a key field has one per value of the key). The keys are checked
as strictly as the token-embedding figure's.

>>> load_labels("ru", NEIGHBOUR_LABELS)["groups"]["weekdays"]
'дни недели'
"""

from __future__ import annotations

from typing import Final

from llm_from_scratch.figures.labels import LabelTable, load_labels

__all__ = ["ERROR_NAMES", "GROUP_NAMES", "KEYED_ERROR_NAMES", "NEIGHBOUR_LABELS", "load_labels"]

#: The groups of the default word set, as the neighbours module names them.
GROUP_NAMES: Final = ("royalty", "numbers", "weekdays", "colours", "animals")
#: The errors whose messages the command prints in the chosen language.
ERROR_NAMES: Final = (
    "PretrainedPackageMissingError",
    "TokenizersMissingError",
    "MissingPretrainedFileError",
    "TokenizerFileError",
    "UnknownTensorError",
    "NeighbourCountError",
    "EmptyWordError",
    "UnknownWordError",
    "MultiPieceWordError",
    "ZeroVectorError",
)
#: The errors whose message is worded by a key field: each wording of each, by the key's value.
KEYED_ERROR_NAMES: Final = {
    "TokenizerMismatchError": ("rows", "vocabulary-size", "fingerprint"),
}

NEIGHBOUR_LABELS: Final = LabelTable(
    "neighbours",
    ("labels", "neighbours"),
    (
        "title",
        "description",
        "source",
        "table",
        "table_file",
        "rows",
        "width",
        "id_rule",
        "vector_rule",
        "word",
        "pieces",
        "rank",
        "id",
        "cosine",
        "id_neighbours",
        "vector_neighbours",
        "mean_cosine",
        "no_token",
        "projection.title",
        "projection.intro",
        "projection.region",
        "projection.image",
        "projection.component",
        "projection.explains",
        "legend.title",
        *(f"groups.{group}" for group in GROUP_NAMES),
        "group_table.title",
        "group_table.intro",
        "group_table.region",
        "group_table.group",
        "group_table.words",
        "group_table.within",
        "group_table.between",
        "neighbour_table.title",
        "neighbour_table.intro",
        "neighbour_table.region",
        "usage.no_words",
        "usage.table_and_tokenizer",
        "usage.output_without_figure",
        *(f"errors.{name}" for name in ERROR_NAMES),
        *(f"errors.{name}.{key}" for name, keys in KEYED_ERROR_NAMES.items() for key in keys),
    ),
)
