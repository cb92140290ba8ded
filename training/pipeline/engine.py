"""Run a schedule: each stage executes its actions over micro-batches of one global batch.

    engine = PipelineEngine(blocks, loss_fn, lambda params: paddle.optimizer.AdamW(parameters=params),
                            stages=4, micro_batches=8, schedule="1f1b", transport="inprocess")
    loss = engine.train_step(inputs, labels)     # float, the full-batch loss, on every stage

`blocks` follows the block contract (README): [embeddings, layer_0..layer_{N-1}, head]. With
transport="dist" each process is one stage (rank = replica * stages + stage); every process passes
the same global batch and takes its own rows. One stage is the degenerate case of the same path.

Gradients: `loss_fn` returns the mean over a micro-batch; the engine scales each micro-batch loss by
1/M, so the gradients accumulated over M equal micro-batches equal the full-batch gradient (and DP
replicas average theirs). Gradients accumulate in param.grad exactly once per micro-batch; the
optimizer steps once per train_step.
"""
from __future__ import annotations

import math
import resource
import time
from typing import Callable, Sequence

import paddle
import paddle.nn as nn

from training.pipeline.deferred_wgrad import WGradStash, defer_linear_wgrads, linear_layers
from training.pipeline.schedule import Action, Schedule, add_comms, blocking_order, build_schedule, validate
from training.pipeline.simulate import Span, Timeline
from training.pipeline.transport import DistTransport, InProcessTransport, Message

LossFn = Callable[..., paddle.Tensor]
OptimizerFactory = Callable[[list], paddle.optimizer.Optimizer]


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(t: paddle.Tensor) -> bool:
    return t.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64) and not t.stop_gradient


