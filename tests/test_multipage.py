"""Files holding several pages and several documents: each page with text is a document of its own,
extracted from its own page only; blank pages are skipped with a note; pages are processed one at a
time (one full-size page image alive at a time); a per-document pixel cap refuses pixel-bomb files.

The light tests stand a fake OCR engine in for PP-OCR; the heavy ones (real OCR, kept to a few pages)
are the reported cases: the sample invoice plus a blank back page, two invoices in one PDF, a 3-page
TIFF."""
from __future__ import annotations

import gc
import io
import json
import weakref
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from bench.memory_bench import blank_pdf_bytes
from data.document import Document, Field, Line, Page, Pair, box_to_quad
from data.fonts import pil_font
from reading import route
from reading.route import Analysis


@pytest.fixture(scope="session")
def sample(samples_dir: Path) -> Path:
    """The real mock e-invoice, from the repository's own samples (tests/data, or SAMPLES_DIR)."""
    return samples_dir / "img" / "metagpt_invoice_1.png"


# --- a fake OCR engine: a page "reads" the text drawn into its first pixel row ----------------------------

class FakeEngine:
    """Reads `lines_per_page[i]` lines on page i (0 lines: a blank page); rotation 0."""

    def __init__(self, lines_per_page: list[int]) -> None:
        self.lines_per_page = lines_per_page

    def read(self, image, page_index=0, timings=None):
        n = self.lines_per_page[page_index]
        if timings is not None:
            timings["det"] = timings.get("det", 0.0) + 0.001
        return Page(index=page_index, width=image.shape[1], height=image.shape[0],
                    lines=[Line(f"第{page_index + 1}页第{i}行文字", box_to_quad([10, 20 * i, 200, 20 * i + 16]), 0.98)
                           for i in range(n)])


@pytest.fixture()
def ocr_only(monkeypatch):
    """Fake OCR, no extraction model (so no model is loaded): the splitting and memory rules alone."""
    def use(lines_per_page: list[int]) -> None:
        monkeypatch.setattr(route, "ocr_engine", lambda: FakeEngine(lines_per_page))
    monkeypatch.setattr(route, "extractor_available", lambda model_dir=None: False)
    return use


def tiff_bytes(pages: list[Image.Image]) -> bytes:
    buf = io.BytesIO()
    pages[0].save(buf, format="TIFF", save_all=True, append_images=pages[1:])
    return buf.getvalue()


def white(size=(300, 400)) -> Image.Image:
    return Image.new("RGB", size, "white")


# --- the Document shape -----------------------------------------------------------------------------------

def test_part_and_parts_round_trip_and_old_json_still_loads():
    doc = Document(source="a.pdf", pages=[Page(index=2, width=10, height=10)], part=2, parts=3)
    again = Document.from_json(doc.to_json())
    assert (again.part, again.parts, again.page_numbers()) == (2, 3, [3])
    old = json.loads(doc.to_json())
    del old["part"], old["parts"]
    assert (Document.from_dict(old).part, Document.from_dict(old).parts) == (1, 1)


# --- splitting ----------------------------------------------------------------------------------------------

def test_each_page_with_text_is_a_result_and_blank_pages_are_skipped_with_a_note(ocr_only):
    ocr_only([0, 5, 0, 4, 0])      # blank, text, blank, text, blank
    a = route.analyse_bytes(tiff_bytes([white() for _ in range(5)]), "five.tif")
    assert a.document.error is None and len(a.document.pages) == 5
    assert [r.page_numbers() for r in a.results] == [[2], [4]]
    assert [(r.part, r.parts, r.source) for r in a.results] == [(1, 2, "five.tif"), (2, 2, "five.tif")]
    assert all(p.index == i for i, p in enumerate(a.document.pages)), "Page.index stays the index in the file"
    first, second = (r.warnings for r in a.results)
    # a leading blank page is noted in the first result, a blank page in the result before it
    assert any("page 1 of 5 was skipped as blank" in w for w in first)
    assert any("page 3 of 5 was skipped as blank" in w for w in first)
    assert any("page 5 of 5 was skipped as blank" in w for w in second)
    assert not any("page 3 of 5" in w for w in second)
    assert "2 documents" in a.document.warnings[0] and a.document.fields == {}


