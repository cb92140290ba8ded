"""Batch on Ray (`python -m app batch ... --ray`): the same rows as local workers, retries, kill -9 resume.

One local Ray instance (2 CPUs, no dashboard, every port on 127.0.0.1, no usage statistics) is shared
by the heavy tests of this module and shut down after them; starting it takes several seconds here.
Most tests use the fake processors of tests/test_batch.py, which Ray actors import by name as local
workers do; one test runs real OCR and compares Ray's rows with `--workers 1`.
"""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from PIL import Image

from app.batch.command import run_batch
from app.batch.state import file_sha256, latest_groups, read_rows
from app.batch.worker import WorkerOptions
from tests.test_batch import FAKE, fake_analyse, make_folder, rows_by_file

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = ("timings", "worker_pid", "worker_node")   # differ between runs and places, nothing else may


def slow_fake(path: str, model_dir: str | None, doc_type: str | None):
    """fake_analyse taking a third of a second, so a driver can be killed in the middle of a batch."""
    time.sleep(0.3)
    return fake_analyse(path, model_dir, doc_type)


def stripped(path: Path) -> dict[str, list[dict]]:
    return {f: [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]
            for f, rows in rows_by_file(path).items()}


def csv_records(path: Path) -> list[tuple]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return sorted(tuple(r.items()) for r in csv.DictReader(fh))


