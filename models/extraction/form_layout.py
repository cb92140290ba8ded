"""Generic forms, layer 4: where pieces sit relative to each other, which lines continue each other.

Layout only proposes and vetoes: a key's candidates are the text after its colon, the nearest piece
right of it on its row (the next table cell) and the line under it; a candidate that is a label, a hint,
an unticked option list or a header is vetoed. Which candidate a key takes is decided by scores
(forms.py: the model's link head and tags). `Layout` is a `Grid` (form_grid.py: line heights, centres,
the page's ruled lines) with the queries along rows and columns: right of, left of, under, stacked,
a value column; beside it the option groups of a row (□男 ☑女) and a value's next line. What is built on
these queries, the layer above, lives in its own files: labels joined over two lines (form_joins.py),
glued lines cut by the page's columns (form_glued.py), data tables (form_tables.py) and the learned piece
roles (form_roles.py). No rule switch is read here: the decoder
(form_evidence.py and the layers above it) decides which of these queries a rule uses.
"""
from __future__ import annotations

import re

import numpy as np

from data import geometry
from models.extraction.form_grid import Grid
from models.extraction.form_pieces import Piece
from models.extraction.form_text import KEY_ENDINGS, KOU, TICKED, bracketed_note, is_hint, key_word, options, ticked


class Layout(Grid):
    """Where pieces sit relative to each other along rows and columns, with the page tilt taken out."""

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

    def past_a_key(self, k: Piece, v: Piece, keys: list[Piece]) -> bool:
        """Whether another label stands between `k` and its far value `v`, on `v`'s row: the value is that
        label's (申请日期 | (empty) | 通讯地址 | 南宁市…: the address is not the date's, though a rough tilt
        estimate puts 通讯地址 off the row the date shares with the address). A value belongs to the
        nearest label before it; "on its row" is looser here (`past_key_row`) than for pairing."""
        h = self.line_height(k)
        return any(p is not k and p is not v and p.box[0] >= k.box[2] - h / 2 and p.box[2] <= v.box[0] + h / 2
                   and geometry.same_row(p.box, v.box, self.slope, self.st.past_key_row) for p in keys)

    def column_values(self, keys: list[Piece]) -> dict[int, Piece]:
        """id(key) -> its value across a wide gap, where the gap is the page's table structure: keys that
        start their rows with nothing within form_right_gap, whose nearest pieces further right stand in one
        column (same centre or same left edge within a line height) on at least `column_rows` rows. A grid
        with wide value cells (label | ......张三......) leaves every value far from its label; a lone far
        piece on one row says nothing. A value with another of `keys` before it on its row is not `k`'s
        (`past_a_key`), though it counts towards the column."""
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
            if rows >= self.st.column_rows and not self.past_a_key(k, v, keys):
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
    """A printed option with its box (form_text.options), or a lone 口-word beside another option on its
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
