"""Schedules without tensors: validity, deadlock freedom, text round trip, simulated bubble and memory."""
from __future__ import annotations

import pytest

from training.pipeline.schedule import (
    COMMS,
    COMPUTE,
    STEP,
    Action,
    ActionKind,
    Schedule,
    ScheduleError,
    all_admissible,
    build_schedule,
    peak_inflight,
    validate,
)
from training.pipeline.simulate import analytic_bubble, simulate

GRID = list(all_admissible([1, 2, 4, 8], range(1, 17), [1, 2]))


def test_grid_covers_every_schedule():
    names = {g[0] for g in GRID}
    assert names == {"gpipe", "1f1b", "interleaved", "zbh1"}
    assert len(GRID) > 200


@pytest.mark.parametrize("S", [1, 2, 4, 8])
def test_every_admissible_schedule_is_valid_and_deadlock_free(S):
    for name, s, M, V in GRID:
        if s != S:
            continue
        sched = build_schedule(name, S, M, V)
        order = validate(sched)
        # every action executed exactly once under blocking p2p
        assert sum(len(e) for e in order) == sum(len(a) for a in sched.actions)
        n_compute = (3 if name == "zbh1" else 2) * M * V * S
        assert sum(1 for e in order if len(e) == 1 and e[0].kind in COMPUTE) == n_compute
        assert sum(1 for e in order if len(e) == 1 and e[0].kind in STEP) == 2 * S  # reduce + step per stage


def test_text_round_trip_and_save_load(tmp_path):
    for name, S, M, V in [("gpipe", 4, 3, 1), ("1f1b", 4, 8, 1), ("interleaved", 2, 4, 2), ("zbh1", 4, 5, 1)]:
        sched = build_schedule(name, S, M, V)
        again = Schedule.from_text(sched.to_text())
        assert again == sched and again.diff(sched) == []
        sched.save(tmp_path / f"{name}.txt")
        assert Schedule.load(tmp_path / f"{name}.txt") == sched
    assert str(Action(2, "F", 0)) == "2F0"
    assert Action.parse("1SEND_B3v1") == Action(1, "SEND_B", 3, 1)
    assert str(Action.parse("0W12")) == "0W12"


def test_diff_names_first_difference():
    a, b = build_schedule("1f1b", 2, 4), build_schedule("gpipe", 2, 4)
    d = a.diff(b)
    assert d and d[0].startswith("stage 0 position")
    assert a != b


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
@pytest.mark.parametrize("S", [1, 2, 4, 8])
def test_uniform_bubble_matches_formula(name, S):
    for M in range(1, 17):
        tl = simulate(build_schedule(name, S, M), {"F": 1.0, "B": 2.0})
        assert tl.bubble == pytest.approx(analytic_bubble(name, S, M), abs=1e-12)
        assert tl.bubble == pytest.approx((S - 1) / (M + S - 1), abs=1e-12)


def test_interleaved_bubble_matches_formula():
    # Under blocking send/recv a message needs both stages between actions at once; in interleaved
    # steady state that is not always possible (2 stages; 8 stages with M > S), so the formula is
    # met exactly on 4 stages and on 8 stages with M = S (see README, "limits").
    for S, Ms in ((4, (4, 8, 16)), (8, (8,))):
        for M in Ms:
            tl = simulate(build_schedule("interleaved", S, M, 2), {"F": 1.0, "B": 2.0})
            assert tl.bubble == pytest.approx(analytic_bubble("interleaved", S, M, 2), abs=1e-12)
            assert tl.bubble < simulate(build_schedule("1f1b", S, M), {"F": 1.0, "B": 2.0}).bubble


@pytest.mark.parametrize("S", [2, 4, 8])
def test_peak_inflight_1f1b_bounded_gpipe_all(S):
    for M in range(1, 17):
        one = peak_inflight(build_schedule("1f1b", S, M))
        assert all(p <= S - s for s, p in enumerate(one)), one
        assert one[0] == min(S, M)
        assert peak_inflight(build_schedule("gpipe", S, M)) == [M] * S


@pytest.mark.parametrize("S", [2, 4, 8])
def test_zbh1_bubble_below_1f1b(S):
    for M in range(2, 17):
        one = simulate(build_schedule("1f1b", S, M), {"F": 1.0, "B": 2.0})
        zb = simulate(build_schedule("zbh1", S, M), {"F": 1.0, "B": 1.0, "W": 1.0})
        assert zb.bubble < one.bubble
        assert max(peak_inflight(build_schedule("zbh1", S, M))) <= S
    # long runs: the idle time is a third of 1F1B's (ZB-H1's (p-1)(F+B-W) vs (p-1)(F+B+W))
    one = simulate(build_schedule("1f1b", 4, 8), {"F": 1.0, "B": 2.0})
    zb = simulate(build_schedule("zbh1", 4, 8), {"F": 1.0, "B": 1.0, "W": 1.0})
    idle = lambda t: t.bubble * t.makespan  # noqa: E731
    assert idle(zb) == pytest.approx(idle(one) / 3)


