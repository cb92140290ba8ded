"""Weak labels: page images plus a CSV of field values with no boxes.

CSV columns: `image` (path relative to the CSV), optionally `doc_type`, and one column per field key.
Each image is OCR'd (the caller passes the OCR function, so data/ stays free of models/), each value
is aligned to the OCR lines by data/align.py (normalised, fuzzy, digit-aware; with the doc type's
schema it also knows printed forms such as 2024年03月05日 for 2024-03-05 or 大写 words for a figure,
and which copy of a repeated figure sits beside the field's key phrase), and only alignments scoring
at least `min_score` become labels. Every value left out is reported with its CSV line.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Callable

from data.align import FieldHint, Match, align_fields, align_value, hints_from_schema
from data.document import Page, union_box
from data.geometry import page_slope
from data.importers.records import CorpusWriter, bad_byte, check_record, find_image, make_line, read_source
from data.importers.report import ImportReport

OcrFn = Callable[[Path], Page]
MIN_SCORE = 0.85         # below this a value is more likely misplaced than misread
RESERVED = ("image", "doc_type", "layout")


def sub_box(line: dict, start: int, end: int) -> list[float]:
    """Approximate box of characters [start, end) of a line: a share of its width (CJK is monospaced
    enough for a label; the tokenizer only needs which line and roughly where)."""
    x0, y0, x1, y1 = line["box"]
    n = max(1, len(line["text"]))
    w = (x1 - x0) / n
    return [round(x0 + w * start, 1), y0, round(x0 + w * end, 1), y1]


def field_hints(doc_type: str | None) -> dict[str, FieldHint]:
    """Types and key phrases of a doc type's fields (none for an unknown or missing type: the aligner
    then matches values as written, which still finds most of them)."""
    if not doc_type:
        return {}
    from data.schemas import list_schemas, load_schema
    if doc_type not in list_schemas():
        return {}
    return hints_from_schema(load_schema(doc_type))


def _merge_lines(lines: list[dict], matches: dict[str, Match]) -> tuple[list[dict], dict[int, tuple[int, int]]]:
    """Join lines that one value runs across (OCR cut a printed line in two) into one line.

    Returns the new lines (ids renumbered) and, for every old line, (new line id, offset of its first
    character in the new line's text)."""
    joined: dict[int, list[int]] = {}            # first line -> the lines joined to it, in order
    owner: dict[int, int] = {}
    for m in matches.values():
        group = [li for li, _, _ in m.parts]
        if len(group) < 2:
            continue
        first = owner.get(group[0], group[0])
        chain = joined.setdefault(first, [first])
        for li in group[1:]:
            if li not in owner and li not in joined:
                chain.append(li)
                owner[li] = first
    out: list[dict] = []
    where: dict[int, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        if i in owner:
            continue
        group = joined.get(i, [i])
        new_id, offset, texts = len(out), 0, []
        for li in group:
            where[li] = (new_id, offset)
            texts.append(lines[li]["text"])
            offset += len(lines[li]["text"])
        if len(group) == 1:
            out.append({**line, "id": new_id})
        else:
            box = union_box([lines[li]["box"] for li in group])
            out.append(make_line(new_id, "".join(texts), box=box))
    return out, where


def label_page(page: Page, values: dict[str, str], min_score: float = MIN_SCORE,
               doc_type: str | None = None) -> tuple[list[dict], dict[str, dict], dict[str, float]]:
    """(lines, confident fields, {key: best score} of the values left out).

    With `doc_type` the schema's field types and key phrases guide the alignment (printed date and
    大写 forms, which copy of a repeated figure). A value OCR cut across two lines side by side
    joins those lines into one in the returned lines, so every label is one span of one line."""
    ocr_lines = [make_line(i, ln.text, quad=ln.quad) for i, ln in enumerate(page.lines)]
    texts = [ln["text"] for ln in ocr_lines]
    hints = field_hints(doc_type)
    matches = align_fields(values, texts, min_score=min_score, boxes=[ln["box"] for ln in ocr_lines],
                           hints=hints, tilt=page_slope([ln.quad for ln in page.lines]))
    lines, where = _merge_lines(ocr_lines, matches)
    fields, dropped = {}, {}
    for key, value in values.items():
        m = matches.get(key)
        if m is None:
            near = align_value(value, texts, min_score=0.0, field_type=hints[key].type if key in hints else None)
            dropped[key] = near.score if near else 0.0
            continue
        (first, s, _), (last, _, e) = m.parts[0], m.parts[-1]
        line_id, off = where[first]
        start, end = off + s, where[last][1] + e
        line = lines[line_id]
        fields[key] = {"value": value, "text": line["text"][start:end], "line": line_id,
                       "span": [start, end], "box": sub_box(line, start, end), "score": m.score}
    return lines, fields, dropped


def import_csv(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None,
               ocr: OcrFn | None = None, min_score: float = MIN_SCORE, progress=None) -> None:
    if ocr is None:
        raise ValueError("the csv importer needs an OCR function (python -m training import passes PP-OCR)")
    files = [src] if src.is_file() else sorted(src.glob("*.csv"))
    if not files:
        report.bad(src, 0, "no *.csv found; give a CSV with an `image` column and one column per field")
    for path in files:
        with io.StringIO(read_source(path), newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "image" not in reader.fieldnames:
                report.bad(path, 1, f"header {reader.fieldnames} has no `image` column")
                continue
            bad = next((b for b in map(bad_byte, reader.fieldnames) if b), None)
            if bad:
                report.bad(path, 1, f"header: {bad[1]}")
                continue
            keys = [k for k in reader.fieldnames if k and k not in RESERVED]
            rows = [(reader.line_num, row) for row in reader]
        for lineno, row in (progress(rows, desc=f"OCR + align {path.name}", unit="page") if progress else rows):
            report.records_seen += 1
            if None in row:
                report.bad(path, lineno, f"row has {len(row[None])} more cells than the header")
                continue
            bad = next((b for b in map(bad_byte, (v or "" for v in row.values())) if b), None)
            if bad:
                report.bad(path, lineno, bad[1].replace(" is not UTF-8", " of a cell is not UTF-8", 1))
                continue
            image = find_image((row.get("image") or "").strip(), path.parent)
            if image is None:
                report.bad(path, lineno, f"image {row.get('image')!r} not found beside {path.name}")
                continue
            values = {k: (row.get(k) or "").strip() for k in keys if (row.get(k) or "").strip()}
            rec_type = (row.get("doc_type") or "").strip() or doc_type
            try:
                page = ocr(image)
            except Exception as e:            # one unreadable image must not stop the import
                report.bad(path, lineno, f"OCR failed on {image.name}: {e}")
                continue
            lines, fields, dropped = label_page(page, values, min_score, doc_type=rec_type)
            for key, score in dropped.items():
                report.weak(path, lineno, f"{key}={values[key]!r} not found in the OCR text "
                                          f"(best match {score:.2f} < {min_score}); left unlabelled")
            report.fields_placed += len(fields)
            report.fields_dropped += len(dropped)
            rec = {"image": image.name, "doc_type": rec_type,
                   "layout": None, "width": page.width, "height": page.height, "lines": lines,
                   "fields": fields, "items": [], "pairs": [], "weak": True}
            errs = check_record(rec)
            if errs:
                report.bad(path, lineno, "; ".join(errs[:3]))
                continue
            rec["image"] = writer.add_image(image)
            writer.write(rec)
            report.records_written += 1
