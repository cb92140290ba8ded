"""`python -m app.batch.ray_reaper RAYLET_PID`: ends the Ray helper processes that a killed batch left.

A batch that starts its own local Ray instance (`batch --ray` without an address, app/batch/ray_pool.py)
owns its GCS server, raylet and helpers. On an ordinary end, or Ctrl-C, `ray.shutdown()` stops them all.
When the batch process is killed (kill -9, the out-of-memory killer), Ray's own fate sharing ends the GCS
server, the raylet and the Python helpers it started (they get SIGKILL when their parent dies), and the
actors notice their raylet is gone; but the raylet's two agents (ray::DashboardAgent,
ray::RuntimeEnvAgent) see the raylet die and then try to report that to the dead GCS server with a
60-second timeout, so they stayed over a minute.

RayPool starts this watchdog right after it started the instance, in a session of its own (so a Ctrl-C
or a closed terminal does not end it first), with a pipe on stdin whose other end only the batch process
holds. While it waits it notes, every POLL_SECONDS, the processes the raylet started and their
descendants (pid and start time: once the raylet is gone they are the init process's children, and
their environment, where Ray writes RAY_RAYLET_PID, is overwritten by their process titles). The pipe
reaches end-of-file when the batch closes it after `ray.shutdown()` or when the batch dies in any way;
then each noted process still running (same pid, same start time) gets SIGTERM, and SIGKILL after a
grace (the agents ignore SIGTERM while they wait for the GCS). It imports only the standard library
(and the `app` package, which loads nothing), so it starts in a fraction of a second and holds a few MB.
Linux only (/proc); elsewhere RayPool does not start it.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import time

GRACE_SECONDS = 2.0
POLL_SECONDS = 1.0

Noted = dict[int, str]       # pid -> start time (field 22 of /proc/PID/stat), which tells a reused pid apart


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a running process, or None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == "Z":
        return None
    return int(fields[1]), fields[19]


def descendants(root: int) -> Noted:
    """Every running process below `root` (its children, theirs, ...)."""
    children: dict[int, list[int]] = {}
    started: Noted = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = _stat(int(name))
            if info is not None:
                children.setdefault(info[0], []).append(int(name))
                started[int(name)] = info[1]
    found: Noted = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found and pid in started:
            found[pid] = started[pid]
            todo.extend(children.get(pid, []))
    return found


def alive(noted: Noted) -> list[int]:
    """The noted processes that still run as the same process."""
    left = []
    for pid, started in noted.items():
        info = _stat(pid)
        if info is not None and info[1] == started:
            left.append(pid)
    return left


def reap(noted: Noted, grace: float = GRACE_SECONDS) -> list[int]:
    """SIGTERM the noted processes still running, SIGKILL those left after `grace` s; returns the pids
    that were running."""
    running = alive(noted)
    for pid in running:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while alive(noted) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in alive(noted):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return running


def main(argv: list[str]) -> int:
    raylet_pid = int(argv[0])
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)     # the batch's Ctrl-C is the batch's to handle
    noted: Noted = {}
    raylet = _stat(raylet_pid)
    if raylet is not None:
        noted[raylet_pid] = raylet[1]
    stdin = sys.stdin.buffer
    while True:
        if raylet is not None and _stat(raylet_pid) == raylet:     # the same raylet, still running
            noted.update(descendants(raylet_pid))
        ready, _, _ = select.select([stdin], [], [], POLL_SECONDS)
        if ready and not os.read(stdin.fileno(), 4096):
            break                               # end-of-file: the batch closed the pipe or died
    reap(noted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
