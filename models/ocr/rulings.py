"""Ruled lines of a page: the borders of a form's table cells, found in the image once its text is read.

A form's grid says whose value a cell is better than any distance: a label's value is the text in the
next cell of its row however wide that cell is (申请事项 | ......已提交......), and the cells after it on
that row are more of its values. OCR gives text lines only, so the grid is found here from the page
image: the text lines' boxes are blanked out of the binarised page first (so no stroke of a character
can pass for a border), then long thin runs of ink across and down are kept (a morphological opening)
and each run is fitted with a straight segment, which follows a photo's tilt.

    rulings = find_rulings(image, [line.quad for line in page.lines])    # [[x0, y0, x1, y1], ...]

Page.rules holds the result (page pixels, upright page); models/extraction/form_layout.py counts the
vertical ones standing between two pieces of a row (`Layout.walls`).
"""
from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from data.document import Page

BLOCK = 25            # adaptive threshold window (px) and ...
OFFSET = 12           # ... how much darker than its window a pixel must be to count as ink
ACROSS_KERNEL = 0.6   # x median text height: the opening keeps horizontal runs at least this long (a
                      # photo tilted 3 degrees breaks a 2 px line into runs of 2 / tan(3) = 38 px) ...
ACROSS_MIN = 3.0      # ... and a horizontal ruling is at least this long
DOWN_KERNEL = 0.6     # x median text height: vertical runs at least this long (a photo's tilt breaks a
                      # vertical border into steps of about its thickness / tan(tilt) px)
DOWN_MIN = 1.2        # ... and a vertical ruling (one row's cell border) at least this long
BRIDGE = 1.0          # x median text height: gaps this long along a ruling are closed (a break where a
                      # text box touching it was blanked, a faint stretch of a photo)
THICK_MAX = 0.5       # x median text height: a ruling is thinner than this across its length (a filled bar,
                      # a stamp or a photo's dark desk edge is no ruling)
TEXT_SHRINK = 0.08    # text boxes are blanked this share of their height short of their top and bottom
                      # edges: a cell border touching a line's box is kept
MAX_RULINGS = 400     # a page with more thin runs than this is a photo of texture, not a form
WORK_PIXELS = 12_000_000  # larger pages are searched on a copy downscaled to this many pixels (INTER_AREA: a
                      # thin border keeps its darkness against the adaptive threshold's window, half of it at
                      # the smallest scale, 0.43 for a 64 MP page), the segments scaled back: the masks here
                      # take ~6 bytes a pixel, 0.3 GB on a 48 MP photo, whose borders are 3-10 px thick anyway


def _text_height(quads: Sequence) -> float:
    hs = [float(np.hypot(*(np.asarray(q, float)[3] - np.asarray(q, float)[0]))) for q in quads]
    return float(np.median(hs)) if hs else 20.0


def find_rulings(image: np.ndarray, quads: Sequence) -> list[list[float]]:
    """The ruled lines of a page as segments [x0, y0, x1, y1] (image pixels): horizontal ones left to
    right, vertical ones top to bottom. `quads` are the page's text lines (4 corners each), blanked first.
    A page of more than WORK_PIXELS is searched on a downscaled copy (`work_scale`)."""
    h, w = image.shape[:2]
    scale = work_scale(h, w)
    if scale >= 1.0:
        return _find_rulings(image, quads)
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    fx, fy = sw / w, sh / h
    small = cv2.resize(image, (sw, sh), interpolation=cv2.INTER_AREA)
    scaled = [np.asarray(q, dtype=np.float32) * np.array([fx, fy], dtype=np.float32) for q in quads]
    return [[round(float(v) / (fx if i % 2 == 0 else fy), 1) for i, v in enumerate(seg)]
            for seg in _find_rulings(small, scaled)]


def work_scale(h: int, w: int) -> float:
    """Scale of the copy an h x w page's ruled lines are looked for on: 1.0 up to WORK_PIXELS pixels."""
    return 1.0 if h * w <= WORK_PIXELS else (WORK_PIXELS / (h * w)) ** 0.5


