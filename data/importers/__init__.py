"""Importers from labelled-corpus formats into our corpus format (data/importers/records.py).

`import_corpus(fmt, src, out)` runs one importer and returns its `ImportReport`; bad records are
reported with file and line number and skipped, never fatal. Formats:

| format      | input                                                                  |
| ----------- | ---------------------------------------------------------------------- |
| ours        | our JSONL (checked, images copied)                                     |
| ppocrlabel  | PPOCRLabel KIE `Label.txt` (`image<TAB>[{transcription, points, ...}]`) |
| xfund       | XFUND JSON (`documents` with header/question/answer/other + linking)   |
| labelstudio | Label Studio OCR JSON export (percent rectangles + text + labels)      |
| csv         | images + CSV of field values, no boxes: OCR + alignment = weak labels  |
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from data.importers.labelstudio import import_labelstudio
from data.importers.ours import import_ours
from data.importers.ppocrlabel import import_ppocrlabel
from data.importers.records import CORPUS_FILE, SCHEMA_DIR, CorpusWriter, check_record, write_atomic
from data.importers.report import ImportReport, Problem
from data.importers.weak import import_csv
from data.importers.xfund import import_xfund

IMPORTERS = {"ours": import_ours, "ppocrlabel": import_ppocrlabel, "xfund": import_xfund,
             "labelstudio": import_labelstudio, "csv": import_csv}
FORMATS = tuple(IMPORTERS)


def import_corpus(fmt: str, src: str | Path, out: str | Path, doc_type: str | None = None,
                  schemas: Sequence[str | Path] = (), **options: Any) -> ImportReport:
    """Import `src` in format `fmt` into the corpus directory `out` (created; corpus.jsonl replaced).

    corpus.jsonl is replaced atomically when the import finishes: an import that crashes or is killed
    leaves the previous corpus.jsonl (or none), never a partial one.

    `schemas` are schema YAML files copied to out/schemas/ so a new document type travels with its
    examples. `options` go to the importer (csv: `ocr`, `min_score`, `progress`).
    """
    if fmt not in IMPORTERS:
        raise ValueError(f"unknown import format {fmt!r}; choose one of {', '.join(FORMATS)}")
    src, out = Path(src), Path(out)
    if not src.exists():
        raise FileNotFoundError(f"--src {src} does not exist")
    report = ImportReport(format=fmt, source=str(src))
    if src.is_dir() and (src / SCHEMA_DIR).is_dir():      # a corpus folder brings its own schemas
        schemas = [*sorted((src / SCHEMA_DIR).glob("*.yaml")), *schemas]
    if schemas:
        (out / SCHEMA_DIR).mkdir(parents=True, exist_ok=True)
        for s in schemas:
            shutil.copyfile(s, out / SCHEMA_DIR / Path(s).name)
    with CorpusWriter(out) as writer:
        IMPORTERS[fmt](src, writer, report, doc_type=doc_type, **options)
    write_atomic(out / "import_report.json", report.to_json())
    return report


__all__ = ["FORMATS", "IMPORTERS", "CORPUS_FILE", "ImportReport", "Problem", "check_record", "import_corpus"]
