"""Domain adaptation: whole-word-masked MLM on a corpus' raw OCR text, through the pipeline engine.

    python -m training pretrain --corpus DIR --base MODEL --out DIR [--steps N] [--pipeline-stages S]

The encoder's block list gets an MLM head as its last block ([embeddings, layer_0..N-1, mlm_head]) and
the pipeline engine (training/pipeline/engine.py) trains that list, so adaptation runs on the same
engine, schedules and stage splits as the fine-tune. Inputs are what the extractor sees at run time:
the page's lines in reading order, per-character tokens with their line boxes (models/layout_text.py);
masking is whole-word (training/wwm.py).

The output is a complete model directory (the base's extraction head kept as it was, the encoder
adapted), so `retrain` and `train` start from it like from any other model, plus `mlm_head.pdparams`
and `pretrain.json` (losses, held-out MLM loss before and after).
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from tqdm import tqdm

from models.layout_text import CharVocab, Window, make_windows
from training.wwm import IGNORE, mask_window


class MLMHead(nn.Layer):
    """BERT's MLM head as a pipeline block: (hidden, mask_bias) -> vocabulary logits [B, T, V]."""

    def __init__(self, hidden_size: int, vocab_size: int, eps: float = 1e-12):
        super().__init__()
        self.transform = nn.Linear(hidden_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, epsilon=eps)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, hidden, mask_bias):
        return self.decoder(self.norm(F.gelu(self.transform(hidden))))


def mlm_loss(logits: paddle.Tensor, labels: paddle.Tensor) -> paddle.Tensor:
    """Mean cross-entropy over the chosen tokens only (0, never NaN, when a micro-batch has none)."""
    valid = labels != IGNORE
    safe = paddle.where(valid, labels, paddle.zeros_like(labels))
    per_token = F.cross_entropy(logits, safe.unsqueeze(-1), reduction="none").squeeze(-1)
    mask = valid.astype(per_token.dtype)
    return (per_token * mask).sum() / paddle.clip(mask.sum(), min=1.0)


class EngineStep:
    """The pipeline engine with our defaults: one AdamW per stage sharing one LR schedule."""

    def __init__(self, blocks: list[nn.Layer], loss_fn, lr_schedule, pipe: dict, weight_decay: float = 0.01):
        from training.pipeline.engine import PipelineEngine
        self.stages = int(pipe.get("stages", 2))
        self.micro_batches = int(pipe.get("micro_batches", 2))
        self.engine = PipelineEngine(
            blocks, loss_fn,
            lambda params: paddle.optimizer.AdamW(learning_rate=lr_schedule, parameters=params,
                                                  weight_decay=weight_decay),
            stages=min(self.stages, len(blocks)), micro_batches=self.micro_batches,
            schedule=pipe.get("schedule", "1f1b"), clip_norm=1.0)
        self.how = (f"pipeline engine ({self.engine.S} stages x {self.micro_batches} micro-batches, "
                    f"{self.engine.schedule.name})")

    def usable_rows(self, n: int) -> int:
        """Rows of a batch of n the engine can split evenly into micro-batches."""
        return n - n % self.micro_batches

    def train_step(self, inputs: tuple, labels) -> float:
        return float(self.engine.train_step(inputs, labels))

    def optimizer_states(self) -> list[dict]:
        return [w.optimizer.state_dict() for _, w in sorted(self.engine.workers.items()) if w.optimizer]

    def load_optimizer_states(self, states: list[dict]) -> None:
        opts = [w.optimizer for _, w in sorted(self.engine.workers.items()) if w.optimizer]
        for opt, st in zip(opts, states):
            opt.set_state_dict(st)


def load_base(base: str | Path):
    """(model with its extraction head, ExtractorConfig, vocab) from a model directory."""
    from models.extractor import ExtractorConfig, is_model_dir
    base = Path(base)
    if not is_model_dir(base):
        raise SystemExit(f"--base {base} is not a model directory (config.json, model_state.pdparams, "
                         f"vocab.txt); use models/default or a directory `train`/`retrain` exported")
    cfg = ExtractorConfig.load(base)
    model = cfg.build()
    state = paddle.load(str(base / "model_state.pdparams"))
    model.set_state_dict({k: v.astype("float32") for k, v in state.items()})
    return model, cfg, CharVocab.load(base / "vocab.txt")


def text_windows(records: list[dict], vocab: CharVocab, max_len: int) -> list[tuple[Window, list[str]]]:
    """Model windows over each page's raw lines (OCR text for imported corpora)."""
    out = []
    for rec in records:
        lines = [ln for ln in rec.get("lines") or [] if ln.get("text", "").strip()]
        if not lines:
            continue
        texts = [ln["text"] for ln in lines]
        boxes = [ln.get("box") or [0, 0, 0, 0] for ln in lines]
        for w in make_windows(list(zip(texts, boxes)), rec.get("width") or 1000, rec.get("height") or 1000,
                              vocab, max_len):
            if len(w.ids) > 2:
                out.append((w, texts))
    return out


