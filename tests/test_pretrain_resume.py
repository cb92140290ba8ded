"""`python -m training pretrain` checkpoints every N steps; a run killed after a checkpoint and
restarted with --resume ends with exactly the losses and weights of a run never stopped (same
weights, optimizer, LR schedule, Paddle and Python RNGs, window order)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.test_retrain import make_base, make_corpus


class Killed(Exception):
    pass


def weights(model_dir: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file
    return load_file(str(model_dir / "model_state.safetensors"))


def newest_step(ckpt: Path) -> int:
    from models.checkpoint import CheckpointSlots
    return json.loads((CheckpointSlots(ckpt).slots()[0] / "state.json").read_text())["step"]


@pytest.mark.heavy
def test_pretrain_resumes_bit_for_bit_after_a_kill(tmp_path, monkeypatch, capsys):
    from data.corpus import read_corpus
    from training import pretrain as pt
    records = read_corpus(make_corpus(tmp_path / "corpus", 6))
    base = make_base(tmp_path / "base", hidden=32, layers=2)
    opts = dict(steps=6, batch_size=4, pipe={"stages": 2, "micro_batches": 2}, seed=3, checkpoint_every=2)

    whole = pt.pretrain(records, base, tmp_path / "whole", **opts)
    assert newest_step(tmp_path / "whole.ckpt") == 6

    real_step = pt.EngineStep.train_step
    calls = {"n": 0}

    def dies_at_step_5(self, inputs, labels):
        calls["n"] += 1
        if calls["n"] == 5:                     # killed after the step-4 checkpoint, mid step 5
            raise Killed()
        return real_step(self, inputs, labels)

    monkeypatch.setattr(pt.EngineStep, "train_step", dies_at_step_5)
    with pytest.raises(Killed):
        pt.pretrain(records, base, tmp_path / "cut", **opts)
    assert newest_step(tmp_path / "cut.ckpt") == 4
    assert not (tmp_path / "cut" / "model_state.pdparams").exists()
    monkeypatch.setattr(pt.EngineStep, "train_step", real_step)

    capsys.readouterr()
    resumed = pt.pretrain(records, base, tmp_path / "cut", resume=True, **opts)
    assert "resuming WWM MLM at step 4 of 6" in capsys.readouterr().out
    assert resumed["losses"] == whole["losses"]
    assert resumed["mlm_loss_after"] == whole["mlm_loss_after"]
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "cut")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    # a checkpoint of another run (other --steps) is refused, not silently mixed in
    from training.errors import ResumeError
    with pytest.raises(ResumeError, match="another run"):
        pt.pretrain(records, base, tmp_path / "cut", resume=True, **{**opts, "steps": 8})


def test_pretrain_cli_has_checkpoint_and_resume_options():
    import argparse

    from training.pretrain import pretrain_args
    p = argparse.ArgumentParser()
    pretrain_args(p)
    a = p.parse_args(["--corpus", "c", "--base", "b", "--out", "o", "--resume", "--checkpoint-every", "7"])
    assert a.resume and a.checkpoint_every == 7
