"""Optimizer state in a safetensors file: the arrays of ``optimizer.state_dict()`` and, in
``__metadata__``, the optimizer's kind and each setting as text that reads back as the same
float; written and read by :mod:`llm_from_scratch.nn.checkpoint`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from llm_from_scratch.errors import FormatError, OptionError
from llm_from_scratch.nn.checkpoint import (
    STORED,
    StoredTensor,
    checked_path,
    opened,
    read_tensor,
    write_arrays,
)
from llm_from_scratch.optim.optimizer import Optimizer, held_state, load_owned_state, state_layout
from llm_from_scratch.optim.state import ExpectedArray, check_keys, check_layout

KIND_KEY: Final = "optimizer"


def save_state(path: str | os.PathLike[str], optimizer: Optimizer) -> None:
    """Save an optimizer's state (not the parameters' values) of one step count as one
    safetensors file, replaced atomically.

    Args:
        path: the file (a ``str`` or ``os.PathLike``); its folder must exist.
        optimizer: an ``SGD``, ``Adagrad``, ``Adam`` or ``AdamW``.

    Raises:
        OptionError: ``checkpoint.argument`` (``path`` is no path), ``optimizer.type``.
        FileAccessError: ``checkpoint.write`` (checked before anything is created, or a failed
            write: an earlier file is unchanged). FormatError: a header over the format's limit.

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
    """Replace an optimizer's state with a :func:`save_state` file's, all or nothing. Checked in
    order: the format; the metadata (this kind, the same settings; other entries ignored); the
    tensors' keys, shapes and dtypes before any data is read; then the data, as
    ``load_state_dict`` checks it.

    Args:
        path: the file (a ``str`` or ``os.PathLike``).
        optimizer: built over parameters of the same names, shapes and dtypes as the saver's.

    Raises:
        OptionError: ``checkpoint.argument`` (``path`` is no path), ``optimizer.type``.
        FileAccessError: ``checkpoint.read``, the file cannot be opened or read.
        FormatError: the file breaks the format; ``optimizer.state-file``, its metadata names
            another kind or setting value, or lacks one; ``optimizer.state``, its tensors.

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
    """What :func:`save_state` writes in ``__metadata__``: the kind, then each setting's ``repr``.

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
        value_type = type(optimizer).__name__
        raise OptionError("optimizer.type", function=function, value_type=value_type)
    return optimizer


def _check_tensors(
    optimizer: Optimizer, expected: Mapping[str, ExpectedArray], tensors: Sequence[StoredTensor]
) -> None:
    stored = {tensor.name: tensor for tensor in tensors}
    check_keys(optimizer.kind, expected, stored)
    for key, want in expected.items():
        code = stored[key].dtype
        dtype: np.dtype[Any] | str = code  # the code of a dtype NumPy cannot hold (BF16, F8_*)
        if code in STORED and code != "BF16":
            dtype = STORED[code].newbyteorder("=")
        check_layout(optimizer.kind, key, want, stored[key].shape, dtype)


def _check_metadata(optimizer: Optimizer, path: str, metadata: Mapping[str, str]) -> None:
    for key, expected in state_metadata(optimizer).items():
        if metadata.get(key) != expected:
            raise FormatError(
                "optimizer.state-file",
                optimizer=optimizer.kind,
                path=path,
                key=key,
                expected=expected,
                actual=metadata.get(key),
            )
