"""Batch CLI: input expansion, the append-only results file, resume, CSV, worker processes.

Most tests swap the real pipeline for `fake_analyse` (a PIL decode that reads each image's size and a
"code" written in its file name) so the batch machinery is tested in well under a second per case;
the heavy tests at the end run real OCR end to end through the command line, including kill -9.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import app.batch.command
from app.batch.command import BatchSetupError, run_batch
from app.batch.csv_out import write_csv
from app.batch.inputs import expand_inputs
from app.batch.state import ResultsFile, ResultsLocked, file_sha256, latest_groups, read_rows, row_key
from app.batch.worker import WorkerOptions
from data.document import Document, Field, Page, Pair
from reading.route import Analysis

ROOT = Path(__file__).resolve().parents[1]
FAKE = WorkerOptions(processor="tests.test_batch:fake_analyse", warm_up=False)


def fake_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Stands in for reading.route.analyse_file: decodes with PIL, one field taken from the name."""
    try:
        with Image.open(path) as im:
            im.load()
            size = im.size
    except Exception as exc:
        return Analysis(Document(source=os.path.basename(path),
                                 error={"type": "InputError", "message": f"not an image: {exc}"}))
    doc = Document(source=os.path.basename(path), doc_type=doc_type or "receipt",
                   pages=[Page(index=0, width=size[0], height=size[1])],
                   timings={"decode": 0.001, "ocr": 0.002, "total": 0.003})
    doc.fields["code"] = Field(key="code", value=Path(path).stem.upper(), label="编号")
    return Analysis(doc, [np.zeros((size[1], size[0], 3), np.uint8)])


def form_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """As fake_analyse, but files named form* are generic forms with two key-value pairs and no fields."""
    res = fake_analyse(path, model_dir, doc_type)
    if Path(path).name.startswith("form") and res.document.error is None:
        res.document.doc_type, res.document.fields = "generic_form", {}
        res.document.pairs = [Pair(key="姓名", value="李明", score=0.9), Pair(key="性别", value="男", score=0.8)]
    return res


def crash_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Kills its own worker process (SIGKILL, as the out-of-memory killer does) on files named
    crash_once* (first try only; a marker file beside it remembers the try) and crash_always* (every
    try); any other file as fake_analyse."""
    name = Path(path).name
    marker = Path(path + ".crashed")
    if name.startswith("crash_always") or (name.startswith("crash_once") and not marker.exists()):
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return fake_analyse(path, model_dir, doc_type)


def slow_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Says which worker holds it (a file named by its pid in ../pids) and then takes a minute."""
    (Path(path).parent.parent / "pids" / str(os.getpid())).touch()
    time.sleep(60)
    return fake_analyse(path, model_dir, doc_type)


