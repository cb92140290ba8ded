"""Files written so that a reader (or a rerun after a crash) sees the old file or the new one, never a
part: write to a temporary name in the same folder, fsync it, rename it over the target, fsync the
folder. The one implementation for results, corpora, reports, CSV, JSON, overlays and registry
pointers; checkpoints use `fsync_path` for their own directory-level protocol.

The file gets the permissions a plain `open(path, "w")` gives a new file, 0666 less the umask: `tempfile.mkstemp`
creates 0600, which, renamed into place, left every output, registry pointer and report unreadable to a
service account or the group whatever the umask said. (The mode is set on every write, so a file left
0600 by older versions is repaired when next written.)"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file, or a directory's entries (where the platform lets a directory be opened; where
    it does not, e.g. Windows, the rename is all there is)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process umask, read without changing it where Linux says it (/proc/self/status, so no other
    thread ever sees a zero umask); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The permission bits `open(path, "w")` gives a new file: 0666 less the umask."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", **open_kw: Any) -> Iterator[IO[Any]]:
    """`with atomic_write(path) as fh: ...` writes `path` atomically: the block writes a temporary file
    beside it, which replaces `path` only when the block ends without an exception (then nothing of it
    is left). `mode` is "w" (text, UTF-8 unless `encoding=` says otherwise) or "wb". Paths may hold any
    bytes (a GBK file name)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', not {mode!r}")
    if mode == "w":
        open_kw.setdefault("encoding", "utf-8")
    folder = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", suffix=".tmp", dir=folder)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, mode, **open_kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_path(folder)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """`text` as UTF-8, atomically."""
    with atomic_write(path, "w") as fh:
        fh.write(text)
