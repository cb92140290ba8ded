"""Per-stage checkpoints: save (params, optimizer, step, RNG), merge into one model, resume exactly.

Layout of a checkpoint directory:
    stage_<s>_dp<d>.pdparams   parameters keyed like an unpartitioned nn.LayerList(blocks): "3.qkv.weight"
    stage_<s>_dp<d>.pdopt      optimizer state, param names replaced by those keys (names differ per run)
    stage_<s>_dp<d>.json       step, RNG state
`merge_stages(dir)` writes model_state.pdparams with every block's parameters (for inference).

Every file is read back with models/checkpoint.py's `load_paddle_pickle`, never `paddle.load`: a pickle
can run code when loaded, and the restricted reader allows only what these files hold (arrays, numbers,
names; Paddle's RNG state in the .pdstate file).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import paddle

from models.checkpoint import load_paddle_pickle
from training.pipeline.engine import PipelineEngine


def _tag(engine: PipelineEngine, stage: int) -> str:
    return f"stage_{stage}_dp{engine.replica}"


def _renamed_opt_state(state: dict, names: dict[str, str]) -> dict:
    """Swap Paddle's auto-generated param names for block keys (longest name first: no prefix clash)."""
    out = {}
    order = sorted(names, key=len, reverse=True)
    for k, v in state.items():
        new = k
        for n in order:
            if k.startswith(n + "_") or k == n:
                new = names[n] + "\x00" + k[len(n):]
                break
        out[new] = v
    return out


def save_stages(engine: PipelineEngine, directory: str | Path) -> None:
    """Save what this process holds (all stages in-process; its own stage under 'dist')."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for s, w in engine.workers.items():
        named = [(k, p) for pc in w.pieces for k, p in pc.named_parameters()]
        paddle.save({k: p for k, p in named}, str(d / f"{_tag(engine, s)}.pdparams"))
        if w.optimizer:
            names = {p.name: k for k, p in named}
            paddle.save(_renamed_opt_state(w.optimizer.state_dict(), names), str(d / f"{_tag(engine, s)}.pdopt"))
        meta = {"step": engine.step, "stage": s, "stages": engine.S, "bounds": engine.bounds,
                "numpy_rng": np.random.get_state()[1].tolist(), "python_rng": repr(random.getstate())}
        (d / f"{_tag(engine, s)}.json").write_text(json.dumps(meta))
    paddle.save(paddle.get_rng_state(), str(d / f"rng_{engine.replica}_{min(engine.workers)}.pdstate"))


def load_stages(engine: PipelineEngine, directory: str | Path) -> int:
    """Restore parameters, optimizer state, step and RNG; returns the step to continue from."""
    d = Path(directory)
    for s, w in engine.workers.items():
        tag = _tag(engine, s)
        if not (d / f"{tag}.pdparams").exists():
            raise FileNotFoundError(f"{d / tag}.pdparams missing: was the checkpoint saved with the same "
                                    "number of stages? (merge_stages + a fresh run re-partitions)")
        state = load_paddle_pickle(d / f"{tag}.pdparams")
        named = [(k, p) for pc in w.pieces for k, p in pc.named_parameters()]
        for k, p in named:
            p.set_value(state[k])
        if w.optimizer and (d / f"{tag}.pdopt").exists():
            keys = {k: p.name for k, p in named}
            saved = load_paddle_pickle(d / f"{tag}.pdopt")
            restored = {}
            for k, v in saved.items():
                key, sep, rest = k.partition("\x00")
                restored[keys[key] + rest if sep else k] = v
            w.optimizer.set_state_dict(restored)
        meta = json.loads((d / f"{tag}.json").read_text())
        engine.step = meta["step"]
    rng = d / f"rng_{engine.replica}_{min(engine.workers)}.pdstate"
    if rng.exists():
        paddle.set_rng_state(load_paddle_pickle(rng, rng=True))
    return engine.step


def merge_stages(directory: str | Path, out: str | Path | None = None) -> dict:
    """Merge replica 0's stage files into one state dict (keys as the unpartitioned model) and save
    it as model_state.pdparams in `out` (default: the checkpoint directory)."""
    d = Path(directory)
    files = sorted(d.glob("stage_*_dp0.pdparams"), key=lambda f: int(f.name.split("_")[1]))
    if not files:
        raise FileNotFoundError(f"no stage_*_dp0.pdparams in {d}; save with save_stages first")
    merged: dict = {}
    for f in files:
        merged.update(load_paddle_pickle(f))
    # stable sort on the block index only: within a block, keep the layer's own parameter order
    merged = dict(sorted(merged.items(), key=lambda kv: int(kv[0].split(".")[0])))
    paddle.save(merged, str(Path(out or d) / "model_state.pdparams"))
    return merged
