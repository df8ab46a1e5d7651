"""Checkpoints: named parameters saved to and loaded from safetensors files.

safetensors is the format model tools share for tables (PyTorch, JAX and NumPy programs read and
write it through the ``safetensors`` package): 8 bytes of header length, a JSON header naming
each tensor's dtype, shape and byte range, then the raw little-endian bytes. This package reads
and writes that format itself, streaming the bytes between the file and each parameter's own
array, so that saving or loading a table costs about the table's own memory and no more; the
tests check the files against the ``safetensors`` package both ways.
"""

from llm_from_scratch.nn.checkpoint.errors import (
    CheckpointAllocationError,
    CheckpointError,
    CheckpointPathTypeError,
    CheckpointReadError,
    CheckpointWriteError,
    ConversionRequiredError,
    DuplicateTensorKeyError,
    HeaderJsonError,
    HeaderSizeError,
    LoadDtypeError,
    MetadataFormatError,
    MetadataTypeError,
    MissingTensorsError,
    NonFiniteValueError,
    ParameterDtypeMismatchError,
    ParameterSetMismatchError,
    ParameterShapeMismatchError,
    TensorEntryError,
    TensorNameError,
    TensorNamesTypeError,
    TensorOffsetsError,
    TensorSizeMismatchError,
    TrailingDataError,
    TruncatedCheckpointError,
    UnsupportedDtypeError,
)
from llm_from_scratch.nn.checkpoint.reading import load_metadata, load_parameters
from llm_from_scratch.nn.checkpoint.writing import save_parameters

__all__ = [
    "CheckpointAllocationError",
    "CheckpointError",
    "CheckpointPathTypeError",
    "CheckpointReadError",
    "CheckpointWriteError",
    "ConversionRequiredError",
    "DuplicateTensorKeyError",
    "HeaderJsonError",
    "HeaderSizeError",
    "LoadDtypeError",
    "MetadataFormatError",
    "MetadataTypeError",
    "MissingTensorsError",
    "NonFiniteValueError",
    "ParameterDtypeMismatchError",
    "ParameterSetMismatchError",
    "ParameterShapeMismatchError",
    "TensorEntryError",
    "TensorNameError",
    "TensorNamesTypeError",
    "TensorOffsetsError",
    "TensorSizeMismatchError",
    "TrailingDataError",
    "TruncatedCheckpointError",
    "UnsupportedDtypeError",
    "load_metadata",
    "load_parameters",
    "save_parameters",
]
