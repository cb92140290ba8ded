"""Per-stage checkpoints: merged keys equal the unpartitioned model's; resume is bit-for-bit."""
from __future__ import annotations

import numpy as np
import paddle

from training.pipeline.checkpoint import load_stages, merge_stages, save_stages
from training.pipeline.engine import PipelineEngine
from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss

CFG = ToyConfig(hidden=16, layers=2, heads=2, ffn=32, max_len=8)


def make_engine():
    return PipelineEngine(build_toy_blocks(CFG, seed=0), toy_loss,
                          lambda p: paddle.optimizer.AdamW(learning_rate=0.01, parameters=p),
                          stages=4, micro_batches=2, schedule="1f1b")


def test_resume_is_bit_for_bit_and_merge_matches_plain_model(tmp_path):
    straight = make_engine()
    losses = [straight.train_step(*make_batch(4, CFG, seed=s)) for s in range(4)]

    first = make_engine()
    for s in range(2):
        first.train_step(*make_batch(4, CFG, seed=s))
    save_stages(first, tmp_path)
    resumed = make_engine()  # fresh weights and optimizer; everything must come from disk
    assert load_stages(resumed, tmp_path) == 2
    after = [resumed.train_step(*make_batch(4, CFG, seed=s)) for s in (2, 3)]
    assert after == losses[2:]  # exact float equality
    for k, p in resumed.state_dict().items():
        assert np.array_equal(p.numpy(), straight.state_dict()[k].numpy()), k

    merged = merge_stages(tmp_path)
    plain = paddle.nn.LayerList(build_toy_blocks(CFG, seed=0))
    assert list(merged) == list(plain.state_dict())
    plain.set_state_dict(paddle.load(str(tmp_path / "model_state.pdparams")))
    assert np.array_equal(plain.state_dict()["1.qkv.weight"].numpy(), first.state_dict()["1.qkv.weight"].numpy())
