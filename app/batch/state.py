"""The batch results file: JSON lines, appended so that a kill never corrupts it.

Why this is safe to resume:
- Only the parent process writes, and only one batch at a time: `ResultsFile.open` takes an exclusive,
  non-blocking `flock` on the results file itself and refuses (`ResultsLocked`) when another batch
  holds it, so two runs on one --out cannot both do and write every document.
- A file gives one row per document found in it (a PDF of two invoices gives two rows, numbered by
  `part` 1..`parts`). All rows of one file are one `os.write` of complete lines to a file opened with
  O_APPEND, followed by fsync, so after a crash the file holds whole groups plus at most one torn
  tail (a kill during the write itself). `ResultsFile.open` cuts that tail off, together with the
  whole rows of the same unfinished write, before appending.
- Rows are keyed by (path, SHA-256 of the bytes). A key counts as done only when its parts 1..N are
  all present (rows from before `part`/`parts` existed count as part 1 of 1); an incomplete group is
  ignored and the file redone. A rerun skips exactly the done keys, so nothing is done twice and
  nothing is lost; a file whose content changed is redone. When a key has several complete groups
  (a --retry-failed rerun, concatenated results files), the last one wins.
- Failures are rows too (with `error`), so a bad file is recorded once and not retried on every run
  (`python -m app batch --retry-failed` retries them).
- A complete line that is not a JSON object (a hand edit, a disk error) is kept where it is, never
  deleted; its line numbers are reported on every open (`LoadReport.bad_line_numbers`) so it can be
  fixed by hand, and the documents it may have held are redone.
- Only a results file is ever appended to or cut: `ResultsFile.open` refuses (`NotResultsFile`, the file
  untouched) a non-empty file in which no complete line is a row (a JSON object with "file" and "sha256",
  as every row we write has) or some complete line is JSON of another shape, unless all it holds is the
  start of a row (a first write cut short). So `--out notes.json` by mistake loses nothing.
- A write that fails (a full disk, a read-only remount, an I/O error) is undone (the file is cut back to
  where the write started) and raised as `ResultsWriteError`: the batch stops and names the files that
  have no rows, never reports them done; a rerun does exactly those.

File names that are not valid UTF-8 (GBK names unpacked from Windows zip files arrive in Python as
`str` with lone surrogates, PEP 383) cannot go into UTF-8 JSON as they are. Such a row keeps the
exact name bytes in `file_bytes_hex` (hex of `os.fsencode(path)`, the key uses them) and shows
`file` with each undecodable byte written as `\\xNN`; any other text in the row with such bytes
(source, messages) is escaped the same way. Every line stays valid UTF-8 JSON and the real path is
`os.fsdecode(bytes.fromhex(row["file_bytes_hex"]))`.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from app.cli import terminal_text
from data.document import display_name, json_safe
from data.io import non_regular_kind, open_regular

try:
    import fcntl
except ImportError:  # not POSIX: no lock (the batch command is documented for Linux)
    fcntl = None  # type: ignore[assignment]

HASH_CHUNK = 1 << 20
MAX_REPORTED_LINES = 10

Key = tuple[str, str]


class ResultsLocked(RuntimeError):
    """Another process (a second batch on the same --out) holds the results file."""


class NotResultsFile(ValueError):
    """--out names an existing file that is not a results file (see the module docstring); it is left as it was."""


class ResultsWriteError(RuntimeError):
    """Rows could not be written (a full disk, a read-only or failing filesystem); the file was cut back
    to where that write started, so it holds whole groups only. `rows` are the rows that were lost."""

    def __init__(self, path: str, error: OSError, rows: list[dict[str, Any]]) -> None:
        self.path, self.error, self.rows = path, error, rows
        super().__init__(f"cannot write to {terminal_text(path)} ({error.strerror or error})")


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks so large PDFs do not fill memory. A FIFO, a device or a
    socket (or a link to one) raises data.io.InputError without being read: hashing /dev/zero never ends
    and a FIFO blocks, which hung the whole batch before any file was processed."""
    digest = hashlib.sha256()
    with open(open_regular(path), "rb") as fh:
        for chunk in iter(lambda: fh.read(HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


escape_text = display_name     # the name batch code uses: undecodable bytes written as \\xNN


def encode_row(row: dict[str, Any]) -> bytes:
    """One JSON line, valid UTF-8 whatever the file name (see the module docstring)."""
    path = row.get("file")
    if isinstance(path, str) and escape_text(path) != path:
        row = {**row, "file_bytes_hex": os.fsencode(path).hex()}
        row = json_safe(row)
    try:
        text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")
    except UnicodeEncodeError:  # an undecodable name somewhere else in the row (a message, a source)
        text = json.dumps(json_safe(row), ensure_ascii=False, separators=(",", ":"))
    return (text + "\n").encode("utf-8")


def row_path(row: dict[str, Any]) -> str:
    """The real path a row is about (undoing the escape of undecodable names)."""
    hexed = row.get("file_bytes_hex")
    if isinstance(hexed, str):
        try:
            return os.fsdecode(bytes.fromhex(hexed))
        except ValueError:
            pass
    path = row.get("file", "")
    return path if isinstance(path, str) else str(path)


def row_key(row: dict[str, Any]) -> Key:
    return row_path(row), str(row.get("sha256", ""))


def row_part(row: dict[str, Any]) -> tuple[int, int]:
    """(part, parts) of a row; rows written before multi-document files count as part 1 of 1."""
    try:
        part, parts = int(row.get("part", 1)), int(row.get("parts", 1))
    except (TypeError, ValueError):
        return 0, 0   # never completes a group
    return part, parts


def is_row(value: Any) -> bool:
    """Whether a parsed line has the shape of our rows (every row we write has "file" and "sha256")."""
    return isinstance(value, dict) and isinstance(value.get("file"), str) and "sha256" in value


ROW_START = b'{"file":'


def starts_like_row(tail: bytes) -> bool:
    """Whether an unfinished last line can be the start of one of our rows (they begin {"file":)."""
    compact = re.sub(rb"\s+", b"", tail[:256])
    return compact.startswith(ROW_START) or (bool(compact) and ROW_START.startswith(compact))


@dataclass
class LoadReport:
    rows: int = 0            # rows in complete groups
    row_lines: int = 0       # complete lines that are rows (whatever their group)
    foreign_line: int = 0    # 1-based number of the first complete line that is JSON but not a row (0: none)
    torn_bytes: int = 0      # bytes of an unfinished last write that were cut off
    torn_rows: int = 0       # whole rows of that unfinished write (an incomplete group) cut off with it
    bad_lines: int = 0       # complete lines that are not JSON objects; kept in the file, ignored
    bad_line_numbers: list[int] = field(default_factory=list)   # 1-based, the first MAX_REPORTED_LINES
    partial_groups: int = 0  # groups missing some of their parts (ignored: that file is redone)
    duplicates: int = 0      # complete groups for a key that already had one; the last one wins


class _Groups:
    """Assembles rows, in file order, into complete groups per key (parts 1..N, one after another)."""

    def __init__(self, report: LoadReport) -> None:
        self.report = report
        self.done: dict[Key, list[dict[str, Any]]] = {}
        self.pending: dict[Key, list[dict[str, Any]]] = {}
        self.pending_start: dict[Key, int] = {}    # byte offset of a pending group's first row; -1: not one run
        self.last_key: Key | None = None           # key of the last line read (None: a bad line)

    def add(self, row: dict[str, Any], offset: int) -> None:
        key = row_key(row)
        part, parts = row_part(row)
        group = self.pending.pop(key, None)
        start = self.pending_start.pop(key, -1)
        if part == 1:
            if group is not None:        # a new group starts while the old one lacks parts
                self.report.partial_groups += 1
            group, start = [], offset
        elif group is None or part != len(group) + 1 or parts != row_part(group[0])[1]:
            self.report.partial_groups += 1   # a stray part: its group is incomplete
            self.last_key = None
            return
        elif self.last_key != key:
            start = -1                   # rows of other files in between: not written by one write
        self.last_key = key
        group.append(row)
        if 1 <= parts == len(group):
            if key in self.done:
                self.report.duplicates += 1
            self.done[key] = group
            self.report.rows += len(group)
        else:
            self.pending[key] = group
            self.pending_start[key] = start

    def bad_line(self) -> None:
        self.last_key = None

    def unfinished_tail(self) -> tuple[Key, int] | None:
        """The incomplete group that ends the file, when its rows are one run of lines (the start of
        a group write that a kill interrupted): its key and where it starts."""
        key = self.last_key
        if key is not None and key in self.pending and self.pending_start[key] >= 0:
            return key, self.pending_start[key]
        return None

    def finish(self) -> None:
        self.report.partial_groups += len(self.pending)
        self.pending.clear()
        self.pending_start.clear()


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        row = json.loads(raw)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def _assemble(path: str, report: LoadReport) -> tuple[_Groups, int]:
    """Read `path` into groups; returns them and the byte offset where whole lines end."""
    groups = _Groups(report)
    good_end = 0
    if not os.path.exists(path):
        return groups, 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                break
            row = _parse(raw)
            if row is not None and not is_row(row):
                report.foreign_line = report.foreign_line or number
                row = None
            elif row is None and not report.foreign_line and _is_json(raw):
                report.foreign_line = number     # a JSON list, string or number: not ours either
            if row is None:
                report.bad_lines += 1
                if len(report.bad_line_numbers) < MAX_REPORTED_LINES:
                    report.bad_line_numbers.append(number)
                groups.bad_line()
            else:
                report.row_lines += 1
                groups.add(row, good_end)
            good_end += len(raw)
    return groups, good_end


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


def _check_regular(path: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else non_regular_kind(mode) or "not a regular file"
        raise NotResultsFile(f"--out {terminal_text(path)} is {kind}, not a results file; pass a file name for --out")


def _head(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(256)


def _check_ours(path: str, size: int, report: LoadReport, good_end: int) -> None:
    """Refuse (NotResultsFile) a non-empty file that is not a results file; see the module docstring."""
    if size == 0:
        return
    if report.foreign_line:
        why = f"line {report.foreign_line} is JSON without the \"file\" and \"sha256\" of a result row"
    elif report.row_lines == 0 and good_end > 0:
        why = "none of its lines is a result row"
    elif good_end == 0 and not starts_like_row(_head(path)):
        why = "it holds no result row"
    else:
        return
    raise NotResultsFile(
        f"--out {terminal_text(path)} exists and is not a results file of `batch` ({why}); it was left untouched. "
        "Pass a new file name for --out (or the results file of an earlier batch to continue it)")


def read_rows(path: str) -> Iterator[dict[str, Any]]:
    """Every whole, parseable row of a results file in file order (incomplete groups included)."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                return
            row = _parse(raw)
            if row is not None:
                yield row


def latest_groups(path: str) -> dict[Key, list[dict[str, Any]]]:
    """The rows of the last complete group per key, keys in order of first appearance."""
    groups, _ = _assemble(path, LoadReport())
    groups.finish()
    return groups.done


def latest_rows(path: str) -> list[dict[str, Any]]:
    """One row per document: the last complete group of every file, flattened, in file order."""
    return [row for group in latest_groups(path).values() for row in group]


def _lock(fd: int, path: str) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ResultsLocked(
            f"{terminal_text(path)} is in use by another batch (it holds the file's lock); wait for it to finish "
            "or pass a different --out. Two batches on one results file would do every document twice") from None
    except OSError as exc:  # a filesystem without locks (some network mounts): go on, but say so
        print(f"[batch] warning: cannot lock {terminal_text(path)} ({exc.strerror or exc}); make sure no other "
              "batch writes to it", file=sys.stderr)


class ResultsFile:
    """Append-only JSONL of results, locked while open. Use `ResultsFile.open(path)`; call `close()` when done.

    `done` maps each finished key to its rows (the last complete group)."""

    def __init__(self, path: str, fd: int, done: dict[Key, list[dict[str, Any]]], report: LoadReport) -> None:
        self.path = path
        self._fd = fd
        self.done = done
        self.report = report

    @classmethod
    def open(cls, path: str) -> "ResultsFile":
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        if os.path.exists(path):
            _check_regular(path, os.stat(path).st_mode)
        # O_NONBLOCK: a FIFO put there since is refused below, not waited on. 0o666 less the umask, as
        # any new file gets.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o666)
        try:
            _check_regular(path, os.fstat(fd).st_mode)
            os.set_blocking(fd, True)
            _lock(fd, path)             # before reading, so a running batch's tail is never cut
            report = LoadReport()
            groups, good_end = _assemble(path, report)
            _check_ours(path, os.fstat(fd).st_size, report, good_end)   # before any cut: a user's file stays
            size = os.fstat(fd).st_size
            cut = good_end
            tail = groups.unfinished_tail()
            if tail is not None:
                # the whole rows of an unfinished group write go with its torn end
                key, cut = tail
                report.torn_rows = len(groups.pending.pop(key))
                del groups.pending_start[key]
            if size > cut:
                # A kill mid-write left half a group: drop it, the file will be redone.
                report.torn_bytes = size - cut
                os.ftruncate(fd, cut)
                os.fsync(fd)
            groups.finish()
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, groups.done, report)

    def is_done(self, key: Key) -> bool:
        return key in self.done

    def failed(self, key: Key) -> bool:
        """Whether the recorded result of a done key is (or includes) an error row."""
        return any(row.get("error") for row in self.done.get(key, []))

    def append_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        """Write all rows of one file durably as ONE write + fsync, and remember them under their key."""
        rows = list(rows)
        if not rows:
            return
        data = b"".join(encode_row(row) for row in rows)
        start = os.fstat(self._fd).st_size      # only this process writes (the lock): where this write begins
        view = memoryview(data)
        try:
            while view:  # os.write may write less than asked (a nearly full disk); finish the group or fail
                written = os.write(self._fd, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
            os.fsync(self._fd)
        except OSError as exc:
            # Undo the part that reached the file, so it ends with whole groups; cutting needs no space.
            # Should that fail too, the next open cuts the unfinished group (see _Groups.unfinished_tail).
            try:
                os.ftruncate(self._fd, start)
                os.fsync(self._fd)
            except OSError:
                pass
            raise ResultsWriteError(self.path, exc, rows) from exc
        self.done[row_key(rows[0])] = rows

    def append(self, row: dict[str, Any]) -> None:
        """Write one single-row group (see append_rows)."""
        self.append_rows([row])

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)   # also releases the lock
            self._fd = -1

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
