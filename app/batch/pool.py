"""Worker processes for `python -m app batch --workers N`, owned one by one so a crash costs one document.

Why not a ProcessPoolExecutor: when one of its workers dies the whole pool breaks and every task in
flight is lost, so one out-of-memory kill turned all in-flight documents into permanent error rows.
Here the parent starts each worker itself, talks to it over its own pipe and gives it one task at a
time, so it always knows which document a worker holds. When a worker dies (its pipe closes, its
process sentinel fires) only that document is put back, for one more try in a fresh worker; if it
kills a worker a second time it gets a `WorkerCrashed` error row naming the signal, and the batch
goes on.

Workers die with the parent: each asks the kernel for SIGKILL when its parent exits (Linux
`prctl(PR_SET_PDEATHSIG)`) and also runs a watchdog thread that exits when its parent pid changes
(other systems, or a parent that died before the prctl). A killed batch therefore does not leave
workers holding a gigabyte or more each. Workers ignore Ctrl-C; the parent stops them.
"""
from __future__ import annotations

import collections
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from app.batch.worker import Task, WorkerOptions, error_row, init_worker, run_task, share_cores
from app.cli import terminal_text

PR_SET_PDEATHSIG = 1
WATCHDOG_SECONDS = 1.0
MAX_ATTEMPTS = 2          # a document that kills its worker twice gets an error row
STOP_GRACE_SECONDS = 5.0


class WorkersFailedToStart(RuntimeError):
    """Workers keep dying or failing before they take any document (a broken install, no memory)."""


