"""Simulate a schedule from per-action costs: timeline, makespan, bubble and peak in-flight activations.

The execution model is the one the distributed transport runs under: each stage executes its actions
in order; a send and its matching receive happen together (blocking point-to-point), starting when
both stages reach them and lasting the comm cost. With eager_sends (what gloo does for messages that
fit the socket buffers, as measured by the bench) a send costs the sender its own time whether or
not the receiver is there, and a receive ends its own cost after both sides reached the message.
REDUCE_GRAD and OPTIMIZER_STEP are local to their stage and cost what the table says (0 by default;
one replica is simulated, so a data-parallel all-reduce is its measured or modelled duration).
Bubble of a stage = 1 - busy time / makespan, busy = F, B, W and OPTIMIZER_STEP (work a stage does
itself; communication and REDUCE_GRAD are not); the overall bubble is the same over all stages together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from training.pipeline.schedule import COMPUTE, Action, ActionKind, Schedule, blocking_order, peak_inflight

BUSY = (*COMPUTE, ActionKind.OPTIMIZER_STEP)  # what counts as a stage's own work in the bubble


@dataclass(frozen=True)
class Span:
    """One action on one stage's clock (seconds or abstract units)."""
    stage: int
    action: str   # text form, e.g. "1F3"
    kind: str     # F, B, W, SEND_F, ...
    mb: int
    start: float
    end: float


@dataclass
class Timeline:
    spans: list[Span]
    num_stages: int
    peak_inflight: list[int] = field(default_factory=list)
    source: str = "simulated"  # or "measured"

    @property
    def makespan(self) -> float:
        if not self.spans:
            return 0.0
        return max(s.end for s in self.spans) - min(s.start for s in self.spans)

    def busy(self, stage: int, kinds: tuple[str, ...] = BUSY) -> float:
        return sum(s.end - s.start for s in self.spans if s.stage == stage and s.kind in kinds)

    def comm(self, stage: int) -> float:
        """Point-to-point and the data-parallel REDUCE_GRAD: time spent on messages, waits included."""
        return sum(s.end - s.start for s in self.spans if s.stage == stage and s.kind not in BUSY)

    def bubble_per_stage(self) -> list[float]:
        T = self.makespan
        return [1.0 - self.busy(s) / T if T > 0 else 0.0 for s in range(self.num_stages)]

    @property
    def bubble(self) -> float:
        T = self.makespan
        if T <= 0:
            return 0.0
        return 1.0 - sum(self.busy(s) for s in range(self.num_stages)) / (self.num_stages * T)

    def summary(self) -> dict:
        T = self.makespan
        return {
            "source": self.source,
            "makespan": T,
            "bubble": self.bubble,
            "bubble_per_stage": self.bubble_per_stage(),
            "compute_per_stage": [self.busy(s) for s in range(self.num_stages)],
            "comm_per_stage": [self.comm(s) for s in range(self.num_stages)],
            "idle_per_stage": [T - self.busy(s) - self.comm(s) for s in range(self.num_stages)],
            "peak_inflight": list(self.peak_inflight),
        }


CostFn = Callable[[Action], float]


def costs_from(table: Mapping[str, float] | CostFn | None, split_backward: bool = False) -> CostFn:
    """Turn {"F": 1, "B": 2, "W": 1, "comm": 0, "REDUCE_GRAD": 0, "OPTIMIZER_STEP": 0} (or a callable)
    into a per-action cost function. Without W in a split schedule, B and W share the unsplit backward
    cost evenly; REDUCE_GRAD and OPTIMIZER_STEP cost 0 unless given."""
    if callable(table):
        return table
    t = dict(table or {})
    f = float(t.get("F", 1.0))
    b_full = float(t.get("B", 2.0 * f))
    if split_backward and "W" not in t:
        b, w = b_full / 2, b_full / 2
    else:
        b, w = b_full, float(t.get("W", 0.0))
    comm = float(t.get("comm", 0.0))
    per = {"F": f, "B": b, "W": w, "REDUCE_GRAD": float(t.get("REDUCE_GRAD", 0.0)),
           "OPTIMIZER_STEP": float(t.get("OPTIMIZER_STEP", 0.0))}
    return lambda a: per.get(a.kind, comm)


def simulate(schedule: Schedule, costs: Mapping[str, float] | CostFn | None = None,
             eager_sends: bool = False) -> Timeline:
    """Timeline of `schedule` under `costs` (default F=1, B=2, comm=0); eager_sends: see above."""
    cost = costs_from(costs, schedule.split_backward)
    clock = [0.0] * schedule.num_stages
    spans: list[Span] = []
    for event in blocking_order(schedule):
        if len(event) == 1:
            a = event[0]
            start = clock[a.stage]
            end = start + cost(a)
            clock[a.stage] = end
            spans.append(Span(a.stage, str(a), a.kind, a.mb, start, end))
        else:
            send, recv = event
            both = max(clock[send.stage], clock[recv.stage])
            if eager_sends:
                s0, s1 = clock[send.stage], clock[send.stage] + cost(send)
                r0, r1 = clock[recv.stage], both + cost(recv)
            else:
                s0 = r0 = both
                s1 = r1 = both + cost(send)
            clock[send.stage], clock[recv.stage] = s1, r1
            spans.append(Span(send.stage, str(send), send.kind, send.mb, s0, s1))
            spans.append(Span(recv.stage, str(recv), recv.kind, recv.mb, r0, r1))
    return Timeline(spans, schedule.num_stages, peak_inflight(schedule), "simulated")


def analytic_bubble(name: str, stages: int, microbatches: int, chunks: int = 1) -> float:
    """Textbook bubble fraction: (p-1)/(m+p-1) for GPipe and 1F1B; interleaved divides the
    warm-up/cool-down by v: (p-1)/(v*m + p-1)."""
    p, m, v = stages, microbatches, chunks if name == "interleaved" else 1
    return (p - 1) / (v * m + p - 1)
