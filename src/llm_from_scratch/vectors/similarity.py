"""The arithmetic of the queries, step for step as gensim 4 does it, so that the answers agree:
the unit vector of a mean, the weighted inputs of ``most_similar``, the best rows of a score.
"""

from __future__ import annotations

import operator
from numbers import Integral, Real
from typing import Final

import numpy as np
import numpy.typing as npt

from llm_from_scratch.errors import OptionError
from llm_from_scratch.vectors.kernels import top_columns

FloatArray = npt.NDArray[np.float32]
Item = object
"""A word (``str``), a row number, a vector (a 1-D array), or a ``(word or vector, weight)``."""

COSMUL_EPSILON: Final = 0.000001
"""What gensim adds to the denominator of ``most_similar_cosmul`` (Levy and Goldberg's eps)."""


def unit_of(vector: npt.NDArray[np.floating]) -> FloatArray:
    """``vector`` at unit length as gensim's ``matutils.unitvec`` computes it: the float64 norm,
    a multiplication by its reciprocal, then float32 (a vector of zeros stays zeros)."""
    wide = np.asarray(vector, dtype=np.float64)
    length = float(np.linalg.norm(wide))
    if length > 0.0:
        wide = wide * (1.0 / length)
    return wide.astype(np.float32)


def as_list(value: object) -> list[object]:
    """gensim's ``_ensure_list``: None is no item; a word, a row number or a 1-D array is one;
    the rows of a 2-D array are items."""
    if value is None:
        return []
    if isinstance(value, str | Integral) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return [value]
    return list(value) if hasattr(value, "__iter__") else [value]


def argument_error(function: str, requirement: str, value: object) -> OptionError:
    """``vectors.argument``: ``function`` needs ``requirement`` and got ``value``."""
    return OptionError("vectors.argument", function=function, requirement=requirement, value=value)


def weighted(
    positive: object, negative: object, function: str
) -> tuple[list[object], npt.NDArray[np.float64]]:
    """The keys and their weights: 1 for a positive item, -1 for a negative one, unless an item
    is a ``(key, weight)`` pair (``vectors.argument``: no item, a weight that is no real number)."""
    items = as_list(positive) + as_list(negative)
    if not items:
        raise argument_error(function, "a word or vector", [])
    count = len(as_list(positive))
    weights = np.concatenate((np.ones(count), -1.0 * np.ones(len(items) - count)))
    keys: list[object] = []
    for index, item in enumerate(items):
        if isinstance(item, tuple) and len(item) == 2:
            if not isinstance(item[1], Real) or isinstance(item[1], bool):
                raise argument_error(function, "a real weight in a (word, weight) pair", item)
            keys.append(item[0])
            weights[index] = float(item[1])
        else:
            keys.append(item)
    return keys, weights


def checked_vector(vector: np.ndarray, width: int, function: str) -> np.ndarray:
    """A query vector once it is a 1-D array of ``width`` finite real numbers."""
    if vector.ndim != 1 or vector.shape[0] != width or vector.dtype.kind not in "fiu":
        requirement = f"a vector of {width} real numbers"
        shown = f"an array of shape {vector.shape} and dtype {vector.dtype}"
        raise argument_error(function, requirement, shown)
    if not np.isfinite(vector).all():
        raise argument_error(function, "a finite vector", "NaN or inf")
    return vector


def checked_count(value: object, name: str, function: str, *, none: bool) -> int | None:
    """``topn`` or ``restrict_vocab``: an integer (``bool`` is not), or None where allowed."""
    if value is None and none:
        return None
    if isinstance(value, Integral) and not isinstance(value, bool):
        number = operator.index(value)
        if name == "topn" or number >= 0:
            return number
    requirement = f"{name} an integer" + (" of at least 0" if name != "topn" else "")
    requirement += " or None" if none else ""
    raise argument_error(function, requirement, value)


def best_rows(scores: npt.NDArray[np.floating], topn: int, excluded: set[int]) -> list[int]:
    """The rows of the ``topn`` highest scores, highest first (the lower row first on a tie),
    leaving out ``excluded`` rows."""
    wanted = min(topn + len(excluded), scores.shape[0])
    if wanted <= 0:
        return []
    order = top_columns(scores[np.newaxis, :], wanted)[0]
    return [int(row) for row in order if int(row) not in excluded][:topn]
