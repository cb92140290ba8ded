"""The one way a block list is trained: the pipeline engine, fed batches in its shape.

    step = EngineStep(model.blocks(), extractor_loss, lr_schedule,
                      {"stages": 4, "micro_batches": 8, "schedule": "1f1b", "transport": "inprocess"})
    loss = step.train_step(*extractor_batch(inputs, labels))     # numpy arrays from training.dataset.collate

`train`, `pretrain` and `retrain` all go through `EngineStep`; one stage is the degenerate case of the
same engine, not a separate code path. Under `python -m paddle.distributed.launch` (transport "dist")
every process builds the same model and batches and runs its own stage.

Exact means. The engine splits the global batch into M equal micro-batches, asks the loss for the MEAN
over each and scales it by 1/M. A loss averaged over the labelled tokens of a micro-batch would weight
tokens differently for every M. So each batch carries, per row, B / N (B rows, N labelled positions in
the WHOLE batch); the loss is the mean over rows of (row sum x that factor), which the engine's 1/M
averaging turns into exactly sum / N over the full batch, whatever M is. On the full batch it equals
models.heads.loss_fn (tested).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from data.labels import IGNORE_INDEX as IGNORE

TRANSPORTS = ("inprocess", "dist")


# --- exact-mean losses --------------------------------------------------------------------------

def row_scales(mask: np.ndarray) -> np.ndarray:
    """[B] factors B / N for a [B, ...] mask of counted positions (0 where the batch counts none)."""
    rows, n = mask.shape[0], float(np.asarray(mask, dtype=np.float64).sum())
    return np.full(rows, rows / n if n else 0.0, dtype="float32")


def exact_mean(values: paddle.Tensor, mask: paddle.Tensor, scale: paddle.Tensor) -> paddle.Tensor:
    """sum(values * mask) / N over the full batch, written as a mean over this (micro-)batch's rows."""
    mask = mask.astype(values.dtype)
    rows = (values * mask).reshape([values.shape[0], -1]).sum(1)
    return (rows * scale.astype(values.dtype)).mean()


def extractor_loss(outputs, labels) -> paddle.Tensor:
    """models.heads.loss_fn's three terms (tags CE + doc-type CE + link BCE) as exact means.

    `labels` = (tags, doc_type, links, link_mask, tag_scale, doc_scale, link_scale) from
    `extractor_batch`."""
    tags, doc, links, link_mask, tag_scale, doc_scale, link_scale = labels
    tags = tags.astype("int64")
    valid = tags != IGNORE
    per_token = F.cross_entropy(outputs[0], paddle.where(valid, tags, paddle.zeros_like(tags)).unsqueeze(-1),
                                reduction="none").squeeze(-1)
    loss = exact_mean(per_token, valid, tag_scale)
    doc = doc.astype("int64").reshape([-1])
    ok = doc != IGNORE
    per_doc = F.cross_entropy(outputs[1], paddle.where(ok, doc, paddle.zeros_like(doc)).unsqueeze(-1),
                              reduction="none").reshape([-1])
    loss = loss + exact_mean(per_doc, ok, doc_scale)
    if len(outputs) > 2:
        per_pair = F.binary_cross_entropy_with_logits(outputs[2], links.astype(outputs[2].dtype), reduction="none")
        loss = loss + exact_mean(per_pair, link_mask, link_scale)
    return loss


def extractor_batch(inputs: dict, labels: dict) -> tuple[tuple, tuple]:
    """training.dataset.collate's arrays as the engine takes them: every input a tensor (token types
    as zeros, not None: the engine slices micro-batches from each), labels a tuple for
    `extractor_loss` with the per-row exact-mean factors."""
    t = paddle.to_tensor
    ids = inputs["input_ids"]
    tags, doc = labels["tags"], np.asarray(labels["doc_type"]).reshape(-1)
    link_mask = labels.get("link_mask")
    if link_mask is None:
        link_mask = np.ones_like(labels["links"], dtype="float32")
    return ((t(ids), t(inputs["bbox"]), t(np.zeros_like(ids)), t(inputs["attention_mask"])),
            (t(tags), t(doc), t(labels["links"]), t(link_mask),
             t(row_scales(tags != IGNORE)), t(row_scales(doc != IGNORE)), t(row_scales(link_mask))))


# --- the step -----------------------------------------------------------------------------------

def launched_world() -> int:
    """Processes started by paddle.distributed.launch (or spawn) for this run; 1 when run plainly."""
    return int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))


def is_lead_process() -> bool:
    """The process that writes shared files (model directory, reports): rank 0, or the only one."""
    return int(os.environ.get("PADDLE_TRAINER_ID", "0")) == 0


