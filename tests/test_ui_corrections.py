"""Line items and form pairs corrected in the UI and saved with the right labels (issue 40, items 1 and 2).

Under Streamlit's AppTest with a fixed reading (no OCR, no model): cells, rows and pairs are edited, added
and deleted; the checked page is saved, imported back with `python -m training import`'s code
(data/importers `import_corpus("ours", ...)`) and compared with what the clerk saw, for fields, item cells
and pairs. Each saved value sits on the printed text that holds it: 大写 on its words, a typed value where
it is printed, or marked unlocated."""
from __future__ import annotations

import json
from dataclasses import replace as dc_replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app.ui.corrections import UNLOCATED, locate_text, page_record
from app.ui.fields import (
    COL_KEY,
    COL_NORM,
    COL_ROW,
    COL_VALUE,
    apply_item_edits,
    apply_pair_edits,
    fields_frame,
    item_header,
    items_frame,
    pairs_frame,
)
from data.document import Document, Field, Line, Page, Pair, box_to_quad
from data.importers import import_corpus
from reading.route import Analysis
from tests.test_ui import png_bytes, save_button, upload
from tests.ui_harness import start_ui

LINES = ["发票号码：12345678", "开票日期：2024年03月05日", "销售方：丁科技有限公司",
         "复印紙A4 箱 2 50.00 100.00", "打印纸 包 1 30.00 30.00", "订书钉 盒 1 5.00 5.00",
         "价税合计（大写）壹佰叁拾圆整", "（小写）¥130.00"]


def _box(i: int) -> list[float]:
    return [20.0, 10.0 + 22 * i, 280.0, 28.0 + 22 * i]


def invoice() -> Document:
    """An invoice page whose 大写 and 小写 are both printed, an item name OCR misread (紙 for 纸) and an
    item row (订书钉) printed but not read."""
    from data.schemas import load_schema
    from data.validate import validate
    page = Page(index=0, width=300, height=200, lines=[Line(t, box_to_quad(_box(i))) for i, t in enumerate(LINES)])
    doc = Document(source="inv.png", doc_type="vat_invoice", doc_type_score=0.9, pages=[page])
    for key, value, raw, line in (("invoice_number", "12345678", "12345678", 0),
                                  ("issue_date", "2024-03-05", "2024年03月05日", 1),
                                  ("total_with_tax", "130.00", "¥130.00", 7),
                                  ("total_with_tax_in_words", "130.00", "壹佰叁拾圆整", 6)):
        doc.fields[key] = Field(key, value, raw=raw, score=0.9, box=_box(line),
                                label=load_schema("vat_invoice").field(key).label)
    for line, cells in ((3, ("复印紙A4", "箱", "2", "50.00", "100.00")), (4, ("打印纸", "包", "1", "30.00", "30.00"))):
        doc.items.append({k: Field(k, v, raw=v, box=_box(line)) for k, v in
                          zip(("name", "unit", "quantity", "unit_price", "amount"), cells)})
    validate(doc, load_schema("vat_invoice"))
    return doc


FORM = [("申请人", "韦军磊"), ("部门", "客服部"), ("日期", "2024-05-06"), ("电话", "13800138000")]


def form() -> Document:
    """A generic form with four printed key-value pairs, of which the model read three (电话 missed)."""
    lines, pairs = [], []
    for i, (k, v) in enumerate(FORM):
        y = 20 + 40 * i
        lines += [Line(k, box_to_quad([20, y, 80, y + 20])), Line(v, box_to_quad([100, y, 200, y + 20]))]
        if k != "电话":
            pairs.append(Pair(key=k, value=v, key_box=[20, y, 80, y + 20], value_box=[100, y, 200, y + 20],
                              score=0.8))
    return Document(source="form.png", doc_type="generic_form", doc_type_score=0.9,
                    pages=[Page(index=0, width=300, height=200, lines=lines)], pairs=pairs)


def analyse(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None, on_stage=None) -> Analysis:
    doc = form() if "form" in filename else invoice()
    return Analysis(doc, [np.full((200, 300, 3), 255, np.uint8)])


@pytest.fixture()
def ui(monkeypatch, tmp_path) -> AppTest:
    return start_ui(monkeypatch, tmp_path, analyse)


def editor(at: AppTest, prefix: str):
    return next(e for e in at.data_editor if str(e.key).startswith(prefix))


