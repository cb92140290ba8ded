"""Page geometry: one tilt estimate, deskewed centres, rows, and what stands right of or below a box.

Boxes are axis-aligned [x0, y0, x1, y1] in page pixels. A photographed page is tilted: a printed row
climbs or falls across it, so two cells of one row can sit further apart vertically than two rows.
Every row test here takes the page tilt out first (`deskewed_centre`: the centre moved along the tilt to
x = 0); a slope of 0 gives the plain test for pages read straight.

    slope = page_slope([ln.quad for ln in page.lines])
    same_row(a, b, slope)            right_of(key, boxes, slope)            below(key, boxes, slope)
    continues_right(a, b, slope)     under(key, box, slope)                 row_offset(a, b, slope)
    cluster_rows(cells, line_height, slope)            reading_order(lines)
    level_quads(quads, slope, width, height)           (the lines' corners with the tilt turned out)
    level_reading_order(quads, width, height)          (slope, level quads, reading order of a tilted page)
    char_box(line_box, text, start, end)     (a character's share of its line by printed width)
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from data.document import quad_to_box

Box = Sequence[float]

WIDE_LINE = 2.0     # lines at least this many times as wide as tall give the tilt (short cells: noisy edges)
ROW_TOL = 0.5       # two boxes share a row when their deskewed centres are this x line height apart or less
ROW_LOWER = 0.35    # a second cell of one key this x line height lower starts the next row (cluster_rows)
READ_ROW = 0.5      # reading order: a line joins a row within this x the smaller line height of its centre
RIGHT_OVERLAP = 0.5  # right_of: a box may start this x line height left of the key's right edge
BELOW_OVERLAP = 0.3  # below: a box may start this x line height above the key's bottom
INDENT = 1.0        # below: a box may start this x line height left of the key's left edge
JOIN_ROW = 0.4      # continues_right: centres this x the smaller line height apart at most (boxes of equal
                    # height then overlap by 0.6 of it: one printed line that OCR cut in two)
HALF_WIDTH_INK = 0.7  # ink_box: digits' and Latin letters' ink height in a line as tall as its Chinese characters
                      # (generated invoices: 12-13 px digits on 19 px lines)
LEVEL_MIN_SLOPE = 0.005  # level_reading_order: a page tilted more than this (0.3 degree) is read level
JOIN_BACK = 1.0     # continues_right: b may start this x line height left of a's right edge (glyph boxes of
                    # neighbouring OCR lines often overlap by most of a character)


def page_slope(quads: list) -> float:
    """The page tilt: median top-edge slope (dy/dx) of the wide text lines (quads: 4 corner points,
    clockwise from the top left)."""
    slopes = []
    for q in quads:
        q = np.asarray(q, dtype=float)
        dx, height = q[1, 0] - q[0, 0], float(np.hypot(*(q[3] - q[0])))
        if dx > WIDE_LINE * max(height, 1.0):
            slopes.append((q[1, 1] - q[0, 1]) / dx)
    return float(np.median(slopes)) if slopes else 0.0


def level_quads(quads: list, slope: float, width: float, height: float) -> list[list[list[float]]]:
    """Every quad's corners turned about the page centre by the page tilt, so that its printed rows run
    level: a tilted line's axis-aligned box is as tall as the line is wide times the slope (a 6-degree
    photo gives a 230 px name a 51 px box over three rows); turned level, it is one row high again."""
    if not slope:
        return [[[float(x), float(y)] for x, y in q] for q in quads]
    theta = float(np.arctan(slope))
    c, s = float(np.cos(theta)), float(np.sin(theta))
    cx, cy = width / 2, height / 2
    return [[[cx + (x - cx) * c + (y - cy) * s, cy - (x - cx) * s + (y - cy) * c] for x, y in q] for q in quads]


class _Placed:
    """A quad's box and its index, for reading_order."""
    __slots__ = ("box", "index")

    def __init__(self, quad: Any, index: int) -> None:
        self.box, self.index = quad_to_box(quad), index


def level_reading_order(quads: list, width: float, height: float,
                        min_slope: float = LEVEL_MIN_SLOPE) -> tuple[float, list[list[list[float]]], list[int]]:
    """The page tilt, the quads turned level (`level_quads`; the quads themselves on a page tilted
    `min_slope` or less) and the indices of the quads in reading order, rows found on the level quads.
    On a tilted page the upright boxes' rows interleave: a 2-degree photo lifts the right end of a
    1,500 px row by 50 px, two line heights, so its right-hand cell was read after the next row's
    left-hand one; the level quads keep each printed row one row."""
    slope = page_slope(quads)
    if abs(slope) <= min_slope:
        slope = 0.0
    level = level_quads(quads, slope, width, height)
    order = [p.index for p in reading_order([_Placed(q, i) for i, q in enumerate(level)])]
    return slope, level, order


