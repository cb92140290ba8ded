"""The UI's field table: Document fields <-> an editable table, edits re-normalised and re-validated.

Kept apart from app/ui.py so that it can be tested without Streamlit and reused (CSV export shares
the batch CSV's column logic).
"""
from __future__ import annotations

import copy
import csv
import io
from typing import Any

import pandas as pd

from app.batch_csv import BASE_COLUMNS, csv_record, field_columns
from data.document import Document, Field, Page

COL_KEY, COL_LABEL, COL_VALUE, COL_NORM, COL_SCORE, COL_CHECK, COL_PAGE = (
    "key", "字段 Field", "识别值 Value", "规范值 Normalised", "置信度 Confidence", "校验 Check", "页 Page")
TABLE_COLUMNS = [COL_KEY, COL_LABEL, COL_VALUE, COL_NORM, COL_SCORE, COL_CHECK, COL_PAGE]
EDITABLE = (COL_VALUE,)

CHECK_WORDS = {True: "✓ passed", False: "✗ failed", None: "— no rule"}


def load_schema_or_none(doc_type: str | None) -> Any:
    if not doc_type:
        return None
    try:
        from data.schemas import load_schema
        return load_schema(doc_type)
    except Exception:   # a model may know a type the installed schemas do not: show fields as they are
        return None


def schema_label(doc_type: str | None) -> str:
    schema = load_schema_or_none(doc_type)
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
            rows.append({COL_KEY: key, COL_LABEL: label, COL_VALUE: "", COL_NORM: "", COL_SCORE: None,
                         COL_CHECK: "— not found", COL_PAGE: None})
            continue
        if page is not None and f.page != page:
            continue
        rows.append({COL_KEY: key, COL_LABEL: f.label or key, COL_VALUE: f.raw or f.value,
                     COL_NORM: f.value, COL_SCORE: round(float(f.score), 3), COL_CHECK: CHECK_WORDS[f.valid],
                     COL_PAGE: f.page + 1})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def lines_frame(page: Page) -> pd.DataFrame:
    """The OCR lines of a page in reading order (shown when no extraction model gave fields)."""
    return pd.DataFrame([{"#": i + 1, "文本 Text": ln.text, "置信度 Confidence": round(float(ln.score), 3)}
                         for i, ln in enumerate(page.lines)], columns=["#", "文本 Text", "置信度 Confidence"])


def _normalise(doc_type: str | None, key: str, text: str) -> str:
    schema = load_schema_or_none(doc_type)
    if schema is None:
        return text
    try:
        ftype = schema.field(key).type
    except KeyError:
        return text
    from data.normalize import normalize_value
    value = normalize_value(ftype, text)
    return value if value is not None else text


def _validate(doc: Document) -> tuple[dict[str, bool | None], list[str]] | None:
    schema = load_schema_or_none(doc.doc_type)
    if schema is None or not schema.fields:
        return None
    from data.validate import validate_fields
    values: dict[str, Any] = {k: f.value for k, f in doc.fields.items()}
    values["items"] = [{k: f.value for k, f in row.items()} for row in doc.items]
    return validate_fields(schema, values)


def revalidate(doc: Document, before: Document) -> None:
    """Recompute every field's `valid` and swap the validator warnings of `before` for new ones;
    other warnings (e.g. about the model) stay."""
    now = _validate(doc)
    if now is None:
        return
    result, warnings = now
    old = _validate(before)
    stale = set(old[1]) if old else set()
    for key, f in doc.fields.items():
        f.valid = result.get(key)
    doc.warnings = [w for w in doc.warnings if w not in stale] + list(warnings)


def apply_edits(doc: Document, edited: pd.DataFrame) -> tuple[Document, list[str]]:
    """A copy of `doc` with the table's values; returns it and the keys the user changed. A changed
    value is taken as ground truth: normalised again, score 1.0, validation re-run."""
    out = copy.deepcopy(doc)
    changed = []
    schema = load_schema_or_none(doc.doc_type)
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
            old = Field(key=key, value="", label=label)
            out.fields[key] = old
        old.raw, old.value, old.score = text, _normalise(doc.doc_type, key, text), 1.0
    if changed:
        revalidate(out, doc)
    return out, changed


def document_csv(doc: Document, file_name: str = "") -> bytes:
    """The batch CSV's layout for one document (UTF-8 with BOM, which Excel needs for Chinese)."""
    row = doc.to_dict()
    row["file"] = file_name or doc.source
    columns = field_columns([row], doc.doc_type)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(BASE_COLUMNS + columns)
    writer.writerow(csv_record(row, columns))
    return buf.getvalue().encode("utf-8-sig")


ERROR_ADVICE = {
    "InputError": "The file could not be used as a document.",
    "UnreadableFile": "The file could not be read.",
}


def error_in_words(error: dict[str, str]) -> str:
    lead = ERROR_ADVICE.get(error.get("type", ""), "This document could not be processed.")
    return f"{lead} {error.get('message', '')}".strip()