def test_validator_catches_deadlock_and_missing_pieces():
    sched = build_schedule("1f1b", 2, 4)
    # swap stage 1's first receive after its forward: the forward would run without input
    bad = Schedule.from_text(sched.to_text())
    r = bad.actions[1]
    r[0], r[1] = r[1], r[0]
    with pytest.raises(ScheduleError, match="before its input"):
        validate(bad)
    # two sends facing each other deadlock under blocking p2p
    dead = Schedule.from_text(sched.to_text())
    a0 = dead.actions[0]
    i = a0.index(Action(0, "RECV_B", 0))
    j = a0.index(Action(0, "SEND_F", 1))
    a0.insert(i, a0.pop(j)) if j > i else None
    dead.actions[1] = [Action(1, "RECV_F", 0), Action(1, "F", 0), Action(1, "B", 0), Action(1, "SEND_B", 0)] + [
        a for a in dead.actions[1] if a.mb > 0]
    with pytest.raises(ScheduleError, match="deadlock"):
        validate(dead)
    missing = Schedule.from_text(sched.to_text())
    missing.actions[1] = [a for a in missing.actions[1] if a != Action(1, "SEND_B", 3)]
    with pytest.raises(ScheduleError, match="no matching|never runs"):
        validate(missing)


def test_interleaved_needs_multiple_of_stages():
    with pytest.raises(ScheduleError, match="multiple of stages"):
        build_schedule("interleaved", 4, 2, 2)
    with pytest.raises(ScheduleError, match="unknown schedule"):
        build_schedule("fastest", 4, 8)


def test_eager_sends_free_the_sender_but_not_the_receiver():
    # stage 1's forward is slow, so stage 0's second send finds no receiver yet
    cost = lambda a: {"F": 3.0 if a.stage == 1 else 1.0, "B": 1.0}.get(a.kind, 0.5)  # noqa: E731
    sched = build_schedule("gpipe", 2, 2)
    spans = {e: {s.action: s for s in simulate(sched, cost, eager_sends=e).spans} for e in (False, True)}
    assert spans[False]["0SEND_F1"].end == pytest.approx(5.0)  # blocking: waits for 1F0 to end at 4.5
    assert spans[True]["0SEND_F1"].end == pytest.approx(3.0)   # eager: its own 0.5 after 0F1
    for e in (False, True):
        assert spans[e]["1RECV_F1"].end == pytest.approx(5.0)  # the receiver still gets it at 4.5 + 0.5


@pytest.mark.parametrize("name", ["1f1b", "zbh1", "interleaved"])
def test_bench_costs_replay_a_timeline_exactly(name):
    from training.pipeline.bench import step_costs
    # uneven costs per action, as a measured step has them
    def cost(a):
        if a.kind in ("F", "B", "W"):  # stage 1's first micro-batch is slow, as a cold start is
            return 1.0 + 0.3 * a.stage + (2.0 if (a.stage, a.mb) == (1, 0) else 0.0)
        return 0.2 + 0.01 * a.mb
    sched = build_schedule(name, 2, 4, 2 if name == "interleaved" else 1)
    truth = simulate(sched, cost, eager_sends=True)
    replay = simulate(sched, step_costs(truth, 2, per_action=True), eager_sends=True)
    assert replay.makespan == pytest.approx(truth.makespan) and replay.bubble == pytest.approx(truth.bubble)
    model = simulate(sched, step_costs(truth, 2), eager_sends=True)  # one median cost per stage and kind
    assert model.makespan != pytest.approx(truth.makespan)


@pytest.mark.parametrize("S", [1, 2, 4, 8])
def test_each_stage_reduces_once_after_its_last_backward_then_steps_once(S):
    for name, s, M, V in GRID:
        if s != S:
            continue
        sched = build_schedule(name, S, M, V)
        last_bwd = ActionKind.W if name == "zbh1" else ActionKind.B
        for stage, acts in enumerate(sched.actions):
            kinds = [a.kind for a in acts]
            assert kinds.count(ActionKind.REDUCE_GRAD) == 1 and kinds.count(ActionKind.OPTIMIZER_STEP) == 1
            r, o = kinds.index(ActionKind.REDUCE_GRAD), kinds.index(ActionKind.OPTIMIZER_STEP)
            last = max(i for i, k in enumerate(kinds) if k == last_bwd)
            assert last < r < o == len(acts) - 1, (name, S, M, V, stage)
            # nothing but the send of that last backward's gradient sits between it and the reduce
            assert all(k == ActionKind.SEND_B for k in kinds[last + 1:r]), (name, stage, kinds[last + 1:r])
            # and every backward of every micro-batch of every chunk comes before it
            assert sum(1 for k in kinds[:r] if k == last_bwd) == M * V


