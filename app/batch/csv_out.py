"""The batch CSV: one row per document, one column per field, rebuilt from the results JSONL.

A form (a document with key-value pairs and no schema fields) has no field columns to fill: it gets one
row per pair instead, in the columns `pair_key`, `pair_value`, `pair_score` and `pair_page`, which are
added when any document of the table has pairs (a table of invoices keeps its usual columns).

A file holding several documents (a PDF of two invoices) gives one CSV row for each, numbered by
the `part` and `parts` columns, with the document's page numbers in the file in `page` ("3", "3-4");
only the newest complete set of rows per file is shown.

The CSV is derived data: it is written at the end of a run from every row in the JSONL (so a resumed
run's table includes what earlier runs did), to a temporary file that is renamed over the target, so
a reader never sees half a table. Encoding is UTF-8 with a byte-order mark, which Excel needs to show
Chinese text correctly.

Every cell goes through `spreadsheet_text` (the UI's CSV downloads too): a value or file name that a
spreadsheet would read as a formula (a form printed with `=HYPERLINK("http://evil.example/x","OPEN")`,
`+cmd|...`, `@SUM(...)`) gets a leading single quote, as OWASP's CSV-injection guidance says, so it is
shown as text and never run. A plain number ("-12.50") is left alone: it cannot be a formula, and an
accounting tool must still read it as a number.
"""
from __future__ import annotations

import csv
import os
import re
from typing import Any, Iterable

from app.batch.state import latest_rows
from data.atomic import atomic_write

BASE_COLUMNS = ["file", "part", "parts", "source", "pages", "page", "doc_type", "doc_type_score", "error_type",
                "error_message"]
PAIR_COLUMNS = ["pair_key", "pair_value", "pair_score", "pair_page"]

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


def schema_keys(doc_type: str) -> list[str]:
    """The field keys of a schema in schema order, or [] when the schema cannot be loaded."""
    try:
        from data.schemas import load_schema
        return load_schema(doc_type).keys()
    except Exception:  # an unknown type is reported elsewhere; the table still gets detected fields
        return []


def field_columns(rows: Iterable[dict[str, Any]], doc_type: str | None) -> list[str]:
    """Schema order for the chosen type first, then any other field seen, in first-seen order."""
    columns = schema_keys(doc_type) if doc_type else []
    seen = set(columns)
    for row in rows:
        for key in (row.get("fields") or {}):
            if key not in seen:
                seen.add(key)
                columns.append(key)
    return columns


def csv_record(row: dict[str, Any], columns: list[str]) -> list[str]:
    error = row.get("error") or {}
    score = row.get("doc_type_score")
    base = [row.get("file", ""), str(row.get("part", 1)), str(row.get("parts", 1)),
            row.get("source", ""), str(len(row.get("pages") or [])),
            page_label([int(p.get("index", 0)) + 1 for p in row.get("pages") or [] if isinstance(p, dict)]),
            row.get("doc_type") or "", "" if score is None else f"{score:.3f}",
            error.get("type", ""), error.get("message", "")]
    fields = row.get("fields") or {}
    return base + [str((fields.get(key) or {}).get("value", "")) for key in columns]


def has_pairs(rows: Iterable[dict[str, Any]]) -> bool:
    return any(row.get("pairs") for row in rows)


def csv_records(row: dict[str, Any], columns: list[str], pairs: bool) -> list[list[str]]:
    """A document's CSV rows: one, or with `pairs` (the table has pair columns) one per key-value pair of
    a document that has pairs (each repeating the document's columns), so a form's pairs reach the table."""
    base = csv_record(row, columns)
    if not pairs:
        return [base]
    found = [p for p in row.get("pairs") or [] if isinstance(p, dict)]
    if not found:
        return [base + [""] * len(PAIR_COLUMNS)]
    return [base + [str(p.get("key", "")), str(p.get("value", "")),
                    "" if p.get("score") is None else f"{float(p['score']):.3f}", str(int(p.get("page", 0)) + 1)]
            for p in found]


def write_csv(jsonl_path: str, csv_path: str, doc_type: str | None = None) -> int:
    """Rebuild `csv_path` from the results file; returns the number of documents written (a form with
    pairs takes one row per pair)."""
    rows = latest_rows(jsonl_path)
    columns = field_columns(rows, doc_type)
    pairs = has_pairs(rows)
    target_dir = os.path.dirname(os.path.abspath(csv_path))
    os.makedirs(target_dir, exist_ok=True)
    with atomic_write(csv_path, "w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(spreadsheet_row(BASE_COLUMNS + columns + (PAIR_COLUMNS if pairs else [])))
        for row in rows:
            writer.writerows(spreadsheet_row(record) for record in csv_records(row, columns, pairs))
    return len(rows)
