"""Generic forms, step 2: where pieces sit, which lines continue each other, which links are possible.

Layout only proposes and vetoes: a key's candidates are the text after its colon, the nearest piece
right of it on its row (the next table cell) and the line under it; a candidate that is a label, a hint,
an unticked option list or a header is vetoed. Which candidate a key takes is decided by scores
(forms.py: the model's link head and tags). Rule names (models/extraction/rules.py):
form_join_labels, form_join_values, form_row_values, form_label_not_value, form_hints, form_check_groups.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from data import geometry
from data.document import Page
from models.extraction.form_pieces import (
    KEY_ENDINGS,
    KOU,
    SENTENCE,
    TICKED,
    Piece,
    cjk,
    glued_key,
    is_hint,
    key_word,
    options,
    qualified_label,
    ticked,
)
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

OPEN_BRACKET = "（(〔【["
CONTINUES = "及和与或的、/（(〔【["  # what a label's second line starts with when it goes on from the first
TIGHT_GAP = 0.3      # x line height: the two lines of one label touch; two rows of a table stand further apart
TIGHT_CHARS = 4      # ... the first of at most this many characters, the second of three (是否一般 / 纳税人; a
                     # four-character second line is a label of its own: 本科 / 入职日期 is a value over a label)
TOUCH_OVERLAP = 0.5  # the OCR boxes of two lines of a packed cell may overlap by this x line height
SPACED_GAP = 2.0     # x line height: the characters of a letter-spaced label (姓 | 名) stand this close
PAST_KEY_ROW = 1.0   # Layout.past_a_key: a label within this x line height of the value's row stands on it
COLUMN_ROWS = 3      # far values aligned on this many rows make a value column (Layout.column_values)
WALL_SLACK = 0.3     # x line height: a ruled line between two pieces may reach this far into either's box, and
                     # its ends this far short of their rows
SECTION = re.compile(r"^([一二三四五六七八九十]+[、.．]|\d+[、.．]\D|第.{1,3}[部章节条])")   # 一、基本信息: a heading


class Layout:
    """Where pieces sit relative to each other, with the page tilt taken out (data/geometry.py), so a
    row that drifts across a skewed photo stays one row."""

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

    def right_of(self, k: Piece, pieces: list[Piece] | None = None, far: bool = False) -> Piece | None:
        """The nearest piece to the right of `k` on its row, if it starts close enough (`far`: within
        form_far_gap line heights, else form_right_gap)."""
        others = self.apart(k, pieces)
        others_boxes = geometry.box_array([p.box for p in others])
        boxes = [k.box]
        if k.more:      # a label over two lines: its value spans both, or stands on the colon's line or the first
            h = self.line_height(k)
            x0, y0, x1, y1 = k.box
            mid = (y0 + y1) / 2
            boxes = [[x0, mid - h / 2, x1, mid + h / 2], [x0, y1 - h, x1, y1], [x0, y0, x1, y0 + h]]
            if not k.colon_key:         # no colon on the last line: a value starting on the first comes first
                boxes = [boxes[0], boxes[2], boxes[1]]
        for box in boxes:
            i = geometry.right_of(box, others_boxes, self.slope,
                                  self.st.form_far_gap if far else self.st.form_right_gap, self.st.form_row_tol)
            if i is not None:
                return others[i]
        return None

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
            if a.box[2] - WALL_SLACK * h < x < b.box[0] + WALL_SLACK * h:
                xs.append(x)
        xs.sort()
        return sum(1 for i, x in enumerate(xs) if i == 0 or x - xs[i - 1] > h / 2)

    def walls_across(self, p: Piece) -> list[float]:
        """x of the page's vertical ruled lines that cross `p`'s row (at its middle), left to right."""
        h = self.line_height(p)
        y, level = (p.box[1] + p.box[3]) / 2, self.centre(p)
        return sorted(_x_at(seg, y) for seg in self.vrules if self._crosses(seg, level, h))

    def walls_inside(self, p: Piece) -> list[float]:
        """x of the page's vertical ruled lines that cross `p`'s row inside its box, at least half a line height
        from either end (a line OCR read across a cell border), left to right."""
        h = self.line_height(p)
        return [x for x in self.walls_across(p) if p.box[0] + h / 2 < x < p.box[2] - h / 2]

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
        for seg in self.hrules:
            if seg[0] <= x <= seg[2] and a.box[3] - WALL_SLACK * h < (y := _y_at(seg, x)) < b.box[1] + WALL_SLACK * h:
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
        are its cell's corners, so they are deskewed too), allowing WALL_SLACK line heights `h`."""
        x0, y0, x1, y1 = seg
        return y0 - self.slope * x0 - WALL_SLACK * h <= level <= y1 - self.slope * x1 + WALL_SLACK * h

    def _find_wall(self, p: Piece, right: bool) -> float | None:
        h = self.line_height(p)
        y, level = (p.box[1] + p.box[3]) / 2, self.centre(p)
        best: float | None = None
        for seg in self.vrules:
            if not self._crosses(seg, level, h):
                continue
            x = _x_at(seg, y)
            if right and x > p.box[2] - WALL_SLACK * h and (best is None or x < best):
                best = x
            if not right and x < p.box[0] + WALL_SLACK * h and (best is None or x > best):
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
            if (below and y > p.box[3] - WALL_SLACK * h and (best is None or y < at)) or \
                    (not below and y < p.box[1] + WALL_SLACK * h and (best is None or y > at)):
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
            if p.box[0] < edge - WALL_SLACK * h:
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

    def past_a_key(self, k: Piece, v: Piece, keys: list[Piece]) -> bool:
        """Whether another label stands between `k` and its far value `v`, on `v`'s row: the value is that
        label's (申请日期 | (empty) | 通讯地址 | 南宁市…: the address is not the date's, though a rough tilt
        estimate puts 通讯地址 off the row the date shares with the address). A value belongs to the
        nearest label before it; "on its row" is looser here (PAST_KEY_ROW) than for pairing."""
        h = self.line_height(k)
        return any(p is not k and p is not v and p.box[0] >= k.box[2] - h / 2 and p.box[2] <= v.box[0] + h / 2
                   and geometry.same_row(p.box, v.box, self.slope, PAST_KEY_ROW) for p in keys)

    def column_values(self, keys: list[Piece], past_keys: bool = False) -> dict[int, Piece]:
        """id(key) -> its value across a wide gap, where the gap is the page's table structure: keys that
        start their rows with nothing within form_right_gap, whose nearest pieces further right stand in one
        column (same centre or same left edge within a line height) on at least COLUMN_ROWS rows. A grid
        with wide value cells (label | ......张三......) leaves every value far from its label; a lone far
        piece on one row says nothing. Unless `past_keys`, a value with another of `keys` before it on its
        row is not `k`'s (`past_a_key`), though it counts towards the column."""
        far: list[tuple[Piece, Piece]] = []
        for k in keys:
            if not self.first_in_row(k) or self.right_of(k) is not None:
                continue
            others = self.apart(k)
            i = geometry.right_of(k.box, [p.box for p in others], self.slope, float("inf"), self.st.form_row_tol)
            if i is not None:
                far.append((k, others[i]))
        out: dict[int, Piece] = {}
        for k, v in far:
            h = self.line_height(k)
            mid = (v.box[0] + v.box[2]) / 2
            rows = sum(abs((w.box[0] + w.box[2]) / 2 - mid) <= h or abs(w.box[0] - v.box[0]) <= h for _, w in far)
            if rows >= COLUMN_ROWS and (past_keys or not self.past_a_key(k, v, keys)):
                out[id(k)] = v
        return out

    def row(self, k: Piece) -> list[Piece]:
        """The pieces on `k`'s row (itself included), left to right."""
        cands = [p for p in self.pieces if p is k or k.lines.isdisjoint(p.lines)]
        on = geometry.on_row(k.box, [p.box for p in cands], self.slope, self.st.form_row_tol)
        return sorted((p for p, yes in zip(cands, on) if yes or p is k), key=lambda p: p.box[0])

    def left_of(self, k: Piece) -> Piece | None:
        """The nearest piece left of `k` on its row, if any."""
        others = self.apart(k)
        if not others:
            return None
        b = geometry.box_array([p.box for p in others])
        row = np.flatnonzero((b[:, 2] <= k.box[0] + 1) & geometry.on_row(k.box, b, self.slope, self.st.form_row_tol))
        return others[int(row[np.argmax(b[row, 2])])] if len(row) else None

    def first_in_row(self, k: Piece) -> bool:
        """Nothing stands left of `k` on its row (a label at the start of a line, not a table's column)."""
        return self.left_of(k) is None

    def below(self, k: Piece, pieces: list[Piece] | None = None) -> Piece | None:
        """The nearest line under `k` that overlaps it and starts at or right of its left edge."""
        others = self.apart(k, pieces)
        i = geometry.below(k.box, [p.box for p in others], self.slope, self.st.form_below_gap)
        return others[i] if i is not None else None

    def stacked(self, a: Piece, b: Piece, lefts: list[float] | None = None, gap_max: float | None = None) -> bool:
        """`b` is the next printed line of the same block as `a`: right under it (within
        `form_stack_gap` line heights, or `gap_max`), of the same type size, starting where `a` starts (or at
        one of `lefts`) or centred with it."""
        ha, hb = (geometry.text_height(p.box, self.slope) / (1 + len(p.more)) for p in (a, b))
        h = max(ha, hb)
        gap = geometry.text_gap_below(a.box, b.box, self.slope)     # tilt out of both boxes
        if not (-self.st.join_overlap * h <= gap <= (gap_max or self.st.form_stack_gap) * h):
            return False
        if min(ha, hb) / h < self.st.form_same_size:
            return False
        if lefts is not None:
            return any(abs(b.box[0] - x) <= h for x in lefts)
        return abs(a.box[0] - b.box[0]) <= h or abs((a.box[0] + a.box[2]) / 2 - (b.box[0] + b.box[2]) / 2) <= h