def die_with_parent(parent_pid: int) -> None:
    """Exit when the parent process exits: kernel signal where there is one, a watchdog thread anyway."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:   # the parent died before the prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def worker_loop(conn: Connection, slot: int, workers: int, parent_pid: int, init: Callable[[], None],
                answer: Callable[[Any], Any]) -> None:
    """A model worker's life (the batch's and the HTTP server's): die with the parent, leave Ctrl-C to
    it, take this slot's share of the cores, `init()` (load the models), say ready, then send
    `answer(task)` for each task received until told to stop (None) or the parent is gone."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C goes to the whole group; the parent decides
    share_cores(slot, workers)
    try:
        init()
    except BaseException as exc:  # report instead of dying silently; the parent decides what follows
        conn.send(("init_failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            task = conn.recv()
        except EOFError:    # the parent is gone
            return
        if task is None:
            return
        conn.send(answer(task))


def worker_main(conn: Connection, options: WorkerOptions, slot: int, workers: int, parent_pid: int) -> None:
    """A batch worker: load the models, then answer each task with its rows until told to stop."""
    worker_loop(conn, slot, workers, parent_pid, lambda: init_worker(options),
                lambda task: ("rows", task, run_task(task)))


@dataclass
class Worker:
    slot: int
    process: Any                 # multiprocessing.Process (spawn context)
    conn: Connection
    ready: bool = False
    task: Task | None = None


OOM_HINT = "SIGKILL is often the out-of-memory killer: try fewer --workers"


def describe_exit(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


RowsSink = Callable[[Task, list[dict[str, Any]]], None]


class CrashPolicy:
    """What a pool (local processes here, Ray actors in app/batch/ray_pool.py) does with the document of a
    worker that died: put it back once, then give it a WorkerCrashed row; and how a retried document's
    rows say so. A pool sets `size`, `sink`, `startup_failures` and `retried`."""
    size: int
    sink: RowsSink
    startup_failures: int
    retried: dict[Task, str]      # task -> why its first attempt ended

    def _lost(self, task: Task | None, ready: bool, how: str, what: str,
              pending: collections.deque[Task]) -> None:
        """A worker (`what`: "worker processes", "Ray actors") died holding `task` (None: between tasks)."""
        if task is None and not ready:
            self.startup_failures += 1
            if self.startup_failures > self.size + 2:
                raise WorkersFailedToStart(f"{what} keep dying before taking a document; the last: {how}")
        elif task is None:
            pass                       # died between documents: nothing lost, a replacement follows
        elif task in self.retried:
            row = error_row(*task, "WorkerCrashed",
                            f"this document stopped a worker twice: first {self.retried[task]}, then {how}"
                            + (f" ({OOM_HINT})" if "SIGKILL" in self.retried[task] + how else ""))
            row.update(part=1, parts=1, attempt=MAX_ATTEMPTS)
            self.sink(task, [row])
        else:
            self.retried[task] = how
            pending.appendleft(task)
            hint = f" ({OOM_HINT})" if "SIGKILL" in how else ""
            print(f"[batch] {how}{hint} while reading '{terminal_text(task[0])}'; trying that document once more",
                  file=sys.stderr)

    def _mark_retry(self, task: Task, result: Any) -> list[dict[str, Any]]:
        """The rows of `task`; a document on its second attempt says why the first one ended."""
        rows = [result] if isinstance(result, dict) else list(result)
        why = self.retried.get(task)
        if why:
            for row in rows:
                row["attempt"] = MAX_ATTEMPTS
                row["retried_because"] = why
        return rows


class WorkerPool(CrashPolicy):
    """N spawned workers, one task each at a time; see the module docstring."""

    def __init__(self, options: WorkerOptions, workers: int, sink: RowsSink) -> None:
        self.options = options
        self.size = workers
        self.sink = sink
        self.context = multiprocessing.get_context("spawn")   # fork would copy Paddle's threads and state
        self.workers: list[Worker] = []
        self.startup_failures = 0
        self.retried: dict[Task, str] = {}    # task -> why its first attempt ended
        self.ready_at: list[float] = []       # perf_counter() when each worker first said it was ready

    def _start(self, slot: int) -> Worker:
        parent_conn, child_conn = self.context.Pipe(duplex=True)
        process = self.context.Process(target=worker_main, name=f"batch-worker-{slot}", daemon=True,
                                       args=(child_conn, self.options, slot, self.size, os.getpid()))
        process.start()
        child_conn.close()       # so the parent sees EOF on its end when the worker dies
        worker = Worker(slot, process, parent_conn)
        self.workers.append(worker)
        return worker

    def run(self, tasks: list[Task]) -> None:
        pending: collections.deque[Task] = collections.deque(tasks)
        try:
            for slot in range(min(self.size, len(tasks))):
                self._start(slot)
            while pending or any(w.task is not None for w in self.workers):
                for worker in self.workers:
                    if worker.ready and worker.task is None and pending:
                        worker.task = pending.popleft()
                        worker.conn.send(worker.task)
                if not self.workers:
                    raise WorkersFailedToStart("no worker process is left to run the remaining documents")
                waitables: list[Any] = [w.conn for w in self.workers] + [w.process.sentinel for w in self.workers]
                ready = set(wait(waitables))
                for worker in list(self.workers):
                    if worker.conn in ready or worker.process.sentinel in ready:
                        if not self._drain(worker):
                            self._buried(worker, pending)
        finally:
            self.stop()

    def _drain(self, worker: Worker) -> bool:
        """Handle every message the worker has sent; False when it is dead.

        Only the pipe's own errors mean a dead worker. What the sink raises (ResultsWriteError: a full
        disk) goes up and stops the batch: taken for a death, it dropped the document whose rows could
        not be written, since the worker no longer held a task, and the batch reported success."""
        while True:
            try:
                if not worker.conn.poll():
                    break
                message = worker.conn.recv()
            except (EOFError, OSError):
                return False
            if message[0] == "ready":
                worker.ready = True
                if len(self.ready_at) < self.size:
                    self.ready_at.append(time.perf_counter())
            elif message[0] == "rows":
                task = worker.task
                worker.task = None
                if task is not None:
                    self.sink(task, self._mark_retry(task, message[2]))
            elif message[0] == "init_failed":
                raise WorkersFailedToStart(f"a worker could not load the models: {message[1]}")
        return worker.process.is_alive() or worker.process.exitcode is None

    def _buried(self, worker: Worker, pending: collections.deque[Task]) -> None:
        """A worker died: put its document back once, or record it as the cause; start a replacement."""
        worker.process.join(timeout=STOP_GRACE_SECONDS)
        worker.conn.close()
        self.workers.remove(worker)
        how = f"worker process {worker.process.pid} {describe_exit(worker.process.exitcode)}"
        self._lost(worker.task, worker.ready, how, "worker processes", pending)
        busy = sum(w.task is not None for w in self.workers)
        if pending and len(self.workers) < min(self.size, len(pending) + busy):
            self._start(worker.slot)

    def stop(self) -> None:
        """Ask every worker to finish, then make sure none is left running."""
        for worker in self.workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for worker in self.workers:
            if worker.task is not None:   # interrupted mid-document: no need to wait for it
                worker.process.terminate()
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self.workers.clear()
