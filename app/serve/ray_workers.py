"""`piaoju serve --ray [ADDRESS]`: the same HTTP API with its model workers as Ray actors on a cluster.

Only the workers move. The API, the job store (SQLite and the uploads, on the server's disk), the fair
queue, the keys and the metrics stay in the server process, so accepted-means-kept, 429 and restarts
after kill -9 are exactly the local mode's. Each slot of the pool (app/serve/workers.py) owns one actor
(`ServeActor`, one CPU, models loaded once) instead of one process; the server reads the upload and ships
its bytes with the job, so nodes need no shared disk (a model named by a request is loaded from the
same path on the actor's node: keep model folders at one path on every node, as for `batch --ray`).

Ray is started or joined as `batch --ray` does it (app/batch/ray_pool.join_ray: no ADDRESS starts
a loopback-only instance on this machine that ends with the server, a watchdog included; "auto" or
HOST:PORT joins a cluster). Failures keep the local mode's rules: actors are made with max_restarts=0
and max_task_retries=0; an actor that dies reading a job (RayActorError: killed, out of memory, its
node lost) costs that job one attempt and a fresh actor takes the slot; a job past --job-timeout or
cancelled has its actor killed. Progress is reported when the job ends (an actor reads one document at
a time and answers nothing in between).

This is Ray actors, not Ray Serve: Ray Serve's HTTP proxy and replicas would need `ray[serve]` (grpcio
and its controller), and would take the queue and the job store out of this process, where the
guarantees above live.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

from app.batch.ray_pool import (  # noqa: F401  (RaySetupError: for app/serve/command.py)
    LOCAL,
    RaySettings,
    RaySetupError,
    cluster_size,
    death_reason,
    join_ray,
    leave_ray,
)
from app.serve.jobs import Job
from app.serve.workers import READY_TIMEOUT, Task, _Slot, run_task


class ServeActor:
    """A Ray actor: the models loaded once, then one upload at a time. A plain class made remote by
    RayCluster, so importing this module needs no Ray."""

    def __init__(self, model_dir: str | None) -> None:
        self.node = socket.gethostname()
        self.failure: str | None = None
        try:
            from reading.route import warm_up
            warm_up(model_dir)
        except BaseException as exc:  # report it through ready(); the slot retries later
            self.failure = f"{type(exc).__name__}: {exc}"

    def ready(self) -> tuple[str, Any, str]:
        if self.failure is not None:
            return "init_failed", self.failure, self.node
        return "ready", os.getpid(), self.node

    def read(self, task: Task, data: bytes) -> tuple[str, str, Any]:
        return run_task(task, lambda done, total: None, data)


class RayCluster:
    """Ray started or joined for the server (`connect()` raises RaySetupError with what to do);
    `close()` ends an instance started here."""

    def __init__(self, address: str = LOCAL) -> None:
        self.address = address
        self.ray: Any = None
        self.actor_class: Any = None
        self.started_here = False
        self.reaper: Any = None

    def connect(self) -> str:
        """Start or join Ray; returns a line saying what it found."""
        started = time.perf_counter()
        self.ray, self.started_here, self.reaper = join_ray(RaySettings(address=self.address))
        self.actor_class = self.ray.remote(ServeActor)
        _, cluster = cluster_size(self.ray)
        return f"Ray ({self.address}): {cluster}, connected in {time.perf_counter() - started:.1f} s"

    def close(self) -> None:
        leave_ray(self.ray, self.started_here, self.reaper)
        self.started_here, self.reaper = False, None


class RaySlot(_Slot):
    """A slot of ServicePool whose worker is a ServeActor (see the module docstring)."""
    progress_with_answer = True

    def __init__(self, pool: Any, index: int) -> None:
        super().__init__(pool, index)
        self.actor: Any = None
        self.node = "?"

    @property
    def cluster(self) -> RayCluster:
        return self.pool.ray

    def start_worker(self) -> bool:
        ray = self.cluster.ray
        self.actor = self.cluster.actor_class.options(num_cpus=1, max_restarts=0, max_task_retries=0).remote(
            self.pool.warm_model)
        ref = self.actor.ready.remote()
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.pool.stopping.is_set() and time.monotonic() < deadline:
            done, _ = ray.wait([ref], timeout=1.0)
            if not done:
                continue
            try:
                state, info, self.node = ray.get(ref)
            except Exception as exc:       # the actor died while loading
                state, info = "init_failed", death_reason(exc)
            if state == "ready":
                self.ready = True
                return True
            print(f"[serve] Ray worker {self.index} could not load the models: {info}", file=sys.stderr)
            break
        else:
            if not self.pool.stopping.is_set():
                print(f"[serve] Ray worker {self.index} did not load the models in {READY_TIMEOUT:.0f} s (a full "
                      "cluster?)", file=sys.stderr)
        self.stop_worker(kill=True)
        return False

    def stop_worker(self, kill: bool = False) -> None:
        self.ready = False
        if self.actor is not None:
            try:
                self.cluster.ray.kill(self.actor, no_restart=True)
            except Exception:
                pass
            self.actor = None

    def run(self, job: Job) -> None:
        pool, ray = self.pool, self.cluster.ray
        assert self.actor is not None
        started = time.monotonic()
        task = Task(job.id, "", job.filename, job.model_dir, job.doc_type)
        with open(pool.store.upload_path(job.id), "rb") as fh:
            ref = self.actor.read.remote(task, fh.read())     # the bytes travel: no shared disk needed
        deadline = started + pool.job_timeout
        while True:
            done, _ = ray.wait([ref], timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            if done:
                try:
                    message = ray.get(ref)
                except Exception as exc:
                    how = f"Ray worker {self.index} on {self.node}: {death_reason(exc)}"
                    self.stop_worker(kill=True)
                    if _actor_died(exc):
                        self.crashed(job, how)
                    else:
                        pool.finish(job, "failed", error={"type": type(exc).__name__, "message": how})
                    return
                self.answered(job, message, time.monotonic() - started)
                return
            if self.interrupted(job):
                return
            if time.monotonic() >= deadline:
                self.stop_worker(kill=True)
                self.timed_out(job)
                return


def _actor_died(exc: BaseException) -> bool:
    from ray.exceptions import RayActorError
    return isinstance(exc, RayActorError)
