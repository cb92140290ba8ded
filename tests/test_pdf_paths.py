"""Ruled lines of born-digital pages from the strokes the file draws (data/pdf_paths.py, data/ofd.py segments ->
models/ocr/rulings.py `rulings_from_segments`): exact, and no page is rendered unless someone looks at it."""
from __future__ import annotations

import ctypes
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import data.io
from data.document import box_to_quad
from data.io import iter_source_bytes
from models.ocr.rulings import find_rulings, is_vertical, rulings_from_segments
from reading import route

BORN = Path(__file__).parent / "data" / "born_digital"
K = 200 / 72          # points -> pixels at data.io's 200 dpi


def _path(pdf, page, points, *, stroke=(0, 0, 0), fill=None, width=0.5, close=False, curve=False) -> None:
    """One path object: `points` in PDF points (y up), stroked in `stroke` (None: not stroked), filled in
    `fill`; `curve` draws its second piece as a Bézier curve."""
    import pypdfium2.raw as c
    obj = c.FPDFPageObj_CreateNewPath(*points[0])
    for i, (x, y) in enumerate(points[1:]):
        if curve and i == 0:
            x0, y0 = points[0]
            c.FPDFPath_BezierTo(obj, x0 + 10, y0 + 30, x - 10, y + 30, x, y)
        else:
            c.FPDFPath_LineTo(obj, x, y)
    if close:
        c.FPDFPath_Close(obj)
    if stroke is not None:
        c.FPDFPageObj_SetStrokeColor(obj, *stroke, 255)
        c.FPDFPageObj_SetStrokeWidth(obj, width)
    if fill is not None:
        c.FPDFPageObj_SetFillColor(obj, *fill, 255)
    c.FPDFPath_SetDrawMode(obj, c.FPDF_FILLMODE_WINDING if fill is not None else c.FPDF_FILLMODE_NONE,
                           stroke is not None)
    c.FPDFPage_InsertObject(page.raw, obj)


