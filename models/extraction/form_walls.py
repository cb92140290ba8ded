"""Generic forms: a line OCR read across a cell border is two pieces (form_wall_cuts).

On a ruled form the detector sometimes reads the text of two neighbouring cells as one line when they
stand close to the border between them (15195851025有效签证有□无: a phone number, then the next cell's
label and its options). A vertical ruled line of the page (models/ocr/rulings.py) that crosses such a line
inside its box says where one cell's text ends: the piece is cut at the character nearest to it. A key's
value is cut the same way (电话：15195851025 | 有效签证...: the value stops at its cell's border and the rest
is a piece of its own). A label joined over two lines is left as it is.
"""
from __future__ import annotations

from data.document import Page
from models.extraction.form_layout import Layout
from models.extraction.form_pieces import Piece, char_box
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def wall_cuts(page: Page, pieces: list[Piece], st: DecodeSettings = DEFAULT_SETTINGS) -> list[Piece]:
    """`pieces` with every piece (or colon key's value) that a vertical ruled line crosses cut there."""
    geo = Layout(page, pieces, st)
    if not geo.vrules:
        return pieces
    out: list[Piece] = []
    for q in pieces:
        if q.more:
            out.append(q)
        elif q.value is not None:
            parts = [] if q.value.more else _cut(page, geo, q.value)
            if len(parts) > 1:
                q.value = parts[0]
                out += [q, *parts[1:]]
            else:
                out.append(q)
        elif q.colon_key:
            out.append(q)
        else:
            out += _cut(page, geo, q) or [q]
    return out


def _cut(page: Page, geo: Layout, p: Piece) -> list[Piece]:
    """`p` cut at each vertical ruled line inside it (at the character boundary nearest to it); [] where none
    crosses it or a cut would leave an empty side."""
    line = page.lines[p.line]
    bounds = [p.start]
    for x in geo.walls_inside(p):
        best = min(range(bounds[-1] + 1, p.end), key=lambda i: abs(char_box(line, p.start, i)[2] - x), default=None)
        if best is not None:
            bounds.append(best)
    bounds.append(p.end)
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        raw = line.text[a:b]
        text = raw.strip()
        if not text:
            return []
        a += len(raw) - len(raw.lstrip())
        parts.append(Piece(p.line, a, a + len(text), text, char_box(line, a, a + len(text))))
    return parts if len(parts) > 1 else []
