"""Import Label Studio OCR exports (JSON list of tasks).

Each region is several results sharing one `id`: a `rectangle` (x, y, width, height in percent of
`original_width`/`original_height`, `rotation` in degrees about the top-left corner), a `textarea`
with the transcription and a `labels` result. Labels header/question/answer/other become line labels,
any other label is a schema field key; `relation` results become links.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from data.importers.jsonpos import find_array, iter_array_spans, line_of
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

IMAGE_KEYS = ("ocr", "image", "img", "url")


def _quad(v: dict, w: float, h: float) -> list[list[float]]:
    x, y = v["x"] * w / 100.0, v["y"] * h / 100.0
    rw, rh = v["width"] * w / 100.0, v["height"] * h / 100.0
    a = math.radians(float(v.get("rotation", 0) or 0))
    c, s = math.cos(a), math.sin(a)
    corners = [(0, 0), (rw, 0), (rw, rh), (0, rh)]
    return [[x + dx * c - dy * s, y + dx * s + dy * c] for dx, dy in corners]


def parse_task(task: dict, doc_type: str | None) -> tuple[str, dict]:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise ValueError('task has no "data" object naming its image')
    image = next((task["data"][k] for k in IMAGE_KEYS if isinstance(task["data"].get(k), str)), None)
    if image is None:
        raise ValueError(f"task data names no image (expected one of {', '.join(IMAGE_KEYS)})")
    anns = task.get("annotations") or task.get("completions") or []
    if not anns:
        raise ValueError("task has no annotations; label it in Label Studio or leave it out of the export")
    results = [r for r in (anns[-1].get("result") or []) if isinstance(r, dict)]
    regions: dict[str, dict] = {}
    relations: list[tuple[str | None, str | None]] = []
    size: tuple[Any, Any] | None = None
    for r in results:
        if r.get("type") == "relation":
            relations.append((r.get("from_id"), r.get("to_id")))
            continue
        rid, v = r.get("id"), r.get("value") or {}
        if rid is None:
            raise ValueError("a result has no region id")
        reg = regions.setdefault(rid, {"text": None, "label": None, "geom": None})
        if all(k in v for k in ("x", "y", "width", "height")):
            reg["geom"] = v
            size = size or (r.get("original_width"), r.get("original_height"))
        if isinstance(v.get("text"), list):
            reg["text"] = " ".join(map(str, v["text"]))
        elif isinstance(v.get("text"), str):
            reg["text"] = v["text"]
        for key in ("labels", "rectanglelabels"):
            if v.get(key):
                reg["label"] = str(v[key][0])
    if not size or not all(isinstance(s, (int, float)) and s > 0 for s in size):
        raise ValueError("results lack original_width/original_height, so percent boxes cannot be placed")
    w, h = size
    lines: list[dict] = []
    fields: dict[str, dict] = {}
    ids: dict[str, int] = {}
    for rid, reg in regions.items():
        if reg["geom"] is None:
            raise ValueError(f"region {rid!r} has a transcription or label but no rectangle")
        if reg["text"] is None:
            raise ValueError(f"region {rid!r} has no transcription; add the text or delete the box")
        ids[rid] = len(lines)
        label = (reg["label"] or "").strip()
        line_label = label.lower() if label.lower() in XFUND_LABELS else None
        line = make_line(len(lines), reg["text"], quad=_quad(reg["geom"], w, h), label=line_label)
        lines.append(line)
        if label and line_label is None and label not in fields:
            fields[label] = field_from_line(line)
    for a, b in relations:
        if a in ids and b in ids:
            link = [ids[a], ids[b]]
            lines[ids[a]]["linking"].append(link)
            lines[ids[b]]["linking"].append(link)
    rec = {"doc_type": doc_type, "layout": None, "width": w, "height": h, "lines": lines,
           "fields": fields, "items": [], "pairs": pairs_from_links(lines)}
    return image, rec


def import_labelstudio(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None) -> None:
    files = [src] if src.is_file() else sorted(src.glob("*.json"))
    if not files:
        report.bad(src, 0, "no Label Studio *.json export found; export as JSON and point --src at it")
    for path in files:
        text = read_source(path)
        roots = [path.parent, path.parent / "images", path.parent / "upload"]
        try:
            for begin, end, task in iter_array_spans(text, find_array(text, None)):
                report.records_seen += 1
                lineno = line_of(text, begin)
                bad = bad_byte(text, begin, end)
                if bad:
                    report.bad(path, line_of(text, bad[0]), bad[1])
                    continue
                try:
                    name, rec = parse_task(task, doc_type)
                except (ValueError, TypeError, KeyError) as e:
                    report.bad(path, lineno, str(e))
                    continue
                write_checked(writer, report, path, lineno, name, rec, roots)
        except json.JSONDecodeError as e:
            report.bad(path, e.lineno, f"not valid JSON ({e.msg}); tasks after this point are skipped")
