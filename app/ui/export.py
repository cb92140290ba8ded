"""Downloads from the UI: JSON, a CSV of fields, a CSV of line items and one Excel workbook.

Each export takes a list of (file name, Document) so that one document, one file of several
documents and a whole multi-file upload export the same way: one row per document in the fields CSV
(the batch CSV's layout and column order, which accounting tools import; a form's pairs in its "pairs"
column), one row per line item in the items CSV, and the invoice register workbook of the batch's --xlsx
(app/batch/xlsx_out.py: 发票 Invoices, 明细 Items, a sheet per other type, 键值对 Pairs, 其他 Other) with a
review sheet 字段 Fields at the end (one row per field, with its confidence and check); a form's tables are
on the register's 表格 Tables sheet and in the tables CSV, one row per cell. Duplicates within the
documents exported (and, with a register, `duplicates`) are in the duplicate_of columns. CSVs are UTF-8
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

from app.batch.csv_out import csv_table, spreadsheet_row, tables_table
from app.batch.xlsx_out import register_bytes
from app.batch.xlsx_out import text_cell as _as_text  # noqa: F401  (the name older callers import)
from app.register import mark_duplicates
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


def result_rows(docs: Named, duplicates: dict[int, tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """The documents as the batch's result rows ("file" = the upload's name), marked with their duplicates
    among themselves, or with `duplicates` (index -> (duplicate_of, near_duplicate_of)) where the caller
    found them (the UI, against its register)."""
    rows = []
    for name, doc in docs:
        row = doc.to_dict()
        row["file"] = name or doc.source
        rows.append(row)
    mark_duplicates(rows)
    for i, (dup, near) in (duplicates or {}).items():
        rows[i]["duplicate_of"], rows[i]["near_duplicate_of"] = dup, near
    return rows


def session_duplicates(docs: Named, register_path: str | None = None, hashes: list[str] | None = None
                       ) -> dict[int, tuple[str, str]]:
    """(duplicate_of, near_duplicate_of) of each document that has either, by its index in `docs`: among the
    session's documents, and with `register_path` (PIAOJU_REGISTER) among those of earlier runs and
    sessions too, which records these (a document is one entry, by name, content hash from `hashes` and
    part, however often the page reruns)."""
    rows = [{**doc.to_dict(), "file": name or doc.source, "sha256": (hashes or [])[i] if i < len(hashes or []) else ""}
            for i, (name, doc) in enumerate(docs)]
    if register_path:
        from app.register import InvoiceRegister
        with InvoiceRegister(register_path, timeout=10.0) as register:
            mark_duplicates(rows, register)
    else:
        mark_duplicates(rows)
    return {i: (r["duplicate_of"], r["near_duplicate_of"]) for i, r in enumerate(rows)
            if r["duplicate_of"] or r["near_duplicate_of"]}


def fields_csv(docs: Named, duplicates: dict[int, tuple[str, str]] | None = None) -> bytes:
    """One row per document in the batch CSV's columns (file, part, ..., duplicate_of, then each field in
    schema order); a form's key-value pairs in its `pairs` column as JSON."""
    types = {d.doc_type for _, d in docs}
    return _csv(csv_table(result_rows(docs, duplicates), types.pop() if len(types) == 1 else None, ordered=False))


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


def tables_csv(docs: Named) -> bytes:
    """Every cell of the documents' tables, one row each (the batch's tables CSV: file, part, page, table,
    record, column, text), documents in the order of the uploads."""
    rows = [{**doc.to_dict(), "file": name or doc.source} for name, doc in docs]
    return _csv(tables_table(rows, ordered=False))


def items_csv(docs: Named) -> bytes:
    columns = _item_columns(docs)
    return _csv([ITEM_LEAD + [h for h, _ in columns]] + item_rows(docs, columns))


def workbook(docs: Named, duplicates: dict[int, tuple[str, str]] | None = None) -> bytes:
    """The invoice register workbook of these documents (app/batch/xlsx_out.py), then the review sheet
    字段 Fields (one row per field: confidence and check), built in memory with openpyxl."""
    return register_bytes(result_rows(docs, duplicates), [(FIELD_SHEET, FIELD_COLUMNS, field_rows(docs))],
                          ordered=False)


XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
