"""An ID array of a non-integer dtype is refused even when it is empty, and no warning leaks.

An empty array has no first ID to name, so the error names its dtype
(:class:`TokenIdDtypeError`, :class:`GatherIndexDtypeError`; both are the non-integer error of
their family, with ``position`` and ``value`` None). Every test here runs with warnings as
errors: a complex array must not leak NumPy's ``ComplexWarning`` on the way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_from_scratch.autograd import (
    GatherIndexDtypeError,
    GatherIndexTypeError,
    TokenIdDtypeError,
    TokenIdTypeError,
)
from llm_from_scratch.nn import Embedding, NamedParameter
from llm_from_scratch.tensor import Tensor

from checks import leaf_state
from conftest import KNOWN_TABLE

pytestmark = pytest.mark.filterwarnings("error")

NON_INTEGER_DTYPES = [
    np.dtype(np.float64),
    np.dtype(np.float32),
    np.dtype(np.float16),
    np.dtype(np.complex128),
    np.dtype(np.bool_),
    np.dtype("U3"),
    np.dtype("S3"),
    np.dtype("datetime64[s]"),
    np.dtype("timedelta64[ms]"),
    np.dtype([("a", np.int64), ("b", np.int64)]),
]


def trained_layer() -> Embedding:
    table = NamedParameter.from_tensor("token_embedding.weight", Tensor((4, 2), KNOWN_TABLE))
    layer = Embedding.from_parameter(table)
    layer.forward([3, 3], (2,)).backward_with_seed(np.ones((2, 2)))
    return layer


@pytest.mark.parametrize("dtype", NON_INTEGER_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0)], ids=str)
def test_an_empty_array_of_a_non_integer_dtype_is_refused_by_its_dtype(
    dtype: np.dtype[Any], shape: tuple[int, ...]
) -> None:
    layer = trained_layer()
    leaf = layer.table.tensor
    ids = np.empty(shape, dtype=dtype)
    before = leaf_state(leaf)
    calls: list[tuple[Any, type[Exception]]] = [
        (lambda: layer(ids), TokenIdDtypeError),
        (lambda: layer.forward(ids.reshape(-1), shape), TokenIdDtypeError),
        (lambda: leaf.gather_rows(ids.reshape(-1), shape), GatherIndexDtypeError),
    ]
    for call, error in calls:
        with pytest.raises(error) as caught:
            call()
        assert (caught.value.position, caught.value.value) == (None, None)
        assert caught.value.dtype == str(dtype)
        assert str(dtype) in str(caught.value)
    assert leaf_state(leaf) == before


def test_the_empty_dtype_errors_are_the_non_integer_errors_of_their_families() -> None:
    assert issubclass(TokenIdDtypeError, TokenIdTypeError)
    assert issubclass(GatherIndexDtypeError, GatherIndexTypeError)
    assert issubclass(TokenIdDtypeError, TypeError)


@pytest.mark.parametrize(
    "ids",
    [np.empty(0, dtype=np.int8), np.empty(0, dtype=np.uint64), np.empty(0, dtype=object), []],
    ids=["int8", "uint64", "object", "list"],
)
def test_empty_integer_arrays_empty_object_arrays_and_empty_lists_give_an_empty_lookup(
    ids: Any,
) -> None:
    output = trained_layer().forward(ids, (0,))
    assert output.shape == (0, 2) and output.numpy().size == 0


@pytest.mark.parametrize(
    ("ids", "first"),
    [
        (np.array([1 + 2j, 0j]), 1 + 2j),
        (np.array([1.0, 2.0]), 1.0),
        (np.array([True]), True),
        (np.array(["1"]), "1"),
    ],
    ids=["complex", "float", "bool", "str"],
)
def test_a_non_empty_non_integer_array_names_position_zero_without_a_warning(
    ids: Any, first: object
) -> None:
    layer = trained_layer()
    before = leaf_state(layer.table.tensor)
    with pytest.raises(TokenIdTypeError) as caught:
        layer.forward(ids, (ids.size,))
    assert type(caught.value) is TokenIdTypeError
    assert (caught.value.position, caught.value.value) == (0, first)
    assert leaf_state(layer.table.tensor) == before
