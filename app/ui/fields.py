"""The UI's field table: Document fields <-> an editable table, edits re-normalised and re-validated
(data/validate.py `validate`, the extractor's own call, with the schema of the model that read the page).

Kept apart from app/ui/main.py so that it can be tested without Streamlit and reused (CSV export shares
the batch CSV's column logic).
"""
from __future__ import annotations

import copy
import csv
import io
from typing import Any

import pandas as pd

from app.batch.csv_out import csv_table
from app.ui.words import NOT_FOUND, check_words, error_words, load_schema_or_none
from data.document import Cell, Document, Field, Page, Pair, Table

COL_KEY, COL_LABEL, COL_VALUE, COL_NORM, COL_SCORE, COL_CHECK, COL_PAGE = (
    "key", "字段 Field", "识别值 Value", "规范值 Normalised", "置信度 Confidence", "校验 Check", "页 Page")
TABLE_COLUMNS = [COL_KEY, COL_LABEL, COL_VALUE, COL_NORM, COL_SCORE, COL_CHECK, COL_PAGE]
EDITABLE = (COL_VALUE,)

FAILED_ROW = "background-color: #fde2e2; color: #8b0000"     # a row whose check failed
PICKED_ROW = "background-color: #fff3b0"                      # the row of the box picked on the page
REVIEW_ROW = "background-color: #ffe8cc"                      # read with low confidence: look at it

# line-item columns, in the order invoices print them; other item keys follow under their label
ITEM_HEADERS = {"name": "名称 Name", "spec": "规格型号 Spec", "unit": "单位 Unit", "quantity": "数量 Qty",
                "unit_price": "单价 Price", "amount": "金额 Amount", "tax_rate": "税率 Rate", "tax": "税额 Tax"}
COL_ROW, COL_ITEM_CHECK = "行 Row", "校验 Check"
PAIR_COLUMNS = ["#", "键 Key", "值 Value", "置信度 Confidence", "页 Page"]


def schema_label(doc_type: str | None) -> str:
    schema = load_schema_or_none(doc_type)
    if doc_type == "other":          # models/extraction/doctype.py OTHER_TYPE: neither a known type nor a form
        return "其他（不是可识别的票证或表单）other: not a document type this model reads"
    if schema is None:
        return doc_type or "unknown"
    return f"{schema.label} ({schema.name})"


def fields_frame(doc: Document, page: int | None = None, include_missing: bool = True) -> pd.DataFrame:
    """One row per field (schema order first), optionally only those on `page` (its index in the file).
    Schema fields the model did not find are listed with an empty value on the document's first page,
    so the user can type them in."""
    schema = load_schema_or_none(doc.doc_type)
    first = doc.pages[0].index if doc.pages else 0
    keys = list(schema.keys()) if schema else []
    keys += [k for k in doc.fields if k not in keys]
    rows = []
    for key in keys:
        f = doc.fields.get(key)
        if f is None:
            if not include_missing or (page not in (None, first)):
                continue
            label = schema.field(key).label if schema else key
            rows.append({COL_KEY: key, COL_LABEL: label, COL_VALUE: "", COL_NORM: "", COL_SCORE: "",
                         COL_CHECK: NOT_FOUND, COL_PAGE: None})
            continue
        if page is not None and f.page != page:
            continue
        rows.append({COL_KEY: key, COL_LABEL: f.label or key, COL_VALUE: f.raw or f.value,
                     COL_NORM: f.value, COL_SCORE: f"{float(f.score):.0%}", COL_CHECK: check_words(doc, key, f),
                     COL_PAGE: f.page + 1})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def failed_rows_style(frame: pd.DataFrame, picked: str | None = None) -> Any:
    """The table with every row whose check failed coloured, a row to review (low confidence) in orange,
    and the row of the `picked` field key
    (the one found on the page) in yellow. Streamlit applies it to the columns that are not editable:
    label, normalised value, confidence, check."""
    def colour(row: pd.Series) -> list[str]:
        check = str(row.get(COL_CHECK, row.get(COL_ITEM_CHECK, "")))
        bad = check.startswith("✗")
        if picked is not None and row.get(COL_KEY) == picked:
            return [PICKED_ROW + ("; color: #8b0000" if bad else "")] * len(row)
        return [FAILED_ROW if bad else REVIEW_ROW if check.startswith("⚠") else ""] * len(row)
    return frame.style.apply(colour, axis=1)


