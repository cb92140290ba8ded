"""`python -m app batch IN... --out results.jsonl --ray [ADDRESS]`: the same batch on a Ray cluster.

`RayPool` has WorkerPool's interface (options, workers, sink; `run(tasks)`), so app/batch/command.py keeps one
loop for both: planning, resume by (path, SHA-256), the append-only results file, the CSV, the progress
bar and the summary are the local mode's, and only the driver (the process that runs the command) writes.

What runs where:
- Each actor (`BatchActor`, one CPU each, one per CPU of the cluster unless --workers says otherwise)
  loads OCR and the extractor once, through the same `init_worker` as a local worker process, and
  turns one file at a time into rows with the same `run_task`.
- By default the driver reads each file and ships its bytes with the task, so nodes need no shared
  disk: the actor writes them to a private scratch folder under the file's own name, processes that
  copy, and puts the driver's path back into the rows ("file" and any message that named the copy),
  so rows equal the local mode's. With --shared-input the path is sent instead, for a mount every node
  reads at the same path. --draw overlays come back as PNG bytes and the driver writes them.
- The driver keeps one task per actor in flight. That bounds what it holds in memory (one file's
  bytes per actor, however many files are named) and lets a new actor, or one the autoscaler adds,
  take work as soon as it is ready. Ray's per-task overhead (~ms) is small next to a document's
  seconds of OCR, so queueing a second task per actor would gain little and would blur which document
  killed an actor.

Failures, and the Ray settings chosen for them: actors are created with `max_restarts=0` and
`max_task_retries=0`, and the driver does the retrying, as WorkerPool does for processes. Ray's own
task retries are invisible to the caller: the row could not say it was retried and why, and a document
that kills every process reading it would take the restarted actor down again. Here, when an actor
dies (`RayActorError`: killed, out of memory, its node lost), its document is retried once on another
actor (the row gets `attempt: 2` and `retried_because`), a second death gives a `WorkerCrashed` error
row, and a fresh actor takes the dead one's place (Ray places it wherever a CPU is free, another node
if this one is gone). Actors that die or fail before taking any document stop the batch with
WorkersFailedToStart, charging no document. The driver's own death (kill -9) loses nothing: rows are
written only by the driver, one fsynced group per file, and a rerun resumes from the results file; Ray
ends the actors of a driver that is gone. A local instance the driver started goes with it: Ray's fate
sharing ends its GCS server and raylet, and a small watchdog (app/batch/ray_reaper.py, started beside the
instance) ends the raylet's agents, which otherwise stayed for a minute trying to reach the dead GCS.

Nothing here imports Ray at module level: `ray` is imported when the pool connects, so the local mode
never loads it (and a local instance can be told to stay on the loopback interface before it loads).
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.batch.pool import CrashPolicy, RowsSink, WorkersFailedToStart
from app.batch.worker import Task, WorkerOptions, error_row, init_worker, run_task, share_cores

LOCAL = "local"              # --ray without ADDRESS: a Ray instance on this machine only
WAIT_NOTICE_SECONDS = 30.0   # say so when no actor is ready after this long (a full cluster, an autoscaler)
STOP_GRACE_SECONDS = 5.0
PROBE_SECONDS = 10.0
REAPER_WAIT_SECONDS = 10.0
PACKAGE_ROOT = Path(__file__).resolve().parents[2]    # the folder holding the `app` package


class RaySetupError(RuntimeError):
    """Ray cannot be started or reached (a wrong ADDRESS, no cluster at `auto`, Ray not installed)."""


@dataclass(frozen=True)
class RaySettings:
    address: str = LOCAL          # as ray.init takes it ("auto", "HOST:PORT", "ray://HOST:10001"); LOCAL starts one
    shared_input: bool = False    # actors open input paths themselves (every node mounts them at the same path)
    num_cpus: int | None = None   # CPUs of a LOCAL instance (None: this machine's)


# --- the actor ------------------------------------------------------------------------------------------

def _swap_text(value: Any, old: str, new: str) -> Any:
    """`value` with `old` replaced by `new` in every string inside it (dict keys too)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {_swap_text(k, old, new): _swap_text(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_text(v, old, new) for v in value]
    return value


SCRATCH_PREFIX = "piaoju-ray-"


def _remove_orphan_scratch() -> None:
    """Remove the scratch folders of actors that are gone: one killed mid-document (out of memory, the
    end of its batch) had no chance to remove its own, with that document's bytes in it."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        if not name.startswith(SCRATCH_PREFIX):
            continue
        try:
            pid = int(name[len(SCRATCH_PREFIX):].split("-", 1)[0])
            os.kill(pid, 0)
        except ValueError:
            continue
        except ProcessLookupError:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except OSError:       # alive, another user's
            continue


def _take_a_core() -> Any:
    """Pin this actor to a core of its own on its node, as local workers are (share_cores): OCR threads
    of several actors on one core made two workers slower than one. Actors on a node do not know each
    other, so each claims the first free core by an exclusive lock on a per-core file, held for the
    process's life (the kernel releases it when the actor dies). Returns the open lock file, or None
    when no core is free (more actors than cores) or there are no locks: then the OS schedules."""
    try:
        import fcntl
        cores = sorted(os.sched_getaffinity(0))
    except (ImportError, AttributeError):
        return None
    for slot in range(len(cores)):
        try:
            handle = open(os.path.join(tempfile.gettempdir(), f"piaoju-core-{slot}.lock"), "a")
        except OSError:       # another user's lock file: that core is theirs to claim
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        share_cores(slot, len(cores))
        return handle
    return None


class BatchActor:
    """A Ray actor: the models loaded once, then one file at a time (see the module docstring).

    Defined as a plain class and made remote by RayPool, so importing this module needs no Ray."""

    def __init__(self, options: WorkerOptions) -> None:
        self.core_lock = _take_a_core()
        _remove_orphan_scratch()
        self.scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        self.draw_target = options.draw_dir           # the driver's folder; overlays go back as bytes
        self.draw_dir = os.path.join(self.scratch, "draw") if options.draw_dir else None
        self.node = socket.gethostname()
        self.failure: str | None = None
        try:
            init_worker(replace(options, draw_dir=self.draw_dir))
        except BaseException as exc:  # report it through ready(); the driver stops the batch
            self.failure = f"{type(exc).__name__}: {exc}"

    def ready(self) -> tuple[str, Any, str]:
        """("ready", pid, node) once the models are loaded, or ("init_failed", message, node)."""
        if self.failure is not None:
            return "init_failed", self.failure, self.node
        return "ready", os.getpid(), self.node

    def run(self, task: Task, data: bytes | None) -> tuple[list[dict[str, Any]], dict[str, bytes], float]:
        """The file's rows, its overlays (name -> PNG bytes) and the seconds spent on it here.

        `data` is the file's bytes (None: open the path itself, --shared-input)."""
        path, sha256 = task
        local, folder = path, None
        if data is not None:
            folder = tempfile.mkdtemp(dir=self.scratch)
            local = os.path.join(folder, os.path.basename(path))   # same name: same suffix, same messages
            with open(local, "wb") as fh:
                fh.write(data)
        started = time.perf_counter()
        try:
            rows = run_task((local, sha256))
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        busy = time.perf_counter() - started
        overlays: dict[str, bytes] = {}
        fixed = []
        for row in rows:
            if local != path:
                row = _swap_text(row, local, path)
            drawn = row.pop("overlays", None)
            if drawn and self.draw_target:
                row["overlays"] = []
                for written in drawn:
                    name = os.path.basename(written)
                    with open(written, "rb") as fh:
                        overlays[name] = fh.read()
                    os.unlink(written)
                    row["overlays"].append(os.path.join(self.draw_target, name))
            row["worker_node"] = self.node
            fixed.append(row)
        return fixed, overlays, busy

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


# --- the driver's side ------------------------------------------------------------------------------------

@dataclass
class _Actor:
    slot: int
    handle: Any
    ready_ref: Any                # ObjectRef of ready(), until it answers
    ready: bool = False
    pid: int | None = None
    node: str = "?"
    task: Task | None = None
    ref: Any = None               # ObjectRef of the run() in flight
    sent: float = 0.0


def death_reason(exc: BaseException) -> str:
    """Ray's long actor-death message cut to what says why: its "The actor ... because" sentence, the
    worker's exit detail, and the error a creation task raised (e.g. ModuleNotFoundError on a node
    without the product installed)."""
    text = str(exc)
    found = re.search(r"(The actor (?:is dead|died) because [^\n]*?)(?:\. |\.?\n|\.?$)", text)
    reason = found.group(1) if found else " ".join(text.split()).split(". ")[0]
    detail = re.search(r"Worker exit detail: (.*?)(?:\. |\.?\n|\.?$)", text)
    if detail:
        reason += f" ({detail.group(1)})"
    raised = re.findall(r"^\s*(\w+(?:Error|Exception): .+)$", text, re.M)
    if raised and raised[-1].strip() not in reason:
        reason += f": {raised[-1].strip()}"
    return reason[:400]


def _probe(address: str) -> None:
    """Fail in seconds on a HOST:PORT (or ray://HOST:PORT) where nothing listens: ray.init would keep
    retrying such an address for minutes before it gives up."""
    found = re.fullmatch(r"(?:ray://)?\[?([^\[\]/]+?)\]?:(\d+)", address.strip())
    if not found:
        return                     # "local", "auto": Ray finds the cluster itself
    host, port = found.group(1), int(found.group(2))
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as exc:
        raise RaySetupError(f"nothing answers at {address} ({exc.strerror or exc}): is the head node up "
                            "(`ray start --head` there) and its port reachable from here?") from None


def _local_raylet_pid() -> int | None:
    """The pid of the raylet this process started (a child named "raylet"), or None (no /proc, none)."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        comm, rest = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:].split()
        if comm == "raylet" and len(rest) > 1 and rest[1] == str(me):
            return int(name)
    return None


def _start_reaper() -> subprocess.Popen[bytes] | None:
    """The watchdog that ends this driver's local Ray instance when the driver dies (app/batch/ray_reaper.py);
    None where it cannot run (no /proc, the raylet not found): then Ray's own clean-up is all there is."""
    raylet = _local_raylet_pid()
    if raylet is None:
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", "app.batch.ray_reaper", str(raylet)], cwd=PACKAGE_ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError:
        return None


def join_ray(settings: RaySettings) -> tuple[Any, bool, subprocess.Popen[bytes] | None]:
    """Start or join Ray as `settings` say: (the ray module, whether this process started the instance, the
    watchdog of a local instance started here or None). Raises RaySetupError with what to do. Used by
    `batch --ray` (RayPool) and `serve --ray` (app/serve/ray_workers.py); `leave_ray` undoes it."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")   # no usage reports from a batch of invoices
    if settings.address == LOCAL and "ray" not in sys.modules:
        # a single-machine instance listens on the loopback interface only (Ray otherwise binds
        # its ports to the LAN address); read by Ray when it is imported
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_AUTH_MODE", "token")   # Ray's default for a new instance, said without a warning
    try:
        import ray
    except ImportError as exc:
        raise RaySetupError(f"--ray needs the ray package ({exc}); install requirements.txt") from None
    if ray.is_initialized():
        return ray, False, None
    _probe(settings.address)
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING", "configure_logging": True}
    if settings.address == LOCAL:
        kwargs.update(num_cpus=settings.num_cpus, include_dashboard=False)
    try:
        ray.init(address=settings.address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        why = " ".join(str(exc).split())[:400].rstrip(".")
        raise RaySetupError(
            f"cannot start or reach Ray at {settings.address!r}: {why}. "
            "Start a cluster with `ray start --head` (then `--ray auto` on that machine, or "
            "`--ray HEAD_IP:6379`), or give --ray no ADDRESS for a Ray instance on this machine; "
            "--ray takes an optional value, so put it after the IN arguments or write --ray=ADDRESS"
        ) from None
    return ray, True, _start_reaper() if settings.address == LOCAL else None


def leave_ray(ray: Any, started_here: bool, reaper: subprocess.Popen[bytes] | None) -> None:
    """End the Ray instance when this process started it, and its watchdog."""
    if ray is not None and started_here:
        ray.shutdown()
    if reaper is not None:       # end-of-file: it ends whatever of the instance is left, then exits
        assert reaper.stdin is not None
        reaper.stdin.close()
        try:
            reaper.wait(timeout=REAPER_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait()


def cluster_size(ray: Any) -> tuple[float, str]:
    """The cluster's CPUs, and a line naming its live nodes and CPUs."""
    cpus = ray.cluster_resources().get("CPU", 0)
    nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
    return cpus, f"{nodes} node{'s' if nodes != 1 else ''}, {cpus:g} CPUs"


def write_overlay(folder: str, name: str, data: bytes) -> None:
    """An overlay the actor drew, written by the driver through a temp file and a rename."""
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, name)
    tmp = os.path.join(folder, f".{name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)


class RayPool(CrashPolicy):
    """WorkerPool's interface on Ray actors; see the module docstring. `connect()` first, `close()` always."""

    def __init__(self, options: WorkerOptions, workers: int | None, sink: RowsSink,
                 settings: RaySettings | None = None) -> None:
        self.options = options
        self.requested = workers
        self.size = workers or 1
        self.sink = sink
        self.settings = settings or RaySettings()
        self.ray: Any = None
        self.remote_class: Any = None
        self.started_here = False
        self.reaper: subprocess.Popen[bytes] | None = None   # watchdog of a local instance started here
        self.actors: list[_Actor] = []
        self.startup_failures = 0
        self.retried: dict[Task, str] = {}
        self.overhead_s = 0.0     # driver round trip minus the actor's own time, summed over documents
        self.documents = 0        # files that came back from an actor
        self.connect_s = 0.0
        self.cluster = ""

    def connect(self) -> None:
        """Start or join Ray (raises RaySetupError with what to do) and size the pool."""
        started = time.perf_counter()
        self.ray, self.started_here, self.reaper = join_ray(self.settings)
        ray = self.ray
        self.remote_class = ray.remote(BatchActor)
        cpus, self.cluster = cluster_size(ray)
        self.size = self.requested or max(1, int(cpus))
        self.connect_s = time.perf_counter() - started
        if self.size > cpus:
            print(f"[batch] Ray: {self.size} actors asked for, the cluster has {cpus:g} CPUs now; the others "
                  "start when CPUs are added (an autoscaler) or freed", file=sys.stderr)

    def _start(self, slot: int) -> _Actor:
        handle = self.remote_class.options(num_cpus=1, max_restarts=0, max_task_retries=0,
                                           name=None).remote(self.options)
        actor = _Actor(slot, handle, handle.ready.remote())
        self.actors.append(actor)
        return actor

    def _submit(self, actor: _Actor, task: Task) -> bool:
        """Send `task` to `actor`; False when the driver cannot read the file (its error row is written)."""
        data = None
        if not self.settings.shared_input:
            try:
                with open(task[0], "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                row = error_row(*task, "UnreadableFile", f"cannot read {task[0]}: {exc.strerror or exc}; "
                                "check it exists and is readable")
                self.sink(task, [row])
                return False
        actor.task, actor.sent = task, time.perf_counter()
        actor.ref = actor.handle.run.remote(task, data)
        return True

    def run(self, tasks: list[Task]) -> None:
        if not tasks:
            return
        if self.ray is None:
            self.connect()
        ray = self.ray
        pending: collections.deque[Task] = collections.deque(tasks)
        waited_since = time.perf_counter()
        noticed = False
        try:
            for slot in range(min(self.size, len(tasks))):
                self._start(slot)
            while pending or any(a.task is not None for a in self.actors):
                for actor in self.actors:
                    while actor.ready and actor.task is None and pending:
                        self._submit(actor, pending.popleft())
                if not self.actors:
                    raise WorkersFailedToStart("no Ray actor is left to run the remaining documents")
                refs = [a.ref if a.task is not None else a.ready_ref for a in self.actors
                        if a.task is not None or not a.ready]
                if not refs:
                    continue       # the last pending files were unreadable on the driver
                done, _ = ray.wait(refs, num_returns=1, timeout=WAIT_NOTICE_SECONDS)
                if not done:
                    if not noticed and not any(a.ready for a in self.actors):
                        noticed = True
                        print(f"[batch] Ray: no actor ready after {time.perf_counter() - waited_since:.0f} s; "
                              f"waiting for CPUs on the cluster ({self.cluster})", file=sys.stderr)
                    continue
                for ref in done:
                    actor = next(a for a in self.actors
                                 if (a.task is not None and a.ref is ref) or (a.task is None and a.ready_ref is ref))
                    if actor.task is None:
                        self._answer_ready(actor, pending)
                    else:
                        self._answer_task(actor, pending)
        finally:
            self.stop()

    def _answer_ready(self, actor: _Actor, pending: collections.deque[Task]) -> None:
        try:
            state, info, node = self.ray.get(actor.ready_ref)
        except self.ray.exceptions.RayError as exc:
            self._buried(actor, pending, exc)
            return
        if state == "init_failed":
            raise WorkersFailedToStart(f"a worker could not load the models: {info} (on {node})")
        actor.ready, actor.pid, actor.node = True, int(info), node

    def _answer_task(self, actor: _Actor, pending: collections.deque[Task]) -> None:
        ray = self.ray
        task = actor.task
        assert task is not None
        try:
            rows, overlays, busy = ray.get(actor.ref)
        except ray.exceptions.RayTaskError as exc:     # run() itself failed (run_task catches the pipeline's errors)
            cause = getattr(exc, "cause", None) or exc
            rows = [error_row(*task, type(cause).__name__, f"{cause} (internal error in the Ray actor)")]
            overlays, busy = {}, 0.0
        except ray.exceptions.RayError as exc:    # the actor, its node or its result is gone (OOM, kill, network)
            self._buried(actor, pending, exc)
            return
        actor.task, actor.ref = None, None
        self.overhead_s += max(0.0, time.perf_counter() - actor.sent - busy)
        self.documents += 1
        for name, data in overlays.items():
            try:
                write_overlay(self.options.draw_dir or ".", name, data)
            except OSError as exc:
                for row in rows:
                    row["warnings"] = list(row.get("warnings") or []) + [f"overlay {name} not written: {exc}"]
        self.sink(task, self._mark_retry(task, rows))

    def _buried(self, actor: _Actor, pending: collections.deque[Task], exc: BaseException) -> None:
        """An actor died: put its document back once, or record it as the cause; start a replacement."""
        self.actors.remove(actor)
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception:
            pass
        where = f"pid {actor.pid} on {actor.node}" if actor.pid else "starting"
        how = f"Ray actor ({where}) died: {death_reason(exc)}"
        self._lost(actor.task, actor.ready, how, "Ray actors", pending)
        busy = sum(a.task is not None for a in self.actors)
        if pending and len(self.actors) < min(self.size, len(pending) + busy):
            self._start(actor.slot)

    def stop(self) -> None:
        """Let idle actors remove their scratch folders, then end every actor of this batch."""
        if self.ray is None:
            return
        idle = [a.handle.close.remote() for a in self.actors if a.ready and a.task is None]
        if idle:
            try:
                self.ray.wait(idle, num_returns=len(idle), timeout=STOP_GRACE_SECONDS)
            except Exception:
                pass
        for actor in self.actors:
            try:
                self.ray.kill(actor.handle, no_restart=True)
            except Exception:
                pass
        self.actors.clear()

    def close(self) -> None:
        """End the actors, and the Ray instance when this batch started it."""
        self.stop()
        leave_ray(self.ray, self.started_here, self.reaper)
        self.started_here, self.reaper = False, None

    def describe(self) -> str:
        per_doc = self.overhead_s / self.documents if self.documents else 0.0
        return (f"Ray ({self.settings.address}): {self.size} actors, {self.cluster}; connected in "
                f"{self.connect_s:.1f} s; {per_doc * 1000:.0f} ms per document outside the actors "
                "(shipping, scheduling, results)")
