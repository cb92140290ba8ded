"""The fixed pool of model worker processes behind `piaoju serve`.

The batch pool (app/batch/pool.py) runs a known list of files to the end and returns; a service takes
jobs as they come, one model per request, and reports progress while a document is read. So this pool
keeps the batch pool's process discipline and reuses its parts, with a service's loop around them:
- each worker is a spawned process owned by one slot thread of the server, one job at a time over its
  own pipe, so the server always knows which job a worker holds;
- workers die with the server (`die_with_parent`: PR_SET_PDEATHSIG and a watchdog), take their share
  of the cores (`share_cores`) and load the models once (`reading.route.warm_up`; extractors of other
  models named by requests are loaded on first use and cached per process, `load_extractor`), never
  per request;
- a worker that dies (out of memory, a crash in a native library) costs one job one attempt: the job
  goes back to the head of its client's line once, then ends with `WorkerCrashed`; a job that runs past
  `job_timeout` has its worker killed and ends with `Timeout`; a cancelled running job has its worker
  killed. A fresh worker takes the slot.
The worker reads the upload from the jobs folder and returns each Document as the JSON text
`extract --json` writes (Document.to_json), so the service's answer is extract's, byte for byte but for
the timings.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from app.batch.pool import OOM_HINT, describe_exit, worker_loop
from app.serve.fairqueue import FairQueue
from app.serve.jobs import MAX_ATTEMPTS, Job, JobStore
from app.serve.metrics import Metrics

READY_TIMEOUT = 600.0      # loading the models on a busy machine; a worker silent for longer is replaced
RESTART_PAUSE = 5.0        # between tries to start a worker that failed to load its models


@dataclass(frozen=True)
class Task:
    job_id: str
    upload: str              # uploads/<job id>, made by the server from the id
    filename: str            # the client's name, for the Document's `source` and messages only
    model_dir: str | None
    doc_type: str | None


def worker_main(conn: Connection, slot: int, workers: int, parent_pid: int, model_dir: str | None) -> None:
    """A worker's life (app.batch.pool.worker_loop): load the models, say ready, then answer each Task
    with its Documents, sending ("progress", job id, done, total) after each page."""
    def init() -> None:
        from reading.route import warm_up
        warm_up(model_dir)

    def answer(task: Task) -> tuple[str, str, Any]:
        def progress(done: int, total: int) -> None:
            conn.send(("progress", task.job_id, done, total))
        return run_task(task, progress)

    worker_loop(conn, slot, workers, parent_pid, init, answer)


def run_task(task: Task, on_page: Callable[[int, int], None], data: bytes | None = None) -> tuple[str, str, Any]:
    """("result", job id, [Document JSON text, ...]) or ("error", job id, {"type", "message"}). `data`: the
    upload's bytes when they came with the task (a Ray actor on another node), else read from task.upload."""
    from reading.route import analyse_bytes
    try:
        if data is None:
            with open(task.upload, "rb") as fh:
                data = fh.read()
        analysis = analyse_bytes(data, task.filename, task.model_dir, task.doc_type, on_page, preview=None)
        return ("result", task.job_id, [doc.to_json() for doc in analysis.parts()])
    except Exception as exc:     # the pipeline returns document errors; this is the installation's trouble
        return ("error", task.job_id, {"type": type(exc).__name__,
                                       "message": f"{exc} (internal error; {traceback.format_exc(limit=2)!r})"})


FinishCallback = Callable[[Job], None]


