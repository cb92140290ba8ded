"""The invoice register workbook (发票台账): `batch --xlsx FILE` and the UI's "Excel" downloads.

One sheet per kind of document, built from result rows (the batch's JSONL dicts, or a UI document's
`to_dict()` with its "file"):

- 发票 Invoices: one row per invoice (vat_invoice, e_invoice), the columns in the order the invoice prints
  them (the schemas' field order, merged), Chinese labels in the first header row and the English keys in
  the second; then a totals row (our own SUM formulas over the amount columns);
- 明细 Items: one row per line item of every document, keyed by its invoice code and number;
- one sheet per other schema type found (火车票 train_ticket, 购物小票 receipt, ID cards, licences), laid out
  as the invoice sheet;
- 键值对 Pairs: a form's key-value pairs (and any other document's), one row each;
- 表格 Tables: a form's tables in long format, one row per cell (file, part, page, table, record, column,
  text), so tables with different columns share the sheet; only when some document has tables, as Pairs;
- 其他 Other: every document of no schema type (`other`, a failed file), so no document goes missing.

Cells are typed for accounting: an amount is a number with two decimals (number format 0.00, so SUM works);
a code, number or tax ID is text with the text format "@" (all 20 digits of a 数电票 number, never 2.5E+19);
a date is a date; the file, page and source name are plain text (no hyperlink). Every text cell a
spreadsheet would evaluate (=HYPERLINK(...) printed on a form, a file named +cmd.png) is stored as text
with Excel's quote prefix (`text_cell`, using app/batch/csv_out.py `formula_like`), so it never runs.
Rows are in file order and columns in schema order, so two runs over the same files give the same sheets.
"""
from __future__ import annotations

import datetime as _dt
import io
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from app.batch.csv_out import (
    BASE_LABELS,
    DUPLICATE_COLUMNS,
    TABLE_COLUMNS,
    TABLE_LABELS,
    formula_like,
    merge_keys,
    page_label,
    row_order,
    table_cells,
    type_order,
)

INVOICE_TYPES = ("vat_invoice", "e_invoice")
INVOICE_SHEET, ITEM_SHEET, PAIR_SHEET, OTHER_SHEET = "发票 Invoices", "明细 Items", "键值对 Pairs", "其他 Other"
TABLE_SHEET = "表格 Tables"
FORM_TYPES = ("generic_form",)
NUMBER_TYPES = ("amount", "decimal", "quantity")
TEXT_TYPES = ("code", "tax_id", "credit_code", "id_number", "number")
LEAD = ["file", "part", "page", "source", "doc_type"] + DUPLICATE_COLUMNS
TAIL = ["checks", "error"]
LABELS = {**BASE_LABELS, "checks": "校验提示", "error": "错误", "row": "行", "key": "键", "value": "值",
          "score": "置信度", "invoice_code": "发票代码", "invoice_number": "发票号码"}
AMOUNT_FORMAT, DATE_FORMAT, TEXT_FORMAT = "0.00", "yyyy-mm-dd", "@"
_FORBIDDEN_IN_TITLE = str.maketrans({c: "_" for c in "[]:*?/\\"})


def text_cell(cell: Any) -> None:
    """Make a formula-like string cell plain text: openpyxl stores any string starting with "=" as a
    formula, and Excel re-reads a + - @ cell as one when it is edited. A text cell with the quote prefix
    (Excel's own mark for "typed with a leading apostrophe") shows the characters and runs nothing."""
    if formula_like(cell.value):
        cell.data_type = "s"
        cell.quotePrefix = True


def _schema(doc_type: str) -> Any:
    try:
        from data.schemas import load_schema
        return load_schema(doc_type)
    except Exception:  # no schema: the document goes to the Other sheet
        return None


def _field(row: dict[str, Any], key: str) -> dict[str, Any]:
    f = (row.get("fields") or {}).get(key)
    return f if isinstance(f, dict) else {}


def _page(row: dict[str, Any]) -> str:
    return page_label([int(p.get("index", 0)) + 1 for p in row.get("pages") or [] if isinstance(p, dict)])


def typed(value: Any, ftype: str) -> tuple[Any, str | None]:
    """(cell value, number format) of a field's normalised value for its schema type."""
    text = "" if value is None else str(value)
    if not text:
        return None, None
    if ftype in NUMBER_TYPES:
        try:
            number = Decimal(text.replace(",", ""))
        except InvalidOperation:
            return text, None
        if number.is_finite():
            return float(number), AMOUNT_FORMAT if ftype == "amount" else None
        return text, None
    if ftype == "date":
        try:
            return _dt.date.fromisoformat(text), DATE_FORMAT
        except ValueError:
            return text, None
    if ftype == "amount_words":     # the value is the figure; the sheet shows the words as printed
        try:
            from data.normalize import format_amount_words
            return format_amount_words(text), None
        except Exception:
            return text, None
    return text, TEXT_FORMAT if ftype in TEXT_TYPES else None