def _find_rulings(image: np.ndarray, quads: Sequence) -> list[list[float]]:
    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    if grey.dtype != np.uint8:
        grey = np.clip(grey, 0, 255).astype(np.uint8)
    ink = cv2.adaptiveThreshold(grey, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, BLOCK, OFFSET)
    del grey
    th = max(8.0, _text_height(quads))
    for q in quads:
        q = np.asarray(q, dtype=np.float32)
        # top and bottom edges moved in (a border touching the box survives), the ends kept (the first
        # character's left stroke, stacked over a column of labels, would pass for a vertical line)
        top, bottom = q[[0, 1]], q[[3, 2]]
        inner = np.concatenate([top + TEXT_SHRINK * (bottom - top), bottom + TEXT_SHRINK * (top - bottom)])
        cv2.fillConvexPoly(ink, np.round(inner[[0, 1, 3, 2]]).astype(np.int32), 0)
    out: list[list[float]] = []
    for across in (True, False):
        k = max(5, int(round((ACROSS_KERNEL if across else DOWN_KERNEL) * th)))
        kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (k, 1) if across else (1, k))
        runs = cv2.morphologyEx(ink, cv2.MORPH_OPEN, kernel)
        runs = cv2.dilate(runs, np.ones((3, 3), np.uint8))       # a tilted border's steps become one run
        bridge = max(3, int(round(BRIDGE * th)))                  # a border broken where text was blanked
        _close_lines(runs, bridge, across)
        # components at half the resolution (every run is 3 px thick or more now): a quarter of the pixels
        half = cv2.resize(runs, (runs.shape[1] // 2, runs.shape[0] // 2), interpolation=cv2.INTER_NEAREST)
        n, labels, stats, _ = cv2.connectedComponentsWithStats(half, connectivity=8)
        if n - 1 > MAX_RULINGS:
            continue
        least = (ACROSS_MIN if across else DOWN_MIN) * th / 2
        for i in range(1, n):
            x, y, w, h, area = (int(v) for v in stats[i])
            length = w if across else h
            if length < least or area / max(1, length) > (THICK_MAX * th + 2) / 2:
                continue
            rows, cols = np.nonzero(labels[y:y + h, x:x + w] == i)
            xs, ys = 2.0 * (cols + x) + 0.5, 2.0 * (rows + y) + 0.5      # back to page pixels
            x0, x1, y0, y1 = 2 * x, 2 * (x + w) - 1, 2 * y, 2 * (y + h) - 1
            if across:       # y = a x + b
                a, b = np.polyfit(xs, ys, 1) if np.ptp(xs) > 0 else (0.0, float(ys.mean()))
                seg = [x0, a * x0 + b, x1, a * x1 + b]
            else:            # x = a y + b
                a, b = np.polyfit(ys, xs, 1) if np.ptp(ys) > 0 else (0.0, float(xs.mean()))
                seg = [a * y0 + b, y0, a * y1 + b, y1]
            out.append([round(float(v), 1) for v in seg])
    return out


def _close_lines(runs: np.ndarray, length: int, across: bool) -> None:
    """Close gaps up to `length` px along rows (`across`) or columns of `runs`, in place. A 1-pixel-thick
    kernel works on each row (column) alone and leaves an empty one empty, so only the rows (columns)
    holding a run are closed, gathered into one array: the same pixels as closing the whole page, for the
    1-3% of a page's rows (columns) that hold one."""
    held = np.flatnonzero(runs.any(1 if across else 0))
    if not len(held):
        return
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (length, 1) if across else (1, length))
    if across:
        runs[held] = cv2.morphologyEx(runs[held], cv2.MORPH_CLOSE, kernel)
    else:
        runs[:, held] = cv2.morphologyEx(runs[:, held], cv2.MORPH_CLOSE, kernel)


def add_rulings(page: Page, image: np.ndarray | None) -> None:
    """Give a page read before OCR kept ruled lines its lines from `image`, the upright page it was read
    from (a page OCR turned upright keeps none: its image here is not upright)."""
    if image is not None and not page.rotation and image.shape[:2] == (page.height, page.width):
        page.rules = find_rulings(image, [ln.quad for ln in page.lines])


def is_vertical(seg: Sequence[float]) -> bool:
    return abs(seg[3] - seg[1]) > abs(seg[2] - seg[0])


SLOPE = 0.02          # a drawn stroke is across (down) when it rises (leans) at most this much per unit length
ROW_SNAP = 0.15       # x median text height: strokes across whose heights differ by less are on one line


def _join(spans: list[tuple[float, float, float]], bridge: float, least: float) -> list[tuple[float, float, float]]:
    """(position, start, end) strokes on one line joined where they touch or overlap, or leave a gap of at
    most `bridge`; the joined ones at least `least` long."""
    out: list[tuple[float, float, float]] = []
    spans = sorted(spans, key=lambda s: s[1])
    pos, lo, hi = spans[0]
    weight = hi - lo
    for p, a, b in spans[1:]:
        if a <= hi + bridge:
            w = b - a
            pos = (pos * weight + p * w) / max(1e-6, weight + w) if weight + w > 0 else pos
            weight += w
            hi = max(hi, b)
            continue
        out.append((pos, lo, hi))
        pos, lo, hi, weight = p, a, b, b - a
    out.append((pos, lo, hi))
    return [s for s in out if s[2] - s[1] >= least]


def rulings_from_segments(segments: Sequence[Sequence[float]], quads: Sequence) -> list[list[float]]:
    """The ruled lines of a page from the strokes its file draws (data.pdf_paths, data.ofd: (x0, y0, x1,
    y1, width) in page pixels) under the picture finder's rules (`find_rulings`): a stroke is straight
    across or down (within SLOPE), thinner than THICK_MAX x the text height; strokes on one line (within
    ROW_SNAP) that touch or stand at most BRIDGE apart are one ruling; a ruling across is at least
    ACROSS_MIN long, one down DOWN_MIN. Same order as `find_rulings`: across ones top to bottom, then
    down ones, each [x0, y0, x1, y1] rounded to 0.1 px."""
    th = max(8.0, _text_height(quads))
    across: list[tuple[float, float, float]] = []
    down: list[tuple[float, float, float]] = []
    for x0, y0, x1, y1, width in segments:
        if width > THICK_MAX * th:
            continue
        dx, dy = abs(x1 - x0), abs(y1 - y0)
        if dy <= SLOPE * dx:
            across.append(((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
        elif dx <= SLOPE * dy:
            down.append(((x0 + x1) / 2, min(y0, y1), max(y0, y1)))
    out: list[list[float]] = []
    for spans, least, is_across in ((across, ACROSS_MIN * th, True), (down, DOWN_MIN * th, False)):
        found: list[tuple[float, float, float]] = []
        spans.sort()
        group: list[tuple[float, float, float]] = []
        for s in spans:
            if group and s[0] - group[-1][0] > ROW_SNAP * th:
                found += _join(group, BRIDGE * th, least)
                group = []
            group.append(s)
        if group:
            found += _join(group, BRIDGE * th, least)
        if len(found) > MAX_RULINGS:
            continue
        if is_across:
            found.sort(key=lambda s: (s[0], s[1]))
            out += [[round(a, 1), round(p, 1), round(b, 1), round(p, 1)] for p, a, b in found]
        else:
            found.sort(key=lambda s: (s[1], s[0]))
            out += [[round(p, 1), round(a, 1), round(p, 1), round(b, 1)] for p, a, b in found]
    return out