def lift(box: Box, slope: float) -> float:
    """How far the tilt moves a box's centre between x = 0 and the box's x."""
    return slope * (box[0] + box[2]) / 2


def deskewed_centre(box: Box, slope: float = 0.0) -> float:
    """A box's vertical centre with the tilt taken out."""
    return (box[1] + box[3]) / 2 - lift(box, slope)


def height(box: Box) -> float:
    return max(1.0, box[3] - box[1])


def row_offset(a: Box, b: Box, slope: float = 0.0) -> float:
    """Vertical distance between two boxes' centres with the tilt taken out (0: one printed row)."""
    return abs(deskewed_centre(a, slope) - deskewed_centre(b, slope))


def same_row(a: Box, b: Box, slope: float = 0.0, tol: float = ROW_TOL, line_height: float | None = None) -> bool:
    """Whether two boxes stand on one printed row: deskewed centres within `tol` x the line height (the
    taller box's unless given)."""
    h = line_height if line_height is not None else max(height(a), height(b))
    return row_offset(a, b, slope) < tol * h


def continues_right(a: Box, b: Box, slope: float = 0.0, max_gap: float = 1.5) -> bool:
    """b carries a's printed line on to the right: on a's row (within `JOIN_ROW` of the smaller line
    height), starting at most `JOIN_BACK` line heights before a's right edge and `max_gap` after it.
    OCR cuts one printed line in two at a bracket or at the wide gaps of a letter-spaced label (合  计)."""
    h = min(height(a), height(b))
    gap = b[0] - a[2]
    return same_row(a, b, slope, JOIN_ROW, line_height=h) and -JOIN_BACK * h <= gap <= max_gap * h


def gap_below(key: Box, b: Box, slope: float = 0.0) -> float:
    """How far b's top is below key's bottom, tilt taken out (negative: b starts above it)."""
    return (b[1] - lift(b, slope)) - (key[3] - lift(key, slope))


def text_gap_below(key: Box, b: Box, slope: float = 0.0) -> float:
    """`gap_below` between the text lines themselves: a tilted line's upright box is taller than its text
    by |slope| x its width (half above, half below the text's centre); without taking that out of both
    boxes a long tilted line overlaps the line under it."""
    return gap_below(key, b, slope) + abs(slope) * ((key[2] - key[0]) + (b[2] - b[0])) / 2


def text_height(box: Box, slope: float = 0.0) -> float:
    """A tilted line's own height: its upright box less what the tilt adds over its width."""
    return max(height(box) - abs(slope) * (box[2] - box[0]), 0.5 * height(box))


def overlaps_x(a: Box, b: Box) -> bool:
    return b[0] < a[2] and a[0] < b[2]


def under(key: Box, b: Box, slope: float = 0.0) -> bool:
    """b stands in key's column and its top is not above key's top (tilt taken out): a value printed
    under its key, whatever the distance (`below` finds the nearest such box within reach)."""
    return overlaps_x(key, b) and gap_below(key, b, slope) >= -height(key)


def box_array(boxes: Sequence[Box] | np.ndarray) -> np.ndarray:
    """Boxes as an (n, 4) float array: the nearest-box searches below test every box at once (a form
    page asks them for each of its ~150 pieces, several times over)."""
    return np.asarray(boxes, dtype=float).reshape(-1, 4)


def on_row(key: Box, boxes: Sequence[Box] | np.ndarray, slope: float = 0.0, tol: float = ROW_TOL) -> np.ndarray:
    """`same_row(b, key)` for every box b at once (the arithmetic of same_row and deskewed_centre term for
    term, so each answer is the scalar one's)."""
    b = box_array(boxes)
    tall = np.maximum(np.maximum(1.0, b[:, 3] - b[:, 1]), height(key))
    centre = (b[:, 1] + b[:, 3]) / 2 - slope * (b[:, 0] + b[:, 2]) / 2
    return np.asarray(np.abs(centre - deskewed_centre(key, slope)) < tol * tall)


def right_of(key: Box, boxes: Sequence[Box] | np.ndarray, slope: float = 0.0, max_gap: float = 8.0,
             tol: float = ROW_TOL) -> int | None:
    """Index of the nearest box right of `key` on its row, when it starts within `max_gap` line heights
    (`same_row` with the taller box's height; the leftmost start wins, the first such box on a tie)."""
    b = box_array(boxes)
    if not len(b):
        return None
    h = height(key)
    row = np.flatnonzero(on_row(key, b, slope, tol) & (b[:, 0] >= key[2] - RIGHT_OVERLAP * h))
    if not len(row):
        return None
    i = int(row[np.argmin(b[row, 0])])
    return i if b[i, 0] - key[2] <= max_gap * h else None


