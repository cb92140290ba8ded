"""Measured vs simulated pipeline bubble, per-stage time and peak memory, per schedule.

    python -m training.pipeline.bench --stages 2 --micro-batches 8 --schedule all
    python -m training.pipeline.bench --stages 4 --micro-batches 8 --schedule 1f1b

One process per stage (paddle.distributed.spawn, gloo). The simulated timeline uses the costs this
very run measured (median F/B/W per stage, the fastest send/recv as transfer time), so measured and
simulated bubbles are compared side by side. On a 2-core machine more than 2 stage processes
oversubscribe the CPU: use 2 stages for the timing bar. Writes <out>/pipeline_bench.json and a
measured and a simulated Gantt PNG per schedule.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

from training.pipeline.schedule import SCHEDULES


def _worker(args: dict, out_file: str) -> None:
    import paddle
    import paddle.distributed as dist

    from training.pipeline.engine import PipelineEngine
    from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss
    dist.init_parallel_env()
    cfg = ToyConfig(hidden=args["hidden"], layers=args["layers"], heads=4, ffn=4 * args["hidden"],
                    max_len=args["seq"], vocab=512)
    results = {}
    for name in args["schedules"]:
        # embeddings and head are light: give every stage the same number of transformer layers
        n = args["layers"] + 2
        engine = PipelineEngine(build_toy_blocks(cfg, seed=0), toy_loss,
                                lambda p: paddle.optimizer.SGD(learning_rate=1e-3, parameters=p),
                                stages=args["stages"], micro_batches=args["mbs"], schedule=name,
                                transport="dist", timeout_s=120)
        batch = make_batch(args["batch"], cfg, seed=0)
        engine.train_step(*batch)  # warm-up: allocator, handshakes
        runs = []
        for _ in range(args["steps"]):
            engine.train_step(*batch)
            tl = engine.gather_timeline()
            runs.append([(s.stage, s.action, s.kind, s.mb, s.start, s.end) for s in tl.spans])
        results[name] = {"runs": runs, "rss_mb": engine.last_stats.get("rss_mb"), "blocks": n,
                         "bounds": engine.bounds, "peak_inflight": None}
        rss = engine.transport.gather_objects(engine.last_stats.get("rss_mb"))
        results[name]["rss_mb_per_stage"] = rss
    if dist.get_rank() == 0:
        Path(out_file).write_text(json.dumps(results))


def _analyse(name: str, data: dict, stages: int, mbs: int, out: Path) -> dict:
    from training.pipeline.gantt import draw_gantt
    from training.pipeline.schedule import build_schedule, peak_inflight
    from training.pipeline.simulate import Span, Timeline, simulate
    sched = build_schedule(name, stages, mbs, 2 if name == "interleaved" else 1)
    best = None
    for run in data["runs"]:
        tl = Timeline([Span(*s) for s in run], stages, peak_inflight(sched), "measured")
        if best is None or tl.makespan < best.makespan:
            best = tl
    cost: dict = {}
    for s in best.spans:
        cost.setdefault((s.stage, s.kind), []).append(s.end - s.start)
    comm = min((min(v) for (st, k), v in cost.items() if k.startswith(("SEND", "RECV"))), default=0.0)
    table = {key: statistics.median(v) for key, v in cost.items()}
    sim = simulate(sched, lambda a: table.get((a.stage, a.kind), 0.0) if a.kind in ("F", "B", "W") else comm)
    draw_gantt(best, out / f"gantt_{name}_measured.png", f"{name}: measured, bubble {best.bubble:.1%}")
    draw_gantt(sim, out / f"gantt_{name}_simulated.png", f"{name}: simulated from measured costs, bubble {sim.bubble:.1%}")
    m, s = best.summary(), sim.summary()
    return {"schedule": name, "measured": m, "simulated": s, "rss_mb_per_stage": data["rss_mb_per_stage"],
            "bubble_ratio": m["bubble"] / s["bubble"] if s["bubble"] else None}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m training.pipeline.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--schedule", default="all", help=f"one of {', '.join(SCHEDULES)} or 'all'")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per schedule (the fastest is kept)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4, help="transformer layers (a multiple of stages balances)")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", type=Path, default=Path("runs/pipeline_bench"))
    a = ap.parse_args(argv)
    schedules = list(SCHEDULES) if a.schedule == "all" else [a.schedule]
    if "interleaved" in schedules and (a.micro_batches % a.stages or a.layers + 2 < 2 * a.stages):
        schedules.remove("interleaved")
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import paddle.distributed as dist
    raw = a.out / "raw.json"
    args = {"stages": a.stages, "mbs": a.micro_batches, "schedules": schedules, "steps": a.steps,
            "hidden": a.hidden, "layers": a.layers, "seq": a.seq, "batch": a.batch}
    dist.spawn(_worker, args=(args, str(raw)), nprocs=a.stages, backend="gloo")
    data = json.loads(raw.read_text())
    rows = [_analyse(n, data[n], a.stages, a.micro_batches, a.out) for n in schedules]
    print(f"\n{a.stages} stages x {a.micro_batches} micro-batches, hidden {a.hidden}, {a.layers} layers, "
          f"batch {a.batch} x seq {a.seq}, one process per stage (gloo)")
    print(f"{'schedule':12} {'meas.bubble':>11} {'sim.bubble':>10} {'ratio':>6} {'makespan s':>10} "
          f"{'compute s/stage':>22} {'comm s/stage':>18} {'peak RSS MB/stage':>20} {'peak act.':>10}")
    for r in rows:
        m, s = r["measured"], r["simulated"]
        fmt = lambda v: "/".join(f"{x:.3f}" for x in v)  # noqa: E731
        print(f"{r['schedule']:12} {m['bubble']:>11.1%} {s['bubble']:>10.1%} {r['bubble_ratio'] or 0:>6.2f} "
              f"{m['makespan']:>10.3f} {fmt(m['compute_per_stage']):>22} {fmt(m['comm_per_stage']):>18} "
              f"{'/'.join(f'{x:.0f}' for x in r['rss_mb_per_stage']):>20} "
              f"{'/'.join(map(str, m['peak_inflight'])):>10}")
    (a.out / "pipeline_bench.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {a.out / 'pipeline_bench.json'} and Gantt PNGs")


if __name__ == "__main__":
    main()