def mlm_batch(items: list[tuple[Window, list[str]]], vocab_size: int, rng: random.Random) -> tuple[tuple, paddle.Tensor]:
    masked = [mask_window(w, texts, vocab_size, rng) for w, texts in items]
    n, t = len(items), max(len(w.ids) for w, _ in items)
    ids = np.zeros((n, t), "int64")
    boxes = np.zeros((n, t, 4), "int64")
    mask = np.zeros((n, t), "int64")
    labels = np.full((n, t), IGNORE, "int64")
    for i, ((w, _), m) in enumerate(zip(items, masked)):
        k = len(w.ids)
        ids[i, :k], boxes[i, :k], mask[i, :k], labels[i, :k] = m.input_ids, w.boxes, 1, m.labels
    tt = lambda a: paddle.to_tensor(a)  # noqa: E731
    return (tt(ids), tt(boxes), tt(np.zeros_like(ids)), tt(mask)), tt(labels)


@paddle.no_grad()
def heldout_loss(blocks: list[nn.Layer], batches: list[tuple[tuple, paddle.Tensor]]) -> float:
    """MLM loss on fixed masked batches, dropout off (the before/after comparison)."""
    for b in blocks:
        b.eval()
    losses = []
    for inputs, labels in batches:
        out = inputs
        for b in blocks:
            out = b(*out) if isinstance(out, tuple) else b(out)
        losses.append(float(mlm_loss(out, labels)))
    for b in blocks:
        b.train()
    return float(np.mean(losses)) if losses else float("nan")


def pretrain(records: list[dict], base: str | Path, out: str | Path, steps: int = 100, batch_size: int = 8,
             lr: float = 5e-4, pipe: dict | None = None, seed: int = 0, max_len: int = 128) -> dict:
    """Adapt `base`'s encoder with WWM MLM on `records`; write a model directory to `out`."""
    from models.extractor import save_model
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
    out = Path(out)
    model, cfg, vocab = load_base(base)
    windows = text_windows(records, vocab, min(max_len, cfg.max_len))
    if not windows:
        raise SystemExit("the corpus has no text lines to adapt on; check that its pages have `lines`")
    rng = random.Random(seed)
    eval_rng = random.Random(seed + 1)
    eval_items = rng.sample(windows, min(len(windows), 4 * batch_size))
    eval_batches = [mlm_batch(eval_items[i:i + batch_size], len(vocab), random.Random(seed + 7 + i))
                    for i in range(0, len(eval_items), batch_size)]
    head = MLMHead(cfg.encoder["hidden_size"], len(vocab))
    blocks = [model.embeddings, *model.layers, head]
    before = heldout_loss(blocks, eval_batches)
    warmup = max(1, steps // 10)
    sched = paddle.optimizer.lr.LambdaDecay(lr, lambda s: min((s + 1) / warmup, max(0.1, (steps - s) / max(1, steps - warmup))))
    step = EngineStep(blocks, mlm_loss, sched, pipe or {})
    rows = max(step.micro_batches, step.usable_rows(batch_size))
    losses: list[float] = []
    order: list = []
    with tqdm(total=steps, desc=f"WWM MLM [{step.how}]", unit="step") as bar:
        for _ in range(steps):
            if len(order) < rows:
                order = windows * max(1, -(-rows // len(windows)))
                eval_rng.shuffle(order)
            items, order = order[:rows], order[rows:]
            items.sort(key=lambda x: len(x[0].ids))
            inputs, labels = mlm_batch(items, len(vocab), rng)
            losses.append(round(step.train_step(inputs, labels), 5))
            sched.step()
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    after = heldout_loss(blocks, eval_batches)
    save_model(model, cfg, vocab, out, half=False)
    paddle.save(head.state_dict(), str(out / "mlm_head.pdparams"))
    result = {"base": str(base), "pages": len(records), "windows": len(windows), "steps": steps,
              "step_function": step.how, "mlm_loss_before": round(before, 5), "mlm_loss_after": round(after, 5),
              "losses": losses}
    (out / "pretrain.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"held-out MLM loss {before:.3f} -> {after:.3f}; adapted model in {out}")
    return result


def pretrain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, type=Path, help="corpus folder or .jsonl (data/corpus.py format)")
    p.add_argument("--base", required=True, type=Path, help="model directory whose encoder to adapt")
    p.add_argument("--out", required=True, type=Path, help="model directory to write")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-len", type=int, default=128, help="tokens per window")
    p.add_argument("--pipeline-stages", type=int, default=2, help="pipeline stages (in one process)")
    p.add_argument("--micro-batches", type=int, default=2)
    p.add_argument("--schedule", default="1f1b", choices=["gpipe", "1f1b", "zbh1"])
    p.add_argument("--seed", type=int, default=0)


def pretrain_main(a: argparse.Namespace) -> int:
    from data.corpus import read_corpus
    pretrain(read_corpus(a.corpus), a.base, a.out, a.steps, a.batch_size, a.lr,
             {"stages": a.pipeline_stages, "micro_batches": a.micro_batches, "schedule": a.schedule},
             a.seed, a.max_len)
    return 0


PRETRAIN_COMMAND = (pretrain_args, pretrain_main)
