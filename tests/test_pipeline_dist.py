"""Schedules and numerics together: real processes on gloo against one plain single-process run."""
from __future__ import annotations

import os
import time

import numpy as np
import paddle
import paddle.distributed as dist
import pytest

from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, run_blocks, toy_loss

CFG = ToyConfig(hidden=32, layers=6, heads=4, ffn=64, max_len=8)
RTOL = 1e-5


def sgd(params):
    return paddle.optimizer.SGD(learning_rate=0.1, parameters=params)


def _worker(out_dir: str, schedules: list, stages: int, dp: int, mbs: int, die_rank: int = -1,
            clip: float | None = None) -> None:
    """One process = one stage of one replica; writes loss, grads and weights after 3 steps."""
    from training.pipeline.engine import PipelineEngine
    dist.init_parallel_env()
    rank = dist.get_rank()
    for name in schedules:
        eng = PipelineEngine(build_toy_blocks(CFG, seed=0, dtype="float64"), toy_loss, sgd, stages=stages,
                             micro_batches=mbs, schedule=name, transport="dist", dp=dp, timeout_s=20,
                             clip_norm=clip)
        if rank == die_rank:
            os._exit(3)  # a stage dies before its first message
        loss = eng.forward_backward(*make_batch(8, CFG, seed=0))
        grads = {k: p.grad.numpy() for k, p in eng.state_dict().items()}
        losses = [eng.train_step(*make_batch(8, CFG, seed=step)) for step in range(3)]
        weights = {k: p.numpy() for k, p in eng.state_dict().items()}
        np.savez(os.path.join(out_dir, f"{name}_{rank}.npz"), loss=loss, losses=np.array(losses),
                 **{"g:" + k: v for k, v in grads.items()}, **{"w:" + k: v for k, v in weights.items()})


def _reference(clip: float | None = None):
    blocks = build_toy_blocks(CFG, seed=0, dtype="float64")
    params = [p for b in blocks for p in b.parameters()]
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=params,
                               grad_clip=paddle.nn.ClipGradByGlobalNorm(clip) if clip else None)
    inputs, labels = make_batch(8, CFG, seed=0)
    loss = toy_loss(run_blocks(blocks, inputs), labels)
    loss.backward()
    named = lambda: {f"{i}.{n}": p for i, b in enumerate(blocks) for n, p in b.named_parameters()}  # noqa: E731
    grads = {k: p.grad.numpy().copy() for k, p in named().items()}
    opt.clear_grad()
    losses = []
    for step in range(3):
        inputs, labels = make_batch(8, CFG, seed=step)
        step_loss = toy_loss(run_blocks(blocks, inputs), labels)
        step_loss.backward()
        losses.append(float(step_loss))
        opt.step()
        opt.clear_grad()
    return float(loss), grads, {k: p.numpy().copy() for k, p in named().items()}, losses


def _check(out_dir, name: str, ranks: range, ref) -> None:
    loss0, grads0, weights0, losses = ref
    seen = set()
    for r in ranks:
        z = np.load(os.path.join(out_dir, f"{name}_{r}.npz"))
        assert float(z["loss"]) == pytest.approx(loss0, rel=RTOL), (name, r)
        np.testing.assert_allclose(z["losses"], losses, rtol=RTOL, err_msg=f"{name} rank {r} train_step losses")
        for key in z.files:
            if key in ("loss", "losses"):
                continue
            kind, k = key.split(":", 1)
            want = grads0[k] if kind == "g" else weights0[k]
            np.testing.assert_allclose(z[key], want, rtol=RTOL, atol=1e-10, err_msg=f"{name} rank {r} {key}")
            seen.add(k)
    assert seen == set(grads0)  # every parameter lives on some stage


@pytest.mark.heavy
def test_four_processes_every_schedule_match_single_process(tmp_path):
    schedules = ["gpipe", "1f1b", "interleaved", "zbh1"]
    dist.spawn(_worker, args=(str(tmp_path), schedules, 4, 1, 4), nprocs=4, backend="gloo")
    ref = _reference()
    for name in schedules:
        _check(tmp_path, name, range(4), ref)


