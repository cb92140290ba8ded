"""`python -m app extract FILE... [--json OUT] [--draw DIR] [--model DIR] [--type T]`

OCR + field extraction for each file; prints a table per document (label, value, score, valid),
writes the Document JSON (one file: a JSON list; a directory: <name>.json each) and overlay images.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from data.document import Document

HELP = "OCR and extract fields from images or PDFs; print a table, write JSON and overlays"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="images (PNG/JPEG/TIFF...) or PDFs")
    p.add_argument("--json", metavar="OUT", help="write Document JSON: a .json file (a list when several "
                                                "inputs) or a directory (one <name>.json per input)")
    p.add_argument("--draw", metavar="DIR", help="write overlay images (boxes coloured by field) here")
    p.add_argument("--model", metavar="DIR", help="model directory (default: models/default)")
    p.add_argument("--type", dest="doc_type", metavar="T",
                   help="document type to assume, one the model was trained on (its labels.json "
                        "doc_types, e.g. vat_invoice); default: the model decides")


def field_table(doc: Document) -> str:
    """The fields of a document as aligned text: label, value, score, valid."""
    if doc.error:
        return f"  ERROR {doc.error.get('type')}: {doc.error.get('message')}"
    score = f" ({doc.doc_type_score:.2f})" if doc.doc_type_score is not None else ""
    rows = [f"  type: {doc.doc_type}{score}"]
    mark = {True: "ok", False: "INVALID", None: "-"}
    for key, f in doc.fields.items():
        rows.append(f"  {f.label or key:<22s} {f.value:<36s} {f.score:5.2f}  {mark[f.valid]}")
    for i, row in enumerate(doc.items, 1):
        rows.append(f"  item {i}: " + "; ".join(f"{k}={f.value}" for k, f in row.items()))
    for p in doc.pairs:
        rows.append(f"  {p.key:<22s} {p.value:<36s} {p.score:5.2f}")
    for w in doc.warnings:
        rows.append(f"  ! {w}")
    return "\n".join(rows)


def _draw(analysis, out_dir: Path) -> list[Path]:
    """One PNG per page: OCR lines and field boxes (app/draw.py through the UI's page_overlay)."""
    import cv2
    import numpy as np
    from app.ui_view import page_overlay
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    stem = Path(analysis.document.source).stem or "page"
    for page, image in zip(analysis.document.pages, analysis.images):
        path = out_dir / f"{stem}_p{page.index + 1}.png"
        cv2.imwrite(str(path), np.ascontiguousarray(page_overlay(image, page, analysis.document)))
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    from app.model_types import UnknownTypeError, check_doc_type
    from app.pipeline import analyse_file
    from models.extractor import ModelDirError
    try:
        check_doc_type(args.doc_type, args.model)     # before any OCR: a typo should cost nothing
    except UnknownTypeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    docs, failed = [], 0
    for path in args.files:
        try:
            analysis = analyse_file(path, args.model, args.doc_type)
        except (ModelDirError, FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        doc = analysis.document
        docs.append(doc)
        failed += doc.error is not None
        print(f"{path}")
        print(field_table(doc))
        if args.draw and analysis.images:
            for p in _draw(analysis, Path(args.draw)):
                print(f"  overlay: {p}")
    if args.json:
        out = Path(args.json)
        if out.suffix.lower() == ".json":
            out.parent.mkdir(parents=True, exist_ok=True)
            payload = docs[0].to_dict() if len(docs) == 1 else [d.to_dict() for d in docs]
            out.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        else:
            out.mkdir(parents=True, exist_ok=True)
            for d in docs:
                (out / f"{Path(d.source).stem or 'document'}.json").write_text(d.to_json(indent=1), encoding="utf-8")
        print(f"JSON written to {out}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app extract", description=HELP)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
