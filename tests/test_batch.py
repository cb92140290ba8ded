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

from app.batch_cmd import run_batch
from app.batch_csv import write_csv
from app.batch_inputs import expand_inputs
from app.batch_state import ResultsFile, file_sha256, read_rows
from app.batch_worker import WorkerOptions
from app.pipeline import Analysis
from data.document import Document, Field, Page

ROOT = Path(__file__).resolve().parents[1]
FAKE = WorkerOptions(processor="tests.test_batch:fake_analyse", warm_up=False)


def fake_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """Stands in for app.pipeline.analyse_file: decodes with PIL, one field taken from the name."""
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
    assert header[9:12] == ["title", "invoice_code", "invoice_number"] and header[-1] == "code"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")], "no temp file left behind"


def test_cli_help_and_bad_arguments():
    helptext = subprocess.run([sys.executable, "-m", "app", "batch", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert helptext.returncode == 0
    assert "GB of memory per worker" in helptext.stdout and "Resume" in helptext.stdout
    bad = subprocess.run([sys.executable, "-m", "app", "batch", "x.png", "--out", "/tmp/x.jsonl",
                          "--model", "/no/such/model"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "no such directory" in bad.stderr


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
    rows_before = sum(len(r) for r in rows_by_file(out).values())
    assert 1 <= rows_before < 6

    resumed = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 1, "one file is corrupt, so the exit status says something failed"
    assert f"{rows_before} skipped" in resumed.stderr
    rows = rows_by_file(out)
    assert sorted(Path(f).name for f in rows) == ["corrupt.png", "note0.png", "note1.png", "note2.png",
                                                  "note3.png", "two.pdf"]
    assert all(len(r) == 1 for r in rows.values()), "no file lost, none twice"
    assert rows[str(folder / "corrupt.png")][0]["error"]["type"]
    pdf = rows[str(folder / "two.pdf")][0]
    assert len(pdf["pages"]) == 2 and "B2" in pdf["pages"][1]["lines"][0]["text"]
    note = rows[str(folder / "more" / "note1.png")][0]
    assert "1001" in "".join(line["text"] for line in note["pages"][0]["lines"])
    with open(table, encoding="utf-8-sig", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 6

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
                                     for p in rs[0]["pages"] for ln in p["lines"])
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
