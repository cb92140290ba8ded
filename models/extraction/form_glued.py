"""Generic forms, layer 5: a colon-less line OCR read as label and value at once, cut by what the page shows.

A cut that needs no model: where the page's other label/value rows align their boundary (`column_cuts`,
rule form_column_cuts: 研究方向计算机视觉 on a cover). The learned cuts (form_cuts.py) and the known
labels (form_pieces.inline_label) cut while the line is split; this runs on the pieces after it, and reads
only the layers below (form_layout, form_pieces, form_text).
"""
from __future__ import annotations

from typing import Callable

from data import geometry
from data.document import Page
from models.extraction.form_layout import Layout, continues_value
from models.extraction.form_pieces import Piece, glued_key
from models.extraction.form_text import SENTENCE, cjk
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def column_cuts(page: Page, pieces: list[Piece], is_key: Callable[[Piece], bool],
                st: DecodeSettings = DEFAULT_SETTINGS) -> list[Piece]:
    """A colon-less line OCR read as label and value at once (研究方向计算机视觉), cut where the page's
    other rows put the boundary between label and value. A cover or a stacked form aligns its labels' ends
    and its values' starts in one column. Where at least `column_cut_rows` rows of one label and its value
    agree on it (a key-like piece, `is_key`, first in its row, its value after a colon, cut, or a line of
    its own, and nothing further right), a line that runs across the column is cut at the character
    boundary nearest to it, if one stands within `column_cut_slack` line heights, leaving a label of 2-10
    Chinese characters. The line is whole, alone in its row, among those rows (`stack_reach`), no sentence,
    in the rows' type size (`same_size`; a thesis title centred over them is larger), no label itself, no value under
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
        near = [(e2, s2, y2) for e2, s2, _, y2 in edges if abs(s2 - s) <= st.column_cut_align * h]
        if len(near) >= st.column_cut_rows:
            ends, starts = sorted(x for x, _, _ in near), sorted(x for _, x, _ in near)
            ys = [y for _, _, y in near]
            columns.append(((ends[len(ends) // 2] + starts[len(starts) // 2]) / 2, h,
                            min(ys) - st.stack_reach * h, max(ys) + st.stack_reach * h))
    if not columns:
        return pieces
    out: list[Piece] = []
    for q in pieces:
        here = [c for c in columns if c[2] <= geo.centre(q) <= c[3]]
        cut = None if q.colon_key or q.value is not None or q.more or not here or SENTENCE.search(q.text) \
            else _column_cut(page, q, here, st)
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


def _column_cut(page: Page, q: Piece, columns: list[tuple[float, float, float, float]],
                st: DecodeSettings) -> int | None:
    line = page.lines[q.line]
    if q.start != 0 or q.end < len(line.text.rstrip()) or len(q.text) < 3:
        return None                     # a piece of a line already cut, or too short to hold label and value
    for x, h, _, _ in columns:
        if not q.box[0] + 1.5 * h <= x <= q.box[2] - 0.5 * h or abs(geometry.height(q.box) / h - 1) > st.same_size:
            continue
        best = min(range(2, min(10, len(q.text) - 1) + 1),
                   key=lambda i: abs(geometry.char_box(line.box, line.text, 0, q.start + i)[2] - x))
        at = geometry.char_box(line.box, line.text, 0, q.start + best)[2]
        head, rest = q.text[:best], q.text[best:].strip()
        if abs(at - x) <= st.column_cut_slack * h and cjk(head.replace("、", "")) and rest and \
                rest[0] not in "（(：:的之及和或与、，,。.-—/":
            return best
    return None
