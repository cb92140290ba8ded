"""Generic forms, before step 0: where a colon-less line OCR read as label and value at once is cut.

A cover page prints its labels close to their values on an underline, a tight table row leaves a label a
few pixels from its value, and OCR reads both as one line: 研究方向 思想政治教育, 论文提交日期2024-03-28,
密级公开, 学校代码 10623. With no colon there is nothing to cut at; the hand rule
(form_pieces.inline_label) cuts only after a label from its own short list (KEY_WORDS), so 研究方向 or a
four-character qualifier before 日期 stayed one piece, read as one long value with no key.

`CutModel` is a small binary model (one tanh hidden layer, numpy; the forms' one trainer, mlp.py) that scores
every place a line could be cut, from what stands either side of it: how a label ends (a label noun's last
character, a known label or one ending in one), what begins the rest (digits, Latin letters, a bracket, a
particle), whether OCR kept a space there or the script changes, the lengths of both sides, the
encoder's question/answer tags either side of the cut and across it, and whether the hand rule
(`inline_label`) cuts there: one piece of evidence among the rest, weighed by the fit. The best place is
the cut when it is likely enough (`threshold`); where it is not, form_pieces.split_line still cuts after
a label from the rule's own list. (Measured while designing it, on the held-out layouts' lines of seeds
2323 and 6464: the two together cut 114 of form_thesis's 155 glued lines right, the model alone 101, the
rule alone 65; and 26 of all 6,843 whole lines, the rule alone 25.) It is fitted with the pair scorer and the piece
roles (`python -m training pair-scorer`) on the training layouts' pages, each line labelled by the
generator's ground truth: a line whose text is a true pair's key followed by its value is cut where the
key ends, a line that is one printed line is not cut at all. Real OCR glues a label to its value on few
training pages, so every true pair whose key and value the page has as lines of their own is also glued
into one line (with no space, one or two, as OCR leaves them); half the copies have the encoder's tags
blanked, as on a real scan of a layout it never saw. It lives in pair_scorer.json beside the roles
("cuts"); without it (or with the rule switch `form_cuts` off) form_pieces.inline_label alone cuts.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.extraction.form_pieces import inline_label, mean_mass
from models.extraction.form_text import KEY_ENDINGS, KEY_WORDS, SENTENCE, alnum, key_word, qualified_label
from models.extraction.mlp import forward, net_from_dict, net_to_dict, sigmoid, standardise, train_mlp
from models.extraction.settings import DEFAULT_SETTINGS

FEATURES = (
    "pre_len", "suf_len", "at", "space", "script_change", "pre_cjk", "pre_digit", "pre_latin",
    "ending", "ends_key_word", "pre_key_word", "pre_qualified", "pre_enumeration",
    "suf_digits", "suf_starts_digit", "suf_starts_latin", "suf_starts_cjk", "suf_bad_start", "suf_key_word",
    "suf_ending", "suf_sentence", "suf_bracket", "suf_one", "whole_label", "whole_ending",
    "pre_q", "pre_a", "suf_q", "suf_a", "edge_q", "edge_a", "line_q", "line_a", "known_label",
)
BAD_START = "（(：:的之及和或与、，,。.-—/"


def _script(ch: str) -> int:
    if "\u4e00" <= ch <= "\u9fff":
        return 1
    if ch.isdigit():
        return 2
    if ch.isascii() and ch.isalpha():
        return 3
    return 0


def places(text: str) -> list[int]:
    """Where the value could start: every non-space character after a non-empty head, within `cut_max`
    (DEFAULT_SETTINGS': the places are the learned cuts' candidates, the same in training as in decoding)."""
    end = min(len(text), DEFAULT_SETTINGS.cut_max + 1)
    return [c for c in range(1, end) if not text[c].isspace() and text[:c].strip()]


def cut_features(text: str, mass: np.ndarray, known: int | None | bool = False) -> list[dict[str, float]]:
    """`FEATURES` of every place (`places`) in one line; `known`: the hand rule's cut (`inline_label`) when
    the caller has it already (False: work it out here)."""
    out: list[dict[str, float]] = []
    n = max(1, len(text.strip()))
    line = mean_mass(mass, 0, len(text)) if len(mass) else np.zeros(4)
    whole = re.sub(r"\s+", "", text)
    whole_label = float(key_word(whole) or qualified_label(whole))
    if known is False:
        known = inline_label(text, mass)        # the hand rule's cut, after a label from its own list
    for c in places(text):
        pre, suf = text[:c].rstrip(), text[c:].rstrip()
        pf, sf = re.sub(r"\s+", "", pre), re.sub(r"\s+", "", suf)
        pm = mean_mass(mass, 0, len(pre)) if len(mass) else np.zeros(4)
        sm = mean_mass(mass, c, len(text)) if len(mass) else np.zeros(4)
        e1 = mean_mass(mass, max(0, len(pre) - 2), len(pre)) if len(mass) else np.zeros(4)
        e2 = mean_mass(mass, c, c + 2) if len(mass) else np.zeros(4)
        out.append({
            "pre_len": len(pf) / 10, "suf_len": min(len(sf), 40) / 10, "at": len(pf) / n,
            "space": float(text[c - 1].isspace()), "script_change": float(_script(pf[-1]) != _script(sf[0])),
            "pre_cjk": float(all(_script(ch) == 1 or ch == "、" for ch in pf)),
            "pre_digit": float(any(ch.isdigit() for ch in pf)), "pre_latin": float(_script(pf[-1]) == 3),
            "ending": float(pf.endswith(KEY_ENDINGS)), "ends_key_word": float(pf.endswith(KEY_WORDS)),
            "pre_key_word": float(key_word(pf)), "pre_qualified": float(qualified_label(pf)),
            "pre_enumeration": float("、" in pf),
            "suf_digits": sum(ch.isdigit() for ch in sf) / max(1, len(sf)),
            "suf_starts_digit": float(_script(sf[0]) == 2), "suf_starts_latin": float(_script(sf[0]) == 3),
            "suf_starts_cjk": float(_script(sf[0]) == 1), "suf_bad_start": float(sf[0] in BAD_START),
            "suf_key_word": float(key_word(sf) or qualified_label(sf)), "suf_ending": float(sf.endswith(KEY_ENDINGS)),
            "suf_sentence": float(SENTENCE.search(sf) is not None), "suf_bracket": float(sf[-1] in ")）"),
            "suf_one": float(len(sf) == 1), "whole_label": whole_label,
            "whole_ending": float(whole.endswith(KEY_ENDINGS)),
            "pre_q": float(pm[0]), "pre_a": float(pm[1]), "suf_q": float(sm[0]), "suf_a": float(sm[1]),
            "edge_q": float(e1[0] - e2[0]), "edge_a": float(e2[1] - e1[1]),
            "line_q": float(line[0]), "line_a": float(line[1]), "known_label": float(known == c),
        })
    return out


@dataclass
class CutModel:
    """p(the value starts here) per place of a line: a binary model (linear, or one tanh hidden layer when
    w2 is set) over the places' standardised `FEATURES`; the best place is the cut when its p reaches
    `threshold` (0.5: fitted unweighted, a place more likely the cut than not)."""
    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray                     # (features, hidden) or (features, 1)
    b1: np.ndarray
    w2: np.ndarray | None = None       # (hidden, 1)
    b2: np.ndarray | None = None       # (1,)
    threshold: float = 0.5
    about: dict[str, Any] = field(default_factory=dict)

    def predict(self, feats: list[dict[str, float]]) -> np.ndarray:
        if not feats:
            return np.zeros(0)
        x = np.array([[f[k] for k in self.names] for f in feats], float)
        b2 = self.b2 if self.b2 is not None else 0.0
        return sigmoid(forward(x, self.mean, self.scale, self.w1, self.b1, self.w2, b2)[:, 0])

    def cut(self, text: str, mass: np.ndarray, known: int | None | bool = False) -> int | None:
        """Where the value starts in `text` (a colon-less line), or None: it stays whole. `known`: as for
        `cut_features`."""
        at = places(text)
        if not at:
            return None
        p = self.predict(cut_features(text, mass, known))
        best = int(np.argmax(p))
        return at[best] if p[best] >= self.threshold else None

    def to_dict(self) -> dict[str, Any]:
        return {**net_to_dict(self.names, self.mean, self.scale, self.w1, self.b1, self.w2, self.b2),
                "threshold": round(float(self.threshold), 4), "about": self.about}

    @classmethod
    def from_dict(cls, raw: Any, where: str = "cuts") -> "CutModel":
        """ValueError for a malformed or foreign entry (features this code does not compute)."""
        net = net_from_dict(raw, FEATURES, 1, where)
        return cls(*net, threshold=float(raw.get("threshold", 0.5)), about=dict(raw.get("about") or {}))


# --- labels and fitting ---------------------------------------------------------------------------

def _close(a: str, b: str) -> float:
    return 1.0 if a == b else difflib.SequenceMatcher(None, a, b).ratio()


def cut_label(text: str, pairs: list[tuple[str, str]], printed: list[str]) -> int | None | bool:
    """The true place of a line by the ground truth: where its key ends when the line is a true pair's key
    followed by its value (both close to the truth); None when the line is one printed line (no cut); False
    when the truth says neither (an OCR fragment, a line joining other lines): not a training example."""
    t = alnum(text)
    if not t:
        return False
    best: tuple[float, int] | None = None
    for k, v in pairs:
        k, v = alnum(k), alnum(v)
        if not k or not v or abs(len(t) - len(k) - len(v)) > 2:
            continue
        for c in places(text):
            a, b = _close(alnum(text[:c]), k), _close(alnum(text[c:]), v)
            if min(a, b) >= 0.8 and (best is None or a + b > best[0]):
                best = (a + b, c)
    if best is not None:
        return best[1]
    if any(_close(t, alnum(p)) >= 0.9 for p in printed):
        return None
    return False


def fit_cuts(rows: list[tuple[list[dict[str, float]], int]], hidden: int = 8, l2: float = 1e-3, epochs: int = 400,
             lr: float = 0.05, seed: int = 0) -> CutModel:
    """Fit over every place of every labelled line (`rows`: its places' features and the index of the true
    one, -1 for a line not to cut), unweighted, so that p >= 0.5 means a place more likely the cut than not."""
    x = np.array([[f[k] for k in FEATURES] for feats, _ in rows for f in feats], float).reshape(-1, len(FEATURES))
    y = np.array([float(i == t) for feats, t in rows for i in range(len(feats))])
    mean, scale, z = standardise(x)

    def grad(out: np.ndarray) -> np.ndarray:               # d log loss / d logit
        return ((sigmoid(out[:, 0]) - y) / len(y))[:, None]
    p = train_mlp(z, 1, hidden, grad, l2, epochs, lr, seed)
    return CutModel(list(FEATURES), mean, scale, p["w1"], p["b1"], p.get("w2"), p.get("b2"))

