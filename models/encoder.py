"""A BERT/ERNIE-compatible transformer with 2-D layout embeddings, built as a flat list of blocks.

The model is `[embeddings, layer_0 .. layer_{N-1}, head]` so the pipeline engine can cut it anywhere
(see training/pipeline). The block contract:

- block 0 (`Embeddings`): `(input_ids, bbox, token_type_ids, attention_mask) -> (hidden, mask_bias)`
- a `TransformerLayer`:   `(hidden, mask_bias) -> (hidden, mask_bias)`
- the head (models/heads.py): `(hidden, mask_bias) -> outputs` (a tensor or a tuple of tensors)

`mask_bias` is the additive attention bias `[B, 1, 1, T]` (0 where attended, -1e4 on padding, as
PaddleNLP's BertModel/ErnieModel build it), float with stop_gradient=True: it travels with the
activations but never carries a gradient.

Numerics follow BERT/ERNIE exactly: post-LN layers, exact (erf) GELU unless the checkpoint says
`gelu_new`, scaled dot-product attention with the additive mask. Layout embeddings start at zero so a
text-only checkpoint loaded into this model computes exactly what it computed before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

LAYOUT_BUCKETS = 1001          # box coordinates are normalised to 0..1000 inclusive
MASK_NEG = -1e4                # PaddleNLP's padding bias; safe in float16 too


@dataclass
class EncoderConfig:
    vocab_size: int = 8000
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 1024
    max_position: int = 512
    type_vocab_size: int = 2
    layout_buckets: int = LAYOUT_BUCKETS
    dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    activation: str = "gelu"   # gelu (exact erf), gelu_new (tanh approximation) or relu
    pad_token_id: int = 0
    # ERNIE 3.0 adds one constant "task type" row to every token; kept so such checkpoints match.
    use_task_id: bool = False
    task_type_vocab_size: int = 3
    task_id: int = 0

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads "
                             f"{self.num_heads}; pick a head count that divides it")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} unknown; use one of {sorted(ACTIVATIONS)}")

    @classmethod
    def preset(cls, name: str, **overrides) -> "EncoderConfig":
        """`tiny` (tests, CPU, the bundled default), `base` (12 x 768), `large` (24 x 1024)."""
        if name not in PRESETS:
            raise ValueError(f"unknown encoder preset {name!r}; choose one of {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


PRESETS: dict[str, dict] = {
    "tiny": dict(hidden_size=256, num_layers=4, num_heads=4, intermediate_size=1024),
    # Chinese-BERT-wwm / ERNIE-base shape
    "base": dict(vocab_size=21128, hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072),
    # ERNIE-large / RoBERTa-wwm-ext-large shape (~325M parameters with the BERT vocabulary)
    "large": dict(vocab_size=21128, hidden_size=1024, num_layers=24, num_heads=16, intermediate_size=4096),
}

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x, approximate=False),
    "gelu_new": lambda x: F.gelu(x, approximate=True),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate=True),
    "relu": F.relu,
}


def attention_bias(attention_mask: paddle.Tensor, dtype: Any = "float32") -> paddle.Tensor:
    """[B, T] 1/0 mask -> [B, 1, 1, T] additive bias (0 kept, -1e4 masked), without gradient."""
    mask = attention_mask.astype(dtype).unsqueeze([1, 2])
    bias = (1.0 - mask) * MASK_NEG
    bias.stop_gradient = True
    return bias


class Embeddings(nn.Layer):
    """Block 0: word + position + token type (+ ERNIE task) + 2-D layout, then LayerNorm and dropout.

    Layout is LayoutLM's sum: x(x0) + y(y0) + x(x1) + y(y1) + w(x1-x0) + h(y1-y0), every coordinate a
    bucket 0..1000. All four tables start at zero (see module doc).
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        c = config
        self.config = c
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        if c.use_task_id:
            self.task_type_embeddings = nn.Embedding(c.task_type_vocab_size, c.hidden_size)
        zero = paddle.ParamAttr(initializer=nn.initializer.Constant(0.0))
        self.x_embeddings = nn.Embedding(c.layout_buckets, c.hidden_size, weight_attr=zero)
        self.y_embeddings = nn.Embedding(c.layout_buckets, c.hidden_size, weight_attr=zero)
        self.w_embeddings = nn.Embedding(c.layout_buckets, c.hidden_size, weight_attr=zero)
        self.h_embeddings = nn.Embedding(c.layout_buckets, c.hidden_size, weight_attr=zero)
        self.layer_norm = nn.LayerNorm(c.hidden_size, epsilon=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, input_ids, bbox=None, token_type_ids=None, attention_mask=None):
        batch, length = input_ids.shape
        if length > self.config.max_position:
            raise ValueError(f"sequence of {length} tokens exceeds max_position "
                             f"{self.config.max_position}; encode the page with a smaller max_len")
        positions = paddle.arange(length, dtype="int64").unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = paddle.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = (input_ids != self.config.pad_token_id).astype("int64")
        hidden = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
                  + self.token_type_embeddings(token_type_ids))
        if self.config.use_task_id:
            task = paddle.full_like(input_ids, self.config.task_id)
            hidden = hidden + self.task_type_embeddings(task)
        if bbox is not None:
            hidden = hidden + self.layout(bbox)
        hidden = self.dropout(self.layer_norm(hidden))
        return hidden, attention_bias(attention_mask, hidden.dtype)

    def layout(self, bbox: paddle.Tensor) -> paddle.Tensor:
        top = self.config.layout_buckets - 1
        bbox = bbox.astype("int64").clip(0, top)
        x0, y0, x1, y1 = bbox[..., 0], bbox[..., 1], bbox[..., 2], bbox[..., 3]
        return (self.x_embeddings(x0) + self.y_embeddings(y0) + self.x_embeddings(x1)
                + self.y_embeddings(y1) + self.w_embeddings((x1 - x0).clip(0, top))
                + self.h_embeddings((y1 - y0).clip(0, top)))


