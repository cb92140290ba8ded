"""Upload UI flows with Streamlit's AppTest: upload, type choice, edit, downloads, save corrections,
bad uploads. The pipeline is replaced by `fake_analyse_bytes` (a PIL decode plus a fixed invoice
reading) so these run in seconds; tests/test_browser.py drives the real app with real OCR."""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace as dc_replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from app.ui.export import export_json, fields_csv, items_csv, workbook
from app.ui.fields import (
    COL_CHECK,
    COL_KEY,
    COL_NORM,
    COL_VALUE,
    apply_edits,
    document_csv,
    failed_rows_style,
    fields_frame,
)
from app.ui.words import warning_words
from data.document import Cell, Document, Field, Line, Page, Pair, Table, box_to_quad
from reading import route
from reading.route import Analysis
from tests.ui_harness import start_ui

UI = str(Path(__file__).resolve().parents[1] / "app" / "ui" / "main.py")
CALLS: list[dict] = []


def invoice_document(name: str, pages: int = 1, doc_type: str | None = None) -> Document:
    """A fixed invoice reading: two header fields and two line items on each page's first page."""
    lines = [Line("发票号码：12345678", box_to_quad([20, 20, 200, 40])),
             Line("开票日期：2024年03月05日", box_to_quad([20, 50, 220, 70])),
             Line("办公用品 箱 2 50.00 100.00", box_to_quad([20, 100, 280, 120])),
             Line("打印纸 包 1 30.00 30.00", box_to_quad([20, 130, 280, 150]))]
    doc = Document(source=name, doc_type=doc_type or "vat_invoice", doc_type_score=0.93,
                   pages=[Page(index=i, width=300, height=200, lines=list(lines)) for i in range(pages)],
                   timings={"decode": 0.01, "ocr": 0.2, "extract": 0.05, "total": 0.26})
    doc.fields["invoice_number"] = Field("invoice_number", "12345678", raw="12345678", score=0.97,
                                         box=[95, 20, 200, 40], label="发票号码", valid=True, span=[5, 13])
    doc.fields["issue_date"] = Field("issue_date", "2024-03-05", raw="2024年03月05日", score=0.88,
                                     box=[95, 50, 220, 70], label="开票日期", valid=True)
    for y, (item, unit, qty, price, amount) in ((100, ("办公用品", "箱", "2", "50.00", "100.00")),
                                                 (130, ("打印纸", "包", "1", "30.00", "30.00"))):
        cells = {"name": item, "unit": unit, "quantity": qty, "unit_price": price, "amount": amount}
        doc.items.append({k: Field(k, v, raw=v, box=[20 + 50 * j, y, 60 + 50 * j, y + 20], valid=None)
                          for j, (k, v) in enumerate(cells.items())})
    return doc


def with_totals(doc: Document) -> Document:
    """The invoice's totals, 大写 words included (raw: the words as printed; value: the figure they say),
    checked as the extractor checks them (data/validate.py with the schema), so all pass."""
    from data.schemas import load_schema
    from data.validate import validate
    for key, value, raw in (("total_amount", "130.00", "¥130.00"), ("total_tax", "16.90", "¥16.90"),
                            ("total_with_tax", "146.90", "¥146.90"),
                            ("total_with_tax_in_words", "146.90", "壹佰肆拾陆圆玖角整")):
        doc.fields[key] = Field(key, value, raw=raw, score=0.9, label=load_schema("vat_invoice").field(key).label)
    validate(doc, load_schema("vat_invoice"))
    assert doc.fields["total_with_tax_in_words"].valid is True
    return doc


def parking_document(name: str, model_dir: str) -> Document:
    """A page of a type only the retrained model knows (its schema is in the model directory alone), with
    a fee OCR misread as letters: checked with that schema, as the extractor of that model does."""
    from data.validate import validate
    from models.model_dir import model_schema
    page = Page(index=0, width=300, height=200, lines=[Line("金额：l2.5O", box_to_quad([20, 20, 200, 40]))])
    doc = Document(source=name, doc_type="parking_receipt", doc_type_score=0.9, pages=[page])
    doc.fields["plate"] = Field("plate", "京A12345", raw="京A12345", label="车牌号")
    doc.fields["fee"] = Field("fee", "l2.5O", raw="l2.5O", label="金额", box=[80, 20, 200, 40])
    validate(doc, model_schema(model_dir, "parking_receipt"))
    assert doc.fields["fee"].valid is False and any("fee" in w for w in doc.warnings)
    return doc


FORM_PAIRS = [("申请人", "韦军磊"), ("部门", "客服部"), ("日期", "2024-05-06")]


def form_document(name: str) -> Document:
    """A generic form: no fields, three key-value pairs."""
    lines = []
    doc = Document(source=name, doc_type="generic_form", doc_type_score=0.9,
                   timings={"decode": 0.01, "ocr": 0.2, "extract": 0.05, "total": 0.26})
    for i, (k, v) in enumerate(FORM_PAIRS):
        y = 20 + 40 * i
        lines += [Line(k, box_to_quad([20, y, 80, y + 20])), Line(v, box_to_quad([100, y, 200, y + 20]))]
        doc.pairs.append(Pair(key=k, value=v, key_box=[20, y, 80, y + 20], value_box=[100, y, 200, y + 20],
                              score=0.9))
    doc.pages = [Page(index=0, width=300, height=200, lines=lines)]
    return doc


