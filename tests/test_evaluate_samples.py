"""`training.evaluate` scores the real samples without importing the app (app -> training -> reading):
it reads each file through `ocr_and_extract` (the reading route, reading/route.py, the app's own reading)
or through whatever `analyse` it is given."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from data.document import Document, Line, Page, box_to_quad


def _page(gt: dict) -> Page:
    return Page(index=0, width=int(gt.get("width") or 1000), height=int(gt.get("height") or 1000),
                lines=[Line(text=ln["text"], quad=ln.get("quad") or box_to_quad(ln["box"])) for ln in gt["lines"]])


def test_evaluate_samples_reads_each_file_through_the_given_function(samples_dir, tmp_path):
    from models.extractor import DEFAULT_MODEL_DIR, get_extractor
    from training.evaluate import evaluate_samples, samples_table
    (tmp_path / "gt").mkdir()
    shutil.copy(samples_dir / "gt" / "metagpt_invoice_1.json", tmp_path / "gt")
    invoice = json.loads((tmp_path / "gt" / "metagpt_invoice_1.json").read_text(encoding="utf-8"))
    form = {"image": "img/form.png", "kv_pairs": [{"key": "姓名", "value": "张三"}, {"key": "电话", "value": "123"}]}
    (tmp_path / "gt" / "xfund_zh_val_0.json").write_text(json.dumps(form, ensure_ascii=False), encoding="utf-8")
    calls = []

    def analyse(path: str, model_dir: str, doc_type: str | None = None) -> Document:
        calls.append((Path(path).name, doc_type))
        if Path(path).name == "form.png":
            from data.document import Pair
            return Document(source=path, doc_type="generic_form", pairs=[Pair("姓名", "张三"), Pair("地址", "北京")])
        return get_extractor(model_dir).extract(Document(source=path, pages=[_page(invoice)]), doc_type=doc_type)

    res = evaluate_samples(DEFAULT_MODEL_DIR, tmp_path, analyse=analyse)
    assert calls == [("metagpt_invoice_1.png", None), ("form.png", "generic_form")]
    inv = res["metagpt_invoice_1"]
    assert inv["of"] == len(inv["fields"]) > 10 and inv["right_given_type"] >= inv["of"] // 2, samples_table(res)
    assert res["xfund_zh_val_0"]["pairs"]["tp"] == 1 and res["xfund_zh_val_0"]["pairs"]["f1"] == 0.5


def test_ocr_and_extract_reads_through_the_route_and_scores_a_files_first_document(samples_dir, tmp_path,
                                                                                   monkeypatch):
    """A file of two documents (two pages with text) is split as the app splits it, and evaluation scores the
    first: its own page only, extracted alone. The OCR is a stand-in reading the invoice's ground-truth lines
    on every page, put where the route looks it up, so the route is the one reading the file."""
    from PIL import Image

    from reading import route
    from training.evaluate import ocr_and_extract
    invoice = json.loads((samples_dir / "gt" / "metagpt_invoice_1.json").read_text(encoding="utf-8"))

    class Engine:
        def read(self, image, page_index=0, timings=None):
            page = _page(invoice)
            page.index = page_index
            return page
    monkeypatch.setattr(route, "ocr_engine", lambda: Engine())
    path = tmp_path / "two.tif"
    Image.new("RGB", (400, 300), "white").save(path, save_all=True,
                                                append_images=[Image.new("RGB", (400, 300), "white")])
    doc = ocr_and_extract(path, "models/default")
    assert (doc.part, doc.parts) == (1, 2) and [p.index for p in doc.pages] == [0]
    assert doc.doc_type == "vat_invoice" and len(doc.fields) > 10 and doc.error is None


@pytest.mark.heavy
def test_ocr_and_extract_reads_a_file_as_the_app_does(samples_dir):
    """The same document (type, fields, text) as reading.route.analyse_file for a one-page image."""
    from reading.route import analyse_file
    from training.evaluate import ocr_and_extract
    path = samples_dir / "img" / "metagpt_invoice_1.png"
    ours = ocr_and_extract(path, "models/default")
    app = analyse_file(str(path), "models/default").document
    assert ours.doc_type == app.doc_type and ours.source == app.source
    assert {k: f.value for k, f in ours.fields.items()} == {k: f.value for k, f in app.fields.items()}
    assert len(ours.fields) > 5
    assert [ln.text for p in ours.pages for ln in p.lines] == [ln.text for p in app.pages for ln in p.lines]
