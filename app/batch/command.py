"""`python -m app batch`: process folders of documents into JSONL (and CSV, and overlay images).

    python -m app batch scans/ invoices/*.pdf --out results.jsonl --csv table.csv --workers 2
    python -m app batch scans/ --out results.jsonl --ray auto      # the same on a Ray cluster
    python -m app batch scans/ --out results.jsonl --xlsx 台账.xlsx --register invoices.sqlite \
        --rename '{date}-{seller}-{total}-{number}' --to filed/          # register, duplicates, renamed copies

Rerunning the same command after a crash, Ctrl-C or `kill -9` does only the files that have no
rows yet (see app/batch/state.py for why no row is lost or duplicated, and app/batch/pool.py for
what happens when a worker process dies).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from app.batch.csv_out import tables_csv_path, write_csv, write_tables_csv
from app.batch.inputs import DOCUMENT_SUFFIXES, expand_inputs
from app.batch.pool import WorkerPool, WorkersFailedToStart
from app.batch.rename import DEFAULT_TEMPLATE, TemplateError, check_template, file_by_fields
from app.batch.state import NotResultsFile, ResultsFile, ResultsLocked, ResultsWriteError, file_sha256
from app.batch.worker import Task, WorkerOptions, error_row, init_worker, run_task
from app.cli import terminal_text
from data.io import InputError

if TYPE_CHECKING:   # app.batch.ray_pool is imported only with --ray (it loads Ray)
    from app.batch.ray_pool import RayPool, RaySettings
    from app.register import InvoiceRegister

STAGES = ("decode", "ocr", "text_layer", "extract", "total")   # text_layer: pages read from the file's own text

DESCRIPTION = """\
Read documents (photos, scans, PDFs, multi-page TIFFs) and write one JSON line per document
(a file holding several documents, e.g. a PDF of two invoices, gives one line for each, numbered
by "part" 1..N of "parts").

IN may be files, folders (walked recursively) or glob patterns (quote them: 'scans/**/*.pdf').
In folders only these files are taken: %s.
A file that cannot be read becomes an error row (file, error type, message) and the batch goes on;
so does a FIFO, device or socket (or a link to one), which is never opened (NotRegularFile).
A file name that is not valid UTF-8 (e.g. GBK names from a Windows zip) is processed too; its row
shows undecodable bytes as \\xNN in "file" and holds the exact name as hex in "file_bytes_hex".

Resume: run the same command again after a crash or kill; files that already have their rows in
--out (same path and same content hash) are skipped, so nothing is done twice or lost. Error rows
count as done; add --retry-failed to try those files again. Only one batch at a time may write an
--out: a second one on the same file stops with exit status 2. Lines of --out that are not JSON
(hand edits, disk errors) are reported at the start with their line numbers, left where they are
and ignored. An existing --out that is not a results file (no line is a result row) is refused with
exit status 2 and left untouched.

Full disk: when rows cannot be written (no space, a read-only or failing disk) the batch stops at
once with exit status 1 and names every file that has no rows; the results file keeps only whole
rows. Free space and run the same command again: it does exactly those files, none twice.

If a worker process dies (killed, out of memory), only the file it was reading is tried again, once,
in a new worker; a file that kills a worker twice gets a WorkerCrashed error row. Workers exit when
the batch process does.

More than one machine: --ray [ADDRESS] sends the documents to Ray actors instead of local worker
processes (ADDRESS as ray.init takes it: `auto` for the cluster this machine belongs to, HOST:PORT of
its head; none starts a Ray instance on this machine only). Each actor loads the models once; the
default is one actor per CPU of the cluster. This process reads each file and ships its bytes, so
nodes need no shared disk (--shared-input: send paths instead, for a mount every node has at the same
path). Rows, resume, CSV and --draw overlays are written here, exactly as without --ray. An actor that
dies has its document tried once more on another actor, then a WorkerCrashed row. --ray takes an
optional value: put it after IN, or write --ray=ADDRESS.