class _Slot:
    progress_with_answer = False      # the worker sends ("progress", ...) after each page

    def __init__(self, pool: "ServicePool", index: int) -> None:
        self.pool = pool
        self.index = index
        self.process: Any = None
        self.conn: Connection | None = None
        self.ready = False
        self.job_id: str | None = None
        self.cancelled = threading.Event()
        self.thread = threading.Thread(target=self.loop, name=f"serve-slot-{index}", daemon=True)

    # --- the worker process -------------------------------------------------------------------------

    def start_worker(self) -> bool:
        """Start a worker and wait for its models; False when it could not load them (logged)."""
        pool = self.pool
        parent_conn, child_conn = pool.context.Pipe(duplex=True)
        process = pool.context.Process(target=worker_main, name=f"serve-worker-{self.index}", daemon=True,
                                       args=(child_conn, self.index, pool.size, os.getpid(), pool.warm_model))
        process.start()
        child_conn.close()
        self.process, self.conn = process, parent_conn
        deadline = time.monotonic() + READY_TIMEOUT
        while not pool.stopping.is_set():
            ready = wait([parent_conn, process.sentinel], timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            if parent_conn in ready:
                try:
                    message = parent_conn.recv()
                except (EOFError, OSError):
                    message = ("init_failed", f"the worker {describe_exit(process.exitcode)} while loading the models")
                if message[0] == "ready":
                    self.ready = True
                    return True
                print(f"[serve] worker {self.index} could not load the models: {message[1]}", file=sys.stderr)
                break
            if process.sentinel in ready:
                print(f"[serve] worker {self.index} {describe_exit(process.exitcode)} while loading the models",
                      file=sys.stderr)
                break
            if time.monotonic() > deadline:
                print(f"[serve] worker {self.index} did not load the models in {READY_TIMEOUT:.0f} s", file=sys.stderr)
                break
        self.stop_worker()
        return False

    def stop_worker(self, kill: bool = False) -> None:
        self.ready = False
        if self.process is None:
            return
        if not kill and self.conn is not None:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        if self.conn is not None:
            self.conn.close()
        self.process, self.conn = None, None

    # --- the slot's loop ----------------------------------------------------------------------------

    def loop(self) -> None:
        pool = self.pool
        while not pool.stopping.is_set():
            if not self.ready and not self.start_worker():
                pool.stopping.wait(RESTART_PAUSE)
                continue
            job_id = pool.queue.get(timeout=0.5)
            if job_id is None:
                continue
            job = pool.store.claim(job_id)
            if job is None:                   # cancelled while it waited
                continue
            self.job_id = job_id
            self.cancelled.clear()
            try:
                self.run(job)
            except Exception as exc:          # the store or the pipe failed: the job must still end
                pool.finish(job, "failed", error={"type": type(exc).__name__,
                                                  "message": f"the server failed while running this job: {exc}"})
                self.stop_worker(kill=True)
            finally:
                self.job_id = None
        self.stop_worker()

    def run(self, job: Job) -> None:
        pool = self.pool
        assert self.conn is not None and self.process is not None
        started = time.monotonic()
        task = Task(job.id, str(pool.store.upload_path(job.id)), job.filename, job.model_dir, job.doc_type)
        self.conn.send(task)
        deadline = started + pool.job_timeout
        while True:
            ready = wait([self.conn, self.process.sentinel], timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            if self.conn in ready:
                try:
                    message = self.conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is not None and message[0] == "progress":
                    pool.store.progress(job.id, message[2], message[3])
                    continue
                if message is not None:
                    self.answered(job, message, time.monotonic() - started)
                    return
            if self.interrupted(job):
                return
            if self.process.sentinel in ready or (self.conn in ready and not self.process.is_alive()):
                self.process.join(timeout=5)
                how = f"worker process {self.process.pid} {describe_exit(self.process.exitcode)}"
                self.stop_worker(kill=True)
                hint = f" ({OOM_HINT.replace('--workers', 'serve --workers')})" if "SIGKILL" in how else ""
                self.crashed(job, how + hint)
                return
            if time.monotonic() >= deadline:
                self.stop_worker(kill=True)
                self.timed_out(job)
                return

    # --- how a job ends (shared with the Ray slot, app/serve/ray_workers.py) ---------------------------

    def interrupted(self, job: Job) -> bool:
        """The server stops (the job goes back, no attempt charged: it runs at the next start) or the job
        was cancelled (the store says so already): the worker is killed and True."""
        if self.pool.stopping.is_set():
            self.stop_worker(kill=True)
            self.pool.store.requeue(job.id, count_attempt=False)
            return True
        if self.cancelled.is_set():
            self.stop_worker(kill=True)
            self.pool.notify(job.id)
            return True
        return False

    def answered(self, job: Job, message: tuple[str, str, Any], seconds: float) -> None:
        """The worker's answer: ("result", id, [Document JSON text]) or ("error", id, {type, message})."""
        if message[0] == "result":
            docs = [json.loads(text) for text in message[2]]
            if self.progress_with_answer:      # a worker that says nothing until its answer (a Ray actor)
                pages = sum(len(d.get("pages") or []) for d in docs)
                self.pool.store.progress(job.id, pages, pages)
            failed = [d["error"] for d in docs if d.get("error")]
            every = bool(failed) and len(failed) == len(docs)
            self.pool.finish(job, "failed" if every else "done", result=docs, error=failed[0] if every else None,
                             seconds=seconds)
        else:
            self.pool.finish(job, "failed", error=message[2], seconds=seconds)

    def crashed(self, job: Job, how: str) -> None:
        """The worker died reading `job`: once more at the head of its client's line, then WorkerCrashed."""
        pool = self.pool
        if job.attempts < MAX_ATTEMPTS and pool.store.requeue(job.id):
            print(f"[serve] {how} while reading job {job.id}; trying it once more", file=sys.stderr)
            pool.queue.put(job.id, job.client, force=True, front=True)
        else:
            pool.finish(job, "failed", error={
                "type": "WorkerCrashed",
                "message": f"this document stopped a worker {job.attempts} times, the last time: {how}"})

    def timed_out(self, job: Job) -> None:
        self.pool.finish(job, "failed", error={
            "type": "Timeout",
            "message": f"reading this document took longer than {self.pool.job_timeout:.0f} s (serve "
                       "--job-timeout), so it was stopped; send fewer pages at a time"})


class ServicePool:
    """`size` slots, each a thread owning one worker process, taking jobs from `queue`."""

    def __init__(self, store: JobStore, queue: FairQueue, size: int, *, warm_model: str | None = None,
                 job_timeout: float = 600.0, on_finish: FinishCallback | None = None,
                 metrics: Metrics | None = None, ray: Any = None) -> None:
        self.store = store
        self.queue = queue
        self.size = size
        self.warm_model = warm_model
        self.job_timeout = job_timeout
        self.on_finish = on_finish
        self.metrics = metrics or Metrics()
        self.context = multiprocessing.get_context("spawn")    # fork would copy Paddle's threads and state
        self.stopping = threading.Event()
        self.ray = ray                       # a connected RayCluster (serve --ray): the workers are Ray actors
        if ray is not None:
            from app.serve.ray_workers import RaySlot
            self.slots: list[_Slot] = [RaySlot(self, i) for i in range(size)]
        else:
            self.slots = [_Slot(self, i) for i in range(size)]

    def start(self) -> None:
        for slot in self.slots:
            slot.thread.start()

    def ready_workers(self) -> int:
        return sum(slot.ready for slot in self.slots)

    def running(self) -> int:
        return sum(slot.job_id is not None for slot in self.slots)

    def cancel(self, job_id: str) -> None:
        """The store has marked `job_id` cancelled: take it out of the queue, or stop the worker reading it."""
        if self.queue.remove(job_id):
            return
        for slot in self.slots:
            if slot.job_id == job_id:
                slot.cancelled.set()

    def notify(self, job_id: str) -> None:
        if self.on_finish is not None:
            try:
                self.on_finish(self.store.get(job_id))
            except KeyError:
                pass

    def finish(self, job: Job, state: str, result: list[dict[str, Any]] | None = None,
               error: dict[str, Any] | None = None, seconds: float | None = None) -> None:
        if self.store.finish(job.id, state, result, error):
            pages = sum(len(d.get("pages") or []) for d in result or [])
            self.metrics.job_finished(state, pages, seconds)
        self.notify(job.id)

    def stop(self) -> None:
        """Stop every worker; a job being read goes back to the queue without costing an attempt, so it
        runs at the next start."""
        self.stopping.set()
        self.queue.wake_all()
        for slot in self.slots:        # each slot thread sees `stopping`, puts its job back and ends its worker
            slot.thread.join(timeout=10)

