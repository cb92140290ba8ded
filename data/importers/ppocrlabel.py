"""Import PPOCRLabel KIE exports: `image_path<TAB>[{"transcription", "points", "key_cls", "id", "linking"}]`.

`key_cls` (or the older `label`) is either an XFUND line label (header/question/answer/other), kept
as the line's label with question->answer pairs from `linking`, or a schema field key, which makes
that line's text the field's value.
"""
from __future__ import annotations

import json
from pathlib import Path

from data.importers.records import (
    XFUND_LABELS,
    CorpusWriter,
    bad_byte,
    field_from_line,
    make_line,
    pairs_from_links,
    read_source,
    write_checked,
)
from data.importers.report import ImportReport

NO_CLASS = {"", "none", "null", "ignore"}


def label_files(src: Path) -> list[Path]:
    if src.is_file():
        return [src]
    # PPOCRLabel's folder also holds fileState.txt and rec_gt.txt; only Label.txt carries KIE boxes.
    return [p for p in (src / "Label.txt", src / "label.txt") if p.is_file()][:1]


def parse_annotations(items: list, doc_type: str | None) -> dict:
    """Lines, fields and pairs from one image's annotation list (raises ValueError on bad input)."""
    if not isinstance(items, list):
        raise ValueError("annotation after the tab must be a JSON list of boxes")
    lines, fields = [], {}
    for i, it in enumerate(items):
        if not isinstance(it, dict) or "transcription" not in it or "points" not in it:
            raise ValueError(f"box {i} lacks \"transcription\" or \"points\"")
        pts = it["points"]
        if not (isinstance(pts, list) and len(pts) >= 4 and all(isinstance(p, list) and len(p) == 2 for p in pts)):
            raise ValueError(f"box {i}: \"points\" must be at least four [x, y] pairs")
        if len(pts) > 4:             # polygons: keep the enclosing rectangle
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            pts = [[min(xs), min(ys)], [max(xs), min(ys)], [max(xs), max(ys)], [min(xs), max(ys)]]
        cls = str(it.get("key_cls", it.get("label", "")) or "").strip()
        line_label = cls.lower() if cls.lower() in XFUND_LABELS else None
        line = make_line(it.get("id", i), it["transcription"], quad=pts, label=line_label,
                         linking=it.get("linking") or [])
        lines.append(line)
        if line_label is None and cls.lower() not in NO_CLASS and cls not in fields:
            fields[cls] = field_from_line(line)
    return {"doc_type": doc_type, "layout": None, "lines": lines, "fields": fields, "items": [],
            "pairs": pairs_from_links(lines)}


def import_ppocrlabel(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None) -> None:
    files = label_files(src)
    if not files:
        report.bad(src, 0, "no Label.txt found; point --src at PPOCRLabel's Label.txt or its folder")
    for path in files:
        roots = [path.parent, path.parent.parent]
        for lineno, raw in enumerate(read_source(path).split("\n"), 1):
            if not raw.strip():
                continue
            report.records_seen += 1
            bad = bad_byte(raw)
            if bad:
                report.bad(path, lineno, bad[1])
                continue
            name, tab, ann = raw.rstrip("\r").partition("\t")
            if not tab:
                report.bad(path, lineno, "no tab between the image path and the JSON annotation")
                continue
            try:
                rec = parse_annotations(json.loads(ann), doc_type)
            except json.JSONDecodeError as e:
                report.bad(path, lineno, f"annotation is not valid JSON ({e.msg})")
                continue
            except (ValueError, TypeError) as e:
                report.bad(path, lineno, str(e))
                continue
            write_checked(writer, report, path, lineno, name, rec, roots, size="always")
