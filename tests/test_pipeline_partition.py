"""Partitioner: the balanced split is optimal (brute force) and beats uniform on skewed costs."""
from __future__ import annotations

import itertools

import pytest

from training.pipeline.gantt import draw_gantt
from training.pipeline.partition import balanced_bounds, profile_blocks, report, stage_loads
from training.pipeline.schedule import build_schedule
from training.pipeline.simulate import simulate
from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch


def brute(weights, stages):
    n = len(weights)
    best = None
    for cuts in itertools.combinations(range(1, n), stages - 1):
        b = [0, *cuts, n]
        v = max(stage_loads(weights, b))
        best = v if best is None else min(best, v)
    return best


@pytest.mark.parametrize("weights", [[5, 1, 1, 1, 1, 1, 1, 6], [1] * 8, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])
def test_balanced_split_is_optimal(weights):
    for S in (1, 2, 3, 4):
        b = balanced_bounds(weights, S)
        assert b[0] == 0 and b[-1] == len(weights) and len(b) == S + 1
        assert max(stage_loads(weights, b)) == brute(weights, S)


def test_memory_cap_respected_and_clear_error():
    w, m = [1, 1, 1, 1], [4, 4, 1, 1]
    b = balanced_bounds(w, 2, mem=m, mem_limit=6)
    assert b == [0, 1, 4]
    with pytest.raises(ValueError, match="add stages"):
        balanced_bounds(w, 2, mem=m, mem_limit=3)


def test_profile_and_report_on_toy():
    cfg = ToyConfig(hidden=16, layers=2, heads=2, ffn=32, max_len=8)
    costs = profile_blocks(build_toy_blocks(cfg), make_batch(2, cfg)[0], repeats=1)
    assert len(costs) == 4 and all(c.seconds > 0 and c.param_mb > 0 for c in costs)
    r = report(costs, 2)
    assert r["balanced"]["max_s"] <= r["uniform"]["max_s"] + 1e-12


def test_gantt_png_from_simulated_timeline(tmp_path):
    tl = simulate(build_schedule("zbh1", 4, 4), {"F": 1, "B": 1, "W": 1, "comm": 0.1})
    out = draw_gantt(tl, tmp_path / "g.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
