"""The batch CSV: one row per document, one column per field, rebuilt from the results JSONL.

Columns are the same from run to run over the same files: the base columns, `duplicate_of` and
`near_duplicate_of` (app/register.py), then the fields in schema order (data/schemas/*.yaml): the type
chosen with --type first, then every other type found, in TYPE_ORDER, each field once; a field no schema
names comes last, in alphabetical order. Rows are in file order (path, then part). (The header used to
follow the order in which fields were first seen, which depends on which worker finished first and on
each document's own field order, so it changed between runs.)

A form (a document with key-value pairs and no schema fields) is one row too: its pairs go in the
`pairs` column as JSON (`[{"key": "姓名", "value": "李明", "score": 0.9, "page": 1}, ...]`), added when any
document of the table has pairs.

A form's tables (`Document.tables`: a header row of column names over one record per row) do not fit one
row per document: the batch writes them beside the CSV, `results.csv` -> `results.tables.csv`, in long
format, one line per cell (file, part, page, table, record, column, text; `tables_table`), so tables with
different columns share one file. Only made when some document has tables.

A file holding several documents (a PDF of two invoices) gives one CSV row for each, numbered by
the `part` and `parts` columns, with the document's page numbers in the file in `page` ("3", "3-4");
only the newest complete set of rows per file is shown.

The header is the English keys, one line, for tools that read the table; `labels=True` (batch
--csv-labels) puts a line of the schemas' Chinese labels above it, for people. Codes and numbers are
written as printed (all 20 digits of a 数电票 number); Excel's "open" reads a long digit string as a number
(2.5E+19), so open the --xlsx register in Excel, or import the CSV with those columns set to Text.

The CSV is derived data: it is written at the end of a run from every row in the JSONL (so a resumed
run's table includes what earlier runs did), to a temporary file that is renamed over the target, so
a reader never sees half a table. Encoding is UTF-8 with a byte-order mark, which Excel needs to show
Chinese text correctly.

Every cell goes through `spreadsheet_text` (the UI's CSV downloads and the workbooks too): a value or
file name that a spreadsheet would read as a formula (a form printed with
`=HYPERLINK("http://evil.example/x","OPEN")`, `+cmd|...`, `@SUM(...)`) gets a leading single quote, as
OWASP's CSV-injection guidance says, so it is shown as text and never run. A plain number ("-12.50") is
left alone: it cannot be a formula, and an accounting tool must still read it as a number.
"""
from __future__ import annotations

import csv
import json
import os
import re
from typing import Any, Iterable

from app.batch.state import latest_rows
from data.atomic import atomic_write

BASE_COLUMNS = ["file", "part", "parts", "source", "pages", "page", "doc_type", "doc_type_score", "error_type",
                "error_message"]

# what makes Excel, LibreOffice or Google Sheets read a cell as a formula (OWASP: CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def formula_like(value: Any) -> bool:
    """True for a string a spreadsheet would evaluate: it starts with = + - @ tab or carriage return and
    is not a plain number such as "-12.50" (which no spreadsheet can run). Non-strings are never formulas
    here: a float -12.5 is a number cell."""
    return isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value)


def spreadsheet_text(value: Any) -> Any:
    """`value` as a CSV cell that a spreadsheet shows and never evaluates: a formula-like string gets a
    leading single quote (OWASP); anything else is returned unchanged. (The Excel export keeps the text
    as it is and marks the cell as text instead: app/ui/export.py.)"""
    return "'" + value if formula_like(value) else value


def spreadsheet_row(row: Iterable[Any]) -> list[Any]:
    """Every cell of a CSV row through `spreadsheet_text`."""
    return [spreadsheet_text(v) for v in row]


