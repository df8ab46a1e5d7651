"""Hypothesis strategies shared by the property tests of several subjects: token IDs of every
kind and dtype, token shapes with bad, zero and huge extents, and layers in each stored-gradient
state."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from llm_from_scratch.nn import Embedding, SplitMix64
from llm_from_scratch.tensor import Tensor

from reference import element_count

INTEGER_DTYPES = (
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
)
HUGE_EXTENTS = (2**31, 2**32, 2**61, 2**62, 2**63 - 1, 2**63, 2**64)


def numpy_integers(dtype: type[np.integer[Any]], low: int, high: int) -> st.SearchStrategy[Any]:
    """Scalars of ``dtype`` in ``[low, high]`` clipped to the dtype's range."""
    info = np.iinfo(dtype)
    return st.integers(max(low, int(info.min)), min(high, int(info.max))).map(dtype)


def id_items(rows: int) -> st.SearchStrategy[object]:
    """One flat ID: mostly valid Python ints, and every kind of bad or exotic value."""
    valid = st.integers(0, rows - 1)
    return st.one_of(
        valid,
        valid,
        valid,
        st.integers(-3, rows + 3),
        st.sampled_from([-(2**63) - 1, 2**63, 2**64, 2**70]),
        st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: numpy_integers(d, -2, rows + 2)),
        st.booleans(),
        st.just(np.bool_(True)),
        st.floats(allow_nan=True, allow_infinity=True),
        st.just(np.float64(1.0)),
        st.none(),
        st.text(max_size=2),
        st.lists(valid, max_size=2),
    )


def id_arrays(rows: int, count: int) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """A 1-D NumPy array of ``count`` IDs of any integer dtype (or bool / float / str),
    sometimes non-contiguous or read-only."""

    @st.composite
    def build(draw: st.DrawFn) -> np.ndarray[Any, Any]:
        kind = draw(st.sampled_from(["int", "int", "int", "bool", "float", "str", "object"]))
        if kind == "int":
            dtype = draw(st.sampled_from(INTEGER_DTYPES))
            info = np.iinfo(dtype)
            high = draw(st.sampled_from([rows - 1, rows - 1, rows + 2, int(info.max)]))
            low = draw(st.sampled_from([0, 0, -2])) if info.min < 0 else 0
            values = draw(
                st.lists(st.integers(low, max(low, high)), min_size=count, max_size=count)
            )
            array = np.array(values, dtype=dtype)
        elif kind == "bool":
            array = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)))
            array = array.astype(bool)
        elif kind == "float":
            floats = st.one_of(st.integers(0, rows - 1).map(float), st.just(float("nan")))
            array = np.array(draw(st.lists(floats, min_size=count, max_size=count)), dtype=float)
        elif kind == "str":
            array = np.array([str(i % rows) for i in range(count)], dtype=str)
            if count == 0:
                array = np.array([], dtype=str)
        else:
            items = draw(st.lists(id_items(rows), min_size=count, max_size=count))
            array = np.empty(count, dtype=object)
            for position, item in enumerate(items):
                array[position] = item
        if draw(st.booleans()):  # non-contiguous: every other element of a doubled buffer
            doubled = np.empty(2 * count, dtype=array.dtype)
            doubled[::2] = array
            array = doubled[::2]
        if draw(st.booleans()):
            array.flags.writeable = False
        return array

    return build()


def shapes() -> st.SearchStrategy[object]:
    """Token shapes: mostly small valid tuples, and every kind of bad extent or container."""
    small = st.integers(0, 3)
    extent = st.one_of(
        small,
        small,
        small,
        st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: numpy_integers(d, 0, 3)),
        st.integers(-3, -1),
        st.sampled_from(HUGE_EXTENTS),
        st.booleans(),
        st.floats(0, 3),
        st.none(),
        st.just("2"),
    )
    valid = st.lists(small, max_size=3).map(tuple)
    return st.one_of(
        valid,
        valid,
        valid,
        st.lists(extent, max_size=3).map(tuple),
        st.lists(extent, max_size=3),
        st.sampled_from([7, None, "23", b"\x02", 2.5]),
    )


@st.composite
def layers(draw: st.DrawFn) -> Embedding:
    """A small layer whose stored gradient is all-zero, row-sparse, or dense."""
    rows, width = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    layer = Embedding.new("token_embedding.weight", rows, width, SplitMix64.from_seed(7), dtype)
    leaf = layer.table.tensor
    history = draw(st.sampled_from(["untouched", "row-sparse", "dense"]))
    if history != "untouched":
        ids = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=5))
        seed = np.arange(len(ids) * width, dtype=dtype).reshape(len(ids), width) - 1.5
        layer.forward(ids, (len(ids),)).backward_with_seed(seed)
    if history == "dense":  # a dense operation on the table turns its stored gradient dense
        leaf.mul(Tensor(leaf.shape, np.full(leaf.shape, 0.5), dtype=dtype)).sum().backward()
        assert leaf.sparse_gradient is None
    return layer


