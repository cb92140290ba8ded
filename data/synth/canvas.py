"""A page being drawn, which remembers every text line it draws and where each field's characters are.

Layouts call `text()` for each printed line and `field()` to say which characters of a line are a
field's value. Character positions come from the font's advances (`getlength` of each prefix), so a
field's box covers exactly its characters, not the whole line. Decorations (rules, boxes, stamps,
backgrounds) draw on the same image but leave no ground-truth lines. The straight rules and box outlines
(`hline`, `vline`, `rect`) are also kept as `strokes`, the shapes a born-digital file would draw as vector
paths (data.born_pdf writes them): not in the ground truth, whose keys and bytes stay as they were.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from data.fonts import pil_font
from data.normalize import normalize_value

Color = tuple[int, int, int]


def ink_bbox(font: ImageFont.FreeTypeFont, text: str) -> tuple[float, float, float, float]:
    """Box of the inked pixels of `text` relative to a pen at anchor 'la'. `getbbox` alone counts
    the last glyph's full advance, which leaves a gap after ）, 日 and similar; the rendered mask
    does not."""
    mask, (ox, oy) = font.getmask2(text, anchor="la")
    bb = mask.getbbox()
    if bb is None:
        return font.getbbox(text, anchor="la")
    return ox + bb[0], oy + bb[1], ox + bb[2], oy + bb[3]


@dataclass
class DrawnLine:
    text: str
    x: float                       # pen origin (left, top of the ascender)
    y: float
    font: ImageFont.FreeTypeFont
    box: list[float]               # ink box [x0, y0, x1, y1] in clean-page pixels
    label: str | None = None
    mask: Any = None               # the rendered glyph mask (PIL core image) and its offset from
    offset: tuple[int, int] = (0, 0)   # the pen, kept to find a span's ink without re-rendering


@dataclass
class FieldMark:
    key: str
    value: str                     # normalised
    line: int
    span: tuple[int, int]
    box: list[float]


@dataclass(frozen=True)
class Stroke:
    """A straight rule or box outline as drawn: the centre line through `points` (pixels of the page, a
    pixel [i, i + 1) wide, so a 1 px rule on row y has its centre at y + 0.5), closed for a box; `width` in
    pixels; `color` RGB. The ink it covers is the ink PIL drew (butt ends, mitred corners)."""
    points: tuple[tuple[float, float], ...]
    closed: bool
    width: float
    color: Color


def _centre(v: float, width: int) -> float:
    """Centre of a PIL line of `width` px drawn at pixel `v` (rows v - (width - 1) // 2 .. v + width // 2)."""
    return v - (width - 1) // 2 + width / 2


@dataclass
class Canvas:
    width: int
    height: int
    rng: random.Random
    background: Color = (255, 255, 255)
    image: Image.Image = field(init=False)
    draw: ImageDraw.ImageDraw = field(init=False)
    lines: list[DrawnLine] = field(default_factory=list)
    fields: dict[str, FieldMark] = field(default_factory=dict)
    items: list[dict[str, FieldMark]] = field(default_factory=list)
    links: list[tuple[int, int]] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)    # {"columns", "column_lines", "rows", "cell_lines"}
    decorations: bool = True       # False: text only (tests check ink against boxes)
    strokes: list[Stroke] = field(default_factory=list)    # the straight rules drawn (module docstring)

    def __post_init__(self) -> None:
        self.image = Image.new("RGB", (self.width, self.height), self.background)
        self.draw = ImageDraw.Draw(self.image)

    # --- text ----------------------------------------------------------------------------------------
    def fit_size(self, text: str, style: str, size: int, max_width: float, min_size: int = 11) -> int:
        """The largest size <= `size` at which `text` fits `max_width` pixels."""
        while size > min_size and pil_font(style, size).getlength(text) > max_width:
            size -= 1
        return size

    def text(self, x: float, y: float, text: str, size: int, style: str = "song",
             color: Color = (0, 0, 0), label: str | None = None, align: str = "left",
             max_width: float | None = None) -> int:
        """Draw one line; (x, y) is its left/centre/right top (by `align`). Returns the line id."""
        if max_width is not None:
            size = self.fit_size(text, style, size, max_width)
        font = pil_font(style, size)
        if align != "left":
            width = font.getlength(text)
            x -= width if align == "right" else width / 2
        x, y = round(x), round(y)
        # render the glyph mask once: it both paints the text and gives its exact ink box
        mask, (ox, oy) = font.getmask2(text, mode="L", anchor="la")
        self.draw.draw.draw_bitmap((x + ox, y + oy), mask, self.draw._getink(color)[0])
        bb = mask.getbbox()
        left, top, right, bottom = ((ox + bb[0], oy + bb[1], ox + bb[2], oy + bb[3]) if bb
                                    else font.getbbox(text, anchor="la"))
        self.lines.append(DrawnLine(text, x, y, font, [x + left, y + top, x + right, y + bottom], label, mask,
                                    (ox, oy)))
        return len(self.lines) - 1

    def text_width(self, text: str, size: int, style: str = "song") -> float:
        return pil_font(style, size).getlength(text)

    def span_box(self, line_id: int, start: int, end: int) -> list[float]:
        """Ink box of characters [start, end) of a drawn line, clipped to the line's box."""
        ln = self.lines[line_id]
        x0, y0, x1, y1 = ln.box
        # the span's advance range, in mask columns; its ink is what the mask holds there
        a = ln.font.getlength(ln.text[:start]) - ln.offset[0]
        z = ln.font.getlength(ln.text[:end]) - ln.offset[0]
        bb = None
        if ln.mask is not None and z > a:
            bb = ln.mask.crop((max(0, int(a)), 0, min(ln.mask.size[0], int(np.ceil(z))),
                               ln.mask.size[1])).getbbox()
        if bb is not None:
            ca = max(0, int(a))
            left, top, right, bottom = (ln.offset[0] + ca + bb[0], ln.offset[1] + bb[1], ln.offset[0] + ca + bb[2],
                                        ln.offset[1] + bb[3])
            return [max(x0, ln.x + left), max(y0, ln.y + top), min(x1, ln.x + right), min(y1, ln.y + bottom)]
        offset = ln.font.getlength(ln.text[:start])
        left, top, right, bottom = ink_bbox(ln.font, ln.text[start:end])
        return [max(x0, ln.x + offset + left), max(y0, ln.y + top), min(x1, ln.x + offset + right),
                min(y1, ln.y + bottom)]

    def field(self, key: str, line_id: int, start: int = 0, end: int | None = None,
              field_type: str = "text", row: int | None = None, value: str | None = None) -> FieldMark:
        """Mark characters [start, end) of a line as the printed value of `key` (an item field when
        `row` is given). The normalised value comes from the schema type unless given."""
        text = self.lines[line_id].text
        end = len(text) if end is None else end
        printed = text[start:end]
        if printed != printed.strip() or not printed:
            raise ValueError(f"field {key!r} span {start}:{end} of {text!r} is empty or has edge spaces")
        norm = value if value is not None else normalize_value(field_type, printed)
        if norm is None:
            raise ValueError(f"field {key!r}: printed text {printed!r} does not normalise as {field_type}")
        mark = FieldMark(key, norm, line_id, (start, end), self.span_box(line_id, start, end))
        if row is None:
            self.fields[key] = mark
        else:
            while len(self.items) <= row:
                self.items.append({})
            self.items[row][key] = mark
        return mark

    def value_text(self, x: float, y: float, text: str, key: str, size: int, style: str = "song",
                   field_type: str = "text", prefix: str = "", row: int | None = None, **kw) -> int:
        """A line holding `prefix + text` whose `text` part is the field `key`."""
        line = self.text(x, y, prefix + text, size, style, **kw)
        self.field(key, line, len(prefix), len(prefix) + len(text), field_type, row=row)
        return line

    def link(self, key_line: int, value_line: int) -> None:
        self.links.append((key_line, value_line))

    def pair(self, key_line: int, value_line: int, key: str, value: str) -> None:
        self.link(key_line, value_line)
        self.pairs.append({"key": key, "value": value, "key_line": key_line, "value_line": value_line})

    def crop_height(self, height: float) -> None:
        """Cut the page off below `height` (layouts that grow downwards size the page at the end)."""
        height = min(self.height, round(height))
        self.image = self.image.crop((0, 0, self.width, height))
        self.draw = ImageDraw.Draw(self.image)
        self.height = height

    # --- decorations (no ground truth) --------------------------------------------------------------
    def rect(self, box: list[float], color: Color, width: int = 1, fill: Color | None = None) -> None:
        if self.decorations:
            x0, y0, x1, y1 = (round(v) for v in box)
            self.draw.rectangle([x0, y0, x1, y1], outline=color, width=width, fill=fill)
            # the outline is `width` px inside the box's pixels [x0, x1 + 1) x [y0, y1 + 1)
            if x1 >= x0 and y1 >= y0:
                h = width / 2
                self.strokes.append(Stroke(((x0 + h, y0 + h), (x1 + 1 - h, y0 + h), (x1 + 1 - h, y1 + 1 - h),
                                            (x0 + h, y1 + 1 - h)), True, float(width), color))

    def hline(self, x0: float, x1: float, y: float, color: Color, width: int = 1) -> None:
        if self.decorations:
            a, b, r = round(x0), round(x1), round(y)
            self.draw.line([(a, r), (b, r)], fill=color, width=width)
            yc = _centre(r, width)
            self.strokes.append(Stroke(((min(a, b), yc), (max(a, b) + 1, yc)), False, float(width), color))

    def vline(self, x: float, y0: float, y1: float, color: Color, width: int = 1) -> None:
        if self.decorations:
            r, a, b = round(x), round(y0), round(y1)
            self.draw.line([(r, a), (r, b)], fill=color, width=width)
            xc = _centre(r, width)
            self.strokes.append(Stroke(((xc, min(a, b)), (xc, max(a, b) + 1)), False, float(width), color))
