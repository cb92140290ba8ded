"""The straight strokes a PDF page draws (its path objects), in the pixels of the page rendered.

A born-digital form or invoice draws its table borders as vector paths: reading them from the file gives
the ruled lines exactly and costs no rendering, where the ruled-line finder (models/ocr/rulings.py) has to
render the page and search the picture. `page_drawing` walks the page's objects once (also inside form
XObjects, each object's matrix composed with its containers') and hands back every straight stroke as
(x0, y0, x1, y1, width) in page-image pixels, the shape data.ofd gives for an OFD's PathObjects:
- a stroked path: each straight piece (line-to, and the closing piece of a closed sub-path); curves are
  passed over (a seal's ring, a rounded corner are no ruling);
- a filled path with nothing stroked whose box is thin (at most `THIN_FILL_PT` across): one stroke along
  its middle, as thick as the box (some writers draw a border as a filled hairline rectangle).

The strokes are None instead of a list when they are not the whole picture: an image covering `IMAGE_SHARE` of
the page or more may hold a table of its own (a pasted scan, a picture of a form), so the caller looks
at the rendered page instead. Such an image may hold text the text layer does not (a scanned receipt
pasted under a typed caption, an invoice whose printed form is a background picture): `page_drawing`
hands each one back as a `Picture`, its box in page pixels and its own pixels on demand, for OCR.
"""
from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

THIN_FILL_PT = 3.0    # a filled path no thicker than this (pt) is a drawn line, not an area
LIGHT = 224           # a stroke or fill this light (luminance 0-255) or transparent is not seen on white paper
                      # (e-invoices draw white frames around their fields)
BIG_IMAGE = 0.5       # an image covering this share of the page, drawn over text, hides it (a scan with an OCR
                      # layer: data.textlayer reads such a page by OCR)
IMAGE_SHARE = 0.1     # an image this share of the page or larger: the strokes may not be all the rulings

