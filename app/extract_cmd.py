"""`python -m app extract FILE... [--json OUT] [--draw DIR] [--model DIR] [--type T]`

OCR + field extraction for each file; prints a table per document found in it (a PDF of three
invoices: three tables, "a.pdf — document 2 of 3, page 2"), writes the Document JSON and overlay images.
A form's own tables are summed up under its pairs ("表格 1 (第1页): 3 列 x 4 行: 称谓 | 姓名 | 出生年月",
then its first records); --json holds every cell.

JSON (--json OUT, app/cli.py JSON_HELP, the same for every command): one document in all is written
as one JSON object; several (several files, or a file holding several documents) as JSON Lines, one
document per line in order, each with its `source`, `part` and `parts`, as `batch --out` writes them;
an OUT ending in .jsonl always gets JSON Lines. Written atomically (temporary file, fsync, rename).
--draw writes <name>_p<N>.png for every page, drawn as soon as the page is processed (no page image
is kept for later), with the fields of the document that page belongs to.

Exit status (app/cli.py EXIT_STATUS): 2 before any OCR for a bad FILE, --type, --model, --json or
--draw; 1 when a document failed (its error on stderr and in the JSON); 0 otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from app.cli import (
    EXIT_FAILED,
    JSON_HELP,
    UsageError,
    check_inputs,
    check_writable,
    terminal_text,
    write_documents,
    write_png,
)
from data.document import Document, Page, Table

HELP = "OCR and extract fields from images or PDFs; print a table, write JSON and overlays"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="images (PNG/JPEG/TIFF...) or PDFs")
    p.add_argument("--json", metavar="OUT", help=JSON_HELP)
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
    rows += [f"  {line}" for n, t in enumerate(doc.tables, 1) for line in table_summary(n, t)]
    for p in doc.signatures:
        rows.append(f"  签名 {p.key:<19s} {p.value:<36s} {p.score:5.2f}")
    for w in doc.warnings:
        rows.append(f"  ! {w}")
    return "\n".join(rows)


def table_summary(number: int, table: Table, records: int = 3) -> list[str]:
    """A form's table in a few lines: its number, page, size and column names, then its first `records`
    records (a long member list is not printed whole: --json has every cell)."""
    lines = [f"表格 {number} (第{table.page + 1}页): {len(table.columns)} 列 x {len(table.rows)} 行: "
             + " | ".join(table.columns)]
    for i, record in enumerate(table.records()[:records], 1):
        lines.append(f"  {i}: " + " | ".join(record.values()))
    if len(table.rows) > records:
        lines.append(f"  ... {len(table.rows) - records} more")
    return lines


def result_title(path: str, doc: Document) -> str:
    """The heading of a document's table: the file, and which document of it when it holds several."""
    if doc.parts <= 1:
        return path
    pages = doc.page_numbers()
    where = f"page{'s' if len(pages) > 1 else ''} {', '.join(map(str, pages))}"
    return f"{path} — document {doc.part} of {doc.parts}, {where}"


class _Drawer:
    """--draw: the pipeline hands each full-size page over once, right after processing it; it is
    drawn and written here at once and not kept."""

    def __init__(self, source: str, out_dir: Path) -> None:
        self.stem = Path(source).stem or "page"
        self.out_dir = out_dir
        self.written: dict[int, Path] = {}

    def __call__(self, image: np.ndarray, page: Page, result: Document | None) -> None:
        from app.ui.view import page_overlay
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"{self.stem}_p{page.index + 1}.png"
        drawn = page_overlay(image, page, result or Document(pages=[page]), legend=True)
        write_png(path, drawn)
        self.written[page.index] = path


def run(args: argparse.Namespace) -> int:
    from app.model_types import UnknownTypeError, check_doc_type
    from models.extractor import ModelDirError
    from reading.route import analyse_file
    try:
        check_doc_type(args.doc_type, args.model)     # before any OCR: a typo should cost nothing
    except UnknownTypeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    check_inputs(args.files)                          # the rest of the command line, still before any OCR
    if args.model and not os.path.isdir(args.model):
        raise UsageError(f"--model {args.model}: no such directory; pass a model directory made by "
                         "`python -m training export`, or leave --model out for the bundled default")
    if args.json:
        check_writable(args.json, "--json")
    if args.draw:
        check_writable(args.draw, "--draw", directory=True)
    written: list[Document] = []
    failed = 0
    for path in args.files:
        drawer = _Drawer(path, Path(args.draw)) if args.draw else None
        try:
            # on_image only with --draw, so processors without it (tests' stand-ins) still fit
            analysis = (analyse_file(path, args.model, args.doc_type, on_image=drawer) if drawer is not None
                        else analyse_file(path, args.model, args.doc_type))
        except (ModelDirError, FileNotFoundError, ValueError) as exc:
            print(f"error: {terminal_text(str(exc))}", file=sys.stderr)
            return 2
        docs = analysis.parts()
        written.extend(docs)
        failed += analysis.document.error is not None or any(d.error is not None for d in docs)
        shown_path = terminal_text(path)    # printable whatever the name holds (GBK bytes, escape sequences)
        for doc in docs:
            if doc.error:       # on stderr (exit status 1); --json keeps it as the document's error entry
                message = terminal_text(str(doc.error.get("message")))
                named = shown_path in message or terminal_text(str(Path(path))) in message
                print(f"error: {message if named else f'{shown_path}: {message}'}", file=sys.stderr)
            else:
                print(result_title(shown_path, doc))
                print(field_table(doc))
            for page in doc.pages:
                if drawer is not None and page.index in drawer.written:
                    print(f"  overlay: {terminal_text(str(drawer.written[page.index]))}")
        if drawer is not None:          # pages skipped as blank belong to no document: listed once
            shown = {p.index for d in docs for p in d.pages}
            for index, overlay in sorted(drawer.written.items()):
                if index not in shown:
                    print(f"  overlay (page {index + 1}, skipped as blank): {terminal_text(str(overlay))}")
    if args.json:
        kind = write_documents(args.json, written)
        print(f"{kind} ({len(written)} document{'s' if len(written) != 1 else ''}) written to "
              f"{terminal_text(args.json)}")
    return EXIT_FAILED if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app extract", description=HELP)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
