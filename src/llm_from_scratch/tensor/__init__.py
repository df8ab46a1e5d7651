"""Float tensors with checked row-major layouts (course chapter 8)."""

from llm_from_scratch.tensor.storage import (
    INDEX_LIMIT,
    MAX_AXES,
    Shape,
    Tensor,
    checked_row_major_layout,
)

__all__ = ["INDEX_LIMIT", "MAX_AXES", "Shape", "Tensor", "checked_row_major_layout"]