def below(key: Box, boxes: Sequence[Box] | np.ndarray, slope: float = 0.0, max_gap: float = 1.0) -> int | None:
    """Index of the nearest box under `key` that overlaps it horizontally and starts at most a line height
    left of it, when its top is within `max_gap` line heights of the key's bottom (tilt taken out; the
    first of equally near boxes)."""
    b = box_array(boxes)
    if not len(b):
        return None
    hk = height(key)
    h = np.maximum(hk, np.maximum(1.0, b[:, 3] - b[:, 1]))
    # text_gap_below, term for term
    gap = ((b[:, 1] - slope * (b[:, 0] + b[:, 2]) / 2) - (key[3] - lift(key, slope))
           + abs(slope) * ((key[2] - key[0]) + (b[:, 2] - b[:, 0])) / 2)
    ok = np.flatnonzero((gap >= -BELOW_OVERLAP * h) & (b[:, 0] < key[2]) & (key[0] < b[:, 2]) &
                        (b[:, 0] >= key[0] - INDENT * h))
    if not len(ok):
        return None
    best = int(ok[np.argmin(gap[ok])])
    if gap[best] > max_gap * h[best]:
        return None
    return best


def cluster_rows(cells: list[tuple[str, Any]], line_height: float, slope: float = 0.0,
                 tolerance: float = ROW_TOL, lower: float = ROW_LOWER) -> list[list[int]]:
    """Cells (key, box) -> rows as lists of cell indices, rows top to bottom, cells left to right.

    Deskewed centres within `tolerance` x `line_height` of the row's mean centre join it; a second cell
    of a key the row already holds starts a new row only when it sits `lower` x `line_height` below that
    cell (clearly the next printed row), otherwise it stays in the row (the caller picks one of them)."""
    h = max(line_height, 1.0)
    centre = [(b[1] + b[3]) / 2 - slope * (b[0] + b[2]) / 2 for _, b in cells]
    rows: list[list[int]] = []
    for i in sorted(range(len(cells)), key=lambda i: (centre[i], cells[i][1][0])):
        if rows:
            row = rows[-1]
            mean = sum(centre[j] for j in row) / len(row)
            same_key = [j for j in row if cells[j][0] == cells[i][0]]
            clearly_lower = any(centre[i] - centre[j] > lower * h for j in same_key)
            if centre[i] - mean <= tolerance * h and not clearly_lower:
                row.append(i)
                continue
        rows.append([i])
    return [sorted(row, key=lambda j: (cells[j][1][0], centre[j])) for row in rows]


def reading_order(lines: list[Any]) -> list[Any]:
    """Lines (anything with a `box`) top-to-bottom by rows, left-to-right within a row. A line shares a
    row when its centre is within `READ_ROW` x the smaller of its height and the row's running mean height
    of the row's running centre."""
    if not lines:
        return []
    items = sorted(lines, key=lambda ln: (ln.box[1] + ln.box[3]) / 2)
    rows: list[list[Any]] = []
    row_centre = row_height = 0.0
    for ln in items:
        x0, y0, x1, y1 = ln.box
        centre, h = (y0 + y1) / 2, max(1.0, y1 - y0)
        if rows and abs(centre - row_centre) <= READ_ROW * min(h, row_height):
            rows[-1].append(ln)
            n = len(rows[-1])
            row_centre += (centre - row_centre) / n
            row_height += (h - row_height) / n
        else:
            rows.append([ln])
            row_centre, row_height = centre, h
    return [ln for row in rows for ln in sorted(row, key=lambda line: line.box[0])]


def char_width(ch: str) -> float:
    """Printed width of a character in ems: Chinese characters and full-width forms take a whole em,
    Latin letters, digits, half-width punctuation and spaces about half of one."""
    return 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.5


def char_box(box: Box, text: str, start: int, end: int) -> list[float]:
    """The part of a line's box under characters [start, end) of its text, by printed width (0.1 px): in
    金额：12.50 the figure takes a third of the box, not half (a box by character count starts inside
    the key)."""
    x0, y0, x1, y1 = box
    widths = [char_width(ch) for ch in text]
    total = sum(widths) or 1.0
    w = x1 - x0
    return [round(x0 + w * sum(widths[:start]) / total, 1), y0, round(x0 + w * sum(widths[:end]) / total, 1), y1]


def ink_box(box: Box, text: str, start: int, end: int) -> list[float]:
    """`char_box` cut to the height the characters' ink takes: a run of digits and Latin letters on a
    line that also holds Chinese characters is `HALF_WIDTH_INK` of the line's height, about its middle
    (the line box is as tall as the Chinese characters). For the box a user sees around a value; row
    tests keep the line's height (`char_box`)."""
    b = char_box(box, text, start, end)
    if text[start:end].strip() and all(char_width(c) < 1 for c in text[start:end]) \
            and any(char_width(c) == 1 for c in text):
        mid, half = (b[1] + b[3]) / 2, (b[3] - b[1]) * HALF_WIDTH_INK / 2
        b[1], b[3] = round(mid - half, 1), round(mid + half, 1)
    return b
