"""Weak labels: page images plus a CSV of field values with no boxes.

CSV columns: `image` (path relative to the CSV), optionally `doc_type`, and one column per field key.
Each image is OCR'd (the caller passes the OCR function, so data/ stays free of models/), each value
is aligned to the OCR lines by data/align.py (normalised, fuzzy, digit-aware), and only alignments
scoring at least `min_score` become labels. Every value left out is reported with its CSV line.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Callable

from data.align import align_fields, align_value
from data.document import Page
from data.importers.records import CorpusWriter, check_record, find_image, make_line
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


def label_page(page: Page, values: dict[str, str], min_score: float = MIN_SCORE
               ) -> tuple[list[dict], dict[str, dict], dict[str, float]]:
    """(lines, confident fields, {key: best score} of the values left out)."""
    lines = [make_line(i, ln.text, quad=ln.quad) for i, ln in enumerate(page.lines)]
    texts = [ln["text"] for ln in lines]
    matches = align_fields(values, texts, min_score=min_score)
    fields, dropped = {}, {}
    for key, value in values.items():
        m = matches.get(key)
        if m is None:
            near = align_value(value, texts, min_score=0.0)
            dropped[key] = near.score if near else 0.0
            continue
        line = lines[m.line]
        fields[key] = {"value": value, "text": line["text"][m.start:m.end], "line": line["id"],
                       "span": [m.start, m.end], "box": sub_box(line, m.start, m.end),
                       "score": m.score}
    return lines, fields, dropped


def import_csv(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None,
               ocr: OcrFn | None = None, min_score: float = MIN_SCORE, progress=None) -> None:
    if ocr is None:
        raise ValueError("the csv importer needs an OCR function (python -m training import passes PP-OCR)")
    files = [src] if src.is_file() else sorted(src.glob("*.csv"))
    if not files:
        report.bad(src, 0, "no *.csv found; give a CSV with an `image` column and one column per field")
    for path in files:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "image" not in reader.fieldnames:
                report.bad(path, 1, f"header {reader.fieldnames} has no `image` column")
                continue
            keys = [k for k in reader.fieldnames if k and k not in RESERVED]
            rows = [(reader.line_num, row) for row in reader]
        for lineno, row in (progress(rows, desc=f"OCR + align {path.name}", unit="page") if progress else rows):
            report.records_seen += 1
            if None in row:
                report.bad(path, lineno, f"row has {len(row[None])} more cells than the header")
                continue
            image = find_image((row.get("image") or "").strip(), path.parent)
            if image is None:
                report.bad(path, lineno, f"image {row.get('image')!r} not found beside {path.name}")
                continue
            values = {k: (row.get(k) or "").strip() for k in keys if (row.get(k) or "").strip()}
            try:
                page = ocr(image)
            except Exception as e:            # one unreadable image must not stop the import
                report.bad(path, lineno, f"OCR failed on {image.name}: {e}")
                continue
            lines, fields, dropped = label_page(page, values, min_score)
            for key, score in dropped.items():
                report.weak(path, lineno, f"{key}={values[key]!r} not found in the OCR text "
                                          f"(best match {score:.2f} < {min_score}); left unlabelled")
            report.fields_placed += len(fields)
            report.fields_dropped += len(dropped)
            rec = {"image": image.name, "doc_type": (row.get("doc_type") or "").strip() or doc_type,
                   "layout": None, "width": page.width, "height": page.height, "lines": lines,
                   "fields": fields, "items": [], "pairs": [], "weak": True}
            errs = check_record(rec)
            if errs:
                report.bad(path, lineno, "; ".join(errs[:3]))
                continue
            rec["image"] = writer.add_image(image)
            writer.write(rec)
            report.records_written += 1