def edit(at: AppTest, prefix: str, edited: dict | None = None, added: list | None = None,
         deleted: list | None = None) -> AppTest:
    """Edit the data editor whose key starts with `prefix` as a browser does: cells by row position and
    column name, rows added at the bottom, rows deleted by position."""
    at.session_state[editor(at, prefix).key] = {"edited_rows": edited or {}, "added_rows": added or [],
                                                "deleted_rows": deleted or []}
    at.run()
    assert not at.exception, at.exception
    return at


def current(at: AppTest) -> Document:
    return next(iter(at.session_state["analyses"].values()))["corrected"]


def imported(folder: Path, tmp_path: Path) -> list[dict]:
    """The corrections folder imported as `python -m training import --format ours` does, read back."""
    out = tmp_path / "imported"
    report = import_corpus("ours", folder, out)
    assert report.records_written == 1 and not report.errors, report.errors
    return [json.loads(line) for line in (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]


def placed(rec: dict, entry: dict, text: str, line: str = "line", span: str = "span") -> str:
    """The printed text a saved entry's line and span hold (must equal its `text`), for comparisons."""
    got = rec["lines"][entry[line]]["text"][entry[span][0]:entry[span][1]]
    assert got == entry[text]
    return got


# --- items --------------------------------------------------------------------------------------------

def test_item_cells_rows_added_and_deleted_are_kept_and_checked_again(ui):
    upload(ui, ("inv.png", png_bytes()))
    assert editor(ui, "items-").value.shape[0] == 2
    edit(ui, "items-", edited={0: {item_header(current(ui), "amount"): "90.00"}})      # 2 x 50.00 is not 90.00
    doc = current(ui)
    assert doc.items[0]["amount"].value == "90.00" and doc.items[0]["amount"].score == 1.0
    assert doc.items[0]["amount"].valid is False, "the edit is checked again: quantity x price != amount"
    assert any("数量乘单价" in w.value for w in ui.warning), [w.value for w in ui.warning]
    assert any("明细第 1 行" in c.value for c in ui.caption), "the UI says which row was corrected"
    edit(ui, "items-", edited={0: {item_header(doc, "amount"): "100.00"}})
    assert current(ui).items[0]["amount"].valid is True
    assert not any("数量乘单价" in w.value for w in ui.warning), "the fixed cell's warning is gone"
    headers = {k: item_header(doc, k) for k in ("name", "unit", "quantity", "unit_price", "amount")}
    edit(ui, "items-", deleted=[1], added=[{headers["name"]: "订书钉", headers["unit"]: "盒", headers["quantity"]: "1",
                                           headers["unit_price"]: "5.00", headers["amount"]: "5.00"}])
    doc = current(ui)
    assert [row["name"].value for row in doc.items] == ["复印紙A4", "订书钉"]
    assert doc.items[1]["amount"].value == "5.00" and doc.items[1]["amount"].page == 0
    assert editor(ui, "items-").value.shape[0] == 2


def test_apply_item_edits_without_streamlit():
    doc = invoice()
    frame = items_frame(doc, 0)
    frame.loc[0, item_header(doc, "name")] = "复印纸A4"
    frame = pd.concat([frame.iloc[[0]], pd.DataFrame([{COL_ROW: None, item_header(doc, "name"): "订书钉"}])])
    out, changed = apply_item_edits(doc, frame, page=0)
    assert [row["name"].raw for row in out.items] == ["复印纸A4", "订书钉"]
    assert len(changed) == 3 and [row["name"].value for row in doc.items] == ["复印紙A4", "打印纸"], "a copy"


# --- pairs --------------------------------------------------------------------------------------------

def test_pairs_keys_values_added_and_deleted_are_kept(ui):
    upload(ui, ("form.png", png_bytes()))
    assert editor(ui, "pairs-").value.shape[0] == 3
    edit(ui, "pairs-", edited={1: {"值 Value": "客户服务部"}, 2: {"键 Key": "申请日期"}})
    assert [(p.key, p.value) for p in current(ui).pairs] == [("申请人", "韦军磊"), ("部门", "客户服务部"),
                                                             ("申请日期", "2024-05-06")]
    edit(ui, "pairs-", deleted=[0], added=[{"键 Key": "电话", "值 Value": "13800138000"}])
    doc = current(ui)
    assert [(p.key, p.value, p.score) for p in doc.pairs] == [
        ("部门", "客户服务部", 1.0), ("申请日期", "2024-05-06", 1.0), ("电话", "13800138000", 1.0)]
    assert editor(ui, "pairs-").value.shape[0] == 3


def test_apply_pair_edits_without_streamlit():
    doc = form()
    frame = pairs_frame(doc, 0)
    frame.loc[0, "值 Value"] = ""
    frame.loc[0, "键 Key"] = ""
    out, changed = apply_pair_edits(doc, frame, page=0)
    assert [p.key for p in out.pairs] == ["部门", "日期"] and len(doc.pairs) == 3 and len(changed) == 1


# --- where a saved value sits -------------------------------------------------------------------------

def test_values_are_located_exactly_normalised_fuzzily_or_marked_unlocated():
    page = invoice().pages[0]
    assert locate_text(page, ["丁科技有限公司"])[:3] == (2, [4, 11], "exact")
    assert locate_text(page, ["2024-03-05"], field_type="date")[:3] == (1, [5, 16], "normalised")
    line, span, how, score = locate_text(page, ["复印纸A4"])
    assert (line, span, how) == (3, [0, 5], "fuzzy") and 0.75 <= score < 1
    assert locate_text(page, ["无处可寻的备注文字"]) is None
    assert locate_text(page, ["30.00"], box=_box(7))[:2] == (4, [8, 13]), "a figure is not found inside 130.00"
    assert locate_text(page, ["30.00"], box=_box(4), taken=[(4, 8, 13)])[:2] == (4, [14, 19]), "nor used twice"


def test_amount_words_are_saved_on_their_words_not_on_the_figure():
    """Reported (issue 40): 大写 was saved with the figure's line and span (its value 130.00 is printed on
    the 小写 line), so a retrained model learned to read 大写 as a figure."""
    rec = page_record(invoice(), 0, "images/x.png")
    words = rec["fields"]["total_with_tax_in_words"]
    assert words["line"] == 6 and words["text"] == "壹佰叁拾圆整" and words["located"] == "exact"
    assert words["value"] == "130.00" and words["raw"] == "壹佰叁拾圆整"
    figure = rec["fields"]["total_with_tax"]
    assert figure["line"] == 7 and figure["text"] == "¥130.00"
    doc = invoice()                     # a 大写 typed in as a figure is still looked for as words
    doc.fields["total_with_tax_in_words"].raw = "130.00"
    assert page_record(doc, 0, "images/x.png")["fields"]["total_with_tax_in_words"]["line"] == 6


# --- save, import, compare ----------------------------------------------------------------------------

def test_saved_invoice_reimports_to_what_the_clerk_saw(ui, tmp_path):
    upload(ui, ("inv.png", png_bytes()))
    edit(ui, "edit-", added=[], edited={
        int(np.flatnonzero(editor(ui, "edit-").value[COL_KEY] == "seller_name")[0]): {COL_VALUE: "丁科技有限公司"}})
    edit(ui, "edit-", edited={
        int(np.flatnonzero(editor(ui, "edit-").value[COL_KEY] == "remarks")[0]): {COL_VALUE: "无处可寻的备注文字"}})
    doc = current(ui)
    h = {k: item_header(doc, k) for k in ("name", "unit", "quantity", "unit_price", "amount")}
    edit(ui, "items-", edited={0: {h["name"]: "复印纸A4"}}, deleted=[1], added=[
        {h["name"]: "订书钉", h["unit"]: "盒", h["quantity"]: "1", h["unit_price"]: "5.00", h["amount"]: "5.00"}])
    seen_fields = fields_frame(current(ui), 0)
    seen_fields = seen_fields[seen_fields[COL_VALUE] != ""]
    seen_items = editor(ui, "items-").value
    ui.checkbox[0].check().run()
    save_button(ui).click().run()
    assert not ui.exception and not ui.error, [e.value for e in ui.error]

    [rec] = imported(tmp_path / "corrections", tmp_path)
    fields = rec["fields"]
    assert {k: (f["raw"], f["value"]) for k, f in fields.items()} == \
        {r[COL_KEY]: (r[COL_VALUE], r[COL_NORM]) for _, r in seen_fields.iterrows()}, "every field as shown"
    assert placed(rec, fields["seller_name"], "text") == "丁科技有限公司" and fields["seller_name"]["line"] == 2
    assert placed(rec, fields["total_with_tax_in_words"], "text") == "壹佰叁拾圆整"
    assert placed(rec, fields["issue_date"], "text") == "2024年03月05日"
    remark = fields["remarks"]
    assert remark["located"] == UNLOCATED and remark["line"] is None and remark["span"] is None
    assert remark["value"] == "无处可寻的备注文字" and remark["box"] is None

    shown = [{k: row[h[k]] for k in h if row[h[k]]} for _, row in seen_items.iterrows()]
    assert [{k: c["value"] for k, c in row.items()} for row in rec["items"]] == shown, "every item cell as shown"
    name, added = rec["items"][0]["name"], rec["items"][1]
    assert name["located"] == "fuzzy" and placed(rec, name, "text") == "复印紙A4" and name["value"] == "复印纸A4"
    assert {k: (c["line"], placed(rec, c, "text")) for k, c in added.items()} == {
        "name": (5, "订书钉"), "unit": (5, "盒"), "quantity": (5, "1"), "unit_price": (5, "5.00"),
        "amount": (5, "5.00")}, "a row typed in is found where it is printed"
    assert added["unit_price"]["span"] != added["amount"]["span"], "price and amount on their own figures"


def test_saved_form_reimports_to_what_the_clerk_saw_with_its_pairs_linked(ui, tmp_path):
    upload(ui, ("form.png", png_bytes()))
    edit(ui, "pairs-", edited={1: {"值 Value": "客服部门"}}, deleted=[0],
         added=[{"键 Key": "电话", "值 Value": "13800138000"}, {"键 Key": "邮箱", "值 Value": "nobody@example.com"}])
    seen = [(r["键 Key"], r["值 Value"]) for _, r in editor(ui, "pairs-").value.iterrows()]
    ui.checkbox[0].check().run()
    save_button(ui).click().run()
    assert not ui.exception and not ui.error, [e.value for e in ui.error]

    [rec] = imported(tmp_path / "corrections", tmp_path)
    assert [(p["key"], p["value"]) for p in rec["pairs"]] == seen == [
        ("部门", "客服部门"), ("日期", "2024-05-06"), ("电话", "13800138000"), ("邮箱", "nobody@example.com")]
    dept, date, phone, mail = rec["pairs"]
    assert dept["value_located"] == "fuzzy" and placed(rec, dept, "value_text", "value_line", "value_span") == "客服部"
    assert (phone["key_line"], phone["value_line"]) == (6, 7) and phone["value_located"] == "exact"
    assert mail["key_located"] == mail["value_located"] == UNLOCATED and mail["value_line"] is None
    labels = {ln["text"]: ln["label"] for ln in rec["lines"]}
    assert labels == {"申请人": None, "韦军磊": None, "部门": "question", "客服部": "answer", "日期": "question",
                      "2024-05-06": "answer", "电话": "question", "13800138000": "answer"}, \
        "the deleted pair is no training example; the pairs kept and added are, as the form model learns them"
    links = sorted(tuple(link) for ln in rec["lines"] for link in ln["linking"])
    assert links == [(2, 3), (4, 5), (6, 7)]


def test_a_later_document_of_a_file_saves_its_items_and_pairs_with_its_page():
    """A document found on page 3 of a file (its only page, `Page.index` 2): its fields, item cells and pairs
    carry page 2 and are saved in that page's record; before, items and pairs of such a page were dropped."""
    doc = invoice()
    doc.pages = [dc_replace(doc.pages[0], index=2)]
    for f in [*doc.fields.values(), *(c for row in doc.items for c in row.values())]:
        f.page = 2
    doc.pairs = [Pair(key="销售方", value="丁科技有限公司", page=2)]
    rec = page_record(doc, 0, "images/x.png")
    assert len(rec["fields"]) == 4 and len(rec["items"]) == 2
    assert [(p["key_line"], p["value_line"]) for p in rec["pairs"]] == [(2, 2)], "key and value on one line"
    assert all(ln["label"] is None for ln in rec["lines"]), "a pair on one line labels no line"


def test_a_typed_value_does_not_take_the_print_of_a_value_the_model_read():
    """Each printed value labels one thing; values read by the model (with a box) are placed first, so a total
    typed in as 100.00 does not take the item amount printed on the item row."""
    doc = invoice()
    doc.fields["total_amount"] = Field("total_amount", "100.00", raw="100.00", score=1.0)
    rec = page_record(doc, 0, "images/x.png")
    assert (rec["items"][0]["amount"]["line"], rec["items"][0]["amount"]["located"]) == (3, "exact")
    assert rec["fields"]["total_amount"]["line"] != 3
