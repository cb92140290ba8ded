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

File names that are not valid UTF-8 (GBK names unpacked from Windows zip files arrive in Python as
`str` with lone surrogates, PEP 383) cannot go into UTF-8 JSON as they are. Such a row keeps the
exact name bytes in `file_bytes_hex` (hex of `os.fsencode(path)`, the key uses them) and shows
`file` with each undecodable byte written as `\\xNN`; any other text in the row with such bytes
(source, messages) is escaped the same way. Every line stays valid UTF-8 JSON and the real path is
`os.fsdecode(bytes.fromhex(row["file_bytes_hex"]))`.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from data.document import display_name, json_safe

try:
    import fcntl
except ImportError:  # not POSIX: no lock (the batch command is documented for Linux)
    fcntl = None  # type: ignore[assignment]

HASH_CHUNK = 1 << 20
MAX_REPORTED_LINES = 10

Key = tuple[str, str]


class ResultsLocked(RuntimeError):
    """Another process (a second batch on the same --out) holds the results file."""


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks so large PDFs do not fill memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
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


@dataclass
class LoadReport:
    rows: int = 0            # rows in complete groups
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
            if row is None:
                report.bad_lines += 1
                if len(report.bad_line_numbers) < MAX_REPORTED_LINES:
                    report.bad_line_numbers.append(number)
                groups.bad_line()
            else:
                groups.add(row, good_end)
            good_end += len(raw)
    return groups, good_end


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
            f"{escape_text(path)} is in use by another batch (it holds the file's lock); wait for it to finish "
            "or pass a different --out. Two batches on one results file would do every document twice") from None
    except OSError as exc:  # a filesystem without locks (some network mounts): go on, but say so
        print(f"[batch] warning: cannot lock {escape_text(path)} ({exc.strerror or exc}); make sure no other "
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
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            _lock(fd, path)             # before reading, so a running batch's tail is never cut
            report = LoadReport()
            groups, good_end = _assemble(path, report)
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
        view = memoryview(data)
        while view:  # os.write may write less than asked on some filesystems; finish the group
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
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
