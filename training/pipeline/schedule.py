"""Pipeline schedules as data: per-stage lists of actions, their text form, generators and a validator.

An action is one step a stage performs: compute (F forward, B backward, W weight-gradient for
zero-bubble schedules) or point-to-point communication (SEND_F/RECV_F carry activations to the next
virtual stage, SEND_B/RECV_B carry input gradients to the previous one), or a once-per-step action
(REDUCE_GRAD averages the stage's gradients over its data-parallel replicas, OPTIMIZER_STEP steps its
optimizer). The text form follows PyTorch's pipelining: "2F0" is stage 2, forward, micro-batch 0; a
virtual chunk other than 0 is appended as "v1" ("2F0v1"), so an action parses back without knowing
the stage count; a once-per-step action has no micro-batch ("1REDUCE_GRAD").

The generators end every stage's list with REDUCE_GRAD then OPTIMIZER_STEP, right after its last
backward (B, or W in zero-bubble schedules) and the send that hands that backward's gradient on: a
stage's data-parallel all-reduce then runs while upstream stages are still in their cool-down, and its
optimizer step follows the step's all-reduce over every rank (loss, gradient norm). Nothing
point-to-point may follow them, so a collective never waits on a peer that waits on this stage's message.

Virtual stages: with V chunks per stage the model is cut into S*V pieces; piece (chunk c, stage s)
is virtual stage c*S + s (Megatron's interleaved placement), so activations go 0 -> 1 -> ... -> S-1
-> 0 (chunk 1) -> ... and gradients flow back the same way.

Communication is placed by `add_comms` from a unit-cost simulation of the compute order so that all
stages agree on one global order of messages: that makes the schedule deadlock-free under blocking
point-to-point (gloo's send/recv are synchronous) and keeps the op sequence on every 2-rank link
identical on both sides (gloo tags are a per-group op counter). `validate` proves both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Callable, Iterable


class ActionKind(StrEnum):
    """What a stage does. A StrEnum, so a kind compares equal to (and prints as) its text: "F"."""
    F = "F"                            # forward of one micro-batch through one piece
    B = "B"                            # backward (input gradients only when the schedule splits it)
    W = "W"                            # deferred Linear weight gradients (zero-bubble schedules)
    SEND_F = "SEND_F"                  # activations to the next virtual stage
    RECV_F = "RECV_F"
    SEND_B = "SEND_B"                  # input gradients to the previous virtual stage
    RECV_B = "RECV_B"
    REDUCE_GRAD = "REDUCE_GRAD"        # average this stage's gradients over its data-parallel replicas
    OPTIMIZER_STEP = "OPTIMIZER_STEP"  # clip (global norm) and step this stage's optimizer


K = ActionKind
COMPUTE = (K.F, K.B, K.W)
COMMS = (K.SEND_F, K.RECV_F, K.SEND_B, K.RECV_B)
STEP = (K.REDUCE_GRAD, K.OPTIMIZER_STEP)  # once per stage and step, no micro-batch
KINDS = tuple(ActionKind)
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zbh1")
NO_MB = -1  # the micro-batch of a once-per-step action

_ACTION_RE = re.compile(r"^(\d+)(" + "|".join(sorted(KINDS, key=len, reverse=True)) + r")(\d+)?(?:v(\d+))?$")


class ScheduleError(ValueError):
    """A schedule that is malformed, misses a dependency, or would deadlock."""


@dataclass(frozen=True, order=True)
class Action:
    stage: int          # physical stage (= pipeline rank)
    kind: ActionKind    # a str is accepted and converted
    mb: int = NO_MB     # micro-batch index (NO_MB for REDUCE_GRAD and OPTIMIZER_STEP)
    chunk: int = 0      # virtual chunk on this stage (interleaved schedules)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", ActionKind(self.kind))
        except ValueError:
            raise ScheduleError(f"unknown action kind {self.kind!r}; use one of {', '.join(KINDS)}") from None
        if (self.kind in STEP) != (self.mb == NO_MB):
            raise ScheduleError(f"{self.kind} at stage {self.stage}: "
                                + ("a once-per-step action takes no micro-batch" if self.kind in STEP
                                   else "needs a micro-batch index"))

    def __str__(self) -> str:
        mb = "" if self.mb == NO_MB else str(self.mb)
        return f"{self.stage}{self.kind}{mb}" + (f"v{self.chunk}" if self.chunk else "")

    @classmethod
    def parse(cls, text: str) -> "Action":
        m = _ACTION_RE.match(text.strip())
        if not m:
            raise ScheduleError(f"cannot parse action {text!r}; expected e.g. '2F0', '1SEND_B3', '0B5v1', "
                                "'1REDUCE_GRAD'")
        return cls(int(m.group(1)), ActionKind(m.group(2)), int(m.group(3)) if m.group(3) else NO_MB,
                   int(m.group(4) or 0))

    def vstage(self, num_stages: int) -> int:
        return self.chunk * num_stages + self.stage


@dataclass
class Schedule:
    """Per-stage ordered action lists plus the shape they were built for."""

    name: str
    num_stages: int
    num_microbatches: int
    num_chunks: int
    actions: list[list[Action]]
    split_backward: bool = False  # True when B is input-grad only and W does weight grads

    @property
    def num_vstages(self) -> int:
        return self.num_stages * self.num_chunks

    def vstage_of(self, stage: int, chunk: int) -> int:
        return chunk * self.num_stages + stage

    def place(self, vstage: int) -> tuple[int, int]:
        """(stage, chunk) holding a virtual stage."""
        return vstage % self.num_stages, vstage // self.num_stages

    def compute_only(self) -> list[list[Action]]:
        return [[a for a in acts if a.kind in COMPUTE] for acts in self.actions]

    @property
    def has_step_actions(self) -> bool:
        """True when the schedule itself reduces gradients and steps the optimizer (the generators'
        default); otherwise the engine does both after the schedule, as it did before they existed."""
        return any(a.kind in STEP for acts in self.actions for a in acts)

    # ---- text form -------------------------------------------------------------------------
    def to_text(self) -> str:
        head = (f"# schedule={self.name} stages={self.num_stages} microbatches={self.num_microbatches}"
                f" chunks={self.num_chunks} split_backward={int(self.split_backward)}")
        rows = [f"{s}: " + " ".join(str(a) for a in acts) for s, acts in enumerate(self.actions)]
        return "\n".join([head, *rows]) + "\n"

    __str__ = to_text

    @classmethod
    def from_text(cls, text: str) -> "Schedule":
        meta: dict[str, str] = {}
        rows: dict[int, list[Action]] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                meta.update(kv.split("=", 1) for kv in line[1:].split() if "=" in kv)
                continue
            stage, _, body = line.partition(":")
            rows[int(stage)] = [Action.parse(t) for t in body.split()]
        if not rows:
            raise ScheduleError("schedule text has no stage rows; expected lines like '0: 0F0 0SEND_F0 ...'")
        num_stages = int(meta.get("stages", max(rows) + 1))
        acts = [rows.get(s, []) for s in range(num_stages)]
        flat = [a for r in acts for a in r]
        return cls(
            name=meta.get("schedule", "custom"),
            num_stages=num_stages,
            num_microbatches=int(meta.get("microbatches", max((a.mb for a in flat), default=-1) + 1)),
            num_chunks=int(meta.get("chunks", max((a.chunk for a in flat), default=0) + 1)),
            actions=acts,
            split_backward=bool(int(meta.get("split_backward", int(any(a.kind == "W" for a in flat))))),
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_text(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "Schedule":
        return cls.from_text(Path(path).read_text(encoding="utf-8"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return (self.num_stages, self.num_microbatches, self.num_chunks, self.split_backward, self.actions) == (
            other.num_stages, other.num_microbatches, other.num_chunks, other.split_backward, other.actions)

    def diff(self, other: "Schedule") -> list[str]:
        """Human-readable differences, first differing position per stage."""
        out = []
        for s in range(max(len(self.actions), len(other.actions))):
            a = self.actions[s] if s < len(self.actions) else []
            b = other.actions[s] if s < len(other.actions) else []
            for i in range(max(len(a), len(b))):
                x = str(a[i]) if i < len(a) else "<end>"
                y = str(b[i]) if i < len(b) else "<end>"
                if x != y:
                    out.append(f"stage {s} position {i}: {x} != {y}")
                    break
        return out


# ---- compute-order generators ----------------------------------------------------------------

def _gpipe(S: int, M: int) -> list[list[Action]]:
    return [[Action(s, K.F, m) for m in range(M)] + [Action(s, K.B, m) for m in range(M)] for s in range(S)]


def _one_f_one_b(S: int, M: int) -> list[list[Action]]:
    out = []
    for s in range(S):
        warmup = min(S - s - 1, M)
        acts = [Action(s, K.F, m) for m in range(warmup)]
        for i in range(M - warmup):
            acts += [Action(s, K.F, warmup + i), Action(s, K.B, i)]
        acts += [Action(s, K.B, m) for m in range(M - warmup, M)]
        out.append(acts)
    return out


def _interleaved(S: int, M: int, V: int) -> list[list[Action]]:
    """Megatron's interleaved 1F1B: micro-batches go through chunks in groups of S."""
    if M % S:
        raise ScheduleError(
            f"interleaved 1F1B needs micro_batches to be a multiple of stages (got {M} micro-batches for "
            f"{S} stages); use e.g. --micro-batches {max(S, (M // S + 1) * S)} or --schedule 1f1b")
    total = M * V

    def fwd(k: int) -> tuple[int, int]:   # (mb, chunk) of the k-th forward on a stage
        return (k // (S * V)) * S + k % S, (k // S) % V

    def bwd(k: int) -> tuple[int, int]:
        return (k // (S * V)) * S + k % S, V - 1 - (k // S) % V

    out = []
    for s in range(S):
        warmup = min((S - s - 1) * 2 + (V - 1) * S, total)
        acts = [Action(s, K.F, *fwd(k)) for k in range(warmup)]
        for i in range(total - warmup):
            acts += [Action(s, K.F, *fwd(warmup + i)), Action(s, K.B, *bwd(i))]
        acts += [Action(s, K.B, *bwd(k)) for k in range(total - warmup, total)]
        out.append(acts)
    return out


def _zero_bubble_h1(S: int, M: int) -> list[list[Action]]:
    """ZB-H1: 1F1B's order of F and B (B is now the input gradient only), with each weight-gradient
    W deferred: stage s runs W(i - s) after B(i), so later stages, whose B's the upstream stages wait
    on, push their W's into the cool-down where upstream stages would otherwise idle. In cool-down
    each B is followed by one pending W; the rest close the step. A stage holds at most S
    micro-batches whose W is still pending (1F1B's bound on the first stage)."""
    out = []
    for s in range(S):
        warmup = min(S - s - 1, M)
        acts = [Action(s, K.F, m) for m in range(warmup)]
        next_w = 0

        def w_upto(last: int, acts: list[Action] = acts, s: int = s) -> None:
            nonlocal next_w
            while next_w <= min(last, M - 1):
                acts.append(Action(s, K.W, next_w))
                next_w += 1

        for i in range(M - warmup):
            acts += [Action(s, K.F, warmup + i), Action(s, K.B, i)]
            w_upto(i - s)
        for j in range(M - warmup, M):
            acts.append(Action(s, K.B, j))
            w_upto(min(next_w, j))
        w_upto(M - 1)
        out.append(acts)
    return out


# ---- communication placement -----------------------------------------------------------------

def _unit_cost(a: Action, split: bool) -> float:
    return {"F": 1.0, "B": 1.0 if split else 2.0, "W": 1.0}[a.kind]


def _compute_times(compute: list[list[Action]], S: int, V: int, M: int, split: bool,
                   cost: Callable[[Action], float]) -> dict[Action, tuple[float, float]]:
    """Start/end of every compute action when messages are free; raises if the order is stuck."""
    last_v = S * V - 1
    times: dict[Action, tuple[float, float]] = {}
    fin: dict[tuple[str, int, int], float] = {}  # (kind, vstage, mb) -> end
    pos = [0] * S
    clock = [0.0] * S
    total = sum(len(c) for c in compute)
    while len(times) < total:
        progressed = False
        for s in range(S):
            while pos[s] < len(compute[s]):
                a = compute[s][pos[s]]
                v = a.vstage(S)
                deps = _compute_deps(a.kind, v, a.mb, last_v)
                if any(d not in fin for d in deps):
                    break
                start = max([clock[s]] + [fin[d] for d in deps])
                end = start + cost(a)
                times[a] = (start, end)
                fin[(a.kind, v, a.mb)] = end
                clock[s] = end
                pos[s] += 1
                progressed = True
        if not progressed:
            heads = ", ".join(str(compute[s][pos[s]]) for s in range(S) if pos[s] < len(compute[s]))
            raise ScheduleError(f"compute order cannot proceed: every stage waits on a missing input ({heads})")
    return times


def _compute_deps(kind: str, v: int, mb: int, last_v: int) -> list[tuple[str, int, int]]:
    if kind == "F":
        return [("F", v - 1, mb)] if v > 0 else []
    if kind == "B":
        return [("F", v, mb)] + ([("B", v + 1, mb)] if v < last_v else [])
    return [("B", v, mb)]  # W


def _meeting_time(t_p: float, t_c: float, busy_a: list, busy_b: list) -> float:
    """Earliest time in [t_p, t_c] at which neither stage is inside a compute action, so a blocking
    send/recv placed there delays nobody; t_p when there is none."""
    def free(t: float, spans: list) -> bool:
        return not any(s < t < e for s, e in spans)
    cands = sorted({t_p, t_c, *(e for _, e in busy_a + busy_b if t_p <= e <= t_c)})
    return next((t for t in cands if free(t, busy_a) and free(t, busy_b)), t_p)


def add_comms(compute: list[list[Action]], S: int, V: int, M: int, split: bool) -> list[list[Action]]:
    """Insert SEND/RECV actions so every stage sees messages in one global order (see module doc)."""
    times = _compute_times(compute, S, V, M, split, lambda a: _unit_cost(a, split))
    last_v = S * V - 1
    # (key, rank, action): compute keys (start, 1, ...), message keys (producer end, 0, ...)
    busy = [[times[a] for a in compute[s]] for s in range(S)]
    events: list[list[tuple[tuple, Action]]] = [[] for _ in range(S)]
    for s in range(S):
        for i, a in enumerate(compute[s]):
            events[s].append(((times[a][0], 1, i), a))
    for s in range(S):
        for a in compute[s]:
            v = a.vstage(S)
            if a.kind == "F" and v < last_v:
                dst, dchunk = (v + 1) % S, (v + 1) // S
                kind_send, kind_recv = K.SEND_F, K.RECV_F
            elif a.kind == "B" and v > 0:
                dst, dchunk = (v - 1) % S, (v - 1) // S
                kind_send, kind_recv = K.SEND_B, K.RECV_B
            else:
                continue
            if dst == s:
                continue  # consecutive virtual stages on one stage hand over locally
            t_p = times[a][1]
            consumer = Action(dst, K.F if kind_send == K.SEND_F else K.B, a.mb, dchunk)
            k = _meeting_time(t_p, times[consumer][0], busy[s], busy[dst])
            key = (k, 0, v, a.mb, kind_send)
            events[s].append((key, Action(s, kind_send, a.mb, a.chunk)))
            events[dst].append((key, Action(dst, kind_recv, a.mb, dchunk)))
    return [[a for _, a in sorted(ev, key=lambda e: e[0])] for ev in events]


def add_step_actions(actions: list[list[Action]]) -> list[list[Action]]:
    """End every stage with REDUCE_GRAD then OPTIMIZER_STEP: right after its last backward and the
    point-to-point actions around it (see the module doc for why nothing may follow them)."""
    return [list(acts) + [Action(s, K.REDUCE_GRAD), Action(s, K.OPTIMIZER_STEP)] for s, acts in enumerate(actions)]


# ---- public generators -----------------------------------------------------------------------

def build_schedule(name: str, num_stages: int, num_microbatches: int, num_chunks: int = 1,
                   step_actions: bool = True) -> Schedule:
    """Generate a named schedule ("gpipe", "1f1b", "interleaved", "zbh1") with comms placed and, unless
    step_actions is False, each stage's REDUCE_GRAD and OPTIMIZER_STEP."""
    S, M, V = num_stages, num_microbatches, num_chunks
    if S < 1 or M < 1 or V < 1:
        raise ScheduleError(f"stages, micro-batches and chunks must be >= 1 (got {S}, {M}, {V})")
    name = name.lower().replace("-", "").replace("_", "")
    aliases = {"1f1b": "1f1b", "pipedream": "1f1b", "gpipe": "gpipe", "interleaved": "interleaved",
               "interleaved1f1b": "interleaved", "zbh1": "zbh1", "zb": "zbh1"}
    if name not in aliases:
        raise ScheduleError(f"unknown schedule {name!r}; choose one of {', '.join(SCHEDULES)}")
    name = aliases[name]
    if name != "interleaved" and V != 1:
        raise ScheduleError(f"{name} uses one chunk per stage; use --schedule interleaved for {V} chunks")
    if name == "interleaved" and V < 2:
        V = 2  # interleaving with one chunk is plain 1F1B; default to two virtual chunks
    split = name == "zbh1"
    compute = {"gpipe": lambda: _gpipe(S, M), "1f1b": lambda: _one_f_one_b(S, M),
               "interleaved": lambda: _interleaved(S, M, V), "zbh1": lambda: _zero_bubble_h1(S, M)}[name]()
    actions = add_comms(compute, S, V, M, split)
    return Schedule(name, S, M, V, add_step_actions(actions) if step_actions else actions, split_backward=split)


# ---- validation ------------------------------------------------------------------------------

def _match(a: Action, S: int) -> Action:
    """The counterpart a comm action must meet on the other stage."""
    v = a.vstage(S)
    if a.kind == "SEND_F":
        w = v + 1
        return Action(w % S, K.RECV_F, a.mb, w // S)
    if a.kind == "RECV_F":
        w = v - 1
        return Action(w % S, K.SEND_F, a.mb, w // S)
    if a.kind == "SEND_B":
        w = v - 1
        return Action(w % S, K.RECV_B, a.mb, w // S)
    w = v + 1
    return Action(w % S, K.SEND_B, a.mb, w // S)


def blocking_order(schedule: Schedule) -> list[tuple[Action, ...]]:
    """Run the schedule under blocking point-to-point (a send and its receive happen together) and
    return the global order of events: (compute,) or (send, recv). Raises ScheduleError on deadlock
    or on an action whose input is not there yet."""
    S, V = schedule.num_stages, schedule.num_chunks
    last_v = S * V - 1
    acts = schedule.actions
    pos = [0] * S
    have: set[tuple[str, int, int]] = set()   # finished compute (kind, vstage, mb)
    inbox: set[tuple[str, int, int]] = set()  # received messages (kind, vstage, mb) at receiving vstage
    order: list[tuple[Action, ...]] = []
    total = sum(len(a) for a in acts)
    done = 0
    while done < total:
        progressed = False
        for s in range(S):
            while pos[s] < len(acts[s]):
                a = acts[s][pos[s]]
                if a.stage != s:
                    raise ScheduleError(f"action {a} is listed under stage {s}")
                v = a.vstage(S)
                if a.kind in COMPUTE or a.kind in STEP:
                    _check_ready(schedule, a, v, last_v, have, inbox)
                    have.add((a.kind, v, a.mb))
                    order.append((a,))
                    pos[s] += 1
                    done += 1
                    progressed = True
                    continue
                peer = _match(a, S)
                ps = peer.stage
                if ps == s or not (0 <= ps < S) or not (0 <= peer.vstage(S) <= last_v):
                    raise ScheduleError(f"{a} has no valid peer stage (vstage {v} of {last_v + 1})")
                if pos[ps] >= len(acts[ps]) or acts[ps][pos[ps]] != peer:
                    break  # blocked until the peer reaches the matching action
                send, recv = (a, peer) if a.kind.startswith("SEND") else (peer, a)
                sv = send.vstage(S)
                need = ("F" if send.kind == "SEND_F" else "B", sv, send.mb)
                if need not in have:
                    raise ScheduleError(f"{send} sends before {need[0]} of micro-batch {send.mb} "
                                        f"ran on stage {send.stage}")
                inbox.add((recv.kind, recv.vstage(S), recv.mb))
                order.append((send, recv))
                pos[s] += 1
                pos[ps] += 1
                done += 2
                progressed = True
        if not progressed:
            heads = ", ".join(f"stage {s} waits at {acts[s][pos[s]]}" for s in range(S) if pos[s] < len(acts[s]))
            raise ScheduleError(f"deadlock under blocking send/recv: {heads}")
    return order


def _check_ready(schedule: Schedule, a: Action, v: int, last_v: int, have: set, inbox: set) -> None:
    S = schedule.num_stages

    def local(kind: str, w: int) -> bool:
        return w % S == a.stage and (kind, w, a.mb) in have

    if a.kind == "F" and v > 0 and not (local("F", v - 1) or ("RECV_F", v, a.mb) in inbox):
        raise ScheduleError(f"{a} runs before its input arrived (needs F of vstage {v - 1} or RECV_F)")
    if a.kind == "B":
        if ("F", v, a.mb) not in have:
            raise ScheduleError(f"{a} runs before its forward")
        if v < last_v and not (local("B", v + 1) or ("RECV_B", v, a.mb) in inbox):
            raise ScheduleError(f"{a} runs before its output gradient arrived")
    if a.kind == "W":
        if not schedule.split_backward:
            raise ScheduleError(f"{a}: W actions need a split-backward schedule (split_backward=1)")
        if ("B", v, a.mb) not in have:
            raise ScheduleError(f"{a} runs before B of the same micro-batch")
    if a.kind == K.REDUCE_GRAD:
        last = K.W if schedule.split_backward else K.B
        for c in range(schedule.num_chunks):
            w = schedule.vstage_of(a.stage, c)
            missing = [m for m in range(schedule.num_microbatches) if (last, w, m) not in have]
            if missing:
                raise ScheduleError(f"{a} runs before {last} of micro-batch {missing[0]} (vstage {w}): its "
                                    "gradients are not complete yet")
    if a.kind == K.OPTIMIZER_STEP and (K.REDUCE_GRAD, v, NO_MB) not in have:
        raise ScheduleError(f"{a} runs before {a.stage}{K.REDUCE_GRAD}")


def validate(schedule: Schedule) -> list[tuple[Action, ...]]:
    """Check counts (each vstage runs F and B, and W if split, exactly once per micro-batch; each stage
    ends with one REDUCE_GRAD and one OPTIMIZER_STEP if any does), that every send has its receive,
    dependencies (REDUCE_GRAD after the stage's every backward), and deadlock freedom; return the
    blocking order."""
    S, M, V = schedule.num_stages, schedule.num_microbatches, schedule.num_chunks
    if len(schedule.actions) != S:
        raise ScheduleError(f"schedule lists {len(schedule.actions)} stages, header says {S}")
    seen: dict[tuple[ActionKind, int, int], int] = {}
    for acts in schedule.actions:
        for a in acts:
            if a.kind in STEP:
                if a.chunk:
                    raise ScheduleError(f"{a}: a once-per-step action belongs to the stage, not a chunk")
            elif not (0 <= a.mb < M and 0 <= a.chunk < V):
                raise ScheduleError(f"{a} is outside {M} micro-batches x {V} chunks")
            key = (a.kind, a.vstage(S), a.mb)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                raise ScheduleError(f"{a} appears twice")
    kinds = ("F", "B", "W") if schedule.split_backward else ("F", "B")
    for v in range(S * V):
        for m in range(M):
            for k in kinds:
                if (k, v, m) not in seen:
                    raise ScheduleError(f"vstage {v} never runs {k} for micro-batch {m}")
    for (k, v, m) in seen:
        if k in COMMS:
            peer = _match(Action(v % S, k, m, v // S), S)
            if (peer.kind, peer.vstage(S), m) not in seen:
                raise ScheduleError(f"{Action(v % S, k, m, v // S)} has no matching {peer}")
    order = blocking_order(schedule)
    if schedule.has_step_actions:
        for s, acts in enumerate(schedule.actions):
            tail = [a.kind for a in acts[-2:]]
            if tail != [K.REDUCE_GRAD, K.OPTIMIZER_STEP] or sum(a.kind in STEP for a in acts) != 2:
                raise ScheduleError(f"stage {s} must end with exactly one {K.REDUCE_GRAD} then one "
                                    f"{K.OPTIMIZER_STEP} (got ...{' '.join(map(str, acts[-2:]))}): every stage "
                                    "reduces and steps once, after all of its point-to-point actions")
    return order


def peak_inflight(schedule: Schedule) -> list[int]:
    """Most micro-batch activations a stage holds at once: from F until its last backward action."""
    last = "W" if schedule.split_backward else "B"
    peaks = []
    for acts in schedule.actions:
        live = peak = 0
        for a in acts:
            if a.kind == "F":
                live += 1
                peak = max(peak, live)
            elif a.kind == last:
                live -= 1
        peaks.append(peak)
    return peaks


def all_admissible(stages: Iterable[int], microbatches: Iterable[int], chunks: Iterable[int]):
    """Yield (name, S, M, V) for every schedule that accepts that shape (for tests and benches)."""
    for S in stages:
        for M in microbatches:
            for V in chunks:
                for name in SCHEDULES:
                    if (name == "interleaved") != (V > 1):
                        continue
                    if name == "interleaved" and M % S:
                        continue
                    yield name, S, M, V
