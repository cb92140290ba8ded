"""The one visualiser: a page image with its OCR line quads, field boxes coloured per key and a legend.

Every entry point (UI, `python -m app ocr/extract/batch --draw`) draws through here, so a field has
the same colour everywhere (`field_colour`). Text is drawn with a CJK font (data.fonts), because
OpenCV's Hershey fonts cannot draw Chinese.
"""
from __future__ import annotations

import zlib

import numpy as np

from data.document import Document, Field, Page, Pair

# Tableau-like colours (RGB) that stay distinct on white paper and from each other.
PALETTE: list[tuple[int, int, int]] = [
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (23, 190, 207), (188, 189, 34), (127, 127, 127)]
LINE_COLOUR = (120, 120, 120)          # OCR lines: grey, so field colours stand out
KEY_COLOUR = (31, 119, 180)            # generic-form pairs: key boxes blue, value boxes orange
VALUE_COLOUR = (255, 127, 14)


def field_colour(key: str) -> tuple[int, int, int]:
    """The RGB colour of a field key, stable across pages, runs and processes (not Python's hash)."""
    return PALETTE[zlib.crc32(key.encode("utf-8")) % len(PALETTE)]


def _scale(image: np.ndarray) -> float:
    """Line widths and label sizes follow the page size, so overlays look alike at any resolution."""
    return max(image.shape[:2]) / 1000.0


def draw_document_page(image: np.ndarray, page: Page, fields: dict[str, Field] | list[Field] | None = None,
                       pairs: list[Pair] | None = None, show_text: bool = False,
                       legend: bool = True) -> np.ndarray:
    """A copy of `image` (BGR uint8, the upright page the quads refer to) with the page's lines (grey
    quads), the fields on this page (boxes in `field_colour`, a legend strip on the right) and the
    key-value pairs (key blue, value orange, joined by a line). `show_text` writes each line's OCR text
    above its quad. Returns BGR uint8, wider than the input when a legend is drawn."""
    from PIL import Image, ImageDraw

    from data.fonts import pil_font

    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    canvas = Image.fromarray(np.ascontiguousarray(image[:, :, 2::-1]))   # BGR -> RGB
    draw = ImageDraw.Draw(canvas)
    s = _scale(image)
    thin, thick = max(1, round(1.5 * s)), max(2, round(3 * s))
    label_font = pil_font("hei", max(12, round(16 * s)))

    for line in page.lines:
        pts = [tuple(p) for p in line.quad]
        draw.polygon(pts, outline=LINE_COLOUR, width=thin)
        if show_text:
            draw.text((pts[0][0], pts[0][1] - label_font.size - 2), line.text, fill=(200, 0, 0), font=label_font)

    field_list = list(fields.values()) if isinstance(fields, dict) else list(fields or [])
    shown: dict[str, tuple[int, int, int]] = {}
    for f in field_list:
        if f.page != page.index or not f.box:
            continue
        colour = field_colour(f.key)
        x0, y0, x1, y1 = f.box
        pad = thick
        draw.rectangle([x0 - pad, y0 - pad, x1 + pad, y1 + pad], outline=colour, width=thick)
        shown.setdefault(f"{f.label} {f.key}" if f.label else f.key, colour)

    for pair in pairs or []:
        if pair.page != page.index:
            continue
        if pair.key_box:
            draw.rectangle(pair.key_box, outline=KEY_COLOUR, width=thick)
        if pair.value_box:
            draw.rectangle(pair.value_box, outline=VALUE_COLOUR, width=thick)
        if pair.key_box and pair.value_box:
            kx, ky = (pair.key_box[0] + pair.key_box[2]) / 2, (pair.key_box[1] + pair.key_box[3]) / 2
            vx, vy = (pair.value_box[0] + pair.value_box[2]) / 2, (pair.value_box[1] + pair.value_box[3]) / 2
            draw.line([(kx, ky), (vx, vy)], fill=KEY_COLOUR, width=thin)
    if pairs:
        shown.setdefault("key", KEY_COLOUR)
        shown.setdefault("value", VALUE_COLOUR)

    if legend and shown:
        canvas = _with_legend(canvas, shown, label_font)
    return np.ascontiguousarray(np.asarray(canvas)[:, :, ::-1])


def _with_legend(canvas, entries: dict[str, tuple[int, int, int]], font):
    """The page with a white strip on its right listing each colour and its field."""
    from PIL import Image, ImageDraw
    row = font.size + 8
    width = max(int(font.getlength(name)) for name in entries) + row + 24
    height = max(canvas.height, row * len(entries) + 16)
    out = Image.new("RGB", (canvas.width + width, height), (255, 255, 255))
    out.paste(canvas, (0, 0))
    draw = ImageDraw.Draw(out)
    x = canvas.width + 8
    for i, (name, colour) in enumerate(entries.items()):
        y = 8 + i * row
        draw.rectangle([x, y + 2, x + font.size, y + 2 + font.size], fill=colour)
        draw.text((x + font.size + 8, y), name, fill=(0, 0, 0), font=font)
    return out


def draw_document(image: np.ndarray, doc: Document, page: int = 0, **kw) -> np.ndarray:
    """`draw_document_page` for page number `page` of `doc`, with the document's fields and pairs."""
    pg = next((p for p in doc.pages if p.index == page), None)
    if pg is None:
        raise ValueError(f"document {doc.source!r} has no page {page}; it has {len(doc.pages)}")
    item_fields = [f for row in doc.items for f in row.values()]
    return draw_document_page(image, pg, list(doc.fields.values()) + item_fields, doc.pairs, **kw)
