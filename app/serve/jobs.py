"""The job store of `piaoju serve`: accepted means kept.

A job is accepted only after its uploaded bytes are on disk (written to a temporary name, fsynced,
renamed to `uploads/<job id>`) and its row is committed to an embedded SQLite database in WAL mode
with `synchronous=FULL`; only then does the client get its 200 or 202. So a `kill -9` of the server
at any moment leaves every accepted job in the database with its bytes, and `recover` at the next
start puts each back in the queue: a job that was queued stays queued, one that was running is run
again unless it was already on its last attempt, in which case it ends with a clear error
(`ServerStopped`). A job never vanishes; it only leaves the store when its result has been kept for
`keep_hours` (`expire`) or its owner deletes it.

File names on disk are job ids made here (uuid4 hex, checked by `JOB_ID`), never anything a client
sent: the client's file name is stored as text to name the document in its result, nothing more.
The uploaded bytes are removed as soon as the job ends (the result is what is kept).

One connection shared by the server's threads under a lock: every statement is short, and SQLite
serialises writers anyway.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JOB_ID = re.compile(r"^[0-9a-f]{32}$")
STATES = ("queued", "running", "done", "failed", "cancelled")
FINISHED = ("done", "failed", "cancelled")
MAX_ATTEMPTS = 2       # a document that stops its worker (or the server) twice ends with an error

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    client TEXT NOT NULL,          -- a digest of the API key that sent it (never the key)
    filename TEXT NOT NULL,        -- the client's name for the file: display only, never a path
    size INTEGER NOT NULL,
    model TEXT NOT NULL,           -- the model name asked for
    model_dir TEXT,                -- where that name pointed when the job was accepted (None: bundled default)
    doc_type TEXT,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    pages_done INTEGER NOT NULL DEFAULT 0,
    pages_total INTEGER,
    result TEXT,                   -- JSON: the list of Documents, as `extract --json` writes each
    error TEXT,                    -- JSON: {"type", "message"} when the job failed
    created REAL NOT NULL,
    started REAL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, created);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished);
"""


class JobNotFound(KeyError):
    pass


@dataclass
class Job:
    id: str
    client: str
    filename: str
    size: int
    model: str
    model_dir: str | None
    doc_type: str | None
    state: str
    attempts: int
    pages_done: int
    pages_total: int | None
    result: list[dict[str, Any]] | None
    error: dict[str, Any] | None
    created: float
    started: float | None
    finished: float | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Job":
        d = dict(row)
        d["result"] = json.loads(d["result"]) if d["result"] else None
        d["error"] = json.loads(d["error"]) if d["error"] else None
        return cls(**d)


def new_job_id() -> str:
    return uuid.uuid4().hex


def check_job_id(job_id: str) -> str:
    """`job_id` when it has the shape of an id made here, else JobNotFound: nothing else reaches a path."""
    if not isinstance(job_id, str) or not JOB_ID.match(job_id):
        raise JobNotFound(job_id)
    return job_id


