"""A form's tables (`Document.tables`) where a user meets results: the UI's 表格 Tables tab, the Excel register's
表格 Tables sheet (UI and batch --xlsx), the batch's tables CSV beside --csv and its JSONL rows, and the
summary of `python -m app extract`. Documents are built by hand (nothing reads tables from a page here),
and the pipeline is swapped for stand-ins, so no OCR and no model runs.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from app.batch.command import run_batch
from app.batch.csv_out import TABLE_COLUMNS, tables_csv_path
from app.batch.worker import WorkerOptions
from app.batch.xlsx_out import INVOICE_SHEET, ITEM_SHEET, PAIR_SHEET, TABLE_SHEET, register_bytes
from app.ui.export import tables_csv, workbook
from data.document import Cell, Document, Line, Page, Pair, Table, box_to_quad
from reading import route
from reading.route import Analysis
from tests.ui_harness import start_ui

UI = str(Path(__file__).resolve().parents[1] / "app" / "ui" / "main.py")

MEMBERS = [["父亲", "李建国", "196503"], ["母亲", "王芳", "196708"], ["本人", "李明", "199005"],
           ["妹妹", "李红", "=HYPERLINK(\"http://x\")"]]


def member_table(page: int = 0) -> Table:
    """家庭成员: 称谓 | 姓名 | 出生年月 over four records, each cell with a box."""
    rows = [[Cell(text, [20 + 90 * c, 100 + 30 * r, 100 + 90 * c, 125 + 30 * r]) for c, text in enumerate(record)]
            for r, record in enumerate(MEMBERS)]
    return Table(columns=["称谓", "姓名", "出生年月"], rows=rows, column_boxes=[None, None, None],
                 box=[20, 70, 290, 245], score=0.9, page=page)


def resume_table(page: int = 0) -> Table:
    """Other columns than the member list (and a repeated column name), to share the long format."""
    return Table(columns=["起始年月", "终止年月", "单位", "单位"],
                 rows=[[Cell("2008.09"), Cell("2012.06"), Cell("某大学"), Cell("")]], page=page)


def table_form(name: str = "form.png", pages: int = 1, tables: list[Table] | None = None) -> Document:
    """A generic form with one pair and the given tables (default: the member list on page 1)."""
    doc = Document(source=name, doc_type="generic_form", doc_type_score=0.9,
                   pages=[Page(index=i, width=300, height=260,
                               lines=[Line("申请人", box_to_quad([20, 20, 80, 40]))]) for i in range(pages)],
                   pairs=[Pair("申请人", "李明", [20, 20, 80, 40], [100, 20, 160, 40], 0.9)])
    doc.tables = [member_table()] if tables is None else tables
    return doc


# --- the UI ---------------------------------------------------------------------------------------------

def fake_analyse_bytes(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None,
                       on_stage=None) -> Analysis:
    pages = 2 if "two" in filename else 1
    tables = [member_table(0), resume_table(1)] if pages == 2 else ([] if "plain" in filename else None)
    return Analysis(table_form(filename, pages, tables), [np.full((260, 300, 3), 255, np.uint8)] * pages)


@pytest.fixture()
def app(monkeypatch, tmp_path):
    return start_ui(monkeypatch, tmp_path, fake_analyse_bytes)


def png_bytes(width: int) -> bytes:
    """A blank page; its width makes its content, which is what the UI caches an analysis by."""
    buf = io.BytesIO()
    Image.new("RGB", (width, 260), "white").save(buf, format="PNG")
    return buf.getvalue()


def upload(at: AppTest, name: str) -> AppTest:
    at.file_uploader[0].set_value([(name, png_bytes(300 + len(name)), "image/png")])
    return at.run()


def test_ui_shows_a_forms_table_with_its_columns_and_page(app):
    upload(app, "form.png")
    assert not app.exception and not app.error
    assert [t.label for t in app.tabs][:2] == ["键值对 Pairs (1)", "表格 Tables (1)"]
    shown = [d.value for d in app.dataframe if "称谓" in d.value.columns]
    assert len(shown) == 1, "the table is shown as a table of its own"
    frame = shown[0]
    assert list(frame.columns) == ["称谓", "姓名", "出生年月"], "the header row names the columns"
    assert frame.values.tolist() == MEMBERS, "one row per record, cells as read"
    words = "\n".join(str(m.value) for m in app.markdown)
    assert "表格 1 Table 1" in words and "第 1 页 page 1" in words and "3 列 columns × 4 行 records" in words
    assert {m.label: m.value for m in app.metric}["表格 Tables"] == "1"
    assert [b.label for b in app.get("download_button")][-1] == "表格 CSV"


def test_ui_shows_each_table_on_its_own_page_and_nothing_without_tables(app):
    upload(app, "two.png")
    assert not app.exception
    assert "表格 Tables (1)" in [t.label for t in app.tabs]
    assert any(list(d.value.columns) == ["称谓", "姓名", "出生年月"] for d in app.dataframe)
    next(s for s in app.selectbox if s.label == "页 Page").set_value(1).run()
    assert not app.exception
    [resume] = [d.value for d in app.dataframe if "起始年月" in d.value.columns]
    assert list(resume.columns) == ["起始年月", "终止年月", "单位", "单位 (4)"], "a repeated name gets its position"
    assert not any("称谓" in d.value.columns for d in app.dataframe), "page 1's table is not on page 2"
    assert "第 2 页 page 2" in "\n".join(str(m.value) for m in app.markdown)

    upload(app, "plain.png")
    assert not app.exception
    assert not any("表格" in t.label for t in app.tabs), "no tables tab where the document has none"
    assert "表格 Tables" not in {m.label for m in app.metric}
    assert "表格 CSV" not in [b.label for b in app.get("download_button")]


# --- Excel and CSV exports ------------------------------------------------------------------------------

def test_excel_register_has_the_tables_sheet_in_long_format():
    from openpyxl import load_workbook
    docs = [("a.png", table_form("a.png", 2, [member_table(0), resume_table(1)])),
            ("b.png", table_form("b.png"))]
    book = load_workbook(io.BytesIO(workbook(docs)))
    assert book.sheetnames == [INVOICE_SHEET, ITEM_SHEET, PAIR_SHEET, TABLE_SHEET, "字段 Fields"], "no Other sheet"
    rows = list(book[TABLE_SHEET].iter_rows(values_only=True))
    assert rows[0] == ("文件", "文档", "页", "表格", "记录", "列名", "内容") and rows[1] == tuple(TABLE_COLUMNS)
    body = rows[2:]
    assert len(body) == 4 * 3 + 1 * 4 + 4 * 3, "one row per cell of every table of every document"
    assert body[0] == ("a.png", 1, 1, 1, 1, "称谓", "父亲")
    assert body[5] == ("a.png", 1, 1, 1, 2, "出生年月", "196708"), "a date-like cell stays text"
    assert ("a.png", 1, 2, 2, 1, "单位 (4)", None) in body, "the second table, on page 2, with its own columns"
    assert ("b.png", 1, 1, 1, 4, "姓名", "李红") in body
    formula = book[TABLE_SHEET].cell(row=2 + 12, column=7)
    assert formula.value == MEMBERS[3][2] and formula.data_type == "s", "a printed formula is kept as text"
    # a register of documents without tables gets no tables sheet (as the pairs sheet)
    plain = load_workbook(io.BytesIO(register_bytes([{**table_form(tables=[]).to_dict(), "file": "c.png"}])))
    assert TABLE_SHEET not in plain.sheetnames


def test_ui_tables_csv_is_the_long_format():
    text = tables_csv([("a.png", table_form("a.png"))]).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == TABLE_COLUMNS and len(rows) == 1 + 12
    assert rows[1] == ["a.png", "1", "1", "1", "1", "称谓", "父亲"]
    assert rows[-1][-1] == "'" + MEMBERS[3][2], "a formula-like cell is quoted, as in every CSV"


# --- batch ----------------------------------------------------------------------------------------------

def table_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Stands in for reading.route.analyse_file: files named form* are forms with the member table, others
    forms without tables."""
    name = os.path.basename(path)
    return Analysis(table_form(name, tables=None if name.startswith("form") else []),
                    [np.zeros((260, 300, 3), np.uint8)])


