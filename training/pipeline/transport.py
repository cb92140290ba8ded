"""Moving activations and gradients between stages: in one process, or across processes.

A message is the list of tensors one virtual stage hands to the next (forward: its outputs; backward:
the gradients of the next stage's differentiable inputs). Each tensor travels with a flag saying
whether it is a differentiable activation (float, stop_gradient=False) so the receiver can rebuild
leaves that gradients flow back into.

`InProcessTransport` keeps a mailbox: all stages live in one process and the engine runs the global
blocking order, so every receive finds its message. `DistTransport` uses paddle.distributed with one
2-rank group per stage link (gloo's point-to-point tag is a per-group op counter, so a shared group
would desynchronise), a shape/dtype handshake the first time a link carries activations in a step,
and one fused buffer per dtype per message. Every blocking call runs under a watchdog: a peer that
died raises `StageFailure` naming it, and a peer that hangs ends this process after `timeout_s` with
the same message instead of waiting forever.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import paddle
import paddle.distributed as dist

Message = list[tuple[paddle.Tensor, bool]]  # (tensor, differentiable?)

_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool", "uint8"]
_MAX_TENSORS, _MAX_DIMS = 8, 8
_HEADER = 1 + _MAX_TENSORS * (3 + _MAX_DIMS)


class StageFailure(RuntimeError):
    """A peer stage died or stopped answering."""


def _dtype_name(t: paddle.Tensor) -> str:
    return str(t.dtype).replace("paddle.", "")


class InProcessTransport:
    """Mailbox keyed by (kind, receiving vstage, micro-batch); deterministic."""

    def __init__(self) -> None:
        self.box: dict[tuple[str, int, int], Message] = {}

    def reset_step(self) -> None:
        self.box.clear()

    def send(self, kind: str, src_v: int, dst_v: int, mb: int, msg: Message) -> None:
        # a copy, as a real link makes: autograd may later write into a buffer it returned
        self.box[(kind, dst_v, mb)] = [(t.detach().clone(), flag) for t, flag in msg]

    def recv(self, kind: str, src_v: int, dst_v: int, mb: int, like: Message | None = None) -> Message:
        key = (kind, dst_v, mb)
        if key not in self.box:
            raise RuntimeError(f"in-process transport: no {kind} message for vstage {dst_v} mb {mb}; "
                               "the schedule runs a receive before its send")
        return self.box.pop(key)


def report_failure(message: str) -> None:
    """Write a stage failure to stderr and, when PIPELINE_FAILURE_FILE is set (a path that may hold
    {rank}), to that file, so a launcher or test can show why the run stopped."""
    sys.stderr.write(f"\nStageFailure: {message}\n")
    sys.stderr.flush()
    path = os.environ.get("PIPELINE_FAILURE_FILE")
    if path:
        with open(path.format(rank=os.environ.get("PADDLE_TRAINER_ID", "0")), "a", encoding="utf-8") as f:
            f.write(message + "\n")


class _Watchdog:
    """Ends the process with a clear message when one blocking op outlives its timeout."""

    def __init__(self, timeout_s: float, me: str) -> None:
        self.timeout_s, self.me = timeout_s, me
        self.current: tuple[float, str] | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.timeout_s / 4))
            with self.lock:
                cur = self.current
            if cur and time.monotonic() - cur[0] > self.timeout_s:
                report_failure(f"{self.me}: {cur[1]} got no answer in {self.timeout_s:.0f} s; that stage "
                               "died or hangs - check its log, then restart from the last checkpoint")
                os._exit(17)

    @contextmanager
    def guard(self, what: str) -> Iterator[None]:
        with self.lock:
            self.current = (time.monotonic(), what)
        try:
            yield
        except Exception as e:  # gloo raises when the peer's socket closes
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            msg = (f"{self.me}: {what} failed ({type(e).__name__}: {first}); that stage died - check its "
                   "log, then restart from the last checkpoint")
            report_failure(msg)
            raise StageFailure(msg) from e
        finally:
            with self.lock:
                self.current = None


class DistTransport:
    """paddle.distributed point-to-point for one pipeline rank (gloo on CPU, NCCL on GPU). Every send,
    receive and all-reduce is blocking (dist.send/recv/all_reduce) on either backend: there is no
    asynchronous path (gloo's isend/irecv would run synchronously anyway).

    Ranks are laid out replica-major: global rank = dp_index * stages + stage. Every rank must build
    this object at the same point (it creates every group, in the same order, on every rank)."""

    def __init__(self, stages: int, dp: int = 1, chunks: int = 1, timeout_s: float = 60.0) -> None:
        if not dist.is_initialized():
            dist.init_parallel_env()
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        if self.world != stages * dp:
            raise ValueError(f"{self.world} processes cannot run {stages} stages x {dp} data-parallel "
                             f"replicas; launch --nproc_per_node {stages * dp}")
        self.S, self.dp, self.V = stages, dp, chunks
        self.replica, self.stage = divmod(self.rank, stages)
        backend = "nccl" if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu") else "gloo"
        self.backend = backend
        # set-up is guarded like every message: a peer that dies while the groups connect is named
        self.watch = _Watchdog(timeout_s, f"stage {self.stage} (rank {self.rank})")
        self.links: dict[tuple[int, int], object] = {}
        for d in range(dp):
            pairs = []
            for s in range(stages - 1):
                pairs.append((s, s + 1))
            if chunks > 1 and stages > 2:
                pairs.append((0, stages - 1))  # last stage -> chunk+1 on stage 0
            for a, b in pairs:
                ga, gb = d * stages + a, d * stages + b
                with self.watch.guard(f"connecting the link between stage {a} (rank {ga}) and stage {b} "
                                      f"(rank {gb})"):
                    g = dist.new_group(sorted([ga, gb]), backend=backend)
                    if dp > 1:
                        dist.barrier()
                self.links[(min(ga, gb), max(ga, gb))] = g
        self.dp_group = None
        for s in range(stages):
            ranks = [d * stages + s for d in range(dp)]
            with self.watch.guard(f"connecting the data-parallel group of stage {s} (ranks {ranks})"):
                g = dist.new_group(ranks, backend=backend) if dp > 1 else None
                if dp > 1:
                    dist.barrier()  # gloo: without it a later group's rendezvous races this one's
            if s == self.stage:
                self.dp_group = g
        self.meta: dict[tuple[int, int], list[tuple[str, bool, list[int]]]] = {}

    def reset_step(self) -> None:
        self.meta.clear()  # shapes may change between steps (sequence length): handshake again

    def _peer(self, v: int) -> int:
        return self.replica * self.S + v % self.S

    def _group(self, peer: int):
        return self.links[(min(self.rank, peer), max(self.rank, peer))]

    # ---- fused buffers --------------------------------------------------------------------
    @staticmethod
    def _groups(dtypes: list[str]) -> list[str]:
        return list(dict.fromkeys(dtypes))

    def _send_fused(self, tensors: list[paddle.Tensor], peer: int, what: str) -> None:
        g = self._group(peer)
        for dt in self._groups([_dtype_name(t) for t in tensors]):
            parts = [t.reshape([-1]) for t in tensors if _dtype_name(t) == dt]
            buf = paddle.concat(parts) if len(parts) > 1 else parts[0]
            with self.watch.guard(f"{what} (send to stage {peer % self.S}, rank {peer})"):
                dist.send(buf.contiguous() if hasattr(buf, "contiguous") else buf, dst=peer, group=g)

    def _recv_fused(self, meta: list[tuple[str, bool, list[int]]], peer: int, what: str) -> list[paddle.Tensor]:
        g = self._group(peer)
        out: list[paddle.Tensor | None] = [None] * len(meta)
        for dt in self._groups([m[0] for m in meta]):
            idx = [i for i, m in enumerate(meta) if m[0] == dt]
            sizes = [int(np.prod(meta[i][2])) for i in idx]
            buf = paddle.empty([sum(sizes)], dtype=dt)
            with self.watch.guard(f"{what} (receive from stage {peer % self.S}, rank {peer})"):
                dist.recv(buf, src=peer, group=g)
            off = 0
            for i, n in zip(idx, sizes):
                out[i] = buf[off:off + n].reshape(meta[i][2])
                off += n
        return out  # type: ignore[return-value]

    # ---- messages ---------------------------------------------------------------------------
    def send(self, kind: str, src_v: int, dst_v: int, mb: int, msg: Message) -> None:
        peer = self._peer(dst_v)
        what = f"{'activations' if kind == 'F' else 'gradients'} of micro-batch {mb}"
        if kind == "F" and (src_v, dst_v) not in self.meta:
            if len(msg) > _MAX_TENSORS or any(len(t.shape) > _MAX_DIMS for t, _ in msg):
                raise ValueError(f"a block passes {len(msg)} tensors; the transport carries at most "
                                 f"{_MAX_TENSORS} of at most {_MAX_DIMS} dims - pack them in fewer tensors")
            head = np.zeros([_HEADER], dtype="int64")
            head[0] = len(msg)
            for i, (t, flag) in enumerate(msg):
                o = 1 + i * (3 + _MAX_DIMS)
                head[o:o + 3] = [_DTYPES.index(_dtype_name(t)), int(flag), len(t.shape)]
                head[o + 3:o + 3 + len(t.shape)] = t.shape
            with self.watch.guard(f"shape handshake for {what} (send to stage {peer % self.S})"):
                dist.send(paddle.to_tensor(head), dst=peer, group=self._group(peer))
            self.meta[(src_v, dst_v)] = [(_dtype_name(t), f, list(t.shape)) for t, f in msg]
        self._send_fused([t.detach() for t, _ in msg], peer, what)

    def recv(self, kind: str, src_v: int, dst_v: int, mb: int, like: Message | None = None) -> Message:
        peer = self._peer(src_v)
        what = f"{'activations' if kind == 'F' else 'gradients'} of micro-batch {mb}"
        if kind == "F":
            if (src_v, dst_v) not in self.meta:
                head = paddle.zeros([_HEADER], dtype="int64")
                with self.watch.guard(f"shape handshake for {what} (receive from stage {peer % self.S})"):
                    dist.recv(head, src=peer, group=self._group(peer))
                h = head.numpy()
                meta = []
                for i in range(int(h[0])):
                    o = 1 + i * (3 + _MAX_DIMS)
                    meta.append((_DTYPES[h[o]], bool(h[o + 1]), [int(x) for x in h[o + 3:o + 3 + h[o + 2]]]))
                self.meta[(src_v, dst_v)] = meta
            meta = self.meta[(src_v, dst_v)]
        else:  # gradients have the shapes of the activations this stage sent
            meta = [(_dtype_name(t), True, list(t.shape)) for t, _ in (like or [])]
        tensors = self._recv_fused(meta, peer, what)
        return [(t, m[1]) for t, m in zip(tensors, meta)]

    # ---- collectives ------------------------------------------------------------------------
    def all_reduce_world(self, values: list[float]) -> list[float]:
        t = paddle.to_tensor(np.asarray(values, dtype="float64"))
        with self.watch.guard("all-reduce across stages"):
            dist.all_reduce(t)
        return [float(x) for x in t.numpy()]

    def all_reduce_dp(self, grads: list[paddle.Tensor]) -> None:
        """Average gradients over this stage's data-parallel replicas, fused per dtype."""
        if self.dp == 1 or not grads:
            return
        for dt in self._groups([_dtype_name(g) for g in grads]):
            gs = [g for g in grads if _dtype_name(g) == dt]
            buf = paddle.concat([g.reshape([-1]) for g in gs])
            with self.watch.guard("data-parallel gradient all-reduce"):
                dist.all_reduce(buf, group=self.dp_group)
            buf = buf / self.dp
            off = 0
            with paddle.no_grad():
                for g in gs:
                    n = int(np.prod(g.shape))
                    paddle.assign(buf[off:off + n].reshape(g.shape), g)
                    off += n

    def gather_objects(self, obj) -> list:
        out: list = []
        with self.watch.guard("gathering timelines"):
            dist.all_gather_object(out, obj)
        return out
