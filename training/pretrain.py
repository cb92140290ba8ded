"""Domain adaptation: whole-word-masked MLM on a corpus' raw OCR text, through the pipeline engine.

    python -m training pretrain --corpus DIR --base MODEL --out DIR [--steps N] [--pipeline-stages S]
    python -m training pretrain ... --resume      # after a kill: continue from OUT.ckpt/

The encoder's block list gets an MLM head as its last block ([embeddings, layer_0..N-1, mlm_head]) and
the pipeline engine (training/pipeline/engine.py) trains that list, so adaptation runs on the same
engine, schedules and stage splits as the fine-tune. Inputs are what the extractor sees at run time:
the page's lines in reading order, per-character tokens with their line boxes in overlapping windows
(models/tokenizer.py, the extractor's own encoding); masking is whole-word (training/wwm.py).

The output is a complete model directory (the base's extraction head kept as it was, the encoder
adapted), so `retrain` and `train` start from it like from any other model, plus `mlm_head.safetensors`
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

from data.document import Line, box_to_quad
from models.checkpoint import CheckpointSlots
from models.tokenizer import Encoding, Tokenizer, Window
from training.config import PRETRAIN
from training.errors import RefusedError
from training.loop import RunState, lr_schedule, run
from training.loop import resume as resume_from
from training.step import EngineStep, exact_mean, row_scales
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


def mlm_loss(logits: paddle.Tensor, labels: tuple) -> paddle.Tensor:
    """Cross-entropy over the chosen tokens only, an exact mean over the whole batch however the
    engine cuts it into micro-batches (`labels` = (token labels, per-row factors), training/step.py)."""
    target, scale = labels
    valid = target != IGNORE
    safe = paddle.where(valid, target, paddle.zeros_like(target))
    per_token = F.cross_entropy(logits, safe.unsqueeze(-1), reduction="none").squeeze(-1)
    return exact_mean(per_token, valid, scale)


def load_base(base: str | Path):
    """(model with its extraction head, ExtractorConfig, vocab) from a model directory."""
    from models.model_dir import ModelDirError, read_model_dir
    try:
        model, cfg, vocab = read_model_dir(base)       # every weight checked against config.json
    except ModelDirError as exc:
        raise RefusedError(f"--base {exc}; use models/default or a directory `train`/`retrain` exported") from exc
    model.train()
    return model, cfg, vocab


def text_windows(records: list[dict], tok: Tokenizer, max_len: int) -> list[tuple[Encoding, Window]]:
    """Model windows over each page's raw lines (OCR text for imported corpora)."""
    out = []
    for rec in records:
        lines = [Line(text=ln["text"], quad=ln.get("quad") or box_to_quad(ln.get("box") or [0, 0, 0, 0]))
                 for ln in rec.get("lines") or [] if ln.get("text", "").strip()]
        if not lines:
            continue
        enc = tok.encode_page(lines, rec.get("width") or 1000, rec.get("height") or 1000, max_len)
        out += [(enc, w) for w in enc.windows if w.end - w.start > 1]
    return out


def mlm_batch(items: list[tuple[Encoding, Window]], tok: Tokenizer, rng: random.Random) -> tuple[tuple, tuple]:
    """Masked windows as the engine takes them, padded to the longest: (ids, boxes, types, mask), (labels, scale)."""
    masked = [mask_window(enc, w, tok, rng) for enc, w in items]
    used = [sum(w.attention_mask) for _, w in items]
    n, t = len(items), max(used)
    ids = np.zeros((n, t), "int64")
    boxes = np.zeros((n, t, 4), "int64")
    mask = np.zeros((n, t), "int64")
    labels = np.full((n, t), IGNORE, "int64")
    for i, ((_, w), m, k) in enumerate(zip(items, masked, used)):
        ids[i, :k], boxes[i, :k], mask[i, :k], labels[i, :k] = m.input_ids[:k], w.bbox[:k], 1, m.labels[:k]
    tt = lambda a: paddle.to_tensor(a)  # noqa: E731
    return (tt(ids), tt(boxes), tt(np.zeros_like(ids)), tt(mask)), (tt(labels), tt(row_scales(labels != IGNORE)))


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


def checkpoint_dir_for(out: str | Path) -> Path:
    """Where pretrain keeps its checkpoint: beside the output, not in it (the output is a model dir)."""
    out = Path(out)
    return out.parent / f"{out.name}.ckpt"


def _rng_state(rng: random.Random) -> list:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _set_rng_state(rng: random.Random, saved: list) -> None:
    rng.setstate((saved[0], tuple(saved[1]), saved[2]))


