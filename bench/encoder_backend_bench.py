"""The extractor's forward pass on the two backends: Paddle dygraph against onnxruntime (models/onnx_encoder.py),
on the same windows, in one run.

    python -m bench.encoder_backend_bench [--model models/default] [--repeat 30] [--json runs/encoder_backend.json]

Windows: a generated VAT invoice page encoded as the extractor encodes it (3 windows of 256 tokens with the
bundled model). Reported, each the median of `--repeat` calls after two warm-up calls: `Extractor._forward`
on each backend, Paddle per block (embeddings, each layer, head, link head), and onnxruntime per layer at 1
and 2 intra-op threads, derived as (whole graph - graph without layers) / layers since the fused graph has
no layer boundaries to time. Also the load time of each extractor (ONNX: graph built and sessions created)
and the largest difference of their probabilities. Time on a quiet machine: these are absolute timings.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1000, 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--model", default=None, help="model directory (default: models/default)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json", default="runs/encoder_backend.json", help="where to write the results")
    a = ap.parse_args(argv)
    import paddle

    from data.document import Line, Page
    from data.synth.generator import generate
    from models.extractor import DEFAULT_MODEL_DIR, Extractor
    from models.onnx_encoder import OnnxEncoder
    model_dir = a.model or DEFAULT_MODEL_DIR
    _, rec = generate("vat_invoice", 11, decorations=False)
    page = Page(index=0, width=rec["width"], height=rec["height"],
                lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in rec["lines"]])
    t0 = time.perf_counter()
    slow = Extractor.load(model_dir, backend="paddle")
    out: dict[str, Any] = {"load_paddle_s": round(time.perf_counter() - t0, 3)}
    t0 = time.perf_counter()
    fast = Extractor.load(model_dir, backend="onnx")
    out["load_onnx_s"] = round(time.perf_counter() - t0, 3)
    arr = slow.vocab.encode_page(page.lines, page.width, page.height, slow.cfg.max_len).arrays()
    used = int(arr["attention_mask"].sum(1).max())
    ids, bbox, mask = (arr[k][:, :used] for k in ("input_ids", "bbox", "attention_mask"))
    out["windows"], out["tokens"] = int(ids.shape[0]), int(ids.shape[1])
    ps, po = slow._forward(ids, bbox, mask), fast._forward(ids, bbox, mask)
    out["max_prob_diff"] = float(max(np.abs(ps[0] - po[0]).max(), np.abs(ps[1] - po[1]).max()))

    out["paddle_forward_ms"] = median_ms(lambda: slow._forward(ids, bbox, mask), a.repeat)
    out["onnx_forward_ms"] = median_ms(lambda: fast._forward(ids, bbox, mask), a.repeat)
    blocks = slow.model.blocks()
    with paddle.no_grad():
        state: Any = (paddle.to_tensor(ids), paddle.to_tensor(bbox), None, paddle.to_tensor(mask))
        out["paddle_embeddings_ms"] = median_ms(lambda: blocks[0](*state), a.repeat)
        state = blocks[0](*state)
        for i, layer in enumerate(blocks[1:-1]):
            out[f"paddle_layer{i}_ms"] = median_ms(functools.partial(layer, *state), a.repeat)
            state = layer(*state)
        head = blocks[-1]
        out["paddle_head_ms"] = median_ms(lambda: head(state[0], state[1], link=False), a.repeat)
        if hasattr(head, "link_logits") and head.config.link:
            out["paddle_link_ms"] = median_ms(lambda: head.link_logits(state[0], state[1]).numpy(), a.repeat)
    onnx = fast.onnx
    if onnx is not None and onnx.link_session is not None:
        hidden = onnx(ids, bbox, mask)[2]
        out["onnx_link_ms"] = median_ms(lambda: onnx.link(hidden, mask), a.repeat)
    weights = {k: v.numpy() for k, v in slow.model.state_dict().items()}
    enc = dataclasses.asdict(slow.model.config)
    link_dim = getattr(getattr(blocks[-1], "config", None), "link_dim", 128)
    for threads in (1, 2):
        whole = OnnxEncoder(weights, enc, False, link_dim, threads=threads)
        bare = OnnxEncoder(weights, {**enc, "num_layers": 0}, False, link_dim, threads=threads)
        t_whole = median_ms(functools.partial(whole, ids, bbox, mask), a.repeat)
        t_bare = median_ms(functools.partial(bare, ids, bbox, mask), a.repeat)
        out[f"onnx_{threads}t_call_ms"] = t_whole
        out[f"onnx_{threads}t_embeddings_head_ms"] = t_bare
        out[f"onnx_{threads}t_per_layer_ms"] = round((t_whole - t_bare) / max(1, enc["num_layers"]), 2)
    for k, v in out.items():
        print(f"{k:28s} {v}")
    path = Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