def flaky_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Fails while a `<file>.fail` marker exists (a transient error: same bytes, different outcome)."""
    if os.path.exists(path + ".fail"):
        raise RuntimeError("transient failure")
    return fake_analyse(path, model_dir, doc_type)


def make_folder(root: Path, n_good: int = 4) -> Path:
    folder = root / "in"
    (folder / "sub").mkdir(parents=True)
    for i in range(n_good):
        target = folder / ("sub" if i % 2 else "") / f"doc{i}.png"
        Image.new("RGB", (40 + i, 30), "white").save(target)
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (folder / "notes.txt").write_text("not a document")
    return folder


def rows_by_file(path: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in read_rows(str(path)):
        out.setdefault(row["file"], []).append(row)
    return out


# --- inputs -----------------------------------------------------------------------------------------

def test_expand_inputs_walks_folders_globs_and_reports_missing(tmp_path):
    folder = make_folder(tmp_path)
    found = expand_inputs([str(folder), str(folder / "sub" / "*.png"), str(tmp_path / "nope.pdf")])
    names = [Path(p).name for p in found.files]
    assert sorted(names) == ["broken.jpg", "doc0.png", "doc1.png", "doc2.png", "doc3.png"]
    assert len(names) == len(set(found.files)), "a file named twice must be taken once"
    assert [Path(p).name for p in found.ignored] == ["notes.txt"]
    assert found.missing == [str(tmp_path / "nope.pdf")]
    assert all(os.path.isabs(p) for p in found.files)


# --- results file -------------------------------------------------------------------------------------

def test_results_file_drops_torn_last_line_and_keeps_whole_rows(tmp_path):
    out = tmp_path / "r.jsonl"
    with ResultsFile.open(str(out)) as results:
        results.append({"file": "/a", "sha256": "1", "fields": {}})
        results.append({"file": "/b", "sha256": "2", "fields": {}})
    with open(out, "ab") as fh:           # what kill -9 in the middle of a write leaves behind
        fh.write(b'{"file": "/c", "sha2')
    with ResultsFile.open(str(out)) as results:
        assert results.report.torn_bytes == len(b'{"file": "/c", "sha2')
        assert set(results.done) == {("/a", "1"), ("/b", "2")}
        results.append({"file": "/c", "sha256": "3", "fields": {}})
    lines = out.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
    assert [r["file"] for r in read_rows(str(out))] == ["/a", "/b", "/c"]


# --- the run ------------------------------------------------------------------------------------------

def test_batch_records_failures_and_resume_adds_nothing_twice(tmp_path):
    folder = make_folder(tmp_path)
    out = tmp_path / "results.jsonl"
    first = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (first.total, first.done, first.failed, first.skipped, first.ignored) == (5, 4, 1, 0, 1)
    assert not first.ok
    rows = rows_by_file(out)
    assert len(rows) == 5 and all(len(r) == 1 for r in rows.values())
    bad = rows[str(folder / "broken.jpg")][0]
    assert bad["error"]["type"] == "InputError" and "not an image" in bad["error"]["message"]
    good = rows[str(folder / "sub" / "doc1.png")][0]
    assert good["fields"]["code"]["value"] == "DOC1" and good["sha256"] == file_sha256(
        str(folder / "sub" / "doc1.png"))

    again = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (again.done, again.failed, again.skipped, again.earlier_failed) == (0, 0, 5, 1)
    assert not again.ok, "a failure recorded earlier still makes the exit status non-zero"
    assert sum(len(r) for r in rows_by_file(out).values()) == 5

    Image.new("RGB", (99, 30), "white").save(folder / "doc0.png")   # new content: redone
    third = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (third.done, third.skipped) == (1, 4)
    widths = [r["pages"][0]["width"] for r in rows_by_file(out)[str(folder / "doc0.png")]]
    assert widths == [40, 99]


def test_resume_after_partial_results_does_only_the_missing(tmp_path):
    folder = make_folder(tmp_path)
    out = tmp_path / "results.jsonl"
    run_batch([str(folder)], str(out), options=FAKE, progress=False)
    data = out.read_bytes().split(b"\n")
    # keep two whole rows and half of the third, as if killed mid-run
    out.write_bytes(b"\n".join(data[:2]) + b"\n" + data[2][: len(data[2]) // 2])
    resumed = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (resumed.skipped, resumed.done + resumed.failed) == (2, 3)
    rows = rows_by_file(out)
    assert len(rows) == 5 and all(len(r) == 1 for r in rows.values())


def test_two_workers_give_the_same_rows_as_one(tmp_path):
    folder = make_folder(tmp_path, n_good=6)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    run_batch([str(folder)], str(one), workers=1, options=FAKE, progress=False)
    summary = run_batch([str(folder)], str(two), workers=2, options=FAKE, progress=False)
    assert summary.done == 6 and summary.failed == 1

    def strip(path):
        return {f: {k: v for k, v in rs[0].items() if k not in ("timings", "worker_pid")}
                for f, rs in rows_by_file(path).items()}
    assert strip(one) == strip(two)
    pids = {r[0]["worker_pid"] for r in rows_by_file(two).values()}
    assert os.getpid() not in pids, "with --workers 2 the documents are processed in worker processes"
    # the workers' start (spawned, models loaded) is measured and reported apart from the documents' rate
    assert 0 < summary.startup < summary.wall
    assert "s of it starting the workers" in summary.report() and "pages/s after)" in summary.report()


def test_csv_gives_a_form_one_row_with_its_pairs_as_json(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("form1.png", "doc1.png"):
        Image.new("RGB", (40, 30), "white").save(folder / name)
    out, table = tmp_path / "results.jsonl", tmp_path / "table.csv"
    run_batch([str(folder)], str(out), csv_path=str(table), progress=False,
              options=WorkerOptions(processor="tests.test_batch:form_analyse", warm_up=False))
    with open(table, encoding="utf-8-sig", newline="") as fh:
        records = list(csv.DictReader(fh))
    assert len(records) == 2, "one row per document, as --help says (a form used to take one row per pair)"
    form = [r for r in records if r["file"].endswith("form1.png")]
    assert len(form) == 1 and form[0]["doc_type"] == "generic_form"
    assert json.loads(form[0]["pairs"]) == [{"key": "姓名", "value": "李明", "score": 0.9, "page": 1},
                                            {"key": "性别", "value": "男", "score": 0.8, "page": 1}]
    other = [r for r in records if r["file"].endswith("doc1.png")]
    assert len(other) == 1 and other[0]["code"] == "DOC1" and other[0]["pairs"] == ""


def test_csv_has_one_row_per_document_and_schema_columns(tmp_path):
    folder = make_folder(tmp_path)
    out, table = tmp_path / "results.jsonl", tmp_path / "table.csv"
    run_batch([str(folder)], str(out), csv_path=str(table), options=FAKE, progress=False)
    raw = table.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "BOM so that Excel shows Chinese"
    with open(table, encoding="utf-8-sig", newline="") as fh:
        records = list(csv.DictReader(fh))
    assert len(records) == 5
    by_name = {Path(r["file"]).name: r for r in records}
    assert by_name["doc2.png"]["code"] == "DOC2"
    assert by_name["broken.jpg"]["error_type"] == "InputError" and by_name["broken.jpg"]["code"] == ""
    # with a chosen type, the schema's fields come first, in schema order
    write_csv(str(out), str(table), doc_type="vat_invoice")
    header = next(csv.reader(open(table, encoding="utf-8-sig")))
    start = header.index("title")
    assert header[start - 2:start + 3] == ["duplicate_of", "near_duplicate_of", "title", "invoice_code",
                                           "invoice_number"] and header[-1] == "code"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")], "no temp file left behind"


def test_cli_help_and_bad_arguments():
    helptext = subprocess.run([sys.executable, "-m", "app", "batch", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert helptext.returncode == 0
    words = " ".join(helptext.stdout.split())          # wrapping depends on the widest option
    assert "GB of memory per worker" in words and "Resume" in words
    assert "--xlsx" in words and "--register" in words and "--rename" in words and "--to DIR" in words
    bad = subprocess.run([sys.executable, "-m", "app", "batch", "x.png", "--out", "/tmp/x.jsonl",
                          "--model", "/no/such/model"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "no such directory" in bad.stderr


# --- odd file names, multi-document files, damaged results -------------------------------------------

def test_gbk_file_name_gets_a_lossless_utf8_row_and_rerun_skips_it(tmp_path):
    folder = make_folder(tmp_path, n_good=2)
    # a name unpacked from a Windows zip: GBK bytes, not UTF-8; Python sees lone surrogates
    odd = os.fsdecode(os.fsencode(str(folder)) + b"/" + "发票".encode("gbk") + b".png")
    Image.new("RGB", (33, 30), "white").save(odd)
    out, table, draw = tmp_path / "results.jsonl", tmp_path / "table.csv", tmp_path / "overlays"
    drawing = WorkerOptions(processor=FAKE.processor, warm_up=False, draw_dir=str(draw))
    first = run_batch([str(folder)], str(out), csv_path=str(table), options=drawing, progress=False)
    assert (first.total, first.done, first.failed) == (4, 3, 1)
    # the overlay keeps the name's bytes (cv2.imwrite would have crashed the process on this path)
    assert [n for n in os.listdir(os.fsencode(str(draw))) if n.startswith("发票".encode("gbk") + b"_")]
    out.read_bytes().decode("utf-8")      # every line is valid UTF-8 (raises otherwise)
    rows = [r for r in read_rows(str(out)) if "file_bytes_hex" in r]
    assert len(rows) == 1, "only the undecodable name gets the hex field"
    row = rows[0]
    assert os.fsdecode(bytes.fromhex(row["file_bytes_hex"])) == odd, "the exact name round-trips"
    # bytes that do not decode as UTF-8 are shown as \\xNN (C6 B1 happens to be valid UTF-8: "\u01b1")
    assert row["file"] == str(folder) + "/\\xb7\\xa2\u01b1.png" and row["pages"][0]["width"] == 33
    assert row_key(row) == (odd, file_sha256(odd))
    with open(table, encoding="utf-8-sig", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 4
    again = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (again.done, again.failed, again.skipped) == (0, 0, 4)


def split_in_two(task):
    """run_task as it is for a file holding two documents: two rows, part 1 and 2 of 2."""
    from app.batch.worker import run_task
    result = run_task(task)
    row = result if isinstance(result, dict) else result[0]
    if not Path(task[0]).name.startswith("two"):
        return result
    return [{**row, "part": 1, "parts": 2}, {**row, "part": 2, "parts": 2, "fields": {}}]


def test_multi_document_file_is_one_write_and_a_partial_group_is_redone(tmp_path, monkeypatch):
    folder = make_folder(tmp_path, n_good=2)
    Image.new("RGB", (50, 30), "white").save(folder / "two.png")
    out = tmp_path / "results.jsonl"
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd, data):
        writes.append(bytes(data))
        return real_write(fd, data)
    monkeypatch.setattr(app.batch.command, "run_task", split_in_two)
    monkeypatch.setattr(os, "write", spy)
    first = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    monkeypatch.setattr(os, "write", real_write)
    assert (first.done, first.failed, first.documents) == (3, 1, 5), "files counted once, documents per row"
    group = [w for w in writes if b"two.png" in w]
    assert len(group) == 1 and group[0].count(b"\n") == 2, "both rows of the file in one os.write"
    two = rows_by_file(out)[str(folder / "two.png")]
    assert [(r["part"], r["parts"]) for r in two] == [(1, 2), (2, 2)]

    # part 2 lost (a writer from before groups were one write, a hand edit): the file is redone
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(line for line in lines if not (b"two.png" in line and b'"part":2' in line)))
    with ResultsFile.open(str(out)) as results:
        assert results.report.partial_groups == 1
        assert (str(folder / "two.png"), file_sha256(str(folder / "two.png"))) not in results.done
    again = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    assert (again.done, again.skipped, again.documents) == (1, 3, 2)
    assert [len(g) for g in latest_groups(str(out)).values()] == [1, 1, 1, 2]


def test_torn_group_write_is_cut_whole(tmp_path):
    out = tmp_path / "r.jsonl"
    with ResultsFile.open(str(out)) as results:
        results.append({"file": "/a", "sha256": "1"})                       # an old row: part 1 of 1
        results.append_rows([{"file": "/b", "sha256": "2", "part": 1, "parts": 2},
                             {"file": "/b", "sha256": "2", "part": 2, "parts": 2}])
    whole = out.read_bytes()
    with open(out, "ab") as fh:      # kill -9 in the middle of the second line of a two-row write
        fh.write(b'{"file":"/c","sha256":"3","part":1,"parts":2}\n{"file":"/c","sha2')
    with ResultsFile.open(str(out)) as results:
        assert results.report.torn_rows == 1 and set(results.done) == {("/a", "1"), ("/b", "2")}
    assert out.read_bytes() == whole, "the unfinished group is cut whole, nothing before it"


def test_garbled_middle_line_is_reported_kept_and_its_file_redone(tmp_path, capsys):
    folder = make_folder(tmp_path)
    out = tmp_path / "results.jsonl"
    run_batch([str(folder)], str(out), options=FAKE, progress=False)
    lines = out.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"file": "/garbled\x00 \xff\n'
    out.write_bytes(b"".join(lines))
    capsys.readouterr()
    again = run_batch([str(folder)], str(out), options=FAKE, progress=False)
    err = capsys.readouterr().err
    assert "1 lines" in err and "(line 2)" in err and "kept in the file" in err
    assert (again.done + again.failed, again.skipped) == (1, 4)
    assert out.read_bytes().splitlines(keepends=True)[1] == lines[1], "the bad line is not deleted"
    assert len(latest_groups(str(out))) == 5


# --- outputs checked up front, one batch per results file ----------------------------------------------

def test_unwritable_csv_or_draw_fails_before_any_work(tmp_path):
    folder = make_folder(tmp_path)
    out = tmp_path / "results.jsonl"
    (tmp_path / "plain").write_text("a file, not a folder")
    with pytest.raises(BatchSetupError, match="--csv .*cannot be written"):
        run_batch([str(folder)], str(out), csv_path=str(tmp_path / "plain" / "t.csv"), options=FAKE,
                  progress=False)
    with pytest.raises(BatchSetupError, match="is a folder"):
        run_batch([str(folder)], str(out), csv_path=str(tmp_path), options=FAKE, progress=False)
    draw = WorkerOptions(processor=FAKE.processor, warm_up=False, draw_dir=str(tmp_path / "plain" / "d"))
    with pytest.raises(BatchSetupError, match="--draw"):
        run_batch([str(folder)], str(out), options=draw, progress=False)
    assert not out.exists(), "nothing was read or written"


def test_second_batch_on_the_same_out_refuses_with_exit_2(tmp_path):
    folder = make_folder(tmp_path, n_good=1)
    out = tmp_path / "results.jsonl"
    with ResultsFile.open(str(out)) as running:       # a batch in progress holds the file
        running.append({"file": "/x", "sha256": "1"})
        with pytest.raises(ResultsLocked):
            run_batch([str(folder)], str(out), options=FAKE, progress=False)
        cli = subprocess.run(batch_cli(str(folder), "--out", str(out)), cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert cli.returncode == 2 and "in use by another batch" in cli.stderr
        bad_csv = subprocess.run(batch_cli(str(folder), "--out", str(tmp_path / "o.jsonl"), "--csv",
                                           str(tmp_path / "results.jsonl" / "t.csv")),
                                 cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert bad_csv.returncode == 2 and "--csv" in bad_csv.stderr
        assert not (tmp_path / "o.jsonl").exists()
    assert [r["file"] for r in read_rows(str(out))] == ["/x"], "the refused run wrote nothing"
    after = run_batch([str(folder)], str(out), options=FAKE, progress=False)   # lock released on close
    assert after.done == 1


def test_retry_failed_redoes_error_rows_only(tmp_path):
    folder = make_folder(tmp_path, n_good=2)
    (Path(str(folder / "doc0.png") + ".fail")).touch()
    out = tmp_path / "results.jsonl"
    flaky = WorkerOptions(processor="tests.test_batch:flaky_analyse", warm_up=False)
    first = run_batch([str(folder)], str(out), options=flaky, progress=False)
    assert (first.done, first.failed) == (1, 2)        # doc0 (transient) and broken.jpg
    os.unlink(str(folder / "doc0.png") + ".fail")
    plain = run_batch([str(folder)], str(out), options=flaky, progress=False)
    assert (plain.done, plain.skipped, plain.earlier_failed) == (0, 3, 2)
    assert "--retry-failed" in plain.report()
    retry = run_batch([str(folder)], str(out), options=flaky, progress=False, retry_failed=True)
    assert (retry.retried, retry.done, retry.failed, retry.skipped) == (2, 1, 1, 1)
    latest = {Path(g[0]["file"]).name: g[0] for g in latest_groups(str(out)).values()}
    assert latest["doc0.png"]["fields"]["code"]["value"] == "DOC0" and not latest["doc0.png"]["error"]
    assert latest["broken.jpg"]["error"]["type"] == "InputError"


# --- worker processes dying -----------------------------------------------------------------------------

@pytest.mark.heavy
def test_killed_worker_costs_only_its_document_which_is_retried_once(tmp_path):
    folder = make_folder(tmp_path, n_good=5)
    Image.new("RGB", (60, 30), "white").save(folder / "crash_once.png")
    Image.new("RGB", (61, 30), "white").save(folder / "crash_always.png")
    out = tmp_path / "results.jsonl"
    crashing = WorkerOptions(processor="tests.test_batch:crash_analyse", warm_up=False)
    summary = run_batch([str(folder)], str(out), workers=2, options=crashing, progress=False)
    assert (summary.done, summary.failed) == (6, 2)   # crash_always and broken.jpg
    rows = rows_by_file(out)
    assert len(rows) == 8 and all(len(r) == 1 for r in rows.values()), "every file once, none lost"
    once = rows[str(folder / "crash_once.png")][0]
    assert once["fields"]["code"]["value"] == "CRASH_ONCE" and once["attempt"] == 2
    assert "SIGKILL" in once["retried_because"]
    always = rows[str(folder / "crash_always.png")][0]
    assert always["error"]["type"] == "WorkerCrashed" and always["error"]["message"].count("killed by SIGKILL") == 2
    others = [r[0] for f, r in rows.items() if "crash" not in f]
    assert not [r for r in others if "attempt" in r], "no other document was redone"

    redo = run_batch([str(folder)], str(out), workers=2, options=FAKE, progress=False, retry_failed=True)
    assert (redo.retried, redo.done, redo.failed) == (2, 1, 1)
    latest = {Path(g[0]["file"]).name: g[0] for g in latest_groups(str(out)).values()}
    assert latest["crash_always.png"]["fields"]["code"]["value"] == "CRASH_ALWAYS"


@pytest.mark.heavy
def test_workers_that_cannot_load_stop_the_batch_with_a_clear_error(tmp_path):
    from app.batch.pool import WorkersFailedToStart
    folder = make_folder(tmp_path, n_good=2)
    broken = WorkerOptions(processor="tests.no_such_module:analyse", warm_up=False)
    with pytest.raises(WorkersFailedToStart, match="could not load the models: ModuleNotFoundError"):
        run_batch([str(folder)], str(tmp_path / "r.jsonl"), workers=2, options=broken, progress=False)
    assert list(read_rows(str(tmp_path / "r.jsonl"))) == [], "no document was charged for it"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"     # a zombie holds no memory
    except FileNotFoundError:
        return True


@pytest.mark.heavy
def test_workers_exit_when_the_batch_process_is_killed(tmp_path):
    folder = make_folder(tmp_path, n_good=3)
    (tmp_path / "pids").mkdir()
    code = ("import sys; from app.batch.command import run_batch; from app.batch.worker import WorkerOptions; "
            "run_batch([sys.argv[1]], sys.argv[2], workers=2, progress=False, "
            "options=WorkerOptions(processor='tests.test_batch:slow_analyse', warm_up=False))")
    parent = subprocess.Popen([sys.executable, "-c", code, str(folder), str(tmp_path / "r.jsonl")], cwd=ROOT)
    deadline = time.time() + 60
    while len(os.listdir(tmp_path / "pids")) < 2 and time.time() < deadline and parent.poll() is None:
        time.sleep(0.05)
    pids = [int(p) for p in os.listdir(tmp_path / "pids")]
    assert len(pids) == 2, "both workers should be busy before the parent is killed"
    parent.kill()
    parent.wait()
    deadline = time.time() + 20
    while not all(_gone(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if not _gone(pid)]
    for pid in left:      # do not leave them behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, "workers outlived the killed batch process"


# --- real OCR, through the command line -------------------------------------------------------------

def real_folder(root: Path, n_images: int = 3) -> Path:
    from tests.test_pipeline_app import pdf_bytes, text_page
    folder = root / "docs"
    (folder / "more").mkdir(parents=True)
    for i in range(n_images):
        target = folder / ("more" if i % 2 else "") / f"note{i}.png"
        text_page([f"编号 {1000 + i}", "合计 12.50"]).save(target)
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    (folder / "two.pdf").write_bytes(pdf_bytes([text_page(["第一页 A1"]), text_page(["第二页 B2"])]))
    return folder


def batch_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "app", "batch", *args, "--no-progress"]


@pytest.mark.heavy
def test_kill_9_mid_run_then_resume_gives_exactly_one_row_per_file(tmp_path):
    folder = real_folder(tmp_path, n_images=4)
    out, table = tmp_path / "results.jsonl", tmp_path / "table.csv"
    cmd = batch_cli(str(folder), "--out", str(out), "--csv", str(table))
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the batch finished before it could be killed; the test proves nothing"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    files_before = len(latest_groups(str(out)))     # files with all their rows written
    assert 1 <= files_before < 6

    resumed = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 1, "one file is corrupt, so the exit status says something failed"
    assert f"{files_before} skipped" in resumed.stderr
    rows = rows_by_file(out)
    assert sorted(Path(f).name for f in rows) == ["corrupt.png", "note0.png", "note1.png", "note2.png",
                                                  "note3.png", "two.pdf"]
    assert all(len(r) == r[0]["parts"] for r in rows.values()), "no file lost, none twice"
    assert rows[str(folder / "corrupt.png")][0]["error"]["type"]
    pdf_pages = [page for row in rows[str(folder / "two.pdf")] for page in row["pages"]]
    assert len(pdf_pages) == 2 and "B2" in pdf_pages[1]["lines"][0]["text"]
    note = rows[str(folder / "more" / "note1.png")][0]
    assert "1001" in "".join(line["text"] for line in note["pages"][0]["lines"])
    with open(table, encoding="utf-8-sig", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == sum(len(r) for r in rows.values())

    third = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "0 done, 0 failed, 6 skipped" in third.stderr


@pytest.mark.heavy
def test_two_real_workers_read_the_same_as_one(tmp_path):
    folder = real_folder(tmp_path, n_images=2)
    results = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.jsonl"
        subprocess.run(batch_cli(str(folder), "--out", str(out), "--workers", str(workers)), cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
        results[workers] = {
            Path(f).name: (rs[0].get("error") or {}).get("type", "")
                          + "|".join(ln["text"] + str([round(v) for pt in ln["quad"] for v in pt])
                                     for r in rs for p in r["pages"] for ln in p["lines"])
            for f, rs in rows_by_file(out).items()}
        if workers == 2:   # both may not get work (one can take all while the other loads), but never the parent
            pids = {rs[0]["worker_pid"] for rs in rows_by_file(out).values()}
            assert 1 <= len(pids) <= 2 and os.getpid() not in pids
    assert len(results[1]) == 4 and results[1] == results[2]


def test_draw_writes_one_overlay_per_page(tmp_path):
    folder = make_folder(tmp_path, n_good=2)
    out, draw = tmp_path / "results.jsonl", tmp_path / "overlays"
    options = WorkerOptions(processor=FAKE.processor, warm_up=False, draw_dir=str(draw))
    run_batch([str(folder)], str(out), options=options, progress=False)
    rows = rows_by_file(out)
    written = rows[str(folder / "doc0.png")][0]["overlays"]
    assert len(written) == 1 and Path(written[0]).parent == draw
    with Image.open(written[0]) as im:
        assert im.size == (40, 30)
    assert "overlays" not in rows[str(folder / "broken.jpg")][0]


def test_an_empty_folder_says_there_is_nothing_to_do(tmp_path, capsys):
    """A folder with no documents is not a silent success: the summary says nothing was found."""
    from app.cli import main
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("not a document", encoding="utf-8")
    assert main(["batch", str(tmp_path / "empty"), "--out", str(tmp_path / "r.jsonl")]) == 0
    assert "no documents found in the inputs" in capsys.readouterr().err
