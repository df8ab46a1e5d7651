"""The explicit one-hot product: the algebraic baseline the lookup is compared against.

It builds every ``V``-long 0/1 indicator and multiplies it by the table with plain sums. It is
for comparison only and assumes valid IDs (the layer has checked them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def explicit_one_hot_product(
    table: npt.NDArray[np.floating], token_ids: Sequence[int]
) -> tuple[list[list[int]], list[float]]:
    """Return each ID's one-hot indicator and the flat ``indicators @ table`` values.

    Shape:
        ``table``: ``[V, d]``; ``token_ids``: ``[N]``; indicators ``[N, V]``; output
        ``[N * d]``.

    Example:
        >>> import numpy as np
        >>> table = np.array([[10.0, 11.0], [20.0, 21.0]])
        >>> explicit_one_hot_product(table, [1])
        ([[0, 1]], [20.0, 21.0])
    """
    vocabulary_size, width = (int(extent) for extent in table.shape)
    indicators: list[list[int]] = []
    output: list[float] = []
    for token_id in token_ids:
        one_hot = [1 if row == token_id else 0 for row in range(vocabulary_size)]
        for feature in range(width):
            output.append(
                float(
                    sum(active * float(table[row, feature]) for row, active in enumerate(one_hot))
                )
            )
        indicators.append(one_hot)
    return indicators, output
