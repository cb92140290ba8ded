"""The inference pipeline: every page of a file, timings per stage, models loaded once, and the error
policy (bad input -> Document.error, never an exception). Pages are small rendered text so real OCR
stays quick."""
from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from data.document import Document
from data.fonts import pil_font
from reading import route


def text_page(lines: list[str], size=(420, 60)) -> Image.Image:
    image = Image.new("RGB", (size[0], size[1] * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for i, text in enumerate(lines):
        draw.text((16, 14 + i * size[1]), text, fill="black", font=pil_font("hei", 28))
    return image


def pdf_bytes(pages: list[Image.Image]) -> bytes:
    buf = io.BytesIO()
    pages[0].save(buf, format="PDF", save_all=True, append_images=pages[1:], resolution=150)
    return buf.getvalue()


@pytest.mark.parametrize("data, name, words", [
    (b"", "empty.png", "empty"),
    (b"\x89PNG\r\n\x1a\n truncated", "cut.png", ""),
    (b"%PDF-1.7 this is not a pdf", "fake.pdf", ""),
    (b"hello world", "notes.txt", ""),
])
def test_bad_input_gives_an_error_document_not_an_exception(data, name, words):
    doc = route.process_bytes(data, name)
    assert isinstance(doc, Document) and doc.error is not None
    assert doc.error["type"] and len(doc.error["message"]) > 10
    assert words in doc.error["message"].lower()
    assert doc.pages == [] and "decode" in doc.timings and "total" in doc.timings


def test_unreadable_path_gives_an_error_document(tmp_path):
    doc = route.process_file(str(tmp_path / "missing.jpg"))
    assert doc.error["type"] in ("InputError", "FileNotFoundError") and doc.source == "missing.jpg"
    assert "missing.jpg" in doc.error["message"] and doc.pages == []


@pytest.mark.heavy
def test_pdf_pages_are_all_read_with_timings_and_models_loaded_once(tmp_path):
    pdf = tmp_path / "two.pdf"
    pdf.write_bytes(pdf_bytes([text_page(["发票号码 12345678"]), text_page(["合计金额 99.50"])]))
    seen = []
    analysis = route.analyse_file(str(pdf), on_page=lambda done, total: seen.append((done, total)), preview=200)
    doc = analysis.document
    assert doc.error is None, doc.error
    assert [p.index for p in doc.pages] == [0, 1] and seen == [(1, 2), (2, 2)]
    assert "12345678" in doc.pages[0].text and "99.50" in doc.pages[1].text
    # previews only: the longest side shrunk to 200 px, the page's proportions kept
    assert len(analysis.images) == 2 and max(analysis.image(0).shape[:2]) == 200
    h, w = analysis.image(0).shape[:2]
    assert abs(h / w - doc.pages[0].height / doc.pages[0].width) < 0.02
    for stage in ("decode", "ocr", "det", "rec", "total"):
        assert doc.timings[stage] > 0, stage
    assert doc.timings["total"] >= doc.timings["decode"] + doc.timings["ocr"] * 0.99
    # the same bytes through process_bytes give the same reading
    again = route.process_bytes(pdf.read_bytes(), "two.pdf")
    assert [p.text for p in again.pages] == [p.text for p in doc.pages]
    assert route.ocr_engine() is route.ocr_engine(), "the OCR engine is built once per process"
    assert Document.from_json(doc.to_json()) == doc


def test_read_quality_is_the_mean_score_of_text_lines():
    from data.document import Line, Page, box_to_quad
    from models.ocr import read_quality

    def page(scores):
        return Page(index=0, width=100, height=100,
                    lines=[Line(f"文字{i}", box_to_quad([0, i, 10, i + 1]), score=s) for i, s in enumerate(scores)]
                    + [Line("1", box_to_quad([0, 0, 1, 1]), score=0.1)])      # one character: not counted
    assert read_quality(page([0.9, 0.8, 0.7])) == 0.8
    assert read_quality(page([0.9, 0.8])) is None


def test_a_page_read_poorly_gets_a_warning_and_a_clean_one_does_not(monkeypatch):
    from data.document import Line, Page, box_to_quad
    from models.ocr import POOR_READ

    class Engine:
        def __init__(self, score, n=5):
            self.score, self.n = score, n

        def read(self, image, page_index=0, timings=None):
            return Page(index=page_index, width=image.shape[1], height=image.shape[0],
                        lines=[Line(f"第{i}行文字", box_to_quad([0, 10 * i, 50, 10 * i + 8]), score=self.score)
                               for i in range(self.n)])
    image = text_page(["发票号码 12345678"])
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    for score, warned in ((POOR_READ - 0.2, True), (0.99, False)):
        monkeypatch.setattr(route, "ocr_engine", lambda s=score: Engine(s))
        doc = route.process_bytes(buf.getvalue(), "p.png")
        assert doc.error is None
        assert any("page 1 reads poorly" in w for w in doc.warnings) is warned, doc.warnings
        assert not any("almost no text" in w for w in doc.warnings)
    monkeypatch.setattr(route, "ocr_engine", lambda: Engine(0.99, n=1))
    doc = route.process_bytes(buf.getvalue(), "p.png")
    assert any("page 1: almost no text was found (1 line(s))" in w for w in doc.warnings), doc.warnings
