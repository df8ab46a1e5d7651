"""Optimizer state as a flat mapping, and its checks on loading: ``<parameter name>.<state
name>`` (``token_embedding.weight.exp_avg``) for each state array, and ``step`` (0-d ``int64``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from llm_from_scratch.errors import FormatError
from llm_from_scratch.tensor.storage import (
    FloatArray,
    Shape,
    is_masked_array,
    plain_view,
    read_only_view,
)

STEP_KEY: Final = "step"
STEP_DTYPE: Final = np.dtype(np.int64)
STEP_LIMIT: Final = int(np.iinfo(STEP_DTYPE).max)  # 2**63 - 1, the largest step a state holds
NON_NEGATIVE: Final = frozenset({"exp_avg_sq", "sum"})  # sums of squares


def keyed(
    names: Sequence[str], states: Sequence[Mapping[str, FloatArray]]
) -> Iterator[tuple[str, str, FloatArray]]:
    """Each state array with its key (``token_embedding.weight.exp_avg``) and state name."""
    for name, arrays in zip(names, states, strict=True):
        for state, array in arrays.items():
            yield f"{name}.{state}", state, array


def state_error(optimizer: str, key: object, requirement: str, actual: object) -> FormatError:
    """``optimizer.state``: ``key`` must ``requirement``, but holds ``actual``."""
    return FormatError(
        "optimizer.state", optimizer=optimizer, key=key, requirement=requirement, actual=actual
    )


@dataclass(frozen=True, slots=True)
class ExpectedArray:
    """What a loaded array must be: its shape, its dtype, whether it may be negative."""

    shape: Shape
    dtype: np.dtype[Any]
    non_negative: bool

    @property
    def requirement(self) -> str:
        """The allowed values, in words (``be finite``)."""
        if self.dtype.kind != "f":
            return "be an integer at least zero"
        return "be finite and at least zero" if self.non_negative else "be finite"


def expected_arrays(
    names: Sequence[str], states: Sequence[Mapping[str, FloatArray]]
) -> dict[str, ExpectedArray]:
    """Every key of an optimizer's state dict, in order, with its expected array."""
    expected = {
        key: ExpectedArray(array.shape, array.dtype, state in NON_NEGATIVE)
        for key, state, array in keyed(names, states)
    }
    return expected | {STEP_KEY: ExpectedArray((), STEP_DTYPE, non_negative=True)}


def viewed(
    names: Sequence[str], states: Sequence[Mapping[str, FloatArray]], steps: int
) -> list[tuple[str, np.ndarray[Any, Any]]]:
    """Read-only views of every state array (no copy), then the step count."""
    found = [(key, read_only_view(array)) for key, _, array in keyed(names, states)]
    return [*found, (STEP_KEY, np.array(steps, dtype=STEP_DTYPE))]


def checked_state(
    optimizer: str, expected: Mapping[str, ExpectedArray], state: object, *, copy: bool = True
) -> dict[str, np.ndarray[Any, Any]]:
    """``state`` after every check, in order: the mapping (``optimizer.state-type``); missing
    keys, then unknown ones; then each array's type, shape, dtype and values (the first failing
    ``optimizer.state``); each copied once and the copy checked, unless ``copy`` is false."""
    if not isinstance(state, Mapping):
        value_type = type(state).__name__
        raise FormatError("optimizer.state-type", optimizer=optimizer, value_type=value_type)
    check_keys(optimizer, expected, state)
    return {
        key: _checked_array(optimizer, key, want, state[key], copy)
        for key, want in expected.items()
    }


def check_keys(
    optimizer: str, expected: Mapping[str, ExpectedArray], keys: Collection[object]
) -> None:
    """Refuse the first key of ``expected`` that ``keys`` lacks, then the first unknown one."""
    for key in expected:
        if key not in keys:
            raise state_error(optimizer, key, "be given (this optimizer keeps it)", "none")
    for given in keys:
        if given not in expected:
            raise state_error(optimizer, given, "be a state of this optimizer", "an unknown key")


def check_layout(
    optimizer: str, key: str, want: ExpectedArray, shape: Shape, dtype: np.dtype[Any] | str
) -> None:
    """Refuse another shape, then another dtype (or the code of one NumPy lacks: ``BF16``)."""
    if shape != want.shape:
        raise state_error(optimizer, key, f"have shape {list(want.shape)}", shape)
    if not isinstance(dtype, np.dtype) or dtype != want.dtype:
        raise state_error(optimizer, key, f"have dtype {want.dtype}", str(dtype))


def _checked_array(
    optimizer: str, key: str, want: ExpectedArray, value: object, copy: bool
) -> np.ndarray[Any, Any]:
    """The plain data (no mask), copied once so that what is checked is loaded."""
    if not isinstance(value, np.ndarray) or is_masked_array(value):
        raise state_error(optimizer, key, "be a NumPy array", type(value).__name__)
    plain = plain_view(value)
    check_layout(optimizer, key, want, tuple(int(n) for n in plain.shape), plain.dtype)
    copied = np.array(plain, copy=True) if copy else plain
    flat = copied.reshape(-1)
    bad = ~np.isfinite(flat) if value.dtype.kind == "f" else np.zeros(flat.shape, dtype=bool)
    if want.non_negative:
        bad |= flat < 0
    found = np.flatnonzero(bad)
    if found.size:
        index = int(found[0])
        actual = f"{flat[index].item()} at flat index {index}"
        raise state_error(optimizer, key, want.requirement, actual)
    return copied
