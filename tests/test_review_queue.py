"""The review queue (issue 40, item 4): a file's documents, and the uploaded files, listed with the one that
most needs a look first, and straight-through documents marked. Under Streamlit's AppTest with a fixed
reading (no OCR, no model)."""
from __future__ import annotations

import numpy as np

from app.ui.review_queue import files_order, queue_label, queue_order
from data.document import Document, Field, Line, Page, box_to_quad
from data.schemas import load_schema
from data.validate import REVIEW_THRESHOLD, validate
from reading.route import Analysis
from tests.test_ui import png_bytes, upload
from tests.ui_harness import start_ui


def receipt(part: int, parts: int, *, date: str = "2024年03月05日", score: float = 0.99,
            source: str = "three.png") -> Document:
    """A receipt read from page `part` of its file: a store name (no check), a date and a total (checked)."""
    page = Page(index=part - 1, width=300, height=200, lines=[Line("丁便利店", box_to_quad([20, 20, 200, 40]))])
    doc = Document(source=source, pages=[page], doc_type="receipt", doc_type_score=0.9, part=part, parts=parts)
    doc.fields["store_name"] = Field("store_name", "丁便利店", raw="丁便利店", score=score, page=part - 1)
    doc.fields["date"] = Field("date", "", raw=date, score=0.99, page=part - 1)
    doc.fields["total_amount"] = Field("total_amount", "30.00", raw="30.00", score=0.99, page=part - 1)
    validate(doc, load_schema("receipt"))
    return doc


def three() -> list[Document]:
    """Document 1 passes straight through, document 2 has a store name to check (low confidence, no rule),
    document 3 a date that fails its check."""
    return [receipt(1, 3), receipt(2, 3, score=REVIEW_THRESHOLD - 0.1), receipt(3, 3, date="2024年13月45日")]


def test_queue_puts_failed_checks_first_then_fields_to_check_then_straight_through():
    docs = three()
    assert [d.straight_through for d in docs] == [True, False, False]
    assert queue_order(docs) == [2, 1, 0]
    assert queue_label(docs[0]).startswith("✓") and "1 未通过" in queue_label(docs[2])
    assert "1 待核对" in queue_label(docs[1])
    broken = Document(error={"type": "InputError", "message": "not an image"})
    assert queue_order([docs[0], broken]) == [1, 0], "a document that could not be read comes first"
    assert files_order([[docs[0]], [], [docs[0], docs[2]]]) == [2, 0, 1], "the worst file; an unread one last"
    docs[2].fields["date"] = Field("date", "", raw="2024年03月05日", score=1.0, page=2)
    validate(docs[2], load_schema("receipt"))        # corrected: it moves behind the one still to check
    assert queue_order(docs) == [1, 0, 2] and docs[2].straight_through


def analyse(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None, on_stage=None) -> Analysis:
    white = np.full((200, 300, 3), 255, np.uint8)
    if filename.startswith("three"):
        docs = three()
        return Analysis(Document(source=filename, pages=[p for d in docs for p in d.pages]), [white] * 3, docs)
    doc = receipt(1, 1, source=filename, score=0.99 if filename.startswith("good") else REVIEW_THRESHOLD - 0.1)
    return Analysis(doc, [white])


def test_ui_lists_a_file_s_documents_most_in_need_first_and_marks_straight_through(monkeypatch, tmp_path):
    at = start_ui(monkeypatch, tmp_path, analyse)
    upload(at, ("three.png", png_bytes()))
    assert not at.exception, at.exception
    picker = next(s for s in at.selectbox if s.label == "文件内文档 Document in this file")
    assert [o.split(" — ")[0] for o in picker.options] == ["第 3/3 份 Document 3 of 3", "第 2/3 份 Document 2 of 3",
                                                           "第 1/3 份 Document 1 of 3"]
    assert "直通" in picker.options[2] and "未通过" in picker.options[0]
    assert list(at.dataframe[0].value["#"]) == [3, 2, 1], "the overview in the same order"
    assert picker.value == 2, "the one that most needs a look is shown first"
    assert not any("green-badge" in m.value for m in at.markdown)
    picker.set_value(0).run()
    assert any("green-badge" in m.value and "直通" in m.value for m in at.markdown), "straight-through is marked"


def test_ui_lists_uploads_most_in_need_first(monkeypatch, tmp_path):
    at = start_ui(monkeypatch, tmp_path, analyse)
    upload(at, ("good.png", png_bytes()), ("doubtful.png", png_bytes((301, 200))))     # two contents: two readings
    files = next(s for s in at.selectbox if s.label == "文档 Document")
    assert [o.split(" — ")[0] for o in files.options] == ["doubtful.png", "good.png"]
    assert "待核对" in files.options[0] and "直通" in files.options[1]