def fake_analyse_bytes(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None,
                       on_stage=None) -> Analysis:
    CALLS.append({"filename": filename, "doc_type": doc_type, "model_dir": model_dir})
    try:
        Image.open(io.BytesIO(data)).load()
    except Exception as exc:
        return Analysis(Document(source=filename, error={"type": "InputError",
                                                         "message": f"{filename} is not an image ({exc})"}))
    if "form" in filename:
        return Analysis(form_document(filename), [np.full((200, 300, 3), 255, np.uint8)])
    if doc_type == "parking_receipt":
        return Analysis(parking_document(filename, model_dir), [np.full((200, 300, 3), 255, np.uint8)])
    if "words" in filename:
        return Analysis(with_totals(invoice_document(filename)), [np.full((200, 300, 3), 255, np.uint8)])
    if "dup" in filename:           # the same VAT invoice (code + number) under any name
        doc = invoice_document(filename)
        doc.fields["invoice_code"] = Field("invoice_code", "044001900111", raw="044001900111", label="发票代码")
        return Analysis(doc, [np.full((200, 300, 3), 255, np.uint8)])
    pages = 2 if "two" in filename else 1
    for i in range(pages):
        for stage in ("decode", "ocr", "extract"):
            if on_stage:
                on_stage(stage, i + 1, pages)
        if on_page:
            on_page(i + 1, pages)
    return Analysis(invoice_document(filename, pages, doc_type),
                    [np.full((200, 300, 3), 255, np.uint8) for _ in range(pages)])


@pytest.fixture()
def app(monkeypatch, tmp_path):
    CALLS.clear()
    return start_ui(monkeypatch, tmp_path, fake_analyse_bytes)


def png_bytes(size=(300, 200)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, format="PNG")
    return buf.getvalue()


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader[0].set_value([(name, data, "image/png") for name, data in files])
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def picker(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def shown_text(at: AppTest) -> str:
    """Everything the main area says in words (markdown, captions, info, warnings, errors, successes)."""
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "error", "success")
                     for e in getattr(at, kind))


def test_empty_app_says_what_to_do(app):
    assert any("Drop one or more" in i.value for i in app.info)
    assert "25 MB" in app.file_uploader[0].label


def test_upload_shows_type_confidence_fields_and_items(app):
    upload(app, ("inv.png", png_bytes()))
    assert not app.exception and not app.error
    assert metrics(app)["置信度 Confidence"] == "93%"
    assert "增值税发票 (vat_invoice)" in shown_text(app), "the type's name in full, not cut to fit a metric"
    assert metrics(app)["明细 Items"] == "2" and metrics(app)["字段 Fields"] == "2"
    table = app.data_editor[0].value
    row = table[table[COL_KEY] == "invoice_number"].iloc[0]
    assert row[COL_VALUE] == "12345678" and row[COL_CHECK].startswith("✓")
    # schema fields the model did not find are offered empty, to be filled in
    assert (table[COL_KEY] == "invoice_code").any()
    items = next(d.value for d in app.dataframe if "名称 Name" in d.value.columns)
    assert list(items["名称 Name"]) == ["办公用品", "打印纸"] and list(items["金额 Amount"]) == ["100.00", "30.00"]
    assert {"规格型号 Spec", "单位 Unit", "数量 Qty", "单价 Price", "税率 Rate", "税额 Tax"} <= set(items.columns)
    assert [b.label for b in app.get("download_button")] == ["JSON", "字段 CSV", "明细 CSV", "Excel"]
    assert [t.label for t in app.tabs][:3] == ["字段 Fields (2)", "明细 Items (2)", "键值对 Pairs (0)"]


def test_a_form_shows_its_pairs_first(app):
    upload(app, ("form.png", png_bytes()))
    assert not app.exception and not app.error
    assert app.tabs[0].label == "键值对 Pairs (3)", "a form opens on its pairs, not on an empty field table"
    pairs = next(d.value for d in app.dataframe if "键 Key" in d.value.columns)
    assert list(zip(pairs["键 Key"], pairs["值 Value"])) == FORM_PAIRS
    assert "No fields were extracted" not in shown_text(app)


def test_progress_reports_stages_and_pages(app):
    upload(app, ("two_pages.png", png_bytes()))
    assert not app.exception
    assert CALLS[-1]["filename"] == "two_pages.png"
    assert not app.get("progress"), "the bar is gone once the file is read"


def test_chosen_type_reaches_the_pipeline(app):
    type_picker(app).set_value("receipt").run()
    upload(app, ("inv.png", png_bytes()))
    assert CALLS[-1]["doc_type"] == "receipt"
    assert "receipt" in shown_text(app)


def edit_value(at: AppTest, key: str, text: str) -> AppTest:
    editor = at.data_editor[0]
    row = int(np.flatnonzero(editor.value[COL_KEY] == key)[0])
    at.session_state[editor.key] = {"edited_rows": {row: {COL_VALUE: text}}, "added_rows": [], "deleted_rows": []}
    return at.run()


def test_edit_is_normalised_validated_and_exported(app):
    upload(app, ("inv.png", png_bytes()))
    edit_value(app, "issue_date", "2025年1月9日")
    assert not app.exception
    table = app.data_editor[0].value
    edited = table[table[COL_KEY] == "issue_date"].iloc[0]
    assert edited[COL_NORM] == "2025-01-09"
    assert any("开票日期" in c.value for c in app.caption), "the UI says which fields were corrected"
    result = next(iter(app.session_state["analyses"].values()))
    doc = result["corrected"]
    assert Document.from_json(doc.to_json()).fields["issue_date"].value == "2025-01-09"
    assert "2025-01-09" in document_csv(doc, "inv.png").decode("utf-8-sig")


