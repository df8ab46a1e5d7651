"""The lines of the trace figure from each position to the row it selects, laid out for SVG: the
positions in one column, the table's rows in another, one arrow per position."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from llm_from_scratch.figures.trace_parser import Trace
from llm_from_scratch.traces.token_embeddings_v1 import SHARINGS

WIDTH: Final = 360
_TOP: Final = 24
_STEP: Final = 30  # between two positions, or two rows
_POSITION_X: Final = 96  # the right end of a position's label
_ROW_X: Final = 264  # the left end of a row's label
_GAP: Final = 8  # between a label and the end of its arrow
_HEAD: Final = 9.0  # the length of an arrowhead


@dataclass(frozen=True)
class Node:
    """A position or a row: its number (the trace's lexeme) and its label's baseline."""

    number: str
    y: float


@dataclass(frozen=True)
class Link:
    """The arrow between position ``flat`` and row ``row`` (``shared`` when the row has several
    positions): its line, and its head at the row (``to_row``) or at the position."""

    flat: str
    row: str
    shared: bool
    line: tuple[float, float, float, float]
    head: str


def _arrow(start: tuple[float, float], end: tuple[float, float]) -> tuple[tuple[float, ...], str]:
    """A line from ``start`` that stops short of ``end``, and the path of a head touching it."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    ux, uy = dx / length, dy / length
    base = (end[0] - ux * _HEAD, end[1] - uy * _HEAD)
    side = (-uy * _HEAD / 2, ux * _HEAD / 2)
    points = [end, (base[0] + side[0], base[1] + side[1]), (base[0] - side[0], base[1] - side[1])]
    path = "M" + "L".join(f"{x:.1f} {y:.1f}" for x, y in points) + "Z"
    return (*start, *base), path


@dataclass(frozen=True)
class Links:
    """The positions, the rows and one link per position, in a ``WIDTH`` x ``height`` drawing."""

    positions: tuple[Node, ...]
    rows: tuple[Node, ...]
    links: tuple[Link, ...]
    height: int
    position_x: int = _POSITION_X
    row_x: int = _ROW_X


def lay_out_links(trace: Trace, to_row: bool) -> Links:
    """Each position of the trace on the left, each row of its table on the right, and an
    arrow between each position and its row, pointing to the row when ``to_row`` (the
    gradient's way) else to the position (the copy's way).

    >>> from llm_from_scratch.figures.trace_parser import parse_trace
    >>> from llm_from_scratch.demos.ch18_token_embeddings import render_trace
    >>> [(link.flat, link.row, link.shared) for link in lay_out_links(
    ...     parse_trace(render_trace()), to_row=True).links]
    [('0', '2', True), ('1', '1', False), ('2', '2', True)]
    """
    positions = tuple(
        Node(lookup.flat, _TOP + _STEP * index) for index, lookup in enumerate(trace.lookups)
    )
    rows = tuple(Node(row.row, _TOP + _STEP * index) for index, row in enumerate(trace.table_rows))
    row_y = {node.number: node.y for node in rows}
    links = []
    for lookup, node in zip(trace.lookups, positions, strict=True):
        at_position = (_POSITION_X + _GAP, node.y - 5)
        at_row = (_ROW_X - _GAP, row_y[lookup.selected_row] - 5)
        line, head = _arrow(at_position, at_row) if to_row else _arrow(at_row, at_position)
        shared = lookup.sharing == SHARINGS[-1]
        links.append(Link(lookup.flat, lookup.selected_row, shared, _rounded(line), head))
    height = _TOP + _STEP * (max(len(positions), len(rows)) - 1) + 12
    return Links(positions, rows, tuple(links), int(height))


def _rounded(line: tuple[float, ...]) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (round(value, 1) for value in line)
    return x1, y1, x2, y2
