"""The one trainer of the forms' small learned models (pair_scorer.py, form_roles.py): full-batch Adam on
standardised rows for a linear model or a one-hidden-layer tanh MLP, in numpy (a few thousand rows, a few
dozen features: no framework needed, and the fitted weights are plain JSON)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, scale, standardised x); a constant feature keeps scale 1."""
    x = np.asarray(x, float)
    mean, scale = x.mean(0), x.std(0)
    scale[scale < 1e-6] = 1.0
    return mean, scale, (x - mean) / scale


def forward(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, w1: np.ndarray, b1: np.ndarray,
            w2: np.ndarray | None = None, b2: Any = 0.0) -> np.ndarray:
    """The logits of rows `x` (standardised by mean and scale) under a linear model (w2 None) or a
    one-hidden-layer tanh MLP: (n, outputs)."""
    h = ((np.asarray(x, float) - mean) / scale) @ w1 + b1
    return h if w2 is None else np.tanh(h) @ w2 + b2


def net_to_dict(names: Sequence[str], mean: np.ndarray, scale: np.ndarray, w1: np.ndarray, b1: np.ndarray,
                w2: np.ndarray | None, b2: np.ndarray | None) -> dict[str, Any]:
    """A fitted model's weights as plain JSON (6 decimals)."""
    def r(a: Any) -> Any:
        return None if a is None else np.round(np.asarray(a, float), 6).tolist()
    return {"features": list(names), "mean": r(mean), "scale": r(scale), "w1": r(w1), "b1": r(b1), "w2": r(w2),
            "b2": r(b2)}


Net = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | None"]


def net_from_dict(raw: Any, known: Sequence[str], outputs: int, where: str) -> Net:
    """(names, mean, scale, w1, b1, w2, b2) of `net_to_dict`'s output, w2 and b2 None for a linear model.
    ValueError for a foreign model (a feature outside `known`), wrong shapes or missing keys."""
    try:
        names = [str(k) for k in raw["features"]]
        if set(names) - set(known):
            raise ValueError(f"{where}: features {sorted(set(names) - set(known))[:5]} are not computed here")
        n = len(names)
        mean, scale = np.array(raw["mean"], float), np.array(raw["scale"], float)
        w1, b1 = np.array(raw["w1"], float), np.array(raw["b1"], float)
        w2 = None if raw.get("w2") is None else np.array(raw["w2"], float)
        b2 = None if w2 is None or raw.get("b2") is None else np.atleast_1d(np.array(raw["b2"], float))
        if mean.shape != (n,) or scale.shape != (n,) or np.any(scale <= 0) or w1.ndim != 2 or w1.shape[0] != n or \
                b1.shape != (w1.shape[1],) or (w2 is None and w1.shape[1] != outputs) or \
                (w2 is not None and (w2.shape != (w1.shape[1], outputs) or b2 is None or b2.shape != (outputs,))):
            raise ValueError(f"{where}: weight shapes do not fit its {n} features and {outputs} outputs")
        return names, mean, scale, w1, b1, w2, b2
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{where}: malformed model ({exc})") from exc


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def train_mlp(z: np.ndarray, outputs: int, hidden: int, grad: Any, l2: float, epochs: int, lr: float,
              seed: int) -> dict[str, np.ndarray]:
    """Full-batch Adam for a linear model (hidden=0, zero start) or a one-hidden-layer tanh MLP over
    standardised rows `z`; `grad(logits)` is the loss's gradient by the (n, outputs) logits. Returns w1, b1
    (and w2, b2 for an MLP)."""
    rng = np.random.default_rng(seed)
    n = z.shape[1]
    if hidden:
        params = {"w1": rng.normal(0, 1 / np.sqrt(n), (n, hidden)), "b1": np.zeros(hidden),
                  "w2": rng.normal(0, 1 / np.sqrt(hidden), (hidden, outputs)), "b2": np.zeros(outputs)}
    else:
        params = {"w1": np.zeros((n, outputs)), "b1": np.zeros(outputs)}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v2 = {k: np.zeros_like(v) for k, v in params.items()}
    for t in range(1, epochs + 1):
        h = z @ params["w1"] + params["b1"]
        act = np.tanh(h) if hidden else h
        g = grad(act @ params["w2"] + params["b2"] if hidden else act)
        grads: dict[str, np.ndarray] = {}
        if hidden:
            grads["w2"] = act.T @ g + l2 * params["w2"]
            grads["b2"] = g.sum(0)
            dh = (g @ params["w2"].T) * (1 - act ** 2)
        else:
            dh = g
        grads["w1"] = z.T @ dh + l2 * params["w1"]
        grads["b1"] = dh.sum(0)
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v2[k] = 0.999 * v2[k] + 0.001 * grads[k] ** 2
            params[k] = params[k] - lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v2[k] / (1 - 0.999 ** t)) + 1e-8)
    return params
