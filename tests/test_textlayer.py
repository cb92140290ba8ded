"""data/textlayer.py: a PDF page's own text is used where it can be trusted (visible, mapped to Unicode), OCR
elsewhere; characters become lines the way OCR's detector cuts them; the pipeline then never calls OCR."""
from __future__ import annotations

import ctypes
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from data.document import Document
from data.io import iter_pages, iter_source_bytes, iter_source_pages
from data.textlayer import Glyph, group_lines, layer_problem, normalise_char, reader_setting
from reading import route
from tests.test_io import _pdf_from_objects

BORN = Path(__file__).parent / "data" / "born_digital"
INVOICE_PDF = BORN / "metagpt_invoice_1.pdf"


def _text_pdf(texts: list[tuple[str, float, float]], invisible: bool = False, image: str | None = None) -> bytes:
    """A 400 x 200 pt PDF with Helvetica text objects (text, x, y in points); `image`: "under" or "over"
    draws a page-sized scan before or after the text."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as c
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(400, 200)

    def add_image() -> None:
        obj = pdfium.PdfImage.new(pdf)
        scan = np.full((100, 200, 3), 240, np.uint8)
        obj.set_bitmap(pdfium.PdfBitmap.from_pil(Image.fromarray(scan)))
        obj.set_matrix(pdfium.PdfMatrix().scale(400, 200))
        page.insert_obj(obj)

    if image == "under":
        add_image()
    for text, x, y in texts:
        obj = c.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 14)
        buf = ctypes.create_string_buffer((text + "\x00").encode("utf-16-le"))
        c.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(c.FPDF_WCHAR)))
        if invisible:
            c.FPDFTextObj_SetTextRenderMode(obj, c.FPDF_TEXTRENDERMODE_INVISIBLE)
        c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
        c.FPDFPage_InsertObject(page.raw, obj)
    if image == "over":
        add_image()
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


def _no_tounicode_pdf() -> bytes:
    """A PDF whose CID font (Identity-H) has no ToUnicode map and no embedded font: its codes mean nothing."""
    content = b"BT /F1 24 Tf 40 100 Td <0041004200430044004500460047> Tj ET"
    return _pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /SimSun /Encoding /Identity-H /DescendantFonts [6 0 R] >>",
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /SimSun /CIDSystemInfo << /Registry (Adobe) "
        b"/Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R /DW 1000 >>",
        b"<< /Type /FontDescriptor /FontName /SimSun /Flags 4 /FontBBox [0 -200 1000 800] /ItalicAngle 0 "
        b"/Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>"])


def _only(data: bytes, **kw):
    [page] = list(iter_source_bytes(data, "t.pdf", **kw))
    return page


# --- which layers are used ---------------------------------------------------------------------------------

def test_a_pdf_with_a_visible_text_layer_is_read_from_it_in_page_pixels():
    src = _only(_text_pdf([("Invoice No 12345", 20, 150), ("Total 99.50", 20, 120), ("Total 99.50", 250, 120)]))
    assert src.page is not None and src.page.reader == "text_layer"
    assert src.image is None, "a page read from its text is not rendered unless someone looks at it"
    assert src.picture().shape[:2] == (src.page.height, src.page.width)
    assert [ln.text for ln in src.page.lines] == ["Invoice No 12345", "Total 99.50", "Total 99.50"], \
        "typed spaces kept, two texts far apart on one row are two lines"
    x0, y0, x1, y1 = src.page.lines[0].box
    k = 200 / 72                                     # points -> pixels at data.io's 200 dpi, y flipped
    assert abs(x0 - 20 * k) < 3 and y0 < (200 - 150) * k < y1


@pytest.mark.parametrize("data, why", [
    (lambda: _text_pdf([("Invoice No 12345", 20, 150)], invisible=True), "invisible OCR layer of a scanner"),
    (lambda: _text_pdf([("Invoice No 12345", 20, 150)], image="over"), "text hidden under a page-sized scan"),
    (_no_tounicode_pdf, "CID font without a ToUnicode map"),
    (lambda: _text_pdf([]), "no text at all"),
])
def test_an_untrustworthy_or_missing_text_layer_goes_to_ocr(data, why):
    src = _only(data())
    assert src.page is None, why
    assert src.image.ndim == 3 and src.image.dtype == np.uint8


def test_text_drawn_over_a_page_sized_background_image_is_used():
    src = _only(_text_pdf([("Invoice No 12345", 20, 150)], image="under"))
    assert src.page is not None and [ln.text for ln in src.page.lines] == ["Invoice No 12345"]


def test_a_scanned_pdf_has_no_layer_and_its_pages_come_as_before():
    buf = io.BytesIO()
    Image.new("RGB", (300, 200), (250, 250, 250)).save(buf, format="PDF")
    src = _only(buf.getvalue())
    assert src.page is None
    [image] = list(iter_source_bytes(buf.getvalue(), "scan.pdf", reader="ocr"))
    assert np.array_equal(image.image, src.image)


def test_layer_problem_names_unmapped_private_use_and_replacement_characters():
    assert layer_problem([ord(c) for c in "发票号码12345678"], 0, 3, 0) is None
    assert "no Unicode mapping" in layer_problem([0xE001, 0xE002, ord("a")], 0, 1, 0)
    assert "no Unicode mapping" in layer_problem([0xFFFD] * 3 + [ord("a")] * 10, 0, 1, 0)
    assert "no Unicode mapping" in layer_problem([ord("a")] * 10, 5, 1, 0)
    assert "hidden" in layer_problem([ord("a")], 0, 0, 2)
    assert layer_problem([], 0, 0, 0) == "the page has no text layer"


def test_the_reader_can_be_forced_to_ocr(monkeypatch):
    data = _text_pdf([("Invoice No 12345", 20, 150)])
    assert _only(data, reader="ocr").page is None
    monkeypatch.setenv("PIAOJU_READER", "ocr")
    assert _only(data).page is None and reader_setting() == "ocr"
    monkeypatch.setenv("PIAOJU_READER", "magic")
    with pytest.raises(ValueError, match="PIAOJU_READER"):
        reader_setting()


# --- characters and lines ------------------------------------------------------------------------------------

def test_kangxi_radicals_and_compatibility_ideographs_are_normalised_full_width_forms_kept():
    assert normalise_char("\u2f26") == "子" and normalise_char("\u2f08") == "人"      # ⼦ ⼈ Kangxi radicals
    assert normalise_char("\uf9b2") == "零"                                         # CJK compatibility ideograph
    assert normalise_char("：") == "：" and normalise_char("（") == "（" and normalise_char("１") == "１"


def _glyphs(text: str, x: float, y: float, w: float = 20, h: float = 20, step: float | None = None) -> list[Glyph]:
    step = step or w
    return [Glyph(ch, [x + i * step, y, x + i * step + w, y + h]) for i, ch in enumerate(text)]


def test_glyphs_group_into_rows_split_at_wide_gaps_with_spaces_only_between_half_width_characters():
    glyphs = (_glyphs("名称：", 0, 100) + _glyphs("北京科技", 100, 101)        # 40 px gap: 2 heights -> cut
              + _glyphs("深圳蛋糕", 0, 140, step=28)                         # letter-spaced Chinese: one line, no space
              + _glyphs("10905", 0, 180, w=10) + _glyphs("47488", 58, 180, w=10)    # 8 px = 0.4 height: a space
              + [Glyph(" ", [0, 0, 5, 5])])
    lines = group_lines(list(reversed(glyphs)))
    assert [ln.text for ln in lines] == ["名称：", "北京科技", "深圳蛋糕", "10905 47488"]
    assert lines[1].box == [100.0, 101.0, 180.0, 121.0]


def test_the_born_digital_invoice_reads_its_exact_text_as_ocr_cuts_it():
    [src] = list(iter_source_pages(INVOICE_PDF))
    assert src.page is not None and src.page.reader == "text_layer"
    texts = [ln.text for ln in src.page.lines]
    for expected in ("某地增值税电子普通发票", "发票代码：00100210001", "发票号码：07099363",
                     "校验码：10014 32002 33198 00000", "称：深圳蛋糕餐饮有限公司", "（小写）¥412.00",
                     "纳税人识别号：91011111AA2AAAAA00", "*日用杂品*灵感保温袋"):
        assert expected in texts, expected
    assert "购" in texts and "名" in texts, "a vertical label and the field beside it are separate lines, as in OCR"
    [image] = list(iter_pages(INVOICE_PDF))
    assert np.array_equal(image, src.picture()), "the OCR route's image (drawn after the file was closed)"


# --- the pipeline ------------------------------------------------------------------------------------------------

class _NoOCR:
    def read(self, *a, **kw):
        raise AssertionError("OCR was called for a page with a usable text layer")


def test_the_pipeline_reads_a_text_layer_pdf_without_ocr(monkeypatch):
    monkeypatch.setattr(route, "ocr_engine", lambda: _NoOCR())
    a = route.analyse_file(str(INVOICE_PDF))
    doc = a.document
    assert doc.error is None, doc.error
    assert [p.reader for p in doc.pages] == ["text_layer"]
    assert doc.timings["text_layer"] > 0 and doc.timings["ocr"] == 0.0
    assert doc.pages[0].rules, "ruled lines are found on the rendered page"
    values = doc.values()
    assert values.get("invoice_number") == "07099363" and values.get("seller_name") == "深圳蛋糕餐饮有限公司"
    back = Document.from_json(doc.to_json())
    assert back.pages[0].reader == "text_layer" and json.loads(doc.to_json())["pages"][0]["reader"] == "text_layer"


def test_a_pdf_page_without_a_layer_is_still_ocrd(monkeypatch):
    from data.document import Page

    calls = []

    class Engine:
        def read(self, image, page_index=0, timings=None):
            calls.append(image.shape)
            return Page(index=page_index, width=image.shape[1], height=image.shape[0])

    monkeypatch.setattr(route, "ocr_engine", lambda: Engine())
    buf = io.BytesIO()
    Image.new("RGB", (300, 200), (250, 250, 250)).save(buf, format="PDF")
    doc = route.analyse_bytes(buf.getvalue(), "scan.pdf", preview=None).document
    assert len(calls) == 1 and [p.reader for p in doc.pages] == ["ocr"]
