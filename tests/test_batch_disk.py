"""Batch outputs on a disk that fills up or is not ours, and inputs that are not regular files.

A full disk is simulated in-process (no mount rights needed): the results file's `os` is swapped for
`FullDisk`, which lets each write reach the real file only up to a capacity, then answers ENOSPC, as
a small tmpfs does (a short write, then the error). `FailingFsync` fails the fsync of an atomic write
(data/atomic.py) the way NFS or a failing disk report a full disk late. Worker processes never write
results, so the simulation in the parent covers --workers 2 too.
"""
from __future__ import annotations

import errno
import functools
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image

import app.batch.command as command
import app.batch.state as state
import data.atomic
from app.batch.command import BatchWriteError, build_parser, main, run_batch
from app.batch.state import NotResultsFile, ResultsFile, latest_groups, read_rows
from tests.test_batch import FAKE, make_folder
from tests.threads import in_thread


class FullDisk(SimpleNamespace):
    """`os` with a disk of `capacity` bytes under every file written with os.write."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def write(self, fd: int, data: Any) -> int:
        room = self.capacity - os.fstat(fd).st_size
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, bytes(data[:room]))

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


class FailingFsync(SimpleNamespace):
    """`os` whose fsync of a file (not of a folder) reports ENOSPC."""

    def fsync(self, fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def documents(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.suffix in (".png", ".jpg"))


def check_whole(out: Path) -> list[dict]:
    """Every line of `out` is a whole JSON row (no torn tail) and no file has two groups."""
    data = out.read_bytes()
    assert data.endswith(b"\n"), "the results file ends with a whole line"
    rows = [json.loads(line) for line in data.splitlines()]
    files = [r["file"] for r in rows]
    assert len(files) == len(set(files)), "no file has rows twice"
    return rows


@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_stops_the_batch_names_the_files_without_rows_and_a_rerun_completes(
        tmp_path, monkeypatch, workers):
    folder = make_folder(tmp_path, n_good=6)
    out = tmp_path / "results.jsonl"
    expected = documents(folder)
    with monkeypatch.context() as patch:
        patch.setattr(state, "os", FullDisk(capacity=700))     # room for about two rows
        with pytest.raises(BatchWriteError) as info:
            run_batch([str(folder)], str(out), workers=workers, options=FAKE, progress=False)
    written = {r["file"] for r in check_whole(out)}
    assert 0 < len(written) < len(expected)
    summary = info.value.summary
    assert sorted(summary.lost) == sorted(set(expected) - written), "exactly the files without rows are lost"
    message = str(info.value)
    assert "No space left on device" in message and f"{len(summary.lost)} of {len(expected)} files" in message
    assert all(path in message for path in summary.lost), "every file without rows is named"
    assert not summary.ok

    again = run_batch([str(folder)], str(out), workers=workers, options=FAKE, progress=False)
    assert again.lost == [] and again.done + again.failed + again.skipped == again.total
    assert (again.skipped, again.done + again.failed) == (len(written), len(expected) - len(written))
    assert sorted(r["file"] for r in check_whole(out)) == expected, "every file once, none twice"


def test_a_write_cut_short_is_undone_so_the_file_keeps_whole_rows(tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    with ResultsFile.open(str(out)) as results:
        results.append({"file": "/a", "sha256": "1"})
        before = out.read_bytes()
        monkeypatch.setattr(state, "os", FullDisk(capacity=len(before) + 10))    # 10 bytes of the next row fit
        with pytest.raises(state.ResultsWriteError):
            results.append({"file": "/b", "sha256": "2", "fields": {"x": "y" * 100}})
        assert not results.is_done(("/b", "2"))
    assert out.read_bytes() == before, "the 10 bytes that reached the disk were cut off again"


def test_the_cli_exits_1_with_one_sentence_on_a_full_disk(tmp_path, monkeypatch, capsys):
    folder = make_folder(tmp_path, n_good=3)
    out = tmp_path / "results.jsonl"
    monkeypatch.setattr(command, "WorkerOptions", functools.partial(type(FAKE), processor=FAKE.processor,
                                                                    warm_up=False))
    monkeypatch.setattr(state, "os", FullDisk(capacity=300))
    args = build_parser().parse_args([str(folder), "--out", str(out), "--no-progress"])
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ERROR:" in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "run the same command again" in errors[0]


def test_a_csv_that_cannot_be_written_is_one_sentence_and_the_old_table_stays(tmp_path, monkeypatch, capsys):
    folder = make_folder(tmp_path, n_good=2)
    out, table = tmp_path / "results.jsonl", tmp_path / "t.csv"
    table.write_text("an older table\n", encoding="utf-8")
    monkeypatch.setattr(command, "WorkerOptions", functools.partial(type(FAKE), processor=FAKE.processor,
                                                                    warm_up=False))
    monkeypatch.setattr(data.atomic, "os", FailingFsync())
    args = build_parser().parse_args([str(folder), "--out", str(out), "--csv", str(table), "--no-progress"])
    assert main(args) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in err and len(errors) == 1
    assert "--csv" in errors[0] and "No space left on device" in errors[0] and "results in" in errors[0]
    assert table.read_text(encoding="utf-8") == "an older table\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [], "no temporary file left"
    assert len(latest_groups(str(out))) == 3, "the results themselves are complete"


@pytest.mark.parametrize("content", [
    b'{"name": "my notes", "owner": "me", "n": 12345}',          # the 47-byte JSON of the report
    b'{"source": "a.png", "pages": []}\n{"source": "b.png", "pages": []}\n',   # extract --json Lines
    b"plain text\nof some notes\n",
    b'{"file": "/a", "sha256": "1"}\n[1, 2, 3]\n',                 # a row, then JSON of another shape
])
def test_out_refuses_a_file_that_is_not_a_results_file_and_leaves_it_byte_for_byte(tmp_path, capsys, content):
    folder = make_folder(tmp_path, n_good=1)
    user_file = tmp_path / "notes.json"
    user_file.write_bytes(content)
    stamp = os.stat(user_file).st_mtime_ns
    with pytest.raises(NotResultsFile, match="not a results file"):
        run_batch([str(folder)], str(user_file), options=FAKE, progress=False)
    args = build_parser().parse_args([str(folder), "--out", str(user_file), "--no-progress"])
    assert main(args) == 2
    assert "not a results file" in capsys.readouterr().err
    assert user_file.read_bytes() == content and os.stat(user_file).st_mtime_ns == stamp


@pytest.mark.parametrize("content", [b"", b'{"file":"/x","sha', b'{"file": "/a", "sha256": "1"}\nnot json\n'])
def test_out_accepts_an_empty_file_a_cut_first_write_and_a_results_file_with_a_bad_line(tmp_path, content):
    folder = make_folder(tmp_path, n_good=1)
    out = tmp_path / "results.jsonl"
    out.write_bytes(content)
    summary = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert summary.done == 1 and summary.failed == 1
    assert len([r for r in read_rows(str(out)) if r["file"] != "/a"]) == 2


def test_out_refuses_a_fifo_without_waiting_on_it(tmp_path):
    folder = make_folder(tmp_path, n_good=1)
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotResultsFile, match="FIFO"):
        run_in_thread(lambda: run_batch([str(folder)], str(fifo), options=FAKE, progress=False))


def run_in_thread(call: Any) -> Any:
    """`call()` in a thread, so a read that blocks forever fails the test instead of hanging the suite."""
    return in_thread(call, 120, "blocked: a FIFO or device was opened for reading")


@pytest.mark.parametrize("workers", [1, 2])
def test_fifos_devices_and_sockets_in_a_folder_get_a_row_saying_why_and_are_never_read(tmp_path, workers):
    import socket
    folder = tmp_path / "in"
    folder.mkdir()
    Image.new("RGB", (40, 30), "white").save(folder / "good.png")
    os.mkfifo(folder / "pipe.png")
    (folder / "zero.pdf").symlink_to("/dev/zero")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(folder / "sock.jpg"))
        out = tmp_path / "results.jsonl"
        summary = run_in_thread(lambda: run_batch([str(folder)], str(out), workers=workers, options=FAKE,
                                                  progress=False))
    rows = {Path(r["file"]).name: r for r in read_rows(str(out))}
    assert sorted(rows) == ["good.png", "pipe.png", "sock.jpg", "zero.pdf"]
    assert rows["good.png"].get("error") is None
    kinds = {"pipe.png": "FIFO", "sock.jpg": "socket", "zero.pdf": "character device"}
    for name, kind in kinds.items():
        error = rows[name]["error"]
        assert error["type"] == "NotRegularFile" and kind in error["message"], error
    assert "/dev/zero" in rows["zero.pdf"]["error"]["message"]
    assert (summary.done, summary.failed, summary.lost) == (1, 3, [])


def test_a_file_name_with_escape_sequences_is_printed_escaped_and_kept_in_the_json(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    name = "a\x1b[2Jb\rc.png"
    Image.new("RGB", (40, 30), "white").save(folder / name)
    out = tmp_path / "results.jsonl"
    monkeypatch.setattr(command, "WorkerOptions", functools.partial(type(FAKE), processor=FAKE.processor,
                                                                    warm_up=False))
    args = build_parser().parse_args([str(folder / name), str(tmp_path / "x\x1b]0;owned\x07*.png"), "--out",
                                      str(out), "--no-progress"])
    assert main(args) == 1                      # the pattern matches nothing
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\r" not in err
    assert "x\\x1b]0;owned\\x07*.png" in err
    assert [r["file"] for r in read_rows(str(out))] == [str(folder / name)], "the JSON keeps the real name"
