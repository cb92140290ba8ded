"""Text in the pictures of a page that was read from its own text.

A PDF page can hold a trusted text layer and still carry text only a picture holds: a scanned receipt
pasted under a typed caption, an invoice whose printed form (labels, titles) is a background image with
only the values as text. Reading the text layer alone would lose that text, so each large picture of such
a page (data.pdf_paths.Picture: its box on the page, its own pixels at their own resolution) is read by
OCR and its lines are added to the page's, mapped into page pixels, unless a line of the text layer
already covers them (`COVERED`): the text layer stays the reading of whatever it holds. The page's reader
becomes "text_layer+ocr".
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from data.document import Line, Page

COVERED = 0.5      # an OCR line this share of whose box text-layer lines cover is theirs already


def _back(x: float, y: float, rotation: int, w: int, h: int) -> tuple[float, float]:
    """A point of the picture turned upright by OCR (`rotation` as Page.rotation, reading.route.upright)
    back in the picture as stored (w x h)."""
    if rotation == 90:            # upright = the picture turned clockwise
        return y, h - 1 - x
    if rotation == 180:
        return w - 1 - x, h - 1 - y
    if rotation == 270:
        return w - 1 - y, x
    return x, y


def _covered(box: Sequence[float], boxes: list[list[float]]) -> float:
    """The share of `box` that `boxes` cover (their overlaps with it summed, at most 1)."""
    area = max(1e-6, (box[2] - box[0]) * (box[3] - box[1]))
    inter = sum(max(0.0, min(box[2], b[2]) - max(box[0], b[0])) * max(0.0, min(box[3], b[3]) - max(box[1], b[1]))
                for b in boxes)
    return min(1.0, inter / area)


def read_pictures(page: Page, pictures: Sequence[Any], engine: Any, timings: dict[str, float]) -> int:
    """OCR each picture of `page` (read from the file's text) and add the lines the text layer does not hold
    (module docstring), in reading order; the number of lines added. `engine` is the route's OCR engine,
    `timings` the page's (OCR adds its stages to them)."""
    from data.geometry import reading_order
    text_boxes = [ln.box for ln in page.lines]
    added: list[Line] = []
    for pic in pictures:
        pixels = pic.pixels()
        h, w = pixels.shape[:2]
        x0, y0, x1, y1 = pic.box
        sx, sy = (x1 - x0) / max(1, w), (y1 - y0) / max(1, h)
        read = engine.read(np.ascontiguousarray(pixels), page_index=page.index, timings=timings)
        for ln in read.lines:
            quad = [[x0 + sx * px, y0 + sy * py]
                    for px, py in (_back(float(p[0]), float(p[1]), read.rotation, w, h) for p in ln.quad)]
            line = Line(ln.text, [[round(v, 1) for v in p] for p in quad], ln.score)
            if ln.text.strip() and _covered(line.box, text_boxes) < COVERED:
                added.append(line)
    if added:
        page.lines = reading_order(page.lines + added)
        page.reader = f"{page.reader}+ocr"
    return len(added)
