"""Free-text values that OCR split over several lines, or that run on past a colon.

through_colon: "label：content" free text runs to its line's end; join_bracket_below / join_bracket_tail:
a name's bracketed part (（朝阳区店）) read as a line of its own joins the name.
"""
from __future__ import annotations

import re

from data.document import Field, Page
from data.geometry import same_row
from data.labels import COLONS
from data.normalize import normalize_value
from models.extraction.base import clean, line_of, line_starts, value_box
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def _dup(f: Field) -> bool:
    """OCR cut the line just before the bracket and read the head's last character on both sides
    (博锦面包房 | 房（玄武区店）)."""
    return len(f.raw) > 2 and f.raw[0] not in "（(" and f.raw[1] in "（(" and f.span is not None


def through_colon(f: Field, page: Page, taken: list[list[int]], st: DecodeSettings = DEFAULT_SETTINGS) -> None:
    """Free text that is itself "label：content" (备注 项目：餐饮管理服务) of which the label was taken and
    the content was not (the model gave 餐饮管理 to a company name that lost elsewhere): a value that
    starts its line and ends at a colon runs to the end of the line, when the rest has no colon and no
    chosen value. (A label that is some field's key phrase never gets here: key text is dropped.)"""
    if f.span is None:
        return
    offsets = line_starts(page)
    li = line_of(offsets, f.span[0])
    line, base = page.lines[li], int(offsets[li])
    a, b = f.span[0] - base, f.span[1] - base
    text = line.text
    colon = b - 1 if text[b - 1:b] in tuple(COLONS) else \
        next((c for c in range(b, min(len(text), b + 1 + st.colon_gap)) if text[c] in COLONS), None)
    # the label's last character or two left untagged (合同|号：HT0770...) still make the value "label：content"
    if colon is not None and (re.search(r"\s", text[b:colon]) or any(c in COLONS for c in text[b:colon])):
        colon = None
    if colon is None or text[:a].strip():
        return
    end = len(text.rstrip())
    rest = text[colon + 1:end]
    if not rest.strip() or any(c in COLONS for c in rest) or \
            any(t != f.span and t[0] < base + end and base + colon < t[1] for t in taken):
        return
    f.raw = clean(text[a:end])
    f.value = normalize_value("text", f.raw) or f.raw
    f.box = value_box(line, a, end)
    f.span = [base + a, base + end]


def join_bracket_below(f: Field, page: Page, used_lines: set[int], st: DecodeSettings = DEFAULT_SETTINGS) -> None:
    """The other half of a split name: 智融生活超市 then （朝阳区店） as a separate OCR line just right of
    it, or stacked below it, the model tagging only the head. Such a line (one bracketed group, no
    other field) right of the head on its row, or right below and centred on it, is appended."""
    if not f.raw or f.raw[0] in "（(" or f.span is None or f.box is None or _dup(f):
        return      # starts with its bracket, or repeats its head's last character: join_bracket_tail's case
    offsets = line_starts(page)
    li = line_of(offsets, f.span[0])
    line = page.lines[li]
    if f.span[1] - offsets[li] < len(line.text.rstrip()):
        return        # the value does not end its line
    x0, y0, x1, y1 = line.box
    h, cx = max(1.0, y1 - y0), (x0 + x1) / 2
    for mi, m in enumerate(page.lines):
        body = m.text.strip()
        below = -st.join_overlap * h <= m.box[1] - y1 < st.join_below * h and \
            abs((m.box[0] + m.box[2]) / 2 - cx) < st.join_centre * max(x1 - x0, m.box[2] - m.box[0])
        right = -st.join_right_overlap * h <= m.box[0] - x1 < st.join_right_gap * h and \
            same_row(m.box, line.box, line_height=h)
        if mi != li and mi not in used_lines and (below or right) and \
                re.fullmatch(r"[（(][^（()）:：]{1,12}[）)]?", body):
            f.raw = f.raw + body
            f.value = normalize_value("text", f.raw) or f.raw
            f.box = [min(f.box[0], m.box[0]), f.box[1], max(f.box[2], m.box[2]), max(f.box[3], m.box[3])]
            if mi == li + 1:
                f.span = [f.span[0], int(offsets[mi]) + len(m.text.rstrip())]
            return

def join_bracket_tail(f: Field, page: Page, used_lines: set[int], st: DecodeSettings = DEFAULT_SETTINGS) -> None:
    """A free-text value that starts with an opening bracket (（朝阳区店）, （增值税专用发票）) lost its
    head to a separate OCR line just left of it on the same row, or, for a title printed in two
    stacked lines (电子发票 over （普通发票）), just above it and centred on it: prepend that line's
    text when it holds no key (no colon) and no other field."""
    # OCR may also cut a line just before the bracket and read the head's last character twice,
    # once on each side (博锦面包房 | 房（玄武区店）, or misread the second time when the two boxes
    # overlap: 云睿烘焙坊 | 市（西城区店）): then that character is dropped from the tail
    dup = _dup(f)
    if not f.raw or (f.raw[0] not in "（(" and not dup) or f.span is None or f.box is None:
        return
    offsets = line_starts(page)
    li = line_of(offsets, f.span[0])
    if f.span[0] - offsets[li] != len(page.lines[li].text) - len(page.lines[li].text.lstrip()):
        return       # the bracket is not where its line starts
    line = page.lines[li]
    x0, y0, _, y1 = line.box
    h = max(1.0, y1 - y0)
    best, gap = None, st.join_right_gap * h
    for mi, m in enumerate(page.lines):
        g = x0 - m.box[2]
        if mi != li and mi not in used_lines and -st.join_right_overlap * h <= g < gap \
                and same_row(m.box, line.box, line_height=h) and m.text.strip() \
                and not any(c in COLONS for c in m.text) \
                and (not dup or (g < st.join_overlap * h and m.text.strip().endswith(f.raw[0]))
                     or g < -st.join_overlap * h):
            best, gap = mi, g
    if best is None and dup:
        return
    if best is None:       # stacked: the nearest free line above whose centre sits over this line
        cx, w, gap = (x0 + page.lines[li].box[2]) / 2, page.lines[li].box[2] - x0, st.join_stack * h
        for mi, m in enumerate(page.lines):
            mx0, my0, mx1, my1 = m.box
            g = y0 - my1
            if mi != li and mi not in used_lines and -st.join_overlap * h <= g < gap and \
                    abs((mx0 + mx1) / 2 - cx) < st.join_centre * w \
                    and m.text.strip() and not any(c in COLONS for c in m.text):
                best, gap = mi, g
    if best is None:
        return
    head = page.lines[best]
    f.raw = head.text.strip() + f.raw[1 if dup else 0:]
    f.value = normalize_value("text", f.raw) or f.raw
    f.box = [min(f.box[0], head.box[0]), min(f.box[1], head.box[1]), max(f.box[2], head.box[2]),
             max(f.box[3], head.box[3])]
    if best == li - 1:       # the page text runs head line, newline, this line: one span covers both
        f.span = [int(offsets[best]), f.span[1]]