def page_label(numbers: list[int]) -> str:
    """1-based page numbers as a short label: [3] -> "3", [3, 4, 5] -> "3-5", [1, 3] -> "1,3"."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# the order of types in the table's columns: invoices first, as an accounts clerk reads them
TYPE_ORDER = ["vat_invoice", "e_invoice", "train_ticket", "receipt", "id_card_front", "id_card_back",
              "business_licence"]
DUPLICATE_COLUMNS = ["duplicate_of", "near_duplicate_of"]
PAIRS_COLUMN = "pairs"
BASE_LABELS = {"file": "文件", "part": "文档", "parts": "文档数", "source": "文件名", "pages": "页数", "page": "页",
               "doc_type": "类型", "doc_type_score": "类型置信度", "error_type": "错误类型", "error_message": "错误",
               "duplicate_of": "重复（同一发票）", "near_duplicate_of": "疑似重复（同销售方、金额、日期）",
               PAIRS_COLUMN: "键值对"}


def _schema(doc_type: str) -> Any:
    try:
        from data.schemas import load_schema
        return load_schema(doc_type)
    except Exception:  # an unknown type (`other`, a user's) is reported elsewhere; the table still gets its fields
        return None


def schema_keys(doc_type: str) -> list[str]:
    """The field keys of a schema in schema order, or [] when the schema cannot be loaded."""
    schema = _schema(doc_type)
    return schema.keys() if schema is not None else []


def type_order(types: Iterable[str | None]) -> list[str]:
    """Document types in column order: TYPE_ORDER first, then any other type alphabetically."""
    found = {t for t in types if t}
    return [t for t in TYPE_ORDER if t in found] + sorted(found - set(TYPE_ORDER))


def merge_keys(columns: list[str], keys: list[str]) -> list[str]:
    """`columns` with the keys it lacks inserted after the key that precedes them in `keys` (so two schemas
    that share most fields keep one printed order: an e-invoice's fields among a VAT invoice's)."""
    out = list(columns)
    for n, key in enumerate(keys):
        if key in out:
            continue
        before = next((k for k in reversed(keys[:n]) if k in out), None)
        out.insert(out.index(before) + 1 if before is not None else len(out), key)
    return out


def field_columns(rows: Iterable[dict[str, Any]], doc_type: str | None) -> list[str]:
    """Schema order: the chosen type's fields first, then those of every other type in the rows (in
    `type_order`), then any other field seen, alphabetically. The same rows give the same columns whatever
    order they come in."""
    rows = list(rows)
    columns = schema_keys(doc_type) if doc_type else []
    for t in type_order(row.get("doc_type") for row in rows):
        columns = merge_keys(columns, schema_keys(t))
    known = set(columns)
    extra = sorted({key for row in rows for key in (row.get("fields") or {}) if key not in known})
    return columns + extra


def column_labels(columns: list[str], rows: Iterable[dict[str, Any]], doc_type: str | None = None) -> list[str]:
    """The Chinese label of each column: the base columns' own, a field's from the first schema (in the
    table's type order) that has it; the key itself where no schema names it."""
    labels = dict(BASE_LABELS)
    for t in reversed(([doc_type] if doc_type else []) + type_order(row.get("doc_type") for row in rows)):
        schema = _schema(t)
        for spec in (schema.fields if schema is not None else []):
            labels[spec.key] = spec.label
    return [labels.get(c, c) for c in columns]


def row_order(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in file order (path, then part), whatever order the workers finished in."""
    return sorted(rows, key=lambda r: (str(r.get("file", "")), int(r.get("part", 1) or 1)))


def csv_record(row: dict[str, Any], columns: list[str]) -> list[str]:
    error = row.get("error") or {}
    score = row.get("doc_type_score")
    base = [row.get("file", ""), str(row.get("part", 1)), str(row.get("parts", 1)),
            row.get("source", ""), str(len(row.get("pages") or [])),
            page_label([int(p.get("index", 0)) + 1 for p in row.get("pages") or [] if isinstance(p, dict)]),
            row.get("doc_type") or "", "" if score is None else f"{score:.3f}",
            error.get("type", ""), error.get("message", "")]
    base += [str(row.get(c) or "") for c in DUPLICATE_COLUMNS]
    fields = row.get("fields") or {}
    return base + [str((fields.get(key) or {}).get("value", "")) for key in columns]


def has_pairs(rows: Iterable[dict[str, Any]]) -> bool:
    return any(row.get("pairs") for row in rows)


def pairs_json(row: dict[str, Any]) -> str:
    """A form's pairs as one JSON cell (1-based pages, scores to 3 places); "" for a document without."""
    found = [p for p in row.get("pairs") or [] if isinstance(p, dict)]
    if not found:
        return ""
    return json.dumps([{"key": str(p.get("key", "")), "value": str(p.get("value", "")),
                        "score": None if p.get("score") is None else round(float(p["score"]), 3),
                        "page": int(p.get("page", 0)) + 1} for p in found], ensure_ascii=False)


TABLE_COLUMNS = ["file", "part", "page", "table", "record", "column", "text"]
TABLE_LABELS = {"file": "文件", "part": "文档", "page": "页", "table": "表格", "record": "记录", "column": "列名",
                "text": "内容"}


def has_tables(rows: Iterable[dict[str, Any]]) -> bool:
    return any(row.get("tables") for row in rows)


def table_cells(row: dict[str, Any]) -> list[list[Any]]:
    """A document's tables in long format, one line per cell: file, part, 1-based page, table number and
    record number (both 1-based within the document), column name, text. Long, not one sheet per table,
    so that tables with different columns (a member list and a résumé on one form) share one CSV and one
    sheet, and a tool can pivot them back. Column names as `Table.records()` gives them (a repeated name
    gets its position), so every cell of a record has a distinct name."""
    from data.document import Cell, Table
    out: list[list[Any]] = []
    tables = [t for t in row.get("tables") or [] if isinstance(t, dict)]
    for n, t in enumerate(tables, 1):
        table = Table(columns=[str(c) for c in t.get("columns") or []],
                      rows=[[Cell(text=str(c.get("text", ""))) for c in cells if isinstance(c, dict)]
                            for cells in t.get("rows") or []])
        page = int(t.get("page", 0) or 0) + 1
        for r, record in enumerate(table.records(), 1):
            for column, text in record.items():
                out.append([row.get("file") or row.get("source") or "", int(row.get("part", 1) or 1), page, n, r,
                            column, text])
    return out


def tables_table(rows: list[dict[str, Any]], labels: bool = False, ordered: bool = True) -> list[list[Any]]:
    """Every table cell of `rows` in long format (`table_cells`), header line(s) first (`labels`: a line of
    Chinese labels above the keys), documents in `row_order` (`ordered`), every cell through
    `spreadsheet_text`. Failed documents have no tables."""
    rows = row_order(rows) if ordered else list(rows)
    header = ([[TABLE_LABELS[c] for c in TABLE_COLUMNS]] if labels else []) + [list(TABLE_COLUMNS)]
    body = [cells for row in rows if not row.get("error") for cells in table_cells(row)]
    return [spreadsheet_row(line) for line in header + body]


def tables_csv_path(csv_path: str) -> str:
    """Where the batch writes the table cells of a --csv: beside it, `results.csv` -> `results.tables.csv`."""
    root, ext = os.path.splitext(csv_path)
    return f"{root}.tables{ext or '.csv'}"


def write_tables_csv(csv_path: str, rows: list[dict[str, Any]], labels: bool = False) -> int | None:
    """Rebuild the tables CSV of `csv_path` (`tables_csv_path`) from `rows` (every latest row, so a resumed
    run's file covers earlier runs too), atomically like the CSV. Written when a document has tables, and
    rewritten (header only) when an earlier run left one and none has now, so it is never stale; else not
    made at all (an invoice batch gets no empty file). Returns the number of cells written, None when no
    file was written."""
    path = tables_csv_path(csv_path)
    if not has_tables(rows) and not os.path.exists(path):
        return None
    lines = tables_table(rows, labels)
    with atomic_write(path, "w", encoding="utf-8-sig", newline="") as fh:
        csv.writer(fh).writerows(lines)
    return len(lines) - (2 if labels else 1)


def csv_header(rows: list[dict[str, Any]], doc_type: str | None = None, labels: bool = False
               ) -> tuple[list[str], list[list[str]]]:
    """(field columns, header lines) of a table of `rows`."""
    columns = field_columns(rows, doc_type)
    keys = BASE_COLUMNS + DUPLICATE_COLUMNS + columns + ([PAIRS_COLUMN] if has_pairs(rows) else [])
    return columns, ([column_labels(keys, rows, doc_type)] if labels else []) + [keys]


def csv_table(rows: list[dict[str, Any]], doc_type: str | None = None, labels: bool = False,
              ordered: bool = True) -> list[list[str]]:
    """The whole table, header line(s) first, one line per document in `row_order` (`ordered`; else as given:
    the UI keeps the order of the uploads), every cell through `spreadsheet_text`."""
    rows = row_order(rows) if ordered else list(rows)
    columns, header = csv_header(rows, doc_type, labels)
    pairs = has_pairs(rows)
    body = [csv_record(row, columns) + ([pairs_json(row)] if pairs else []) for row in rows]
    return [spreadsheet_row(line) for line in header + body]


def write_csv(jsonl_path: str, csv_path: str, doc_type: str | None = None, labels: bool = False,
              rows: list[dict[str, Any]] | None = None) -> int:
    """Rebuild `csv_path` from the results file (or from `rows`, the latest rows already read and marked
    with their duplicates); returns the number of documents written."""
    rows = latest_rows(jsonl_path) if rows is None else rows
    target_dir = os.path.dirname(os.path.abspath(csv_path))
    os.makedirs(target_dir, exist_ok=True)
    with atomic_write(csv_path, "w", encoding="utf-8-sig", newline="") as fh:
        csv.writer(fh).writerows(csv_table(rows, doc_type, labels))
    return len(rows)