class Sheet:
    """One sheet's columns (key, Chinese label, type) and rows of (value, number format) cells."""

    def __init__(self, title: str, columns: list[tuple[str, str, str]], totals: bool = True) -> None:
        self.title, self.columns, self.totals = title, columns, totals
        self.rows: list[list[tuple[Any, str | None]]] = []

    def add(self, values: dict[str, Any]) -> None:
        self.rows.append([typed(values.get(key), ftype) if ftype != "raw" else (values.get(key), None)
                          for key, _, ftype in self.columns])


def _lead(row: dict[str, Any]) -> dict[str, Any]:
    error = row.get("error") or {}
    return {"file": row.get("file") or row.get("source") or "", "part": row.get("part", 1), "page": _page(row),
            "source": row.get("source", ""), "doc_type": row.get("doc_type") or "",
            "duplicate_of": row.get("duplicate_of", ""), "near_duplicate_of": row.get("near_duplicate_of", ""),
            "checks": "; ".join(map(str, row.get("checks") or [])),
            "error": f"{error.get('type', '')}: {error.get('message', '')}" if error else ""}


def _lead_columns(keys: list[str]) -> list[tuple[str, str, str]]:
    return [(k, LABELS.get(k, k), "raw" if k == "part" else "text") for k in keys]


def schema_sheet(title: str, types: list[str], rows: list[dict[str, Any]]) -> Sheet:
    """A sheet of documents of `types`: lead columns, the schemas' fields merged in order, checks, error."""
    keys: list[str] = []
    specs: dict[str, Any] = {}
    for t in types:
        schema = _schema(t)
        if schema is None:
            continue
        keys = merge_keys(keys, schema.keys())
        for spec in schema.fields:
            specs.setdefault(spec.key, spec)
    columns = _lead_columns(LEAD) + [(k, specs[k].label, specs[k].type) for k in keys] + _lead_columns(TAIL)
    sheet = Sheet(title, columns)
    for row in rows:
        sheet.add({**{k: _field(row, k).get("value") for k in keys}, **_lead(row)})
    return sheet


def item_sheet(rows: list[dict[str, Any]]) -> Sheet:
    """Every line item, keyed by its document's invoice code and number (items of each type in schema order)."""
    keys: list[str] = []
    specs: dict[str, Any] = {}
    for t in type_order(row.get("doc_type") for row in rows if row.get("items")):
        schema = _schema(t)
        for spec in (schema.item_fields if schema is not None else []):
            specs.setdefault(spec.key, spec)
        keys = merge_keys(keys, [s.key for s in schema.item_fields] if schema is not None else [])
    extra = sorted({k for row in rows for item in row.get("items") or [] for k in item if k not in specs})
    columns = _lead_columns(["file", "part", "doc_type"]) + [("invoice_code", LABELS["invoice_code"], "code"),
                                                             ("invoice_number", LABELS["invoice_number"], "code"),
                                                             ("row", LABELS["row"], "raw")]
    columns += [(k, specs[k].label, specs[k].type) for k in keys] + [(k, k, "text") for k in extra]
    sheet = Sheet(ITEM_SHEET, columns)
    for row in rows:
        for n, item in enumerate(row.get("items") or [], 1):
            values = {k: (v.get("value") if isinstance(v, dict) else v) for k, v in item.items()}
            values.update(file=row.get("file") or row.get("source") or "", part=row.get("part", 1),
                          doc_type=row.get("doc_type") or "", row=n,
                          invoice_code=_field(row, "invoice_code").get("value"),
                          invoice_number=_field(row, "invoice_number").get("value"))
            sheet.add(values)
    return sheet


def pair_sheet(rows: list[dict[str, Any]]) -> Sheet:
    columns = _lead_columns(["file", "part", "page", "source"]) + [("key", LABELS["key"], "text"),
                                                                   ("value", LABELS["value"], "text"),
                                                                   ("score", LABELS["score"], "decimal")]
    sheet = Sheet(PAIR_SHEET, columns, totals=False)
    for row in rows:
        for p in row.get("pairs") or []:
            if isinstance(p, dict):
                sheet.add({"file": row.get("file") or row.get("source") or "", "part": row.get("part", 1),
                           "page": str(int(p.get("page", 0)) + 1), "source": row.get("source", ""),
                           "key": p.get("key", ""), "value": p.get("value", ""),
                           "score": None if p.get("score") is None else round(float(p["score"]), 4)})
    return sheet


def table_sheet(rows: list[dict[str, Any]]) -> Sheet:
    """Every table cell of these documents, one row each (app/batch/csv_out.py `table_cells`); the cell
    text stays text (a 出生年月 199005 is not a number to sum)."""
    kinds = {"part": "raw", "page": "raw", "table": "raw", "record": "raw"}
    sheet = Sheet(TABLE_SHEET, [(k, TABLE_LABELS[k], kinds.get(k, "text")) for k in TABLE_COLUMNS], totals=False)
    for row in rows:
        for cells in table_cells(row):
            sheet.add(dict(zip(TABLE_COLUMNS, cells)))
    return sheet


