"""What the UI draws beside the table: the page overlay, its colour legend and the timing line.

The overlay is app/draw.py's (the one visualiser, shared with `batch --draw`), so a field has the
same colour here as in every other output; the legend is HTML under the image instead of draw.py's
strip inside it, because the UI scales the page down and the strip's text would become unreadable.
The UI keeps only a preview of each page (reading/route.py PREVIEW_SIDE), so boxes are scaled to it.
"""
from __future__ import annotations

import html
from dataclasses import replace

import numpy as np

from app.draw import (
    HIGHLIGHT_COLOUR,
    ITEM_COLOUR,
    KEY_COLOUR,
    LINE_COLOUR,
    TABLE_COLOUR,
    VALUE_COLOUR,
    document_colours,
    draw_document,
    role_legend,
)
from data.document import Box, Document, Field, Page

STAGE_NAMES = (("decode", "解码 decode"), ("ocr", "OCR"), ("text_layer", "读文件文字 text from the file"),
               ("extract", "抽取 extract"), ("total", "合计 total"))
READ_STAGES = ("ocr", "text_layer")     # how pages were read: shown only when some page was read that way


def _scaled(page: Page, doc: Document, kx: float, ky: float) -> tuple[Page, Document]:
    """`page` and what `doc` draws on it, in the coordinates of an image kx, ky times the page's size."""
    def box(b: Box | None) -> Box | None:
        return [b[0] * kx, b[1] * ky, b[2] * kx, b[3] * ky] if b else b

    def field(f: Field) -> Field:
        return replace(f, box=box(f.box))
    lines = [replace(ln, quad=[[x * kx, y * ky] for x, y in ln.quad]) for ln in page.lines]
    small = replace(page, width=round(page.width * kx), height=round(page.height * ky), lines=lines)
    here = {k: field(f) for k, f in doc.fields.items() if f.page == page.index}
    items = [{k: field(f) for k, f in row.items() if f.page == page.index} for row in doc.items]
    pairs = [replace(p, key_box=box(p.key_box), value_box=box(p.value_box)) for p in doc.pairs
             if p.page == page.index]
    # every table, not only this page's: a table's label is its number in the document
    tables = [replace(t, box=box(t.box), column_boxes=[box(b) for b in t.column_boxes],
                      rows=[[replace(c, box=box(c.box)) for c in row] for row in t.rows]) for t in doc.tables]
    return small, Document(source=doc.source, pages=[small], fields=here, items=items, pairs=pairs, tables=tables)


def page_overlay(image: np.ndarray, page: Page, doc: Document, legend: bool = False,
                 highlight: list[Box] | None = None, roles: bool = True) -> np.ndarray:
    """The page (BGR) with OCR lines in grey (on a form's page: in their role's colour, unless `roles` is
    False), each field's box in its colour, item cells, pairs, tables and the `highlight` boxes (page
    coordinates). `image` may be the full page or a preview of it (smaller, same proportions): boxes are
    scaled to the image."""
    h, w = image.shape[:2]
    colours = document_colours(doc, page.index)
    if page.width and page.height and (w, h) != (page.width, page.height):
        kx, ky = w / page.width, h / page.height
        highlight = [[b[0] * kx, b[1] * ky, b[2] * kx, b[3] * ky] for b in highlight or []]
        page, doc = _scaled(page, doc, kx, ky)
    return draw_document(image, doc, page=page.index, legend=legend, colours=colours, highlight=highlight,
                         roles=roles)


def zoom_crop(image: np.ndarray, page: Page, boxes: list[Box], margin: float = 0.6) -> np.ndarray | None:
    """The part of `image` (a preview or the page) around `boxes` (page coordinates), with a margin of
    `margin` times the boxes' height on every side and at least a fifth of the page's width, so the
    picked value is seen in its context; None without boxes."""
    if not boxes:
        return None
    h, w = image.shape[:2]
    kx, ky = (w / page.width, h / page.height) if page.width and page.height else (1.0, 1.0)
    x0, y0 = min(b[0] for b in boxes) * kx, min(b[1] for b in boxes) * ky
    x1, y1 = max(b[2] for b in boxes) * kx, max(b[3] for b in boxes) * ky
    pad = max((y1 - y0) * margin * 3, 40.0)
    half_w = max((x1 - x0) / 2 + pad, w / 10)
    cx = (x0 + x1) / 2
    left, right = int(max(0, cx - half_w)), int(min(w, cx + half_w))
    top, bottom = int(max(0, y0 - pad)), int(min(h, y1 + pad))
    if right - left < 2 or bottom - top < 2:
        return None
    return image[top:bottom, left:right]


def _chip(colour: tuple[int, int, int], label: str, filled: bool = True, thick: int = 2) -> str:
    rgb = "rgb({},{},{})".format(*colour)
    swatch = f"background:{rgb}" if filled else f"border:{thick}px solid {rgb}"
    return ('<span style="display:inline-block;margin:2px 12px 2px 0;white-space:nowrap">'
            f'<span style="display:inline-block;width:12px;height:12px;{swatch};margin-right:4px;'
            f'vertical-align:middle;box-sizing:border-box"></span>{html.escape(label)}</span>')


def legend_html(doc: Document, page_index: int, highlighted: str = "", roles: bool = True) -> str:
    """Every kind of box drawn on this page, explained: each field's own colour (its printed name),
    item cells, form keys and values, form tables, OCR lines (on a form's page with `roles`, the line roles
    present: "行 line: label" and so on, as in the JSON's "role") and the picked box."""
    colours = document_colours(doc, page_index)
    chips = [_chip(colours[k], doc.fields[k].label or k) for k in colours]
    if any(f.page == page_index and f.box for row in doc.items for f in row.values()):
        chips.append(_chip(ITEM_COLOUR, "明细单元格 item cell", filled=False))
    if any(p.page == page_index for p in doc.pairs):
        chips.append(_chip(KEY_COLOUR, "键 form key", filled=False, thick=3))
        chips.append(_chip(VALUE_COLOUR, "值 form value", filled=False, thick=3))
    if any(t.page == page_index for t in doc.tables):
        chips.append(_chip(TABLE_COLOUR, "表格 form table", filled=False, thick=3))
    chips.append(_chip(LINE_COLOUR, "OCR 文本行 text line", filled=False, thick=1))
    page = next((p for p in doc.pages if p.index == page_index), None)
    if roles and page is not None:
        chips += [_chip(colour, f"行 line: {name}", filled=False, thick=2)
                  for name, colour in role_legend([ln.role for ln in page.lines]).items()]
    if highlighted:
        chips.append(_chip(HIGHLIGHT_COLOUR, f"选中 selected: {highlighted}", filled=False, thick=3))
    return '<div style="font-size:0.85rem;line-height:1.7">' + "".join(chips) + "</div>"


def timings_text(timings: dict[str, float]) -> str:
    parts = [f"{name} {timings[key]:.2f} s" for key, name in STAGE_NAMES
             if key in timings and (timings[key] > 0 or key not in READ_STAGES)]
    return "Time: " + " · ".join(parts) if parts else ""
