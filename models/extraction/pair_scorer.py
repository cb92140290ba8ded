"""A learned scorer of a generic form's key-value candidates: which proposed answer belongs to which question.

Layout proposes the candidates of a key (the text after its colon, the next cell on its row, the line
under it, the ticked box of an option group) and vetoes the impossible ones (forms.py). Which of the
allowed candidates a key takes, and whether it takes any, was a hand-weighted sum (layout prior + key
score margin + link logit); a small model fitted on generated forms of the training layouts weighs the
same evidence and more (geometry normalised by line height, the text of both pieces, the model's
question/answer tags and its link head, where a candidate ranks among its key's and its value's
others) and says how likely a candidate is a true pair.

The model is a logistic regression or a one-hidden-layer MLP over standardised features, in numpy, kept
as a small JSON file in the model directory (`pair_scorer.json`, written by `python -m training
pair-scorer --model DIR`; models/model_dir.py reads and writes it: `read_pair_scorer`, `write_pair_scorer`).
It names its features, so a file whose features this code no longer computes is refused, not misread.
A model directory without it decodes with the hand-weighted ranking.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from models.extraction.form_cuts import CutModel
from models.extraction.form_roles import RoleModel
from models.extraction.mlp import forward, sigmoid, standardise, train_mlp

FORMAT = 1


class PairScorerError(ValueError):
    """A pair_scorer.json that cannot be used (not JSON, wrong shape, unknown features)."""


@dataclass
class PairScorer:
    """p(candidate is a true pair) = sigmoid(MLP or linear model of the standardised features)."""
    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray                              # (features, hidden) or (features, 1) for a linear model
    b1: np.ndarray
    w2: np.ndarray | None = None                # (hidden, 1): None for a linear model
    b2: float = 0.0
    threshold: float = 0.5                      # a candidate below this is no pair
    mode: str = "decide"                        # decide: it proposes wide and keeps p >= threshold; rerank: it
    weight: float = 1.0                         # reorders the hand candidates by hand score + weight * logit
    about: dict[str, Any] = field(default_factory=dict)   # what it was trained on, how it scored
    roles: RoleModel | None = None              # form_roles.RoleModel: each piece's learned role, read by the
                                                # decoder in place of the encoder's tags (None: the tags)
    cuts: CutModel | None = None                # form_cuts.CutModel: where a colon-less line is cut into label
                                                # and value (None: form_pieces.inline_label)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return forward(x, self.mean, self.scale, self.w1, self.b1, self.w2, self.b2)[:, 0]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Probabilities for rows of features in `names` order."""
        if not len(x):
            return np.zeros(0)
        return sigmoid(self.logits(np.asarray(x, dtype=float)))

    def rows(self, feats: list[dict[str, float]]) -> np.ndarray:
        """Feature dicts -> a matrix in this scorer's order (a name missing from a dict is a bug: KeyError)."""
        return np.array([[f[n] for n in self.names] for f in feats], dtype=float).reshape(len(feats), len(self.names))

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": "linear" if self.w2 is None else "mlp", "features": list(self.names),
                "mean": _r(self.mean), "scale": _r(self.scale), "w1": _r(self.w1), "b1": _r(self.b1),
                "w2": None if self.w2 is None else _r(self.w2), "b2": round(float(self.b2), 6),
                "threshold": round(float(self.threshold), 4), "mode": self.mode, "weight": round(float(self.weight), 4),
                "about": self.about, **({"roles": self.roles.to_dict()} if self.roles is not None else {}),
                **({"cuts": self.cuts.to_dict()} if self.cuts is not None else {})}

    def save(self, path: str | Path) -> None:
        from data.atomic import write_text_atomic
        write_text_atomic(Path(path), json.dumps(self.to_dict(), ensure_ascii=False, indent=1))

    @classmethod
    def from_dict(cls, raw: Any, known: list[str] | None = None, where: str = "pair scorer") -> "PairScorer":
        """Check the shape; `known`: the feature names the decoder computes (a name outside it is refused)."""
        try:
            if not isinstance(raw, dict) or raw.get("format") != FORMAT:
                raise PairScorerError(f"{where}: not a pair scorer of format {FORMAT}")
            names = [str(n) for n in raw["features"]]
            if known is not None and set(names) - set(known):
                raise PairScorerError(f"{where}: features {sorted(set(names) - set(known))[:5]} are not ones "
                                      f"this decoder computes; retrain it (python -m training pair-scorer)")
            n = len(names)
            mean, scale = np.array(raw["mean"], float), np.array(raw["scale"], float)
            w1, b1 = np.array(raw["w1"], float), np.array(raw["b1"], float)
            w2 = None if raw.get("w2") is None else np.array(raw["w2"], float)
            if mean.shape != (n,) or scale.shape != (n,) or w1.ndim != 2 or w1.shape[0] != n or \
                    b1.shape != (w1.shape[1],) or (w2 is None and w1.shape[1] != 1) or \
                    (w2 is not None and w2.shape != (w1.shape[1], 1)) or np.any(scale <= 0):
                raise PairScorerError(f"{where}: weight shapes do not fit its {n} features")
            mode = str(raw.get("mode", "decide"))
            if mode not in ("decide", "rerank"):
                raise PairScorerError(f"{where}: mode {mode!r} is neither decide nor rerank")
            roles = None
            if raw.get("roles") is not None:
                roles = RoleModel.from_dict(raw["roles"], f"{where}: roles")
            cuts = None
            if raw.get("cuts") is not None:
                cuts = CutModel.from_dict(raw["cuts"], f"{where}: cuts")
            return cls(names, mean, scale, w1, b1, w2, float(raw.get("b2", 0.0)), float(raw.get("threshold", 0.5)),
                       mode, float(raw.get("weight", 1.0)), dict(raw.get("about") or {}), roles, cuts)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PairScorerError):
                raise
            raise PairScorerError(f"{where}: malformed pair scorer ({exc})") from exc


def _r(a: np.ndarray) -> Any:
    return np.round(np.asarray(a, dtype=float), 6).tolist()


# --- fitting -----------------------------------------------------------------------------------------

def fit(x: np.ndarray, y: np.ndarray, names: list[str], hidden: int = 0, l2: float = 1e-3, epochs: int = 400,
        lr: float = 0.05, seed: int = 0, weight: np.ndarray | None = None) -> PairScorer:
    """Fit by full-batch Adam on the weighted log loss: a linear model (hidden=0) or a tanh MLP."""
    y = np.asarray(y, float)
    mean, scale, z = standardise(x)
    wt = np.ones(len(y)) if weight is None else np.asarray(weight, float)
    wt = wt / wt.mean()

    def grad(out: np.ndarray) -> np.ndarray:               # d loss / d logit
        p = 1 / (1 + np.exp(-np.clip(out[:, 0], -30, 30)))
        return ((p - y) * wt / len(y))[:, None]
    params = train_mlp(z, 1, hidden, grad, l2, epochs, lr, seed)
    return PairScorer(list(names), mean, scale, params["w1"], params["b1"],
                      params.get("w2"), float(params["b2"][0]) if hidden else 0.0)
