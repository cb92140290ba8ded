"""Run a schedule: each stage executes its actions over micro-batches of one global batch.

    engine = PipelineEngine(blocks, loss_fn, lambda params: paddle.optimizer.AdamW(parameters=params),
                            stages=4, micro_batches=8, schedule="1f1b", transport="inprocess")
    loss = engine.train_step(inputs, labels)     # float, the full-batch loss, on every stage

`blocks` follows the block contract (README): [embeddings, layer_0..layer_{N-1}, head]. With
transport="dist" each process is one stage (rank = replica * stages + stage); every process passes
the same global batch and takes its own rows. One stage is the degenerate case of the same path.

Execution: every action kind (schedule.ActionKind) has a handler `handler(engine, worker, action)` in
a dispatch table; `register_handler` swaps one per engine (and returns the one it replaced, so a
wrapper can time, log or fault-inject and call through). What a stage holds for one step (received
messages, saved activations, stashed weight-gradient inputs, the loss) is one `StepState`, made new at
the start of every step and checked empty at its end.

Gradients: `loss_fn` returns the mean over a micro-batch; the engine scales each micro-batch loss by
1/M, so the gradients accumulated over M equal micro-batches equal the full-batch gradient (and DP
replicas average theirs). Gradients accumulate in param.grad exactly once per micro-batch. The
schedule's REDUCE_GRAD averages a stage's gradients over its replicas as soon as its last backward
is done; OPTIMIZER_STEP then runs the step's one all-reduce over every rank (the loss, and the squared
gradient norm when clipping), clips by the global norm across stages and steps its optimizer, once
per train_step; a schedule without them (built with step_actions=False, or an older text file) gets
both after the whole schedule instead.
"""
from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import paddle
import paddle.nn as nn

from training.pipeline.deferred_wgrad import WGradStash, defer_linear_wgrads, linear_layers
from training.pipeline.partition import uniform_bounds
from training.pipeline.schedule import (
    STEP,
    Action,
    ActionKind,
    Schedule,
    add_comms,
    blocking_order,
    build_schedule,
    validate,
)
from training.pipeline.simulate import Span, Timeline
from training.pipeline.transport import DistTransport, InProcessTransport, Message

LossFn = Callable[..., paddle.Tensor]
OptimizerFactory = Callable[[list], paddle.optimizer.Optimizer]
K = ActionKind
__all__ = ["PipelineEngine", "StageWorker", "StepState", "Piece", "Handler", "DEFAULT_HANDLERS", "handles",
           "uniform_bounds"]


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(t: paddle.Tensor) -> bool:
    return t.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64) and not t.stop_gradient


Key = tuple[int, int]  # (vstage, micro-batch)


@dataclass
class StepState:
    """What one stage holds during one step. A new one per step (`StageWorker.begin`), so nothing
    from a previous step (a message, an activation, a loss) can leak into the next; every store is
    empty again once the schedule has run (`leftovers`)."""

    inputs_mb: list                   # this replica's model inputs, one tuple per micro-batch
    labels_mb: list | None            # None for eval_forward
    scale: float                      # 1/M: micro-batch losses sum to the full-batch mean
    train: bool = True
    optimize: bool = False            # OPTIMIZER_STEP steps (train_step) or leaves grads (forward_backward)
    fin: dict[Key, Message] = field(default_factory=dict)        # received forward messages
    gin: dict[Key, Message] = field(default_factory=dict)        # received output gradients
    saved: dict[Key, tuple] = field(default_factory=dict)        # (leaf inputs, outputs)
    pending_w: dict[Key, WGradStash] = field(default_factory=dict)  # Linear (X, dY) awaiting W
    out_f: dict[Key, Message] = field(default_factory=dict)      # forward messages to send
    out_b: dict[Key, Message] = field(default_factory=dict)      # gradient messages to send
    sent_meta: dict[Key, list] = field(default_factory=dict)     # (shape, dtype) of sent outputs (recompute)
    loss_sum: float = 0.0
    outputs: dict[int, tuple] = field(default_factory=dict)      # eval outputs of the last vstage
    reduced: bool = False             # REDUCE_GRAD ran
    stepped: bool = False             # OPTIMIZER_STEP stepped the optimizer
    synced: bool = False              # the step's all-reduce (loss, norm) ran (first OPTIMIZER_STEP)
    grad_norm: float | None = None    # global gradient norm before clipping (with clip_norm)
    world_loss: float | None = None   # the full-batch loss that all-reduce carried

    STORES = ("fin", "gin", "saved", "pending_w", "out_f", "out_b", "sent_meta")

    def leftovers(self) -> dict[str, list[Key]]:
        """Stores still holding entries (after a complete schedule: a bug in it or in a handler)."""
        return {n: sorted(getattr(self, n)) for n in self.STORES if getattr(self, n)}