def check_pipeline(pipe: dict, n_blocks: int | None = None, batch_size: int | None = None) -> dict:
    """Normalised pipeline settings, or ConfigError (a ValueError) saying which flag to change."""
    from training.errors import ConfigError
    from training.pipeline.schedule import SCHEDULES
    stages, mbs = int(pipe.get("stages", 1)), int(pipe.get("micro_batches", 1))
    schedule = str(pipe.get("schedule", "1f1b"))
    transport = pipe.get("transport") or ("dist" if launched_world() > 1 else "inprocess")
    if stages < 1 or mbs < 1:
        raise ConfigError(f"--pipeline-stages ({stages}) and --micro-batches ({mbs}) must be at least 1")
    if schedule not in SCHEDULES:
        raise ConfigError(f"--schedule {schedule!r} is not one of {', '.join(SCHEDULES)}")
    if transport not in TRANSPORTS:
        raise ConfigError(f"--transport {transport!r} is not one of {', '.join(TRANSPORTS)}")
    if n_blocks is not None and stages * (2 if schedule == "interleaved" else 1) > n_blocks:
        raise ConfigError(f"the model has {n_blocks} blocks (embeddings, layers, head): it cannot be cut into "
                         f"{stages} stages{' x 2 chunks' if schedule == 'interleaved' else ''}; use fewer "
                         f"--pipeline-stages or more layers")
    if schedule == "interleaved" and mbs % stages:
        raise ConfigError(f"--schedule interleaved needs --micro-batches a multiple of --pipeline-stages "
                         f"({mbs} is not a multiple of {stages})")
    if batch_size is not None and batch_size % mbs:
        raise ConfigError(f"batch size {batch_size} does not split into {mbs} equal micro-batches; use a "
                         f"batch size divisible by --micro-batches")
    if transport == "dist" and launched_world() != stages:
        raise ConfigError(f"--transport dist runs one process per stage: start it with `python -m "
                         f"paddle.distributed.launch --nproc_per_node {stages} training/launch_train.py train ...` "
                         f"(this run has {launched_world()} process(es))")
    if transport == "inprocess" and launched_world() > 1:
        raise ConfigError(f"started by the launcher with {launched_world()} processes but --transport inprocess; "
                         f"use --transport dist (or run without the launcher)")
    return {"stages": stages, "micro_batches": mbs, "schedule": schedule, "transport": transport}


def lead_first(fn: Callable, pipe: dict):
    """Run `fn` on the lead process first, then (after a barrier) on the others: for work that
    writes shared files, such as generating the corpus, which the others then only read."""
    if check_pipeline(pipe)["transport"] != "dist":
        return fn()
    import paddle.distributed as dist
    if not dist.is_initialized():
        dist.init_parallel_env()
    if is_lead_process():
        out = fn()
        dist.barrier()
        return out
    dist.barrier()
    return fn()


class EngineStep:
    """The pipeline engine with the project's defaults: one AdamW per stage sharing one LR schedule,
    gradients clipped by their global norm across stages."""

    def __init__(self, blocks: Sequence[nn.Layer], loss_fn: Callable, lr_schedule, pipe: dict,
                 weight_decay: float = 0.01, clip_norm: float | None = 1.0, batch_size: int | None = None):
        from training.pipeline.engine import PipelineEngine
        self.pipe = check_pipeline(pipe, len(blocks), batch_size)
        self.blocks = list(blocks)
        self.stages, self.micro_batches = self.pipe["stages"], self.pipe["micro_batches"]
        self.engine = PipelineEngine(
            self.blocks, loss_fn,
            lambda params: paddle.optimizer.AdamW(learning_rate=lr_schedule, parameters=params,
                                                  weight_decay=weight_decay),
            stages=self.stages, micro_batches=self.micro_batches, schedule=self.pipe["schedule"],
            transport=self.pipe["transport"], clip_norm=clip_norm)
        where = "one process per stage" if self.pipe["transport"] == "dist" else "in one process"
        self.how = (f"pipeline engine ({self.stages} stages x {self.micro_batches} micro-batches, "
                    f"{self.engine.schedule.name}, {where})")

    @property
    def lead(self) -> bool:
        return self.engine.stage in (None, 0) and self.engine.replica == 0

    def usable_rows(self, n: int) -> int:
        """Rows of a batch of n the engine can split evenly into micro-batches."""
        return n - n % self.micro_batches

    def train_step(self, inputs: tuple, labels) -> float:
        for b in self.blocks:
            b.train()
        return float(self.engine.train_step(inputs, labels))

    def optimizer_states(self) -> list[dict]:
        return [w.optimizer.state_dict() for _, w in sorted(self.engine.workers.items()) if w.optimizer]

    def load_optimizer_states(self, states: list[dict]) -> None:
        opts = [w.optimizer for _, w in sorted(self.engine.workers.items()) if w.optimizer]
        for opt, st in zip(opts, states):
            opt.set_state_dict(st)

    # checkpoints: per stage files (training/pipeline/checkpoint.py), the same for 1 or N stages
    def save(self, directory: str | Path) -> None:
        from training.pipeline.checkpoint import save_stages
        save_stages(self.engine, directory)
        self.barrier()

    def has_checkpoint(self, directory: str | Path) -> bool:
        return any(Path(directory).glob("stage_*_dp0.pdparams"))

    def load(self, directory: str | Path) -> None:
        from training.pipeline.checkpoint import load_stages
        load_stages(self.engine, directory)

    def gather(self, directory: str | Path) -> None:
        """Under transport 'dist', copy every stage's trained weights (saved to `directory`) into
        this process's blocks, so the lead can write the whole model; in-process they are already there."""
        if self.pipe["transport"] != "dist":
            return
        self.save(directory)
        from training.pipeline.checkpoint import merge_stages
        merged = merge_stages(directory, directory) if self.lead else None
        if merged is None:
            return
        for i, b in enumerate(self.blocks):
            for name, p in b.named_parameters():
                p.set_value(merged[f"{i}.{name}"])

    def barrier(self) -> None:
        if self.pipe["transport"] == "dist":
            import paddle.distributed as dist
            dist.barrier()