def item_keys(doc: Document) -> list[str]:
    """The item columns of `doc`: the schema's item fields in invoice order, then any others read."""
    schema = load_schema_or_none(doc.doc_type)
    keys = [k for k in ITEM_HEADERS if schema is None or k in schema.item_keys()]
    keys += [k for k in (schema.item_keys() if schema else []) if k not in keys]
    keys += [k for row in doc.items for k in row if k not in keys]
    return keys


def item_header(doc: Document, key: str) -> str:
    if key in ITEM_HEADERS:
        return ITEM_HEADERS[key]
    schema = load_schema_or_none(doc.doc_type)
    spec = next((s for s in schema.item_fields if s.key == key), None) if schema else None
    return spec.label if spec else key


def items_frame(doc: Document, page: int | None = None) -> pd.DataFrame:
    """The document's line items, one row each (on `page` only when given), with a check column that
    names the first failed cell's reason."""
    keys = item_keys(doc)
    columns = [COL_ROW] + [item_header(doc, k) for k in keys] + [COL_ITEM_CHECK]
    rows = []
    for i, row in enumerate(doc.items):
        if page is not None and not any(f.page == page for f in row.values()):
            continue
        record: dict[str, Any] = {COL_ROW: i + 1}
        for k in keys:
            record[item_header(doc, k)] = row[k].value if k in row else ""
        failed = [check_words(doc, k, f, item_key=k) for k, f in row.items() if f.valid is False]
        record[COL_ITEM_CHECK] = failed[0] if failed else ("✓ 通过 passed" if any(f.valid for f in row.values())
                                                           else "")
        rows.append(record)
    return pd.DataFrame(rows, columns=columns)


def pairs_frame(doc: Document, page: int | None = None) -> pd.DataFrame:
    """A form's key-value pairs (question -> answer), one row each, on `page` only when given."""
    rows = [{"#": i + 1, "键 Key": p.key, "值 Value": p.value, "置信度 Confidence": round(float(p.score), 3),
             "页 Page": p.page + 1} for i, p in enumerate(doc.pairs) if page is None or p.page == page]
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def table_frames(doc: Document, page: int | None = None) -> list[tuple[int, Table, pd.DataFrame]]:
    """A form's tables, on `page` only when given: (its 1-based number in the document, as in the exports;
    the table; a frame with the table's column names as header and one row per record). Read-only: a
    table's cells are not corrected in the UI."""
    out = []
    for n, table in enumerate(doc.tables, 1):
        if page is not None and table.page != page:
            continue
        # the header as records() names it (a repeated name gets its position), also for a table of no record
        names = list(Table(columns=table.columns, rows=[[Cell() for _ in table.columns]]).records()[0])
        out.append((n, table, pd.DataFrame(table.records(), columns=names).fillna("")))
    return out


def lines_frame(page: Page) -> pd.DataFrame:
    """The OCR lines of a page in reading order (shown when no extraction model gave fields)."""
    return pd.DataFrame([{"#": i + 1, "文本 Text": ln.text, "置信度 Confidence": round(float(ln.score), 3)}
                         for i, ln in enumerate(page.lines)], columns=["#", "文本 Text", "置信度 Confidence"])


def _normalise(schema: Any, key: str, text: str) -> str:
    if schema is None:
        return text
    try:
        ftype = schema.field(key).type
    except KeyError:
        return text
    from data.normalize import normalize_value
    value = normalize_value(ftype, text)
    return value if value is not None else text