Matrix = tuple[float, float, float, float, float, float]    # PDF order: x' = a x + c y + e, y' = b x + d y + f
Segment = tuple[float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _compose(p: Matrix, q: Matrix) -> Matrix:
    """The matrix applying `q` first, then `p`."""
    a, b, c, d, e, f = p
    qa, qb, qc, qd, qe, qf = q
    return (a * qa + c * qb, b * qa + d * qb, a * qc + c * qd, b * qc + d * qd,
            a * qe + c * qf + e, b * qe + d * qf + f)


def _matrix(raw_obj: Any) -> Matrix:
    import pypdfium2.raw as pdfium_c
    m = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(raw_obj, m):
        return _IDENTITY
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _path_points(raw_obj: Any) -> list[tuple[int, float, float, bool]]:
    """(type, x, y, closes) of each segment of a path object, in the path's own space."""
    import pypdfium2.raw as pdfium_c
    out = []
    x, y = ctypes.c_float(), ctypes.c_float()
    for i in range(pdfium_c.FPDFPath_CountSegments(raw_obj)):
        seg = pdfium_c.FPDFPath_GetPathSegment(raw_obj, i)
        if not seg or not pdfium_c.FPDFPathSegment_GetPoint(seg, x, y):
            continue
        out.append((pdfium_c.FPDFPathSegment_GetType(seg), x.value, y.value,
                    bool(pdfium_c.FPDFPathSegment_GetClose(seg))))
    return out


def _seen(raw_obj: Any, stroke: bool) -> bool:
    """Whether the path's stroke (or fill) colour shows on white paper (`LIGHT`)."""
    import pypdfium2.raw as pdfium_c
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    get = pdfium_c.FPDFPageObj_GetStrokeColor if stroke else pdfium_c.FPDFPageObj_GetFillColor
    if not get(raw_obj, r, g, b, a):
        return True
    return a.value > 0 and 0.299 * r.value + 0.587 * g.value + 0.114 * b.value < LIGHT


def _stroked(points: list[tuple[int, float, float, bool]], m: Matrix) -> list[tuple[float, float, float, float]]:
    """The straight pieces of a stroked path, in page space (curves skipped)."""
    import pypdfium2.raw as pdfium_c
    a, b, c, d, e, f = m
    out = []
    start = cur = None
    for kind, x, y, closes in points:
        pt = (a * x + c * y + e, b * x + d * y + f)
        if kind == pdfium_c.FPDF_SEGMENT_MOVETO:
            start = cur = pt
            continue
        if kind == pdfium_c.FPDF_SEGMENT_LINETO and cur is not None:
            out.append((*cur, *pt))
        cur = pt
        if closes and start is not None:
            if cur != start:
                out.append((*cur, *start))
            cur = start
    return out


@dataclass
class Picture:
    """An image drawn on a page: `box` [x0, y0, x1, y1] in page pixels and `pixels()` its own pixels (BGR
    uint8, upright as drawn), read from the file when asked (while the file is open on this page)."""
    box: list[float]
    pixels: Callable[[], np.ndarray]


@dataclass
class Drawing:
    """What a page draws besides its text: straight strokes (None when pictures may hold rulings too),
    the pictures large enough to hold text (`IMAGE_SHARE` of the page or more), and its text objects drawn
    `visible` / `hidden` (render mode 3, invisible, or drawn before an image covering `BIG_IMAGE` of the
    page: a scan with an OCR layer; objects come in drawing order)."""
    segments: list[Segment] | None
    pictures: list[Picture] = field(default_factory=list)
    visible: int = 0
    hidden: int = 0


def _image_pixels(pdf: Any, page_index: int, object_index: int, flip_x: bool, flip_y: bool) -> np.ndarray:
    """Image object `object_index` (in page.get_objects order) of page `page_index`, at its own resolution,
    BGR, turned the way the page draws it."""
    page = pdf[page_index]
    try:
        obj = next(o for i, o in enumerate(page.get_objects(max_depth=8)) if i == object_index)
        bitmap = obj.get_bitmap(render=False)
        arr, mode = bitmap.to_numpy(), bitmap.mode
    finally:
        page.close()
    if arr.ndim == 2 or mode == "L":
        arr = np.repeat(arr.reshape(arr.shape[0], arr.shape[1], 1), 3, axis=2)
    elif mode in ("BGRA", "BGRX", "BGR"):
        arr = arr[:, :, :3]
    else:
        arr = arr[:, :, 2::-1]
    if flip_x:
        arr = arr[:, ::-1]
    if flip_y:
        arr = arr[::-1]
    return np.ascontiguousarray(arr)


def page_drawing(page: Any, to_pixels: tuple[float, float, float, float, float, float], pdf: Any = None,
                 page_index: int = 0) -> Drawing:
    """The page's straight strokes in pixels (module docstring), its large pictures and how many of its
    text objects are drawn visibly (`Drawing`), in one walk over its objects (`pdf` and
    `page_index`: the open document and the page's number, from which a picture's pixels are read when
    asked; without `pdf`, no pictures). `to_pixels` (a, b, c, d, e, f): px = a x + b y + e, py = c x +
    d y + f from PDF user space."""
    import pypdfium2.raw as pdfium_c
    pa, pb, pc, pd, pe, pf = to_pixels
    px_per_pt = (abs(pa * pd - pb * pc)) ** 0.5
    w_pt, h_pt = page.get_size()
    chain: list[Matrix] = [_IDENTITY]       # chain[L]: an object at level L's space -> page space
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    width = ctypes.c_float()
    out: list[Segment] = []
    pictures: list[Picture] = []
    big = False                             # an image of IMAGE_SHARE or more: the strokes are not all
    texts: list[bool] = []                  # per text object: visible by its render mode
    big_after = 0                           # text objects drawn before the last image of BIG_IMAGE or more

    def to_px(x0: float, y0: float, x1: float, y1: float, thick: float) -> Segment:
        return (pa * x0 + pb * y0 + pe, pc * x0 + pd * y0 + pf, pa * x1 + pb * y1 + pe, pc * x1 + pd * y1 + pf,
                max(1.0, thick * px_per_pt))

    for n, obj in enumerate(page.get_objects(max_depth=8)):
        level = obj.level
        del chain[level + 1:]
        if obj.type == pdfium_c.FPDF_PAGEOBJ_FORM:
            chain.append(_compose(chain[level], _matrix(obj.raw)))
            continue
        if obj.type == pdfium_c.FPDF_PAGEOBJ_TEXT:
            texts.append(pdfium_c.FPDFTextObj_GetTextRenderMode(obj.raw) != pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE)
            continue
        if obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            m = _compose(chain[level], _matrix(obj.raw))     # the unit square -> page space
            xs = [m[0] * u + m[2] * v + m[4] for u in (0, 1) for v in (0, 1)]
            ys = [m[1] * u + m[3] * v + m[5] for u in (0, 1) for v in (0, 1)]
            area = (max(xs) - min(xs)) * (max(ys) - min(ys))
            if area >= BIG_IMAGE * w_pt * h_pt:
                big_after = len(texts)
            if area < IMAGE_SHARE * w_pt * h_pt:
                continue
            big = True
            if pdf is not None and abs(m[1]) < 1e-6 and abs(m[2]) < 1e-6:    # drawn upright (no turn)
                px = [pa * x + pb * y + pe for x, y in zip(xs, ys)]
                py = [pc * x + pd * y + pf for x, y in zip(xs, ys)]
                # PDF image rows run top-down while y runs up: a positive d draws it upright on the page
                pictures.append(Picture([min(px), min(py), max(px), max(py)],
                                        functools.partial(_image_pixels, pdf, page_index, n, m[0] < 0, m[3] < 0)))
            continue
        if obj.type != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        raw = obj.raw
        if not pdfium_c.FPDFPath_GetDrawMode(raw, fill, stroke):
            continue
        m = _compose(chain[level], _matrix(raw))
        scale = (abs(m[0] * m[3] - m[1] * m[2])) ** 0.5
        points = _path_points(raw)
        if stroke.value and _seen(raw, True):
            thick = width.value if pdfium_c.FPDFPageObj_GetStrokeWidth(raw, width) else 1.0
            out += [to_px(*s, thick * scale) for s in _stroked(points, m)]
        elif fill.value != pdfium_c.FPDF_FILLMODE_NONE and points and not stroke.value and _seen(raw, False):
            a, b, c, d, e, f = m
            xs = [a * x + c * y + e for _, x, y, _ in points]
            ys = [b * x + d * y + f for _, x, y, _ in points]
            x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
            if y1 - y0 <= THIN_FILL_PT <= x1 - x0:
                out.append(to_px(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, y1 - y0))
            elif x1 - x0 <= THIN_FILL_PT <= y1 - y0:
                out.append(to_px((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1 - x0))
    hidden = sum(1 for i, seen in enumerate(texts) if not seen or i < big_after)
    return Drawing(None if big else out, pictures, len(texts) - hidden, hidden)