def test_a_file_with_no_text_gives_one_result_with_all_pages(ocr_only):
    ocr_only([0, 1])
    a = route.analyse_bytes(tiff_bytes([white(), white()]), "empty.tif")
    assert len(a.results) == 1 and a.results[0].page_numbers() == [1, 2]
    assert any("page 2: almost no text was found (1 line(s))" in w for w in a.results[0].warnings)
    assert a.document.warnings == a.results[0].warnings, "one document: the file document carries it"


def test_one_result_per_document_reaches_batch_rows_csv_and_extract_json(ocr_only, tmp_path, monkeypatch, capsys):
    from app.batch.csv_out import BASE_COLUMNS, csv_record
    from app.batch.worker import _Drawer, result_rows
    ocr_only([3, 0, 3, 3])
    path = tmp_path / "three.tif"
    path.write_bytes(tiff_bytes([white() for _ in range(4)]))
    drawer = _Drawer(str(path), "abc", str(tmp_path / "draw"))     # batch --draw: each page as it is done
    a = route.analyse_file(str(path), on_image=drawer)
    rows = result_rows(a, str(path), "abc", drawer)
    assert [(r["part"], r["parts"], [p["index"] for p in r["pages"]]) for r in rows] == \
        [(1, 3, [0]), (2, 3, [2]), (3, 3, [3])]
    # the blank page 2's overlay goes with the result that notes it
    assert [[Path(o).name for o in r["overlays"]] for r in rows] == \
        [["three_abc_p1.png", "three_abc_p2.png"], ["three_abc_p3.png"], ["three_abc_p4.png"]]
    assert all(Path(o).is_file() for r in rows for o in r["overlays"])
    assert all(r["file"] == str(path) and r["sha256"] == "abc" for r in rows)
    record = dict(zip(BASE_COLUMNS, csv_record(rows[1], [])))
    assert (record["part"], record["parts"], record["page"]) == ("2", "3", "3")

    from app.extract_cmd import main
    assert main([str(path), "--json", str(tmp_path / "out.json")]) == 0
    printed = capsys.readouterr().out
    assert "three.tif — document 2 of 3, page 3" in printed
    written = [json.loads(line) for line in (tmp_path / "out.json").read_text(encoding="utf-8").splitlines()]
    assert [d["part"] for d in written] == [1, 2, 3], "a file of several documents: JSON Lines, one per document"


def test_a_failed_file_gives_one_error_row(tmp_path):
    from app.batch.worker import result_rows
    a = route.analyse_file(str(tmp_path / "missing.pdf"))
    [row] = result_rows(a, "missing.pdf", "")
    assert (row["part"], row["parts"]) == (1, 1) and row["error"]["type"] in ("InputError", "FileNotFoundError")


# --- memory: one page at a time -------------------------------------------------------------------------------

class Tracked(np.ndarray):
    """An ndarray that can be weakly referenced, to see which pages the pipeline still holds."""


def test_the_pipeline_holds_one_full_size_page_at_a_time(ocr_only):
    ocr_only([3, 0, 3, 3, 0, 3])
    alive: list[weakref.ref] = []
    held_when_decoding: list[int] = []
    sunk: list[tuple[int, tuple[int, ...]]] = []

    def pages():
        for _ in range(6):
            gc.collect()
            held_when_decoding.append(sum(r() is not None for r in alive))
            page = np.full((3000, 2000, 3), 255, np.uint8).view(Tracked)
            alive.append(weakref.ref(page))
            yield page
            del page

    def sink(image, page, result):
        sunk.append((page.index, image.shape))     # drawn here; not kept

    a = route.analyse_pages(pages(), 6, "six.pdf", preview=400, on_image=sink)
    assert a.document.error is None and len(a.results) == 4
    assert held_when_decoding == [0] * 6, "no earlier page is alive when the next one is decoded"
    gc.collect()
    assert not any(r() is not None for r in alive), "no full-size page outlives the call"
    assert [s[0] for s in sunk] == list(range(6)) and all(s[1] == (3000, 2000, 3) for s in sunk)
    previews = [a.image(i) for i in range(len(a.images))]
    assert len(previews) == 6 and all(im.shape == (400, 267, 3) for im in previews), "previews only"
    assert all(isinstance(im, bytes) and len(im) < 50_000 for im in a.images), "kept encoded"