def pretrain(records: list[dict], base: str | Path, out: str | Path, steps: int = PRETRAIN.steps,
             batch_size: int = PRETRAIN.batch_size, lr: float = PRETRAIN.lr, pipe: dict | None = None,
             seed: int = PRETRAIN.seed, max_len: int = PRETRAIN.max_len,
             checkpoint_every: int = PRETRAIN.checkpoint_every, resume: bool = False,
             ckpt: str | Path | None = None) -> dict:
    """Adapt `base`'s encoder with WWM MLM on `records`; write a model directory to `out`.

    Every `checkpoint_every` steps (and at the end) the run is saved to `ckpt` (default OUT.ckpt);
    with `resume` it continues from there with the same weights, optimizer, LR, RNGs and window order,
    so a killed run finishes with the losses and weights an unbroken one would have had."""
    from models.model_dir import save_weights, write_model_dir
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
    out = Path(out)
    model, cfg, vocab = load_base(base)
    windows = text_windows(records, vocab, min(max_len, cfg.max_len))
    if not windows:
        raise RefusedError("the corpus has no text lines to adapt on; check that its pages have `lines`")
    rng = random.Random(seed)
    eval_rng = random.Random(seed + 1)
    eval_items = rng.sample(windows, min(len(windows), 4 * batch_size))
    eval_batches = [mlm_batch(eval_items[i:i + batch_size], vocab, random.Random(seed + 7 + i))
                    for i in range(0, len(eval_items), batch_size)]
    head = MLMHead(cfg.encoder["hidden_size"], vocab.vocab_size)
    blocks = [model.embeddings, *model.layers, head]
    before = heldout_loss(blocks, eval_batches)
    sched = lr_schedule(lr, steps, max(1, steps // 10))
    step = EngineStep(blocks, mlm_loss, sched, pipe or {})
    rows = max(step.micro_batches, step.usable_rows(batch_size))
    order: list[int] = []          # indices into `windows` still to visit this pass
    slots = CheckpointSlots(Path(ckpt) if ckpt else checkpoint_dir_for(out))

    def other_run(saved: dict) -> str | None:
        if saved.get("windows") != len(windows) or saved.get("steps") != steps:
            return (f"{saved.get('windows')} windows, {saved.get('steps')} steps; this one: {len(windows)}, "
                    f"{steps}; the same corpus and --steps resume it")
        return None

    state = resume_from(step, slots, sched, steps, "WWM MLM", same_run=other_run) if resume else None
    if state:
        order = state.extra["order"]
        _set_rng_state(rng, state.extra["rng"])
        _set_rng_state(eval_rng, state.extra["order_rng"])
    elif resume:
        print(f"no checkpoint in {slots.root}: starting from step 0")

    def next_batch() -> tuple[tuple, tuple]:
        nonlocal order
        if len(order) < rows:
            order = list(range(len(windows))) * max(1, -(-rows // len(windows)))
            eval_rng.shuffle(order)
        items, order = [windows[i] for i in order[:rows]], order[rows:]
        items.sort(key=lambda x: x[1].end - x[1].start)
        return mlm_batch(items, vocab, rng)

    def run_state() -> dict:
        return {"steps": steps, "windows": len(windows), "order": order, "rng": _rng_state(rng),
                "order_rng": _rng_state(eval_rng)}

    state = run(step, next_batch, sched, slots, steps, checkpoint_every, state or RunState(), "WWM MLM",
                extra=run_state)
    losses = state.losses
    after = heldout_loss(blocks, eval_batches)
    write_model_dir(model, cfg, vocab, out, half=False)
    save_weights({k: v.numpy() for k, v in head.state_dict().items()}, out / "mlm_head.safetensors")
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
    p.add_argument("--steps", type=int, default=PRETRAIN.steps, help="MLM steps (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=PRETRAIN.batch_size)
    p.add_argument("--lr", type=float, default=PRETRAIN.lr)
    p.add_argument("--max-len", type=int, default=PRETRAIN.max_len, help="tokens per window")
    p.add_argument("--pipeline-stages", type=int, default=PRETRAIN.stages, help="pipeline stages (in one process)")
    p.add_argument("--micro-batches", type=int, default=PRETRAIN.micro_batches)
    p.add_argument("--schedule", default=PRETRAIN.schedule, choices=["gpipe", "1f1b", "zbh1"])
    p.add_argument("--seed", type=int, default=PRETRAIN.seed)
    p.add_argument("--checkpoint-every", type=int, default=PRETRAIN.checkpoint_every, metavar="N",
                   help="save a checkpoint (OUT.ckpt/) every N steps and at the end")
    p.add_argument("--resume", action="store_true",
                   help="continue from the checkpoint in OUT.ckpt/ (same corpus and --steps): the same "
                        "losses and weights as a run that was never stopped")


def pretrain_main(a: argparse.Namespace) -> int:
    from data.corpus import read_corpus
    pretrain(read_corpus(a.corpus), a.base, a.out, a.steps, a.batch_size, a.lr,
             {"stages": a.pipeline_stages, "micro_batches": a.micro_batches, "schedule": a.schedule},
             a.seed, a.max_len, a.checkpoint_every, a.resume)
    return 0


PRETRAIN_COMMAND = (pretrain_args, pretrain_main)