class Piece:
    """The contiguous run of blocks one virtual stage owns."""

    def __init__(self, vstage: int, blocks: Sequence[nn.Layer], first_index: int) -> None:
        self.vstage, self.blocks, self.first = vstage, list(blocks), first_index

    def parameters(self) -> list:
        return [p for b in self.blocks for p in b.parameters()]

    def named_parameters(self) -> list[tuple[str, paddle.Tensor]]:
        # keys identical to an unpartitioned nn.LayerList(blocks): "<block index>.<name>"
        return [(f"{self.first + i}.{n}", p) for i, b in enumerate(self.blocks) for n, p in b.named_parameters()]

    def __call__(self, *args):
        out = args
        for b in self.blocks:
            out = b(*out) if isinstance(out, tuple) else b(out)
        return out


class StageWorker:
    """One physical stage: its pieces (one per chunk), optimizer and the current step's `StepState`."""

    def __init__(self, stage: int, pieces: list[Piece], num_vstages: int, loss_fn: LossFn,
                 optimizer: paddle.optimizer.Optimizer | None, recompute: bool, split_backward: bool) -> None:
        self.stage, self.pieces, self.VS = stage, pieces, num_vstages
        self.loss_fn, self.optimizer, self.recompute, self.split = loss_fn, optimizer, recompute, split_backward
        self.linears = {pc.vstage: linear_layers(pc.blocks) for pc in pieces} if split_backward else {}
        self.state = StepState([], None, 1.0, train=False)

    def params(self) -> list:
        return [p for pc in self.pieces for p in pc.parameters()]

    def grads(self) -> list[paddle.Tensor]:
        return [p.grad for p in self.params() if p.grad is not None]

    def begin(self, inputs_mb: list, labels_mb: list | None, scale: float, train: bool = True,
              optimize: bool = False) -> StepState:
        self.state = StepState(inputs_mb, labels_mb, scale, train=train, optimize=optimize)
        return self.state

    def piece(self, vstage: int) -> Piece:
        for pc in self.pieces:
            if pc.vstage == vstage:
                return pc
        raise RuntimeError(f"stage {self.stage} does not hold virtual stage {vstage}")

    def _leaves(self, vstage: int, mb: int) -> tuple:
        if vstage == 0:
            return tuple(self.state.inputs_mb[mb])
        leaves = []
        for t, flag in self.state.fin.pop((vstage, mb)):
            x = t.detach()
            x.stop_gradient = not flag
            leaves.append(x)
        return tuple(leaves)

    def _run(self, vstage: int, mb: int, leaves: tuple):
        st = self.state
        if self.split:  # B will compute input grads only; Linear weight grads wait for W
            stash = st.pending_w.setdefault((vstage, mb), WGradStash())
            with defer_linear_wgrads(self.linears[vstage], stash):
                out = self.piece(vstage)(*leaves)
        else:
            out = self.piece(vstage)(*leaves)
        if vstage == self.VS - 1:
            if st.labels_mb is None:
                return out
            return self.loss_fn(out, st.labels_mb[mb]) * st.scale
        return out

    def forward(self, vstage: int, mb: int) -> None:
        st = self.state
        leaves = self._leaves(vstage, mb)
        if not st.train:
            with paddle.no_grad():
                out = self.piece(vstage)(*leaves)
            if vstage == self.VS - 1:
                st.outputs[mb] = _as_tuple(out)
            else:
                st.out_f[(vstage, mb)] = [(t, False) for t in _as_tuple(out)]
            return
        if self.recompute and vstage < self.VS - 1:
            # run with autograd on (so outputs say which tensors are differentiable), then keep only
            # the inputs: the graph and its activations are freed here and rebuilt at B
            out = self._run(vstage, mb, leaves)
            st.saved[(vstage, mb)] = (leaves, None)
        else:
            out = self._run(vstage, mb, leaves)
            st.saved[(vstage, mb)] = (leaves, out)
        if vstage == self.VS - 1:
            st.loss_sum += float(out)
        else:
            st.out_f[(vstage, mb)] = [(t.detach(), _differentiable(t)) for t in _as_tuple(out)]
            if self.recompute:
                st.sent_meta[(vstage, mb)] = [(t.shape, t.dtype) for t in _as_tuple(out) if _differentiable(t)]

    def _targets(self, vstage: int, mb: int) -> tuple[list, list | None, list]:
        st = self.state
        leaves, out = st.saved[(vstage, mb)]
        if out is None:  # recompute: rebuild the graph from fresh leaves now
            fresh = []
            for x in leaves:
                y = x.detach()
                y.stop_gradient = x.stop_gradient
                fresh.append(y)
            leaves = tuple(fresh)
            out = self._run(vstage, mb, leaves)
            st.saved[(vstage, mb)] = (leaves, out)
        if vstage == self.VS - 1:
            return [out], None, list(leaves)
        outs = [t for t in _as_tuple(out) if _differentiable(t)]
        grads = [g for g, _ in st.gin.pop((vstage, mb))]
        return outs, grads, list(leaves)

    def backward(self, vstage: int, mb: int) -> None:
        targets, grads, leaves = self._targets(vstage, mb)
        diff_in = [x for x in leaves if _differentiable(x)]
        # under a split schedule the Linear layers' backward only stashes (X, dY): this pass gives
        # the input gradients and the small non-Linear weight gradients; W does the rest
        paddle.autograd.backward(targets, grads)
        gin = [x.grad for x in diff_in]
        del self.state.saved[(vstage, mb)]
        if vstage > 0:
            self.state.out_b[(vstage, mb)] = [(g if g is not None else paddle.zeros_like(x), True)
                                              for g, x in zip(gin, diff_in)]

    def weight_grad(self, vstage: int, mb: int) -> None:
        """W: the Linear weight gradients B deferred, dW = X^T dY, added into param.grad."""
        self.state.pending_w.pop((vstage, mb)).apply()