def _y_at(seg: tuple[float, float, float, float], x: float) -> float:
    """Where a ruled line (left end first) stands at `x` (extended straight beyond its ends)."""
    x0, y0, x1, y1 = seg
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0


def _x_at(seg: tuple[float, float, float, float], y: float) -> float:
    """Where a vertical ruled line (top end first) stands at `y`."""
    x0, y0, x1, y1 = seg
    return x0 + (x1 - x0) * (y - y0) / (y1 - y0) if y1 > y0 else x0


def _first_of_line(p: Piece, pieces: list[Piece]) -> bool:
    return all(q.start >= p.start for q in pieces if q.line == p.line)


def _alone(p: Piece, pieces: list[Piece]) -> bool:
    return sum(q.line == p.line for q in pieces) == 1


def _touching_below(geo: Layout, a: Piece, pieces: list[Piece]) -> Piece | None:
    """The next line of a label whose OCR box overlaps `a`'s by up to TOUCH_OVERLAP of a line height (three
    lines packed into one cell: 法定代 / 表人): under `a`, overlapping it across, starting within a line
    height of its left edge, of the same type size."""
    h = geo.line_height(a)
    near = [p for p in pieces if p is not a and not (p.lines & a.lines) and
            a.box[3] - TOUCH_OVERLAP * h <= p.box[1] <= a.box[3] + TIGHT_GAP * h and p.box[1] > a.box[1] + h / 2 and
            min(a.box[2], p.box[2]) > max(a.box[0], p.box[0]) and abs(p.box[0] - a.box[0]) <= h and
            min(geo.line_height(p), h) / max(geo.line_height(p), h) >= geo.st.form_same_size]
    return min(near, key=lambda p: p.box[1]) if near else None


