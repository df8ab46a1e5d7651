"""Optimizer state in a safetensors file: :func:`save_state` and :func:`load_state`.

The file holds the arrays of ``optimizer.state_dict()`` under their keys (``step`` as a 0-d
``I64`` tensor) and, in ``__metadata__``, the optimizer's kind (``optimizer``: ``SGD``,
``Adagrad``, ``Adam`` or ``AdamW``) and each of its hyperparameters (``learning_rate``, ...;
see :attr:`Optimizer.hyperparameters`), as text that reads back as the same float. It is
written and read by :mod:`llm_from_scratch.nn.checkpoint`: the same atomic replacement, and
the same check of the whole file by the ``safetensors`` package before anything is read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from llm_from_scratch.nn.checkpoint import (
    STORED,
    StoredTensor,
    checked_path,
    opened,
    read_tensor,
    write_arrays,
)
from llm_from_scratch.optim.errors import NotAnOptimizerError, StateFileError
from llm_from_scratch.optim.optimizer import (
    Optimizer,
    held_state,
    load_owned_state,
    state_layout,
)
from llm_from_scratch.optim.state import ExpectedArray, check_keys, check_layout

KIND_KEY: Final = "optimizer"
"""The ``__metadata__`` entry that names the optimizer's kind."""


def save_state(path: str | os.PathLike[str], optimizer: Optimizer) -> None:
    """Save an optimizer's state as one safetensors file, replaced atomically.

    The tensors are ``optimizer.state_dict()``'s arrays under its keys; the metadata names
    the optimizer's kind and hyperparameters (see the module docstring). The file is written
    as :func:`~llm_from_scratch.nn.checkpoint.save_parameters` writes: to a temporary file in
    the same folder, flushed to disk and renamed over ``path``, so that on any failure an
    earlier file at ``path`` is as it was. The state arrays are written from where the
    optimizer keeps them (no copy), holding the optimizer's lock: a step on another thread
    waits, and the file holds the state of one step count. The parameters' values are not in
    the file: save them with ``save_parameters``.

    Args:
        path: the file (a ``str`` or ``os.PathLike``); its folder must exist.
        optimizer: an ``SGD``, ``Adagrad``, ``Adam`` or ``AdamW``.

    Raises:
        OptionError: ``checkpoint.argument``: ``path`` is not a path.
        NotAnOptimizerError: ``optimizer`` is not an optimizer.
        FileAccessError: ``checkpoint.write``: the path is one the system cannot take (a NUL
            character, a lone surrogate, a name of more than 255 bytes), names a folder or has
            no folder, checked before anything is created.
        FormatError: ``checkpoint.invalid``: the header would exceed the format's limit
            (parameter names of about 100 MB).
        FileAccessError: ``checkpoint.write``: the file cannot be written, flushed or renamed.

    Example:
        >>> import pathlib, tempfile
        >>> from llm_from_scratch.nn import Embedding, SplitMix64, load_metadata
        >>> from llm_from_scratch.optim import Adagrad
        >>> layer = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
        >>> optimizer = Adagrad(layer.parameters(), learning_rate=0.5)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "adagrad.safetensors"
        ...     save_state(path, optimizer)
        ...     metadata = load_metadata(path)
        >>> metadata
        {'optimizer': 'Adagrad', 'learning_rate': '0.5', 'eps': '1e-10',
         'initial_accumulator': '0.0'}
    """
    file_name = checked_path(path)
    checked = _checked_optimizer("save_state", optimizer)
    metadata = state_metadata(checked)
    with held_state(checked) as arrays:
        write_arrays(file_name, arrays, metadata)