def test_failed_check_says_why_in_chinese_and_a_fix_clears_it(app):
    upload(app, ("inv.png", png_bytes()))
    edit_value(app, "invoice_number", "1234567")           # 7 digits: the schema wants 8
    row = app.data_editor[0].value.set_index(COL_KEY).loc["invoice_number"]
    assert row[COL_CHECK].startswith("✗ 应为8位数字"), row[COL_CHECK]
    warnings = [w.value for w in app.warning]
    assert any(w.startswith("发票号码：应为8位数字") for w in warnings), warnings
    assert not any("invoice_number" in w or "\\d" in w for w in warnings), "no keys or regexes shown"
    edit_value(app, "invoice_number", "87654321")
    row = app.data_editor[0].value.set_index(COL_KEY).loc["invoice_number"]
    assert row[COL_CHECK].startswith("✓")
    assert not any("发票号码" in w.value for w in app.warning), "the warning about the old value is gone"


def test_editing_a_field_keeps_correct_amount_words_passed(app):
    """Reported: any edit marked a correct 大写金额 as failed ("not readable as 大写金额 (146.90)"): the
    re-check read the figure it normalises to instead of the words."""
    upload(app, ("words.png", png_bytes()))
    row = app.data_editor[0].value.set_index(COL_KEY).loc["total_with_tax_in_words"]
    assert row[COL_CHECK].startswith("✓"), row[COL_CHECK]
    edit_value(app, "invoice_number", "87654321")
    assert not app.exception
    row = app.data_editor[0].value.set_index(COL_KEY).loc["total_with_tax_in_words"]
    assert row[COL_CHECK].startswith("✓"), row[COL_CHECK]
    assert not any("大写" in w.value for w in app.warning), [w.value for w in app.warning]
    doc = next(iter(app.session_state["analyses"].values()))["corrected"]
    assert doc.fields["total_with_tax_in_words"].valid is True
    assert not any("total_with_tax_in_words" in w for w in doc.warnings)


def test_a_fixed_value_leaves_no_warning_in_the_export_with_the_models_own_schema(two_models_app):
    """Reported: after a value was fixed its old warning stayed in the exported JSON. The page is of a type
    only the selected model's directory has a schema for: the re-check uses that schema, from scratch."""
    at, _, new = two_models_app
    [s for s in at.sidebar.selectbox if s.label == "模型 Model"][0].set_value(str(new)).run()
    type_picker(at).set_value("parking_receipt").run()
    upload(at, ("park.png", png_bytes()))
    assert not at.exception
    row = at.data_editor[0].value.set_index(COL_KEY).loc["fee"]
    assert row[COL_CHECK].startswith("✗"), row[COL_CHECK]
    assert any("金额" in w.value for w in at.warning), [w.value for w in at.warning]
    edit_value(at, "fee", "12.50")
    assert not at.exception
    row = at.data_editor[0].value.set_index(COL_KEY).loc["fee"]
    assert row[COL_CHECK].startswith("✓") and row[COL_NORM] == "12.50", row.to_dict()
    assert not any("金额" in w.value for w in at.warning), "the warning about the old value is gone"
    doc = next(iter(at.session_state["analyses"].values()))["corrected"]
    exported = json.loads(export_json([("park.png", doc)]))
    assert exported["warnings"] == [] and exported["checks"] == [], exported["warnings"]
    assert exported["fields"]["fee"]["valid"] is True


def test_failed_rows_are_coloured():
    doc = invoice_document("x.png")
    doc.fields["invoice_number"].valid = False
    frame = fields_frame(doc, 0)
    html = failed_rows_style(frame).to_html()
    styled = {tuple(map(int, m)) for m in re.findall(r"#T_\w+?_row(\d+)_col(\d+)", html.split("</style>")[0])}
    failed = int(np.flatnonzero(frame[COL_KEY] == "invoice_number")[0])
    assert styled == {(failed, c) for c in range(len(frame.columns))}, "the failed row, every cell, no other"
    assert "#fde2e2" in html


def test_find_on_page_highlights_and_zooms(app):
    upload(app, ("inv.png", png_bytes()))
    find = picker(app, "定位 Find on page")
    assert {"字段 发票号码", "明细第 2 行 item 2 打印纸"} <= set(find.options)
    images_before = len(app.get("image"))
    find.set_value("field:invoice_number").run()
    assert not app.exception
    assert len(app.get("image")) == images_before + 1, "a zoomed crop of the picked value is shown"
    assert "选中 selected: 字段 发票号码" in shown_text(app), "the legend names the picked box"


def test_downloads_for_one_and_for_all_files(app):
    from openpyxl import load_workbook
    upload(app, ("inv.png", png_bytes()), ("form.png", png_bytes()))
    labels = [b.label for b in app.get("download_button")]
    assert labels == ["JSON", "字段 CSV", "明细 CSV", "Excel"] + [f"{x} · 全部 all" for x in labels[:4]]
    docs = [("inv.png", invoice_document("inv.png")), ("form.png", form_document("form.png"))]
    book = load_workbook(io.BytesIO(workbook(docs)))      # the invoice register, then the review sheet
    assert book.sheetnames == ["发票 Invoices", "明细 Items", "键值对 Pairs", "字段 Fields"]
    invoices = list(book["发票 Invoices"].iter_rows(values_only=True))
    assert invoices[2][invoices[1].index("invoice_number")] == "12345678" and invoices[2][0] == "inv.png"
    items = list(book["明细 Items"].iter_rows(values_only=True))
    assert [r[items[1].index("name")] for r in items[2:-1]] == ["办公用品", "打印纸"] and items[-1][0] == "合计 Total"
    assert [r[items[1].index("invoice_number")] for r in items[2:-1]] == ["12345678"] * 2, "keyed by the number"
    assert [(r[4], r[5]) for r in book["键值对 Pairs"].iter_rows(min_row=3, values_only=True)] == FORM_PAIRS
    assert {r[4] for r in book["字段 Fields"].iter_rows(min_row=2, values_only=True)} == {"invoice_number",
                                                                                          "issue_date"}
    rows = list(csv.reader(io.StringIO(fields_csv(docs).decode("utf-8-sig"))))
    assert len(rows) == 3 and rows[1][0] == "inv.png" and rows[2][0] == "form.png", "one row per document"
    assert rows[0][-1] == "pairs" and [(p["key"], p["value"]) for p in json.loads(rows[2][-1])] == FORM_PAIRS
    assert len(items_csv(docs).decode("utf-8-sig").splitlines()) == 3
    assert [d["source"] for d in json.loads(export_json(docs))] == ["inv.png", "form.png"]


