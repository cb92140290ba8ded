"""Seal-aware reading: find red seals on a page and lighten their ink before detection and recognition.

A seal over text breaks the detector's lines (电子发 | seal | 票（普通发票）, a seller's name cut where the
发票专用章 sits) and its own characters come out as lines. The seal's ink is saturated red and, where it
covers paper, bright: its red channel is close to the paper's. The print of invoices is brown, dark red or
black, so its red channel is well below the paper's, alone or under the seal (a stamp multiplies the
print darker). A plain red mask also takes that print and erased titles; here a pixel is seal ink only
if it is both red AND bright relative to the local paper (a shadow or a photo's tint moves both), and
only inside a seal: a large, not elongated, sparsely inked blob of such pixels (an oval or round ring
with its arc text), so red print in a line (a ticket number, a red 发票联) is left alone. Seal ink is
replaced by the local paper's grey; the print, and the seal's ink where it touches print, keep their colour.

Print that touches a seal's ring (the tax bureau's seal printed over a dark-red title) joins its blob through the
print's light anti-aliased rims, which are red and bright too: the blob is then too wide, too elongated and
not ring-like, and the seal was missed (the title lost). A blend of dark print with the paper is never as
saturated as seal ink at the same brightness, so where the first pass finds no seal, stricter passes
(`STRICT`) take only the more saturated ink: the rims drop out, the ring stands alone and passes the same
tests. Seals found are kept; a stricter pass only adds seals that overlap none found before.
"""
from __future__ import annotations

import cv2
import numpy as np

EXCESS = 0.1          # seal ink: red above max(green, blue) by this share of the paper's (each channel
EXCESS_INSIDE = 0.04  # within a found seal's box
BRIGHT = 0.72         # relative to the paper's), and red at least this share of the paper's red
PRINT = 0.62          # print: red below this share of the paper's (the dark core of a brown or black stroke)
MIN_SIDE = 0.05       # a seal's bounding box: each side at least this share of the page's shorter side
MAX_SIDE = 0.4        # and at most this share (a tinted desk or paper edge is larger)
MAX_ASPECT = 2.4      # and no more elongated than this (a line of red print is)
FILL = (0.04, 0.55)   # share of the box inked: a ring and its arc text, not noise or a red block
ON_PAPER = 0.8        # the paper around a seal is at least this share of the page's brightest paper
GAP = 0.07            # parts of one seal are at most this share of the page's shorter side apart
RING_COVERAGE = 0.65  # share of the 36 sectors of the ring's shell with ink: generated seals 0.72-1.0 (a few
                      # broken ones at photo/heavy less); red charts and labels on the real samples 0.25-0.61
RING_BAND = 0.1       # ink density of the band inside the ring
RING_OUTSIDE = 0.1    # most ink density just outside the ellipse (generated seals <= 0.08)
STRICT = (0.2, 0.3)   # further passes' EXCESS: print touching the ring drops out (clean tax-bureau seals over a
                      # dark-red title: found at 0.2 or 0.3, not at 0.1; a pale seller seal only up to 0.2)
PAPER_TINT = 0.25     # a seal's box, median pixel: red above max(green, blue) by at most this share of red
PAINT = 0.5           # a seal found by a stricter pass: its ink painted over from this share of that pass's EXCESS
                      # (changed pages of seal_bench: under-seal CER 0.41 old, 0.12 at 0.5, 0.14 at 0.25, 0.23 at 1.0)
WORK_PIXELS = 12_000_000  # seals are looked for on a copy of the page of at most this many pixels (a 12 MP phone
                      # photo, an A4 page at 300 dpi: the page itself): every test here is relative to the page's
                      # size and a seal spans 5-40% of its shorter side, so a 48 MP photo needs no more; its ink
                      # is then painted over at full resolution around each seal found. The finder holds about
                      # 25 bytes a working pixel (float channels, masks): 1.3 GB on a 48 MP photo before
VERSION = 2           # of the seal finder, in OCRSettings.tag(): seals found where none were change the readings


