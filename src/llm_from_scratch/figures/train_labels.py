"""The label tables of ``llm-from-scratch ch18 train``: its report, progress line and messages.

``labels/train/<lang>.json`` holds every word the command prints, as ``str.format`` templates over
the numbers the report holds, the names of the report's word groups, and under ``figure`` the
words of the report's figure (which also shows the group names and the column words). The keys
are checked as strictly as the figures'.

>>> load_labels("ru", TRAIN_LABELS)["group_names"]["time_of_day"]
'время суток'
"""

from __future__ import annotations

from typing import Final

from llm_from_scratch.figures.labels import LabelTable, load_labels

__all__ = ["FIGURE_KEYS", "TRAIN_GROUP_NAMES", "TRAIN_LABELS", "load_labels"]

#: The report's word groups, as the training module names them.
TRAIN_GROUP_NAMES: Final = ("family", "numbers", "royalty", "time_of_day", "body")

#: The words of the report's figure (:mod:`llm_from_scratch.figures.train`), under ``figure``.
FIGURE_KEYS: Final = (
    "title",
    "description",
    "source",
    "corpus",
    "table",
    "rows",
    "width",
    "epochs",
    "intro",
    "legend",
    "before.title",
    "before.region",
    "after.title",
    "after.region",
    "image",
    "component",
    "explains",
    "inside",
    "between",
    "separation",
    "no_projection",
    "group_table.title",
    "group_table.intro",
    "group_table.region",
)

TRAIN_LABELS: Final = LabelTable(
    "train",
    ("labels", "train"),
    (
        "corpus",
        "model",
        "training",
        "resumed",
        "no_training",
        "epoch_header.epoch",
        "epoch_header.pairs",
        "epoch_header.loss",
        "epoch_header.seconds",
        "neighbours",
        "before",
        "after",
        "groups",
        "no_groups",
        "group_header.group",
        "group_header.words",
        "group_header.inside",
        "group_header.between",
        "group_header.separation",
        "all_groups",
        *(f"group_names.{group}" for group in TRAIN_GROUP_NAMES),
        "wrote",
        "progress",
        "interrupted",
        "interrupted_resumable",
        "interrupted_after_writing",
        *(f"figure.{key}" for key in FIGURE_KEYS),
    ),
)