def _recorded_checks(doc: Document, schema: Any) -> None:
    """Make `doc.checks` name the validator's warnings that `doc.warnings` holds, when no check was
    recorded (a document validated before `checks` existed, one read back from older JSON): they are
    the warnings validating its values as they stand gives, so the next validation can take them out
    instead of keeping a fixed value's warning and showing each other one twice."""
    if doc.checks or schema is None:
        return
    from data.validate import field_text, validate_fields
    values: dict[str, Any] = {k: field_text(f) for k, f in doc.fields.items()}
    values["items"] = [{k: field_text(f) for k, f in row.items()} for row in doc.items]
    _, warnings = validate_fields(schema, values)
    left = list(doc.warnings)
    for w in warnings:
        if w in left:
            left.remove(w)
            doc.checks.append(w)


def apply_edits(doc: Document, edited: pd.DataFrame, model_dir: str | None = None, page: int | None = None
                ) -> tuple[Document, list[str]]:
    """A copy of `doc` with the table's values; returns it and the keys the user changed. A changed
    value is taken as ground truth: normalised again, score 1.0, and the whole document validated again
    from scratch (data/validate.py) against the schema of the model that read it (`model_dir`), its old
    check warnings replaced by the new ones. A value typed where nothing was read goes on `page` (the
    index in the file of the page whose table it was typed in), else on the document's first page:
    never on page 1 of the file by default, which a later document of the file does not have, so the
    value was left out of its page's saved record and exported on the wrong page."""
    out = copy.deepcopy(doc)
    changed = []
    schema = load_schema_or_none(doc.doc_type, model_dir)
    if page is None:
        page = doc.pages[0].index if doc.pages else 0
    _recorded_checks(out, schema)      # of the values as they were read, before any edit
    for _, row in edited.iterrows():
        key = str(row[COL_KEY])
        text = "" if pd.isna(row[COL_VALUE]) else str(row[COL_VALUE]).strip()
        old = out.fields.get(key)
        if old is not None and text == (old.raw or old.value):
            continue
        if old is None and not text:
            continue
        changed.append(key)
        if not text:            # cleared: the document has no such value
            del out.fields[key]
            continue
        if old is None:
            label = schema.field(key).label if schema and key in schema.keys() else key
            old = Field(key=key, value="", label=label, page=page)
            out.fields[key] = old
        old.raw, old.value, old.score, old.model_score = text, _normalise(schema, key, text), 1.0, None
    if changed:
        from data.validate import validate
        validate(out, schema)
    return out, changed