def join_labels(geo: Layout, pieces: list[Piece], is_value: Callable[[Piece], bool],
                is_label_part: Callable[[Piece], bool], key_like: Callable[[Piece], bool] | None = None,
                merged_from: Callable[[Piece, Piece, Piece], None] | None = None) -> list[Piece]:
    """A label printed over two lines of one cell (政治 / 面貌, 提交证件 / 情况：, 申报学院 / （部门）) is one
    key. The second line continues the first when it ends the key with a colon, is a bracketed part of
    it, or when the value beside them stands between the two lines (one cell spanning both), or when the
    page's ruled lines put both in one cell, both tagged more question than answer (`key_like`) and together they
    read as a label or have one value in the next cell (统一社会 / 信用代码, whatever else the model's tags on
    a layout it never saw say: a heading)."""
    out = list(pieces)
    for a in pieces:
        if a.used or a.colon_key or not _alone(a, pieces) or len(a.text) > 8 or any(c.isdigit() for c in a.text) \
                or options(a.text) or is_hint(a.text) or SECTION.match(a.text):
            continue
        part = is_label_part(a)
        if not part and not geo.vrules:
            continue
        below = geo.below(a, [p for p in out if not p.used])
        if below is None or not geo.stacked(a, below):
            below = _touching_below(geo, a, [p for p in out if not p.used])     # OCR boxes of a packed cell
        if below is None or not _first_of_line(below, pieces):
            continue
        b = below
        if len(b.text) > 6 or any(c.isdigit() for c in b.text) or options(b.text) or \
                b.box[2] - b.box[0] > a.box[2] - a.box[0] + geo.line_height(a):
            continue
        whole = re.sub(r"\s+", "", a.text + b.text)
        # one ruled cell holds both, and together they end as labels end or the next cell beside both holds one
        # value (户口所 / 在地 | 山东省南京市); neither tagged an answer (开户银行 / 交通银行, 闫霞 / 请假类型 where the
        # border between two rows is too faint to be found)
        celled = key_like is not None and not b.colon_key and not is_hint(b.text) and key_like(a) and key_like(b) \
            and geo.same_cell(a, b) and \
            (key_word(whole) or whole.endswith(KEY_ENDINGS) or geo.cell_right(a) is geo.cell_right(b) is not None)
        if not part and not celled:
            continue
        # a label everybody knows over a line that neither goes on from it nor makes a known label with it is
        # two rows of a packed column, not one label (年龄 / 教育背景, 医师签名 / 病历号, 学号 / 密级：)
        two_rows = qualified_label(a.text) and b.text[0] not in CONTINUES and not qualified_label(whole)
        ends_key = b.colon_key and (b.value is None or is_value(b.value)) and not two_rows
        bracket = b.text[0] in OPEN_BRACKET and not is_hint(b.text)
        # two fragments printed touching in one cell that only together make a label (家庭 / 住址, 紧急联 / 系人,
        # 论文 / 题目, 是否一般 / 纳税人): the first no label on its own, the whole one ending as labels end (the
        # first may end as a label does where the whole is a label everybody knows: 联系 / 电话)
        # (the first no label of its own, not 所在学院 / 专业 of two rows; a four-character second line too
        # where the two make a label everybody knows: 统一社会 / 信用代码,
        # not 就诊科室 / 联系电话, two labels of two rows)
        tight = not b.colon_key and len(a.text) <= TIGHT_CHARS and \
            (len(b.text) <= 3 or (len(b.text) <= TIGHT_CHARS and key_word(whole))) and \
            not qualified_label(a.text) and \
            (not a.text.endswith(KEY_ENDINGS) or key_word(whole)) and \
            (whole.endswith(KEY_ENDINGS) or qualified_label(whole)) and \
            b.box[1] - a.box[3] <= TIGHT_GAP * geo.line_height(a)
        between = tight
        if not ends_key and not bracket and not b.colon_key and not tight:
            ra, rb = geo.right_of(a), geo.right_of(b)
            union = Piece(a.line, a.start, a.end, a.text + b.text, [min(a.box[0], b.box[0]), a.box[1],
                          max(a.box[2], b.box[2]), b.box[3]], more=[b])
            c = geo.right_of(union) or geo.right_of(union, far=True)    # (a wide row's value may stand far out)
            fa, fb = (ra, rb) if ra is not None or rb is not None else (geo.right_of(a, far=True),
                                                                         geo.right_of(b, far=True))
            h = geo.line_height(a)      # (not each of two rows' own far values: fa, fb)
            between = c is not None and fa in (None, c) and fb in (None, c) and (is_value(c) or options(c.text)) and \
                geo.centre(a) + 0.25 * h < geo.centre(c) < geo.centre(b) - 0.25 * h and not two_rows
            # (two_rows even with the value between them; 经办人 / 签字 and 工作单位 / 及职务 are one label each)
            # ... or the value beside them wraps in step with them (通讯 / 地址 beside its address's two
            # lines): two fragments of at most three characters, the first no label itself (姓名 / 性别,
            # 报销人 / 报销日期 are two rows of a tight table)
            between = between or (ra is not None and rb is not None and ra is not rb and is_value(ra) and
                                   is_value(rb) and len(a.text) <= 3 and len(b.text) <= 3 and
                                   not key_word(a.text) and not a.text.endswith(KEY_ENDINGS) and
                                   geo.stacked(ra, rb, [ra.box[0]]))
        if ends_key or bracket or between or celled:
            if celled and merged_from is not None:
                merged_from(a, a, b)        # judged as the whole label (统一社会 half tagged a heading)
            a.join(b)
            out.remove(b)
    return out