class JobStore:
    """Jobs in `<folder>/jobs.sqlite3`, their uploads in `<folder>/uploads/<id>`."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.uploads = self.folder / "uploads"
        self.uploads.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.folder / "jobs.sqlite3", check_same_thread=False, isolation_level=None,
                                   timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")     # a committed job survives a power cut, not only a kill
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- uploads ---------------------------------------------------------------------------------------

    def upload_path(self, job_id: str) -> Path:
        return self.uploads / check_job_id(job_id)

    def _write_upload(self, job_id: str, data: bytes) -> Path:
        final = self.upload_path(job_id)
        part = final.with_name(final.name + ".part")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(part, final)
        dir_fd = os.open(self.uploads, os.O_RDONLY)
        try:
            os.fsync(dir_fd)              # the rename itself survives a power cut
        finally:
            os.close(dir_fd)
        return final

    def _remove_upload(self, job_id: str) -> None:
        try:
            self.upload_path(job_id).unlink()
        except FileNotFoundError:
            pass

    # --- jobs ------------------------------------------------------------------------------------------

    def add(self, data: bytes, *, client: str, filename: str, model: str, model_dir: str | None,
            doc_type: str | None, job_id: str | None = None) -> Job:
        """Keep the upload and record the job as queued; when this returns, the job is accepted."""
        job_id = check_job_id(job_id or new_job_id())
        self._write_upload(job_id, data)
        now = time.time()
        try:
            with self._lock:
                self._db.execute(
                    "INSERT INTO jobs (id, client, filename, size, model, model_dir, doc_type, state, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
                    (job_id, client, filename, len(data), model, model_dir, doc_type, now))
        except BaseException:
            self._remove_upload(job_id)
            raise
        return self.get(job_id)

    def get(self, job_id: str) -> Job:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (check_job_id(job_id),)).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return Job.from_row(row)

    def claim(self, job_id: str) -> Job | None:
        """Mark a queued job running (one more attempt); None when it is no longer queued (cancelled)."""
        with self._lock:
            cur = self._db.execute("UPDATE jobs SET state = 'running', attempts = attempts + 1, started = ? "
                                   "WHERE id = ? AND state = 'queued'", (time.time(), job_id))
            if cur.rowcount != 1:
                return None
            return self.get(job_id)

    def progress(self, job_id: str, done: int, total: int) -> None:
        with self._lock:
            self._db.execute("UPDATE jobs SET pages_done = ?, pages_total = ? WHERE id = ? AND state = 'running'",
                             (done, total, job_id))

    def requeue(self, job_id: str, *, count_attempt: bool = True) -> bool:
        """A running job goes back to the queue (its worker died; or the server stops cleanly, which costs
        no attempt). False when it was cancelled meanwhile."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state = 'queued', attempts = attempts - ?, pages_done = 0 "
                "WHERE id = ? AND state = 'running'", (0 if count_attempt else 1, job_id))
            return cur.rowcount == 1

    def finish(self, job_id: str, state: str, result: list[dict[str, Any]] | None = None,
               error: dict[str, Any] | None = None) -> bool:
        """End a running or queued job; False when it had already ended (cancelled while it ran)."""
        assert state in FINISHED
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state = ?, result = ?, error = ?, finished = ? "
                "WHERE id = ? AND state IN ('queued', 'running')",
                (state, None if result is None else json.dumps(result, ensure_ascii=False),
                 None if error is None else json.dumps(error, ensure_ascii=False), time.time(), job_id))
            ended = cur.rowcount == 1
        if ended or state == "cancelled":
            self._remove_upload(job_id)
        return ended

    def cancel(self, job_id: str) -> str:
        """Cancel a queued or running job; returns the state it had (a finished job is left as it was)."""
        with self._lock:
            before = self.get(job_id).state
            if before in ("queued", "running"):
                self.finish(job_id, "cancelled",
                            error={"type": "Cancelled", "message": "the job was cancelled by its client"})
            return before

    def delete(self, job_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM jobs WHERE id = ?", (check_job_id(job_id),))
        self._remove_upload(job_id)

    def recover(self) -> list[Job]:
        """At start: what a stopped server left. A running job runs again, unless that was its last attempt
        (then ServerStopped); a job whose upload is gone fails (UploadLost); every other upload (half
        written, or kept by a kill between the two writes, before the client was answered) is removed.
        Returns the queued jobs, oldest first."""
        with self._lock:
            for row in self._db.execute("SELECT id, attempts FROM jobs WHERE state = 'running'").fetchall():
                if row["attempts"] >= MAX_ATTEMPTS:
                    self.finish(row["id"], "failed", error={
                        "type": "ServerStopped",
                        "message": f"the server stopped {row['attempts']} times while this document was being "
                                   "read, so it is not tried again; check the server's memory and logs, then "
                                   "send the file again"})
                else:
                    self._db.execute("UPDATE jobs SET state = 'queued', pages_done = 0 WHERE id = ?", (row["id"],))
            queued = [Job.from_row(r) for r in
                      self._db.execute("SELECT * FROM jobs WHERE state = 'queued' ORDER BY created").fetchall()]
        alive = []
        for job in queued:
            if self.upload_path(job.id).is_file():
                alive.append(job)
            else:
                self.finish(job.id, "failed", error={
                    "type": "UploadLost",
                    "message": "the uploaded file of this job is no longer in the server's jobs folder; send it again"})
        keep = {job.id for job in alive}
        for path in self.uploads.iterdir():     # half-written, orphaned, or of a job that ended
            if path.name not in keep:
                path.unlink(missing_ok=True)
        return alive

    def expire(self, keep_seconds: float, now: float | None = None) -> int:
        """Remove finished jobs whose result is older than `keep_seconds`; returns how many."""
        cutoff = (time.time() if now is None else now) - keep_seconds
        with self._lock:
            ids = [r["id"] for r in self._db.execute(
                "SELECT id FROM jobs WHERE finished IS NOT NULL AND finished < ?", (cutoff,)).fetchall()]
            for job_id in ids:
                self.delete(job_id)
        return len(ids)

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state").fetchall()
        found = {r["state"]: r["n"] for r in rows}
        return {state: found.get(state, 0) for state in STATES}

    def check(self) -> None:
        """Raise when the database cannot be read (for /readyz)."""
        with self._lock:
            self._db.execute("SELECT 1 FROM jobs LIMIT 1").fetchall()
