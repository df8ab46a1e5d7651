"""Every size choice (plain Python, NumPy or a compiled kernel), and the one place that
imports Numba.

Kernel loops are plain Python with :data:`prange`, marked by :func:`compiled_kernel` (and their
helpers by :func:`kernel_helper`); Numba compiles or loads a loop on its first call, so small
work and the chapter demo never load it.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

COMPILED_KERNEL_MIN_VALUES: Final = 1 << 16  # below this many values NumPy alone is faster
PYTHON_MAX_VALUES: Final = 64  # up to this many values Python beats NumPy's call overhead
prange = range  # Numba's prange once compiled


def runs_compiled(values: int) -> bool:
    """True when an operation over ``values`` array values runs a compiled kernel.

    Example:
        >>> runs_compiled(8), runs_compiled(COMPILED_KERNEL_MIN_VALUES)
        (False, True)
    """
    return values >= COMPILED_KERNEL_MIN_VALUES


def runs_in_python(values: int) -> bool:
    """True when an operation over ``values`` array values runs as plain Python on their list.

    Example:
        >>> runs_in_python(PYTHON_MAX_VALUES), runs_in_python(PYTHON_MAX_VALUES + 1)
        (True, False)
    """
    return values <= PYTHON_MAX_VALUES


class CompiledKernel:
    """A kernel loop that Numba compiles on its first call, with ``nogil`` and without
    fast-math (sums keep their left-to-right order).

    Args:
        loop: a module-level function of NumPy arrays and numbers, written with :data:`prange`.
        parallel: compile ``prange`` loops for several threads (serial after
            :func:`set_kernel_threads` set one thread for the calling thread).
        pack_lanes: also run LLVM's superword-level vectorizer on this loop (independent sums
            become vector instructions; no operation or order changes).
    """

    __slots__ = ("_compiled", "_loop", "_pack_lanes", "_packed_types", "_parallel")

    def __init__(self, loop: types.FunctionType, parallel: bool, pack_lanes: bool = False) -> None:
        self._loop = loop
        self._parallel = parallel
        self._pack_lanes = pack_lanes
        self._packed_types: set[tuple[object, ...]] = set()
        self._compiled: dict[bool, Callable[..., Any]] = {}

    def __call__(self, *args: Any) -> Any:
        parallel = self._parallel and not runs_on_one_thread()
        compiled = self._compiled.get(parallel)
        if compiled is None:
            compiled = self._compiled[parallel] = _compile(self._loop, parallel)
        if self._pack_lanes:
            # A call with new argument types compiles: that compilation packs lanes.
            key = (parallel, *(_type_key(argument) for argument in args))
            if key not in self._packed_types:
                with _lanes_packed():
                    result = compiled(*args)
                self._packed_types.add(key)
                return result
        return compiled(*args)


def runs_on_one_thread() -> bool:
    """True after :func:`set_kernel_threads` set one thread for the calling thread."""
    return getattr(_threads, "count", 0) == 1


def _type_key(argument: Any) -> object:
    """What Numba compiles a new version for: an array's dtype, rank and writeability."""
    if isinstance(argument, tuple):
        return tuple(_type_key(item) for item in argument)
    if hasattr(argument, "flags"):
        return (argument.dtype, argument.ndim, argument.flags.writeable)
    return type(argument)


_threads = threading.local()  # ``count``: the calling thread's kernel threads, once set here
_HELPERS: dict[str, types.FunctionType] = {}
_COMPILED_HELPERS: dict[str, Callable[..., Any]] = {}


def kernel_helper(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function kernel loops call (names unique in the package); compiled kernels call
    a compiled copy."""
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"a kernel helper is a plain function, got {type(function).__name__}")
    _HELPERS[function.__name__] = function
    return function


def compiled_kernel(
    *, parallel: bool, pack_lanes: bool = False
) -> Callable[[Callable[..., Any]], CompiledKernel]:
    """Mark a kernel loop for compilation on its first call (see :class:`CompiledKernel`)."""

    def mark(loop: Callable[..., Any]) -> CompiledKernel:
        if not isinstance(loop, types.FunctionType):
            raise TypeError(f"a kernel loop is a plain function, got {type(loop).__name__}")
        return CompiledKernel(loop, parallel, pack_lanes)

    return mark


@contextmanager
def _lanes_packed() -> Iterator[None]:
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        previous = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = True
        try:
            yield
        finally:
            config.SLP_VECTORIZE = previous


def kernel_thread_limit() -> int:
    """How many threads compiled kernels may use (``NUMBA_NUM_THREADS``). Imports Numba."""
    return int(_numba().config.NUMBA_NUM_THREADS)


def set_kernel_threads(count: int) -> int:
    """Run the calling thread's compiled ``prange`` loops on ``count`` threads (checked by the
    caller); return the count it had. Imports Numba."""
    numba = _numba()
    previous = int(numba.get_num_threads())
    numba.set_num_threads(count)
    _threads.count = count
    return previous


def sleep_between_kernels() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is set
    (OpenMP reads it once, when Numba loads it): threads sleep once a parallel region ends.

    For a long run sharing the machine (``ch18 train``): OpenMP's default spin made two
    two-thread epochs side by side take 2.7 times as long; a library call keeps the default,
    under which back-to-back kernels on a small table run up to 1.3 times faster.
    """
    if not any(name in os.environ for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def _numba() -> Any:
    import numba

    return numba


def _compiled_helper(helper: types.FunctionType) -> Callable[..., Any]:
    compiled = _COMPILED_HELPERS.get(helper.__name__)
    if compiled is None:
        copy = _with_compiled_helpers(helper, {})
        compiled = _COMPILED_HELPERS[helper.__name__] = _numba().njit(inline="always")(copy)
    return compiled


def _with_compiled_helpers(
    function: types.FunctionType, names: dict[str, Any]
) -> types.FunctionType:
    """A copy of ``function`` whose globals also hold ``names`` and its compiled helpers."""
    helpers = {
        name: _compiled_helper(helper)
        for name, helper in _HELPERS.items()
        if name in function.__code__.co_names and function.__globals__.get(name) is helper
    }
    namespace = {**function.__globals__, **names, **helpers}
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__qualname__ = function.__qualname__
    return copy


def _compile(loop: types.FunctionType, parallel: bool) -> Callable[..., Any]:
    numba = _numba()
    copy = _with_compiled_helpers(loop, {"prange": numba.prange})  # Numba's prange, compiled
    compiled: Callable[..., Any] = numba.njit(cache=True, parallel=parallel, nogil=True)(copy)
    return compiled
