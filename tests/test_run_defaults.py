"""One set of defaults for train, retrain and pretrain (training/config.py): the commands' options and the
functions' parameters read them, so the pretrain command and retrain's --pretrain stage adapt the encoder
for the same number of steps (they used to say 200 and 100)."""
from __future__ import annotations

import argparse
import inspect

from training.config import PRETRAIN, RETRAIN
from training.pretrain import pretrain, pretrain_args
from training.retrain import retrain, retrain_args


def parsed(add: object, argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add(p)                                                    # type: ignore[operator]
    return p.parse_args(argv)


def test_pretrain_and_retrain_take_their_defaults_from_the_config():
    pre = parsed(pretrain_args, ["--corpus", "c", "--base", "b", "--out", "o"])
    re_ = parsed(retrain_args, ["--corpus", "c", "--base", "b"])
    assert pre.steps == re_.pretrain_steps == PRETRAIN.steps == RETRAIN.pretrain.steps
    assert (pre.batch_size, pre.lr, pre.max_len, pre.checkpoint_every, pre.seed) == \
        (PRETRAIN.batch_size, PRETRAIN.lr, PRETRAIN.max_len, PRETRAIN.checkpoint_every, PRETRAIN.seed)
    assert (re_.steps, re_.batch_size, re_.lr, re_.pipeline_stages, re_.micro_batches, re_.seed) == \
        (RETRAIN.steps, RETRAIN.batch_size, RETRAIN.lr, RETRAIN.stages, RETRAIN.micro_batches, RETRAIN.seed)


def test_the_functions_default_as_their_commands_do():
    pre = inspect.signature(pretrain).parameters
    assert {k: pre[k].default for k in ("steps", "batch_size", "lr", "max_len", "checkpoint_every", "seed")} == \
        {"steps": PRETRAIN.steps, "batch_size": PRETRAIN.batch_size, "lr": PRETRAIN.lr, "max_len": PRETRAIN.max_len,
         "checkpoint_every": PRETRAIN.checkpoint_every, "seed": PRETRAIN.seed}
    re_ = inspect.signature(retrain).parameters
    assert (re_["steps"].default, re_["pretrain_steps"].default, re_["lr"].default) == \
        (RETRAIN.steps, PRETRAIN.steps, RETRAIN.lr)
