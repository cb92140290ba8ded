"""Downloads from the UI: JSON, a CSV of fields, a CSV of line items and one Excel workbook.

Each export takes a list of (file name, Document) so that one document, one file of several
documents and a whole multi-file upload export the same way: one row per document in the fields CSV
(the batch CSV's layout, which accounting tools import), one row per line item in the items CSV, and
a workbook with the sheets 字段 Fields (one row per field), 明细 Items and 键值对 Pairs. CSVs are UTF-8
with a BOM, which Excel needs to show Chinese.

No cell can run as a formula: a string a spreadsheet would evaluate (`=HYPERLINK(...)` printed on a form,
a file name starting with + - @) gets a leading single quote in the CSVs (app/batch/csv_out.py
`spreadsheet_text`), and in the workbook keeps its text but is stored as a text cell with Excel's
quote prefix (`_as_text`), so Excel shows it as typed and does not evaluate it, even after an edit.
Numbers stay number cells.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from app.batch.csv_out import BASE_COLUMNS, csv_records, field_columns, formula_like, has_pairs, spreadsheet_row
from app.batch.csv_out import PAIR_COLUMNS as CSV_PAIR_COLUMNS
from app.ui.fields import item_header, item_keys, load_schema_or_none
from app.ui.words import check_words
from data.document import Document

Named = list[tuple[str, Document]]      # (upload's file name, one document read from it)

FIELD_SHEET, ITEM_SHEET, PAIR_SHEET = "字段 Fields", "明细 Items", "键值对 Pairs"
FIELD_COLUMNS = ["文件 File", "文档 Document", "页 Page", "字段 Field", "key", "识别值 Value", "规范值 Normalised",
                 "置信度 Confidence", "校验 Check"]
ITEM_LEAD = ["文件 File", "文档 Document", "页 Page", "行 Row"]
PAIR_COLUMNS = ["文件 File", "文档 Document", "页 Page", "键 Key", "值 Value", "置信度 Confidence"]


def _csv(rows: list[list[Any]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerows(spreadsheet_row(row) for row in rows)
    return buf.getvalue().encode("utf-8-sig")


def export_json(docs: Named) -> bytes:
    """One document as its JSON object; several as a list of them."""
    dicts = [d.to_dict() for _, d in docs]
    return json.dumps(dicts[0] if len(dicts) == 1 else dicts, ensure_ascii=False, indent=2).encode("utf-8")


def fields_csv(docs: Named) -> bytes:
    """One row per document in the batch CSV's columns (file, part, ..., then each field); a form's
    key-value pairs one row each, in the batch CSV's pair columns."""
    rows = []
    for name, doc in docs:
        row = doc.to_dict()
        row["file"] = name or doc.source
        rows.append(row)
    types = {d.doc_type for _, d in docs}
    columns = field_columns(rows, types.pop() if len(types) == 1 else None)
    pairs = has_pairs(rows)
    header = BASE_COLUMNS + columns + (CSV_PAIR_COLUMNS if pairs else [])
    return _csv([header] + [rec for r in rows for rec in csv_records(r, columns, pairs)])


def _item_columns(docs: Named) -> list[tuple[str, str]]:
    """(header, key) of every item column of these documents, each once, in invoice order."""
    seen: dict[str, str] = {}
    for _, doc in docs:
        for k in item_keys(doc):
            seen.setdefault(k, item_header(doc, k))
    return [(h, k) for k, h in seen.items()]


def field_rows(docs: Named) -> list[list[Any]]:
    rows = []
    for name, doc in docs:
        schema = load_schema_or_none(doc.doc_type)
        keys = list(schema.keys()) if schema else []
        keys += [k for k in doc.fields if k not in keys]
        for key in keys:
            f = doc.fields.get(key)
            if f is None:
                continue
            rows.append([name, doc.part, f.page + 1, f.label or key, key, f.raw or f.value, f.value,
                         round(float(f.score), 4), check_words(doc, key, f)])
    return rows


def item_rows(docs: Named, columns: list[tuple[str, str]]) -> list[list[Any]]:
    rows = []
    for name, doc in docs:
        for i, row in enumerate(doc.items):
            page = next((f.page + 1 for f in row.values()), None)
            rows.append([name, doc.part, page, i + 1] + [row[k].value if k in row else "" for _, k in columns])
    return rows


def pair_rows(docs: Named) -> list[list[Any]]:
    return [[name, doc.part, p.page + 1, p.key, p.value, round(float(p.score), 4)]
            for name, doc in docs for p in doc.pairs]


def items_csv(docs: Named) -> bytes:
    columns = _item_columns(docs)
    return _csv([ITEM_LEAD + [h for h, _ in columns]] + item_rows(docs, columns))


def _as_text(cell: Any) -> None:
    """Make a formula-like string cell plain text: openpyxl stores any string starting with "=" as a
    formula, and Excel re-reads a + - @ cell as one when it is edited. A text cell with the quote prefix
    (Excel's own mark for "typed with a leading apostrophe") shows the characters and runs nothing."""
    if formula_like(cell.value):
        cell.data_type = "s"
        cell.quotePrefix = True


def workbook(docs: Named) -> bytes:
    """An .xlsx with the sheets 字段 Fields, 明细 Items and 键值对 Pairs (headers bold, first row frozen,
    columns sized to their text), built in memory with openpyxl."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    columns = _item_columns(docs)
    sheets = [(FIELD_SHEET, FIELD_COLUMNS, field_rows(docs)),
              (ITEM_SHEET, ITEM_LEAD + [h for h, _ in columns], item_rows(docs, columns)),
              (PAIR_SHEET, PAIR_COLUMNS, pair_rows(docs))]
    book = Workbook()
    book.remove(book.active)
    for title, header, rows in sheets:
        ws = book.create_sheet(title)
        ws.append(header)
        for row in rows:
            ws.append(row)
        for line in ws.iter_rows():
            for cell in line:
                _as_text(cell)
        for cell in ws[1]:
            cell.font = Font(bold=True)
        ws.freeze_panes = "A2"
        for i, name in enumerate(header):
            width = max([len(str(name))] + [len(str(r[i])) for r in rows[:200] if i < len(r)])
            ws.column_dimensions[ws.cell(row=1, column=i + 1).column_letter].width = min(60, 4 + 1.6 * width)
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
