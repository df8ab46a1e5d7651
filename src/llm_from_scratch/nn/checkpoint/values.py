"""Tensor values on their way in and out of a file: dtype conversion and the finiteness check.

Both work in chunks of 2**20 elements, so their temporary memory stays small whatever the
table's size, and neither needs the compiled kernels (a checkpoint never loads Numba).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import numpy as np

from llm_from_scratch.tensor.storage import FloatArray

if TYPE_CHECKING:
    import numpy.typing as npt

CHUNK: Final = 1 << 20
"""Elements per step."""


def first_non_finite(array: FloatArray) -> tuple[int, float] | None:
    """The flat position and value of the first NaN or infinity, or None if all are finite.

    A chunk whose sum is finite has only finite values, so one pass of sums suffices; only a
    chunk with a non-finite sum (or one whose finite values overflow) is searched.

    Example:
        >>> first_non_finite(np.array([[1.0, 2.0], [np.inf, np.nan]]))
        (2, inf)
        >>> first_non_finite(np.full(3, 3e38, dtype=np.float32)) is None
        True
    """
    flat = array.reshape(-1)
    for start in range(0, flat.size, CHUNK):
        part = flat[start : start + CHUNK]
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(part)
        if np.isfinite(total):
            continue
        bad = np.flatnonzero(~np.isfinite(part))
        if bad.size:
            return start + int(bad[0]), float(part[bad[0]])
    return None


def convert_into(code: str, stored: npt.NDArray[Any], destination: FloatArray) -> None:
    """Write the values ``stored`` holds in the file's dtype ``code`` into ``destination``.

    BF16 values are the top 16 bits of a float32, so they widen exactly by a shift; F16, F32
    and F64 convert as NumPy casts (overflow gives an infinity, for the finiteness check).
    """
    if code == "BF16":
        stored = (stored.astype(np.uint32) << 16).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        np.copyto(destination, stored, casting="unsafe")