def test_step_actions_text_parse_and_validation():
    sched = build_schedule("1f1b", 2, 4)
    assert sched.has_step_actions and not build_schedule("1f1b", 2, 4, step_actions=False).has_step_actions
    assert build_schedule("1f1b", 2, 4, step_actions=False).actions == [
        [a for a in acts if a.kind not in STEP] for acts in sched.actions]
    assert Action.parse("1REDUCE_GRAD") == Action(1, ActionKind.REDUCE_GRAD)
    assert str(Action(0, "OPTIMIZER_STEP")) == "0OPTIMIZER_STEP"
    assert Action(0, "F", 3).kind is ActionKind.F and Action(0, "F", 3).kind == "F"
    assert set(ActionKind) == set(COMPUTE + COMMS + STEP)
    with pytest.raises(ScheduleError, match="takes no micro-batch"):
        Action.parse("0REDUCE_GRAD3")
    with pytest.raises(ScheduleError, match="needs a micro-batch"):
        Action.parse("0F")
    with pytest.raises(ScheduleError, match="unknown action kind"):
        Action(0, "ALLREDUCE", 0)
    # a reduce before the stage's last backward is rejected; so is one before the last send (it would
    # hold the upstream stage's last backward behind this stage's all-reduce), and a stage that never steps
    early = Schedule.from_text(sched.to_text())
    acts = early.actions[0]
    acts.insert(1, acts.pop(acts.index(Action(0, ActionKind.REDUCE_GRAD))))
    with pytest.raises(ScheduleError, match="0REDUCE_GRAD runs before B of micro-batch 0"):
        validate(early)
    before_send = Schedule.from_text(sched.to_text())
    acts = before_send.actions[1]
    assert acts[-3] == Action(1, "SEND_B", 3)
    acts[-3], acts[-2] = acts[-2], acts[-3]
    with pytest.raises(ScheduleError, match="stage 1 must end with exactly one REDUCE_GRAD"):
        validate(before_send)
    none = Schedule.from_text(sched.to_text())
    none.actions[1] = [a for a in none.actions[1] if a.kind != ActionKind.OPTIMIZER_STEP]
    with pytest.raises(ScheduleError, match="stage 1 must end"):
        validate(none)


def test_step_actions_cost_nothing_unless_given():
    with_step = build_schedule("1f1b", 4, 8)
    without = build_schedule("1f1b", 4, 8, step_actions=False)
    a, b = simulate(with_step, {"F": 1.0, "B": 2.0}), simulate(without, {"F": 1.0, "B": 2.0})
    assert a.makespan == b.makespan and a.bubble == b.bubble
    # a modelled step: the last stage finishes its backward first, so its step hides in the cool-down
    c = simulate(with_step, {"F": 1.0, "B": 2.0, "OPTIMIZER_STEP": 1.0, "REDUCE_GRAD": 0.5})
    ends = {s.stage: s.end for s in c.spans if s.kind == ActionKind.OPTIMIZER_STEP}
    assert c.makespan == pytest.approx(b.makespan + 1.5)  # stage 0's reduce + step close the step
    assert ends[3] < ends[0] - 1.5


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_contended_model_recovers_a_shared_cpu_slowdown(name):
    """Stages that share cores run slower while another computes: a timeline made that way (solo
    costs a, factor k = 0.5 on the overlapped fraction) is fitted back and its bubble reproduced,
    which one median cost per kind cannot do."""
    from training.pipeline.bench import _overlap, contention_fit, simulate_contended, step_costs
    sched = build_schedule(name, 2, 4)
    solo = {(0, "F"): 1.0, (0, "B"): 2.0, (1, "F"): 1.2, (1, "B"): 2.2}
    f: dict = {}
    for _ in range(30):  # the timeline where every action's overlap is consistent with its duration
        truth = simulate(sched, lambda a, f=f: solo[(a.stage, a.kind)] * (1 + 0.5 * f.get(str(a), 1.0))
                         if a.kind in COMPUTE else 0.05, eager_sends=True)
        f = _overlap(truth.spans)
    fitted, k = contention_fit(truth)
    assert k == pytest.approx(0.5, abs=0.05)
    assert all(fitted[g] == pytest.approx(c, rel=0.05) for g, c in solo.items())
    contended, _ = simulate_contended(sched, truth, 2)
    assert contended.bubble == pytest.approx(truth.bubble, rel=0.02)
    median_model = simulate(sched, step_costs(truth, 2), eager_sends=True)
    assert abs(median_model.bubble / truth.bubble - 1) > 0.1