def test_duplicates_in_a_session_and_through_the_register(app, monkeypatch, tmp_path):
    register = tmp_path / "register.sqlite"
    monkeypatch.setenv("PIAOJU_REGISTER", str(register))
    upload(app, ("dup_a.png", png_bytes()), ("dup_b.png", png_bytes((301, 200))), ("inv.png", png_bytes()))
    assert not app.exception
    said = "\n".join(e.value for e in app.error)
    assert "Duplicate invoices" in said and "**dup_a.png** (文档 document 1) = dup_b.png p.1" in said
    assert "inv.png" not in said
    # the all-documents downloads carry it too
    docs = [("dup_a.png", fake_analyse_bytes(png_bytes(), "dup_a.png").document),
            ("dup_b.png", fake_analyse_bytes(png_bytes(), "dup_b.png").document)]
    rows = list(csv.DictReader(io.StringIO(fields_csv(docs).decode("utf-8-sig"))))
    assert [r["duplicate_of"] for r in rows] == ["dup_b.png p.1", "dup_a.png p.1"]
    # a later session: the same invoice under a third name is found in the register
    later = AppTest.from_file(UI, default_timeout=60)
    later.run()
    upload(later, ("dup_c.png", png_bytes((302, 200))))
    assert "**dup_c.png** (文档 document 1) = dup_a.png p.1; dup_b.png p.1" in "\n".join(e.value for e in later.error)


def save_button(at: AppTest):
    return next(b for b in at.button if b.label.startswith("保存已核对的页"))


def test_only_checked_pages_are_saved_as_corrected(app, tmp_path):
    upload(app, ("two_pages.png", png_bytes()))
    assert save_button(app).disabled, "nothing is saved before a page is checked"
    edit_value(app, "issue_date", "2025年1月9日")
    app.checkbox[0].check().run()                       # page 1 checked, page 2 not
    assert save_button(app).label.endswith("(1)")
    save_button(app).click().run()
    assert not app.exception and not app.error
    assert any("Saved 1 checked page" in s.value for s in app.success)
    assert any("python -m training retrain --corpus" in c.value for c in app.code)
    assert any("Retraining needs at least 24 checked pages, 23 more" in i.value for i in app.info), \
        "a corpus retrain would refuse is said to be too small, with how many pages are missing"
    corpus = tmp_path / "corrections" / "corpus.jsonl"
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 1
    rec = records[0]
    assert (corpus.parent / rec["image"]).is_file() and rec["doc_type"] == "vat_invoice"
    assert rec["fields"]["invoice_number"]["value"] == "12345678"
    assert rec["fields"]["issue_date"]["value"] == "2025-01-09", "the corrected value is the ground truth"
    assert rec["lines"][rec["fields"]["invoice_number"]["line"]]["text"] == "发票号码：12345678"
    save_button(app).click().run()     # saving the same page again replaces, not duplicates
    assert len(corpus.read_text(encoding="utf-8").splitlines()) == 1


def test_many_uploads_pages_and_bad_files_keep_the_app_running(app):
    upload(app, ("two_pages.png", png_bytes()), ("broken.png", b"\x89PNG garbage"), ("empty.png", b""))
    assert not app.exception
    files = picker(app, "文档 Document")
    assert len(files.options) == 3 and "failed" in files.options[1]
    assert [s for s in app.selectbox if s.label == "页 Page"], "a two-page document gets a page picker"
    files.set_value(1).run()
    assert "not an image" in app.error[-1].value
    picker(app, "文档 Document").set_value(2).run()
    assert "empty (0 bytes)" in app.error[-1].value


def test_too_large_upload_is_refused_with_the_limit(app):
    big = b"\0" * (26 * 2**20)
    upload(app, ("huge.png", big))
    assert "above the 25 MB limit" in app.error[0].value
    assert not CALLS, "an oversized file never reaches the pipeline"


def test_fields_frame_and_apply_edits_without_streamlit():
    doc = invoice_document("x.png")
    frame = fields_frame(doc, 0)
    frame.loc[frame[COL_KEY] == "invoice_number", COL_VALUE] = "1234567"    # 7 digits: fails pattern
    out, changed = apply_edits(doc, frame)
    assert changed == ["invoice_number"]
    assert out.fields["invoice_number"].valid is False and doc.fields["invoice_number"].valid is True
    assert any(w.startswith("发票号码") for w in out.warnings)


def test_warnings_are_shown_in_chinese_without_keys():
    doc = invoice_document("x.png")
    said = warning_words("page 2 reads poorly (mean OCR confidence 0.71): the image is too blurred", doc)
    assert said.startswith("第2页识别质量差") and "0.71" in said
    said = warning_words("价税合计（大写） (total_with_tax_in_words) read as 壹佰圆: taken as the words for "
                         "total_with_tax 100.00, which differ from it in 1 character(s)", doc)
    assert "total_with" not in said and "价税合计（小写）" in said


# --- the type chooser lists the SELECTED model's types ---------------------------------------------

NEW_TYPE_SCHEMA = """name: parking_receipt
label: 停车收据
fields:
  - key: plate
    label: 车牌号
  - key: fee
    label: 金额
    type: amount
"""