def join_spaced(geo: Layout, pieces: list[Piece], merged_from: Callable[[Piece, Piece, Piece], None]) -> list[Piece]:
    """A letter-spaced label that OCR read as separate lines, one character each (姓 | 名, 工 | 号 in a
    narrow cell): one character, then one or two more within SPACED_GAP line heights on its row, together a
    label everybody knows, is one key. (A spaced label OCR read as one line, 姓  名, is form_pieces.SPACED.)
    `merged_from(new, a, b)` is told of each join (the decoder gives the new piece the evidence of both)."""
    out = list(pieces)
    for a in pieces:
        if a not in out or len(a.text) != 1 or not cjk(a.text) or a.colon_key or not _alone(a, pieces):
            continue
        b = geo.right_of(a, out)
        if b is None or not 1 <= len(b.text) <= 2 or not cjk(b.text) or not _alone(b, pieces) or \
                b.box[0] - a.box[2] > SPACED_GAP * geo.line_height(a) or not key_word(a.text + b.text):
            continue
        merged = Piece(a.line, a.start, a.end, a.text + b.text, [min(a.box[0], b.box[0]), min(a.box[1], b.box[1]),
                       max(a.box[2], b.box[2]), max(a.box[3], b.box[3])], colon_key=b.colon_key, value=b.value)
        out[out.index(a)] = merged
        out.remove(b)
        merged_from(merged, a, b)
    return out


