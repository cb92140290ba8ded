"""Numerics without processes: the in-process engine against one plain single-process run."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

from training.pipeline.deferred_wgrad import WGradStash, defer_linear_wgrads, linear_layers
from training.pipeline.engine import DEFAULT_HANDLERS, PipelineEngine, StepState
from training.pipeline.schedule import ActionKind, build_schedule
from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, run_blocks, toy_loss

CFG = ToyConfig(hidden=32, layers=6, heads=4, ffn=64, max_len=12)  # 8 blocks: 4 stages x 2 chunks
RTOL = 1e-5


def adamw(params):
    return paddle.optimizer.AdamW(learning_rate=0.01, parameters=params, weight_decay=0.01)


def reference(steps: int = 0, clip: float | None = None, batch: int = 8):
    """Loss and gradients of the first step, and weights after `steps` AdamW steps, one process."""
    blocks = build_toy_blocks(CFG, seed=0, dtype="float64")
    params = [p for b in blocks for p in b.parameters()]
    opt = paddle.optimizer.AdamW(learning_rate=0.01, parameters=params, weight_decay=0.01,
                                 grad_clip=paddle.nn.ClipGradByGlobalNorm(clip) if clip else None)
    first = None
    for step in range(max(steps, 1)):
        inputs, labels = make_batch(batch, CFG, seed=step)
        loss = toy_loss(run_blocks(blocks, inputs), labels)
        loss.backward()
        if first is None:
            first = (float(loss), {f"{i}.{n}": p.grad.numpy().copy()
                                   for i, b in enumerate(blocks) for n, p in b.named_parameters()})
        if steps:
            opt.step()
        opt.clear_grad()
    weights = {f"{i}.{n}": p.numpy().copy() for i, b in enumerate(blocks) for n, p in b.named_parameters()}
    return first[0], first[1], weights


@pytest.fixture(scope="module")
def ref():
    return reference(steps=3)


def engine(schedule: str, stages: int = 4, mbs: int = 4, **kw) -> PipelineEngine:
    blocks = build_toy_blocks(CFG, seed=0, dtype="float64")
    return PipelineEngine(blocks, toy_loss, adamw, stages=stages, micro_batches=mbs, schedule=schedule, **kw)


def assert_grads(eng: PipelineEngine, grads: dict) -> None:
    sd = eng.state_dict()
    assert set(sd) == set(grads)
    for k, g in grads.items():
        np.testing.assert_allclose(sd[k].grad.numpy(), g, rtol=RTOL, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("schedule,stages", [("gpipe", 4), ("1f1b", 4), ("interleaved", 4), ("zbh1", 4)])
def test_four_stage_parity_loss_grads_and_three_steps(schedule, stages, ref):
    loss0, grads0, weights3 = ref
    eng = engine(schedule, stages=stages, mbs=4)
    inputs, labels = make_batch(8, CFG, seed=0)
    assert eng.forward_backward(inputs, labels) == pytest.approx(loss0, rel=RTOL)
    assert_grads(eng, grads0)
    for step in range(3):
        eng.train_step(*make_batch(8, CFG, seed=step))
    for k, w in eng.state_dict().items():
        np.testing.assert_allclose(w.numpy(), weights3[k], rtol=RTOL, atol=1e-10, err_msg=k)


@pytest.mark.parametrize("kw", [{"recompute": True}, {"stages": 1}, {"stages": 2, "schedule": "interleaved"},
                                {"schedule": "zbh1", "recompute": True}, {"schedule": "zbh1", "stages": 1}])
def test_recompute_and_single_stage_same_path(kw, ref):
    loss0, grads0, _ = ref
    kw = {"schedule": "1f1b", "stages": 4, **kw}
    eng = engine(kw.pop("schedule"), stages=kw.pop("stages"), mbs=4, **kw)
    assert eng.forward_backward(*make_batch(8, CFG, seed=0)) == pytest.approx(loss0, rel=RTOL)
    assert_grads(eng, grads0)


def test_deferred_linear_b_gives_input_grads_only_and_w_adds_weight_grads():
    blocks = build_toy_blocks(CFG, seed=0, dtype="float64")
    layer = blocks[1]
    h = paddle.to_tensor(np.random.default_rng(0).standard_normal((2, 12, CFG.hidden)))
    bias = paddle.zeros([2, 1, 1, 12], dtype="float64")
    dy = paddle.to_tensor(np.random.default_rng(1).standard_normal((2, 12, CFG.hidden)))

    def run(defer: bool):
        x = h.detach()
        x.stop_gradient = False
        for p in layer.parameters():
            p.clear_gradient(set_to_zero=False)
        stash = WGradStash()
        if defer:
            with defer_linear_wgrads(linear_layers([layer]), stash):
                out, _ = layer(x, bias)
        else:
            out, _ = layer(x, bias)
        paddle.autograd.backward([out], [dy])
        return x.grad.numpy(), stash

    want_dx, _ = run(defer=False)
    want = {n: p.grad.numpy().copy() for n, p in layer.named_parameters()}
    got_dx, stash = run(defer=True)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-12)
    # (clear_gradient leaves a zero tensor on Paddle 3.3, None on others)
    after_b = {n: 0.0 if p.grad is None else float(p.grad.abs().sum()) for n, p in layer.named_parameters()}
    linear_names = {n for n in want if n.split(".")[0] in ("qkv", "out", "ff1", "ff2")}
    assert all(after_b[n] == 0.0 for n in linear_names)  # B did not compute Linear weight grads
    assert all(after_b[n] > 0.0 for n in set(want) - linear_names)  # LayerNorm grads came in B
    assert len(stash.items) == 4
    stash.apply()
    for n, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want[n], rtol=1e-10, err_msg=n)
    assert stash.items == [] and all("forward" not in vars(m) for m in linear_layers([layer]))


def test_clip_by_global_norm_across_stages():
    _, grads0, weights3 = reference(steps=3, clip=0.05)
    norm = float(np.sqrt(sum((g ** 2).sum() for g in grads0.values())))
    assert norm > 0.05  # the clip is active, so the test can tell
    eng = engine("1f1b", clip_norm=0.05)
    for step in range(3):
        eng.train_step(*make_batch(8, CFG, seed=step))
    for k, w in eng.state_dict().items():
        np.testing.assert_allclose(w.numpy(), weights3[k], rtol=RTOL, atol=1e-10, err_msg=k)


def test_eval_forward_matches_plain_forward():
    blocks = build_toy_blocks(CFG, seed=0, dtype="float64")
    inputs, _ = make_batch(8, CFG, seed=2)
    want = run_blocks(blocks, inputs).numpy()
    got = engine("1f1b").eval_forward(inputs)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_timeline_records_every_action():
    eng = engine("1f1b")
    eng.train_step(*make_batch(8, CFG, seed=0))
    tl = eng.timeline
    assert len(tl.spans) == sum(len(a) for a in eng.schedule.actions)
    assert all(s.end >= s.start >= 0 for s in tl.spans)
    assert {s.kind for s in tl.spans} == {"F", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "REDUCE_GRAD",
                                          "OPTIMIZER_STEP"}


def test_clear_errors():
    with pytest.raises(ValueError, match="divisible by 4"):
        engine("1f1b").train_step(*make_batch(6, CFG, seed=0))
    with pytest.raises(ValueError, match="multiple of stages"):
        engine("interleaved", stages=2, mbs=1)
    with pytest.raises(ValueError, match="cannot cut 8 blocks into 16"):
        engine("interleaved", stages=8, mbs=8)
    with pytest.raises(ValueError, match="transport='dist'"):
        engine("1f1b", dp=2)


def test_registered_handler_replaces_the_default_and_can_call_through(ref):
    loss0, grads0, _ = ref
    eng = engine("zbh1")
    seen: list[str] = []

    def counting(kind):
        def handler(e, worker, action):
            seen.append(str(action))
            return previous[kind](e, worker, action)
        return handler

    previous = {k: eng.register_handler(k, counting(k)) for k in (ActionKind.W, "OPTIMIZER_STEP")}
    assert previous[ActionKind.W] is DEFAULT_HANDLERS[ActionKind.W]
    assert set(DEFAULT_HANDLERS) == set(ActionKind)  # every kind has a default handler
    assert eng.forward_backward(*make_batch(8, CFG, seed=0)) == pytest.approx(loss0, rel=RTOL)
    assert_grads(eng, grads0)  # calling through keeps the numerics
    assert sorted(seen) == sorted([f"{s}W{m}" for s in range(4) for m in range(4)]
                                  + [f"{s}OPTIMIZER_STEP" for s in range(4)])
    assert engine("zbh1").handlers[ActionKind.W] is DEFAULT_HANDLERS[ActionKind.W]  # per engine only

    # a handler that drops the work is what runs: without the weight gradients the step is incomplete
    eng.register_handler("W", lambda e, w, a: w.state.pending_w.pop((a.vstage(e.S), a.mb)))
    eng.forward_backward(*make_batch(8, CFG, seed=0))
    assert not np.allclose(eng.state_dict()["1.qkv.weight"].grad.numpy(), grads0["1.qkv.weight"])
    with pytest.raises(ValueError, match="no action kind 'ALLREDUCE'"):
        eng.register_handler("ALLREDUCE", lambda e, w, a: None)


def test_a_handler_that_loses_state_is_caught_at_the_end_of_the_step():
    def send_keeping(e, w, a):  # sends the activations but forgets to drop them
        v = a.vstage(e.S)
        e.transport.send("F", v, v + 1, a.mb, w.state.out_f[(v, a.mb)])

    eng = engine("1f1b")
    eng.register_handler("SEND_F", send_keeping)
    with pytest.raises(RuntimeError, match="stage 0 ended the step with unconsumed state {'out_f'"):
        eng.forward_backward(*make_batch(8, CFG, seed=0))


def test_step_state_is_new_and_empty_every_step(ref):
    loss0, _, _ = ref
    eng = engine("1f1b", recompute=True)
    batch = make_batch(8, CFG, seed=0)
    assert eng.forward_backward(*batch) == pytest.approx(loss0, rel=RTOL)
    first = {s: w.state for s, w in eng.workers.items()}
    assert all(isinstance(st, StepState) and st.leftovers() == {} and st.reduced and not st.stepped
               for st in first.values())
    # the same batch again: the loss is this step's alone, not added to the last one's
    assert eng.forward_backward(*batch) == pytest.approx(loss0, rel=RTOL)
    assert all(w.state is not first[s] for s, w in eng.workers.items())
    eng.train_step(*batch)
    assert all(w.state.stepped and w.state.optimize for w in eng.workers.values())
    eng.eval_forward(batch[0])
    assert all(not w.state.train and not w.state.stepped for w in eng.workers.values())
    assert set(eng.workers[3].state.outputs) == set(range(4)) and eng.workers[0].state.loss_sum == 0.0


@pytest.mark.parametrize("schedule", ["1f1b", "zbh1"])
def test_step_in_schedule_equals_step_after_it(schedule):
    """REDUCE_GRAD / OPTIMIZER_STEP inside the schedule give the same weights as the engine's step
    after a schedule without them (clipping active, so the global norm is taken at the right time)."""
    got = {}
    for in_schedule in (True, False):
        sched = build_schedule(schedule, 4, 4, step_actions=in_schedule)
        eng = PipelineEngine(build_toy_blocks(CFG, seed=0, dtype="float64"), toy_loss, adamw, stages=4,
                             micro_batches=4, schedule=sched, clip_norm=0.05)
        for step in range(2):
            eng.train_step(*make_batch(8, CFG, seed=step))
        got[in_schedule] = {k: v.numpy() for k, v in eng.state_dict().items()}
        assert eng.last_stats["grad_norm"] > 0.05
    for k, w in got[True].items():
        np.testing.assert_allclose(w, got[False][k], rtol=1e-12, err_msg=k)
