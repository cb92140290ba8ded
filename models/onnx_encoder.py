"""The extractor's encoder and heads as an ONNX graph run by onnxruntime: extraction's inference backend on CPU.

Why: Paddle dygraph runs the bundled 3 x 192 encoder at ~35 ms a layer on a 3-window page, several times
what its arithmetic needs, because every op is dispatched from Python through the eager tracer. A
born-digital document (text read from the PDF/OFD, no OCR) spends most of its time there. onnxruntime runs
the same computation as one fused graph (measured numbers: bench/README.md, "Extraction backend").

How: the graph is written here, op for op after models/encoder.py and models/heads.py (`Embeddings`,
`TransformerLayer`, `ExtractionHead` in eval mode: dropout is the identity), with the weights the loaded Paddle
model holds as its initialisers. It is built in memory when an `Extractor` is loaded, never written to disk:
building it and creating the sessions add ~0.1 s to the ~0.3 s of reading the model directory, and
onnxruntime optimises a graph read from a file just the same, so a file would save almost nothing at load
and would bring what a derived file brings: stale copies to detect, model directories that are read-only or
registry versions that must not change, an untracked file in the bundled models/default. Built from the live
weights, it can never disagree with them. The cost is memory: onnxruntime holds its own copy of the weights
beside the Paddle model's (+~70 MB RSS with the bundled model).
tests/test_onnx_encoder.py checks the graph against the Paddle model (tag and doc-type probabilities within
1e-4, link scores through the sigmoid too) on generated pages, for the bundled model and small ones with the
options it leaves at their defaults.

Two sessions: the encoder with the tag and doc-type heads (outputs: tag probabilities, per-window doc-type
probabilities, the last hidden states) and the link head (hidden states, mask -> link logits), run only when a
generic form's decoding asks, as the Paddle path does. Dynamic axes: windows and tokens.

`OnnxEncoder` raises `OnnxUnavailable` for what it cannot run (a configuration the graph does not cover,
onnx or onnxruntime missing); the extractor then runs Paddle, which stays the training path and the reference
(`PIAOJU_EXTRACTOR=paddle` forces it, for comparison).
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from models.offline import stay_offline

BACKEND_ENV = "PIAOJU_EXTRACTOR"      # "paddle" forces the Paddle dygraph path; "onnx" (default on CPU) this one
OPSET = 17                            # LayerNormalization is an ONNX op from 17 on
# intra-op threads: the process's cores, at most this many. On the 2-core machine, a 3 x 256 page: 28 ms with
# one thread, 16-23 ms with two when the second core is free (a little slower than one when it is busy)
MAX_THREADS = 4


class OnnxUnavailable(RuntimeError):
    """The ONNX backend cannot run this model here; the extractor uses Paddle instead."""


def wanted_backend(device: str) -> str:
    """"onnx" or "paddle": the environment's choice, else onnx on CPU and Paddle on an accelerator (where
    Paddle runs the encoder on the device; this graph runs on the CPU provider only)."""
    choice = os.environ.get(BACKEND_ENV, "").strip().lower()
    if choice in ("paddle", "onnx"):
        return choice
    return "onnx" if device.startswith("cpu") else "paddle"


class _Graph:
    """Accumulates nodes and initialisers; names are made unique by a counter."""

    def __init__(self, weights: Mapping[str, np.ndarray]):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0
        self._consts: dict[tuple, str] = {}

    def name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}_{self._n}"

    def op(self, kind: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        out = out or self.name(kind.lower())
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def init(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def w(self, key: str) -> str:
        """A float32 weight of the Paddle state dict, by its name there."""
        if key not in self.weights:
            raise OnnxUnavailable(f"weight {key} missing from the model")
        return self.init(key, np.asarray(self.weights[key], dtype=np.float32))

    def const(self, value: Any, dtype: Any) -> str:
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(self.name("const"), arr)
        return self._consts[key]

    def take(self, x: str, index: int, axis: int) -> str:
        """x's entry `index` along `axis`, that axis dropped (Gather with a scalar index, written as Slice and
        Squeeze: onnxruntime's optimiser rewrites such a Gather into a Slice it then cannot run)."""
        i64 = np.int64
        part = self.op("Slice", x, self.const([index], i64), self.const([index + 1], i64), self.const([axis], i64))
        return self.op("Squeeze", part, self.const([axis], i64))

    def linear(self, x: str, prefix: str) -> str:
        """Paddle's nn.Linear: x @ W + b with W stored [in, out]."""
        return self.op("Add", self.op("MatMul", x, self.w(f"{prefix}.weight")), self.w(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op("LayerNormalization", x, self.w(f"{prefix}.weight"), self.w(f"{prefix}.bias"),
                       axis=-1, epsilon=float(eps))

    def activation(self, x: str, kind: str) -> str:
        """models/encoder.py ACTIVATIONS written out (onnxruntime fuses both GELU forms into its Gelu kernels)."""
        f = np.float32
        if kind == "relu":
            return self.op("Relu", x)
        if kind == "gelu":                       # exact: 0.5 x (1 + erf(x / sqrt 2))
            inner = self.op("Erf", self.op("Div", x, self.const(math.sqrt(2.0), f)))
        elif kind in ("gelu_new", "gelu_pytorch_tanh"):   # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = self.op("Mul", self.op("Mul", x, x), x)
            poly = self.op("Add", x, self.op("Mul", cube, self.const(0.044715, f)))
            inner = self.op("Tanh", self.op("Mul", poly, self.const(math.sqrt(2.0 / math.pi), f)))
        else:
            raise OnnxUnavailable(f"activation {kind!r} has no ONNX form here")
        return self.op("Mul", self.op("Mul", x, self.op("Add", inner, self.const(1.0, f))), self.const(0.5, f))

    def model(self, inputs: list[Any], outputs: list[Any], name: str) -> bytes:
        h = self.helper
        graph = h.make_graph(self.nodes, name, inputs, outputs, self.inits)
        proto = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], producer_name="piaoju")
        proto.ir_version = 8                     # what onnxruntime 1.32 reads with opset 17
        return proto.SerializeToString()