def _cell_text(value: Any) -> str:
    """A table cell as text: empty for a blank, NaN or None (what a new row of an editor holds)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return str(value).strip()


def _revalidate(out: Document, schema: Any) -> None:
    """Validate `out` from scratch (data/validate.py), the old check warnings replaced by the new ones."""
    from data.validate import validate
    validate(out, schema)


def apply_item_edits(doc: Document, edited: pd.DataFrame, model_dir: str | None = None, page: int | None = None
                     ) -> tuple[Document, list[str]]:
    """A copy of `doc` with the line items as the items table (`items_frame(doc, page)`, edited) holds them;
    returns it and what changed, in words ("明细第 2 行 item 2"). Rows are matched by their row number
    (COL_ROW): a row gone from the table is deleted, a row without a number is added (on `page`, else the
    document's first page), a changed cell is taken as ground truth like a field (normalised with the
    schema's item type, score 1.0) and a cell cleared is removed. Any change validates the whole document
    again from scratch, as a field edit does."""
    out = copy.deepcopy(doc)
    schema = load_schema_or_none(doc.doc_type, model_dir)
    if page is None:
        page = doc.pages[0].index if doc.pages else 0
    key_of = {item_header(doc, k): k for k in item_keys(doc)}
    before = items_frame(doc, page)
    shown = {int(n) for n in before[COL_ROW]} if not before.empty else set()
    _recorded_checks(out, schema)
    changed: list[str] = []
    kept: set[int] = set()
    added: list[dict[str, Field]] = []
    for _, row in edited.iterrows():
        number = row.get(COL_ROW)
        cells = {key_of[c]: _cell_text(row[c]) for c in edited.columns if c in key_of}
        if number is None or pd.isna(number) or int(number) not in shown:
            if any(cells.values()):
                added.append({k: Field(k, _normalise(schema, k, t), raw=t, score=1.0, page=page)
                              for k, t in cells.items() if t})
            continue
        n = int(number)
        kept.add(n)
        item = out.items[n - 1]
        edited_row = False
        for k, text in cells.items():
            old = item.get(k)
            if old is not None and text in (old.value, old.raw) or old is None and not text:
                continue
            edited_row = True
            if not text:
                del item[k]
            elif old is None:
                item[k] = Field(k, _normalise(schema, k, text), raw=text, score=1.0, page=page)
            else:
                old.raw, old.value, old.score, old.model_score = text, _normalise(schema, k, text), 1.0, None
        if edited_row:
            changed.append(f"明细第 {n} 行 item {n}")
    gone = sorted(shown - kept)
    changed += [f"明细第 {n} 行已删除 item {n} deleted" for n in gone]
    out.items = [row for i, row in enumerate(out.items, 1) if i not in gone and row] + added
    changed += ["明细新增一行 item added"] * len(added)
    if changed:
        _revalidate(out, schema)
    return out, changed


def apply_pair_edits(doc: Document, edited: pd.DataFrame, model_dir: str | None = None, page: int | None = None
                     ) -> tuple[Document, list[str]]:
    """A copy of `doc` with the key-value pairs as the pairs table (`pairs_frame(doc, page)`, edited) holds
    them; returns it and what changed, in words. Rows are matched by their number ("#"): a row gone is
    deleted, a row without a number is a new pair on `page` (else the document's first page), a changed key
    or value is taken as ground truth (score 1.0; its boxes stay, a hint of where it is printed when it is
    saved). A pair left without key and value is deleted. The document is validated again from scratch."""
    out = copy.deepcopy(doc)
    schema = load_schema_or_none(doc.doc_type, model_dir)
    _recorded_checks(out, schema)
    if page is None:
        page = doc.pages[0].index if doc.pages else 0
    before = pairs_frame(doc, page)
    shown = {int(n) for n in before["#"]} if not before.empty else set()
    changed: list[str] = []
    kept: set[int] = set()
    added = []
    drop: set[int] = set()
    for _, row in edited.iterrows():
        number = row.get("#")
        key, value = _cell_text(row.get(PAIR_COLUMNS[1])), _cell_text(row.get(PAIR_COLUMNS[2]))
        if number is None or pd.isna(number) or int(number) not in shown:
            if key or value:
                added.append(Pair(key=key, value=value, score=1.0, page=page))
                changed.append(f"新增键值对 pair added: {key}")
            continue
        n = int(number)
        kept.add(n)
        pair = out.pairs[n - 1]
        if (key, value) == (pair.key, pair.value):
            continue
        changed.append(f"键值对 {n} pair {n}: {key}")
        if not key and not value:
            drop.add(n)
            continue
        pair.key, pair.value, pair.score = key, value, 1.0
    gone = (shown - kept) | drop
    changed += [f"键值对 {n} 已删除 pair {n} deleted" for n in sorted(shown - kept)]
    out.pairs = [p for i, p in enumerate(out.pairs, 1) if i not in gone] + added
    if changed:
        _revalidate(out, schema)
    return out, changed


def document_csv(doc: Document, file_name: str = "") -> bytes:
    """The batch CSV's layout for one document (UTF-8 with BOM, which Excel needs for Chinese)."""
    row = doc.to_dict()
    row["file"] = file_name or doc.source
    buf = io.StringIO()
    csv.writer(buf).writerows(csv_table([row], doc.doc_type))   # no cell a spreadsheet would run
    return buf.getvalue().encode("utf-8-sig")


def error_in_words(error: dict[str, str]) -> str:
    """The error of a file or document as the UI shows it (Chinese first, then the message)."""
    return error_words(error)