def _form_pdf(*, big_image: bool = False) -> bytes:
    """A 400 x 200 pt page: a text line, a stroked box 40..360 x 40..160 split by a stroked line across at
    y 100, a hairline drawn as a thin filled rectangle at y 70, a white line (not seen on paper), a curve,
    a thick filled bar; `big_image` puts a picture over half the page."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as c
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(400, 200)
    obj = c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 12)
    buf = ctypes.create_string_buffer(("Name Value\x00").encode("utf-16-le"))
    c.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(c.FPDF_WCHAR)))
    c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 50, 130)
    c.FPDFPage_InsertObject(page.raw, obj)
    _path(pdf, page, [(40, 40), (360, 40), (360, 160), (40, 160)], close=True)       # the box
    _path(pdf, page, [(40, 100), (200, 100)])                                         # across, in two
    _path(pdf, page, [(203, 100), (360, 100)])                                        # pieces 3 pt apart
    _path(pdf, page, [(40, 69.8), (360, 69.8), (360, 70.2), (40, 70.2)], stroke=None, fill=(0, 0, 0), close=True)
    _path(pdf, page, [(40, 55), (360, 55)], stroke=(255, 255, 255))                  # white: not seen
    _path(pdf, page, [(60, 180), (120, 180)], curve=True)                            # a curve: no ruling
    _path(pdf, page, [(300, 170), (390, 170), (390, 195), (300, 195)], stroke=None, fill=(0, 0, 0), close=True)
    if big_image:
        img = pdfium.PdfImage.new(pdf)
        img.set_bitmap(pdfium.PdfBitmap.from_pil(Image.fromarray(np.full((50, 100, 3), 240, np.uint8))))
        img.set_matrix(pdfium.PdfMatrix().scale(300, 100).translate(0, 0))
        page.insert_obj(img)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def _source(data: bytes):
    [src] = list(iter_source_bytes(data, "form.pdf"))
    return src


def test_a_pdf_pages_strokes_are_read_in_page_pixels_and_only_the_ones_seen():
    src = _source(_form_pdf())
    assert src.page is not None and src.segments is not None
    h = src.page.height
    ys = sorted({round((s[1] + s[3]) / 2 / K) for s in src.segments if abs(s[1] - s[3]) < 1})
    # the box's bottom and top, the two pieces at 100 and the hairline at 70 (y flipped: pixels from the top)
    assert [round(h / K - y) for y in ys] == [160, 100, 70, 40]
    assert not any(abs((s[1] + s[3]) / 2 - (h - 55 * K)) < 2 for s in src.segments), "the white line is not seen"
    assert not any(s[1] < (200 - 165) * K for s in src.segments), "the curve and the thick bar are no strokes"
    hairline = [s for s in src.segments if abs((s[1] + s[3]) / 2 - (h - 70 * K)) < 2]
    assert len(hairline) == 1 and hairline[0][4] == pytest.approx(max(1.0, 0.4 * K), abs=0.05)


def test_the_ruled_lines_from_the_strokes_match_the_ones_found_in_the_rendered_page():
    src = _source(_form_pdf())
    quads = [ln.quad for ln in src.page.lines]
    vector = rulings_from_segments(src.segments, quads)
    found = find_rulings(src.picture(), quads)
    assert len(vector) == 6 and sum(is_vertical(r) for r in vector) == 2, vector      # 4 across, 2 down
    assert [r[1] for r in vector if not is_vertical(r)] == sorted(r[1] for r in vector if not is_vertical(r))
    across_100 = [r for r in vector if not is_vertical(r) and abs(r[1] - (200 - 100) * K) < 2]
    assert len(across_100) == 1 and across_100[0][2] - across_100[0][0] > 300 * K, "the two pieces are one ruling"
    for r in (r for r in found if r[1] > (200 - 165) * K):    # (the picture finder takes the bar's edge for one)
        # every ruling the picture shows in the form is there, within 3.5 px at both ends
        assert any(is_vertical(r) == is_vertical(v) and max(abs(a - b) for a, b in zip(r, v)) <= 3.5
                   for v in vector), r


def test_strokes_too_short_thick_slanted_or_far_apart_make_no_ruling():
    quads = [box_to_quad([0, 0, 100, 20])]          # text 20 px high: across >= 60 px, down >= 24 px
    segs = [(0, 10, 50, 10, 1), (55, 10, 70, 10, 1),          # 70 px with a 5 px gap: one ruling
            (0, 50, 40, 50, 1), (100, 50, 140, 50, 1),        # 40 px apart: two pieces, each too short
            (0, 90, 200, 90, 15),                             # thicker than half the text height
            (0, 120, 200, 160, 1),                            # slanted
            (300, 0, 300, 20, 1), (320, 0, 320, 30, 1)]       # down: 20 px too short, 30 px kept
    assert rulings_from_segments(segs, quads) == [[0, 10, 70, 10], [320, 0, 320, 30]]


def test_a_page_with_a_large_picture_finds_its_rulings_in_the_rendered_page():
    src = _source(_form_pdf(big_image=True))
    assert src.page is not None and src.segments is None, "a picture may hold a table of its own"


def test_a_born_digital_invoice_is_read_without_rendering_unless_someone_looks(monkeypatch):
    real = data.io._render_pdf_page
    calls: list[int] = []

    def counting(pdf, i, *args):
        calls.append(i)
        return real(pdf, i, *args)

    monkeypatch.setattr(data.io, "_render_pdf_page", counting)
    analysis = route.analyse_file(str(BORN / "metagpt_invoice_1.pdf"))
    page = analysis.document.pages[0]
    assert page.reader == "text_layer" and len(page.rules) >= 15 and calls == [], "no picture, rulings from the file"
    assert analysis.results[0].fields.get("invoice_number")
    seen: list[tuple[int, int]] = []
    drawn = route.analyse_file(str(BORN / "metagpt_invoice_1.pdf"), preview=400,
                               on_image=lambda image, page, result: seen.append(image.shape[:2]))
    assert calls == [0], "drawn once for the preview and the overlay"
    assert seen == [(page.height, page.width)] and len(drawn.images) == 1
    assert drawn.document.pages[0].rules == page.rules


def test_an_ofd_page_gives_its_strokes_and_is_drawn_only_when_asked(monkeypatch):
    import data.ofd
    monkeypatch.setattr(data.ofd, "draw_page", lambda *a: (_ for _ in ()).throw(AssertionError("drawn")))
    analysis = route.analyse_file(str(BORN / "ofdrw_keyword2.ofd"))
    assert analysis.document.error is None and analysis.document.pages[0].reader == "ofd"
    rules = analysis.document.pages[0].rules
    assert len(rules) >= 15 and any(is_vertical(r) for r in rules)


# --- text only a picture holds -----------------------------------------------------------------------------------

def _caption_and_scan_pdf(*, background: bool = False) -> bytes:
    """A 400 x 300 pt page: a typed caption (a text object) at the top and a pasted scan (a 1000 x 500 px
    picture of two printed lines) under it; `background`: the picture spans the page behind the caption and
    also prints the caption's words where the caption stands."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as c
    from PIL import ImageDraw

    from data.fonts import pil_font
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(400, 300)
    scan = Image.new("RGB", (1000, 750 if background else 500), (250, 250, 250))
    draw = ImageDraw.Draw(scan)
    font = pil_font("hei", 44)
    top = 250 if background else 0
    draw.text((60, top + 120), "发票号码：20431958", fill=(20, 20, 20), font=font)
    draw.text((60, top + 280), "价税合计：336.00", fill=(20, 20, 20), font=font)
    if background:
        draw.text((50, 24), "Expense claim", fill=(20, 20, 20), font=pil_font("hei", 60))   # under the caption
    img = pdfium.PdfImage.new(pdf)
    img.set_bitmap(pdfium.PdfBitmap.from_pil(scan))
    # the picture's box in points: under the caption (or the whole page behind it)
    img.set_matrix(pdfium.PdfMatrix().scale(400, 300 if background else 200).translate(0, 0))
    page.insert_obj(img)
    obj = c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 24)
    buf = ctypes.create_string_buffer(("Expense claim\x00").encode("utf-16-le"))
    c.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(c.FPDF_WCHAR)))
    c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 20, 270)
    c.FPDFPage_InsertObject(page.raw, obj)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


