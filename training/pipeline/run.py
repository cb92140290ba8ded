"""Train the toy BERT-like encoder with the pipeline engine (one process, or one process per stage).

    python -m training.pipeline.run --stages 4 --micro-batches 8 --schedule 1f1b --steps 20
    python -m paddle.distributed.launch --nproc_per_node 4 training/pipeline/run.py \\
        --stages 4 --micro-batches 8 --schedule 1f1b --steps 20
(paddle's launcher takes a script path, not -m; this file puts the repository root on sys.path.)

Under paddle.distributed.launch (PADDLE_TRAINERS_NUM > 1) each process runs one stage (and replica
with --dp); otherwise all stages run in this process. The real extractor is trained through
`python -m training train --pipeline-stages 4 ...`, which calls the same PipelineEngine.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script by paddle.distributed.launch
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import paddle
from tqdm import tqdm

from training.pipeline.checkpoint import load_stages, merge_stages, save_stages
from training.pipeline.engine import PipelineEngine
from training.pipeline.gantt import draw_gantt
from training.pipeline.schedule import SCHEDULES
from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m training.pipeline.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=4, help="pipeline stages (processes per replica)")
    ap.add_argument("--micro-batches", type=int, default=8, help="micro-batches per global batch")
    ap.add_argument("--schedule", choices=SCHEDULES, default="1f1b")
    ap.add_argument("--chunks", type=int, default=2, help="virtual chunks per stage (interleaved only)")
    ap.add_argument("--dp", type=int, default=1, help="data-parallel replicas of every stage (needs launch)")
    ap.add_argument("--batch", type=int, default=16, help="global batch size (divisible by dp x micro-batches)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--clip-norm", type=float, default=None, help="clip by global norm across stages")
    ap.add_argument("--recompute", action="store_true", help="keep only stage inputs; recompute at B")
    ap.add_argument("--out", type=Path, default=Path("runs/pipeline"), help="checkpoints, timeline, Gantt")
    ap.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    a = parse_args(argv)
    distributed = int(os.environ.get("PADDLE_TRAINERS_NUM", "1")) > 1
    cfg = ToyConfig(hidden=a.hidden, layers=a.layers, heads=4, ffn=2 * a.hidden, max_len=32, vocab=512)
    engine = PipelineEngine(build_toy_blocks(cfg, seed=0), toy_loss,
                            lambda p: paddle.optimizer.AdamW(learning_rate=a.lr, parameters=p),
                            stages=a.stages, micro_batches=a.micro_batches, schedule=a.schedule,
                            chunks=a.chunks if a.schedule == "interleaved" else 1,
                            transport="dist" if distributed else "inprocess", dp=a.dp,
                            recompute=a.recompute, clip_norm=a.clip_norm)
    lead = engine.stage in (None, 0) and engine.replica == 0
    start = load_stages(engine, a.out / "ckpt") if a.resume else 0
    bar = tqdm(range(start, a.steps), desc=f"{a.schedule} x{a.stages}", disable=not lead)
    for step in bar:
        loss = engine.train_step(*make_batch(a.batch, cfg, seed=step))
        bar.set_postfix(loss=f"{loss:.4f}")
    save_stages(engine, a.out / "ckpt")
    timeline = engine.gather_timeline()
    if lead:
        merge_stages(a.out / "ckpt", a.out)
        summary = {"schedule": a.schedule, "stages": a.stages, "micro_batches": a.micro_batches,
                   "final_loss": loss if a.steps > start else None, **timeline.summary()}
        (a.out / "timeline.json").write_text(json.dumps(summary, indent=1))
        draw_gantt(timeline, a.out / "gantt.png")
        print(f"loss {summary['final_loss']}; measured bubble {timeline.bubble:.1%}; wrote {a.out}")


if __name__ == "__main__":
    main()