def encoder_graph(weights: Mapping[str, np.ndarray], encoder: Mapping[str, Any]) -> bytes:
    """The serialised ONNX model: (input_ids [W, T], bbox [W, T, 4], attention_mask [W, T], all int64) ->
    (tag_probs [W, T, n_tags], doc_probs [W, n_types], hidden [W, T, D]); `encoder` is config.json's
    "encoder" (EncoderConfig's fields). Token types are all 0, as the extractor passes none."""
    from onnx import TensorProto, helper
    g = _Graph(weights)
    f32, i64 = np.float32, np.int64
    d, heads = int(encoder["hidden_size"]), int(encoder["num_heads"])
    head_dim = d // heads
    eps = float(encoder.get("layer_norm_eps", 1e-12))
    top = int(encoder.get("layout_buckets", 1001)) - 1
    ids, bbox, mask = "input_ids", "bbox", "attention_mask"

    # --- Embeddings: (word + position + token type 0 [+ task]) + layout, LayerNorm
    length = g.op("Shape", ids, start=1, end=2)          # [T]: position rows 0..T-1 are the table's first T
    positions = g.op("Slice", g.w("embeddings.position_embeddings.weight"), g.const([0], i64), length,
                     g.const([0], i64))
    hidden = g.op("Add", g.op("Gather", g.w("embeddings.word_embeddings.weight"), ids), positions)
    type_row = np.asarray(weights["embeddings.token_type_embeddings.weight"], dtype=f32)[0]
    hidden = g.op("Add", hidden, g.init("token_type_row", type_row))
    if encoder.get("use_task_id"):
        task_row = np.asarray(weights["embeddings.task_type_embeddings.weight"], dtype=f32)[int(encoder["task_id"])]
        hidden = g.op("Add", hidden, g.init("task_type_row", task_row))
    box = g.op("Clip", bbox, g.const(0, i64), g.const(top, i64))
    x0, y0, x1, y1 = (g.take(box, i, axis=2) for i in range(4))
    tables = {t: g.w(f"embeddings.{t}_embeddings.weight") for t in ("x", "y", "w", "h")}
    parts = [g.op("Gather", tables["x"], x0), g.op("Gather", tables["y"], y0),
             g.op("Gather", tables["x"], x1), g.op("Gather", tables["y"], y1),
             g.op("Gather", tables["w"], g.op("Clip", g.op("Sub", x1, x0), g.const(0, i64), g.const(top, i64))),
             g.op("Gather", tables["h"], g.op("Clip", g.op("Sub", y1, y0), g.const(0, i64), g.const(top, i64)))]
    layout = parts[0]
    for p in parts[1:]:
        layout = g.op("Add", layout, p)
    hidden = g.layer_norm(g.op("Add", hidden, layout), "embeddings.layer_norm", eps)
    # [W, 1, 1, T] additive bias: 0 attended, -1e4 padding (models/encoder.attention_bias)
    keep = g.op("Cast", mask, to=TensorProto.FLOAT)
    bias = g.op("Mul", g.op("Sub", g.const(1.0, f32), keep), g.const(-1e4, f32))
    bias = g.op("Unsqueeze", bias, g.const([1, 2], i64))

    # --- TransformerLayer x N (post-LN)
    split = g.const([0, 0, heads, head_dim], i64)
    merge = g.const([0, 0, d], i64)
    scale = g.const(math.sqrt(head_dim), f32)
    for n in range(int(encoder["num_layers"])):
        p = f"layers.{n}"
        q = g.op("Transpose", g.op("Reshape", g.linear(hidden, f"{p}.q_proj"), split), perm=[0, 2, 1, 3])
        k_t = g.op("Transpose", g.op("Reshape", g.linear(hidden, f"{p}.k_proj"), split), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", g.linear(hidden, f"{p}.v_proj"), split), perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("Div", g.op("MatMul", q, k_t), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        hidden = g.layer_norm(g.op("Add", hidden, g.linear(context, f"{p}.out_proj")), f"{p}.norm1", eps)
        ffn = g.linear(g.activation(g.linear(hidden, f"{p}.linear1"), str(encoder.get("activation", "gelu"))),
                       f"{p}.linear2")
        hidden = g.layer_norm(g.op("Add", hidden, ffn), f"{p}.norm2", eps)

    # --- ExtractionHead without the link output
    g.op("Identity", hidden, out="hidden")
    g.op("Softmax", g.linear(hidden, "head.tagger"), axis=-1, out="tag_probs")
    cls = g.take(hidden, 0, axis=1)
    pooled = g.op("Tanh", g.linear(cls, "head.pool"))
    g.op("Softmax", g.linear(pooled, "head.doc_classifier"), axis=-1, out="doc_probs")
    vi = helper.make_tensor_value_info
    inputs = [vi(ids, TensorProto.INT64, ["W", "T"]), vi(bbox, TensorProto.INT64, ["W", "T", 4]),
              vi(mask, TensorProto.INT64, ["W", "T"])]
    outputs = [vi("tag_probs", TensorProto.FLOAT, ["W", "T", None]), vi("doc_probs", TensorProto.FLOAT, ["W", None]),
               vi("hidden", TensorProto.FLOAT, ["W", "T", d])]
    return g.model(inputs, outputs, "encoder")


def link_graph(weights: Mapping[str, np.ndarray], link_dim: int) -> bytes:
    """(hidden [W, T, D], attention_mask [W, T]) -> link_logits [W, T, T]: `ExtractionHead.link_logits`."""
    from onnx import TensorProto, helper
    g = _Graph(weights)
    f32 = np.float32
    q, k = g.linear("hidden", "head.link_query"), g.linear("hidden", "head.link_key")
    logits = g.op("Div", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1])), g.const(math.sqrt(link_dim), f32))
    keep = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = g.op("Unsqueeze", g.op("Mul", g.op("Sub", g.const(1.0, f32), keep), g.const(-1e4, f32)),
                g.const([1], np.int64))
    g.op("Add", logits, bias, out="link_logits")
    vi = helper.make_tensor_value_info
    d = int(np.shape(weights["head.link_query.weight"])[0])
    inputs = [vi("hidden", TensorProto.FLOAT, ["W", "T", d]), vi("attention_mask", TensorProto.INT64, ["W", "T"])]
    return g.model(inputs, [vi("link_logits", TensorProto.FLOAT, ["W", "T", "T"])], "link")


