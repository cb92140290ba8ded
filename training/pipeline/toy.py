"""A small BERT-like encoder built to the block contract, for tests and benches of the engine.

Blocks: [embeddings, layer_0 .. layer_{N-1}, head]. The embeddings take (input_ids, bbox,
token_type_ids, attention_mask) and return (hidden, mask_bias); mask_bias is an additive attention
bias with stop_gradient=True, so it travels forward with no gradient. Each layer maps
(hidden, mask_bias) -> (hidden, mask_bias); the head maps them to per-token logits. No dropout, so a
run is a pure function of weights and data (what parity tests need).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F


@dataclass
class ToyConfig:
    vocab: int = 64
    hidden: int = 32
    layers: int = 4
    heads: int = 4
    ffn: int = 64
    max_len: int = 16
    labels: int = 5


class Embeddings(nn.Layer):
    def __init__(self, cfg: ToyConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab, cfg.hidden)
        self.position = nn.Embedding(cfg.max_len, cfg.hidden)
        self.token_type = nn.Embedding(2, cfg.hidden)
        self.box = nn.Linear(4, cfg.hidden)  # 2-D layout: x0, y0, x1, y1 scaled to 0..1
        self.norm = nn.LayerNorm(cfg.hidden)

    def forward(self, input_ids, bbox, token_type_ids, attention_mask):
        pos = paddle.arange(input_ids.shape[1]).unsqueeze(0)
        h = self.word(input_ids) + self.position(pos) + self.token_type(token_type_ids)
        h = self.norm(h + self.box(bbox.astype(h.dtype) / 1000.0))
        bias = (1.0 - attention_mask.astype(h.dtype)).unsqueeze([1, 2]) * -1e4
        bias.stop_gradient = True
        return h, bias


class Layer(nn.Layer):
    def __init__(self, cfg: ToyConfig):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.hidden)
        self.norm1 = nn.LayerNorm(cfg.hidden)
        self.ff1 = nn.Linear(cfg.hidden, cfg.ffn)
        self.ff2 = nn.Linear(cfg.ffn, cfg.hidden)
        self.norm2 = nn.LayerNorm(cfg.hidden)

    def forward(self, h, bias):
        b, n, d = h.shape
        q, k, v = self.qkv(h).reshape([b, n, 3, self.heads, d // self.heads]).transpose([2, 0, 3, 1, 4])
        att = F.softmax(q @ k.transpose([0, 1, 3, 2]) / float(np.sqrt(d // self.heads)) + bias, axis=-1)
        ctx = (att @ v).transpose([0, 2, 1, 3]).reshape([b, n, d])
        h = self.norm1(h + self.out(ctx))
        h = self.norm2(h + self.ff2(F.gelu(self.ff1(h))))
        return h, bias


class Head(nn.Layer):
    def __init__(self, cfg: ToyConfig):
        super().__init__()
        self.proj = nn.Linear(cfg.hidden, cfg.labels)

    def forward(self, h, bias):
        return self.proj(h)


def build_toy_blocks(cfg: ToyConfig | None = None, seed: int = 0, dtype: str = "float32") -> list[nn.Layer]:
    """The block list [embeddings, layers..., head], deterministic for a seed."""
    cfg = cfg or ToyConfig()
    old = paddle.get_default_dtype()
    paddle.set_default_dtype(dtype)
    try:
        paddle.seed(seed)
        return [Embeddings(cfg)] + [Layer(cfg) for _ in range(cfg.layers)] + [Head(cfg)]
    finally:
        paddle.set_default_dtype(old)


def toy_loss(logits: paddle.Tensor, labels: paddle.Tensor) -> paddle.Tensor:
    """Mean token cross-entropy over the micro-batch (the engine scales it by 1/M)."""
    return F.cross_entropy(logits.reshape([-1, logits.shape[-1]]), labels.reshape([-1])).mean()


def make_batch(batch: int, cfg: ToyConfig | None = None, seed: int = 0, seq: int | None = None):
    """Random (inputs, labels): inputs = (input_ids, bbox, token_type_ids, attention_mask)."""
    cfg = cfg or ToyConfig()
    n = seq or cfg.max_len
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, cfg.vocab, size=(batch, n))
    x0 = rng.integers(0, 900, size=(batch, n, 2))
    bbox = np.concatenate([x0, x0 + rng.integers(1, 100, size=(batch, n, 2))], axis=-1)
    types = rng.integers(0, 2, size=(batch, n))
    mask = np.ones((batch, n), dtype="int64")
    lens = rng.integers(n // 2, n + 1, size=batch)
    for i, L in enumerate(lens):
        mask[i, L:] = 0
    labels = rng.integers(0, cfg.labels, size=(batch, n))
    as_t = lambda a: paddle.to_tensor(a.astype("int64"))  # noqa: E731
    return (as_t(ids), as_t(bbox), as_t(types), as_t(mask)), as_t(labels)


def run_blocks(blocks: list[nn.Layer], inputs: tuple):
    """Plain single-process forward through the block list (the reference for parity)."""
    out = inputs
    for blk in blocks:
        out = blk(*out) if isinstance(out, (tuple, list)) else blk(out)
    return out
