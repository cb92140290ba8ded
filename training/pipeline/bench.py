"""Measured vs simulated pipeline bubble, per-stage time and peak memory, per schedule.

    python -m training.pipeline.bench --stages 2 --micro-batches 8 --schedule all
    python -m training.pipeline.bench --stages 4 --micro-batches 8 --schedule 1f1b

One process per stage (paddle.distributed.spawn, gloo), each pinned to one CPU thread. After
--warmup untimed steps, the schedules take turns step by step (so load from other jobs hits them
alike) and every timed step is simulated from the costs that same step measured (per
stage: median F, B, W; per message: the send's own time and the receive's time after both sides
reached it, since gloo sends these messages eagerly), and the table gives the median over steps of
measured bubble, simulated bubble and their ratio; "replay" simulates each action at its own
measured duration instead of the per-stage median (on a CPU shared with other jobs, a stage runs
faster while its neighbour idles, which one cost per kind cannot show); "contended" models exactly that
with a solo cost per stage and kind and one slow-down factor k for the time another stage computes
too, fitted to the step (`contention_fit`, `simulate_contended`). On a 2-core machine more
than 2 stage processes oversubscribe the CPU: use 2 stages for the timing bar. Writes
<out>/pipeline_bench.json and a measured and a simulated Gantt PNG per schedule (median step).

    python -m training.pipeline.bench --dp 2 --stages 2 --micro-batches 4 --schedule all

With --dp > 1 it instead compares, on stages x dp gloo processes, the step with REDUCE_GRAD and
OPTIMIZER_STEP in the schedule (each stage reduces right after its last backward, then steps after
the step's one all-reduce over every rank) against the same schedule without them (the engine
reduces, clips and steps after the whole schedule, as it did before), same model, same batches, the
two variants taking turns (alternating which goes first) after a barrier; the step time of a round
is the slowest rank's. Prints a table and writes bench/results/pipeline_dp_bench.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from data.atomic import write_text_atomic
from training.pipeline.schedule import COMPUTE, SCHEDULES, STEP, Action


def _worker(args: dict, out_file: str) -> None:
    import paddle
    import paddle.distributed as dist

    from training.pipeline.engine import PipelineEngine
    from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss
    os.environ["OMP_NUM_THREADS"] = "1"
    paddle.base.core.set_num_threads(1)  # one thread per stage: cores are not shared between stages
    dist.init_parallel_env()
    cfg = ToyConfig(hidden=args["hidden"], layers=args["layers"], heads=4, ffn=4 * args["hidden"],
                    max_len=args["seq"], vocab=512)
    batch = make_batch(args["batch"], cfg, seed=0)
    engines = {}
    for name in args["schedules"]:
        engines[name] = PipelineEngine(build_toy_blocks(cfg, seed=0), toy_loss,
                                       lambda p: paddle.optimizer.SGD(learning_rate=1e-3, parameters=p),
                                       stages=args["stages"], micro_batches=args["mbs"], schedule=name,
                                       transport="dist", timeout_s=120)
        for _ in range(args["warmup"]):  # allocator, handshakes, first-touch of weights
            engines[name].train_step(*batch)
    runs: dict[str, list] = {name: [] for name in engines}
    for _ in range(args["steps"]):
        # schedules take turns step by step, so a change in the machine's load hits them alike
        for name, engine in engines.items():
            engine.train_step(*batch)
            tl = engine.gather_timeline()
            runs[name].append([(s.stage, s.action, s.kind, s.mb, s.start, s.end) for s in tl.spans])
    any_engine = next(iter(engines.values()))
    rss = any_engine.transport.gather_objects(any_engine.last_stats.get("rss_mb"))  # process peak
    results = {name: {"runs": runs[name], "bounds": engines[name].bounds, "rss_mb_per_stage": rss}
               for name in engines}
    if dist.get_rank() == 0:
        Path(out_file).write_text(json.dumps(results))


VARIANTS = {"in schedule": True, "after schedule": False}  # variant -> build_schedule(step_actions=...)


def _dp_worker(args: dict, out_file: str) -> None:
    import paddle
    import paddle.distributed as dist

    from training.pipeline.engine import PipelineEngine
    from training.pipeline.schedule import build_schedule
    from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss
    os.environ["OMP_NUM_THREADS"] = "1"
    paddle.base.core.set_num_threads(1)
    dist.init_parallel_env()
    S, M = args["stages"], args["mbs"]
    cfg = ToyConfig(hidden=args["hidden"], layers=args["layers"], heads=4, ffn=4 * args["hidden"],
                    max_len=args["seq"], vocab=512)
    engines = {}
    for name in args["schedules"]:
        for variant, step_actions in VARIANTS.items():
            sched = build_schedule(name, S, M, 2 if name == "interleaved" else 1, step_actions=step_actions)
            engines[(name, variant)] = PipelineEngine(
                build_toy_blocks(cfg, seed=0), toy_loss,
                lambda p: paddle.optimizer.AdamW(learning_rate=1e-3, parameters=p, weight_decay=0.01),
                stages=S, micro_batches=M, schedule=sched, transport="dist", dp=args["dp"],
                clip_norm=args["clip_norm"], timeout_s=120)
    times: dict[str, list[float]] = {f"{n}|{v}": [] for n, v in engines}
    overlap: dict[str, list[float]] = {n: [] for n in args["schedules"]}
    last_tl: dict[str, list] = {}  # replica 0's last timed in-schedule step, for a Gantt chart
    losses: dict[str, list[float]] = {k: [] for k in times}
    for r in range(args["warmup"] + args["steps"]):
        batch = make_batch(args["batch"], cfg, seed=r)
        for name in args["schedules"]:
            pair = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
            for variant in pair:
                eng = engines[(name, variant)]
                dist.barrier()
                t0 = time.perf_counter()
                loss = eng.train_step(*batch)
                dt = time.perf_counter() - t0
                tl = eng.gather_timeline()  # a collective: outside the timed part
                losses[f"{name}|{variant}"].append(loss)
                if r < args["warmup"]:
                    continue
                times[f"{name}|{variant}"].append(dt)
                if variant == "in schedule":  # how long the last stage's reduce + step ran beside stage 0's work
                    work0 = max(x.end for x in tl.spans if x.stage == 0 and x.kind in COMPUTE)
                    opt = [x for x in tl.spans if x.stage == S - 1 and x.kind in STEP]
                    overlap[name].append(max(0.0, min(work0, max(x.end for x in opt)) - min(x.start for x in opt)))
                    last_tl[name] = [tuple(x.__dict__.values()) for x in tl.spans]
    gathered = engines[next(iter(engines))].transport.gather_objects(times)
    if dist.get_rank() == 0:
        Path(out_file).write_text(json.dumps({"times": gathered, "overlap": overlap, "losses": losses,
                                              "timelines": last_tl}))


def _write_json(path: Path, obj) -> None:
    """Write atomically (data.atomic: a temp file fsynced and renamed over the target, mode from the umask)."""
    write_text_atomic(path, json.dumps(obj, indent=1))


def dp_compare(a: argparse.Namespace, schedules: list[str]) -> list[dict]:
    """DP x PP: REDUCE_GRAD / OPTIMIZER_STEP in the schedule vs after it (see the module doc)."""
    import paddle.distributed as dist
    out = a.out if a.out != Path("runs/pipeline_bench") else Path("bench/results/pipeline_dp_bench.json")
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "raw.json"
        args = {"stages": a.stages, "dp": a.dp, "mbs": a.micro_batches, "schedules": schedules, "steps": a.steps,
                "warmup": a.warmup, "hidden": a.hidden, "layers": a.layers, "seq": a.seq, "batch": a.batch,
                "clip_norm": a.clip_norm}
        t0 = time.perf_counter()
        dist.spawn(_dp_worker, args=(args, str(raw)), nprocs=a.stages * a.dp, backend="gloo")
        wall = time.perf_counter() - t0
        data = json.loads(raw.read_text())
    from training.pipeline.gantt import draw_gantt
    from training.pipeline.simulate import Span, Timeline
    rows = []
    for name in schedules:
        tl = Timeline([Span(*x) for x in data["timelines"][name]], a.stages, source="measured")
        draw_gantt(tl, a.gantt_dir / f"gantt_{name}_dp{a.dp}.png",
                   f"{name}, replica 0 of {a.dp}: REDUCE_GRAD + OPTIMIZER_STEP in the schedule (last timed step)")
        row: dict = {"schedule": name}
        for variant in VARIANTS:
            per_rank = [t[f"{name}|{variant}"] for t in data["times"]]
            step = [max(ts) for ts in zip(*per_rank)]  # a round ends when its slowest rank does
            row[variant] = {"median_s": statistics.median(step), "min_s": min(step), "max_s": max(step),
                            "steps_s": step, "final_loss": data["losses"][f"{name}|{variant}"][-1]}
        ins, aft = row["in schedule"]["steps_s"], row["after schedule"]["steps_s"]
        row["paired_ratio"] = statistics.median(x / y for x, y in zip(ins, aft))  # same round, same load
        row["in_faster_rounds"] = sum(x < y for x, y in zip(ins, aft))
        row["median_overlap_s"] = statistics.median(data["overlap"][name])
        rows.append(row)
    pairs = [x / y for r in rows for x, y in zip(r["in schedule"]["steps_s"], r["after schedule"]["steps_s"])]
    pooled = {"paired_ratio": statistics.median(pairs), "in_faster_rounds": sum(x < 1.0 for x in pairs),
              "rounds": len(pairs)}
    load = os.getloadavg()
    print(f"\nDP x PP: {a.dp} replicas x {a.stages} stages = {a.dp * a.stages} gloo processes (1 thread each), "
          f"{a.micro_batches} micro-batches, hidden {a.hidden}, {a.layers} layers, batch {a.batch} x seq {a.seq}, "
          f"AdamW, clip {a.clip_norm}; {a.warmup} warm-up + {a.steps} timed rounds, variants alternating; "
          f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}; {wall:.0f} s in all")
    print("step = the slowest rank's train_step; paired = median over rounds of in/after in the same round; "
          "overlap = how long the last stage's REDUCE_GRAD + OPTIMIZER_STEP (waits included) ran while stage 0 "
          "still computed")
    print("| schedule | in schedule s (median) | after schedule s (median) | paired in/after | in faster "
          "| overlap ms | loss in / after |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        i, f = r["in schedule"], r["after schedule"]
        print(f"| {r['schedule']} | {i['median_s']:.3f} | {f['median_s']:.3f} | {r['paired_ratio']:.3f} "
              f"| {r['in_faster_rounds']}/{len(i['steps_s'])} | {1000 * r['median_overlap_s']:.1f} "
              f"| {i['final_loss']:.6f} / {f['final_loss']:.6f} |")
    print(f"| all rounds pooled | | | {pooled['paired_ratio']:.3f} | {pooled['in_faster_rounds']}/{len(pairs)} | | |")
    _write_json(out, {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
                      "load_average": load, "wall_s": wall, "rows": rows, "pooled": pooled})
    print(f"wrote {out} and Gantt PNGs in {a.gantt_dir}")
    return rows


def _makespan(run: list) -> float:
    return max(s[5] for s in run) - min(s[4] for s in run)


def _message_key(action: str, stages: int) -> tuple[str, int, int]:
    """(direction, receiving vstage, mb) that pairs a SEND with its RECV."""
    a = Action.parse(action)
    v = a.vstage(stages)
    if a.kind == "SEND_F":
        return "F", v + 1, a.mb
    if a.kind == "SEND_B":
        return "B", v - 1, a.mb
    return a.kind[-1], v, a.mb


def step_costs(tl, stages: int, per_action: bool = False) -> Callable:
    """Cost function from one measured step, for `simulate(..., eager_sends=True)`. Compute: per
    stage the median F, B and W (the model: one cost per kind), or with per_action each action's
    own duration (a replay, which keeps the speed-up a stage gets while its neighbour idles on a
    shared CPU). A send costs its own measured time (gloo sends these messages eagerly); a receive
    costs its end minus the moment both sides had reached the message (the wait taken out).
    REDUCE_GRAD and OPTIMIZER_STEP (once per stage) cost their own measured time."""
    compute: dict = {}
    own: dict = {}
    starts: dict = {}
    for s in tl.spans:
        own[s.action] = s.end - s.start
        if s.kind in COMPUTE:
            compute.setdefault((s.stage, s.kind), []).append(s.end - s.start)
        elif s.kind not in STEP:
            starts.setdefault(_message_key(s.action, stages), {})[s.kind[:4]] = s
    recv_cost = {}
    for key, pair in starts.items():
        r, snd = pair["RECV"], pair["SEND"]
        recv_cost[key] = max(0.0, r.end - max(r.start, snd.start))
    med = {k: statistics.median(v) for k, v in compute.items()}

    def cost(a: Action) -> float:
        text = str(a)
        if a.kind in COMPUTE:
            return own[text] if per_action else med[(a.stage, a.kind)]
        if a.kind.startswith("SEND") or a.kind in STEP:
            return own[text]
        return recv_cost[_message_key(text, stages)]
    return cost


def _overlap(spans) -> dict[str, float]:
    """Per compute span (by action text): the fraction of its time some other stage computed too."""
    busy: dict[int, list[tuple[float, float]]] = {}
    for y in spans:
        if y.kind in COMPUTE:
            busy.setdefault(y.stage, []).append((y.start, y.end))
    out = {}
    for x in spans:
        if x.kind in COMPUTE:
            d = x.end - x.start
            both = sum(max(0.0, min(x.end, e) - max(x.start, b)) for st, iv in busy.items() if st != x.stage
                       for b, e in iv)
            out[x.action] = min(1.0, both / d) if d > 0 else 0.0
    return out


def contention_fit(tl) -> tuple[dict[tuple[int, str], float], float]:
    """The contended model's parameters from one measured step: per stage and kind a solo cost a, and
    one factor k for the step, such that an action costs a * (1 + k * f) when another stage computes
    for a fraction f of it (stages share the CPU's cores). Least squares, alternating a and k."""
    f = _overlap(tl.spans)
    groups: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for x in tl.spans:
        if x.kind in COMPUTE:
            groups.setdefault((x.stage, x.kind), []).append((f[x.action], x.end - x.start))
    k = 0.0
    a: dict[tuple[int, str], float] = {}
    for _ in range(20):
        a = {g: sum(d * (1 + k * fr) for fr, d in pts) / sum((1 + k * fr) ** 2 for fr, _ in pts)
             for g, pts in groups.items()}
        den = sum((a[g] * fr) ** 2 for g, pts in groups.items() for fr, _ in pts)
        k = max(0.0, sum(a[g] * fr * (d - a[g]) for g, pts in groups.items() for fr, d in pts) / den) if den else 0.0
    return a, k


def simulate_contended(schedule, tl, stages: int, iters: int = 8):
    """Simulate with the contended model (`contention_fit`; messages as in `step_costs`): each
    action's overlap f comes from the previous iteration's simulated timeline (at first f = 1),
    averaged with the one before so the fixed point does not oscillate."""
    from training.pipeline.simulate import simulate
    base = step_costs(tl, stages)
    a, k = contention_fit(tl)
    f: dict[str, float] = {}
    sim = None
    for _ in range(iters):
        def cost(x: Action, f: dict[str, float] = f) -> float:
            if x.kind in COMPUTE:
                return a[(x.stage, x.kind)] * (1 + k * f.get(str(x), 1.0))
            return base(x)
        sim = simulate(schedule, cost, eager_sends=True)
        new = _overlap(sim.spans)
        f = {key: (v + f.get(key, 1.0)) / 2 for key, v in new.items()}
    return sim, k


def _analyse(name: str, data: dict, stages: int, mbs: int, out: Path) -> dict:
    from training.pipeline.gantt import draw_gantt
    from training.pipeline.schedule import build_schedule, peak_inflight
    from training.pipeline.simulate import Span, Timeline, simulate
    sched = build_schedule(name, stages, mbs, 2 if name == "interleaved" else 1)
    steps = []
    for run in data["runs"]:
        tl = Timeline([Span(*s) for s in run], stages, peak_inflight(sched), "measured")
        sim = simulate(sched, step_costs(tl, stages), eager_sends=True)
        replay = simulate(sched, step_costs(tl, stages, per_action=True), eager_sends=True)
        contended, k = simulate_contended(sched, tl, stages)
        steps.append((tl, sim, tl.bubble / sim.bubble if sim.bubble else float("nan"),
                      tl.bubble / replay.bubble if replay.bubble else float("nan"),
                      tl.bubble / contended.bubble if contended.bubble else float("nan"), k))
    steps.sort(key=lambda x: x[0].makespan)
    tl, sim = steps[len(steps) // 2][:2]  # the median step by makespan, for the Gantt charts
    draw_gantt(tl, out / f"gantt_{name}_measured.png", f"{name}: measured, bubble {tl.bubble:.1%}")
    draw_gantt(sim, out / f"gantt_{name}_simulated.png",
               f"{name}: simulated from measured costs, bubble {sim.bubble:.1%}")
    med = lambda xs: statistics.median(xs)  # noqa: E731
    return {"schedule": name, "steps": len(steps), "measured": tl.summary(), "simulated": sim.summary(),
            "median_measured_bubble": med([x[0].bubble for x in steps]),
            "median_simulated_bubble": med([x[1].bubble for x in steps]),
            "median_makespan": med([x[0].makespan for x in steps]),
            "median_simulated_makespan": med([x[1].makespan for x in steps]),
            "bubble_ratio": med([x[2] for x in steps]),
            "bubble_ratio_range": [min(x[2] for x in steps), max(x[2] for x in steps)],
            "replay_bubble_ratio": med([x[3] for x in steps]),
            "replay_bubble_ratio_range": [min(x[3] for x in steps), max(x[3] for x in steps)],
            "contended_bubble_ratio": med([x[4] for x in steps]),
            "contended_bubble_ratio_range": [min(x[4] for x in steps), max(x[4] for x in steps)],
            "contention_k": med([x[5] for x in steps]),
            "rss_mb_per_stage": data["rss_mb_per_stage"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m training.pipeline.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--schedule", default="all",
                    help=f"'all' or a comma list of {', '.join(SCHEDULES)} (e.g. 1f1b,zbh1), run side by side")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per schedule (medians are reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per schedule before timing")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4, help="transformer layers (a multiple of stages balances)")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", type=Path, default=Path("runs/pipeline_bench"),
                    help="folder (bubble bench) or JSON file (--dp; default bench/results/pipeline_dp_bench.json)")
    ap.add_argument("--dp", type=int, default=1,
                    help="data-parallel replicas; > 1 runs the REDUCE_GRAD in-schedule vs after-schedule comparison")
    ap.add_argument("--clip-norm", type=float, default=None, help="--dp comparison: clip by global norm")
    ap.add_argument("--gantt-dir", type=Path, default=Path("runs/pipeline_dp_bench"),
                    help="--dp comparison: where the Gantt PNGs go")
    a = ap.parse_args(argv)
    schedules = list(SCHEDULES) if a.schedule == "all" else [x.strip() for x in a.schedule.split(",")]
    unknown = [x for x in schedules if x not in SCHEDULES]
    if unknown:
        ap.error(f"unknown schedule(s) {', '.join(unknown)}; choose from {', '.join(SCHEDULES)} or 'all'")
    if "interleaved" in schedules and (a.micro_batches % a.stages or a.layers + 2 < 2 * a.stages):
        schedules.remove("interleaved")
    if a.batch % (a.dp * a.micro_batches):
        ap.error(f"--batch {a.batch} must divide into --dp {a.dp} x --micro-batches {a.micro_batches}")
    if a.dp > 1:
        os.environ["OMP_NUM_THREADS"] = "1"
        dp_compare(a, schedules)
        return
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the stage processes
    import paddle.distributed as dist
    raw = a.out / "raw.json"
    args = {"stages": a.stages, "mbs": a.micro_batches, "schedules": schedules, "steps": a.steps, "warmup": a.warmup,
            "hidden": a.hidden, "layers": a.layers, "seq": a.seq, "batch": a.batch}
    dist.spawn(_worker, args=(args, str(raw)), nprocs=a.stages, backend="gloo")
    data = json.loads(raw.read_text())
    rows = [_analyse(n, data[n], a.stages, a.micro_batches, a.out) for n in schedules]
    first = [_makespan(run) for run in data[schedules[0]]["runs"]]
    for r, n in zip(rows, schedules):  # same round, same load: the fairest speed comparison here
        r["paired_makespan_ratio"] = statistics.median(
            _makespan(run) / f for run, f in zip(data[n]["runs"], first))
    load = os.getloadavg()
    print(f"\n{a.stages} stages x {a.micro_batches} micro-batches, hidden {a.hidden}, {a.layers} layers, "
          f"batch {a.batch} x seq {a.seq}, one process per stage (gloo, 1 thread each), {a.warmup} warm-up + "
          f"{a.steps} timed steps, medians; load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")
    print("ratio = measured / simulated bubble, simulated from per-stage median costs; contended = simulated "
          "from per-stage solo costs and one slow-down factor k while stages compute at once (contention_fit); "
          f"replay = simulated from each action's own measured duration; vs {schedules[0]} = median over rounds "
          f"of the makespan ratio to {schedules[0]}'s step in the same round")
    print(f"{'schedule':12} {'meas.bubble':>11} {'sim.bubble':>10} {'ratio':>6} {'ratio range':>12} "
          f"{'contended':>9} {'its range':>10} {'k':>5} {'replay':>6} {'makespan s':>10} "
          f"{f'vs {schedules[0]}':>12} {'sim.makespan s':>14} {'compute s/stage':>16} "
          f"{'peak act.':>10}")
    fmt = lambda v, p=3: "/".join(f"{x:.{p}f}" for x in v)  # noqa: E731
    for r in rows:
        m = r["measured"]
        print(f"{r['schedule']:12} {r['median_measured_bubble']:>11.1%} {r['median_simulated_bubble']:>10.1%} "
              f"{r['bubble_ratio']:>6.2f} {fmt(r['bubble_ratio_range'], 2):>12} "
              f"{r['contended_bubble_ratio']:>9.2f} {fmt(r['contended_bubble_ratio_range'], 2):>10} "
              f"{r['contention_k']:>5.2f} {r['replay_bubble_ratio']:>6.2f} "
              f"{r['median_makespan']:>10.3f} {r['paired_makespan_ratio']:>12.3f} "
              f"{r['median_simulated_makespan']:>14.3f} {fmt(m['compute_per_stage']):>16} "
              f"{'/'.join(map(str, m['peak_inflight'])):>10}")
    print(f"peak RSS per stage process (all schedules): {fmt(rows[0]['rss_mb_per_stage'], 0)} MB")
    for r in rows:
        r["load_average"] = load
    (a.out / "pipeline_bench.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {a.out / 'pipeline_bench.json'} and Gantt PNGs")


if __name__ == "__main__":
    main()
