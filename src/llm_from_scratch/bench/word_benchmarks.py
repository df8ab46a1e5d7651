"""gensim's word benchmarks on any table and its words, with gensim's own evaluation:
Spearman's correlation on WordSim-353 and SimLex-999 and the share of the Google analogies
answered, over the pairs and questions whose words the table holds. Needs gensim."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class WordScores:
    """A table's scores on the three benchmarks (NaN where the table knows the words of fewer
    than two pairs, or of no question)."""

    wordsim: float
    simlex: float
    analogies: float


def word_scores(vectors: Any, words: Sequence[str]) -> WordScores:
    """Score the table ``vectors`` (``[len(words), d]``, row ``i`` the vector of ``words[i]``)."""
    from gensim.models import KeyedVectors
    from gensim.test.utils import datapath

    table = np.asarray(vectors, dtype=np.float32)
    keyed = KeyedVectors(table.shape[1])
    keyed.add_vectors(list(words), table)
    logging.getLogger("gensim").setLevel(logging.ERROR)  # one line per unknown word otherwise
    pairs = []
    for name in ("wordsim353.tsv", "simlex999.txt"):
        try:
            pairs.append(float(keyed.evaluate_word_pairs(datapath(name))[1][0]))
        except ValueError:  # scipy's Spearman of fewer than two pairs
            pairs.append(math.nan)
    score, sections = keyed.evaluate_word_analogies(datapath("questions-words.txt"))
    answered = sum(len(section["correct"]) + len(section["incorrect"]) for section in sections)
    return WordScores(pairs[0], pairs[1], float(score) if answered else math.nan)