def test_file_pages_are_decoded_lazily_and_dropped(ocr_only, tmp_path):
    """Through data.io: the PDF page generator keeps no page after handing it over."""
    ocr_only([0] * 4)
    held = []

    def sink(image, page, result):
        held.append(image)          # a sink that keeps pages is the caller's choice; count what io keeps
    path = tmp_path / "four.pdf"
    path.write_bytes(blank_pdf_bytes(4, 595, 842))
    a = route.analyse_file(str(path), on_image=sink)
    assert len(a.document.pages) == 4 and a.images == [], "extract/batch keep no page images"
    assert len({id(h) for h in held}) == 4 and held[0].shape == (2339, 1653, 3)


# --- the pixel cap ------------------------------------------------------------------------------------------

def test_a_file_of_many_huge_pages_is_refused_before_rendering():
    from data.io import MAX_DOC_PIXELS, InputError, iter_image_bytes
    data = blank_pdf_bytes(500, 14400, 14400)      # 500 pages of 200 x 200 inches, ~50 KB
    assert len(data) < 64 * 1024
    with pytest.raises(InputError, match="MAX_DOC_PIXELS") as err:
        iter_image_bytes(data, "bomb.pdf")
    assert "500 page(s)" in str(err.value) and f"{MAX_DOC_PIXELS:,}" in str(err.value)
    doc = route.process_bytes(data, "bomb.pdf")
    assert doc.error["type"] == "InputError" and "page range" in doc.error["message"] and doc.pages == []


def test_the_pixel_cap_counts_every_tiff_frame(tmp_path):
    from data.io import InputError, iter_pages
    path = tmp_path / "three.tif"
    path.write_bytes(tiff_bytes([white((100, 100))] * 3))
    assert len(list(iter_pages(path, max_doc_pixels=30_000))) == 3
    with pytest.raises(InputError, match="3 page.*30,000 pixels"):
        iter_pages(path, max_doc_pixels=29_999)


# --- the UI: several documents in one upload -------------------------------------------------------------------

