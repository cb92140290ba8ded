"""Contiguous split of the block list into stages that minimises the slowest stage.

`profile_blocks` measures each block's forward+backward time and its parameter and activation
memory on a sample micro-batch (embeddings and head are blocks like any other); `balanced_bounds`
is an exact dynamic programme over cut points; `uniform_bounds` is the equal-count split the engine
uses when given no bounds; `report` compares the two.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import paddle


@dataclass
class BlockCost:
    seconds: float      # forward + backward
    param_mb: float
    activation_mb: float


def profile_blocks(blocks, inputs: tuple, repeats: int = 3) -> list[BlockCost]:
    """Time each block alone (median of `repeats`) on detached copies of its real inputs."""
    costs = []
    args = tuple(inputs)
    for blk in blocks:
        times = []
        for _ in range(repeats):
            leaves = []
            for a in args:
                x = a.detach()
                x.stop_gradient = a.stop_gradient if a.dtype in (paddle.float32, paddle.float64) else True
                leaves.append(x)
            t = time.perf_counter()
            out = blk(*leaves)
            outs = out if isinstance(out, tuple) else (out,)
            diff = [o for o in outs if not o.stop_gradient]
            if diff:
                paddle.autograd.backward(diff, [paddle.ones_like(o) for o in diff])
            times.append(time.perf_counter() - t)
        for p in blk.parameters():
            p.clear_gradient(set_to_zero=False)
        pm = sum(p.numel().item() * p.element_size() for p in blk.parameters()) / 2**20
        am = sum(o.numel().item() * o.element_size() for o in outs) / 2**20
        costs.append(BlockCost(sorted(times)[len(times) // 2], pm, am))
        args = tuple(o.detach() if o.stop_gradient else _leaf(o) for o in outs)
    return costs


def _leaf(t):
    x = t.detach()
    x.stop_gradient = False
    return x


def uniform_bounds(n_blocks: int, pieces: int) -> list[int]:
    """Cut points of a contiguous split of n blocks into `pieces` nearly equal parts."""
    if pieces > n_blocks:
        raise ValueError(f"cannot cut {n_blocks} blocks into {pieces} pipeline pieces; use fewer stages "
                         "or chunks, or a model with more layers")
    return [round(i * n_blocks / pieces) for i in range(pieces + 1)]


def balanced_bounds(weights: list[float], stages: int, mem: list[float] | None = None,
                    mem_limit: float | None = None) -> list[int]:
    """Cut points minimising the heaviest stage (sum of weights), optionally under a memory cap."""
    n = len(weights)
    if stages > n:
        raise ValueError(f"{n} blocks cannot fill {stages} stages; use fewer stages")
    pre = [0.0]
    for w in weights:
        pre.append(pre[-1] + w)
    mpre = [0.0]
    for m in mem or [0.0] * n:
        mpre.append(mpre[-1] + m)
    INF = float("inf")
    best = [[INF] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for s in range(1, stages + 1):
        for j in range(s, n - (stages - s) + 1):
            for i in range(s - 1, j):
                if mem_limit is not None and mpre[j] - mpre[i] > mem_limit:
                    continue
                v = max(best[s - 1][i], pre[j] - pre[i])
                if v < best[s][j]:
                    best[s][j], cut[s][j] = v, i
    if best[stages][n] == INF:
        raise ValueError(f"no split into {stages} stages fits {mem_limit} MB per stage; add stages")
    bounds, j = [n], n
    for s in range(stages, 0, -1):
        j = cut[s][j]
        bounds.append(j)
    return bounds[::-1]


def stage_loads(weights: list[float], bounds: list[int]) -> list[float]:
    return [sum(weights[bounds[i]:bounds[i + 1]]) for i in range(len(bounds) - 1)]


def report(costs: list[BlockCost], stages: int) -> dict:
    """Uniform vs balanced: per-stage time and the slowest stage of each."""
    w = [c.seconds for c in costs]
    uni, bal = uniform_bounds(len(w), stages), balanced_bounds(w, stages)
    lu, lb = stage_loads(w, uni), stage_loads(w, bal)
    return {"uniform": {"bounds": uni, "stage_s": lu, "max_s": max(lu)},
            "balanced": {"bounds": bal, "stage_s": lb, "max_s": max(lb)},
            "speedup_of_slowest": max(lu) / max(lb) if max(lb) else 1.0}
