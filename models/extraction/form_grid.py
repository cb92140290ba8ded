"""Generic forms, layer 3: where one piece sits, and the page's ruled lines around it.

`Grid` holds what every layout query builds on: a piece's printed line height, its centre with the page
tilt taken out (data/geometry.py), and the page's ruled lines (Page.rules, models/ocr/rulings.py), split
into vertical ones (cell borders across a row) and horizontal ones (borders between a grid's rows). Its
queries answer what the ruled lines say: how many borders stand between two pieces (`walls`, `floors`),
whether two lines share one cell (`same_cell`), which piece fills the next cell of a row (`cell_right`).
The row and column queries that need no ruled line (right of, under, stacked) are form_layout.Layout, a
Grid of its own; this file imports only the layers below it (form_pieces, form_text via it, settings).
"""
from __future__ import annotations

from data import geometry
from data.document import Page
from models.extraction.form_pieces import Piece
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


class Grid:
    """A page's pieces and ruled lines, with the page tilt taken out (data/geometry.py), so a row that
    drifts across a skewed photo stays one row, and a ruled line's ends stay its cell's corners."""

    def __init__(self, page: Page, pieces: list[Piece], st: DecodeSettings = DEFAULT_SETTINGS):
        self.st = st
        self.slope = geometry.page_slope([ln.quad for ln in page.lines])
        self.pieces = pieces
        # the page's vertical ruled lines (models/ocr/rulings.py), top end first: a form's cell borders
        self.vrules = [(r[0], r[1], r[2], r[3]) if r[1] <= r[3] else (r[2], r[3], r[0], r[1])
                       for r in page.rules if abs(r[3] - r[1]) > abs(r[2] - r[0])]
        # ... and its horizontal ones, left end first: the borders between a grid's rows
        self.hrules = [(r[0], r[1], r[2], r[3]) if r[0] <= r[2] else (r[2], r[3], r[0], r[1])
                       for r in page.rules if abs(r[3] - r[1]) <= abs(r[2] - r[0])]
        self._walls: dict[tuple, float | None] = {}        # _wall's answers (pieces do not move)

    @staticmethod
    def height(p: Piece) -> float:
        return geometry.height(p.box)

    def line_height(self, p: Piece) -> float:
        """One printed line's height (a piece joined over two lines is taller)."""
        return self.height(p) / (1 + len(p.more))

    def apart(self, k: Piece, pieces: list[Piece] | None = None) -> list[Piece]:
        """The pieces (the page's unless given) standing on none of `k`'s lines: its row's other cells."""
        lines = k.lines
        # p.line is one of p.lines: a single-line piece (no `more`) needs no set of its own
        return [p for p in (self.pieces if pieces is None else pieces)
                if p is not k and p.line not in lines and (not p.more or lines.isdisjoint(p.lines))]

    def centre(self, p: Piece) -> float:
        return geometry.deskewed_centre(p.box, self.slope)


    def walls(self, a: Piece, b: Piece) -> int | None:
        """How many of the page's vertical ruled lines stand between `a` and `b` (b right of a) across both
        their rows: 1, `b` is in the next cell of `a`'s row; None where the page has no vertical ruled lines
        (no grid found: nothing can be said). Lines closer than half a line height count once (a double
        border)."""
        if not self.vrules:
            return None
        h = min(self.line_height(a), self.line_height(b))
        ya, yb = self.centre(a), self.centre(b)        # (tilt out: a ruled line's ends are its cell's corners)
        xs = []
        y = (a.box[1] + a.box[3] + b.box[1] + b.box[3]) / 4
        for seg in self.vrules:
            if not (self._crosses(seg, ya, h) and self._crosses(seg, yb, h)):
                continue
            x = _x_at(seg, y)
            if a.box[2] - self.st.wall_slack * h < x < b.box[0] + self.st.wall_slack * h:
                xs.append(x)
        xs.sort()
        return sum(1 for i, x in enumerate(xs) if i == 0 or x - xs[i - 1] > h / 2)

    def walls_across(self, p: Piece) -> list[float]:
        """x of the page's vertical ruled lines that cross `p`'s row (at its middle), left to right."""
        h = self.line_height(p)
        y, level = (p.box[1] + p.box[3]) / 2, self.centre(p)
        return sorted(_x_at(seg, y) for seg in self.vrules if self._crosses(seg, level, h))

    def rules_across(self, x0: float, x1: float, slack: float = 0.0) -> list[float]:
        """y (at the middle of x0..x1) of the page's horizontal ruled lines that run from x0 to x1 (within `slack`),
        top to bottom: the borders between the rows of a table that spans x0..x1. Pieces of one line at one
        height (a border the detector lost where text touched it) count as one where no gap between them is
        wider than 2 x `slack`."""
        x = (x0 + x1) / 2
        segs = sorted((_y_at(seg, x), seg[0], seg[2]) for seg in self.hrules if seg[2] >= x0 and seg[0] <= x1)
        out: list[float] = []
        i = 0
        while i < len(segs):
            j = i
            while j + 1 < len(segs) and segs[j + 1][0] - segs[i][0] <= max(2.0, slack / 4):
                j += 1
            parts = sorted((a, b) for _, a, b in segs[i:j + 1])
            reach, ok = parts[0][1], parts[0][0] <= x0 + slack
            for a, b in parts[1:]:
                ok = ok and a - reach <= 2 * slack
                reach = max(reach, b)
            if ok and reach >= x1 - slack:
                out.append(sum(y for y, _, _ in segs[i:j + 1]) / (j + 1 - i))
            i = j + 1
        return out

    def floors(self, a: Piece, b: Piece) -> int:
        """How many of the page's horizontal ruled lines stand between `a` and `b` (b below a), at the middle
        of where the two overlap across (or between them): 1 or more, `b` is in another row of a grid."""
        if not self.hrules:
            return 0
        h = min(self.line_height(a), self.line_height(b))
        x = (max(a.box[0], b.box[0]) + min(a.box[2], b.box[2])) / 2
        ys = []
        slack = self.st.wall_slack * h
        for seg in self.hrules:
            if seg[0] <= x <= seg[2] and a.box[3] - slack < (y := _y_at(seg, x)) < b.box[1] + slack:
                ys.append(y)
        ys.sort()
        return sum(1 for i, y in enumerate(ys) if i == 0 or y - ys[i - 1] > h / 2)

    def _wall(self, p: Piece, right: bool) -> float | None:
        """x of the nearest vertical ruled line left (right) of `p` across its middle: its cell's edge."""
        key = (id(p), right, tuple(p.box), len(p.more))
        if key not in self._walls:
            self._walls[key] = self._find_wall(p, right)
        return self._walls[key]

    def _crosses(self, seg: tuple[float, float, float, float], level: float, h: float) -> bool:
        """A vertical ruled line (top end first) crosses the row whose deskewed centre is `level` (its ends
        are its cell's corners, so they are deskewed too), allowing `wall_slack` line heights `h`."""
        x0, y0, x1, y1 = seg
        return y0 - self.slope * x0 - self.st.wall_slack * h <= level <= y1 - self.slope * x1 + self.st.wall_slack * h

    def _find_wall(self, p: Piece, right: bool) -> float | None:
        h = self.line_height(p)
        y, level = (p.box[1] + p.box[3]) / 2, self.centre(p)
        best: float | None = None
        for seg in self.vrules:
            if not self._crosses(seg, level, h):
                continue
            x = _x_at(seg, y)
            if right and x > p.box[2] - self.st.wall_slack * h and (best is None or x < best):
                best = x
            if not right and x < p.box[0] + self.st.wall_slack * h and (best is None or x > best):
                best = x
        return best

    def _floor(self, p: Piece, below: bool) -> tuple[float, float, float, float] | None:
        """The nearest horizontal ruled line above (below) `p` across its middle: its cell's edge."""
        h = self.line_height(p)
        x = (p.box[0] + p.box[2]) / 2
        best, at = None, 0.0
        for seg in self.hrules:
            if not seg[0] <= x <= seg[2]:
                continue
            y = _y_at(seg, x)
            if (below and y > p.box[3] - self.st.wall_slack * h and (best is None or y < at)) or \
                    (not below and y < p.box[1] + self.st.wall_slack * h and (best is None or y > at)):
                best, at = seg, y
        return best

    def same_cell(self, a: Piece, b: Piece) -> bool:
        """`a` and `b` (b below a) stand in one ruled cell: the same vertical ruled lines left and right of
        both, and no horizontal one between them."""
        if not self.vrules:
            return False
        h = min(self.line_height(a), self.line_height(b))
        sides = [(self._wall(a, right), self._wall(b, right)) for right in (False, True)]
        return all(p is not None and q is not None and abs(p - q) <= h / 2 for p, q in sides) and \
            self.floors(a, b) == 0

    def cell_right(self, k: Piece, pieces: list[Piece] | None = None) -> Piece | None:
        """The first piece of the next cell right of `k`, however far (申请事项 | ...已提交...: a value centred
        in a wide merged cell; 出生日期 over its hint (须与证件一致) | a value centred lower in its cell), where
        the page's ruled lines draw the cells: the piece stands right of `k`'s cell's right border, that
        border is its own cell's left one, and its middle is within `k`'s cell's height (or `k`'s row where
        no horizontal lines close the cell). None on a page without vertical ruled lines."""
        if not self.vrules:
            return None
        edge = self._wall(k, right=True)
        if edge is None:
            return None
        h = self.line_height(k)
        top, bottom = self._floor(k, below=False), self._floor(k, below=True)
        others = self.apart(k, pieces)
        inside = []
        for p in others:
            if p.box[0] < edge - self.st.wall_slack * h:
                continue
            left = self._wall(p, right=False)
            if left is None or abs(left - edge) > h / 2:
                continue
            mid, x = (p.box[1] + p.box[3]) / 2, (p.box[0] + p.box[2]) / 2
            if top is not None and bottom is not None:
                inside += [p] if _y_at(top, x) < mid < _y_at(bottom, x) else []
            elif geometry.same_row(p.box, k.box, self.slope, self.st.form_row_tol):
                inside.append(p)
        return min(inside, key=lambda p: (self.centre(p), p.box[0])) if inside else None


def _y_at(seg: tuple[float, float, float, float], x: float) -> float:
    """Where a ruled line (left end first) stands at `x` (extended straight beyond its ends)."""
    x0, y0, x1, y1 = seg
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0


def _x_at(seg: tuple[float, float, float, float], y: float) -> float:
    """Where a vertical ruled line (top end first) stands at `y`."""
    x0, y0, x1, y1 = seg
    return x0 + (x1 - x0) * (y - y0) / (y1 - y0) if y1 > y0 else x0
