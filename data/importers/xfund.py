"""Import XFUND JSON: {"documents": [{"id", "img": {"fname", "width", "height"},
"document": [{"id", "text", "box", "label", "linking", "words"}]}]}; images beside the JSON or in
a sibling folder. Labels header/question/answer/other stay line labels; links become pairs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from data.importers.jsonpos import find_array, iter_array_spans, line_of
from data.importers.records import (
    XFUND_LABELS,
    CorpusWriter,
    bad_byte,
    make_line,
    pairs_from_links,
    read_source,
    write_checked,
)
from data.importers.report import ImportReport


def parse_document(doc: dict) -> tuple[str, dict]:
    if not isinstance(doc, dict) or not isinstance(doc.get("document"), list):
        raise ValueError('each document needs a "document" list of entities')
    img = doc.get("img") or {}
    fname = img.get("fname") or f"{doc.get('id', '')}.jpg"
    lines = []
    for i, ent in enumerate(doc["document"]):
        if not isinstance(ent, dict) or not isinstance(ent.get("box"), list) or len(ent["box"]) != 4:
            raise ValueError(f"entity {i} lacks a 4-number \"box\"")
        label = str(ent.get("label") or "other").lower()
        if label not in XFUND_LABELS:
            raise ValueError(f"entity {i}: label {label!r} is not one of {', '.join(XFUND_LABELS)}")
        lines.append(make_line(ent.get("id", i), ent.get("text", ""), box=ent["box"], label=label,
                               linking=ent.get("linking") or []))
    rec: dict[str, Any] = {"doc_type": "generic_form", "layout": None, "width": img.get("width"),
                           "height": img.get("height"), "lines": lines, "fields": {}, "items": [],
                           "pairs": pairs_from_links(lines)}
    return fname, rec


def import_xfund(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None) -> None:
    files = [src] if src.is_file() else sorted(src.glob("*.json"))
    if not files:
        report.bad(src, 0, "no XFUND *.json found; point --src at zh.train.json or its folder")
    for path in files:
        text = read_source(path)
        roots = [path.parent, path.parent / "images", path.parent / path.stem]
        try:
            for begin, end, doc in iter_array_spans(text, find_array(text, "documents")):
                report.records_seen += 1
                lineno = line_of(text, begin)
                bad = bad_byte(text, begin, end)
                if bad:
                    report.bad(path, line_of(text, bad[0]), bad[1])
                    continue
                try:
                    fname, rec = parse_document(doc)
                except (ValueError, TypeError) as e:
                    report.bad(path, lineno, str(e))
                    continue
                if doc_type:
                    rec["doc_type"] = doc_type
                write_checked(writer, report, path, lineno, fname, rec, roots, size="missing")
        except json.JSONDecodeError as e:
            report.bad(path, e.lineno, f"not valid XFUND JSON ({e.msg}); records after this point are skipped")
