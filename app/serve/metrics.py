"""Prometheus text exposition (format 0.0.4) for GET /metrics, written by hand: a handful of counters,
one latency histogram and a few gauges do not need a client library.

    piaoju_http_requests_total{route,method,status}       requests answered
    piaoju_http_request_duration_seconds{route}            latency histogram (the whole request: a
                                                           synchronous POST includes its document's reading)
    piaoju_jobs_queued / piaoju_jobs_running               queue depth and documents being read now
    piaoju_jobs_finished_total{state}                      done, failed, cancelled
    piaoju_pages_read_total                                pages of finished jobs
    piaoju_job_seconds_sum / _count                        worker time per job (the mean feeds Retry-After)
    piaoju_workers_ready                                   worker processes with their models loaded
"""
from __future__ import annotations

import bisect
import collections
import threading
from typing import Callable

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


def _labels(**kw: str) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in kw.items()) + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: collections.Counter[tuple[str, str, str]] = collections.Counter()
        self.latency: dict[str, list[int]] = {}          # route -> per-bucket counts (+Inf last)
        self.latency_sum: dict[str, float] = collections.defaultdict(float)
        self.finished: collections.Counter[str] = collections.Counter()
        self.pages = 0
        self.job_seconds = 0.0
        self.jobs_timed = 0
        self.gauges: dict[str, Callable[[], float]] = {}

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(route, method, str(status))] += 1
            counts = self.latency.setdefault(route, [0] * (len(BUCKETS) + 1))
            counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            self.latency_sum[route] += seconds

    def job_finished(self, state: str, pages: int, seconds: float | None) -> None:
        with self._lock:
            self.finished[state] += 1
            self.pages += pages
            if seconds is not None:
                self.job_seconds += seconds
                self.jobs_timed += 1

    def mean_job_seconds(self, default: float = 5.0) -> float:
        with self._lock:
            return self.job_seconds / self.jobs_timed if self.jobs_timed else default

    def render(self) -> str:
        out: list[str] = []
        with self._lock:
            out += ["# HELP piaoju_http_requests_total HTTP requests answered.",
                    "# TYPE piaoju_http_requests_total counter"]
            for (route, method, status), n in sorted(self.requests.items()):
                out.append(f"piaoju_http_requests_total{_labels(route=route, method=method, status=status)} {n}")
            out += ["# HELP piaoju_http_request_duration_seconds Time to answer a request.",
                    "# TYPE piaoju_http_request_duration_seconds histogram"]
            for route, counts in sorted(self.latency.items()):
                running = 0
                for bound, n in zip([*map(str, BUCKETS), "+Inf"], counts):
                    running += n
                    out.append(f"piaoju_http_request_duration_seconds_bucket{_labels(route=route, le=bound)} {running}")
                total = self.latency_sum[route]
                out.append(f"piaoju_http_request_duration_seconds_sum{_labels(route=route)} {total:.6f}")
                out.append(f"piaoju_http_request_duration_seconds_count{_labels(route=route)} {running}")
            out += ["# HELP piaoju_jobs_finished_total Jobs ended, by how.",
                    "# TYPE piaoju_jobs_finished_total counter"]
            for state in ("done", "failed", "cancelled"):
                out.append(f"piaoju_jobs_finished_total{_labels(state=state)} {self.finished[state]}")
            out += ["# HELP piaoju_pages_read_total Pages of the documents read.",
                    "# TYPE piaoju_pages_read_total counter", f"piaoju_pages_read_total {self.pages}",
                    "# HELP piaoju_job_seconds Worker time per job.", "# TYPE piaoju_job_seconds summary",
                    f"piaoju_job_seconds_sum {self.job_seconds:.6f}", f"piaoju_job_seconds_count {self.jobs_timed}"]
            gauges = dict(self.gauges)
        for name, read in gauges.items():
            out += [f"# TYPE {name} gauge", f"{name} {read():g}"]
        return "\n".join(out) + "\n"