def option_group(geo: Layout, first: Piece, bare_first: bool = False) -> tuple[bool, Piece | None]:
    """Printed choices starting at `first` along its row (□男 ☑女, one box a piece or all in one):
    (whether `first` starts an option group, the piece holding the ticked option if any). A filled box
    OCR lost leaves its option bare among the boxed ones (□身份证 □护照 其他): the one bare option in
    the group, ending it or followed by more boxes, is the ticked one; so is a bare first option right
    before the boxes (是否加急 | 是 | □否) with `bare_first`, unless the boxes name a ticked option or
    another bare one (then which is ticked is not known)."""
    if not boxed(geo, first):
        nxt = geo.right_of(first)
        if not bare_first or nxt is None or not boxed(geo, nxt) or not _bare_option(first):
            return False, None
        group, tick = option_group(geo, nxt)
        if tick is None:
            return group, first
        return group, (tick if TICKED.search(tick.text) else None)
    p: Piece | None = first
    seen = 0
    bare: list[Piece] = []
    ends: set[str] = set()              # how the boxed options end (A型 B型: a bare AB型 is one of them)
    while p is not None and seen < 8:
        if boxed(geo, p):
            if ticked(p.text):
                return True, p
            ends.update(o[-1:] for o in re.findall(r"[^\s□☐○◯口]+", p.text))
        elif _bare_option(p, ends):
            nxt = geo.right_of(p)
            if nxt is not None and not options(nxt.text):
                break                   # □男 □女 出生年月 1990: the next field's label, not an option
            bare.append(p)
        else:
            break
        p, seen = geo.right_of(p), seen + 1
    return True, (bare[0] if len(bare) == 1 else None)


