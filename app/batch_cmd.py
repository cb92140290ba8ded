"""`python -m app batch`: process folders of documents into JSONL (and CSV, and overlay images).

    python -m app batch scans/ invoices/*.pdf --out results.jsonl --csv table.csv --workers 2

Rerunning the same command after a crash, Ctrl-C or `kill -9` does only the documents that have no
row yet (see app/batch_state.py for why no row is lost or duplicated).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from app.batch_csv import write_csv
from app.batch_inputs import DOCUMENT_SUFFIXES, expand_inputs
from app.batch_state import ResultsFile, file_sha256
from app.batch_worker import Task, WorkerOptions, error_row, init_worker, run_task

STAGES = ("decode", "ocr", "extract", "total")

DESCRIPTION = """\
Read documents (photos, scans, PDFs, multi-page TIFFs) and write one JSON line per document.

IN may be files, folders (walked recursively) or glob patterns (quote them: 'scans/**/*.pdf').
In folders only these files are taken: %s.
A document that cannot be read becomes an error row (file, error type, message) and the batch
goes on.

Resume: run the same command again after a crash or kill; documents that already have a row in
--out (same path and same content hash) are skipped, so nothing is done twice or lost.

Exit status: 0 when every document has a good row, 1 when any failed or an IN matched nothing.
""" % ", ".join(DOCUMENT_SUFFIXES)


HELP = "process folders of documents into JSONL/CSV with worker processes; resumable after a kill"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's arguments (app/cli.py registers `batch` with HELP, add_arguments, run)."""
    build_parser(parser)