def _paper_kernel(h: int, w: int) -> int:
    """Side of `_paper`'s filter for an h x w page: about two character heights."""
    return max(9, (min(h, w) // 40) | 1)


def _paper(image: np.ndarray, k: int | None = None) -> np.ndarray:
    """Local paper colour, per channel: each channel max-filtered over about two character heights (`k`, by
    default the page's `_paper_kernel`), so text and seal strokes are bridged by the paper around them."""
    k = k or _paper_kernel(*image.shape[:2])
    return cv2.dilate(image, cv2.getStructuringElement(cv2.MORPH_RECT, (k, k)))


def _page_level(paper: np.ndarray) -> float:
    """Brightness of the page's brightest paper (95th percentile of the local paper's level)."""
    return float(np.percentile(paper.max(axis=2)[::4, ::4], 95))


def _redness(image: np.ndarray, k: int | None = None, page_level: float | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """(how much a pixel's red exceeds its green and blue, relative to the local paper, where it could be
    seal ink, -1 elsewhere; local paper colour) of a BGR page: `seal_ink`'s mask is this above a threshold.
    `k` and `page_level` (the paper filter's side, `_page_level`) are the whole page's when `image` is a
    window of it. One float channel at a time, in place where it can: the same numbers as whole-page float
    copies, in about 25 bytes a pixel instead of 40."""
    smooth = cv2.medianBlur(image, 3)
    paper = _paper(smooth, k)

    def rel(c: int) -> np.ndarray:
        return smooth[..., c].astype(np.float32) / np.maximum(paper[..., c], 40).astype(np.float32)

    r = rel(2)
    near_print = cv2.dilate((r < PRINT).astype(np.uint8), cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))) > 0
    level = paper.max(axis=2)
    on_paper = level >= ON_PAPER * (_page_level(paper) if page_level is None else page_level)
    del level
    redness = rel(1)
    np.maximum(redness, rel(0), out=redness)
    np.subtract(r, redness, out=redness)            # red above max(green, blue)
    keep = r > BRIGHT
    keep &= ~near_print
    keep &= on_paper
    redness[~keep] = -1.0
    return redness, paper


def seal_ink(image: np.ndarray, excess: float = EXCESS) -> tuple[np.ndarray, np.ndarray]:
    """(bool mask of the pixels that look like seal ink, local paper colour) of a BGR page. Colours are
    taken relative to the local paper's, channel by channel (a pink or yellowed sheet, a photo's tint or
    shadow is white then). Seal ink is red and bright against the paper, on the page's paper (a photo's
    desk is its own "paper" and may be reddish) and not at the edge of print: a brown or dark-red
    stroke's anti-aliased rim is light red too, but the seal's own strokes have no dark core. A 3x3
    median first, so a photo's sensor noise neither makes paper look like print nor lifts the paper."""
    redness, paper = _redness(image)
    return redness > excess, paper


def seal_boxes(image: np.ndarray, found: tuple[np.ndarray, np.ndarray] | None = None
               ) -> list[tuple[int, int, int, int]]:
    """(x0, y0, x1, y1) of each seal on a BGR page (`found`: `_redness`'s answer, if already computed): first
    with the EXCESS ink mask, then the stricter `STRICT` ones, each adding the seals that overlap none found.
    A page of more than WORK_PIXELS is searched on a downscaled copy, the boxes given in the page's pixels."""
    if found is None and image.ndim == 3 and work_scale(*image.shape[:2]) < 1.0:
        return [box for box, _ in _find_scaled(image)[0]]
    return [box for box, _ in _seals(image, found)]


def work_scale(h: int, w: int) -> float:
    """Scale of the copy an h x w page's seals are looked for on: 1.0 up to WORK_PIXELS pixels."""
    return 1.0 if h * w <= WORK_PIXELS else (WORK_PIXELS / (h * w)) ** 0.5


def _find_scaled(image: np.ndarray) -> tuple[list[tuple[tuple[int, int, int, int], float]], float]:
    """`_seals` of a page above WORK_PIXELS, found on a copy downscaled to it (INTER_AREA: thin seal strokes
    keep their colour, lighter), boxes scaled back out to the page's pixels; and the page's paper level."""
    h, w = image.shape[:2]
    scale = work_scale(h, w)
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    small = cv2.resize(image, (sw, sh), interpolation=cv2.INTER_AREA)
    redness, paper = _redness(small)
    level = _page_level(paper)
    found = _seals(small, (redness, paper))
    fx, fy = w / sw, h / sh
    return [((max(0, int(x0 * fx)), max(0, int(y0 * fy)), min(w, int(np.ceil(x1 * fx))), min(h, int(np.ceil(y1 * fy)))),
             excess) for (x0, y0, x1, y1), excess in found], level


def _seals(image: np.ndarray, found: tuple[np.ndarray, np.ndarray] | None = None
           ) -> list[tuple[tuple[int, int, int, int], float]]:
    """`seal_boxes`, each with the EXCESS of the pass that found it."""
    if image.ndim != 3 or image.shape[2] != 3:
        return []
    redness, paper = _redness(image) if found is None else found
    seals: list[tuple[tuple[int, int, int, int], float]] = []
    for excess in (EXCESS, *STRICT):
        seals += [(b, excess) for b in _seal_boxes(image, redness > excess, paper)
                  if not any(_gap(b, old) < 0 for old, _ in seals)]
    return seals


def _seal_boxes(image: np.ndarray, ink: np.ndarray, paper: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The seals of one ink mask: blobs of seal ink, closed over the gaps between a seal's characters, that
    are large, roughly round or oval, sparsely inked and on the paper (not on the darker desk of a photo)."""
    if not ink.any():
        return []
    level = paper.max(axis=2)
    page_paper = float(np.percentile(level[::4, ::4], 95))
    short = min(image.shape[:2])
    k = max(5, (short // 40) | 1)
    closed = cv2.morphologyEx(ink.astype(np.uint8), cv2.MORPH_CLOSE,
                              cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    n, _, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    parts = [(int(x), int(y), int(x + w), int(y + h)) for x, y, w, h, area in stats[1:n]
             if area >= k * k and max(w, h) <= MAX_SIDE * short]

    def is_seal(box: tuple[int, int, int, int]) -> bool:
        x0, y0, x1, y1 = box
        w, h = x1 - x0, y1 - y0
        if min(w, h) < MIN_SIDE * short or max(w, h) > MAX_SIDE * short or max(w, h) > MAX_ASPECT * min(w, h):
            return False
        box_ink = ink[y0:y1, x0:x1]
        if not FILL[0] <= box_ink.mean() <= FILL[1] or np.median(level[y0:y1, x0:x1]) < ON_PAPER * page_paper:
            return False
        # a seal is sparse ink on the paper: most of its box is not red, where a red disc (a national
        # emblem) is its own local "paper" and its rim alone shows as ink at a stricter pass
        if np.median(_tint(image[y0:y1, x0:x1])) > PAPER_TINT:
            return False
        return _ring_like(ink, box)

    boxes = [b for b in parts if is_seal(b)]
    rest = [b for b in parts if b not in boxes]
    # a line of print across a seal splits its ink into the parts above and below it: try the unions of
    # two or three parts close to each other, the most inked passing union first
    while len(rest) > 1:
        near = [(i, j) for i in range(len(rest)) for j in range(i + 1, len(rest))
                if _gap(rest[i], rest[j]) < GAP * short]
        groups = [(i, j) for i, j in near] + [(i, j, m) for i, j in near for m in range(j + 1, len(rest))
                                              if _gap(rest[i], rest[m]) < GAP * short
                                              or _gap(rest[j], rest[m]) < GAP * short]
        passing = [(float(ink[u[1]:u[3], u[0]:u[2]].sum()), g, u) for g in groups
                   for u in [_union([rest[i] for i in g])] if is_seal(u)]
        if not passing:
            break
        _, group, union = max(passing)
        boxes.append(union)
        rest = [b for i, b in enumerate(rest) if i not in group]
    return boxes


def _tint(crop: np.ndarray) -> np.ndarray:
    """How far each pixel's red exceeds its green and blue, as a share of its red (computed per candidate
    box, not over the whole page at every pass)."""
    fi = crop.astype(np.float32)
    return (fi[..., 2] - np.maximum(fi[..., 0], fi[..., 1])) / np.maximum(fi[..., 2], 1.0)


def _gap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    """The larger of the horizontal and vertical gaps between two boxes (negative when they overlap)."""
    return max(max(a[0], b[0]) - min(a[2], b[2]), max(a[1], b[1]) - min(a[3], b[3]))


def _union(boxes: list[tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _ring_like(ink: np.ndarray, box: tuple[int, int, int, int]) -> bool:
    """Does the ink look like a seal in its box? Measured against the box's inscribed ellipse: its outer
    shell is inked nearly all round (the ring; a line of print across the seal hides some of it), the band
    inside the ring (ring and arc text) is inked more densely than the middle, and just outside the ellipse
    there is next to no ink (a chart's red line, a pie slice or a block of red labels go on past it)."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    height, width = ink.shape
    px, py = int(w * 0.35), int(h * 0.35)
    wx0, wy0, wx1, wy1 = max(0, x0 - px), max(0, y0 - py), min(width, x1 + px), min(height, y1 + py)
    win = ink[wy0:wy1, wx0:wx1]
    yy, xx = np.ogrid[wy0:wy1, wx0:wx1]        # broadcast: no two window-sized integer grids
    dx, dy = (xx + 0.5 - (x0 + x1) / 2) / (w / 2), (yy + 0.5 - (y0 + y1) / 2) / (h / 2)
    d = np.hypot(dx, dy)
    sector = ((np.arctan2(dy, dx) + np.pi) / (2 * np.pi) * 36).astype(int).clip(0, 35)
    shell = (d >= 0.8) & (d <= 1.05)
    inked = [win[shell & (sector == k)] for k in range(36)]
    coverage = float(np.mean([cell.size > 0 and cell.mean() > 0.05 for cell in inked]))
    band = float(win[(d >= 0.65) & (d <= 1.05)].mean())
    core = float(win[d < 0.5].mean())
    outside = float(win[(d > 1.12) & (d < 1.35)].mean()) if ((d > 1.12) & (d < 1.35)).any() else 0.0
    return coverage >= RING_COVERAGE and band >= RING_BAND and band >= 1.3 * core and outside <= RING_OUTSIDE


def unseal(image: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """(page with the seal ink inside seals painted over with the local paper's colour, the seals' boxes);
    the page itself when it has no seal. BGR in, BGR out."""
    if image.ndim != 3 or image.shape[2] != 3:
        return image, []
    h, w = image.shape[:2]
    if work_scale(h, w) < 1.0:
        seals, level = _find_scaled(image)
        k = _paper_kernel(h, w)
        margin = k // 2 + 4     # the median (1 px), paper filter (k // 2) and print dilation (2) reach this far

        def window(box: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
            """`_redness` of the page in a seal's box, at full resolution, computed on the box and a margin."""
            x0, y0, x1, y1 = box
            wx0, wy0 = max(0, x0 - margin), max(0, y0 - margin)
            red, paper = _redness(image[wy0:min(h, y1 + margin), wx0:min(w, x1 + margin)], k, level)
            return red[y0 - wy0:y1 - wy0, x0 - wx0:x1 - wx0], paper[y0 - wy0:y1 - wy0, x0 - wx0:x1 - wx0]
    else:
        redness, paper = _redness(image)
        seals = _seals(image, (redness, paper))

        def window(box: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
            x0, y0, x1, y1 = box
            return redness[y0:y1, x0:x1], paper[y0:y1, x0:x1]
    if not seals:
        return image, []
    out = image.copy()
    for box, _ in seals:
        x0, y0, x1, y1 = box
        if x1 <= x0 or y1 <= y0:
            continue
        # a seal found by a stricter pass touches print whose light rims are red too: only ink about as
        # saturated as that pass's is painted over there (a photo's blurred title strokes have no dark core to
        # protect them); where seals overlap, the most permissive threshold of those covering a pixel
        inside = np.full((y1 - y0, x1 - x0), np.inf, dtype=np.float32)
        for (bx0, by0, bx1, by1), excess in seals:
            ix0, iy0, ix1, iy1 = max(x0, bx0), max(y0, by0), min(x1, bx1), min(y1, by1)
            if ix1 > ix0 and iy1 > iy0:
                cell = inside[iy0 - y0:iy1 - y0, ix0 - x0:ix1 - x0]
                np.minimum(cell, EXCESS_INSIDE if excess == EXCESS else excess * PAINT, out=cell)
        red, pap = window(box)
        # inside a seal, paler red counts too (a photo's blur and JPEG grey its thin characters); never a pixel
        # that is dark itself (a thin stroke's tip the median smoothed away)
        mask = (red > inside) & (image[y0:y1, x0:x1, 2].astype(np.float32) >= BRIGHT * pap[..., 2])
        out[y0:y1, x0:x1][mask] = pap[mask]
    return out, [box for box, _ in seals]