def other_sheet(rows: list[dict[str, Any]]) -> Sheet:
    sheet = Sheet(OTHER_SHEET, _lead_columns(LEAD + TAIL), totals=False)
    for row in rows:
        sheet.add(_lead(row))
    return sheet


def sheet_title(doc_type: str) -> str:
    schema = _schema(doc_type)
    title = f"{schema.label} {doc_type}" if schema is not None else doc_type
    return title.translate(_FORBIDDEN_IN_TITLE)[:31]


def register_sheets(rows: list[dict[str, Any]], ordered: bool = True) -> list[Sheet]:
    """The register's sheets for these rows (see the module's docstring), rows in file order (`ordered`;
    else as given: the UI keeps the order of the uploads)."""
    rows = row_order(rows) if ordered else list(rows)
    invoices = [r for r in rows if r.get("doc_type") in INVOICE_TYPES and not r.get("error")]
    sheets = [schema_sheet(INVOICE_SHEET, list(INVOICE_TYPES), invoices), item_sheet(rows)]
    placed = {id(r) for r in invoices}
    for t in type_order(r.get("doc_type") for r in rows):
        if t in INVOICE_TYPES or t in FORM_TYPES or _schema(t) is None:
            continue
        mine = [r for r in rows if r.get("doc_type") == t and not r.get("error")]
        if mine:
            sheets.append(schema_sheet(sheet_title(t), [t], mine))
            placed |= {id(r) for r in mine}
    paired = [r for r in rows if r.get("pairs") and not r.get("error")]
    if paired:      # a form's pairs, and those of any other document that has some
        sheets.append(pair_sheet(paired))
        placed |= {id(r) for r in paired if r.get("doc_type") in FORM_TYPES}
    tabled = [r for r in rows if r.get("tables") and not r.get("error")]
    if tabled:      # a form's tables, long format (only when some document has one, as the pairs)
        sheets.append(table_sheet(tabled))
        placed |= {id(r) for r in tabled if r.get("doc_type") in FORM_TYPES}
    rest = [r for r in rows if id(r) not in placed]
    if rest:
        sheets.append(other_sheet(rest))
    return sheets


def write_sheet(ws: Any, sheet: Sheet, key_row: bool = True) -> None:
    """Header rows, typed cells, a totals row under every amount column, frozen headers, sized columns."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter
    ws.append([label for _, label, _ in sheet.columns])
    if key_row:
        ws.append([key for key, _, _ in sheet.columns])
    top = ws.max_row + 1
    for cells in sheet.rows:
        ws.append([value for value, _ in cells])
        for cell, (_, fmt) in zip(ws[ws.max_row], cells):
            if fmt:
                cell.number_format = fmt
            text_cell(cell)
    bold = Font(bold=True)
    for r in range(1, top):
        for cell in ws[r]:
            cell.font = bold
    amounts = [i for i, (_, _, ftype) in enumerate(sheet.columns, 1) if ftype == "amount"]
    if sheet.totals and amounts and sheet.rows:
        end = ws.max_row
        total_row = end + 1
        ws.cell(row=total_row, column=1, value="合计 Total").font = bold
        for i in amounts:
            letter = get_column_letter(i)
            cell = ws.cell(row=total_row, column=i, value=f"=SUM({letter}{top}:{letter}{end})")
            cell.number_format = AMOUNT_FORMAT
            cell.font = bold
    ws.freeze_panes = ws.cell(row=top, column=1)
    for i, (key, label, _) in enumerate(sheet.columns, 1):
        width = max([len(str(label)) * 2, len(key)] + [len(str(r[i - 1][0] or "")) for r in sheet.rows[:200]])
        ws.column_dimensions[get_column_letter(i)].width = min(60, 4 + 1.2 * width)


def register_workbook(rows: list[dict[str, Any]], extra: Sequence[tuple[str, list[str], list[list[Any]]]] = (),
                      ordered: bool = True) -> Any:
    """An openpyxl Workbook of the register's sheets, then `extra` sheets (title, header, rows) as given."""
    from openpyxl import Workbook
    book = Workbook()
    book.remove(book.active)
    for sheet in register_sheets(rows, ordered):
        write_sheet(book.create_sheet(sheet.title), sheet)
    for title, header, lines in extra:
        plain = Sheet(title, [(h, h, "raw") for h in header], totals=False)
        plain.rows = [[(v, None) for v in line] for line in lines]
        write_sheet(book.create_sheet(title), plain, key_row=False)
    return book


def register_bytes(rows: list[dict[str, Any]], extra: Sequence[tuple[str, list[str], list[list[Any]]]] = (),
                   ordered: bool = True) -> bytes:
    buf = io.BytesIO()
    register_workbook(rows, extra, ordered).save(buf)
    return buf.getvalue()


def write_xlsx(path: str, rows: list[dict[str, Any]]) -> int:
    """Write the register workbook to `path` atomically (a temporary file renamed over it); returns the
    number of documents."""
    import os

    from data.atomic import atomic_write
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    data = register_bytes(rows)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
    return len(rows)
