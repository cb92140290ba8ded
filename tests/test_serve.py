"""`piaoju serve` (issue 37): the job store, the fair queue, the keys and the guard as units; then the real
server over HTTP in a subprocess: concurrent clients whose answers equal `extract --json`, a bad key, no
key, an oversized file, a corrupt file, a cancelled job, a full queue, and a kill -9 with jobs queued and
running followed by a restart in which every accepted job ends."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.serve.auth import KeyChecker, KeyConfigError, client_id, load_keys
from app.serve.fairqueue import FairQueue, QueueFull
from app.serve.jobs import MAX_ATTEMPTS, JobNotFound, JobStore, check_job_id

ROOT = Path(__file__).resolve().parents[1]
BORN = ROOT / "tests" / "data" / "born_digital"
KEY = "test-key-" + "0123456789abcdef"


# --- the job store ----------------------------------------------------------------------------------------

def _add(store: JobStore, data: bytes = b"%PDF-1.4 x", client: str = "c1", filename: str = "../../a.pdf") -> str:
    return store.add(data, client=client, filename=filename, model="default", model_dir=None, doc_type=None).id


def test_store_keeps_the_upload_under_the_job_id_and_never_the_clients_name(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job_id = _add(store, b"bytes")
    assert [p.name for p in store.uploads.iterdir()] == [job_id]       # not "a.pdf", nothing outside uploads/
    assert (store.uploads / job_id).read_bytes() == b"bytes"
    job = store.get(job_id)
    assert (job.state, job.filename, job.size, job.attempts) == ("queued", "../../a.pdf", 5, 0)
    for bad in ("../jobs.sqlite3", "ABC", job_id + "/x", ""):
        with pytest.raises(JobNotFound):
            store.get(bad)
        with pytest.raises(JobNotFound):
            check_job_id(bad)
    with store._db:            # WAL is on: readers do not block the writer
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_store_recovers_every_accepted_job_after_a_kill(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    queued, running, last_try, lost, done = (_add(store) for _ in range(5))
    for job_id in (running, last_try, done):
        assert store.claim(job_id) is not None
    store._db.execute("UPDATE jobs SET attempts = ? WHERE id = ?", (MAX_ATTEMPTS, last_try))
    store.finish(done, "done", result=[{"fields": {}}])
    store.upload_path(lost).unlink()
    (store.uploads / ("f" * 32 + ".part")).write_bytes(b"half")     # killed while writing an upload
    (store.uploads / ("e" * 32)).write_bytes(b"orphan")              # killed between the file and the row
    # no close(): as after kill -9; a new store on the same folder
    again = JobStore(tmp_path)
    back = again.recover()
    assert [j.id for j in back] == [queued, running]                 # oldest first; the running one runs again
    assert again.get(running).state == "queued" and again.get(running).attempts == 1
    stopped = again.get(last_try)
    assert stopped.state == "failed" and stopped.error is not None and stopped.error["type"] == "ServerStopped"
    gone = again.get(lost)
    assert gone.state == "failed" and gone.error is not None and gone.error["type"] == "UploadLost"
    assert again.get(done).state == "done" and again.get(done).result == [{"fields": {}}]
    assert sorted(p.name for p in again.uploads.iterdir()) == sorted([queued, running])
    assert sum(again.counts().values()) == 5                          # nothing vanished


def test_store_cancel_finish_and_expiry(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    a, b, c = _add(store), _add(store), _add(store)
    assert store.cancel(a) == "queued" and store.get(a).state == "cancelled"
    assert store.claim(a) is None                                     # a worker skips a cancelled job
    assert not store.upload_path(a).exists()
    store.claim(b)
    assert store.finish(b, "done", result=[{"x": 1}])
    assert not store.finish(b, "failed")                              # an ended job stays as it ended
    assert not store.upload_path(b).exists()                          # the result is kept, the bytes are not
    store._db.execute("UPDATE jobs SET finished = finished - 7200 WHERE id = ?", (b,))
    assert store.expire(3600) == 1
    with pytest.raises(JobNotFound):
        store.get(b)
    assert store.get(a).state == "cancelled" and store.get(c).state == "queued"   # younger / unfinished stay


# --- the queue ----------------------------------------------------------------------------------------

def test_fair_queue_takes_turns_between_clients_and_is_bounded() -> None:
    q = FairQueue(limit=5)
    for i in range(4):
        q.put(f"big{i}", "big")
    q.put("small0", "small")
    with pytest.raises(QueueFull):
        q.put("big4", "big")
    q.put("retry", "big", force=True)                                 # a recovered job is never refused
    assert q.remove("big2") and not q.remove("nope")
    order = [q.get(timeout=0) for _ in range(len(q))]
    assert order == ["big0", "small0", "big1", "big3", "retry"]       # small's one file does not wait for 4
    assert q.get(timeout=0.01) is None
    added: list[str] = []
    q2 = FairQueue(limit=1)
    q2.reserve("c", "j1", lambda: added.append("j1"))
    with pytest.raises(QueueFull):
        q2.reserve("c", "j2", lambda: added.append("j2"))
    assert added == ["j1"]                                            # a refused job is never stored


# --- keys ----------------------------------------------------------------------------------------------

def test_keys_from_environment_and_file(tmp_path: Path) -> None:
    f = tmp_path / "keys"
    f.write_text("# ops team\nfile-key-aaaaaaaaaaaaaaaa\n\n", encoding="utf-8")
    keys = load_keys(str(f), {"PIAOJU_API_KEYS": f" {KEY} ,other-key-bbbbbbbbbbbbbb"})
    assert keys == [KEY, "other-key-bbbbbbbbbbbbbb", "file-key-aaaaaaaaaaaaaaaa"]
    assert load_keys(None, {}) == []
    with pytest.raises(KeyConfigError, match="shorter than 16"):
        load_keys(None, {"PIAOJU_API_KEYS": "short"})
    with pytest.raises(KeyConfigError, match="cannot be read"):
        load_keys(str(tmp_path / "missing"), {})
    check = KeyChecker(keys)
    assert check.client(f"Bearer {KEY}") == client_id(KEY) and KEY not in client_id(KEY)
    assert check.client("Bearer file-key-aaaaaaaaaaaaaaaa") == client_id("file-key-aaaaaaaaaaaaaaaa")
    for bad in (None, "", KEY, f"Basic {KEY}", f"Bearer {KEY}x", "Bearer ", "Bearer \udcff"):
        assert check.client(bad) is None


def test_serve_refuses_to_start_without_a_key_or_open_to_the_network(tmp_path: Path, monkeypatch, capsys) -> None:
    from app.cli import main
    monkeypatch.delenv("PIAOJU_API_KEYS", raising=False)
    assert main(["serve", "--jobs-dir", str(tmp_path)]) == 2
    assert "no API key is configured" in capsys.readouterr().err
    assert main(["serve", "--insecure-no-auth", "--host", "0.0.0.0", "--jobs-dir", str(tmp_path)]) == 2
    assert "only on a loopback address" in capsys.readouterr().err


def test_request_strings_never_reach_a_path() -> None:
    from app.serve.api import display_filename, upload_limit_bytes
    from app.serve.catalog import ModelCatalog, UnknownModel
    assert display_filename("../../etc/passwd") == "passwd"
    assert display_filename("C:\\Users\\x\\发票.pdf") == "发票.pdf"
    assert display_filename("a\x1b[2Jb\r\n.png") == "a[2Jb.png"
    assert display_filename("..") == "upload" and display_filename(None) == "upload"
    catalog = ModelCatalog(ROOT)
    assert catalog.resolve(None) == ("default", None) and catalog.resolve("default") == ("default", None)
    for name in ("../../etc", str(ROOT / "models" / "default"), "models/default/..", "/"):
        with pytest.raises(UnknownModel, match="GET /v1/models"):
            catalog.resolve(name)
    assert upload_limit_bytes() == 25 * 2**20          # .streamlit/config.toml maxUploadSize, as the UI


def test_guard_checks_the_key_and_the_size_before_the_body_is_read() -> None:
    import asyncio

    from fastapi import FastAPI

    from app.serve.api import Guard
    from app.serve.metrics import Metrics
    inner = FastAPI()
    received: list[str] = []

    @inner.post("/v1/documents")
    async def post() -> dict[str, str]:
        received.append("body")
        return {"ok": "yes"}

    @inner.get("/healthz")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    metrics = Metrics()
    inner.add_middleware(Guard, keys=KeyChecker([KEY]), upload_limit=1000, public_docs=False, metrics=metrics)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=inner)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            auth = {"Authorization": f"Bearer {KEY}"}
            return [await c.get("/healthz"),
                    await c.post("/v1/documents", content=b"x"),
                    await c.post("/v1/documents", content=b"x",
                                 headers={"Authorization": "Bearer wrong-key-0000000000"}),
                    await c.post("/v1/documents", content=b"x" * 100_000, headers=auth),
                    await c.get("/docs"),
                    await c.post("/v1/documents", content=b"x", headers=auth)]
    health_r, no_key, bad_key, too_big, docs, ok = asyncio.run(go())
    assert health_r.status_code == 200
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"] == "Bearer"
    assert bad_key.status_code == 401 and "Bearer KEY" in bad_key.json()["error"]["message"]
    assert too_big.status_code == 413 and "limit" in too_big.json()["error"]["message"]
    assert docs.status_code == 401
    assert ok.status_code == 200 and received == ["body"]             # only the good request got in
    text = metrics.render()
    assert 'piaoju_http_requests_total{route="/v1/documents",method="POST",status="401"} 2' in text
    assert 'piaoju_http_request_duration_seconds_count{route="/v1/documents"} 4' in text


# --- the real server --------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`python -m app serve` in a subprocess, on a free loopback port, its output in a log file."""

    def __init__(self, jobs_dir: Path, *extra: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = jobs_dir.parent / f"serve-{self.port}.log"
        env = {**os.environ, "PIAOJU_API_KEYS": KEY, "PYTHONUNBUFFERED": "1"}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(self.port),
                                          "--jobs-dir", str(jobs_dir), *extra],
                                         cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(600):
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the server did not become ready:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def client(self, key: str | None = KEY) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=600)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _invoice_png(folder: Path, seed: int) -> Path:
    from data.synth import generate
    im, _ = generate("vat_invoice", seed=seed)
    im = im.convert("RGB").resize((im.width * 3 // 4, im.height * 3 // 4))
    path = folder / f"invoice_{seed}.png"
    im.save(path)
    return path


def _essence(doc: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between the service and extract: everything but the timings."""
    return {k: v for k, v in doc.items() if k != "timings"}


def _extract_json(files: list[Path], out: Path) -> dict[str, list[dict[str, Any]]]:
    """`python -m app extract FILES --json out.jsonl`: the documents of each file, by file name."""
    subprocess.run([sys.executable, "-m", "app", "extract", *map(str, files), "--json", str(out)],
                   cwd=ROOT, check=False, capture_output=True)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        by_file.setdefault(doc["source"], []).append(doc)
    return by_file


@pytest.mark.heavy
def test_real_server_concurrent_clients_equal_extract_and_refuses_what_it_should(tmp_path: Path) -> None:
    # born-digital files (read from their text: the test stays short); the OCR route's answers are compared
    # with extract's in bench/serve_bench.py, and run through the kill test below
    files = [BORN / "ofdrw_keyword2.ofd", BORN / "metagpt_invoice_1.pdf", BORN / "ofdrw_999.ofd",
             BORN / "ofdrw_v4signed.ofd"]
    expected = _extract_json(files, tmp_path / "extract.jsonl")
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes((BORN / "metagpt_invoice_1.pdf").read_bytes()[:3000])
    server = Server(tmp_path / "jobs", "--workers", "2")
    try:
        answers: dict[tuple[int, int], httpx.Response] = {}

        def client_thread(n: int) -> None:
            with server.client() as c:
                for m in range(2):
                    path = files[(n + m * 2) % len(files)]     # 4 threads x 2: every file twice
                    answers[(n, m)] = c.post("/v1/documents", files={"file": (path.name, path.read_bytes())})
        threads = [threading.Thread(target=client_thread, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(answers) == 8
        for (n, m), r in answers.items():
            name = files[(n + m * 2) % len(files)].name
            assert r.status_code == 200, (name, r.status_code, r.text[:500])
            body = r.json()
            docs = body if isinstance(body, list) else [body]
            assert [_essence(d) for d in docs] == [_essence(d) for d in expected[name]], name
            assert r.headers["x-job-id"] and r.headers["location"] == f"/v1/jobs/{r.headers['x-job-id']}"

        with server.client() as c:
            # a corrupt file: a clear error in extract's JSON, 422, not a 500
            r = c.post("/v1/documents", files={"file": ("corrupt.pdf", corrupt.read_bytes())})
            assert r.status_code == 422, r.text
            assert r.json()["error"]["type"] == "InputError" and "corrupt.pdf" in r.json()["error"]["message"]
            assert "Traceback" not in r.text
            # an oversized file: refused from its Content-Length, before the body is read
            big = os.urandom(26 * 2**20)
            r = c.post("/v1/documents", files={"file": ("big.pdf", big)})
            assert r.status_code == 413 and "25 MiB" in r.json()["error"]["message"]
            # async: a job at once, then its result; another key cannot see it
            r = c.post("/v1/documents", params={"async": "1"},
                       files={"file": ("ofdrw_keyword2.ofd", files[0].read_bytes())})
            assert r.status_code == 202 and r.json()["status"] in ("queued", "running")
            job_url = r.headers["location"]
            for _ in range(600):
                job = c.get(job_url).json()
                if job["status"] not in ("queued", "running"):
                    break
                time.sleep(0.2)
            assert job["status"] == "done" and job["progress"]["pages_done"] == job["progress"]["pages_total"] == 1
            assert _essence(job["result"]) == _essence(expected["ofdrw_keyword2.ofd"][0])
            assert c.delete(job_url).json()["status"] == "deleted" and c.get(job_url).status_code == 404
            metrics = c.get("/metrics").text
            assert 'piaoju_http_requests_total{route="/v1/documents",method="POST",status="200"} 8' in metrics
            assert 'status="413"} 1' in metrics and 'status="422"} 1' in metrics
            pages = float(metrics.split("\npiaoju_pages_read_total ")[1].split()[0])
            assert pages >= 8
            assert "piaoju_jobs_queued 0" in metrics
            assert c.get("/docs").status_code == 200 and "/v1/documents" in c.get("/openapi.json").text
            assert c.post("/v1/documents", data={"model": "../../models/default"},
                          files={"file": ("a.png", b"x")}).status_code == 400
        # no key, a bad key: 401 on every route but the health checks
        with server.client(None) as c:
            assert c.get("/healthz").status_code == 200 and c.get("/readyz").status_code == 200
            assert c.get(job_url).status_code == 401 and c.get("/metrics").status_code == 401
            assert c.post("/v1/documents", files={"file": ("a.pdf", b"%PDF")}).status_code == 401
        with server.client("wrong-key-0123456789abcdef") as c:
            assert c.post("/v1/documents", files={"file": ("a.pdf", b"%PDF")}).status_code == 401
            assert c.get("/v1/models").status_code == 401
    finally:
        server.stop()
    _assert_clean_stop(server)


def _assert_clean_stop(server: Server) -> None:
    """SIGTERM ends the server through its shutdown (uvicorn then re-raises the signal: status -15)."""
    assert server.proc.returncode in (0, -signal.SIGTERM), server.output()
    assert "Application shutdown complete" in server.output()


def _children(pid: int) -> list[int]:
    import psutil
    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


@pytest.mark.heavy
def test_real_server_kill_9_with_jobs_queued_and_running_then_restart_loses_none(tmp_path: Path) -> None:
    import psutil
    images = [_invoice_png(tmp_path, seed) for seed in (21, 22, 23, 24, 25)]
    jobs_dir = tmp_path / "jobs"
    server = Server(jobs_dir, "--workers", "1", "--queue", "2")
    accepted: list[str] = []
    try:
        with server.client() as c:
            refused = None
            for path in images:
                r = c.post("/v1/documents", params={"async": "1"}, files={"file": (path.name, path.read_bytes())})
                if r.status_code == 429:
                    refused = r
                    break
                assert r.status_code == 202, r.text
                accepted.append(r.json()["id"])
            assert refused is not None, "the queue of 2 never filled"
            assert int(refused.headers["retry-after"]) >= 1 and refused.json()["error"]["type"] == "QueueFull"
            cancelled = accepted.pop()                      # a queued job cancelled: it stays cancelled
            assert c.delete(f"/v1/jobs/{cancelled}").json()["status"] == "cancelled"
            for _ in range(1200):                           # wait until one is being read
                states = [c.get(f"/v1/jobs/{j}").json()["status"] for j in accepted]
                if "running" in states:
                    break
                time.sleep(0.1)
            assert "running" in states and "queued" in states, states
        workers = _children(server.proc.pid)
        assert workers
        server.proc.kill()                                  # kill -9: no shutdown code runs
        server.proc.wait()
        for _ in range(100):                                # the workers die with it (PR_SET_PDEATHSIG)
            if not any(psutil.pid_exists(w) and psutil.Process(w).status() != psutil.STATUS_ZOMBIE for w in workers):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"worker processes {workers} outlived the killed server")
    finally:
        server.stop()
    server = Server(jobs_dir, "--workers", "1", "--queue", "2")
    try:
        with server.client() as c:
            ends: dict[str, dict[str, Any]] = {}
            for _ in range(3000):
                for job_id in accepted:
                    if job_id not in ends:
                        r = c.get(f"/v1/jobs/{job_id}")
                        assert r.status_code == 200, (job_id, r.text)    # never vanishes
                        if r.json()["status"] not in ("queued", "running"):
                            ends[job_id] = r.json()
                if len(ends) == len(accepted):
                    break
                time.sleep(0.2)
            assert len(ends) == len(accepted), server.output()
            assert all(job["status"] == "done" and job["result"]["doc_type"] == "vat_invoice"
                       for job in ends.values()), ends
            assert max(job["attempts"] for job in ends.values()) == 2        # the one killed mid-read ran again
            assert c.get(f"/v1/jobs/{cancelled}").json()["status"] == "cancelled"
    finally:
        server.stop()
    _assert_clean_stop(server)
    assert not list((jobs_dir / "uploads").iterdir())                      # bytes dropped once read


def test_unique_job_ids() -> None:
    from app.serve.jobs import new_job_id
    ids = {new_job_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(uuid.UUID(i).version == 4 for i in ids)


@pytest.mark.heavy
def test_real_server_on_ray_answers_as_extract_and_survives_a_killed_actor(tmp_path: Path) -> None:
    """`serve --ray` (a local Ray instance, two actors): every answer equal to extract's; an actor killed
    while it reads a job costs the job an attempt, not the job; after SIGTERM no process of the Ray
    instance is left."""
    import psutil
    files = [BORN / "ofdrw_keyword2.ofd", BORN / "metagpt_invoice_1.pdf", BORN / "ofdrw_999.ofd"]
    expected = _extract_json(files, tmp_path / "extract.jsonl")
    server = Server(tmp_path / "jobs", "--workers", "2", "--ray")
    try:
        assert "Ray (local)" in server.output() and "(Ray actors)" in server.output()
        answers: dict[int, httpx.Response] = {}

        def client_thread(n: int) -> None:
            with server.client() as c:
                answers[n] = c.post("/v1/documents", files={"file": (files[n].name, files[n].read_bytes())})
        threads = [threading.Thread(target=client_thread, args=(n,)) for n in range(len(files))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n, path in enumerate(files):
            assert answers[n].status_code == 200, answers[n].text
            got = answers[n].json()
            got = got if isinstance(got, list) else [got]
            assert [_essence(d) for d in got] == [_essence(d) for d in expected[path.name]]

        # an actor killed mid-job (as Ray's OOM killer would): the job is read again by a fresh actor
        actors = [p for p in psutil.Process(server.proc.pid).children(recursive=True)
                  if "ServeActor" in " ".join(p.cmdline())]
        assert len(actors) == 2, [p.cmdline() for p in psutil.Process(server.proc.pid).children(recursive=True)]
        slow = _invoice_png(tmp_path, 3)                        # an image: real OCR, seconds of work
        with server.client() as c:
            job = c.post("/v1/documents?async=1", files={"file": (slow.name, slow.read_bytes())}).json()
            for _ in range(100):
                if c.get(f"/v1/jobs/{job['id']}").json()["status"] == "running":
                    break
                time.sleep(0.1)
            busy = max(actors, key=lambda p: p.cpu_percent(interval=0.5))
            busy.kill()
            for _ in range(600):
                state = c.get(f"/v1/jobs/{job['id']}").json()
                if state["status"] in ("done", "failed"):
                    break
                time.sleep(0.5)
        assert state["status"] == "done" and state["attempts"] == 2, state
        assert "trying it once more" in server.output()
        ray_procs = [p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)]
    finally:
        server.stop()
    # Ray's driver keeps its own SIGTERM handler, which uvicorn calls after its shutdown: exit status 15
    assert server.proc.returncode == signal.SIGTERM, server.output()
    assert "Application shutdown complete" in server.output()
    time.sleep(3)
    assert not [pid for pid in ray_procs if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
