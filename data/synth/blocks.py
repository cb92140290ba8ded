"""Reusable pieces of document layouts: key-value blocks in three arrangements, vertical labels,
table cells and a QR-like code. Every layout module draws with these so the arrangements stay
comparable across document types.

Arrangements of a key and its value:
- inline: one line "名称：北京某某有限公司" (the field is the part after the key)
- split:  the key line, a gap wide enough that a detector keeps them apart, the value line
          (pre-printed forms filled by a printer: the value may sit a little off its slot)
- above:  the key in small type, the value on the line below
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from data.synth.canvas import Canvas, Color

KV_MODES = ("inline", "split", "above")


@dataclass
class Style:
    """Fonts and colours of one page: the pre-printed form and the filled-in values."""
    form_font: str = "song"
    value_font: str = "song"
    form_color: Color = (0, 0, 0)
    value_color: Color = (0, 0, 0)
    rule_color: Color = (0, 0, 0)
    size: int = 20                 # value text size in pixels
    misregister: float = 0.0       # max offset of printed values, in value-size units
    offset: tuple[float, float] = (0.0, 0.0)   # the whole printout's shift against the pre-printed
                                               # form (px): a dot-matrix printer's paper feed


@dataclass
class Entry:
    key: str                       # printed key with its colon, e.g. "名　　称："
    value: str                     # printed value
    field: str | None              # schema key, None for unlabelled text
    type: str = "text"             # schema type, for normalising the ground-truth value
    wide: bool = False             # needs a whole row in the 'above' arrangement


def kv_line(c: Canvas, st: Style, x: float, y: float, e: Entry, mode: str, max_width: float,
            rng: random.Random, key_size: int | None = None) -> tuple[int, int | None]:
    """Draw one key-value entry at (x, y) in 'inline' or 'split' mode; returns (key line, value line)
    ids (the same id twice for inline)."""
    size = st.size
    key_size = key_size or size
    if mode == "inline":
        line = c.text(x, y, e.key + e.value, size, st.value_font, st.value_color, max_width=max_width)
        if e.field:
            c.field(e.field, line, len(e.key), len(e.key) + len(e.value), e.type)
        return line, line
    key = e.key.rstrip("：:") if rng.random() < 0.3 else e.key
    k = c.text(x, y, key, key_size, st.form_font, st.form_color, label="question")
    gap = max(2.2 * size, 28)
    vx = c.lines[k].box[2] + gap
    dx = rng.uniform(-0.3, 1.0) * st.misregister * size + st.offset[0]
    dy = rng.uniform(-1, 1) * st.misregister * size * 0.35 + st.offset[1]
    if not e.value:
        return k, None
    v = c.text(vx + dx, y + dy, e.value, size, st.value_font, st.value_color, label="answer",
               max_width=max(40.0, x + max_width - vx - dx))
    if e.field:
        c.field(e.field, v, 0, len(e.value), e.type)
    c.link(k, v)
    return k, v


def kv_block(c: Canvas, st: Style, area: tuple[float, float, float, float], entries: list[Entry],
             mode: str, rng: random.Random) -> None:
    """Lay entries out inside `area` (x0, y0, x1, y1) in the given arrangement."""
    x0, y0, x1, y1 = area
    if mode in ("inline", "split"):
        row_h = (y1 - y0) / len(entries)
        for i, e in enumerate(entries):
            y = y0 + row_h * i + (row_h - st.size) / 2
            kv_line(c, st, x0, y, e, mode, x1 - x0, rng)
        return
    # above: pair up narrow entries, wide ones take a row
    rows: list[list[Entry]] = []
    for e in entries:
        if not e.wide and rows and len(rows[-1]) == 1 and not rows[-1][0].wide:
            rows[-1].append(e)
        else:
            rows.append([e])
    row_h = (y1 - y0) / len(rows)
    key_size = max(11, int(st.size * 0.72))
    for r, row in enumerate(rows):
        top = y0 + row_h * r + max(2.0, (row_h - key_size - st.size * 1.25) / 2)
        cell_w = (x1 - x0) / len(row)
        for j, e in enumerate(row):
            x = x0 + cell_w * j
            k = c.text(x, top, e.key.rstrip("：:"), key_size, st.form_font, st.form_color, label="question")
            v = c.text(x + key_size * 0.3 + st.offset[0], top + key_size + st.size * 0.2 + st.offset[1], e.value,
                       st.size, st.value_font,
                       st.value_color, label="answer", max_width=cell_w - key_size * 0.6)
            if e.field:
                c.field(e.field, v, 0, len(e.value), e.type)
            c.link(k, v)


def vertical_label(c: Canvas, st: Style, text: str, cx: float, y0: float, y1: float, size: int) -> None:
    """Characters stacked in a narrow cell (购买方, 密码区): OCR reads each as its own line."""
    n = len(text)
    step = (y1 - y0) / n
    for i, ch in enumerate(text):
        c.text(cx, y0 + step * i + (step - size) / 2, ch, size, st.form_font, st.form_color,
               label="other", align="center")


def cell_text(c: Canvas, st: Style, text: str, box: tuple[float, float, float, float], size: int,
              align: str = "center", form: bool = False, label: str | None = None) -> int:
    """A line inside a table cell, vertically centred, aligned left/centre/right with padding."""
    x0, y0, x1, y1 = box
    pad = max(4.0, size * 0.3)
    x = {"left": x0 + pad, "center": (x0 + x1) / 2, "right": x1 - pad}[align]
    font = st.form_font if form else st.value_font
    color = st.form_color if form else st.value_color
    dx, dy = (0.0, 0.0) if form else st.offset
    return c.text(x + dx, (y0 + y1) / 2 - size * 0.55 + dy, text, size, font, color, label=label, align=align,
                  max_width=x1 - x0 - 2 * pad)


def qr_code(c: Canvas, rng: random.Random, x: float, y: float, size: float) -> None:
    """A QR-like square of random modules with the three finder patterns (decoration only)."""
    if not c.decorations:
        return
    n = 25
    m = size / n
    for i in range(n):
        for j in range(n):
            if rng.random() < 0.5:
                c.draw.rectangle([x + j * m, y + i * m, x + (j + 1) * m - 1, y + (i + 1) * m - 1], fill=(0, 0, 0))
    for fx, fy in ((0, 0), (n - 7, 0), (0, n - 7)):
        c.draw.rectangle([x + fx * m, y + fy * m, x + (fx + 7) * m, y + (fy + 7) * m], fill=(255, 255, 255))
        c.draw.rectangle([x + fx * m, y + fy * m, x + (fx + 7) * m - 1, y + (fy + 7) * m - 1],
                         outline=(0, 0, 0), width=max(1, round(m)))
        c.draw.rectangle([x + (fx + 2) * m, y + (fy + 2) * m, x + (fx + 5) * m - 1, y + (fy + 5) * m - 1],
                         fill=(0, 0, 0))
