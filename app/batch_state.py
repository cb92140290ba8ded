"""The batch results file: one JSON line per document, appended so that a kill never corrupts it.

Why this is safe to resume:
- Only the parent process writes. Each row is one `os.write` of a complete line to a file opened
  with O_APPEND, followed by fsync, so after a crash the file holds whole rows plus at most one torn
  tail (a kill during the write itself). `ResultsFile.open` cuts that tail off before appending.
- A row is keyed by (absolute path, SHA-256 of the bytes). A rerun skips exactly the keys already
  present, so nothing is done twice and nothing is lost; a file whose content changed is redone.
- Failures are rows too (with `error`), so a bad file is recorded once and not retried forever.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

HASH_CHUNK = 1 << 20


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks so large PDFs do not fill memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def row_key(row: dict[str, Any]) -> tuple[str, str]:
    return row.get("file", ""), row.get("sha256", "")


@dataclass
class LoadReport:
    rows: int = 0            # complete, parseable rows
    torn_bytes: int = 0      # bytes of an unfinished last line that were cut off
    bad_lines: int = 0       # complete lines that were not JSON (hand edits); kept in the file, ignored
    duplicates: int = 0      # repeated keys (e.g. two results files concatenated); the last one wins


def read_rows(path: str) -> Iterator[dict[str, Any]]:
    """The complete rows of a results file, in file order (a torn last line is not yielded)."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                return
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield row


def latest_rows(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """One row per key (the last written), in order of first appearance."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_rows(path):
        rows[row_key(row)] = row
    return rows


class ResultsFile:
    """Append-only JSONL of results. Use `ResultsFile.open(path)`; call `close()` when done."""

    def __init__(self, path: str, fd: int, done: dict[tuple[str, str], dict[str, Any]],
                 report: LoadReport) -> None:
        self.path = path
        self._fd = fd
        self.done = done
        self.report = report

    @classmethod
    def open(cls, path: str) -> "ResultsFile":
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        report = LoadReport()
        done: dict[tuple[str, str], dict[str, Any]] = {}
        if os.path.exists(path):
            good_end = 0
            with open(path, "rb") as fh:
                for raw in fh:
                    if not raw.endswith(b"\n"):
                        break
                    good_end += len(raw)
                    try:
                        row = json.loads(raw)
                    except ValueError:
                        report.bad_lines += 1
                        continue
                    if not isinstance(row, dict):
                        report.bad_lines += 1
                        continue
                    key = row_key(row)
                    if key in done:
                        report.duplicates += 1
                    done[key] = row
                    report.rows += 1
            size = os.path.getsize(path)
            if size > good_end:
                # A kill mid-write left half a row: drop it, the document will be redone.
                report.torn_bytes = size - good_end
                with open(path, "r+b") as fh:
                    fh.truncate(good_end)
                    fh.flush()
                    os.fsync(fh.fileno())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return cls(path, fd, done, report)

    def is_done(self, key: tuple[str, str]) -> bool:
        return key in self.done

    def append(self, row: dict[str, Any]) -> None:
        """Write one full row durably (single write + fsync) and remember its key."""
        data = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:  # os.write may write less than asked on some filesystems; finish the line
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)
        self.done[row_key(row)] = row

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