def boxed(geo: Layout, p: Piece) -> bool:
    """A printed option with its box (form_pieces.options), or a lone 口-word beside another option on its
    row: OCR reads a box as 口 (口男 | 口女), but 口腔科 alone is a department, not an unticked box."""
    if options(p.text):
        return True
    if not KOU.match(p.text):
        return False
    return any(n is not None and (options(n.text) or KOU.match(n.text) is not None)
               for n in (geo.left_of(p), geo.right_of(p)))


def _bare_option(p: Piece, ends: set[str] | frozenset[str] = frozenset()) -> bool:
    """An option whose box OCR lost: short, no figure, no label (a label ending such as 型 is one when the
    boxed options end in it too: □A型 □B型 AB型)."""
    t = p.text.strip()
    return not p.colon_key and 1 <= len(t) <= 6 and not any(c.isdigit() for c in t) and not key_word(t) and \
        not is_hint(t) and (not t.endswith(KEY_ENDINGS) or t[-1:] in ends)


def bracketed_note(text: str) -> bool:
    """A line that is all one bracket ((须与证件一致), （如有）): a note, no part of a value above it."""
    return re.match(r"^[（(].*[)）]$", text) is not None


def continues_value(geo: Layout, v: Piece, w: Piece, key: Piece | None) -> bool:
    """`w` is the next line of value `v` (an address, a title that wraps): right under it, the same type
    size, starting where the value starts, back at its key's left edge, or centred under it (a title
    centred on its underline)."""
    lefts = [v.box[0]] + ([key.box[0]] if key is not None and key.line == v.line else [])
    h = max(geo.line_height(v), geo.line_height(w))
    centred = abs((v.box[0] + v.box[2]) / 2 - (w.box[0] + w.box[2]) / 2) <= h and w.box[2] - w.box[0] <= \
        v.box[2] - v.box[0] + h                   # a title centred on its underline, the next line shorter
    if bracketed_note(w.text):                  # a bracketed note under a value is no part of it
        return False
    return geo.stacked(v, w, lefts) or (centred and geo.stacked(v, w, gap_max=geo.st.form_title_gap))


COLUMN_CUT_ROWS = 2     # label/value boundaries aligned on this many rows make a column a glued line is cut at
COLUMN_CUT_SLACK = 0.6  # x line height: how far the glued line's character boundary may stand from that column
SAME_SIZE = 0.15        # ... and the glued line is printed in the rows' type size (a title over them is larger)
STACK_REACH = 3.5       # x line height: ... and stands among those rows, or this close above or below them


