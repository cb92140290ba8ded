"""The one visualiser: a page image with its OCR line quads, field boxes coloured per key and a legend.

Every entry point (UI, `python -m app ocr/extract/batch --draw`) draws through here, so a field has
the same colour everywhere (`field_colour`). Text is drawn with a CJK font (data.fonts), because
OpenCV's Hershey fonts cannot draw Chinese.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from data.document import Box, Document, Field, Page, Pair, Table

# Distinct colours (RGB) that stay readable on white paper and apart from each other and from the
# grey OCR lines. Fields drawn on one page take them in order (`field_colours`), so the first 18 fields
# of a page never share a colour (hashing keys into the palette gave four fields the same teal).
PALETTE: list[tuple[int, int, int]] = [
    (230, 25, 75), (60, 160, 60), (0, 110, 200), (245, 130, 48), (145, 30, 180), (0, 150, 150),
    (220, 40, 210), (150, 95, 30), (128, 0, 0), (120, 120, 0), (0, 0, 128), (0, 180, 220),
    (200, 160, 0), (255, 100, 160), (100, 100, 230), (30, 100, 30), (190, 70, 0), (100, 40, 120)]
LINE_COLOUR = (120, 120, 120)          # OCR lines: grey, so field colours stand out
KEY_COLOUR = (31, 119, 180)            # generic-form pairs: key boxes blue, value boxes orange
VALUE_COLOUR = (255, 127, 14)
ITEM_COLOUR = (90, 90, 90)             # line-item cells: one dark grey, thinner, so header fields stand out
TABLE_COLOUR = (0, 200, 0)             # a form's tables: vivid green, far from every colour above
HIGHLIGHT_COLOUR = (255, 0, 0)         # the box the user picked in the UI: thick red over a yellow wash
HIGHLIGHT_FILL = (255, 230, 0, 90)
# A generic form's line roles (Line.role, models/extraction/form_line_roles.py ROLES): each role's line is
# outlined thin in its colour instead of grey, under every box above. Mostly Okabe-Ito's colour-blind-safe hues,
# none equal to a colour above (tests find them by exact value): a label line is blue and a value line orange
# like the pairs' key and value boxes, but thinner. Header (a table's column heading) and heading (a title)
# share a light purple, told apart by the table around a header; a signature is a dark crimson (Okabe-Ito's
# vermillion was hard to tell from the value boxes' orange); "text" has no colour: such a line stays grey.
ROLE_COLOURS: dict[str, tuple[int, int, int]] = {
    "label": (0, 114, 178), "value": (230, 159, 0), "header": (204, 121, 167), "heading": (204, 121, 167),
    "table_cell": (0, 158, 115), "hint": (175, 175, 175), "check_box": (86, 180, 233),
    "signature": (170, 20, 90)}


def role_legend(roles: list[str | None]) -> dict[str, tuple[int, int, int]]:
    """{legend name: colour} for the coloured roles among `roles` (a page's Line.role values), in
    ROLE_COLOURS' order, roles that share a colour under one name ("header/heading"); {} on a page without
    roles (every page but a generic form's). The overlay's legend strip and the UI's legend both read it."""
    present = set(roles)
    by_colour: dict[tuple[int, int, int], list[str]] = {}
    for role, colour in ROLE_COLOURS.items():
        if role in present:
            by_colour.setdefault(colour, []).append(role)
    return {"/".join(names): colour for colour, names in by_colour.items()}


def field_colour(key: str) -> tuple[int, int, int]:
    """A colour for a key on its own, stable across runs and processes (not Python's hash); where a
    page's fields are drawn together, `field_colours` gives each its own instead."""
    return PALETTE[zlib.crc32(key.encode("utf-8")) % len(PALETTE)]


def field_colours(keys: list[str]) -> dict[str, tuple[int, int, int]]:
    """{key: colour} for the fields drawn together, in the order given: distinct for the first
    len(PALETTE) keys, then repeating. The UI's legend and table read the same mapping."""
    unique = list(dict.fromkeys(keys))
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(unique)}


def _scale(image: np.ndarray) -> float:
    """Line widths and label sizes follow the page size, so overlays look alike at any resolution."""
    return max(image.shape[:2]) / 1000.0


def draw_document_page(image: np.ndarray, page: Page, fields: dict[str, Field] | list[Field] | None = None,
                       pairs: list[Pair] | None = None, show_text: bool = False,
                       legend: bool = True, items: list[dict[str, Field]] | None = None,
                       colours: dict[str, tuple[int, int, int]] | None = None,
                       highlight: list[Box] | None = None, tables: list[Table] | None = None,
                       roles: bool = True) -> np.ndarray:
    """A copy of `image` (BGR uint8, the upright page the quads refer to) with the page's lines (grey
    quads), the fields on this page (boxes in their colour: `colours`, else `field_colours` in the
    order given; a legend strip on the right), line-item cells (`items`, thin dark grey), the key-value
    pairs (key blue, value orange, joined by a line), the form's `tables` on this page (green: the
    table thick, its column headings and non-blank cells thin, "表格 n" at its top-left, n its 1-based
    place in `tables` as in the exports and the UI's tab) and the `highlight` boxes (what the user picked,
    thick red over a yellow wash, drawn last so nothing hides them). `show_text` writes each line's OCR
    text above its quad. On a generic form's page (its lines carry a `Line.role`) each line is outlined in its
    role's colour (ROLE_COLOURS) instead of grey, first, so every box above is drawn over it, and the legend
    names the roles present; `roles=False` draws them grey, as every other page. Returns BGR uint8, wider than
    the input when a legend is drawn."""
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
        role_colour = ROLE_COLOURS.get(line.role) if roles and line.role else None
        if role_colour:     # just outside the quad, where a pair's or a cell's box on the line leaves it seen
            cx, cy = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
            ring = [(x + thin * float(np.sign(x - cx)), y + thin * float(np.sign(y - cy))) for x, y in pts]
            draw.polygon(ring, outline=role_colour, width=thin)
        else:
            draw.polygon(pts, outline=LINE_COLOUR, width=thin)
        if show_text:
            draw.text((pts[0][0], pts[0][1] - label_font.size - 2), line.text, fill=(200, 0, 0), font=label_font)

    field_list = list(fields.values()) if isinstance(fields, dict) else list(fields or [])
    here = [f for f in field_list if f.page == page.index and f.box]
    colours = colours or field_colours([f.key for f in here])
    shown: dict[str, tuple[int, int, int]] = {}
    for f in here:
        assert f.box is not None     # `here` holds only fields with a box
        colour = colours.get(f.key) or field_colour(f.key)
        x0, y0, x1, y1 = f.box
        pad = thick
        draw.rectangle([x0 - pad, y0 - pad, x1 + pad, y1 + pad], outline=colour, width=thick)
        shown.setdefault(f"{f.label} {f.key}" if f.label else f.key, colour)

    cells = [f for row in items or [] for f in row.values() if f.page == page.index and f.box]
    for f in cells:
        assert f.box is not None     # `cells` holds only cells with a box
        draw.rectangle(f.box, outline=ITEM_COLOUR, width=thin)
    if cells:
        shown.setdefault("items", ITEM_COLOUR)

    drawn_pairs = [p for p in pairs or [] if p.page == page.index]
    for pair in drawn_pairs:
        if pair.key_box:
            draw.rectangle(pair.key_box, outline=KEY_COLOUR, width=thick)
        if pair.value_box:
            draw.rectangle(pair.value_box, outline=VALUE_COLOUR, width=thick)
        if pair.key_box and pair.value_box:
            kx, ky = (pair.key_box[0] + pair.key_box[2]) / 2, (pair.key_box[1] + pair.key_box[3]) / 2
            vx, vy = (pair.value_box[0] + pair.value_box[2]) / 2, (pair.value_box[1] + pair.value_box[3]) / 2
            draw.line([(kx, ky), (vx, vy)], fill=KEY_COLOUR, width=thin)
    if drawn_pairs:
        shown.setdefault("key", KEY_COLOUR)
        shown.setdefault("value", VALUE_COLOUR)

    drawn_tables = [(n, t) for n, t in enumerate(tables or [], 1) if t.page == page.index]
    for n, table in drawn_tables:
        for b in table.column_boxes + [c.box for row in table.rows for c in row if c.text.strip()]:
            if b:
                draw.rectangle(b, outline=TABLE_COLOUR, width=thin)
        if table.box:
            x0, y0 = table.box[0] - thick, table.box[1] - thick
            draw.rectangle([x0, y0, table.box[2] + thick, table.box[3] + thick], outline=TABLE_COLOUR, width=thick)
            # above the table, or just inside it where the table starts at the page's top
            ty = y0 - label_font.size - 4 if y0 >= label_font.size + 4 else y0 + thick + 2
            draw.text((x0, ty), f"表格 {n}", fill=TABLE_COLOUR, font=label_font)
    if drawn_tables:
        shown.setdefault("table", TABLE_COLOUR)

    if highlight:
        wash = Image.new("RGBA", canvas.size, (0, 0, 0, 0))
        wash_draw = ImageDraw.Draw(wash)
        for b in highlight:
            wash_draw.rectangle([b[0], b[1], b[2], b[3]], fill=HIGHLIGHT_FILL)
        canvas = Image.alpha_composite(canvas.convert("RGBA"), wash).convert("RGB")
        draw = ImageDraw.Draw(canvas)
        for b in highlight:
            pad = 2 * thick
            draw.rectangle([b[0] - pad, b[1] - pad, b[2] + pad, b[3] + pad], outline=HIGHLIGHT_COLOUR,
                           width=2 * thick)

    if roles:       # listed after what is drawn over the lines
        for name, colour in role_legend([line.role for line in page.lines]).items():
            shown.setdefault(f"line: {name}", colour)

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


def draw_document(image: np.ndarray, doc: Document, page: int = 0, **kw: Any) -> np.ndarray:
    """`draw_document_page` for page number `page` of `doc`, with the document's fields (coloured in the
    document's order, as the UI's legend and table show them), line items, pairs and tables."""
    pg = next((p for p in doc.pages if p.index == page), None)
    if pg is None:
        raise ValueError(f"document {doc.source!r} has no page {page}; it has {len(doc.pages)}")
    kw.setdefault("colours", document_colours(doc, page))
    return draw_document_page(image, pg, list(doc.fields.values()), doc.pairs, items=doc.items, tables=doc.tables,
                              **kw)


def document_colours(doc: Document, page: int) -> dict[str, tuple[int, int, int]]:
    """The colour of each field of `doc` with a box on page `page`, taken in the order its schema lists
    the fields (the UI's table and legend order), then any others in the document's order."""
    order: list[str] = []
    try:
        from data.schemas import load_schema
        order = load_schema(doc.doc_type).keys() if doc.doc_type else []
    except Exception:   # a type without an installed schema: the document's own order
        order = []
    boxed = [k for k, f in doc.fields.items() if f.page == page and f.box]
    return field_colours([k for k in order if k in boxed] + [k for k in boxed if k not in order])