def read_csv(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return list(csv.reader(fh))


def test_batch_writes_tables_in_jsonl_csv_and_xlsx_and_keeps_them_on_resume(tmp_path):
    from openpyxl import load_workbook
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("form1.png", "plain.png"):
        Image.new("RGB", (30, 20), "white").save(folder / name)
    out, table, book = tmp_path / "results.jsonl", tmp_path / "results.csv", tmp_path / "台账.xlsx"
    options = WorkerOptions(processor="tests.test_tables_output:table_analyse", warm_up=False)
    run_batch([str(folder)], str(out), csv_path=str(table), xlsx_path=str(book), progress=False, options=options)
    rows = {Path(r["file"]).name: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert Document.from_dict(rows["form1.png"]).tables == [member_table()], "the JSONL row carries the table whole"
    assert rows["plain.png"]["tables"] == []
    cells = tmp_path / "results.tables.csv"
    assert tables_csv_path(str(table)) == str(cells)
    lines = read_csv(cells)
    assert lines[0] == TABLE_COLUMNS and len(lines) == 1 + 12
    assert [Path(lines[1][0]).name] + lines[1][1:] == ["form1.png", "1", "1", "1", "1", "称谓", "父亲"]
    assert "tables" not in read_csv(table)[0], "the per-document CSV keeps its columns"
    sheet = load_workbook(book)[TABLE_SHEET]
    assert sheet.max_row == 2 + 12

    # a resumed run reads nothing again and rebuilds the file from every row, as the CSV
    cells.unlink()
    run_batch([str(folder)], str(out), csv_path=str(table), progress=False, options=options)
    assert read_csv(cells) == lines


def test_batch_without_tables_makes_no_tables_csv_and_never_leaves_a_stale_one(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    Image.new("RGB", (30, 20), "white").save(folder / "plain.png")
    options = WorkerOptions(processor="tests.test_tables_output:table_analyse", warm_up=False)
    cells = tmp_path / "r.tables.csv"

    def batch() -> None:
        run_batch([str(folder)], str(tmp_path / "r.jsonl"), csv_path=str(tmp_path / "r.csv"), progress=False,
                  options=options)

    batch()
    assert (tmp_path / "r.csv").exists() and not cells.exists(), "an invoice batch gets no empty tables file"
    cells.write_text("file,part\nold.png,1\n", encoding="utf-8-sig")    # left by an earlier run
    batch()
    assert read_csv(cells) == [TABLE_COLUMNS], "rebuilt from the rows of now: no table is left over"


# --- python -m app extract --------------------------------------------------------------------------------

def test_extract_prints_a_summary_of_each_table_and_json_holds_them(tmp_path, monkeypatch, capsys):
    from app.extract_cmd import main
    path = tmp_path / "form.png"
    Image.new("RGB", (30, 20), "white").save(path)
    many = member_table()
    many.rows = many.rows * 2
    doc = table_form("form.png", 2, [many, resume_table(1)])
    doc.signatures = [Pair("负责人签名", "王伟", page=1)]
    monkeypatch.setattr(route, "analyse_file", lambda *a, **k: Analysis(doc))
    assert main([str(path), "--json", str(tmp_path / "out.json")]) == 0
    printed = capsys.readouterr().out
    assert "表格 1 (第1页): 3 列 x 8 行: 称谓 | 姓名 | 出生年月" in printed
    assert "1: 父亲 | 李建国 | 196503" in printed and "... 5 more" in printed, "the first records, then a count"
    assert "表格 2 (第2页): 4 列 x 1 行: 起始年月 | 终止年月 | 单位 | 单位" in printed
    assert "签名 负责人签名" in printed and "王伟" in printed          # the signature block, apart from the pairs
    written = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert Document.from_dict(written).signatures == doc.signatures
    assert Document.from_dict(written).tables == [many, resume_table(1)]
