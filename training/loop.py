"""The one training loop: LR schedule, steps through the pipeline engine, checkpoints and resume.

    sched = lr_schedule(cfg.lr, steps, warmup)
    step_fn = EngineStep(blocks, loss, sched, pipe)                # training/step.py
    slots = CheckpointSlots(work / "checkpoint")
    state = resume(step_fn, slots, sched, steps, "training") if resume_run else RunState()
    state = run(step_fn, next_batch, sched, slots, steps, every, state, desc="training")

`train` (training/trainer.py), `retrain`'s fine-tune and `pretrain` all run here, so the three share
one schedule (linear warm-up, linear decay to a floor), one checkpoint format (the engine's per-stage
files plus state.json, as one slot of models.checkpoint.CheckpointSlots: written whole, then renamed,
the newest two kept) and one resume (the newest slot that reads back whole, the LR schedule put back
at its step). A caller's own resumable state (RNGs, window order) rides in state.json (`extra`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import paddle
from tqdm import tqdm

from models.checkpoint import CheckpointSlots, load_paddle_pickle  # never paddle.load: a pickle runs code
from training.errors import ResumeError

LR_FLOOR = 0.05     # the decay ends at this share of the peak LR, not at 0: the last steps still learn


def lr_factor(step: int, steps: int, warmup: int) -> float:
    """The LR multiplier at `step` (0-based): linear warm-up over `warmup` steps to 1, then linear decay
    to LR_FLOOR at `steps`. The only LR schedule of the project."""
    warmup = max(1, int(warmup))
    return min((step + 1) / warmup, max(LR_FLOOR, (steps - step) / max(1, steps - warmup)))


def lr_schedule(lr: float, steps: int, warmup: int) -> paddle.optimizer.lr.LambdaDecay:
    """`lr_factor` as a Paddle scheduler (the optimizers of every stage share it; it is saved with them)."""
    return paddle.optimizer.lr.LambdaDecay(float(lr), lambda s: lr_factor(s, steps, warmup))


def sync_schedule(sched: paddle.optimizer.lr.LRScheduler, step: int) -> None:
    """Put the LR schedule at `step` after a resume. The optimizer's saved state normally carries it
    (Paddle restores `LR_Scheduler` with the optimizer); stepping it again would skip ahead."""
    if sched.last_epoch != step:
        sched.last_epoch = step - 1
        sched.step()


@dataclass
class RunState:
    """What state.json holds: the step reached, every step's loss, where the run was resumed, and the
    caller's own resumable state (`extra`: RNG states, data order, identity of the run)."""
    step: int = 0
    losses: list[float] = field(default_factory=list)
    resumed_at: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "step": self.step, "losses": self.losses, "resumed_at": self.resumed_at}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "RunState":
        extra = {k: v for k, v in raw.items() if k not in ("step", "losses", "resumed_at")}
        return cls(int(raw["step"]), list(raw.get("losses") or []), list(raw.get("resumed_at") or []), extra)


# --- checkpoints ----------------------------------------------------------------------------------------

def save_checkpoint(step_fn, state: dict[str, Any], slots: CheckpointSlots) -> None:
    """Save into a staging directory, every process its own stages' files; the lead adds state.json
    and commits (fsync, rename into place, keep the newest two). Barriers keep the processes in step."""
    if step_fn.lead:
        slots.begin(state["step"])
    step_fn.barrier()
    staging = slots.staging(state["step"])
    step_fn.save(staging)            # per-stage weights + optimizer states (every process its own)
    if step_fn.lead:
        (staging / "state.json").write_text(json.dumps(state))
        slots.commit(state["step"])
    step_fn.barrier()


def restore_checkpoint(step_fn, model, directory: Path) -> dict[str, Any]:
    """Weights and optimizer states from one checkpoint directory; returns its state.json.

    Checkpoints from before the engine's per-stage files (model.pdparams of the whole model and
    opt.pdopt: one optimizer's state, or a list of one per stage) load too, into the same stage count."""
    state = json.loads((directory / "state.json").read_text())
    if step_fn.has_checkpoint(directory):
        step_fn.load(directory)
        return state
    opt = load_paddle_pickle(directory / "opt.pdopt")
    opts = opt if isinstance(opt, list) else [opt]
    if model is None or len(opts) != step_fn.stages:
        raise ResumeError(f"{directory} holds a checkpoint of {len(opts)} stage(s); resume it with "
                          f"--pipeline-stages {len(opts)}")
    model.set_state_dict(load_paddle_pickle(directory / "model.pdparams"))
    step_fn.load_optimizer_states(opts)
    return state


def resume(step_fn, slots: CheckpointSlots, sched, steps: int, what: str, model=None,
           same_run: Callable[[dict[str, Any]], str | None] | None = None) -> RunState | None:
    """The run state of the newest checkpoint in `slots` that reads back whole, with the weights,
    optimizer states and LR schedule put back; None when there is none.

    `same_run(saved state.json)` returns why the newest checkpoint belongs to another run (or None):
    such a checkpoint is refused (ResumeError), not mixed into this run nor skipped for an older one."""
    if same_run is not None:
        for slot in slots.slots():
            try:
                saved = json.loads((slot / "state.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue                  # a torn slot: CheckpointSlots.resume reports it and falls back
            why = same_run(saved)
            if why:
                raise ResumeError(f"the checkpoint in {slot} is of another run ({why}); rerun with the same "
                                  f"settings, or without --resume to start over")
            break
    found = slots.resume(lambda d: restore_checkpoint(step_fn, model, d))
    if not found:
        return None
    where, saved = found
    state = RunState.from_json(saved)
    sync_schedule(sched, state.step)
    state.resumed_at.append(state.step)
    print(f"resuming {what} at step {state.step} of {steps} from {where}")
    return state


# --- the loop -------------------------------------------------------------------------------------------

Batch = tuple[tuple, Any]


def run(step_fn, next_batch: Callable[[], Batch | None], sched, slots: CheckpointSlots, steps: int,
        checkpoint_every: int, state: RunState | None = None, desc: str = "training",
        extra: Callable[[], dict[str, Any]] | None = None, deadline: float | None = None) -> RunState:
    """Train from `state.step` to `steps`: one engine step per batch of `next_batch()` (None: no usable
    batch, draw again), the LR schedule stepped after each, a checkpoint every `checkpoint_every` steps
    and at the end (with `extra()`'s state in state.json). Past `deadline` (time.time()) it saves and
    stops early. Returns the state reached."""
    state = state or RunState()
    every = max(1, int(checkpoint_every))

    def save() -> None:
        if extra is not None:
            state.extra.update(extra())
        save_checkpoint(step_fn, state.to_json(), slots)

    with tqdm(total=steps, initial=state.step, desc=f"{desc} [{step_fn.how}]", unit="step",
              disable=not step_fn.lead) as bar:
        while state.step < steps:
            batch = next_batch()
            if batch is None:
                continue
            loss = step_fn.train_step(*batch)
            sched.step()
            state.step += 1
            state.losses.append(round(float(loss), 5))
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(state.losses[-20:]):.4f}")
            if state.step % every == 0 or state.step == steps:
                save()
            if deadline and time.time() > deadline:
                print(f"time budget reached at step {state.step}; saving")
                save()
                break
    return state