def session_threads() -> int:
    """Intra-op threads: the cores this process may use (a batch worker's share), at most MAX_THREADS."""
    from models.ocr.onnx import allowed_cores
    return max(1, min(MAX_THREADS, allowed_cores()))


class OnnxEncoder:
    """The sessions of one loaded model; `__call__` and `link` are what `Extractor._forward` runs."""

    def __init__(self, weights: Mapping[str, np.ndarray], encoder: Mapping[str, Any], link: bool, link_dim: int,
                 threads: int | None = None):
        stay_offline()          # onnxruntime reads ORT_DISABLE_TELEMETRY once, on import
        try:
            import onnx  # noqa: F401  (the graph builder)
            import onnxruntime as ort
        except ImportError as exc:
            raise OnnxUnavailable(f"{exc.name} is not installed") from None
        self.max_position = int(encoder["max_position"])
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = threads or session_threads()
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")   # as OCR: no CPU burnt idle
        providers = ["CPUExecutionProvider"]
        try:
            self.session = ort.InferenceSession(encoder_graph(weights, encoder), sess_options=so, providers=providers)
            self.link_session = ort.InferenceSession(link_graph(weights, link_dim), sess_options=so,
                                                     providers=providers) if link else None
        except OnnxUnavailable:
            raise
        except Exception as exc:      # whatever onnx or onnxruntime raise for a graph they cannot take
            raise OnnxUnavailable(f"onnxruntime could not load the encoder graph ({exc})") from exc

    def __call__(self, ids: np.ndarray, bbox: np.ndarray, mask: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tag probabilities [W, T, n_tags], doc-type probabilities [W, n_types], hidden states [W, T, D])."""
        if ids.shape[1] > self.max_position:          # Embeddings.forward's check (the graph would fail obscurely)
            raise ValueError(f"sequence of {ids.shape[1]} tokens exceeds max_position {self.max_position}; "
                             "encode the page with a smaller max_len")
        feeds = {"input_ids": np.ascontiguousarray(ids, dtype=np.int64),
                 "bbox": np.ascontiguousarray(bbox, dtype=np.int64),
                 "attention_mask": np.ascontiguousarray(mask, dtype=np.int64)}
        tags, doc, hidden = self.session.run(["tag_probs", "doc_probs", "hidden"], feeds)
        return tags, doc, hidden

    def link(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Link logits [W, T, T] from `__call__`'s hidden states."""
        if self.link_session is None:
            raise OnnxUnavailable("this model has no link head")
        return self.link_session.run(["link_logits"], {"hidden": hidden,
                                                       "attention_mask": np.ascontiguousarray(mask, dtype=np.int64)})[0]
