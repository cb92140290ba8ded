"""What the UI draws beside the table: the page overlay, its colour legend and the timing line.

The overlay itself is app/draw.py's job (the one visualiser, shared with `batch --draw`); until that
module is installed a plain fallback draws the same boxes, so the UI is usable either way.
"""
from __future__ import annotations

import html
import zlib

import cv2
import numpy as np

from data.document import Document, Page

# Tableau-like colours that stay distinct on white paper and on each other (RGB).
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
           (140, 86, 75), (227, 119, 194), (23, 190, 207), (188, 189, 34), (127, 127, 127)]
LINE_COLOUR = (160, 160, 160)
STAGE_NAMES = (("decode", "decode"), ("ocr", "OCR"), ("extract", "extract"), ("total", "total"))


def field_colour(key: str) -> tuple[int, int, int]:
    """The same colour for a field key on every page and in every run (RGB)."""
    try:
        from app.draw import field_colour as shared
        return tuple(shared(key))
    except ImportError:
        return PALETTE[zlib.crc32(key.encode("utf-8")) % len(PALETTE)]


def page_overlay(image: np.ndarray, page: Page, doc: Document) -> np.ndarray:
    """The page (BGR) with OCR lines in grey and each field's box in its colour."""
    try:
        from app import draw
    except ImportError:
        return _fallback_overlay(image, page, doc)
    if hasattr(draw, "draw_document"):
        return draw.draw_document(image, doc, page=page.index)
    return draw.draw_page(image, page, doc)


def _fallback_overlay(image: np.ndarray, page: Page, doc: Document) -> np.ndarray:
    out = image.copy()
    thick = max(1, round(max(out.shape[:2]) / 800))
    for line in page.lines:
        pts = np.array(line.quad, np.int32).reshape(-1, 1, 2)
        cv2.polylines(out, [pts], True, LINE_COLOUR[::-1], thick)
    for key, field in doc.fields.items():
        if field.page != page.index or not field.box:
            continue
        x0, y0, x1, y1 = (int(round(v)) for v in field.box)
        r, g, b = field_colour(key)
        cv2.rectangle(out, (x0 - 2, y0 - 2), (x1 + 2, y1 + 2), (b, g, r), thick + 1)
    return out


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
