"""No cell of a CSV or Excel file the product writes can run as a spreadsheet formula (OWASP: CSV
injection): a form printed with `=HYPERLINK("http://evil.example/x","OPEN")`, or a file named `+cmd.png`,
reaches the batch CSV (app/batch/csv_out.py) and the UI's CSV and Excel downloads (app/ui/export.py)
as text, while a plain number such as -12.50 stays a number."""
from __future__ import annotations

import csv
import io
import os

import pytest
from openpyxl import load_workbook
from PIL import Image

from app.batch.command import run_batch
from app.batch.csv_out import formula_like, spreadsheet_text
from app.batch.worker import WorkerOptions
from app.ui.export import fields_csv, items_csv, workbook
from app.ui.fields import document_csv
from data.document import Document, Field, Page, Pair
from reading.route import Analysis

HOSTILE = {
    "link": '=HYPERLINK("http://evil.example/x","OPEN")',
    "cmd": "+cmd|' /C calc'!A0",
    "minus": "-1+1",
    "at": "@SUM(1+1)",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
}
AMOUNT = "-12.50"                     # a plain negative number: no formula, and tools must read a number
HOSTILE_NAMES = ["=1+1.png", "+cmd.png", "-1+1.png", "@SUM(A1).png"]


def test_formula_like_strings_get_a_quote_and_numbers_do_not():
    for text in [*HOSTILE.values(), "=1", "+", "-", "@", "-x", "+86 138 0000 0000"]:
        assert formula_like(text) and spreadsheet_text(text) == "'" + text, text
    for value in [AMOUNT, "-1,234.50", "+3", "-.5", "-1e3", "-5%", "12.50", "发票", "", "a=b", -12.5, 3, None]:
        assert not formula_like(value) and spreadsheet_text(value) == value, value


def hostile_document(name: str) -> Document:
    doc = Document(source=name, doc_type="receipt", doc_type_score=0.9, pages=[Page(index=0, width=40, height=30)])
    for key, text in {**HOSTILE, "amount": AMOUNT}.items():
        doc.fields[key] = Field(key=key, value=text, raw=text, label=key, score=0.9)
    doc.items.append({"name": Field("name", HOSTILE["link"]), "amount": Field("amount", AMOUNT)})
    doc.pairs = [Pair(key=HOSTILE["at"], value=HOSTILE["link"], score=0.8)]
    return doc


def hostile_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """A batch processor (WorkerOptions.processor): every file reads as the hostile document."""
    return Analysis(hostile_document(os.path.basename(path)))


def _no_formula(cells: list[str]) -> None:
    """Every CSV cell a spreadsheet would evaluate is quoted: none starts with a formula character."""
    bad = [c for c in cells if formula_like(c)]
    assert not bad, bad


def test_batch_csv_quotes_hostile_values_and_file_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in HOSTILE_NAMES:
        Image.new("RGB", (40, 30), "white").save(tmp_path / name)
    table = tmp_path / "table.csv"
    run_batch(HOSTILE_NAMES, str(tmp_path / "results.jsonl"), csv_path=str(table), progress=False,
              options=WorkerOptions(processor="tests.test_csv_escape:hostile_analyse", warm_up=False))
    with open(table, encoding="utf-8-sig", newline="") as fh:
        records = list(csv.DictReader(fh))
    assert sorted(r["source"] for r in records) == sorted("'" + n for n in HOSTILE_NAMES)   # the file's name
    for record in records:
        _no_formula(list(record.values()))
        assert {k: record[k] for k in HOSTILE} == {k: "'" + v for k, v in HOSTILE.items()}
        assert record["amount"] == AMOUNT, "a plain number is not quoted"


def test_ui_csvs_quote_hostile_values_and_file_names():
    docs = [(name, hostile_document(name)) for name in HOSTILE_NAMES]
    for data in (fields_csv(docs), items_csv(docs), document_csv(docs[0][1], HOSTILE_NAMES[0])):
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
        cells = [c for row in rows for c in row]
        _no_formula(cells)
        assert "'" + HOSTILE["link"] in cells and "'" + HOSTILE_NAMES[0] in cells and AMOUNT in cells


@pytest.mark.parametrize("sheet", ["字段 Fields", "明细 Items", "键值对 Pairs"])
def test_excel_cells_are_text_not_formulas(sheet):
    docs = [(name, hostile_document(name)) for name in HOSTILE_NAMES]
    book = load_workbook(io.BytesIO(workbook(docs)))
    cells = [c for row in book[sheet].iter_rows() for c in row if c.value is not None]
    ours = [c for c in cells if c.data_type == "f" and book[sheet].cell(row=c.row, column=1).value == "合计 Total"]
    assert all(c.value.startswith("=SUM(") for c in ours), "only the totals row holds formulas: our own SUMs"
    cells = [c for c in cells if c not in ours]
    assert not [c.coordinate for c in cells if c.data_type == "f"], "a cell became a formula"
    values = {c.value for c in cells}
    assert HOSTILE["link"] in values and set(HOSTILE_NAMES) <= values, "the text is kept as printed"
    for cell in cells:
        if formula_like(cell.value):
            assert cell.data_type == "s" and cell.quotePrefix, (cell.coordinate, cell.value)
    numbers = [c for c in cells if isinstance(c.value, (int, float))]
    assert numbers and all(c.data_type == "n" for c in numbers), "page numbers and scores stay numbers"
    if sheet == "明细 Items":
        amount = next(c for c in cells if c.value == float(AMOUNT))
        assert amount.data_type == "n" and amount.number_format == "0.00", "a negative amount is a number"
