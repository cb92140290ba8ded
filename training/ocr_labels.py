"""Training pages as OCR reads them: a corpus page's real PP-OCR lines, labelled by aligning the page's
own field values to them.

At run time the extractor sees OCR lines (cut where OCR cuts, with OCR's misreads), not the
generator's or annotator's lines. A retrain that only ever sees the latter learns the layout but not
what OCR makes of it. So `retrain --ocr-train` reads each training image once (cached in the work
dir) and labels the OCR lines:
- header fields by data/align.py `align_fields` with the doc type's schema hints (printed forms of
  dates and amounts, which copy of a repeated figure sits by its key phrase, values OCR cut across
  two lines), the weak-label importer's `label_page`, 100% on bench/weak_label_bench.py;
- item-row fields (the same figure recurs in every row, so a value alone is ambiguous) by aligning
  each value only within the OCR lines that overlap the box the record gives it.
Values that cannot be found confidently stay unlabelled (O): OCR lost them.
"""
from __future__ import annotations

from pathlib import Path

from data.align import align_value
from data.document import Page
from data.importers.weak import label_page, sub_box

MIN_SCORE = 0.8


def _overlaps(a: list[float], b: list[float], pad: float) -> bool:
    return a[0] - pad < b[2] and b[0] - pad < a[2] and a[1] - pad < b[3] and b[1] - pad < a[3]


def _printed(f: dict) -> str:
    """What the page prints for a field: its `text` where the record has it, else its value."""
    return str(f.get("text") or f.get("value") or "").strip()


def _place_items(rec: dict, lines: list[dict], taken: dict[int, set[int]], min_score: float) -> list[dict]:
    """Item rows whose fields point at OCR lines (those near the record's box for the field)."""
    rows = []
    for row in rec.get("items") or []:
        out = {}
        for key, f in row.items():
            value, box = (_printed(f), f.get("box")) if isinstance(f, dict) else ("", None)
            if not value or not box:
                continue
            pad = 0.5 * (box[3] - box[1])
            cand = [i for i, ln in enumerate(lines) if _overlaps(ln["box"], box, pad)]
            masked = ["".join("\u0000" if j in taken.get(i, ()) else c for j, c in enumerate(lines[i]["text"]))
                      for i in cand]
            m = align_value(value, masked, min_score) if cand else None
            if m is None:
                continue
            li = cand[m.line]
            taken.setdefault(li, set()).update(range(m.start, m.end))
            out[key] = {"value": f.get("value", value), "text": lines[li]["text"][m.start:m.end], "line": li,
                        "span": [m.start, m.end], "box": sub_box(lines[li], m.start, m.end)}
        if out:
            rows.append(out)
    return rows


def ocr_labelled_record(rec: dict, page: Page, min_score: float = MIN_SCORE) -> dict:
    """`rec` with its lines replaced by `page`'s OCR lines and its fields and item rows re-pointed at
    them (those found with score >= min_score); other keys (image, doc_type, layout) kept."""
    doc_type = str(rec.get("doc_type") or "") or None
    values = {k: _printed(f) for k, f in (rec.get("fields") or {}).items() if isinstance(f, dict) and _printed(f)}
    lines, fields, _ = label_page(page, values, min_score, doc_type=doc_type)
    for key, f in fields.items():          # keep the record's (normalised) value, OCR's text and span
        f["value"] = rec["fields"][key].get("value", f["value"])
    taken: dict[int, set[int]] = {}
    for f in fields.values():
        taken.setdefault(f["line"], set()).update(range(*f["span"]))
    items = _place_items(rec, lines, taken, min_score)
    return {**rec, "lines": lines, "fields": fields, "items": items, "pairs": [],
            "width": page.width, "height": page.height, "source": "ocr"}


def label_coverage(recs: list[dict], labelled: list[dict]) -> dict[str, int]:
    """How many field values the OCR-labelled pages kept, of those the records had."""
    def count(rs: list[dict]) -> int:
        return sum(len(r.get("fields") or {}) + sum(len(row) for row in r.get("items") or []) for r in rs)
    return {"values": count(recs), "labelled": count(labelled)}


def ocr_training_records(records: list[dict], cache: Path, min_score: float = MIN_SCORE) -> tuple[list[dict], dict]:
    """OCR every record's image once (`cache`, JSONL, shared with the real-OCR evaluation) and
    return the OCR-labelled records plus their label coverage."""
    from training.trainer import _rid, ocr_records
    pages = ocr_records(records, cache, desc="real OCR (training pages)")
    chosen = [r for r in records if _rid(r) in pages]
    labelled = [ocr_labelled_record(r, pages[_rid(r)], min_score) for r in chosen]
    return labelled, {"pages": len(labelled), **label_coverage(chosen, labelled)}
