"""Calibrated field confidence: P(the value shown is right), from the evidence a person checking it would use.

The model's softmax probability alone does not say where to look: on held-out layouts through real OCR it
reads most of its errors at 0.95-1.00 (bench/review_bench.py). A clerk also looks at how well the characters
were read (an OCR misreading sits on a line OCR itself was unsure of), whether a check on the value exists
and passed, what kind of value it is (a free-text name or address has no check and is where the model
takes the wrong line), whether a decoding rule rather than the model chose it, and whether the page came
from a PDF's own text (then nothing was misread). `field_features` turns that into a few numbers and a
small logistic model (`Calibration`, fitted by `fit` on fields of generated held-out-layout pages read
through real OCR, each right or wrong) turns them into a probability.

The fitted model lives in the model directory (models/model_dir.py `read_field_calibration` /
`write_field_calibration`), tied to the weights it was fitted on: the model's probabilities are one of its
inputs, so a retrained model's old calibration would mislead, and is ignored. Without one, a field's
confidence is the model's own probability, as before. `calibrate` is applied once, where the extractor
finishes a document (models/extractor.py), keeps the model's probability in `Field.model_score` and puts
the calibrated one in `Field.score`, the number the UI shows and `Field.review` compares with
data.validate.CALIBRATED_REVIEW_THRESHOLD (a probability of another scale than the softmax, so a threshold
of its own, picked by bench/review_bench.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from data.document import Document, Field, Page

if TYPE_CHECKING:
    from data.schemas import Schema

# The score a decoding rule gives the span it fills (models/extraction/field_rules.py, arithmetic.py): a
# value no model probability stands behind.
RULE_SCORE = 0.5
FREE_TEXT = ("text", "enum")              # types no check reads: names, addresses, free lines
FEATURES = ("model_logit", "by_rule", "line_ocr_logit", "page_ocr_logit", "text_layer", "check_passed",
            "check_failed", "free_text", "log_length")
_EPS = 1e-4


def _logit(p: float) -> float:
    p = min(1 - _EPS, max(_EPS, float(p)))
    return math.log(p / (1 - p))


def _source_lines(page: Page, f: Field) -> list[float]:
    """OCR scores of the lines the field's characters came from (its span in the page text); [] when the
    field has no span (typed in, or derived from another field)."""
    if not f.span or not page.lines:
        return []
    start, end = f.span
    scores, offset = [], 0
    for ln in page.lines:
        stop = offset + len(ln.text)
        if offset < end and start < stop + 1:
            scores.append(float(ln.score))
        offset = stop + 1
    return scores


def field_features(doc: Document, f: Field, field_type: str) -> dict[str, float]:
    """The evidence on one field (or item cell) of `doc`, by FEATURES name. The model's probability is
    `model_score` when the field was calibrated already (the raw one is what the calibration reads), else
    `score`. A page read from a text layer (a PDF's own text, an OFD) has no OCR doubt: its lines count as
    read perfectly whatever score they carry (on a page whose pictures OCR read too, each line's own score
    counts: the text layer's are 1.0)."""
    p = f.model_score if f.model_score is not None else f.score
    page = next((pg for pg in doc.pages if pg.index == f.page), None)
    text_layer = page is not None and "ocr" not in page.reader     # "text_layer+ocr": some lines are OCR's
    if page is None or text_layer or not page.lines:
        line, mean = 1.0, 1.0
    else:
        mean = float(np.mean([ln.score for ln in page.lines]))
        line = min(_source_lines(page, f), default=mean)
    return {"model_logit": round(_logit(p), 4), "by_rule": float(abs(p - RULE_SCORE) < 1e-9),
            "line_ocr_logit": round(_logit(line), 4), "page_ocr_logit": round(_logit(mean), 4),
            "text_layer": float(text_layer), "check_passed": float(f.valid is True),
            "check_failed": float(f.valid is False), "free_text": float(field_type in FREE_TEXT),
            "log_length": round(math.log1p(len(f.value or "")), 4)}


@dataclass
class Calibration:
    """A logistic model over FEATURES: P(right) = sigmoid(bias + weights . x). `about` records what it was
    fitted on (rows, wrong rows, seeds, the weights' digest: models/model_dir.py checks the last)."""
    weights: list[float]
    bias: float
    features: list[str] = field(default_factory=lambda: list(FEATURES))
    about: dict[str, Any] = field(default_factory=dict)

    def probability(self, x: dict[str, float]) -> float:
        z = self.bias + sum(w * float(x.get(name, 0.0)) for w, name in zip(self.weights, self.features))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "weights": [round(w, 6) for w in self.weights],
                "bias": round(self.bias, 6), "about": dict(self.about)}

    @classmethod
    def from_dict(cls, raw: Any, where: str = "calibration") -> "Calibration":
        """ValueError naming what is wrong for a record this code cannot apply: features it does not compute
        (written by a newer version), or weights that do not match them."""
        if not isinstance(raw, dict):
            raise ValueError(f"{where} does not hold a JSON object")
        names, weights, bias = raw.get("features"), raw.get("weights"), raw.get("bias")
        if not (isinstance(names, list) and isinstance(weights, list) and len(names) == len(weights)
                and all(isinstance(w, (int, float)) for w in weights) and isinstance(bias, (int, float))):
            raise ValueError(f"{where}: needs 'features', as many 'weights' and a 'bias'")
        unknown = [n for n in names if n not in FEATURES]
        if unknown:
            raise ValueError(f"{where}: features {unknown} are not computed by this version "
                             f"(known: {', '.join(FEATURES)})")
        about = raw.get("about")
        return cls([float(w) for w in weights], float(bias), [str(n) for n in names],
                   about if isinstance(about, dict) else {})


def fit(rows: list[dict[str, Any]], l2: float = 1.0, steps: int = 50) -> Calibration:
    """A `Calibration` fitted to rows {"features": field_features(...), "right": bool} by Newton's method on
    the L2-penalised log-likelihood (the bias unpenalised). Deterministic: the same rows give the same
    weights. The penalty keeps the few wrong fields a run has (a few dozen among hundreds) from being
    fitted exactly; ValueError when the rows hold no right or no wrong field, which says nothing."""
    ys = np.array([1.0 if r["right"] else 0.0 for r in rows])
    if not len(ys) or ys.min() == ys.max():
        raise ValueError("fitting a calibration needs right and wrong fields among the rows")
    x = np.array([[float(r["features"].get(n, 0.0)) for n in FEATURES] for r in rows])
    x = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x.shape[1])
    w[0] = math.log(ys.mean() / (1 - ys.mean()))
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -50, 50)))
        grad = x.T @ (p - ys) + penalty * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return Calibration([float(v) for v in w[1:]], float(w[0]), list(FEATURES),
                       {"rows": len(rows), "wrong": int((ys == 0).sum()), "l2": l2})


def calibrate(doc: Document, calibration: Calibration | None, schema: "Schema | None") -> None:
    """Give every field and item cell of `doc` its calibrated confidence (in place): the model's probability
    is kept in `model_score`, `score` becomes P(right) and `review` is set again from it against
    CALIBRATED_REVIEW_THRESHOLD (data.validate.needs_review). Without a calibration the score stays the
    model's own, `model_score` None, judged against REVIEW_THRESHOLD as before. Call after
    `data.validate.validate`: whether a check passed is part of the evidence."""
    from data.validate import needs_review, straight_through
    types = {s.key: s.type for s in schema.fields} if schema is not None else {}
    item_types = {s.key: s.type for s in schema.item_fields} if schema is not None else {}
    cells = [(f, types.get(k, "text")) for k, f in doc.fields.items()]
    cells += [(f, item_types.get(k, "text")) for row in doc.items for k, f in row.items()]
    for f, field_type in cells:
        if calibration is not None:
            if f.model_score is None:
                f.model_score = f.score
            f.score = round(calibration.probability(field_features(doc, f, field_type)), 4)
        f.review = needs_review(f)
    doc.straight_through = straight_through(doc)