def model_dir_with_new_type(root: Path) -> Path:
    """A model directory as `retrain` exports it after adding a type: the default's labels less
    train_ticket (a model trained without it, though the repo has its schema) plus parking_receipt, whose
    schema only this directory carries (weights are never loaded here)."""
    from models.extractor import DEFAULT_MODEL_DIR
    d = root / "retrained-v0001"
    (d / "schemas").mkdir(parents=True)
    cfg = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    cfg["doc_types"] = [t for t in cfg["doc_types"] if t != "train_ticket"] + ["parking_receipt"]
    (d / "config.json").write_text(json.dumps(cfg, ensure_ascii=False), encoding="utf-8")
    (d / "labels.json").write_text(json.dumps({"tags": cfg["tag_labels"], "doc_types": cfg["doc_types"]}),
                                   encoding="utf-8")
    (d / "schemas" / "parking_receipt.yaml").write_text(NEW_TYPE_SCHEMA, encoding="utf-8")
    (d / "model_state.pdparams").write_bytes(b"")
    (d / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    return d


@pytest.fixture()
def two_models_app(monkeypatch, tmp_path):
    import streamlit as st

    from models import extractor
    new = model_dir_with_new_type(tmp_path)
    default = extractor.DEFAULT_MODEL_DIR.resolve()
    monkeypatch.setattr(extractor, "find_model_dirs", lambda root=None: [default, new] if root is None else [])
    CALLS.clear()
    monkeypatch.setattr(route, "analyse_bytes", fake_analyse_bytes)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    st.cache_data.clear()       # model_choices() is cached across AppTest runs in this process
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    yield at, default, new
    st.cache_data.clear()


def type_picker(at: AppTest):
    return [s for s in at.sidebar.selectbox if s.label == "文档类型 Document type"][0]


def test_type_chooser_lists_only_the_selected_models_types(two_models_app):
    at, default, new = two_models_app
    model_picker = [s for s in at.sidebar.selectbox if s.label == "模型 Model"][0]
    assert model_picker.options == ["default · 内置模型 bundled", new.name]
    offered = type_picker(at).options[1:]
    trained = json.loads((default / "labels.json").read_text(encoding="utf-8"))["doc_types"]
    assert len(offered) == len(trained) and "增值税发票 (vat_invoice)" in offered
    assert all(any(f"({t})" in o for o in offered) for t in trained)
    assert not any("parking_receipt" in o for o in offered)

    assert any(c.value.startswith("default: ") and "vat_invoice" in c.value and "field F1" in c.value
               for c in at.sidebar.caption), "the selected model is described"
    model_picker.set_value(str(new)).run()
    assert not at.exception
    assert any(c.value.startswith("retrained-v0001: 8 types") for c in at.sidebar.caption)
    offered = type_picker(at).options
    assert "停车收据 (parking_receipt)" in offered, "the retrained model's new type, labelled from its own schema"
    # the repo has a schema for train tickets, but this model was trained without them
    assert not any("train_ticket" in o for o in offered)
    type_picker(at).set_value("parking_receipt").run()
    upload(at, ("inv.png", png_bytes()))
    assert CALLS[-1]["doc_type"] == "parking_receipt"


def test_model_list_offers_latest_by_name_refreshes_and_hides_work_folders(monkeypatch, tmp_path):
    """A registry as `retrain` leaves it: versions, a `<name>-latest` pointer, a work folder holding a
    half-trained model. The pointer is offered by name and followed; a promotion made while the server
    runs shows after the refresh button, without a restart; the work folder is never offered."""
    import shutil

    import streamlit as st

    from models import extractor
    from training.model_registry import ModelRegistry
    registry = tmp_path / "models" / "registry"
    v1 = model_dir_with_new_type(registry)
    ModelRegistry(registry.parent).promote("retrained", v1)
    work = registry / ".work" / "retrained-1a2b3c" / "finetuned"
    shutil.copytree(v1, work)
    default = extractor.DEFAULT_MODEL_DIR.resolve()
    found = [default, work, v1]
    monkeypatch.setattr(extractor, "find_model_dirs", lambda root=None: list(found) if root is None else [])
    CALLS.clear()
    monkeypatch.setattr(route, "analyse_bytes", fake_analyse_bytes)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    st.cache_data.clear()
    try:
        at = AppTest.from_file(UI, default_timeout=60)
        at.run()
        models = [s for s in at.sidebar.selectbox if s.label == "模型 Model"][0]
        assert models.options == ["default · 内置模型 bundled", "retrained · latest 最新", "retrained-v0001"], \
            "no work folder, latest by name"
        models.set_value(f"latest|{registry}|retrained").run()
        assert "停车收据 (parking_receipt)" in type_picker(at).options, "the types of the model latest names"
        upload(at, ("inv.png", png_bytes()))
        assert CALLS[-1]["model_dir"] == str(v1)

        v2 = registry / "retrained-v0002"            # a retrain promotes a new version meanwhile
        shutil.copytree(v1, v2)
        ModelRegistry(registry.parent).promote("retrained", v2)
        found.append(v2)
        next(b for b in at.sidebar.button if b.label.startswith("↻")).click().run()
        models = [s for s in at.sidebar.selectbox if s.label == "模型 Model"][0]
        assert models.options[1:] == ["retrained · latest 最新", "retrained-v0001", "retrained-v0002"]
        assert "latest → retrained-v0002" in [c.value for c in at.sidebar.caption]
        upload(at, ("inv2.png", png_bytes((310, 200))))
        assert not at.exception and CALLS[-1]["model_dir"] == str(v2), "the same choice follows latest"
    finally:
        st.cache_data.clear()


def test_highlight_is_drawn_on_the_preview_and_the_crop_holds_it():
    """Boxes are in page coordinates; the preview is half size: the red frame lands on the scaled box
    and the zoomed crop contains it, with context but far less than the page."""
    from app.draw import HIGHLIGHT_COLOUR
    from app.ui.view import page_overlay, zoom_crop
    doc = invoice_document("x.png")
    page = dc_replace(doc.pages[0], width=600, height=400)
    preview = np.full((200, 300, 3), 255, np.uint8)
    box = [190, 40, 400, 80]                            # invoice_number at page scale
    out = page_overlay(preview, page, doc, highlight=[box])
    red = np.all(out == HIGHLIGHT_COLOUR[::-1], axis=2)
    ys, xs = np.nonzero(red)
    assert len(xs) > 50 and 85 <= xs.min() <= 95 and 200 <= xs.max() <= 210 and 15 <= ys.min() <= 20
    crop = zoom_crop(out, page, [box])
    assert crop is not None and crop.shape[0] < 200 and np.all(crop == HIGHLIGHT_COLOUR[::-1], axis=2).any()
    assert zoom_crop(out, page, []) is None


def tabled_form(name: str) -> Document:
    """`form_document` with a table (姓名 | 电话 over one record) under its pairs."""
    doc = form_document(name)
    doc.tables = [Table(columns=["姓名", "电话"], column_boxes=[[20, 140, 140, 160], [140, 140, 280, 160]],
                        rows=[[Cell("张三", [20, 160, 140, 190]), Cell("13800000000", [140, 160, 280, 190])]],
                        box=[20, 140, 280, 190], score=0.9)]
    return doc


def test_tables_are_drawn_on_the_preview_and_in_the_legend():
    """The preview is half size: the table's green lands inside its scaled box; the legend names tables
    only where the page has one, and the page without tables gets no green."""
    from app.draw import TABLE_COLOUR
    from app.ui.view import legend_html, page_overlay
    doc = tabled_form("form.png")
    preview = np.full((100, 150, 3), 255, np.uint8)
    green = np.all(page_overlay(preview, doc.pages[0], doc) == TABLE_COLOUR[::-1], axis=2)
    ys, xs = np.nonzero(green)
    assert len(xs) > 100 and 5 <= xs.min() <= 10 and 140 <= xs.max() <= 145 and ys.max() <= 97
    assert "表格 form table" in legend_html(doc, 0)
    plain = form_document("form.png")
    assert not np.all(page_overlay(preview, plain.pages[0], plain) == TABLE_COLOUR[::-1], axis=2).any()
    assert "表格" not in legend_html(plain, 0)


def test_find_on_page_offers_a_table(app, monkeypatch):
    def analyse(data, filename, *a, **kw):
        return Analysis(tabled_form(filename), [np.full((200, 300, 3), 255, np.uint8)])
    monkeypatch.setattr(route, "analyse_bytes", analyse)
    upload(app, ("tabled-form.png", png_bytes()))
    find = picker(app, "定位 Find on page")
    assert "表格 1 Table 1" in set(find.options)
    images_before = len(app.get("image"))
    find.set_value("table:0").run()
    assert not app.exception and len(app.get("image")) == images_before + 1, "a zoomed crop of the table"


def test_pipeline_reports_each_stage_of_each_page(monkeypatch):
    """The progress bar's source: decode, OCR (detect, recognise: told by the engine) and extract
    announced for page 1 and page 2 of 2, in order, before each stage runs (a fake OCR engine that
    reports its stages as models/ocr/engine.py does; no extraction model)."""
    class Engine:
        def read(self, image, page_index=0, timings=None, on_stage=None):
            for stage in ("detect", "recognise"):
                if on_stage:
                    on_stage(stage)
            return Page(index=page_index, width=30, height=20,
                        lines=[Line(t, box_to_quad([0, 5 * i, 30, 5 * i + 4]), score=0.99)
                               for i, t in enumerate(("发票号码", "开票日期", "合计金额"))])

    monkeypatch.setattr(route, "ocr_engine", lambda: Engine())
    monkeypatch.setattr(route, "extractor_available", lambda model_dir=None: False)
    stages: list[tuple[str, int, int]] = []
    pages = iter([np.full((20, 30, 3), 255, np.uint8)] * 2)
    analysis = route.analyse_pages(pages, 2, "x.png", on_stage=lambda *a: stages.append(a))
    assert len(analysis.results) == 2
    assert stages == [(s, page, 2) for page in (1, 2) for s in ("decode", "ocr", "detect", "recognise", "extract")]


def test_the_picked_field_row_is_marked_in_the_table():
    doc = invoice_document("x.png")
    frame = fields_frame(doc, 0)
    html = failed_rows_style(frame, "issue_date").to_html()
    row = int(np.flatnonzero(frame[COL_KEY] == "issue_date")[0])
    rule = next(r for r in html.split("</style>")[0].split("}") if "#fff3b0" in r)
    assert {int(m) for m in re.findall(r"_row(\d+)_col", rule)} == {row}


def test_check_warnings_name_fields_not_keys():
    """The validators' own warnings (rules over several fields, missing values) as the UI shows them."""
    from data.schemas import load_schema
    from data.validate import validate_fields
    doc = invoice_document("x.png")
    values = {"total_amount": "100.00", "total_tax": "13.00", "total_with_tax": "120.00", "items": [],
              "seller_tax_id": "123", "issue_date": "2099-01-01"}
    _, warnings = validate_fields(load_schema("vat_invoice"), values)
    shown = [warning_words(w, doc) for w in warnings]
    assert "销售方纳税人识别号：不是有效的纳税人识别号（18位信用代码，或15位、20位） / not a valid taxpayer ID" in shown
    assert "开票日期：日期无法识别或晚于今天 / date is unreadable or in the future" in shown
    assert any(s.startswith("缺少发票代码") for s in shown), shown
    sums = [s for s in shown if "合计" in s and "add up" in s]
    assert sums, shown
    assert not any(re.search(r"[a-z]+_[a-z]+", s) for s in shown), "no field keys in what is shown"


# --- documents as the pipeline splits a file (issue 40): one object per document, edits that stick ------------

REAL_ANALYSE_PAGES = route.analyse_pages
LABELS = {"发票号码": "invoice_number", "开票日期": "issue_date", "购买方名称": "buyer_name",
          "销售方名称": "seller_name"}
SPLIT_FILES = {     # the printed lines of each page; "销售方：" is printed, but not as a label the reader knows
    "one.png": [["发票号码：1234567", "开票日期：2024年03月05日", "购买方名称：甲公司", "销售方名称：乙公司"]],
    "three.tif": [["发票号码：10000001", "开票日期：2024年03月05日", "购买方名称：甲公司", "销售方名称：乙公司"],
                  ["发票号码：10000002", "开票日期：2024年03月06日", "购买方名称：甲公司", "销售方名称：丙公司"],
                  ["发票号码：10000003", "开票日期：2024年03月07日", "购买方名称：甲公司", "销售方：丁科技有限公司"]],
}


class LabelReader:
    """Stands in for models/extractor.py: a "label：value" line is a field on its page, and the document is
    validated as the extractor validates it (data/validate.py, so its `checks` are recorded as they are)."""

    def extract(self, doc: Document, doc_type: str | None = None) -> Document:
        from data.normalize import normalize_value
        from data.schemas import load_schema
        from data.validate import validate
        schema = load_schema("vat_invoice")
        doc.doc_type, doc.doc_type_score = "vat_invoice", 0.9
        for page in doc.pages:
            for line in page.lines:
                label, _, value = line.text.partition("：")
                if label in LABELS and value:
                    key = LABELS[label]
                    doc.fields[key] = Field(key, normalize_value(schema.field(key).type, value) or value, raw=value,
                                            score=0.9, box=line.box, page=page.index, label=label)
        validate(doc, schema)
        return doc


def split_analyse_bytes(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None,
                        on_stage=None) -> Analysis:
    """The real pipeline (reading/route.py `analyse_pages`: one result per page with text, the file document
    beside them) over pages whose text the file holds, read by `LabelReader`."""
    from data.source_page import SourcePage
    pages = [SourcePage(np.full((200, 300, 3), 255, np.uint8),
                        Page(index=0, width=300, height=200,
                             lines=[Line(t, box_to_quad([20, 20 + 40 * j, 280, 40 + 40 * j]))
                                    for j, t in enumerate(texts)]))
             for texts in SPLIT_FILES[filename]]
    return REAL_ANALYSE_PAGES(iter(pages), len(pages), filename, model_dir, doc_type, on_page, preview=300,
                              on_stage=on_stage)


@pytest.fixture()
def split_app(monkeypatch, tmp_path):
    monkeypatch.setattr(route, "analyse_bytes", split_analyse_bytes)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    monkeypatch.setattr(route, "extractor_available", lambda model_dir=None: True)
    monkeypatch.setattr(route, "load_extractor", lambda model_dir=None: LabelReader())
    monkeypatch.setenv("PIAOJU_CORRECTIONS_DIR", str(tmp_path / "corrections"))
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture()
def downloads(monkeypatch) -> dict:
    """What each download button hands over, by file name, as of the latest run: the callables the buttons
    register with Streamlit (app/ui/main.py `export_buttons`), recorded as they are registered."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    made: dict = {}
    real = MediaFileManager.add_deferred

    def record(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        made[file_name] = data_callable
        return real(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    return made


def workbook_text(data: bytes) -> tuple[str, list[tuple]]:
    """Every cell of a workbook as text, and the rows of its 字段 Fields sheet."""
    from openpyxl import load_workbook
    book = load_workbook(io.BytesIO(data))
    cells = "\n".join(str(v) for sheet in book for row in sheet.iter_rows(values_only=True) for v in row
                      if v is not None)
    return cells, list(book["字段 Fields"].iter_rows(min_row=2, values_only=True))


def test_a_fixed_value_leaves_its_warning_on_a_one_document_file(split_app, downloads):
    """Reported (issue 40): in a one-document file the UI edited the file's document, whose `checks` were
    empty, so a corrected invoice number turned "passed" but its warning stayed, on screen and in every
    export, and every other check's warning was shown twice."""
    at = split_app
    upload(at, ("one.png", png_bytes()))
    assert not at.exception, at.exception
    assert any(w.value.startswith("发票号码：应为8位数字") for w in at.warning), [w.value for w in at.warning]
    before = [w.value for w in at.warning]
    [result] = at.session_state["analyses"].values()
    assert result["corrected"] is result["analysis"].parts()[0], "the document read, not the file's copy of it"
    edit_value(at, "invoice_number", "87654321")
    assert not at.exception, at.exception
    row = at.data_editor[0].value.set_index(COL_KEY).loc["invoice_number"]
    assert row[COL_CHECK].startswith("✓"), row[COL_CHECK]
    shown = [w.value for w in at.warning]
    assert not any("发票号码" in w for w in shown), shown
    assert len(shown) == len(set(shown)), f"a warning shown twice: {shown}"
    assert set(shown) == set(before) - {w for w in before if w.startswith("发票号码")}, "the others stay, once"
    exported = json.loads(downloads["one.json"]())
    assert exported["fields"]["invoice_number"]["value"] == "87654321"
    assert not any("invoice_number" in w for w in exported["warnings"]), exported["warnings"]
    assert len(exported["warnings"]) == len(set(exported["warnings"])), exported["warnings"]
    assert exported["checks"] == [w for w in exported["warnings"] if w in exported["checks"]]
    assert "invoice_number:" not in downloads["one_fields.csv"]().decode("utf-8-sig")
    cells, fields = workbook_text(downloads["one.xlsx"]())
    assert "invoice_number:" not in cells and "8位数字" not in cells
    assert next(r for r in fields if r[4] == "invoice_number")[8].startswith("✓")


def test_a_value_typed_into_document_3_is_saved_and_exported_with_its_page(split_app, downloads, tmp_path):
    """Reported (issue 40): a value typed into an empty field of document 3 of a three-invoice file took
    page 1 (a new field's default), so "Save checked pages" left it out of page 3's record and "Excel · all"
    put it on page 1."""
    at = split_app
    three = io.BytesIO()        # the pages are decoded again when saved: a real three-page file
    Image.new("RGB", (300, 200), "white").save(three, format="TIFF", save_all=True,
                                               append_images=[Image.new("RGB", (300, 200), "white")] * 2)
    at.file_uploader[0].set_value([("three.tif", three.getvalue(), "image/tiff")])
    at.run()
    assert not at.exception, at.exception
    picker(at, "文件内文档 Document in this file").set_value(2).run()
    assert any(w.value.startswith("缺少销售方名称") for w in at.warning), [w.value for w in at.warning]
    edit_value(at, "seller_name", "丁科技有限公司")
    assert not at.exception, at.exception
    row = at.data_editor[0].value.set_index(COL_KEY).loc["seller_name"]
    assert row[COL_VALUE] == "丁科技有限公司" and row["页 Page"] == 3, row.to_dict()
    assert not any("销售方名称" in w.value for w in at.warning), [w.value for w in at.warning]
    at.checkbox[0].check().run()
    save_button(at).click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    corpus = tmp_path / "corrections" / "corpus.jsonl"
    [record] = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert record["lines"][0]["text"] == "发票号码：10000003", "page 3 of the file"
    seller = record["fields"]["seller_name"]
    assert seller["value"] == "丁科技有限公司"
    assert record["lines"][seller["line"]]["text"] == "销售方：丁科技有限公司", "found where it is printed"
    _, fields = workbook_text(downloads["documents.xlsx"]())
    assert [(r[1], r[2]) for r in fields if r[4] == "seller_name"] == [(1, 1), (2, 2), (3, 3)], \
        "each document's seller on its own page"
    exported = json.loads(downloads["documents.json"]())
    assert exported[2]["fields"]["seller_name"]["page"] == 2
    assert exported[0]["fields"]["seller_name"]["value"] == "乙公司", "the other documents as they were read"


def test_a_field_typed_in_takes_the_page_it_was_typed_on():
    """apply_edits: a value typed where nothing was read belongs to the page whose table it was typed in
    (given), else to the document's first page, never to page 1 of the file by default."""
    doc = invoice_document("x.png")
    doc.pages = [dc_replace(doc.pages[0], index=2)]
    for f in doc.fields.values():
        f.page = 2
    frame = fields_frame(doc, 2)
    frame.loc[frame[COL_KEY] == "seller_name", COL_VALUE] = "丁科技有限公司"
    out, changed = apply_edits(doc, frame)
    assert changed == ["seller_name"] and out.fields["seller_name"].page == 2
    out, _ = apply_edits(doc, frame, page=2)
    assert out.fields["seller_name"].page == 2


def test_an_edit_revalidates_from_scratch_when_no_check_was_recorded():
    """A document whose validator warnings are in `warnings` but not named in `checks` (validated before
    `checks` existed, or a file's copy of its document): fixing a value still takes its warning out, and
    no other warning is doubled."""
    from data.schemas import load_schema
    from data.validate import validate
    doc = invoice_document("x.png")
    doc.fields["invoice_number"].raw = doc.fields["invoice_number"].value = "1234567"
    validate(doc, load_schema("vat_invoice"))
    doc.warnings.insert(0, "page 1 reads poorly (mean OCR confidence 0.80): check the values")
    doc.checks = []
    frame = fields_frame(doc, 0)
    frame.loc[frame[COL_KEY] == "invoice_number", COL_VALUE] = "87654321"
    out, _ = apply_edits(doc, frame)
    assert out.fields["invoice_number"].valid is True
    assert not any("invoice_number" in w for w in out.warnings), out.warnings
    assert len(out.warnings) == len(set(out.warnings)), out.warnings
    assert out.warnings[0].startswith("page 1 reads poorly"), "a warning of the pipeline stays"
    assert out.checks == out.warnings[1:]


def test_a_low_confidence_value_is_flagged_for_review_until_a_person_fixes_it():
    """Field.review (data/validate.py): a value read below REVIEW_THRESHOLD is shown as '⚠ 请核对' and its
    row coloured even where its check passed or none applies; a value typed in by a person is not."""
    from app.ui.fields import REVIEW_ROW, failed_rows_style
    from app.ui.words import REVIEW
    from data.schemas import load_schema
    from data.validate import REVIEW_THRESHOLD, validate
    doc = invoice_document("x.png")
    doc.fields["invoice_number"].score = REVIEW_THRESHOLD - 0.05
    validate(doc, load_schema("vat_invoice"))
    assert doc.fields["invoice_number"].valid is True and doc.fields["invoice_number"].review
    assert not doc.fields["issue_date"].review
    assert json.loads(doc.to_json())["fields"]["invoice_number"]["review"] is True
    frame = fields_frame(doc, 0)
    assert frame.loc[frame[COL_KEY] == "invoice_number", COL_CHECK].item() == REVIEW
    styles = failed_rows_style(frame)._compute().ctx          # the cells' computed styles
    row = list(frame[COL_KEY]).index("invoice_number")
    assert ("background-color", REVIEW_ROW.split(": ")[1]) in styles[(row, 0)]
    out, _ = apply_edits(doc, frame.assign(**{COL_VALUE: frame[COL_VALUE].where(
        frame[COL_KEY] != "invoice_number", "87654321")}))
    assert not out.fields["invoice_number"].review, "a value a person typed needs no second look"