@pytest.fixture(scope="module")
def ray_address():
    """A Ray instance for this module: 2 CPUs, loopback only, quiet; its GCS address for other drivers."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_USAGE_STATS_ENABLED", "0")
        env.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")   # node IP 127.0.0.1: no port on the LAN
        import ray
        info = ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                        log_to_driver=False, logging_level="WARNING")
        try:
            address = info.address_info["address"]
            assert address.startswith("127.0.0.1:")
            yield address
        finally:
            ray.shutdown()


def test_ray_is_not_imported_without_the_flag(tmp_path):
    folder = make_folder(tmp_path, n_good=2)
    helped = subprocess.run([sys.executable, "-X", "importtime", "-m", "app", "batch", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "--ray" in helped.stdout and "More than one machine" in helped.stdout
    imported = {line.split("|")[-1].strip() for line in helped.stderr.splitlines() if line.startswith("import time:")}
    assert "app.batch.pool" in imported, "-X importtime lists the modules the command loads"
    assert not {m for m in imported if m == "ray" or m.startswith("ray.")}
    code = ("import sys; from app.batch.command import run_batch; import app.batch.ray_pool; "
            "from tests.test_batch import FAKE; "
            "s = run_batch([sys.argv[1]], sys.argv[2], workers=2, options=FAKE, progress=False); "
            "print(s.done, sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    local = subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path / "r.jsonl")], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert local.stdout.strip() == "2 []", local.stderr[-2000:]


def test_shared_input_without_ray_is_a_usage_error(tmp_path):
    cli = subprocess.run([sys.executable, "-m", "app", "batch", str(tmp_path), "--out", str(tmp_path / "r.jsonl"),
                          "--shared-input"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2 and "--shared-input goes with --ray" in cli.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_unreachable_ray_address_is_a_setup_error_that_writes_nothing(tmp_path):
    folder = make_folder(tmp_path, n_good=1)
    cli = subprocess.run([sys.executable, "-m", "app", "batch", str(folder), "--out", str(tmp_path / "r.jsonl"),
                          "--ray=127.0.0.1:1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2 and "nothing answers at 127.0.0.1:1" in cli.stderr
    assert "Traceback" not in cli.stderr and not (tmp_path / "r.jsonl").exists()


@pytest.mark.heavy
def test_ray_rows_equal_local_rows_shipped_or_shared(tmp_path, ray_address):
    from app.batch.ray_pool import RaySettings
    folder = make_folder(tmp_path, n_good=5)
    odd = os.fsdecode(os.fsencode(str(folder)) + b"/" + "发票".encode("gbk") + b".png")   # a GBK name
    Image.new("RGB", (33, 30), "white").save(odd)
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 not an image for the fake processor")
    runs = {}
    for name, settings in (("local", None), ("shipped", RaySettings(address=ray_address)),
                           ("shared", RaySettings(address=ray_address, shared_input=True))):
        out, table, draw = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.csv", tmp_path / f"draw_{name}"
        options = WorkerOptions(processor=FAKE.processor, warm_up=False, draw_dir=str(draw))
        summary = run_batch([str(folder)], str(out), workers=1 if settings is None else 2, csv_path=str(table),
                            options=options, progress=False, ray=settings)
        assert (summary.total, summary.done, summary.failed) == (8, 6, 2)
        if settings is not None:
            assert "Ray (" in summary.report() and "per document outside the actors" in summary.report()
        runs[name] = out, table, draw
    rows = {name: stripped(out) for name, (out, _, _) in runs.items()}
    for name in ("shipped", "shared"):
        # overlays are named the same and written by the driver into its own --draw folder
        assert {f: [{**r, "overlays": [Path(p).name for p in r.get("overlays", [])]} for r in rs]
                for f, rs in rows[name].items()} == \
               {f: [{**r, "overlays": [Path(p).name for p in r.get("overlays", [])]} for r in rs]
                for f, rs in rows["local"].items()}
        assert all(Path(p).parent == runs[name][2] for rs in rows[name].values() for r in rs
                   for p in r.get("overlays", []))
        assert sorted(os.listdir(runs[name][2])) == sorted(os.listdir(runs["local"][2]))
        assert csv_records(runs[name][1]) == csv_records(runs["local"][1])
        pids = {r["worker_pid"] for rs in rows_by_file(runs[name][0]).values() for r in rs}
        assert os.getpid() not in pids, "documents were read in Ray actors, not in the driver"
    gbk = [r for r in read_rows(str(runs["shipped"][0])) if "file_bytes_hex" in r]
    assert len(gbk) == 1 and gbk[0]["pages"][0]["width"] == 33 and gbk[0]["sha256"] == file_sha256(odd)
    again = run_batch([str(folder)], str(runs["shipped"][0]), workers=2, options=FAKE, progress=False,
                      ray=RaySettings(address=ray_address))
    assert (again.done, again.failed, again.skipped) == (0, 0, 8), "resume by path + SHA-256 as locally"


@pytest.mark.heavy
def test_killed_actor_has_its_document_retried_once_on_another(tmp_path, ray_address):
    from app.batch.ray_pool import RaySettings
    folder = make_folder(tmp_path, n_good=3)
    Image.new("RGB", (60, 30), "white").save(folder / "crash_once.png")
    Image.new("RGB", (61, 30), "white").save(folder / "crash_always.png")
    out = tmp_path / "results.jsonl"
    crashing = WorkerOptions(processor="tests.test_batch:crash_analyse", warm_up=False)
    # shared input: crash_analyse remembers a first try in a marker beside the file it reads, and a
    # shipped file is a scratch copy that goes away with its try
    summary = run_batch([str(folder)], str(out), workers=2, options=crashing, progress=False,
                        ray=RaySettings(address=ray_address, shared_input=True))
    assert (summary.done, summary.failed) == (4, 2)   # crash_always and broken.jpg
    rows = rows_by_file(out)
    assert len(rows) == 6 and all(len(r) == 1 for r in rows.values()), "every file once, none lost"
    once = rows[str(folder / "crash_once.png")][0]
    assert once["fields"]["code"]["value"] == "CRASH_ONCE" and once["attempt"] == 2
    assert "Ray actor" in once["retried_because"] and "died" in once["retried_because"]
    always = rows[str(folder / "crash_always.png")][0]
    assert always["error"]["type"] == "WorkerCrashed" and always["error"]["message"].count("Ray actor") == 2
    assert not [r for f, rs in rows.items() if "crash" not in f for r in rs if "attempt" in r]


@pytest.mark.heavy
def test_actors_that_cannot_load_stop_the_batch_with_a_clear_error(tmp_path, ray_address):
    from app.batch.pool import WorkersFailedToStart
    from app.batch.ray_pool import RaySettings
    folder = make_folder(tmp_path, n_good=2)
    broken = WorkerOptions(processor="tests.no_such_module:analyse", warm_up=False)
    with pytest.raises(WorkersFailedToStart, match="could not load the models: ModuleNotFoundError"):
        run_batch([str(folder)], str(tmp_path / "r.jsonl"), workers=2, options=broken, progress=False,
                  ray=RaySettings(address=ray_address))
    assert list(read_rows(str(tmp_path / "r.jsonl"))) == [], "no document was charged for it"


@pytest.mark.heavy
def test_driver_killed_9_then_rerun_gives_one_complete_group_per_file(tmp_path, ray_address):
    folder = make_folder(tmp_path, n_good=8)
    out = tmp_path / "results.jsonl"
    # the real command line (app.cli), with the slow fake processor in place of OCR
    code = ("import functools, sys; import app.batch.command as b; "
            "b.WorkerOptions = functools.partial(b.WorkerOptions, processor='tests.test_batch_ray:slow_fake', "
            "warm_up=False); from app.cli import main; sys.exit(main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", code, "batch", str(folder), "--out", str(out), "--csv", str(tmp_path / "t.csv"),
           "--workers", "2", "--no-progress", f"--ray={ray_address}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the batch finished before it could be killed; the test proves nothing"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(latest_groups(str(out)))
    assert 2 <= before < 9

    rerun = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 1, rerun.stderr[-2000:]      # broken.jpg is an error row
    assert f"{before} skipped" in rerun.stderr and "Ray (" in rerun.stderr
    rows = rows_by_file(out)
    assert len(rows) == 9, "no file lost"
    assert all(len(r) == 1 for r in rows.values()), "no file twice"
    with open(tmp_path / "t.csv", encoding="utf-8-sig", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 9
    # the killed batch's actors died holding shipped files; the next actors removed their scratch folders
    assert not [name for name in os.listdir(tempfile.gettempdir()) if name.startswith("piaoju-ray-")
                and not os.path.exists(f"/proc/{name.split('-')[2]}")]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.heavy
def test_driver_killed_9_leaves_no_process_of_the_ray_instance_it_started(tmp_path):
    """`batch --ray` without ADDRESS starts a local Ray instance; kill -9 of that driver ends every process
    of it within seconds: GCS server and raylet (Ray's fate sharing), actors, and the raylet's two agents,
    which stayed a minute trying to reach the dead GCS until the watchdog (app/batch/ray_reaper.py)."""
    from app.batch.ray_reaper import alive, descendants
    folder = make_folder(tmp_path, n_good=12)
    out = tmp_path / "results.jsonl"
    code = ("import functools, sys; import app.batch.command as b; "
            "b.WorkerOptions = functools.partial(b.WorkerOptions, processor='tests.test_batch_ray:slow_fake', "
            "warm_up=False); from app.cli import main; sys.exit(main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", code, "batch", str(folder), "--out", str(out), "--workers", "2", "--no-progress",
           "--ray"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not (out.exists() and out.read_bytes().count(b"\n")):
        time.sleep(0.05)
    instance = descendants(proc.pid)      # GCS, raylet, agents, actors, Ray's helpers, the watchdog
    names = {_comm(pid) for pid in instance}
    assert proc.poll() is None, "the batch finished before it could be killed; the test proves nothing"
    assert {"raylet", "gcs_server"} <= names and any(n.startswith("ray::") for n in names), names
    proc.kill()                           # the driver alone, as kill -9 PID does
    proc.wait()
    deadline = time.time() + 15
    while alive(instance) and time.time() < deadline:
        time.sleep(0.2)
    left = {pid: _comm(pid) for pid in alive(instance)}
    for pid in left:                      # leave nothing behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the killed driver's Ray instance still running after 15 s: {left}"


def _invoices(folder: Path) -> None:
    from data.synth import generate
    from tests.test_pipeline_app import pdf_bytes, text_page
    folder.mkdir(parents=True)
    for i in range(2):
        image, _ = generate("vat_invoice", seed=31 + i)
        image.resize((round(image.width * 0.5), round(image.height * 0.5))).convert("RGB").save(
            folder / f"invoice{i}.png")
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    # two pages of three lines each: two documents in one file (part 1 and 2 of 2)
    (folder / "two.pdf").write_bytes(pdf_bytes([text_page(["第一页 A1", "编号 1001", "合计 12.50"]),
                                                text_page(["第二页 B2", "编号 1002", "合计 30.00"])]))


@pytest.mark.heavy
def test_real_ocr_rows_on_ray_equal_one_local_worker(tmp_path, ray_address):
    from app.batch.ray_pool import RaySettings
    folder = tmp_path / "docs"
    _invoices(folder)
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run_batch([str(folder)], str(local), workers=1, progress=False)
    summary = run_batch([str(folder)], str(on_ray), workers=2, progress=False, ray=RaySettings(address=ray_address))
    assert (summary.total, summary.failed) == (4, 1)
    rows = stripped(on_ray)
    assert rows == stripped(local)
    assert sorted(Path(f).name for f in rows) == ["corrupt.png", "invoice0.png", "invoice1.png", "two.pdf"]
    assert [(r["part"], r["parts"]) for r in rows[str(folder / "two.pdf")]] == [(1, 2), (2, 2)]
    assert rows[str(folder / "corrupt.png")][0]["error"]["type"] == "InputError"
    assert rows[str(folder / "invoice0.png")][0]["fields"], "the invoice was read"