def _ui_upload(monkeypatch, tmp_path, fake, name: str, pages: int):
    """The UI (Streamlit's AppTest) with the pipeline replaced by `fake`, after uploading a TIFF of blank pages."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setattr(route, "analyse_bytes", fake)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    monkeypatch.setenv("PIAOJU_CORRECTIONS_DIR", str(tmp_path / "corrections"))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "ui" / "main.py"), default_timeout=60)
    at.run()
    at.file_uploader[0].set_value([(name, tiff_bytes([white((300, 200))] * pages), "image/tiff")])
    at.run()
    assert not at.exception, at.exception
    return at


def test_ui_shows_each_document_of_a_file_and_saves_the_right_page(monkeypatch, tmp_path):
    def fake(data, filename, model_dir=None, doc_type=None, on_page=None, on_stage=None):
        pages = [Page(index=i, width=300, height=200,
                      lines=[Line(f"发票号码：1000000{i}", box_to_quad([20, 20, 200, 40]))]) for i in range(3)]
        results = []
        for part, i in ((1, 0), (2, 2)):        # page 2 (index 1) was blank
            doc = Document(source=filename, pages=[pages[i]], doc_type="vat_invoice", part=part, parts=2)
            doc.fields["invoice_number"] = Field("invoice_number", f"1000000{i}", raw=f"1000000{i}", page=i,
                                                 box=[95, 20, 200, 40], label="发票号码")
            results.append(doc)
        previews = [np.full((100, 150, 3), 255, np.uint8) for _ in pages]     # half-size previews
        return Analysis(Document(source=filename, pages=pages), previews, results)

    at = _ui_upload(monkeypatch, tmp_path, fake, "two.tif", 3)
    picker = [s for s in at.selectbox if s.label == "文件内文档 Document in this file"][0]
    assert picker.options == ["第 1/2 份 Document 1 of 2 — page 1", "第 2/2 份 Document 2 of 2 — page 3"]
    picker.set_value(1).run()
    assert not at.exception, at.exception
    table = at.data_editor[0].value
    assert list(table[table["key"] == "invoice_number"]["识别值 Value"]) == ["10000002"]
    at.checkbox[0].check().run()            # the page is marked 已核对 (checked): only such pages are saved
    [b for b in at.button if "Save checked pages" in b.label][0].click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    corpus = Path(tmp_path / "corrections" / "corpus.jsonl")
    [record] = [json.loads(ln) for ln in corpus.read_text(encoding="utf-8").splitlines()]
    assert record["fields"]["invoice_number"]["value"] == "10000002"
    assert record["lines"][0]["text"] == "发票号码：10000002", "the record holds page 3 of the file"


def test_ui_overview_of_a_file_counts_each_documents_fields_items_and_pairs(monkeypatch, tmp_path):
    """A file holding an invoice and a form: the overview says what each holds, so a form (no schema
    fields, its key-value pairs instead) does not look like a document that yielded nothing."""

    def fake(data, filename, model_dir=None, doc_type=None, on_page=None, on_stage=None):
        pages = [Page(index=i, width=300, height=200, lines=[Line("x", box_to_quad([20, 20, 200, 40]))])
                 for i in range(2)]
        invoice = Document(source=filename, pages=[pages[0]], doc_type="vat_invoice", part=1, parts=2)
        invoice.fields["invoice_number"] = Field("invoice_number", "10000000", page=0, box=[95, 20, 200, 40])
        invoice.items = [{"name": Field("name", "*餐饮*餐费", page=0, box=[20, 60, 120, 80])}]
        form = Document(source=filename, pages=[pages[1]], doc_type="generic_form", part=2, parts=2)
        form.pairs = [Pair(key=k, value=v, key_box=[20, 20, 60, 40], value_box=[70, 20, 120, 40], page=1,
                           score=0.9) for k, v in (("姓名", "张三"), ("电话", "13800000000"))]
        return Analysis(Document(source=filename, pages=pages), [np.full((100, 150, 3), 255, np.uint8)] * 2,
                        [invoice, form])

    at = _ui_upload(monkeypatch, tmp_path, fake, "both.tif", 2)
    overview = at.dataframe[0].value
    assert list(overview["字段 Fields"]) == [1, 0]
    assert list(overview["明细 Items"]) == [1, 0]
    assert list(overview["键值对 Pairs"]) == [0, 2]


def test_overlay_on_a_preview_scales_the_boxes():
    from app.ui.view import page_overlay
    page = Page(index=0, width=1000, height=800, lines=[])
    doc = Document(pages=[page], fields={"x": Field("x", "1", box=[500, 400, 600, 480], page=0, label="x")})
    small = page_overlay(np.full((400, 500, 3), 255, np.uint8), page, doc)
    assert small.shape[:2] == (400, 500)
    ink = np.argwhere((small != 255).any(axis=2))
    assert ink[:, 1].min() >= 240 and ink[:, 1].max() <= 310 and ink[:, 0].min() >= 190, "box at half scale"


# --- real OCR -------------------------------------------------------------------------------------------------

def values(doc: Document) -> dict:
    return {"fields": {k: f.value for k, f in doc.fields.items()},
            "items": [{k: f.value for k, f in row.items()} for row in doc.items], "doc_type": doc.doc_type}


@pytest.fixture(scope="module")
def sample_alone(tmp_path_factory, sample):
    """The sample invoice on its own, the reference every multi-page reading must equal: a one-page PDF
    through the same rendering as the multi-page files (its size in points does not round-trip to the
    PNG's pixels: 1654 -> 1655 columns, and the resampled page may read differently from the PNG)."""
    path = tmp_path_factory.mktemp("alone") / "inv_alone.pdf"
    Image.open(sample).convert("RGB").save(path, resolution=200)
    return route.analyse_file(str(path))


def pdf_of(images: list[Image.Image], path: Path) -> Path:
    # 200 dpi, the render resolution: each page renders back to the image's own pixels
    images[0].save(path, save_all=True, append_images=images[1:], resolution=200)
    return path


@pytest.mark.heavy
def test_invoice_with_a_blank_back_page_reads_as_the_invoice_alone(sample, sample_alone, tmp_path):
    invoice = Image.open(sample).convert("RGB")
    a = route.analyse_file(str(pdf_of([invoice, white(invoice.size)], tmp_path / "inv_blank.pdf")))
    assert a.document.error is None, a.document.error
    [result] = a.results
    assert result.error is None and result.page_numbers() == [1]
    assert values(result) == values(sample_alone.results[0])
    assert result.fields["seller_name"].value == "深圳蛋糕餐饮有限公司"
    assert any("page 2 of 2 was skipped as blank" in w for w in result.warnings)


@pytest.mark.heavy
def test_two_invoices_in_one_pdf_give_two_results_each_as_read_alone(sample, sample_alone, tmp_path):
    from data.synth import generate
    other, _ = generate("vat_invoice", seed=4242)
    other = other.convert("RGB")
    # alone through the same PDF rendering (its size in points does not round-trip to the PNG's pixels)
    other_alone = route.analyse_file(str(pdf_of([other], tmp_path / "other.pdf")))
    invoice = Image.open(sample).convert("RGB")
    a = route.analyse_file(str(pdf_of([invoice, other], tmp_path / "two.pdf")))
    assert [(r.part, r.parts, r.page_numbers()) for r in a.results] == [(1, 2, [1]), (2, 2, [2])]
    assert values(a.results[0]) == values(sample_alone.results[0])
    assert values(a.results[1]) == values(other_alone.results[0])
    assert all(f.page == 1 for f in a.results[1].fields.values())


@pytest.mark.heavy
def test_extractor_on_a_two_page_document_keeps_each_field_on_its_page(sample_alone):
    """The root cause: fields of page 1 were completed with page 2's lines (IndexError on a short page)."""
    import copy
    extractor = route.load_extractor(None)
    first = copy.deepcopy(sample_alone.document.pages[0])
    short = Page(index=1, width=first.width, height=first.height,
                 lines=[Line("（小写）", box_to_quad([60, 100, 160, 130])),
                        Line("备注", box_to_quad([60, 140, 120, 170]))])
    doc = extractor.extract(Document(source="two.pdf", pages=[first, short]))
    assert doc.fields["seller_name"].value == sample_alone.results[0].fields["seller_name"].value
    assert {f.page for f in doc.fields.values()} == {0}


@pytest.mark.heavy
def test_three_page_tiff(tmp_path):
    def text_page(lines: list[str]) -> Image.Image:
        image = white((520, 70 * len(lines) + 20))
        draw = ImageDraw.Draw(image)
        for i, text in enumerate(lines):
            draw.text((16, 20 + i * 70), text, fill="black", font=pil_font("hei", 32))
        return image
    pages = [text_page(["收款收据", "交款单位：北京星河商贸", "金额：128.00元"]), white((520, 230)),
             text_page(["收款收据", "交款单位：上海远航物流", "金额：64.50元"])]
    path = tmp_path / "three.tif"
    path.write_bytes(tiff_bytes(pages))
    a = route.analyse_file(str(path))
    assert a.document.error is None and len(a.document.pages) == 3
    assert [r.page_numbers() for r in a.results] == [[1], [3]]
    assert "北京星河" in a.results[0].pages[0].text and "上海远航" in a.results[1].pages[0].text
    assert any("page 2 of 3 was skipped as blank" in w for w in a.results[0].warnings)
