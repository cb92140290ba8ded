"""`python -m app ocr FILE... [--json OUT] [--draw DIR] [--threads N]`: OCR only, no field extraction.

Prints each page's lines (or a one-line summary per file with --summary), writes one Document per
file (pages, lines with quads and scores, timings) to --json (app/cli.py JSON_HELP, the same for every
command: one JSON object for one FILE, JSON Lines for several or when OUT ends in .jsonl; written
atomically) and overlay PNGs to --draw. Every FILE, --json and --draw are checked
before the OCR engine loads (exit status 2: a missing file, an unwritable output); a file that fails
while being read is reported on one line, the others still run, and the exit status is 1 (app/cli.py
EXIT_STATUS).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.cli import (
    EXIT_FAILED,
    JSON_HELP,
    UsageError,
    check_inputs,
    check_writable,
    output_error,
    terminal_text,
    write_documents,
    write_png,
)

HELP = "OCR images or PDFs (PP-OCR, offline): print lines, write Document JSON and overlay PNGs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="images (jpg/png/bmp/webp/tiff) or PDFs")
    p.add_argument("--json", metavar="OUT", help=JSON_HELP)
    p.add_argument("--draw", metavar="DIR", help="write one overlay PNG per page (line quads) into DIR")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads per OCR model (default: 1, measured fastest on a busy 2-core machine; "
                        "try 2 on an idle one)")
    p.add_argument("--dpi", type=int, default=None, help="PDF render resolution (default: data.io.DEFAULT_DPI)")
    p.add_argument("--pages", metavar="A-B", help="only pages A..B (1-based, inclusive) of each file")
    p.add_argument("--det-side", type=int, default=None, metavar="PX",
                   help="longer side given to the text detector (default: the engine's tuned value)")
    p.add_argument("--no-angle", action="store_true", help="skip page-orientation detection (faster on upright scans)")
    p.add_argument("--summary", action="store_true", help="print one line per file instead of every text line")


def _page_range(spec: str | None) -> tuple[int, int] | None:
    if not spec:
        return None
    try:
        a, _, b = spec.partition("-")
        start, stop = int(a), int(b or a)
    except ValueError:
        raise UsageError(f"--pages expects A-B (e.g. 1-5), got {spec!r}") from None
    if start < 1 or stop < start:
        raise UsageError(f"--pages {spec!r}: pages are 1-based and A <= B")
    return start - 1, stop


def ocr_file(path: str, engine, dpi: int, page_range: tuple[int, int] | None, draw_dir: Path | None):
    """One file -> Document (pages, lines, timings). Raises data.io.InputError for bad input."""
    from app.draw import draw_document_page
    from data.document import Document, display_name
    from data.io import iter_pages
    from reading.route import upright

    doc = Document(source=display_name(path))
    timings: dict[str, float] = {"decode": 0.0}
    t_total = time.perf_counter()
    pages = iter_pages(path, dpi=dpi, page_range=page_range)
    first = page_range[0] if page_range else 0
    index = first
    while True:
        t = time.perf_counter()
        image = next(pages, None)
        timings["decode"] += time.perf_counter() - t
        if image is None:
            break
        page = engine.read(image, page_index=index, timings=timings)
        doc.pages.append(page)
        if draw_dir is not None:
            overlay = draw_dir / f"{Path(path).stem}_p{index + 1}.png"
            try:
                draw_dir.mkdir(parents=True, exist_ok=True)
                write_png(overlay, draw_document_page(upright(image, page.rotation), page))
            except OSError as exc:      # a full or read-only disk: one sentence, not a traceback
                raise output_error("--draw", overlay, exc, "the overlay images stop here") from None
        index += 1
    timings["total"] = time.perf_counter() - t_total
    doc.timings = {k: round(v, 4) for k, v in timings.items()}
    return doc


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from data.document import Document
    from data.io import DEFAULT_DPI, InputError
    from models.ocr import OCRSettings, get_engine

    page_range = _page_range(args.pages)      # the command line first: a typo should cost no model load
    check_inputs(args.files)
    if args.json:
        check_writable(args.json, "--json")
    if args.draw:
        check_writable(args.draw, "--draw", directory=True)
    overrides = {}
    if args.threads:
        overrides["cpu_threads"] = args.threads
    if args.det_side:
        overrides["det_limit_side_len"] = args.det_side
    if args.no_angle:
        overrides["use_angle_cls"] = False
    engine = get_engine(OCRSettings(**overrides))
    draw_dir = Path(args.draw) if args.draw else None
    docs: list[Document] = []
    failed = 0
    files = tqdm(args.files, desc="ocr", unit="file", disable=len(args.files) < 2 or not sys.stderr.isatty())
    for path in files:
        try:
            doc = ocr_file(path, engine, args.dpi or DEFAULT_DPI, page_range, draw_dir)
        except InputError as exc:
            print(f"error: {terminal_text(str(exc))}", file=sys.stderr)
            docs.append(Document(source=path, error={"type": "InputError", "message": exc.reason}))
            failed += 1
            continue
        docs.append(doc)
        n_lines = sum(len(p.lines) for p in doc.pages)
        if args.summary:
            print(f"{terminal_text(path)}: {len(doc.pages)} page(s), {n_lines} lines, {doc.timings['total']:.2f} s")
        else:
            for page in doc.pages:
                turned = f", turned {page.rotation} deg" if page.rotation else ""
                print(f"== {terminal_text(path)} page {page.index + 1} ({page.width}x{page.height}{turned}, "
                      f"{len(page.lines)} lines)")
                for line in page.lines:
                    print(f"{line.score:.2f}  {line.text}")
    if args.json:
        write_documents(args.json, docs)
    return EXIT_FAILED if failed else 0
