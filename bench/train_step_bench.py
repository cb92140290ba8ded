"""What running `train` through the pipeline engine costs: seconds per step of a plain one-process
autograd step vs training/step.py's EngineStep (1 stage, and S stages x M micro-batches in one process),
same model, same batches, taking turns step by step; prints a table and writes JSON.

    python -m bench.train_step_bench --steps 12 --hidden 192 --layers 3 --seq 256 --batch 8
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import paddle
from tqdm import tqdm

from models.encoder import EncoderConfig
from models.heads import tag_labels
from models.model_dir import ExtractorConfig
from training.step import EngineStep, extractor_batch, extractor_loss


def make_model(a: argparse.Namespace):
    paddle.seed(0)
    enc = {**EncoderConfig.preset("tiny").__dict__, "hidden_size": a.hidden, "num_layers": a.layers,
           "num_heads": 4, "intermediate_size": 4 * a.hidden, "vocab_size": 6632, "max_position": a.seq}
    model = ExtractorConfig(encoder=enc, tag_labels=tag_labels(["a", "b", "c"]), doc_types=["x", "y"], link=True,
                            max_len=a.seq).build()
    for layer in model.sublayers():     # dropout off: then every variant must give the same losses
        if isinstance(layer, paddle.nn.Dropout):
            layer.p = 0.0
    return model


def batch(a: argparse.Namespace, seed: int):
    rng = np.random.default_rng(seed)
    b, t = a.batch, a.seq
    inputs = {"input_ids": rng.integers(5, 6632, (b, t)), "bbox": np.sort(rng.integers(0, 1000, (b, t, 4)), -1),
              "attention_mask": np.ones((b, t), "int64")}
    labels = {"tags": rng.integers(0, 7, (b, t)), "doc_type": rng.integers(0, 2, b),
              "links": (rng.random((b, t, t)) < 0.01).astype("float32"), "link_mask": np.ones((b, t, t), "float32")}
    return extractor_batch(inputs, labels)


class PlainStep:
    """The step `train` used before the engine: forward, backward, clip, AdamW, in one process."""

    def __init__(self, model):
        self.model = model
        self.opt = paddle.optimizer.AdamW(learning_rate=1e-4, parameters=model.parameters(),
                                          grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0))

    def train_step(self, inputs, labels) -> float:
        loss = extractor_loss(self.model(*inputs), labels)
        loss.backward()
        self.opt.step()
        self.opt.clear_grad()
        return float(loss)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12, help="timed steps per variant (after 2 warm-up steps)")
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--stages", type=int, default=4, help="stages of the multi-stage variant (<= layers + 2)")
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("bench/results/train_step_bench.json"))
    a = ap.parse_args(argv)
    variants = {"plain autograd": PlainStep(make_model(a))}
    for s, m in ((1, 1), (a.stages, a.micro_batches)):
        model = make_model(a)
        variants[f"engine {s}x{m}"] = EngineStep(model.blocks(), extractor_loss, 1e-4,
                                                 {"stages": s, "micro_batches": m, "schedule": "1f1b"})
    times: dict[str, list[float]] = {k: [] for k in variants}
    losses: dict[str, list[float]] = {k: [] for k in variants}
    for step in tqdm(range(a.steps + 2), desc="steps (all variants)"):
        data = batch(a, step)
        for name, v in variants.items():      # taking turns: load on the shared host hits all alike
            t0 = time.perf_counter()
            losses[name].append(v.train_step(*data))
            if step >= 2:
                times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["plain autograd"])
    rows = [{"variant": k, "median_s": statistics.median(t), "vs_plain": statistics.median(t) / base,
             "first_loss": losses[k][0], "last_loss": losses[k][-1]} for k, t in times.items()]
    print(f"| variant | median s/step | vs plain | loss step 1 | loss step {a.steps + 2} |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['variant']} | {r['median_s']:.3f} | {r['vs_plain']:.2f} | {r['first_loss']:.5f} "
              f"| {r['last_loss']:.5f} |")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "rows": rows}, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
