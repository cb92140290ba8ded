"""data/ofd.py: real OFD e-invoices give their pages, lines, custom data and semantic tags from the XML; a zip
bomb, a path out of the document, a DOCTYPE/entity, an encrypted or damaged file give a clear InputError."""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from app.batch.inputs import expand_inputs, is_document
from data.io import InputError, iter_pages, iter_source_pages, page_count, page_count_bytes, sniff
from data.ofd import expand_deltas, read_ofd
from reading import route

BORN = Path(__file__).parent / "data" / "born_digital"


def _ofd(members: dict[str, bytes | str], encrypted: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    out = bytearray(buf.getvalue())
    if encrypted:     # zipfile cannot write encrypted members: set the "encrypted" flag bit in both headers
        for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            pos = out.find(sig)
            while pos >= 0:
                out[pos + at] |= 0x1
                pos = out.find(sig, pos + 4)
    return bytes(out)


NS = 'xmlns:ofd="http://www.ofdspec.org/2016"'
OFD_XML = f'<ofd:OFD {NS}><ofd:DocBody><ofd:DocRoot>Doc_0/Document.xml</ofd:DocRoot></ofd:DocBody></ofd:OFD>'
DOC_XML = (f'<ofd:Document {NS}><ofd:CommonData><ofd:PageArea><ofd:PhysicalBox>0 0 100 50</ofd:PhysicalBox>'
           '</ofd:PageArea></ofd:CommonData><ofd:Pages><ofd:Page ID="1" BaseLoc="{loc}"/></ofd:Pages></ofd:Document>')
PAGE_XML = (f'<ofd:Page {NS}><ofd:Content><ofd:Layer ID="2">'
            '<ofd:TextObject ID="3" Boundary="10 10 60 6" Font="1" Size="4"><ofd:TextCode X="0" Y="4" '
            'DeltaX="g 3 4">发票号码</ofd:TextCode></ofd:TextObject></ofd:Layer></ofd:Content></ofd:Page>')


def _minimal(loc: str = "Pages/Page_0/Content.xml", **extra: bytes | str) -> bytes:
    return _ofd({"OFD.xml": OFD_XML, "Doc_0/Document.xml": DOC_XML.replace("{loc}", loc),
                 "Doc_0/Pages/Page_0/Content.xml": PAGE_XML, **extra})


# --- real files ------------------------------------------------------------------------------------------------

def test_real_ofd_invoices_give_their_pages_and_exact_lines():
    expected = {
        "ofdrw_999.ofd": (5, ["重庆增值税电子普通发票", "发票号码：12235358", "称：财天下科技有限公司",
                              "（小写）¥10600.00", "开票日期：2020年08月05日"]),
        "ofdrw_keyword2.ofd": (1, ["江苏增值税电子普通发票", "发票代码：032001600511",
                                   "校验码：01897 10905 47488 98321", "称：上海后衍品牌管理有限公司钟楼分公司",
                                   "*印刷品*POP制作费"]),
        "ofdrw_v4signed.ofd": (1, ["发票号码：99999951", "称：杭州融易算企业管理咨询有限公司",
                                   "纳税人识别号：91500106MA2CE71F65", "（小写）¥318.00"]),
    }
    for name, (pages, texts) in expected.items():
        path = BORN / name
        assert sniff(path.read_bytes()[:1024]) == "ofd" and page_count(path) == pages
        read = list(iter_source_pages(path))
        assert len(read) == pages and all(sp.page is not None and sp.page.reader == "ofd" for sp in read)
        first = read[0]
        assert first.image is None and first.picture().shape == (1102, 1654, 3), \
            "not drawn until asked: 210 x 140 mm at 200 dpi"
        assert (first.page.width, first.page.height) == (1654, 1102)
        lines = [ln.text for ln in first.page.lines]
        for text in texts:
            assert text in lines, (name, text)
        [image] = list(iter_pages(path, page_range=(0, 1)))
        assert image.shape == first.picture().shape and (image < 128).any(), "a drawn page for the overlay"


def test_custom_data_and_semantic_tags_are_kept():
    doc = read_ofd((BORN / "ofdrw_999.ofd").read_bytes(), "999.ofd")
    assert doc.custom_data["发票号码"] == "12235358" and doc.custom_data["价税合计"] == "10600.00"
    assert doc.tags["InvoiceNo"] == "12235358" and doc.tags["SellerName"] == "财天下科技有限公司"
    assert doc.tags["TaxInclusiveTotalAmount"] == "¥10600.00"
    # keyword2's tag file is not well-formed XML (<:eInvoice xmlns:="">): its tags are skipped, its pages read
    doc = read_ofd((BORN / "ofdrw_keyword2.ofd").read_bytes(), "keyword2.ofd")
    assert doc.tags == {} and doc.custom_data["发票号码"] == "31471858" and len(doc.pages) == 1


def test_delta_lists_expand_the_g_shorthand():
    assert expand_deltas("g 3 1.5 2 g 2 0") == [1.5, 1.5, 1.5, 2.0, 0.0, 0.0]


def test_the_pipeline_reads_an_ofd_without_ocr(monkeypatch):
    class NoOCR:
        def read(self, *a, **kw):
            raise AssertionError("OCR was called for an OFD page")

    monkeypatch.setattr(route, "ocr_engine", lambda: NoOCR())
    doc = route.analyse_file(str(BORN / "ofdrw_v4signed.ofd")).document
    assert doc.error is None, doc.error
    assert [p.reader for p in doc.pages] == ["ofd"] and doc.timings["ocr"] == 0.0
    values = doc.values()
    assert values.get("invoice_number") == "99999951" and values.get("total_with_tax") == "318.00"
    assert values.get("seller_name") == "杭州融易算企业管理咨询有限公司"


def test_batch_and_upload_accept_ofd(tmp_path):
    (tmp_path / "a.ofd").write_bytes((BORN / "ofdrw_v4signed.ofd").read_bytes())
    (tmp_path / "notes.txt").write_text("x")
    assert is_document("X.OFD")
    found = expand_inputs([str(tmp_path)])
    assert [Path(p).name for p in found.files] == ["a.ofd"]
    from app.ui.main import UPLOAD_TYPES
    assert "ofd" in UPLOAD_TYPES


# --- bad input -----------------------------------------------------------------------------------------------

def test_a_minimal_ofd_is_read():
    [src] = list(iter_source_pages_bytes(_minimal()))
    assert [ln.text for ln in src.page.lines] == ["发票号码"]
    assert src.picture().shape[:2] == (394, 787)


def iter_source_pages_bytes(data: bytes):
    from data.io import iter_source_bytes
    return iter_source_bytes(data, "t.ofd")


@pytest.mark.parametrize("data, words", [
    (lambda: _minimal(**{"Doc_0/Res/bomb.bin": b"\0" * 4_000_000}), "zip bomb"),
    (lambda: _minimal(loc="../../../etc/passwd"), "outside the document"),
    (lambda: _ofd({"OFD.xml": '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
                              f'<ofd:OFD {NS}><ofd:DocBody><ofd:DocRoot>&e;</ofd:DocRoot></ofd:DocBody></ofd:OFD>'}),
     "DOCTYPE"),
    (lambda: _minimal()[:-40], "damaged OFD"),
    (lambda: _ofd({"word/document.xml": "<x/>"}), "not an OFD document"),
    (lambda: _ofd({"OFD.xml": OFD_XML}, encrypted=True), "encrypted"),
    (lambda: _ofd({"OFD.xml": "<ofd:OFD"}), "not well-formed"),
    (lambda: _minimal(loc="Pages/Page_9/Content.xml"), "missing"),
])
def test_bad_ofds_give_a_clear_input_error(data, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blob = data()
    with pytest.raises(InputError, match=words):
        page_count_bytes(blob, "bad.ofd") and list(iter_source_pages_bytes(blob))
    with pytest.raises(InputError, match=words):
        list(iter_source_pages_bytes(blob))
    assert list(tmp_path.iterdir()) == [], "nothing is written anywhere"
    doc = route.analyse_bytes(blob, "bad.ofd", preview=None).document
    assert doc.error is not None and doc.error["type"] == "InputError"


def test_the_drawn_page_shows_each_character_in_its_colour():
    """draw_page stamps each character where its glyph box is, in the text object's colour (BGR image)."""
    from data.ofd import OfdPage, OfdText, draw_page
    from data.textlayer import Glyph
    glyphs = [Glyph("发", [20.0, 20.0, 60.0, 60.0]), Glyph("票", [60.0, 20.0, 100.0, 60.0]),
              Glyph("发", [100.0, 20.0, 140.0, 60.0])]
    page = OfdPage(index=0, width_mm=40.0, height_mm=20.0, texts=[OfdText("1", glyphs, 40.0, (200, 30, 10))],
                   segments=[])
    img = draw_page(page, 5.0)             # 200 x 100 px
    assert img.shape == (100, 200, 3) and img.flags.writeable
    for g in glyphs:
        x0, y0, x1, y1 = (int(v) for v in g.box)
        cell = img[y0:y1, x0:x1].reshape(-1, 3)
        inked = cell[(cell != 255).any(1)]
        assert len(inked) > 40                                      # the character is drawn in its box
        assert (inked[:, 0] < inked[:, 2]).mean() > 0.9             # red ink: B < R in a BGR image
    assert (img[:, 150:] == 255).all()                              # nothing right of the text


def _plain_pil_drawing(page, k: float):
    """The page drawn the plain way: an RGB PIL image, each glyph rendered for this page, then an array."""
    import numpy as np
    from PIL import Image, ImageDraw

    from data.fonts import pil_font
    from data.ofd import DESCENT
    w, h = max(1, round(page.width_mm * k)), max(1, round(page.height_mm * k))
    img = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, width in page.segments:
        draw.line([(x0, y0), (x1, y1)], fill=(60, 60, 60), width=max(1, round(width)))
    for text in page.texts:
        font = pil_font("song", max(6, round(text.size_px)))
        for g in text.glyphs:
            left, top, right, bottom = font.getbbox(g.text, anchor="ls")
            mask = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
            ImageDraw.Draw(mask).text((-left, -top), g.text, font=font, fill=255, anchor="ls")
            baseline = g.box[3] - DESCENT * (g.box[3] - g.box[1])
            img.paste(tuple(text.colour[::-1]), (round(g.box[0]) + left, round(baseline) + top), mask)
    return np.array(img)


@pytest.mark.parametrize("name", ["ofdrw_999.ofd", "ofdrw_keyword2.ofd"])
def test_the_drawn_page_is_the_plain_pil_drawing_pixel_for_pixel(name):
    """draw_page draws into its own array and keeps glyphs between pages: the image (and so the ruled lines
    found on it) is exactly the plain PIL drawing's, on the first page and on every page drawn from the
    glyphs kept, drawn again too."""
    import numpy as np

    from data import ofd
    doc = read_ofd((BORN / name).read_bytes(), name, 200)
    k = 200 / ofd.MM_PER_INCH
    ofd._GLYPHS.clear()
    for page in doc.pages + doc.pages[:1]:
        img = ofd.draw_page(page, k)
        assert img.dtype == np.uint8 and img.flags.c_contiguous and img.flags.writeable
        assert np.array_equal(img, _plain_pil_drawing(page, k))
    assert ofd._GLYPHS, "the glyphs are kept for the next page"