def uniform_bounds(n_blocks: int, pieces: int) -> list[int]:
    """Cut points of a contiguous split of n blocks into `pieces` nearly equal parts."""
    if pieces > n_blocks:
        raise ValueError(f"cannot cut {n_blocks} blocks into {pieces} pipeline pieces; use fewer stages "
                         "or chunks, or a model with more layers")
    return [round(i * n_blocks / pieces) for i in range(pieces + 1)]


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
    """One physical stage: its pieces (one per chunk), optimizer and per-step activation store."""

    def __init__(self, stage: int, pieces: list[Piece], num_vstages: int, loss_fn: LossFn,
                 optimizer: paddle.optimizer.Optimizer | None, recompute: bool, split_backward: bool) -> None:
        self.stage, self.pieces, self.VS = stage, pieces, num_vstages
        self.loss_fn, self.optimizer, self.recompute, self.split = loss_fn, optimizer, recompute, split_backward
        self.linears = {pc.vstage: linear_layers(pc.blocks) for pc in pieces} if split_backward else {}

    def params(self) -> list:
        return [p for pc in self.pieces for p in pc.parameters()]

    def begin(self, inputs_mb: list, labels_mb: list, scale: float) -> None:
        self.inputs_mb, self.labels_mb, self.scale = inputs_mb, labels_mb, scale
        self.fin: dict[tuple[int, int], Message] = {}     # received forward messages (vstage, mb)
        self.gin: dict[tuple[int, int], Message] = {}     # received output gradients
        self.saved: dict[tuple[int, int], tuple] = {}     # (leaf inputs, outputs) per (vstage, mb)
        self.pending_w: dict[tuple[int, int], WGradStash] = {}  # Linear (X, dY) awaiting W
        self.out_f: dict[tuple[int, int], Message] = {}   # forward messages to send
        self.out_b: dict[tuple[int, int], Message] = {}   # gradient messages to send
        self.sent_meta: dict[tuple[int, int], list] = {}  # (shape, dtype) of differentiable outputs
        self.loss_sum = 0.0
        self.outputs: dict[int, tuple] = {}               # eval outputs of the last vstage

    def piece(self, vstage: int) -> Piece:
        for pc in self.pieces:
            if pc.vstage == vstage:
                return pc
        raise RuntimeError(f"stage {self.stage} does not hold virtual stage {vstage}")

    def _leaves(self, vstage: int, mb: int) -> tuple:
        if vstage == 0:
            return tuple(self.inputs_mb[mb])
        leaves = []
        for t, flag in self.fin.pop((vstage, mb)):
            x = t.detach()
            x.stop_gradient = not flag
            leaves.append(x)
        return tuple(leaves)

    def _run(self, vstage: int, mb: int, leaves: tuple):
        if self.split:  # B will compute input grads only; Linear weight grads wait for W
            stash = self.pending_w.setdefault((vstage, mb), WGradStash())
            with defer_linear_wgrads(self.linears[vstage], stash):
                out = self.piece(vstage)(*leaves)
        else:
            out = self.piece(vstage)(*leaves)
        if vstage == self.VS - 1:
            if self.labels_mb is None:
                return out
            return self.loss_fn(out, self.labels_mb[mb]) * self.scale
        return out

    def forward(self, vstage: int, mb: int, train: bool = True) -> None:
        leaves = self._leaves(vstage, mb)
        if not train:
            with paddle.no_grad():
                out = self.piece(vstage)(*leaves)
            if vstage == self.VS - 1:
                self.outputs[mb] = _as_tuple(out)
            else:
                self.out_f[(vstage, mb)] = [(t, False) for t in _as_tuple(out)]
            return
        if self.recompute and vstage < self.VS - 1:
            # run with autograd on (so outputs say which tensors are differentiable), then keep only
            # the inputs: the graph and its activations are freed here and rebuilt at B
            out = self._run(vstage, mb, leaves)
            self.saved[(vstage, mb)] = (leaves, None)
        else:
            out = self._run(vstage, mb, leaves)
            self.saved[(vstage, mb)] = (leaves, out)
        if vstage == self.VS - 1:
            self.loss_sum += float(out)
        else:
            self.out_f[(vstage, mb)] = [(t.detach(), _differentiable(t)) for t in _as_tuple(out)]
            if self.recompute:
                self.sent_meta[(vstage, mb)] = [(t.shape, t.dtype) for t in _as_tuple(out) if _differentiable(t)]

    def _targets(self, vstage: int, mb: int) -> tuple[list, list | None, list]:
        leaves, out = self.saved[(vstage, mb)]
        if out is None:  # recompute: rebuild the graph from fresh leaves now
            fresh = []
            for x in leaves:
                y = x.detach()
                y.stop_gradient = x.stop_gradient
                fresh.append(y)
            leaves = tuple(fresh)
            out = self._run(vstage, mb, leaves)
            self.saved[(vstage, mb)] = (leaves, out)
        if vstage == self.VS - 1:
            return [out], None, list(leaves)
        outs = [t for t in _as_tuple(out) if _differentiable(t)]
        grads = [g for g, _ in self.gin.pop((vstage, mb))]
        return outs, grads, list(leaves)

    def backward(self, vstage: int, mb: int) -> None:
        targets, grads, leaves = self._targets(vstage, mb)
        diff_in = [x for x in leaves if _differentiable(x)]
        # under a split schedule the Linear layers' backward only stashes (X, dY): this pass gives
        # the input gradients and the small non-Linear weight gradients; W does the rest
        paddle.autograd.backward(targets, grads)
        gin = [x.grad for x in diff_in]
        del self.saved[(vstage, mb)]
        if vstage > 0:
            self.out_b[(vstage, mb)] = [(g if g is not None else paddle.zeros_like(x), True)
                                        for g, x in zip(gin, diff_in)]

    def weight_grad(self, vstage: int, mb: int) -> None:
        """W: the Linear weight gradients B deferred, dW = X^T dY, added into param.grad."""
        self.pending_w.pop((vstage, mb)).apply()


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
        inputs_mb = [_as_tuple(m) for m in self._split(inputs, "inputs")]
        labels_mb = self._split(labels, "labels")
        for w in self.workers.values():
            for p in w.params():
                p.clear_gradient(set_to_zero=False)
            w.begin(inputs_mb, labels_mb, 1.0 / self.M)
        self.transport.reset_step()
        t0 = time.perf_counter()
        self._spans = self._execute(self.schedule, train=True)
        self.timeline = Timeline([Span(x.stage, x.action, x.kind, x.mb, x.start - t0, x.end - t0)
                                  for x in self._spans], self.S, source="measured")
        last = self.workers.get(self.S - 1)
        loss = last.loss_sum if last else 0.0
        if self.kind == "dist":
            self.transport.all_reduce_dp(self._grads())
            loss = self.transport.all_reduce_world([loss])[0] / self.dp
        self.last_stats["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu"):
            self.last_stats["max_allocated_mb"] = paddle.device.cuda.max_memory_allocated() / 2**20
        return loss

    def _grads(self) -> list:
        return [p.grad for w in self.workers.values() for p in w.params() if p.grad is not None]

    def clip_grads(self) -> float:
        """Scale gradients so their global norm ACROSS all stages is at most clip_norm (as
        paddle.nn.ClipGradByGlobalNorm does on one device); returns the norm before clipping."""
        grads = self._grads()
        # one host sync for the whole stage, not one per parameter (float() per grad cost ~0.2 s/step)
        sq = float(paddle.add_n([(g.astype("float64") ** 2).sum() for g in grads])) if grads else 0.0
        if self.kind == "dist":  # every replica holds the same averaged gradients: count one
            sq = self.transport.all_reduce_world([sq])[0] / self.dp
        norm = math.sqrt(sq)
        scale = self.clip_norm / max(norm, self.clip_norm) if self.clip_norm else 1.0
        if scale < 1.0:
            with paddle.no_grad():
                for g in grads:
                    g.scale_(scale)
        self.last_stats["grad_norm"] = norm
        return norm

    def train_step(self, inputs, labels) -> float:
        """One optimizer step over the global batch; returns the full-batch loss on every stage."""
        loss = self.forward_backward(inputs, labels)
        if self.clip_norm:
            self.clip_grads()
        for w in self.workers.values():
            if w.optimizer:
                w.optimizer.step()
                w.optimizer.clear_grad(set_to_zero=False)
        self.step += 1
        return loss

    def eval_forward(self, inputs) -> tuple | None:
        """Forward only, no gradients; the last block's outputs (concatenated over micro-batches)
        on the stage that holds the head (and in-process), None on other stages."""
        inputs_mb = [_as_tuple(m) for m in self._split(inputs, "inputs")]
        compute = [[Action(s, "F", m, c) for m in range(self.M) for c in range(self.V)] for s in range(self.S)]
        if self.V > 1:  # order forwards so each chunk's input exists: by micro-batch, then chunk
            compute = [sorted(a, key=lambda x: (x.mb, x.chunk)) for a in compute]
        fwd = Schedule("forward", self.S, self.M, self.V, add_comms(compute, self.S, self.V, self.M, False))
        for w in self.workers.values():
            w.begin(inputs_mb, None, 1.0)
        self.transport.reset_step()
        self._execute(fwd, train=False)
        last = self.workers.get(self.S - 1)
        if last is None or not last.outputs:
            return None
        outs = [last.outputs[m] for m in range(self.M)]
        cat = tuple(paddle.concat([o[i] for o in outs]) for i in range(len(outs[0])))
        return cat if len(cat) > 1 else cat[0]

    def _execute(self, schedule: Schedule, train: bool) -> list[Span]:
        spans: list[Span] = []
        if self.kind == "inprocess":
            for event in blocking_order(schedule) if not train else self._order():
                for a in event:
                    spans.append(self._do(a, train))
        else:
            for a in schedule.actions[self.stage]:
                spans.append(self._do(a, train))
        return spans

    def _order(self):
        if not hasattr(self, "_cached_order"):
            self._cached_order = blocking_order(self.schedule)
        return self._cached_order

    def _do(self, a: Action, train: bool) -> Span:
        """Run one action; the span holds absolute perf_counter times (one clock per host)."""
        w = self.workers[a.stage]
        v = a.vstage(self.S)
        start = time.perf_counter()
        if a.kind == "F":
            w.forward(v, a.mb, train)
            if self.S == 1 and v + 1 < self.S * self.V:  # next piece lives here: hand over locally
                w.fin[(v + 1, a.mb)] = w.out_f.pop((v, a.mb))
        elif a.kind == "B":
            w.backward(v, a.mb)
            if self.S == 1 and v > 0:
                w.gin[(v - 1, a.mb)] = w.out_b.pop((v, a.mb))
        elif a.kind == "W":
            w.weight_grad(v, a.mb)
        elif a.kind == "SEND_F":
            self.transport.send("F", v, v + 1, a.mb, w.out_f.pop((v, a.mb)))
        elif a.kind == "RECV_F":
            w.fin[(v, a.mb)] = self.transport.recv("F", v - 1, v, a.mb)
        elif a.kind == "SEND_B":
            self.transport.send("B", v, v - 1, a.mb, w.out_b.pop((v, a.mb)))
        elif a.kind == "RECV_B":
            leaves, out = w.saved[(v, a.mb)]
            like = [(t, True) for t in _as_tuple(out) if _differentiable(t)] if out is not None else \
                self._recompute_like(w, v, a.mb)
            w.gin[(v, a.mb)] = self.transport.recv("B", v + 1, v, a.mb, like)
        end = time.perf_counter()
        return Span(a.stage, str(a), a.kind, a.mb, start, end)

    def _recompute_like(self, w: StageWorker, v: int, mb: int) -> Message:
        # under recompute the outputs are not kept; the gradient shapes are those of the message sent
        return [(paddle.empty(shape, dtype), True) for shape, dtype in w.sent_meta.pop((v, mb))]

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
