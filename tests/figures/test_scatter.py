"""The shared scatter layout: labels of crowded words stay apart and inside the drawing."""

from __future__ import annotations

import itertools

import pytest

from llm_from_scratch.figures.scatter import ProjectedWord, Projection, layout_points

WIDTH, HEIGHT, LINE, CHARACTER = 300, 200, 15.0, 7.6


def crowded(count: int, x: float, y: float) -> Projection:
    """``count`` words at one place of a plane whose corners are two spread words."""
    corners = [ProjectedWord("b", "low", 0, 0.0, 0.0), ProjectedWord("b", "high", 1, 1.0, 1.0)]
    words = [ProjectedWord("a", f"word{k}", k + 2, x, y) for k in range(count)]
    return Projection((*corners, *words), (0.5, 0.25))


def overlaps(a: tuple[float, float, int], b: tuple[float, float, int]) -> bool:
    (ax, ay, an), (bx, by, bn) = a, b
    return abs(ay - by) < LINE and ax < bx + bn * CHARACTER and bx < ax + an * CHARACTER


@pytest.mark.parametrize(("x", "y"), [(0.5, 0.5), (0.5, 0.0), (0.5, 1.0)])
def test_labels_of_words_at_one_place_neither_overlap_nor_leave_the_drawing(
    x: float, y: float
) -> None:
    points = layout_points(crowded(6, x, y), {"a": "circle", "b": "square"}, WIDTH, HEIGHT)
    labels = [(p.label_x, p.label_y, len(p.word)) for p in points]
    assert all(LINE <= label_y <= HEIGHT - 4 for _, label_y, _ in labels)
    assert not [pair for pair in itertools.combinations(labels, 2) if overlaps(*pair)]