def column_cuts(page: Page, pieces: list[Piece], is_key: Callable[[Piece], bool],
                st: DecodeSettings = DEFAULT_SETTINGS) -> list[Piece]:
    """A colon-less line OCR read as label and value at once (研究方向计算机视觉), cut where the page's
    other rows put the boundary between label and value. A cover or a stacked form aligns its labels' ends
    and its values' starts in one column. Where at least COLUMN_CUT_ROWS rows of one label and its value
    agree on it (a key-like piece, `is_key`, first in its row, its value after a colon, cut, or a line of
    its own, and nothing further right), a line that runs across the column is cut at the character
    boundary nearest to it, if one stands within COLUMN_CUT_SLACK line heights, leaving a label of 2-10
    Chinese characters. The line is whole, alone in its row, among those rows (STACK_REACH), no sentence,
    in the rows' type size (a thesis title centred over them is larger), no label itself, no value under
    an empty label and no next line of a value (an address that wraps). The label needs no known word:
    where it stands, not what it says, makes it one (the learned cuts and the known-label rule read the
    words)."""
    geo = Layout(page, pieces, st)
    edges: list[tuple[float, float, float, float]] = []      # (label end, value start, line height, y) per row
    for p in pieces:
        if not is_key(p):
            continue
        v = p.value if p.colon_key else geo.right_of(p)
        if v is not None and v.text and (p.colon_key or v.line != p.line) and geo.first_in_row(p) and \
                geo.right_of(v if v.line != p.line else p, far=True) is None:
            edges.append((p.box[2], v.box[0], geo.line_height(p), geo.centre(p)))   # one label and its value
    columns = []
    for _, s, h, _ in edges:
        near = [(e2, s2, y2) for e2, s2, _, y2 in edges if abs(s2 - s) <= 0.75 * h]
        if len(near) >= COLUMN_CUT_ROWS:
            ends, starts = sorted(x for x, _, _ in near), sorted(x for _, x, _ in near)
            ys = [y for _, _, y in near]
            columns.append(((ends[len(ends) // 2] + starts[len(starts) // 2]) / 2, h,
                            min(ys) - STACK_REACH * h, max(ys) + STACK_REACH * h))
    if not columns:
        return pieces
    out: list[Piece] = []
    for q in pieces:
        here = [c for c in columns if c[2] <= geo.centre(q) <= c[3]]
        cut = None if q.colon_key or q.value is not None or q.more or not here or SENTENCE.search(q.text) \
            else _column_cut(page, q, here)
        if cut is not None and (is_key(q) or not geo.first_in_row(q) or geo.right_of(q, far=True) is not None):
            cut = None
        if cut is not None:
            # a label is not cut, and neither is the value under a label with no value of its own
            # (申请针对的物业地址 over 紫藤苑4号楼3单元301) nor a value's next line (an address that wraps)
            above = [a for a in pieces if a is not q and geo.below(a) is q]
            if any(is_key(a) and a.value is None and geo.right_of(a) is None for a in above) or \
                    any(not is_key(a) and continues_value(geo, a, q, None) for a in above):
                cut = None
        if cut is None:
            out.append(q)
            continue
        out.append(glued_key(page.lines[q.line], q.line, (q.start, q.start + cut, q.text[:cut]),
                             (q.start + cut, q.end, q.text[cut:].strip())))
    return out


def _column_cut(page: Page, q: Piece, columns: list[tuple[float, float, float, float]]) -> int | None:
    line = page.lines[q.line]
    if q.start != 0 or q.end < len(line.text.rstrip()) or len(q.text) < 3:
        return None                     # a piece of a line already cut, or too short to hold label and value
    for x, h, _, _ in columns:
        if not q.box[0] + 1.5 * h <= x <= q.box[2] - 0.5 * h or abs(geometry.height(q.box) / h - 1) > SAME_SIZE:
            continue
        best = min(range(2, min(10, len(q.text) - 1) + 1),
                   key=lambda i: abs(geometry.char_box(line.box, line.text, 0, q.start + i)[2] - x))
        at = geometry.char_box(line.box, line.text, 0, q.start + best)[2]
        head, rest = q.text[:best], q.text[best:].strip()
        if abs(at - x) <= COLUMN_CUT_SLACK * h and cjk(head.replace("、", "")) and rest and \
                rest[0] not in "（(：:的之及和或与、，,。.-—/":
            return best
    return None


CODE_LINE = re.compile(r"^\s*([\u4e00-\u9fff]{2,8})\s*([A-Za-z0-9][A-Za-z0-9./-]{2,})\s*$")


def code_cuts(page: Page, pieces: list[Piece]) -> list[Piece]:
    """A label read glued to the code it labels (学校代码10347, 分类号D922, 学号2020534096 in a cover's corner):
    a line of 2-8 Chinese characters that end as labels end (or make a known label), then nothing but a code
    of three or more letters and digits with a digit among them, is cut where the script changes. Neither the
    known labels nor the learned cuts (which lean on them) know 学校代码 or 分类号; the change of script and the
    label's last character say where it ends. A line already cut, a colon's key or value and a label joined
    over two lines are left as they are."""
    out: list[Piece] = []
    for q in pieces:
        line = page.lines[q.line]
        m = None if q.colon_key or q.value is not None or q.more else CODE_LINE.match(line.text[q.start:q.end])
        if m is None or not (m.group(1).endswith(KEY_ENDINGS) or key_word(m.group(1))) or \
                not any(ch.isdigit() for ch in m.group(2)):
            out.append(q)
            continue
        out.append(glued_key(line, q.line, (q.start, q.start + m.end(1), m.group(1)),
                             (q.start + m.start(2), q.end, m.group(2))))
    return out