@pytest.mark.heavy
@pytest.mark.parametrize("background", [False, True])
def test_text_only_a_picture_holds_is_read_by_ocr_and_the_text_layer_kept(tmp_path, background):
    path = tmp_path / "claim.pdf"
    path.write_bytes(_caption_and_scan_pdf(background=background))
    [page] = route.read_file_pages(str(path))
    texts = [ln.text.replace(" ", "") for ln in page.lines]
    assert page.reader == "text_layer+ocr", "the caption from the text layer, the scan's lines by OCR"
    assert texts[0] == "Expenseclaim" and texts.count("Expenseclaim") == 1, \
        "the caption is the text layer's, not read twice where the picture prints it too"
    assert any("20431958" in t for t in texts) and any("336.00" in t for t in texts)
    number = next(ln for ln in page.lines if "20431958" in ln.text)
    # the scan's line stands where the picture prints it: 120 px of 500 (750) down the picture, in page pixels
    x0, y0, x1, y1 = number.box
    scan_top = 0 if background else 100 * K
    scan_h = (300 if background else 200) * K
    scan_px = 750 if background else 500
    top = 250 if background else 0
    assert abs(y0 - (scan_top + (top + 120) / scan_px * scan_h)) < 0.05 * scan_h
    assert x0 < 0.2 * page.width


def test_a_page_with_only_small_pictures_needs_no_ocr(monkeypatch):
    monkeypatch.setattr(route, "ocr_engine", lambda: (_ for _ in ()).throw(AssertionError("OCR loaded")))
    [page] = route.read_file_pages(str(BORN / "metagpt_invoice_1.pdf"))
    assert page.reader == "text_layer"