def load_state(path: str | os.PathLike[str], optimizer: Optimizer) -> None:
    """Replace an optimizer's state with the state a :func:`save_state` file holds.

    All or nothing: the whole file is read and checked before anything changes, and on any
    error the optimizer's state arrays and step count are as they were. In order: the file's
    format (the ``safetensors`` package checks it, as for ``load_parameters``); the metadata,
    which must name this optimizer's kind and hold each of its hyperparameters with the same
    value (extra entries are ignored); the tensors' keys, shapes and dtypes, from the header,
    before any data is read; then the data, and what ``optimizer.load_state_dict`` checks
    (moments finite, sums of squares at least zero, ``step`` at least zero). The arrays read
    are loaded as they are, without a further copy.

    To continue with other hyperparameters on purpose (a smaller learning rate), give the
    arrays to ``load_state_dict`` yourself, for example from ``safetensors.numpy.load_file``.

    Args:
        path: the file (a ``str`` or ``os.PathLike``).
        optimizer: the optimizer to load into, built over parameters with the same names,
            shapes and dtypes as the one that saved the file.

    Raises:
        OptionError: ``checkpoint.argument``: ``path`` is not a path.
        NotAnOptimizerError: ``optimizer`` is not an optimizer.
        FileAccessError: ``checkpoint.read``: the path is one the system cannot take, or the
            file cannot be opened or read (it must be a regular file).
        FormatError: the file breaks the format, as for ``load_parameters``.
        StateFileError: the metadata names another kind or hyperparameter value, or lacks one.
        StateError: the tensors, in the order listed in ``docs/errors.md``.

    Example:
        >>> import pathlib, tempfile
        >>> from llm_from_scratch.nn import Embedding, SplitMix64
        >>> from llm_from_scratch.optim import Adam
        >>> layer = Embedding.new("token_embedding.weight", 4, 2, SplitMix64.from_seed(18))
        >>> optimizer = Adam(layer.parameters(), learning_rate=0.1)
        >>> optimizer.backward_step(layer([[2, 1, 2]]).sum())
        >>> resumed = Adam(layer.parameters(), learning_rate=0.1)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / "adam.safetensors"
        ...     save_state(path, optimizer)
        ...     load_state(path, resumed)
        >>> resumed.step_count
        1
    """
    file_name = checked_path(path)
    checked = _checked_optimizer("load_state", optimizer)
    expected = state_layout(checked)
    with opened(file_name) as (file, tensors, metadata):
        _check_metadata(checked, file_name, metadata)
        _check_tensors(checked, expected, tensors)
        arrays = {
            tensor.name: read_tensor(file_name, file, tensor, expected[tensor.name].dtype, False)
            for tensor in tensors
        }
    load_owned_state(checked, arrays)


def state_metadata(optimizer: Optimizer) -> dict[str, str]:
    """What :func:`save_state` writes in ``__metadata__``: the kind, then each hyperparameter
    as Python's shortest ``repr`` of its float.

    Example:
        >>> from llm_from_scratch.nn import Embedding
        >>> from llm_from_scratch.optim import AdamW
        >>> state_metadata(AdamW(Embedding(4, 2).parameters(), learning_rate=1e-3))
        {'optimizer': 'AdamW', 'learning_rate': '0.001', 'betas[0]': '0.9', \
'betas[1]': '0.999', 'eps': '1e-08', 'weight_decay': '0.01'}
    """
    written = {name: repr(value) for name, value in optimizer.hyperparameters.items()}
    return {KIND_KEY: optimizer.kind, **written}


def _checked_optimizer(function: str, optimizer: object) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise NotAnOptimizerError(function, type(optimizer).__name__)
    return optimizer


def _check_tensors(
    optimizer: Optimizer, expected: Mapping[str, ExpectedArray], tensors: Sequence[StoredTensor]
) -> None:
    """Refuse tensors of other keys, shapes or dtypes, before any of their data is read."""
    stored = {tensor.name: tensor for tensor in tensors}
    check_keys(optimizer.kind, expected, stored)
    for key, want in expected.items():
        code = stored[key].dtype
        dtype: np.dtype[Any] | str = code  # the code of a dtype NumPy cannot hold (BF16, F8_*)
        if code in STORED and code != "BF16":
            dtype = STORED[code].newbyteorder("=")
        check_layout(optimizer.kind, key, want, stored[key].shape, dtype)


def _check_metadata(optimizer: Optimizer, path: str, metadata: Mapping[str, str]) -> None:
    """Refuse a file saved from another kind of optimizer or with other hyperparameters."""
    for key, expected in state_metadata(optimizer).items():
        if metadata.get(key) != expected:
            raise StateFileError(optimizer.kind, path, key, expected, metadata.get(key))