@st.composite
def flat_id_containers(draw: st.DrawFn, rows: int, shape: object) -> object:
    """Flat IDs for ``shape``: usually its element count of them, sometimes one off or none."""
    count = element_count(shape)
    if count is None or count > 24:
        count = draw(st.integers(0, 4))
    else:
        count = max(0, count + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
    form = draw(st.sampled_from(["list", "list", "tuple", "array", "array", "other"]))
    if form == "array":
        return draw(id_arrays(rows, count))
    if form == "other":
        return draw(
            st.sampled_from(
                [None, 3, "012", b"\x00", {0: 1}, {0}, np.zeros((1, count), dtype=np.int64)]
            )
        )
    items = draw(st.lists(id_items(rows), min_size=count, max_size=count))
    return items if form == "list" else tuple(items)


LookupCase = tuple[int, int, int, tuple[int, ...], list[int], str]


@st.composite
def lookup_cases(draw: st.DrawFn) -> LookupCase:
    """A valid lookup: rows, width, generator seed, token shape, its IDs, and the dtype."""
    rows = draw(st.integers(1, 9))
    width = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**64 - 1))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    count = int(np.prod(shape)) if shape else 1
    ids = draw(st.lists(st.integers(0, rows - 1), min_size=count, max_size=count))
    dtype = draw(st.sampled_from(["float64", "float32"]))
    return rows, width, seed, shape, ids, dtype


# Paths -----------------------------------------------------------------------------------------

#: The characters path faults come from: a NUL, lone surrogates (``\udcff`` stands for the byte
#: 0xff of a name that is not UTF-8, which the system takes; ``\ud800`` it cannot encode), a line
#: break, multi-byte characters that take a name past 255 bytes, and the separator.
PATH_PIECES = ("a", "Z", ".", "-", " ", "é", "ж", "😀", "\0", "\n", "\ud800", "\udfff", "\udcff")
PATH_PIECES += ("/",)


def path_names() -> st.SearchStrategy[str]:
    """Names to join to a folder with ``/``: built from :data:`PATH_PIECES`, any text, and
    emoji names a few bytes either side of 255; never a ``..`` component, which would leave the
    folder."""
    return st.one_of(
        st.lists(st.sampled_from(PATH_PIECES), max_size=80).map("".join),
        st.text(max_size=40),
        st.builds(
            lambda count, tail: "😀" * count + tail,
            st.integers(60, 66),
            st.sampled_from(["", "a", "ab", "abc", ".st"]),
        ),
    ).filter(lambda name: ".." not in name.split("/"))


VIEW_KINDS = ("plain", "steps", "transposed", "broadcast", "windows", "reversed")


@st.composite
def array_views(
    draw: st.DrawFn,
    elements: st.SearchStrategy[Any],
    dtype: Any,
    max_axes: int = 3,
    kinds: tuple[str, ...] = VIEW_KINDS,
    shape: tuple[int, ...] | None = None,
) -> np.ndarray[Any, Any]:
    """A small array of ``dtype`` holding drawn ``elements`` through a view of another layout:
    a plain array, every k-th item along each axis (``steps``, negative steps included), a
    transpose (Fortran order), a stride-0 broadcast, overlapping ``as_strided`` windows, or a
    reversed view; sometimes read-only. What it holds is its plain copy,
    ``np.array(view, copy=True)``. With ``shape``, the view has that shape (no windows)."""
    kind = draw(st.sampled_from(kinds))
    if shape is not None and kind == "windows":
        kind = "plain"
    if kind == "windows":
        length = draw(st.integers(1, 8))
        base = np.array(draw(st.lists(elements, min_size=length, max_size=length)), dtype=dtype)
        if draw(st.booleans()):
            base = base[::-1]
        count, width = draw(st.integers(0, 4)), draw(st.integers(0, 3))
        step = draw(st.sampled_from([0, 1]))
        inner = 0 if width <= 1 else draw(st.integers(0, (length - 1) // (width - 1)))
        reach = length - 1 - inner * max(width - 1, 0)
        step = 0 if count <= 1 else min(step, reach // (count - 1))
        view = np.lib.stride_tricks.as_strided(
            base, (count, width), (step * base.strides[0], inner * base.strides[0]), writeable=False
        )
        return view
    given = shape is not None
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=max_axes)))
    if kind == "broadcast":
        small = tuple(1 if draw(st.booleans()) else extent for extent in shape)
        room = 0 if given else max(0, max_axes - len(shape))
        leading = tuple(draw(st.lists(st.integers(0, 3), max_size=room)))
        values = draw(
            st.lists(elements, min_size=int(np.prod(small)), max_size=int(np.prod(small)))
        )
        return np.broadcast_to(np.array(values, dtype=dtype).reshape(small), leading + shape)
    if kind == "steps":
        steps = [draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in shape]
        big = tuple(extent * abs(step) for extent, step in zip(shape, steps, strict=True))
        count = int(np.prod(big))
        values = draw(st.lists(elements, min_size=count, max_size=count))
        base = np.array(values, dtype=dtype).reshape(big)
        view = base[tuple(slice(None, None, step) for step in steps)] if steps else base[...]
    else:
        count = int(np.prod(shape))
        values = draw(st.lists(elements, min_size=count, max_size=count))
        view = np.array(values, dtype=dtype).reshape(shape)
        if kind == "transposed":
            view = view.T
        elif kind == "reversed" and view.ndim:
            view = view[::-1]
    if draw(st.booleans()):
        view.flags.writeable = False
    return view