Office results (rebuilt from --out at the end of every run, so a resumed run's tables cover every file):
--csv: one row per document (a form's key-value pairs in its "pairs" column as JSON), the columns in
schema order and the same in every run, English keys as header (--csv-labels adds a line of Chinese
labels above them); a form's tables go beside it, one line per cell (file, part, page, table, record,
column, text: results.csv -> results.tables.csv), when some document has tables. --xlsx: the invoice
register (发票台账) workbook: one row per invoice with Chinese and English headers, amounts as numbers
(two decimals, a SUM totals row), codes and numbers as text with every digit, dates as dates; line
items, other types, forms' pairs, forms' tables (one row per cell) and unknown pages on sheets of their
own. Duplicates: an invoice read twice (key 发票代码+发票号码, or the 20-digit 数电票 number; else seller
tax ID + total + date) is named in the duplicate_of column of each copy, with the other copy's file and
page; same seller, total and date with different numbers is a warning (near_duplicate_of). --register
FILE keeps every invoice seen in a local SQLite file, so a later batch (or the UI, with
PIAOJU_REGISTER=FILE) finds invoices claimed in earlier runs too; two batches may share it.
--rename TEMPLATE --to DIR copies each file to DIR under a name made of its fields (never moves, never
overwrites: a taken name gets " (2)"); a file of several documents is named by its first one.
A page that is neither a known type nor a form (a newspaper, a book page, a slide) is typed "other": its
text is kept, and it gets no fields and no pairs.

Exit status: 0 when every file has good rows, 1 when any failed, got no rows (rows or --csv could
not be written) or an IN matched nothing, 2 for bad arguments (an unwritable --out, --csv or --draw
is found before any work), a locked --out, an --out that is not a results file or a --ray ADDRESS
where no Ray answers.
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
                        help="results, one JSON line per document (the JSON Lines that ocr and extract "
                             "--json write for several documents); appended to, so a rerun resumes")
    parser.add_argument("--csv", metavar="FILE.csv",
                        help="also write a table: one row per document, one column per field in schema "
                             "order (rebuilt from --out at the end; UTF-8 with BOM so Excel shows Chinese)")
    parser.add_argument("--csv-labels", action="store_true",
                        help="with --csv: a first header line of Chinese labels above the English keys")
    parser.add_argument("--xlsx", metavar="FILE.xlsx",
                        help="also write the invoice register workbook (发票台账; see 'Office results' above)")
    parser.add_argument("--register", metavar="FILE",
                        help="local invoice register (SQLite, created if missing) to find duplicates across "
                             "runs; every invoice-like document of --out is recorded in it")
    parser.add_argument("--rename", nargs="?", const=DEFAULT_TEMPLATE, default=None, metavar="TEMPLATE",
                        help="with --to: copy each file to DIR, named from its fields (default template "
                             f"{DEFAULT_TEMPLATE}; any field key in braces, e.g. {{invoice_code}}; a file of "
                             "several documents is named by its first)")
    parser.add_argument("--to", dest="rename_to", metavar="DIR", help="folder for the --rename copies")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default 1; with --ray: actors, default one per CPU of the "
                             "cluster). Each loads its own OCR and extraction models, about 1-3 GB of "
                             "memory per worker, so N above the number of CPU cores or of free GB/2 makes "
                             "things slower, not faster")
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                        help="run on Ray actors: ADDRESS as ray.init takes it (auto, HEAD_IP:6379); none "
                             "starts a Ray instance on this machine (see 'More than one machine' above)")
    parser.add_argument("--shared-input", action="store_true",
                        help="with --ray: actors open the input paths themselves (every node mounts them at "
                             "the same path) instead of receiving the bytes from this process")
    parser.add_argument("--draw", metavar="DIR",
                        help="also save each page with its OCR lines and fields drawn, as PNG in DIR")
    parser.add_argument("--type", dest="doc_type", metavar="T",
                        help="document type for every file, one the model was trained on (its labels.json "
                             "doc_types, e.g. vat_invoice); "
                             "default: detected per document")
    parser.add_argument("--model", dest="model_dir", metavar="DIR",
                        help="extraction model directory (default: the bundled models/default)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="process again the files whose rows in --out are error rows (the newest rows "
                             "count; the CSV shows them)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    return parser


class BatchSetupError(ValueError):
    """Something found before any work that makes the run pointless (an unwritable --csv or --draw)."""


class BatchWriteError(RuntimeError):
    """Results (or the --csv table) could not be written during the run (a full or failing disk): the batch
    stopped; the message names the files without rows. `summary` is what the run did until then."""

    def __init__(self, message: str, summary: "Summary") -> None:
        super().__init__(message)
        self.summary = summary


MAX_NAMED = 20    # files named in a message; the rest are counted


@dataclass
class Summary:
    """Counts are of files (what IN names and what resume skips); `documents` counts the rows written
    now, which is more when files hold several documents."""
    total: int = 0           # files named by IN
    done: int = 0            # processed now, successfully
    failed: int = 0          # processed now, error row written
    skipped: int = 0         # already had rows from an earlier run
    earlier_failed: int = 0  # skipped files whose rows are error rows
    retried: int = 0         # files with error rows processed again (--retry-failed)
    ignored: int = 0         # files in folders that are not documents
    missing: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)      # files named by IN that got no row (see check)
    accounted: set[str] = field(default_factory=set)   # files counted in done, failed or skipped
    documents: int = 0       # rows written now (one per document found in the files done or failed)
    pages: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    startup: float = 0.0     # seconds from the start until every worker had its models loaded (0: in-process)
    pool: str = ""           # where the documents ran, when not here or in local workers (Ray)
    overhead_per_document: float = 0.0   # Ray: seconds per document outside the actors' own work
    duplicates: list[str] = field(default_factory=list)   # "file p.N = other p.M" (app/register.py)
    near_duplicates: int = 0                               # documents with a near-duplicate warning
    renamed: int = 0                                       # files copied (or found) under --to
    notes: list[str] = field(default_factory=list)        # problems of the office outputs, as sentences

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.earlier_failed == 0 and not self.missing and not self.lost \
            and self.done + self.failed + self.skipped == self.total

    def check(self, files: list[str]) -> None:
        """Set `lost` to the files named by IN that were neither done, failed nor skipped. A batch must
        never call a file done without its row; one that reached no row (a bug, a write that was lost)
        makes the run fail and is named, instead of a quiet "7 named, 2 done, 0 failed"."""
        self.lost = [path for path in files if path not in self.accounted]

    def skip(self, path: str, failed_earlier: bool) -> None:
        self.skipped += 1
        self.earlier_failed += failed_earlier
        self.accounted.add(path)

    def add(self, rows: list[dict[str, Any]], path: str | None = None) -> None:
        """Count one file's rows (`path`: the file, when it is not the rows' "file")."""
        if path is None and rows:
            path = str(rows[0].get("file", ""))
        self.accounted.add(path or "")
        if any(row.get("error") for row in rows):
            self.failed += 1
        else:
            self.done += 1
        self.documents += len(rows)
        for row in rows:
            self.pages += len(row.get("pages") or [])
            for stage, secs in (row.get("timings") or {}).items():
                self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + float(secs)

    def report(self) -> str:
        rate = (self.done + self.failed) / self.wall if self.wall > 0 else 0.0
        page_rate = self.pages / self.wall if self.wall > 0 else 0.0
        lines = [f"files: {self.total} named, {self.done} done, {self.failed} failed, "
                 f"{self.skipped} skipped (already in results"
                 + (f", {self.earlier_failed} of them failed earlier" if self.earlier_failed else "")
                 + f"), {self.ignored} ignored (not a document type)"
                 + (f"; {self.retried} failed earlier and retried" if self.retried else ""),
                 f"this run: {self.documents} documents (rows) from {self.done + self.failed} files, "
                 f"{self.pages} pages in {self.wall:.1f} s = {rate:.2f} files/s, {page_rate:.2f} pages/s"]
        if self.startup > 0 and self.wall > self.startup:
            ready = self.wall - self.startup
            lines[-1] += (f" ({self.startup:.1f} s of it starting the workers; "
                          f"{(self.done + self.failed) / ready:.2f} files/s, {self.pages / ready:.2f} pages/s after)")
        if self.stage_seconds:
            parts = [f"{s} {self.stage_seconds[s]:.1f} s" for s in STAGES
                     if self.stage_seconds.get(s) or (s in self.stage_seconds and s not in ("ocr", "text_layer"))]
            lines.append("time per stage, summed over documents: " + ", ".join(parts))
        if self.pool:
            lines.append(self.pool)
        if self.duplicates:
            lines.append(f"DUPLICATES: {len(self.duplicates)} documents are invoices read before (see the "
                         "duplicate_of column): " + "; ".join(terminal_text(d) for d in self.duplicates[:MAX_NAMED])
                         + (f" and {len(self.duplicates) - MAX_NAMED} more" if len(self.duplicates) > MAX_NAMED
                            else ""))
        if self.near_duplicates:
            lines.append(f"warning: {self.near_duplicates} documents have the seller, total and date of another "
                         "with a different number (near_duplicate_of column); check them")
        if self.renamed:
            lines.append(f"{self.renamed} files copied under their field names")
        lines += self.notes
        if self.earlier_failed:
            lines.append(f"{self.earlier_failed} files have error rows from earlier runs; "
                         "add --retry-failed to process them again")
        for arg in self.missing:
            lines.append(f"not found: {terminal_text(arg)} (check the path or quote the glob pattern)")
        unaccounted = self.total - (self.done + self.failed + self.skipped)
        if self.lost or unaccounted:
            lines.append(f"ERROR: {max(len(self.lost), unaccounted)} of {self.total} files got no rows in this "
                         f"run: {name_files(self.lost)}; run the same command again to process them")
        if self.total == 0 and not self.missing:
            lines.append("no documents found in the inputs: nothing to do (documents are JPEG, PNG, BMP, WebP, "
                         "TIFF or PDF files; folders are walked)")
        return "\n".join(lines)


def name_files(paths: list[str]) -> str:
    """The first MAX_NAMED paths, printable, and how many more."""
    named = ", ".join(terminal_text(path) for path in paths[:MAX_NAMED])
    return named + (f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else "")


def plan_tasks(files: Iterable[str], results: ResultsFile, summary: Summary,
               retry_failed: bool = False) -> list[Task]:
    """Hash every file and keep those without rows (and, with retry_failed, those with error rows);
    unreadable files get an error row right away, and so do FIFOs, devices and sockets (or links to
    them), which are never opened for reading: hashing /dev/zero never ends and a FIFO blocks."""
    todo: list[Task] = []
    for path in files:
        try:
            sha = file_sha256(path)
        except (OSError, InputError) as exc:
            key = (path, "")
            if results.is_done(key) and not retry_failed:
                summary.skip(path, True)
                continue
            summary.retried += results.is_done(key)
            if isinstance(exc, InputError):
                row = error_row(path, "", "NotRegularFile", f"skipped: {exc.reason}")
            else:
                row = error_row(path, "", "UnreadableFile",
                                f"cannot read {path}: {exc.strerror or exc}; check it exists and is readable")
            row.update(part=1, parts=1)
            results.append(row)
            summary.add([row], path)
            continue
        key = (path, sha)
        if not results.is_done(key):
            todo.append(key)
        elif retry_failed and results.failed(key):
            summary.retried += 1
            todo.append(key)
        else:
            summary.skip(path, results.failed(key))
    return todo


def _progress(total: int, enabled: bool) -> tqdm:
    return tqdm(total=total, unit="file", dynamic_ncols=True, disable=not enabled, smoothing=0.1,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")


def as_rows(task: Task, result: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """run_task's answer as a list of rows numbered part 1..N of N (a single dict, from workers that
    predate multi-document files, is part 1 of 1); never empty, so the file counts as done. The
    numbering is set here, where the group is written, so a group on disk is always complete."""
    rows = [result] if isinstance(result, dict) else list(result)
    if not rows:
        rows = [error_row(*task, "NoDocument", "the processor returned no rows for this file")]
    for number, row in enumerate(rows, 1):
        row["part"], row["parts"] = number, len(rows)
    return rows


def _record(task: Task, result: dict[str, Any] | list[dict[str, Any]], results: ResultsFile, summary: Summary,
            bar: tqdm, started: float) -> None:
    rows = as_rows(task, result)
    results.append_rows(rows)       # ResultsWriteError (a full disk) stops the batch; see run_batch
    summary.add(rows, task[0])
    elapsed = max(time.perf_counter() - started, 1e-9)
    bar.set_postfix_str(f"{summary.documents} docs, {summary.pages / elapsed:.2f} pages/s, "
                        f"{summary.failed} failed", refresh=False)
    bar.update(1)


def run_in_process(tasks: list[Task], options: WorkerOptions, results: ResultsFile, summary: Summary,
                   bar: tqdm, started: float) -> None:
    init_worker(options)
    for task in tasks:
        _record(task, run_task(task), results, summary, bar, started)


def run_in_pool(tasks: list[Task], options: WorkerOptions, workers: int, results: ResultsFile,
                summary: Summary, bar: tqdm, started: float) -> None:
    """Spawned workers, one document each at a time; a dead worker costs only its own document
    (tried once more, then a WorkerCrashed row). See app/batch/pool.py."""
    pool = WorkerPool(options, workers, lambda task, rows: _record(task, rows, results, summary, bar, started))
    try:
        pool.run(tasks)
    finally:
        if pool.ready_at:
            summary.startup = max(0.0, max(pool.ready_at) - started)


def connect_ray(options: WorkerOptions, workers: int | None, settings: "RaySettings") -> "RayPool":
    """Start or join Ray before any document is read (a wrong ADDRESS is a setup error, exit 2)."""
    from app.batch.ray_pool import RayPool, RaySetupError
    pool = RayPool(options, workers, lambda task, rows: None, settings)
    try:
        pool.connect()
    except RaySetupError as exc:
        pool.close()
        raise BatchSetupError(str(exc)) from None
    return pool


def check_writable(path: str, what: str, directory: bool = False) -> None:
    """app.cli.check_writable (fail before hours of OCR if `path` cannot be written), as the batch's
    setup error."""
    from app.cli import UsageError
    from app.cli import check_writable as check
    try:
        check(path, what, directory)
    except UsageError as exc:
        raise BatchSetupError(str(exc)) from None


def open_results(out: str) -> ResultsFile:
    """ResultsFile.open, with an --out that cannot be opened (a read-only or full filesystem, no
    permission, a folder) as a setup error instead of a traceback."""
    try:
        return ResultsFile.open(out)
    except OSError as exc:
        raise BatchSetupError(f"--out {terminal_text(out)}: cannot be opened for writing ({exc.strerror or exc}); "
                              "choose another path or free some space") from None


def write_failed(exc: ResultsWriteError, out: str, summary: Summary, files: list[str]) -> BatchWriteError:
    """The error of a run whose rows stopped reaching --out: which files have no rows, and what to do."""
    summary.check(files)
    why = exc.error.strerror or str(exc.error)
    lost_now = terminal_text(str(exc.rows[0].get("file", ""))) if exc.rows else ""
    return BatchWriteError(
        f"cannot write results to {terminal_text(out)} ({why}), so the batch stopped"
        + (f" (the rows of {lost_now} were lost in that write)" if lost_now else "")
        + f". {len(summary.lost)} of {summary.total} files have no rows: {name_files(summary.lost)}. "
        f"The rows already in {terminal_text(out)} are whole and kept; free some space (or make the disk "
        "writable) and run the same command again: it processes exactly these files, none twice", summary)


def warn_about_file(out: str, results: ResultsFile) -> None:
    report = results.report
    name = terminal_text(out)
    if report.torn_bytes:
        print(f"[batch] dropped an unfinished last write ({report.torn_bytes} bytes"
              + (f", {report.torn_rows} rows of an incomplete file" if report.torn_rows else "")
              + f") from {name}; that file will be redone", file=sys.stderr)
    if report.bad_lines:
        shown = ", ".join(map(str, report.bad_line_numbers))
        more = " ..." if report.bad_lines > len(report.bad_line_numbers) else ""
        print(f"[batch] WARNING: {report.bad_lines} lines of {name} are not JSON rows (line {shown}{more}); "
              "they are kept in the file and ignored, and a file whose row they held is redone. "
              "Fix or delete them by hand to silence this warning", file=sys.stderr)
    if report.partial_groups:
        print(f"[batch] {report.partial_groups} files in {name} have only some of their rows (parts); "
              "they will be redone", file=sys.stderr)


def run_batch(inputs: list[str], out: str, *, workers: int | None = 1, csv_path: str | None = None,
              options: WorkerOptions | None = None, progress: bool = True, retry_failed: bool = False,
              ray: "RaySettings | None" = None, xlsx_path: str | None = None, register_path: str | None = None,
              rename: str | None = None, rename_to: str | None = None, csv_labels: bool = False) -> Summary:
    """The whole command as a function (tests and scripts call this directly). With `ray`, documents
    go to Ray actors (app/batch/ray_pool.py; `workers` None = one per CPU of the cluster), and everything
    else is as without it. `xlsx_path`, `register_path`, `rename` + `rename_to` and `csv_labels`: the office
    outputs (see `office_outputs`).

    Raises BatchSetupError (an output that cannot be written, Ray not reachable), ResultsLocked
    (another batch writes `out`) or NotResultsFile (`out` is some other file) before any document is
    read, and BatchWriteError when rows or the CSV cannot be written during the run."""
    options = options or WorkerOptions()
    if csv_path:
        check_writable(csv_path, "--csv")
    if options.draw_dir:
        check_writable(options.draw_dir, "--draw", directory=True)
    if xlsx_path:
        check_writable(xlsx_path, "--xlsx")
    if rename is not None or rename_to:
        if not (rename is not None and rename_to):
            raise BatchSetupError("--rename and --to go together: --rename TEMPLATE names the copies, --to DIR "
                                  "is the folder they go to")
        try:
            check_template(rename)
        except TemplateError as exc:
            raise BatchSetupError(str(exc)) from None
        check_writable(rename_to, "--to", directory=True)
    if register_path:
        open_register(register_path).close()    # a register that cannot be opened fails before any work
    found = expand_inputs(inputs)
    summary = Summary(total=len(found.files), ignored=len(found.ignored), missing=found.missing)
    started = time.perf_counter()
    existed = os.path.exists(out)
    with open_results(out) as results:     # held (and locked) until the CSV is written too
        warn_about_file(out, results)
        try:
            ray_pool = connect_ray(options, workers, ray) if ray is not None else None
        except BatchSetupError:
            if not existed and os.path.getsize(out) == 0:
                os.unlink(out)                 # nothing was done: leave no empty results file behind
            raise
        try:
            tasks = plan_tasks(found.files, results, summary, retry_failed)
            with _progress(len(tasks), progress) as bar:   # ResultsWriteError leaves through the pools
                if ray_pool is not None:
                    ray_pool.sink = lambda task, rows: _record(task, rows, results, summary, bar, started)
                    ray_pool.run(tasks)
                    summary.pool = ray_pool.describe()
                    summary.overhead_per_document = ray_pool.overhead_s / max(ray_pool.documents, 1)
                elif (workers or 1) <= 1 or len(tasks) <= 1:
                    run_in_process(tasks, options, results, summary, bar, started)
                else:
                    run_in_pool(tasks, options, min(workers or 1, len(tasks)), results, summary, bar, started)
        except ResultsWriteError as exc:
            summary.wall = time.perf_counter() - started
            raise write_failed(exc, out, summary, found.files) from None
        finally:
            if ray_pool is not None:
                ray_pool.close()
        summary.wall = time.perf_counter() - started
        summary.check(found.files)
        office_outputs(out, summary, doc_type=options.doc_type, csv_path=csv_path, csv_labels=csv_labels,
                       xlsx_path=xlsx_path, register_path=register_path, rename=rename, rename_to=rename_to)
    return summary


def open_register(path: str) -> "InvoiceRegister":
    from app.register import InvoiceRegister, RegisterError
    try:
        return InvoiceRegister(path)
    except RegisterError as exc:
        raise BatchSetupError(f"--register: {exc}") from None


def office_outputs(out: str, summary: Summary, *, doc_type: str | None = None, csv_path: str | None = None,
                   csv_labels: bool = False, xlsx_path: str | None = None, register_path: str | None = None,
                   rename: str | None = None, rename_to: str | None = None) -> None:
    """The end of a run: the latest rows of every file in `out`, marked with their duplicates (within them,
    and against the --register of earlier runs, which records them), then the CSV, the xlsx register and the
    renamed copies. Raises BatchWriteError when a table cannot be written (the results stay complete)."""
    from app.batch.state import latest_rows
    from app.register import RegisterError, mark_duplicates, occurrence
    if not (csv_path or xlsx_path or register_path or rename_to):
        return
    rows = latest_rows(out)
    try:
        if register_path:
            with open_register(register_path) as register:
                mark_duplicates(rows, register)
        else:
            mark_duplicates(rows)
    except (RegisterError, BatchSetupError) as exc:
        raise BatchWriteError(f"{exc}", summary) from None
    summary.duplicates = [f"{occurrence(row).label()} = {row['duplicate_of']}" for row in rows
                          if row.get("duplicate_of")]
    summary.near_duplicates = sum(1 for row in rows if row.get("near_duplicate_of"))
    if rename is not None and rename_to:
        summary.renamed, problems = file_by_fields(rows, rename, rename_to)
        summary.notes += [f"--to: {terminal_text(p)}" for p in problems]
    for flag, path, write in (("--csv", csv_path, lambda p: write_csv(out, p, doc_type, csv_labels, rows)),
                              ("--csv", tables_csv_path(csv_path) if csv_path else None,
                               lambda p: write_tables_csv(csv_path or "", rows, csv_labels)),
                              ("--xlsx", xlsx_path, lambda p: _write_xlsx(p, rows))):
        if not path:
            continue
        try:
            write(path)
        except OSError as exc:     # the old table, if any, is left as it was (atomic write)
            raise BatchWriteError(
                f"{flag} {terminal_text(path)}: cannot be written ({exc.strerror or exc}); the results in "
                f"{terminal_text(out)} are complete. Free some space and run the same command again: it "
                "skips the files already done and writes the table", summary) from None


def _write_xlsx(path: str, rows: list[dict[str, Any]]) -> int:
    from app.batch.xlsx_out import write_xlsx
    return write_xlsx(path, rows)


def main(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        print("--workers must be 1 or more", file=sys.stderr)
        return 2
    if args.shared_input and args.ray is None:
        print("--shared-input goes with --ray (without it the files are read on this machine anyway)",
              file=sys.stderr)
        return 2
    if args.model_dir and not os.path.isdir(args.model_dir):
        print(f"--model {terminal_text(args.model_dir)}: no such directory; pass a model directory made by "
              "`python -m training export`, or leave --model out for the bundled default", file=sys.stderr)
        return 2
    from app.model_types import UnknownTypeError, check_doc_type
    try:
        check_doc_type(args.doc_type, args.model_dir)    # the model's types, not every schema in the repo
    except UnknownTypeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    options = WorkerOptions(model_dir=args.model_dir, doc_type=args.doc_type, draw_dir=args.draw)
    ray = None
    if args.ray is not None:
        from app.batch.ray_pool import RaySettings
        ray = RaySettings(address=args.ray, shared_input=args.shared_input)
    try:
        summary = run_batch(args.inputs, args.out, workers=args.workers if ray else (args.workers or 1),
                            csv_path=args.csv, options=options, progress=not args.no_progress,
                            retry_failed=args.retry_failed, ray=ray, xlsx_path=args.xlsx,
                            register_path=args.register, rename=args.rename, rename_to=args.rename_to,
                            csv_labels=args.csv_labels)
    except (BatchSetupError, ResultsLocked, NotResultsFile) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BatchWriteError as exc:
        print(exc.summary.report(), file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except WorkersFailedToStart as exc:
        print(f"error: {exc}; results so far are kept, rerun to continue", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\n[batch] interrupted; rerun the same command to continue where it stopped", file=sys.stderr)
        return 130
    print(summary.report(), file=sys.stderr)
    if args.csv:
        print(f"[batch] table written to {terminal_text(args.csv)}", file=sys.stderr)
        if os.path.exists(tables_csv_path(args.csv)):     # made (or refreshed) when some document has tables
            print(f"[batch] form tables written to {terminal_text(tables_csv_path(args.csv))}", file=sys.stderr)
    if args.xlsx:
        print(f"[batch] invoice register workbook written to {terminal_text(args.xlsx)}", file=sys.stderr)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