@pytest.mark.heavy
def test_dp2_x_pp2_on_four_processes(tmp_path):
    dist.spawn(_worker, args=(str(tmp_path), ["1f1b"], 2, 2, 2), nprocs=4, backend="gloo")
    _check(tmp_path, "1f1b", range(4), _reference())


@pytest.mark.heavy
def test_dp2_x_pp2_clipped_steps_in_the_schedule(tmp_path):
    """OPTIMIZER_STEP clips by the global norm across stages and replicas (its all-reduce also
    carries the loss): weights and every rank's train_step loss equal one clipped process."""
    ref = _reference(clip=0.05)
    assert float(np.sqrt(sum((g ** 2).sum() for g in ref[1].values()))) > 0.05  # the clip is active
    dist.spawn(_worker, args=(str(tmp_path), ["zbh1"], 2, 2, 2, -1, 0.05), nprocs=4, backend="gloo")
    _check(tmp_path, "zbh1", range(4), ref)


def _spawn_failing(worker, args: tuple, tmp_path) -> tuple[list, float]:
    """Two ranks of `worker` that are meant to fail, each writing its failure to tmp_path/error_RANK.txt:
    (their exit codes, None for one still running after 60 s and then stopped; seconds waited)."""
    os.environ["PIPELINE_FAILURE_FILE"] = str(tmp_path / "error_{rank}.txt")  # inherited by the workers
    t0 = time.time()
    ctx = dist.spawn(worker, args=args, nprocs=2, backend="gloo", join=False)
    for p in ctx.processes:
        p.join(timeout=60)
    elapsed = time.time() - t0
    del os.environ["PIPELINE_FAILURE_FILE"]
    codes = [p.exitcode for p in ctx.processes]
    for p in ctx.processes:
        if p.exitcode is None:
            p.terminate()
    return codes, elapsed


@pytest.mark.heavy
def test_killed_stage_names_it_within_bounded_time(tmp_path):
    codes, elapsed = _spawn_failing(_worker, (str(tmp_path), ["1f1b"], 2, 1, 2, 1), tmp_path)
    assert codes[1] == 3
    assert codes[0] not in (0, None), "the surviving stage should fail, not hang or succeed"
    err = (tmp_path / "error_0.txt").read_text() if (tmp_path / "error_0.txt").exists() else ""
    assert "stage 1" in err, (codes, err)
    assert elapsed < 60


def _early_death_worker(out_dir: str) -> None:
    """Rank 1 dies after joining the job but before the stage links connect."""
    from training.pipeline.engine import PipelineEngine
    dist.init_parallel_env()
    ready = os.path.join(out_dir, "ready_0")
    if dist.get_rank() == 1:
        # Die only once rank 0 is past init_parallel_env: dying while rank 0 is still inside it makes
        # gloo's own set-up raise before any engine (or its watchdog) exists, which is not the case
        # under test.
        deadline = time.monotonic() + 30
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(3)
    with open(ready, "w") as f:
        f.write("ready")
    PipelineEngine(build_toy_blocks(CFG, seed=0, dtype="float64"), toy_loss, sgd, stages=2, micro_batches=2,
                   schedule="1f1b", transport="dist", timeout_s=5)


@pytest.mark.heavy
def test_stage_dead_before_links_connect_is_named_not_waited_on(tmp_path):
    """Set-up runs under the same watchdog as every message: without it rank 0 waited in new_group
    for the store's own timeout (minutes) and wrote no failure at all. Rank 0 ends either way the link
    can fail: the watchdog's exit 17 when new_group hangs, or StageFailure (exit 1) when gloo raises on
    the dead peer's closed socket first; both name the link."""
    codes, elapsed = _spawn_failing(_early_death_worker, (str(tmp_path),), tmp_path)
    assert codes[1] == 3 and codes[0] in (1, 17), codes
    err = (tmp_path / "error_0.txt").read_text()
    assert "connecting the link between stage 0 (rank 0) and stage 1 (rank 1)" in err, err
    assert ("got no answer" in err) == (codes[0] == 17) and ("failed (" in err) == (codes[0] == 1), (codes, err)
    assert elapsed < 60