# ---- action handlers ---------------------------------------------------------------------------
Handler = Callable[["PipelineEngine", StageWorker, Action], None]
DEFAULT_HANDLERS: dict[ActionKind, Handler] = {}


def handles(kind: ActionKind | str) -> Callable[[Handler], Handler]:
    """Decorator: make `fn(engine, worker, action)` the default handler of `kind` for new engines."""
    def register(fn: Handler) -> Handler:
        DEFAULT_HANDLERS[ActionKind(kind)] = fn
        return fn
    return register


@handles(K.F)
def _forward(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    w.forward(v, a.mb)
    if eng.S == 1 and v + 1 < eng.S * eng.V:  # next piece lives here: hand over locally
        w.state.fin[(v + 1, a.mb)] = w.state.out_f.pop((v, a.mb))


@handles(K.B)
def _backward(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    w.backward(v, a.mb)
    if eng.S == 1 and v > 0:
        w.state.gin[(v - 1, a.mb)] = w.state.out_b.pop((v, a.mb))
        w.state.sent_meta.pop((v - 1, a.mb), None)  # handed over locally: no RECV_B will read it


@handles(K.W)
def _weight_grad(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    w.weight_grad(a.vstage(eng.S), a.mb)


@handles(K.SEND_F)
def _send_f(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    eng.transport.send("F", v, v + 1, a.mb, w.state.out_f.pop((v, a.mb)))


@handles(K.RECV_F)
def _recv_f(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    w.state.fin[(v, a.mb)] = eng.transport.recv("F", v - 1, v, a.mb)


@handles(K.SEND_B)
def _send_b(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    eng.transport.send("B", v, v - 1, a.mb, w.state.out_b.pop((v, a.mb)))


@handles(K.RECV_B)
def _recv_b(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    v = a.vstage(eng.S)
    _, out = w.state.saved[(v, a.mb)]
    if out is not None:
        like = [(t, True) for t in _as_tuple(out) if _differentiable(t)]
    else:  # under recompute the outputs are not kept; the gradient shapes are those of the message sent
        like = [(paddle.empty(shape, dtype), True) for shape, dtype in w.state.sent_meta.pop((v, a.mb))]
    w.state.gin[(v, a.mb)] = eng.transport.recv("B", v + 1, v, a.mb, like)


@handles(K.REDUCE_GRAD)
def _reduce_grad(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    """Average this stage's gradients over its data-parallel replicas (one fused all-reduce per dtype
    on the stage's replica group; nothing to do with one replica)."""
    if eng.kind == "dist":
        eng.transport.all_reduce_dp(w.grads())
    w.state.reduced = True


@handles(K.OPTIMIZER_STEP)
def _optimizer_step(eng: PipelineEngine, w: StageWorker, a: Action) -> None:
    """The step's one all-reduce over every rank (the loss, and with clipping the squared gradient
    norm), clip by the global norm across stages, then step and clear; under forward_backward the
    gradients are left in param.grad."""
    if not w.state.optimize:
        return
    eng._step_sync()
    if eng.clip_norm:
        _scale(w.grads(), eng.clip_norm, w.state.grad_norm)  # type: ignore[arg-type]
    if w.optimizer:
        w.optimizer.step()
        w.optimizer.clear_grad(set_to_zero=False)
    w.state.stepped = True


def _scale(grads: list[paddle.Tensor], clip_norm: float, norm: float) -> None:
    scale = clip_norm / max(norm, clip_norm)
    if scale < 1.0:
        with paddle.no_grad():
            for g in grads:
                g.scale_(scale)


class PipelineEngine:
    """Pipeline-parallel training over a block list; see the module docstring for the contract."""

    def __init__(self, blocks: Sequence[nn.Layer], loss_fn: LossFn, optimizer_factory: OptimizerFactory | None,
                 stages: int = 4, micro_batches: int = 8, schedule: str | Schedule = "1f1b", chunks: int = 1,
                 transport: str = "inprocess", dp: int = 1, recompute: bool = False,
                 clip_norm: float | None = None, bounds: list[int] | None = None, timeout_s: float = 60.0) -> None:
        if isinstance(schedule, Schedule):
            self.schedule = schedule
        else:
            if schedule == "interleaved" and chunks == 1:
                chunks = 2
            self.schedule = build_schedule(schedule, stages, micro_batches, chunks)
        validate(self.schedule)
        self.S, self.M, self.V = self.schedule.num_stages, self.schedule.num_microbatches, self.schedule.num_chunks
        if self.S != stages or self.M != micro_batches:
            raise ValueError(f"schedule is for {self.S} stages x {self.M} micro-batches, engine asked for "
                             f"{stages} x {micro_batches}")
        if self.schedule.name in ("interleaved",) and self.M < self.S:
            raise ValueError(f"{self.schedule.name} needs micro_batches >= stages ({self.M} < {self.S})")
        self.dp, self.clip_norm, self.loss_fn = dp, clip_norm, loss_fn
        self.num_blocks = len(blocks)
        self.bounds = bounds or uniform_bounds(len(blocks), self.S * self.V)
        if len(self.bounds) != self.S * self.V + 1 or self.bounds[0] != 0 or self.bounds[-1] != len(blocks):
            raise ValueError(f"bounds {self.bounds} must run 0..{len(blocks)} with {self.S * self.V} pieces")
        self.kind = transport
        if transport == "inprocess":
            if dp != 1:
                raise ValueError("data parallel replicas need transport='dist' (one process per replica x stage)")
            self.transport = InProcessTransport()
            my_stages = list(range(self.S))
            self.stage, self.replica = None, 0
        elif transport == "dist":
            self.transport = DistTransport(self.S, dp, self.V, timeout_s)
            my_stages = [self.transport.stage]
            self.stage, self.replica = self.transport.stage, self.transport.replica
        else:
            raise ValueError(f"unknown transport {transport!r}; use 'inprocess' or 'dist'")
        self.workers: dict[int, StageWorker] = {}
        for s in my_stages:
            pieces = []
            for c in range(self.V):
                v = c * self.S + s
                lo, hi = self.bounds[v], self.bounds[v + 1]
                pieces.append(Piece(v, blocks[lo:hi], lo))
            params = [p for pc in pieces for p in pc.parameters()]
            opt = optimizer_factory(params) if optimizer_factory and params else None
            self.workers[s] = StageWorker(s, pieces, self.S * self.V, loss_fn, opt, recompute,
                                          self.schedule.split_backward)
        self.step = 0
        self.timeline = Timeline([], self.S, source="measured")
        self.last_stats: dict = {}
        self.handlers: dict[ActionKind, Handler] = dict(DEFAULT_HANDLERS)
        self._spans: list[Span] = []
        self._train_order: list[tuple[Action, ...]] | None = None

    def register_handler(self, kind: ActionKind | str, handler: Handler) -> Handler:
        """Run `handler(engine, worker, action)` for every action of `kind` on this engine; returns the
        handler it replaces, so a wrapper can call through to it (to time, log, or inject a fault)."""
        try:
            kind = ActionKind(kind)
        except ValueError:
            raise ValueError(f"no action kind {kind!r}; use one of {', '.join(ActionKind)}") from None
        if not callable(handler):
            raise TypeError(f"the handler for {kind} must be callable(engine, worker, action)")
        previous = self.handlers[kind]
        self.handlers[kind] = handler
        return previous

    # ---- batch handling --------------------------------------------------------------------
    def _split(self, batch, what: str) -> list:
        """This replica's rows of a batch (tensor or tuple of tensors), cut into M micro-batches."""
        tensors = _as_tuple(batch)
        n = tensors[0].shape[0]
        if n % (self.dp * self.M):
            raise ValueError(f"{what}: global batch of {n} rows does not split into {self.dp} replica(s) x "
                             f"{self.M} micro-batches; use a batch size divisible by {self.dp * self.M}")
        rows = n // self.dp
        lo = self.replica * rows
        size = rows // self.M
        mbs = [tuple(t[lo + i * size: lo + (i + 1) * size] for t in tensors) for i in range(self.M)]
        return [m if isinstance(batch, (tuple, list)) else m[0] for m in mbs]

    # ---- one step ----------------------------------------------------------------------------
    def forward_backward(self, inputs, labels) -> float:
        """Run the schedule over the global batch and leave the full-batch gradients in param.grad
        (averaged over data-parallel replicas); returns the full-batch loss on every stage."""
        return self._run_step(inputs, labels, optimize=False)

    def train_step(self, inputs, labels) -> float:
        """One optimizer step over the global batch; returns the full-batch loss on every stage."""
        loss = self._run_step(inputs, labels, optimize=True)
        self.step += 1
        return loss

    def _run_step(self, inputs, labels, optimize: bool) -> float:
        inputs_mb = [_as_tuple(m) for m in self._split(inputs, "inputs")]
        labels_mb = self._split(labels, "labels")
        for w in self.workers.values():
            for p in w.params():
                p.clear_gradient(set_to_zero=False)
            w.begin(inputs_mb, labels_mb, 1.0 / self.M, train=True, optimize=optimize)
        self.transport.reset_step()
        t0 = time.perf_counter()
        self._spans = self._execute(self.schedule)
        self.timeline = Timeline([Span(x.stage, x.action, x.kind, x.mb, x.start - t0, x.end - t0)
                                  for x in self._spans], self.S, source="measured")
        in_schedule = self.schedule.has_step_actions
        if not in_schedule and self.kind == "dist":  # a schedule without REDUCE_GRAD: reduce after it
            self.transport.all_reduce_dp(self._grads())
        last = self.workers.get(self.S - 1)
        loss = last.state.loss_sum if last else 0.0
        if self.kind == "dist":
            carried = next(iter(self.workers.values())).state.world_loss
            loss = carried if carried is not None else self.transport.all_reduce_world([loss])[0] / self.dp
        if optimize and not in_schedule:  # ... and without OPTIMIZER_STEP: clip and step after it
            if self.clip_norm:
                self.clip_grads()
            for w in self.workers.values():
                if w.optimizer:
                    w.optimizer.step()
                    w.optimizer.clear_grad(set_to_zero=False)
        self._check_drained()
        self.last_stats["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu"):
            self.last_stats["max_allocated_mb"] = paddle.device.cuda.max_memory_allocated() / 2**20
        return loss

    def _check_drained(self) -> None:
        for w in self.workers.values():
            left = w.state.leftovers()
            if left:
                raise RuntimeError(f"stage {w.stage} ended the step with unconsumed state {left}: the "
                                   f"schedule or a registered handler lost a message or an activation")

    def _grads(self) -> list:
        return [g for w in self.workers.values() for g in w.grads()]

    def _grad_norm(self, loss: float | None = None) -> tuple[float, float | None]:
        """Global gradient norm over every stage (an all-reduce across ranks under 'dist', which also
        sums `loss` when given, saving the step a second all-reduce); returns (norm, summed loss)."""
        grads = self._grads()
        # one host sync for the whole stage, not one per parameter (float() per grad cost ~0.2 s/step)
        sq = float(paddle.add_n([(g.astype("float64") ** 2).sum() for g in grads])) if grads else 0.0
        if self.kind == "dist":  # every replica holds the same averaged gradients: count one
            summed = self.transport.all_reduce_world([sq] if loss is None else [sq, loss])
            sq = summed[0] / self.dp
            loss = None if loss is None else summed[1] / self.dp
        norm = math.sqrt(sq)
        self.last_stats["grad_norm"] = norm
        return norm, loss

    def _step_sync(self) -> None:
        """Run by the first OPTIMIZER_STEP of a train_step: one all-reduce over every rank (under
        'dist') carrying the loss (every stage has its share by now) and, with clipping, the squared
        gradient norm; a step then has one all-reduce over all ranks, where it had one for the loss
        and another for the norm. Every stage steps after it, as before the step was a schedule action
        (clipping needs every stage's gradients anyway; stepping earlier without clipping was measured
        no faster on the shared CPU, where the early step competes with the stages still in cool-down)."""
        states = [w.state for w in self.workers.values()]
        if states[0].synced:
            return
        last = self.workers.get(self.S - 1)
        loss: float | None = last.state.loss_sum if last else 0.0
        norm = None
        if self.clip_norm:
            norm, loss = self._grad_norm(loss)
        elif self.kind == "dist":
            loss = self.transport.all_reduce_world([loss])[0] / self.dp
        for st in states:
            st.synced, st.grad_norm, st.world_loss = True, norm, loss

    def clip_grads(self) -> float:
        """Scale gradients so their global norm ACROSS all stages is at most clip_norm (as
        paddle.nn.ClipGradByGlobalNorm does on one device); returns the norm before clipping."""
        norm, _ = self._grad_norm()
        if self.clip_norm:
            _scale(self._grads(), self.clip_norm, norm)
        return norm

    def eval_forward(self, inputs) -> tuple | None:
        """Forward only, no gradients; the last block's outputs (concatenated over micro-batches)
        on the stage that holds the head (and in-process), None on other stages."""
        inputs_mb = [_as_tuple(m) for m in self._split(inputs, "inputs")]
        compute = [[Action(s, K.F, m, c) for m in range(self.M) for c in range(self.V)] for s in range(self.S)]
        if self.V > 1:  # order forwards so each chunk's input exists: by micro-batch, then chunk
            compute = [sorted(a, key=lambda x: (x.mb, x.chunk)) for a in compute]
        fwd = Schedule("forward", self.S, self.M, self.V, add_comms(compute, self.S, self.V, self.M, False))
        for w in self.workers.values():
            w.begin(inputs_mb, None, 1.0, train=False)
        self.transport.reset_step()
        self._execute(fwd)
        self._check_drained()
        last = self.workers.get(self.S - 1)
        if last is None or not last.state.outputs:
            return None
        outs = [last.state.outputs[m] for m in range(self.M)]
        cat = tuple(paddle.concat([o[i] for o in outs]) for i in range(len(outs[0])))
        return cat if len(cat) > 1 else cat[0]

    def _execute(self, schedule: Schedule) -> list[Span]:
        if self.kind == "inprocess":
            order = self._order() if schedule is self.schedule else blocking_order(schedule)
            return [self._do(a) for event in order for a in event]
        return [self._do(a) for a in schedule.actions[self.stage]]

    def _order(self) -> list[tuple[Action, ...]]:
        """The training schedule's global order for one process running every stage. The once-per-step
        actions go last: clipping needs every stage's gradients (across processes the all-reduce in
        OPTIMIZER_STEP waits for them instead), and in one process nothing could overlap them anyway."""
        if self._train_order is None:
            order = blocking_order(self.schedule)
            self._train_order = ([e for e in order if e[0].kind not in STEP]
                                 + [e for e in order if e[0].kind in STEP])
        return self._train_order

    def _do(self, a: Action) -> Span:
        """Run one action through the dispatch table; the span holds absolute perf_counter times."""
        w = self.workers[a.stage]
        handler = self.handlers.get(a.kind)
        if handler is None:
            raise RuntimeError(f"no handler for {a.kind} actions ({a}); register one with register_handler")
        start = time.perf_counter()
        handler(self, w, a)
        end = time.perf_counter()
        return Span(a.stage, str(a), a.kind, a.mb, start, end)

    # ---- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, paddle.Tensor]:
        """Parameters this process holds, keyed like an unpartitioned nn.LayerList(blocks)."""
        return {k: p for w in self.workers.values() for pc in w.pieces for k, p in pc.named_parameters()}

    def gather_timeline(self) -> Timeline:
        """The full measured timeline of the last step (a collective under transport='dist')."""
        if self.kind == "inprocess":
            return self.timeline
        spans = self.transport.gather_objects([tuple(s.__dict__.values()) for s in self._spans])
        spans = [Span(*x) for r, part in enumerate(spans) if r // self.S == self.replica for x in part]
        t0 = min(s.start for s in spans)
        return Timeline([Span(s.stage, s.action, s.kind, s.mb, s.start - t0, s.end - t0) for s in spans],
                        self.S, source="measured")