class TransformerLayer(nn.Layer):
    """One post-LN BERT layer: self-attention + residual + LN, feed-forward + residual + LN.

    Linear weights are Paddle's [in, out]; checkpoint.py transposes Hugging Face's [out, in].
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        c = config
        self.num_heads = c.num_heads
        self.head_dim = c.hidden_size // c.num_heads
        self.q_proj = nn.Linear(c.hidden_size, c.hidden_size)
        self.k_proj = nn.Linear(c.hidden_size, c.hidden_size)
        self.v_proj = nn.Linear(c.hidden_size, c.hidden_size)
        self.out_proj = nn.Linear(c.hidden_size, c.hidden_size)
        self.norm1 = nn.LayerNorm(c.hidden_size, epsilon=c.layer_norm_eps)
        self.linear1 = nn.Linear(c.hidden_size, c.intermediate_size)
        self.linear2 = nn.Linear(c.intermediate_size, c.hidden_size)
        self.norm2 = nn.LayerNorm(c.hidden_size, epsilon=c.layer_norm_eps)
        self.act = ACTIVATIONS[c.activation]
        self.attn_dropout = nn.Dropout(c.attention_dropout)
        self.dropout = nn.Dropout(c.dropout)

    def _heads(self, x: paddle.Tensor) -> paddle.Tensor:
        b, t, _ = x.shape
        return x.reshape([b, t, self.num_heads, self.head_dim]).transpose([0, 2, 1, 3])

    def forward(self, hidden, mask_bias):
        b, t, d = hidden.shape
        q, k, v = self._heads(self.q_proj(hidden)), self._heads(self.k_proj(hidden)), self._heads(self.v_proj(hidden))
        scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(self.head_dim) + mask_bias
        probs = self.attn_dropout(F.softmax(scores, axis=-1))
        context = paddle.matmul(probs, v).transpose([0, 2, 1, 3]).reshape([b, t, d])
        hidden = self.norm1(hidden + self.dropout(self.out_proj(context)))
        ffn = self.linear2(self.act(self.linear1(hidden)))
        hidden = self.norm2(hidden + self.dropout(ffn))
        return hidden, mask_bias


class Encoder(nn.Layer):
    """Embeddings, N transformer layers and an optional head; `blocks()` is what the pipeline cuts.

    `forward(input_ids, bbox, token_type_ids, attention_mask)` runs `blocks()` in order, so training in
    one process and the pipeline run the same code. Without a head it returns `(hidden, mask_bias)`.
    """

    def __init__(self, config: EncoderConfig, head: nn.Layer | None = None):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.LayerList([TransformerLayer(config) for _ in range(config.num_layers)])
        self.head = head
        self._init_text_weights()

    def _init_text_weights(self, std: float = 0.02) -> None:
        # BERT's truncated-normal-ish init for a model trained from scratch; layout tables stay zero.
        layout = {id(p) for t in ("x", "y", "w", "h")
                  for p in getattr(self.embeddings, f"{t}_embeddings").parameters()}
        for name, p in self.named_parameters():
            if id(p) in layout or name.startswith("head.") or p.ndim != 2:
                continue
            p.set_value(paddle.clip(paddle.normal(0.0, std, p.shape), -2 * std, 2 * std).astype(p.dtype))

    def blocks(self) -> list[nn.Layer]:
        return [self.embeddings, *self.layers] + ([self.head] if self.head is not None else [])

    def forward(self, input_ids, bbox=None, token_type_ids=None, attention_mask=None):
        out = (input_ids, bbox, token_type_ids, attention_mask)
        for block in self.blocks():
            out = block(*out) if isinstance(out, tuple) else block(out)
        return out


def count_parameters(layer: nn.Layer) -> int:
    return int(sum(math.prod(p.shape) for p in layer.parameters()))


def parameter_count(config: EncoderConfig, with_layout: bool = True) -> int:
    """Parameters of `Encoder(config)` without a head, computed without building it (for `large`)."""
    d, f = config.hidden_size, config.intermediate_size
    emb = (config.vocab_size + config.max_position + config.type_vocab_size) * d + 2 * d
    if config.use_task_id:
        emb += config.task_type_vocab_size * d
    if with_layout:
        emb += 4 * config.layout_buckets * d
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return emb + config.num_layers * layer
