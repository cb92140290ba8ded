"""Import our own corpus format (JSONL, one page per line): check every record, copy its image."""
from __future__ import annotations

import json
from pathlib import Path

from data.importers.records import CORPUS_FILE, CorpusWriter, bad_byte, check_record, find_image, read_source
from data.importers.report import ImportReport


def jsonl_files(src: Path) -> list[Path]:
    if src.is_file():
        return [src]
    main = src / CORPUS_FILE
    return [main] if main.is_file() else sorted(src.glob("*.jsonl"))


def import_ours(src: Path, writer: CorpusWriter, report: ImportReport, doc_type: str | None = None) -> None:
    files = jsonl_files(src)
    if not files:
        report.bad(src, 0, f"no {CORPUS_FILE} or *.jsonl found; point --src at the corpus file or its folder")
    for path in files:
        for lineno, raw in enumerate(read_source(path).split("\n"), 1):
            if not raw.strip():
                continue
            report.records_seen += 1
            bad = bad_byte(raw)
            if bad:
                report.bad(path, lineno, bad[1])
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as e:
                report.bad(path, lineno, f"not valid JSON ({e.msg} at column {e.colno})")
                continue
            image = find_image(rec.get("image") or "", path.parent) if isinstance(rec, dict) else None
            errs = check_record(rec)
            if image is None and not errs:
                errs = [f"image {rec.get('image')!r} not found next to {path.name}"]
            if errs:
                report.bad(path, lineno, "; ".join(errs[:3]))
                continue
            assert image is not None      # a record without its image got an error above and was skipped
            rec["image"] = writer.add_image(image)
            if doc_type and not rec.get("doc_type"):
                rec["doc_type"] = doc_type
            writer.write(rec)
            report.records_written += 1
