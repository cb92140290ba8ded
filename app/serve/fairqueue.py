"""The bounded queue of accepted jobs, served round-robin across clients (API keys).

Bounded: `put` refuses a job when `limit` jobs already wait (the API answers 429 with Retry-After), so
a burst costs the server neither memory nor disk without bound. Fair: each client has its own FIFO
line and the workers take one job from each client in turn, so one client posting a hundred files does
not make another's single file wait behind all of them. Jobs recovered after a restart are put back
with `force`: they were accepted, so they are never refused.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable


class QueueFull(RuntimeError):
    pass


class FairQueue:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lines: collections.OrderedDict[str, collections.deque[str]] = collections.OrderedDict()
        self._cond = threading.Condition()
        self._size = 0

    def __len__(self) -> int:
        with self._cond:
            return self._size

    def put(self, job_id: str, client: str, *, force: bool = False, front: bool = False) -> None:
        """Add a job to its client's line (at its head with `front`: a retry keeps its turn); QueueFull when
        `limit` jobs wait already, unless `force`."""
        with self._cond:
            if not force and self._size >= self.limit:
                raise QueueFull(f"{self._size} documents are waiting already")
            line = self._lines.setdefault(client, collections.deque())
            if front:
                line.appendleft(job_id)
            else:
                line.append(job_id)
            self._size += 1
            self._cond.notify()

    def reserve(self, client: str, job_id: str, add: Callable[[], object]) -> None:
        """Check there is room, run `add` (which makes the job accepted), then queue it, all under the lock
        so two requests cannot both take the last place."""
        with self._cond:
            if self._size >= self.limit:
                raise QueueFull(f"{self._size} documents are waiting already")
            add()
            self.put(job_id, client, force=True)

    def get(self, timeout: float | None = None) -> str | None:
        """The next job, from the client after the one served last; None after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._size == 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            client, line = next(iter(self._lines.items()))
            job_id = line.popleft()
            self._size -= 1
            del self._lines[client]
            if line:
                self._lines[client] = line        # to the back: the next client has the next turn
            return job_id

    def remove(self, job_id: str) -> bool:
        """Take a waiting job out (cancelled); False when it is not waiting."""
        with self._cond:
            for client, line in self._lines.items():
                if job_id in line:
                    line.remove(job_id)
                    self._size -= 1
                    if not line:
                        del self._lines[client]
                    return True
            return False

    def wake_all(self) -> None:
        with self._cond:
            self._cond.notify_all()