def run(args: argparse.Namespace) -> int:
    return main(args)


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m app batch")
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("inputs", nargs="+", metavar="IN", help="files, folders or glob patterns")
    parser.add_argument("--out", required=True, metavar="FILE.jsonl",
                        help="results, one JSON line per document; appended to, so a rerun resumes")
    parser.add_argument("--csv", metavar="FILE.csv",
                        help="also write a table: one row per document, one column per field "
                             "(rebuilt from --out at the end; UTF-8 with BOM so Excel shows Chinese)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="worker processes (default 1). Each loads its own OCR and extraction "
                             "models, about 1-3 GB of memory per worker, so N above the number of "
                             "CPU cores or of free GB/2 makes things slower, not faster")
    parser.add_argument("--draw", metavar="DIR",
                        help="also save each page with its OCR lines and fields drawn, as PNG in DIR")
    parser.add_argument("--type", dest="doc_type", metavar="T",
                        help="document type for every file, one the model was trained on (its labels.json "
                             "doc_types, e.g. vat_invoice); "
                             "default: detected per document")
    parser.add_argument("--model", dest="model_dir", metavar="DIR",
                        help="extraction model directory (default: the bundled models/default)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    return parser


@dataclass
class Summary:
    total: int = 0           # documents named by IN
    done: int = 0            # processed now, successfully
    failed: int = 0          # processed now, error row written
    skipped: int = 0         # already had a row from an earlier run
    earlier_failed: int = 0  # skipped rows that are error rows
    ignored: int = 0         # files in folders that are not documents
    missing: list[str] = field(default_factory=list)
    pages: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.earlier_failed == 0 and not self.missing

    def add(self, row: dict[str, Any]) -> None:
        if row.get("error"):
            self.failed += 1
        else:
            self.done += 1
        self.pages += len(row.get("pages") or [])
        for stage, secs in (row.get("timings") or {}).items():
            self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + float(secs)

    def report(self) -> str:
        rate = (self.done + self.failed) / self.wall if self.wall > 0 else 0.0
        page_rate = self.pages / self.wall if self.wall > 0 else 0.0
        lines = [f"documents: {self.total} named, {self.done} done, {self.failed} failed, "
                 f"{self.skipped} skipped (already in results"
                 + (f", {self.earlier_failed} of them failed earlier" if self.earlier_failed else "")
                 + f"), {self.ignored} ignored (not a document type)",
                 f"this run: {self.pages} pages in {self.wall:.1f} s = {rate:.2f} documents/s, "
                 f"{page_rate:.2f} pages/s"]
        if self.stage_seconds:
            parts = [f"{s} {self.stage_seconds[s]:.1f} s" for s in STAGES if s in self.stage_seconds]
            lines.append("time per stage, summed over documents: " + ", ".join(parts))
        for arg in self.missing:
            lines.append(f"not found: {arg} (check the path or quote the glob pattern)")
        return "\n".join(lines)


def plan_tasks(files: Iterable[str], results: ResultsFile, summary: Summary) -> list[Task]:
    """Hash every file and keep those without a row; unreadable files get an error row right away."""
    todo: list[Task] = []
    for path in files:
        try:
            sha = file_sha256(path)
        except OSError as exc:
            key = (path, "")
            if results.is_done(key):
                summary.skipped += 1
                summary.earlier_failed += 1
                continue
            row = error_row(path, "", "UnreadableFile",
                            f"cannot read {path}: {exc.strerror or exc}; check it exists and is readable")
            results.append(row)
            summary.add(row)
            continue
        key = (path, sha)
        if results.is_done(key):
            summary.skipped += 1
            if results.done[key].get("error"):
                summary.earlier_failed += 1
        else:
            todo.append(key)
    return todo


def _progress(total: int, enabled: bool) -> tqdm:
    return tqdm(total=total, unit="doc", dynamic_ncols=True, disable=not enabled, smoothing=0.1,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")


def _record(row: dict[str, Any], results: ResultsFile, summary: Summary, bar: tqdm, started: float) -> None:
    results.append(row)
    summary.add(row)
    elapsed = max(time.perf_counter() - started, 1e-9)
    bar.set_postfix_str(f"{summary.pages / elapsed:.2f} pages/s, {summary.failed} failed", refresh=False)
    bar.update(1)


def run_in_process(tasks: list[Task], options: WorkerOptions, results: ResultsFile, summary: Summary,
                   bar: tqdm, started: float) -> None:
    init_worker(options)
    for task in tasks:
        _record(run_task(task), results, summary, bar, started)


def run_in_pool(tasks: list[Task], options: WorkerOptions, workers: int, results: ResultsFile,
                summary: Summary, bar: tqdm, started: float) -> None:
    """Spawned workers, at most 2 tasks each in flight so a crash costs little and memory stays flat.
    If a worker dies (e.g. killed for memory), its in-flight documents get error rows and a fresh
    pool carries on with the rest."""
    pending = list(reversed(tasks))
    context = multiprocessing.get_context("spawn")   # fork would copy Paddle's threads and state
    while pending:
        slots = context.Value("i", 0)                # each worker takes the next share of the cores
        with cf.ProcessPoolExecutor(workers, mp_context=context, initializer=init_worker,
                                    initargs=(options, slots, workers)) as pool:
            in_flight: dict[cf.Future, Task] = {}
            broken = False
            while (pending or in_flight) and not broken:
                while pending and len(in_flight) < 2 * workers:
                    task = pending.pop()
                    in_flight[pool.submit(run_task, task)] = task
                finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                for future in finished:
                    task = in_flight.pop(future)
                    try:
                        row = future.result()
                    except cf.process.BrokenProcessPool:
                        broken = True
                        row = error_row(*task, "WorkerCrashed",
                                        "a worker process died while this document was in flight "
                                        "(often out of memory: try fewer --workers)")
                    _record(row, results, summary, bar, started)
            if broken:
                for future, task in in_flight.items():
                    _record(error_row(*task, "WorkerCrashed",
                                      "a worker process died while this document was in flight "
                                      "(often out of memory: try fewer --workers)"),
                            results, summary, bar, started)


def run_batch(inputs: list[str], out: str, *, workers: int = 1, csv_path: str | None = None,
              options: WorkerOptions | None = None, progress: bool = True) -> Summary:
    """The whole command as a function (tests and scripts call this directly)."""
    options = options or WorkerOptions()
    found = expand_inputs(inputs)
    summary = Summary(total=len(found.files), ignored=len(found.ignored), missing=found.missing)
    started = time.perf_counter()
    with ResultsFile.open(out) as results:
        if results.report.torn_bytes:
            print(f"[batch] dropped an unfinished last line ({results.report.torn_bytes} bytes) from {out}; "
                  "that document will be redone", file=sys.stderr)
        tasks = plan_tasks(found.files, results, summary)
        with _progress(len(tasks), progress) as bar:
            if workers <= 1 or len(tasks) <= 1:
                run_in_process(tasks, options, results, summary, bar, started)
            else:
                run_in_pool(tasks, options, min(workers, len(tasks)), results, summary, bar, started)
    summary.wall = time.perf_counter() - started
    if csv_path:
        write_csv(out, csv_path, options.doc_type)
    return summary


def main(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("--workers must be 1 or more", file=sys.stderr)
        return 2
    if args.model_dir and not os.path.isdir(args.model_dir):
        print(f"--model {args.model_dir}: no such directory; pass a model directory made by "
              "`python -m training export`, or leave --model out for the bundled default", file=sys.stderr)
        return 2
    from app.model_types import UnknownTypeError, check_doc_type
    try:
        check_doc_type(args.doc_type, args.model_dir)    # the model's types, not every schema in the repo
    except UnknownTypeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    options = WorkerOptions(model_dir=args.model_dir, doc_type=args.doc_type, draw_dir=args.draw)
    try:
        summary = run_batch(args.inputs, args.out, workers=args.workers, csv_path=args.csv,
                            options=options, progress=not args.no_progress)
    except KeyboardInterrupt:
        print("\n[batch] interrupted; rerun the same command to continue where it stopped", file=sys.stderr)
        return 130
    print(summary.report(), file=sys.stderr)
    if args.csv:
        print(f"[batch] table written to {args.csv}", file=sys.stderr)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
