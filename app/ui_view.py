"""What the UI draws beside the table: the page overlay, its colour legend and the timing line.

The overlay is app/draw.py's (the one visualiser, shared with `batch --draw`), so a field has the
same colour here as in every other output; the legend is HTML under the image instead of draw.py's
strip inside it, because the UI scales the page down and the strip's text would become unreadable.
The UI keeps only a preview of each page (app/pipeline.py PREVIEW_SIDE), so boxes are scaled to it.
"""
from __future__ import annotations

import html
from dataclasses import replace

import numpy as np

from app.draw import LINE_COLOUR, draw_document, field_colour
from data.document import Box, Document, Field, Page

STAGE_NAMES = (("decode", "decode"), ("ocr", "OCR"), ("extract", "extract"), ("total", "total"))


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
    return small, Document(source=doc.source, pages=[small], fields=here, items=items, pairs=pairs)


def page_overlay(image: np.ndarray, page: Page, doc: Document, legend: bool = False) -> np.ndarray:
    """The page (BGR) with OCR lines in grey and each field's box in its colour. `image` may be the
    full page or a preview of it (smaller, same proportions): boxes are scaled to the image."""
    h, w = image.shape[:2]
    if page.width and page.height and (w, h) != (page.width, page.height):
        page, doc = _scaled(page, doc, w / page.width, h / page.height)
    return draw_document(image, doc, page=page.index, legend=legend)


def legend_html(doc: Document, page_index: int) -> str:
    """A row of colour chips, one per field drawn on this page, labelled in Chinese and English."""
    chips = ['<span style="display:inline-block;margin:2px 10px 2px 0;white-space:nowrap">'
             f'<span style="display:inline-block;width:12px;height:12px;border:2px solid rgb{LINE_COLOUR};'
             'margin-right:4px;vertical-align:middle"></span>OCR line</span>']
    for key, field in doc.fields.items():
        if field.page != page_index or not field.box:
            continue
        colour = "rgb({},{},{})".format(*field_colour(key))
        label = html.escape(f"{field.label} {key}" if field.label and field.label != key else key)
        chips.append('<span style="display:inline-block;margin:2px 10px 2px 0;white-space:nowrap">'
                     f'<span style="display:inline-block;width:12px;height:12px;background:{colour};'
                     f'margin-right:4px;vertical-align:middle"></span>{label}</span>')
    return '<div style="font-size:0.85rem;line-height:1.6">' + "".join(chips) + "</div>"


def timings_text(timings: dict[str, float]) -> str:
    parts = [f"{name} {timings[key]:.2f} s" for key, name in STAGE_NAMES if key in timings]
    return "Time: " + " · ".join(parts) if parts else ""
