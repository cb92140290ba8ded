"""Upload UI flows with Streamlit's AppTest: upload, type choice, edit, downloads, save corrections,
bad uploads. The pipeline is replaced by `fake_analyse_bytes` (a PIL decode plus a fixed invoice
reading) so these run in seconds; tests/test_browser.py drives the real app with real OCR."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from app import pipeline
from app.pipeline import Analysis
from app.ui_fields import COL_CHECK, COL_KEY, COL_NORM, COL_VALUE, apply_edits, document_csv, fields_frame
from data.document import Document, Field, Line, Page, box_to_quad

UI = str(Path(__file__).resolve().parents[1] / "app" / "ui.py")
CALLS: list[dict] = []


def invoice_document(name: str, pages: int = 1, doc_type: str | None = None) -> Document:
    lines = [Line("发票号码：12345678", box_to_quad([20, 20, 200, 40])),
             Line("开票日期：2024年03月05日", box_to_quad([20, 50, 220, 70]))]
    doc = Document(source=name, doc_type=doc_type or "vat_invoice", doc_type_score=0.93,
                   pages=[Page(index=i, width=300, height=200, lines=list(lines)) for i in range(pages)],
                   timings={"decode": 0.01, "ocr": 0.2, "extract": 0.05, "total": 0.26})
    doc.fields["invoice_number"] = Field("invoice_number", "12345678", raw="12345678", score=0.97,
                                         box=[95, 20, 200, 40], label="发票号码", valid=True, span=[5, 13])
    doc.fields["issue_date"] = Field("issue_date", "2024-03-05", raw="2024年03月05日", score=0.88,
                                     box=[95, 50, 220, 70], label="开票日期", valid=True)
    return doc


def fake_analyse_bytes(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None) -> Analysis:
    CALLS.append({"filename": filename, "doc_type": doc_type})
    try:
        Image.open(io.BytesIO(data)).load()
    except Exception as exc:
        return Analysis(Document(source=filename, error={"type": "InputError",
                                                         "message": f"{filename} is not an image ({exc})"}))
    pages = 2 if "two" in filename else 1
    for i in range(pages):
        if on_page:
            on_page(i + 1, pages)
    return Analysis(invoice_document(filename, pages, doc_type),
                    [np.full((200, 300, 3), 255, np.uint8) for _ in range(pages)])


@pytest.fixture()
def app(monkeypatch, tmp_path):
    CALLS.clear()
    monkeypatch.setattr(pipeline, "analyse_bytes", fake_analyse_bytes)
    monkeypatch.setattr(pipeline, "warm_up", lambda model_dir=None: None)
    monkeypatch.setenv("PIAOJU_CORRECTIONS_DIR", str(tmp_path / "corrections"))
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def png_bytes(size=(300, 200)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, format="PNG")
    return buf.getvalue()


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader[0].set_value([(name, data, "image/png") for name, data in files])
    return at.run()


def test_empty_app_says_what_to_do(app):
    assert any("Drop one or more" in i.value for i in app.info)
    assert "25 MB" in app.file_uploader[0].label


def test_upload_shows_type_confidence_and_fields(app):
    upload(app, ("inv.png", png_bytes()))
    assert not app.exception and not app.error
    metrics = {m.label: m.value for m in app.metric}
    assert "增值税发票" in metrics["Document type 类型"] and metrics["Confidence 置信度"] == "93%"
    table = app.data_editor[0].value
    row = table[table[COL_KEY] == "invoice_number"].iloc[0]
    assert row[COL_VALUE] == "12345678" and row[COL_CHECK].startswith("✓")
    # schema fields the model did not find are offered empty, to be filled in
    assert (table[COL_KEY] == "invoice_code").any()
    assert [b.label for b in app.get("download_button")] == ["Download JSON", "Download CSV"]


def test_chosen_type_reaches_the_pipeline(app):
    app.sidebar.selectbox[1].set_value("receipt").run()
    upload(app, ("inv.png", png_bytes()))
    assert CALLS[-1]["doc_type"] == "receipt"
    assert "receipt" in {m.label: m.value for m in app.metric}["Document type 类型"]


def test_edit_is_normalised_validated_and_exported(app):
    upload(app, ("inv.png", png_bytes()))
    editor = app.data_editor[0]
    table = editor.value
    row = int(np.flatnonzero(table[COL_KEY] == "issue_date")[0])
    app.session_state[editor.key] = {"edited_rows": {row: {COL_VALUE: "2025年1月9日"}},
                                     "added_rows": [], "deleted_rows": []}
    app.run()
    assert not app.exception
    table = app.data_editor[0].value
    edited = table[table[COL_KEY] == "issue_date"].iloc[0]
    assert edited[COL_NORM] == "2025-01-09"
    assert any("issue_date" in c.value for c in app.caption), "the UI says which fields were corrected"
    result = next(iter(app.session_state["analyses"].values()))
    doc = result["corrected"]
    assert Document.from_json(doc.to_json()).fields["issue_date"].value == "2025-01-09"
    assert "2025-01-09" in document_csv(doc, "inv.png").decode("utf-8-sig")


def test_save_corrections_writes_a_corpus_record(app, tmp_path):
    upload(app, ("inv.png", png_bytes()))
    app.button[0].click().run()
    assert not app.exception and not app.error
    assert any("training example" in s.value for s in app.success)
    corpus = tmp_path / "corrections" / "corpus.jsonl"
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 1
    rec = records[0]
    assert (corpus.parent / rec["image"]).is_file() and rec["doc_type"] == "vat_invoice"
    assert rec["fields"]["invoice_number"]["value"] == "12345678"
    assert rec["lines"][rec["fields"]["invoice_number"]["line"]]["text"] == "发票号码：12345678"
    app.button[0].click().run()     # saving the same page again replaces, not duplicates
    assert len(corpus.read_text(encoding="utf-8").splitlines()) == 1


def test_many_uploads_pages_and_bad_files_keep_the_app_running(app):
    upload(app, ("two_pages.png", png_bytes()), ("broken.png", b"\x89PNG garbage"), ("empty.png", b""))
    assert not app.exception
    picker = [s for s in app.selectbox if s.label == "Document 文档"][0]
    assert len(picker.options) == 3 and "failed" in picker.options[1]
    assert [s for s in app.selectbox if s.label == "Page 页"], "a two-page document gets a page picker"
    picker.set_value(1).run()
    assert "not an image" in app.error[0].value
    [s for s in app.selectbox if s.label == "Document 文档"][0].set_value(2).run()
    assert "empty (0 bytes)" in app.error[0].value


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
    assert any("invoice_number" in w for w in out.warnings)


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
    """A model directory as `retrain` exports it after adding a type: the default's labels plus
    parking_receipt, whose schema only this directory carries (weights are never loaded here)."""
    from models.extractor import DEFAULT_MODEL_DIR
    d = root / "retrained-v0001"
    (d / "schemas").mkdir(parents=True)
    cfg = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    cfg["doc_types"] = cfg["doc_types"] + ["parking_receipt"]
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
    monkeypatch.setattr(pipeline, "analyse_bytes", fake_analyse_bytes)
    monkeypatch.setattr(pipeline, "warm_up", lambda model_dir=None: None)
    st.cache_data.clear()       # model_choices() is cached across AppTest runs in this process
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    yield at, default, new
    st.cache_data.clear()


def type_picker(at: AppTest):
    return [s for s in at.sidebar.selectbox if s.label == "Document type 文档类型"][0]


def test_type_chooser_lists_only_the_selected_models_types(two_models_app):
    at, default, new = two_models_app
    model_picker = [s for s in at.sidebar.selectbox if s.label == "Model 模型"][0]
    assert model_picker.options == [default.name, new.name]
    offered = type_picker(at).options[1:]
    trained = json.loads((default / "labels.json").read_text(encoding="utf-8"))["doc_types"]
    assert len(offered) == len(trained) and "增值税发票 (vat_invoice)" in offered
    # the repo has schemas for these but the bundled model was never trained on them
    assert not any("business_licence" in o or "train_ticket" in o for o in offered)
    assert not any("parking_receipt" in o for o in offered)

    model_picker.set_value(str(new)).run()
    assert not at.exception
    offered = type_picker(at).options
    assert "停车收据 (parking_receipt)" in offered, "the retrained model's new type, labelled from its own schema"
    type_picker(at).set_value("parking_receipt").run()
    upload(at, ("inv.png", png_bytes()))
    assert CALLS[-1]["doc_type"] == "parking_receipt"
