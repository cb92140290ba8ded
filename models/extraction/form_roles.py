"""Generic forms, step 0: what each piece of a page is (key, value, header or other), learned from layout.

The encoder's question/answer tags are what the form decoder (forms.py) reads as the model's evidence:
key scores, the "furniture" veto (a line tagged other holds no key or value), headers. On a form layout
the encoder never trained on they mislead it: the printed labels of a ruled grid (单位 / 名称 in a narrow
cell, 发票 / 抬头) and the company name beside them come out 90% "other", so the label is not joined and
the value is vetoed. What does transfer is how a form is built: labels stand in a column at the left of
their rows, are short, end in a label noun and have something right of them; values are what stands right
of or under a label; headers are centred and alone on their row.

`RoleModel` is a small softmax model (linear or one tanh hidden layer, numpy) over `FEATURES` of one
piece in its page: its text (length, digits, a known label, a label ending, a colon, a hint, options),
the encoder's mean tags on it and on its line, and its layout context (first in its row, how many pieces
share its row, what stands right, left and under it and whether that looks like a label, how many other
pieces share its left or right edge and how many of those are labels, its size against the page's type size).
It is fitted on generated forms of the model's training layouts (`python -m training pair-scorer`),
labelled by the generator's ground truth (every printed line is question, answer, header or other), and
kept in the model directory's pair_scorer.json beside the pair scorer ("roles").

`relabel` writes its probabilities back as the page's [question, answer, header, other] masses, so every
rule of the decoder reads the learned roles where it read the encoder's tags, and nothing else changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import numpy as np

from data.document import Page
from models.extraction.form_layout import Layout
from models.extraction.form_pieces import Piece, piece_tags, title_lines
from models.extraction.form_text import (
    KEY_ENDINGS,
    SECTION,
    SENTENCE,
    alnum,
    char_share,
    is_hint,
    key_score,
    key_word,
    options,
    qualified_label,
    ticked,
)
from models.extraction.mlp import forward, net_from_dict, net_to_dict, standardise, train_mlp
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

ROLES = ("question", "answer", "header", "other")     # the order of label_masses' columns
TABLE_LINE = "table"     # a ground-truth line of a table (training/pair_scorer.truth_lines): no role to learn
SIDE = ("key_word", "ending", "digits", "len", "colon", "q_minus_a")   # what a neighbour's text says

FEATURES = (
    "len", "digits", "latin", "punct", "colon_key", "has_colon_value", "after_colon", "key_word", "qualified", "ending",
    "ending_stripped", "options", "ticked", "hint", "sentence", "section", "bracket", "hand_key",
    "q", "a", "h", "o", "line_q", "line_a", "line_h", "line_o", "page_qa",
    "first_in_row", "row_pieces", "row_index", "has_right", "right_dx", "has_left", "left_dx",
    *(f"right_{s}" for s in SIDE), *(f"left_{s}" for s in SIDE),
    "has_below", *(f"below_{s}" for s in SIDE), "has_above", *(f"above_{s}" for s in SIDE),
    "size", "x0", "xc", "y", "width", "centred", "alone_wide",
    "column_n", "column_labels", "column_digits", "page_lines", "title_line", "title_ending", "lines_above",
)
TITLE_ENDINGS = ("表", "单", "书", "登记", "申请", "证明")    # what a form's own name ends in (报名表, 申请书)


def _side(prefix: str, p: Piece | None, masses: list[np.ndarray]) -> dict[str, float]:
    if p is None:
        return {f"{prefix}_{s}": 0.0 for s in SIDE}
    t = piece_tags(p, masses)
    return {f"{prefix}_key_word": float(key_word(p.text)), f"{prefix}_ending": float(p.text.endswith(KEY_ENDINGS)),
            f"{prefix}_digits": char_share(p.text, str.isdigit), f"{prefix}_len": min(len(p.text), 30) / 10,
            f"{prefix}_colon": float(p.colon_key), f"{prefix}_q_minus_a": float(t[0] - t[1])}


def runs(pieces: list[Piece]) -> list[Piece]:
    """The pieces with the text after each key's colon (its `value`) as pieces of their own: every run of
    a line gets a role, the answer after 姓名： as much as the label."""
    return [q for p in pieces for q in ((p, p.value) if p.value is not None else (p,))]


def piece_features(page: Page, pieces: list[Piece], masses: list[np.ndarray],
                   st: DecodeSettings = DEFAULT_SETTINGS) -> list[dict[str, float]]:
    """`FEATURES` of every piece of a page (`runs` of the pieces form_pieces.split_line cuts, before any join)."""
    geo = Layout(page, pieces, st)
    w, h = max(1.0, float(page.width)), max(1.0, float(page.height))
    heights = sorted(geo.line_height(p) for p in pieces) or [1.0]
    med = max(1.0, heights[len(heights) // 2])
    line_tags = [np.nan_to_num(np.nanmean(m, 0)) if len(m) and not np.isnan(m).all() else np.zeros(4)
                 for m in masses]
    page_qa = float(np.mean([t[0] + t[1] >= 0.5 for t in line_tags])) if line_tags else 0.0
    lefts = np.array([p.box[0] for p in pieces]) if pieces else np.zeros(0)
    rights = np.array([p.box[2] for p in pieces]) if pieces else np.zeros(0)
    labelish = np.array([key_word(p.text) or p.text.endswith(KEY_ENDINGS) or p.colon_key for p in pieces])
    digity = np.array([char_share(p.text, str.isdigit) > 0.5 for p in pieces])
    titles = title_lines(page, st)
    tops = sorted(ln.box[1] for ln in page.lines)
    answers = {id(p.value) for p in pieces if p.value is not None}
    belows = [geo.below(p) for p in pieces]
    centres = np.array([geo.centre(p) for p in pieces])
    above_of = {id(b): p for p, b in zip(pieces, belows) if b is not None}
    out: list[dict[str, float]] = []
    for i, (p, below) in enumerate(zip(pieces, belows)):
        lh = max(1.0, geo.line_height(p))
        t = piece_tags(p, masses)
        lt = line_tags[p.line]
        right, left = geo.right_of(p), geo.left_of(p)
        above = above_of.get(id(p))
        on_row = np.abs(centres - centres[i]) <= st.form_row_tol * lh
        on_row[i] = False
        n_row = int(on_row.sum())
        # its column: pieces sharing its left edge, or its right edge (labels set flush right against their
        # values, as on a cover page: 学科、专业名称 / 论文提交日期 end where their values begin)
        same = (np.abs(lefts - p.box[0]) <= 0.7 * lh) | (np.abs(rights - p.box[2]) <= 0.7 * lh)
        same[i] = False
        n_col = int(same.sum())
        base = p.text.rstrip("）)")
        f = {
            "len": min(len(p.text), 30) / 10, "digits": char_share(p.text, str.isdigit),
            "latin": char_share(p.text, lambda ch: ch.isascii() and ch.isalpha()),
            "punct": char_share(p.text, lambda ch: not ch.isalnum() and not ch.isspace()),
            "colon_key": float(p.colon_key), "has_colon_value": float(p.value is not None),
            "after_colon": float(id(p) in answers),
            "key_word": float(key_word(p.text)), "qualified": float(qualified_label(p.text)),
            "ending": float(p.text.endswith(KEY_ENDINGS)),
            "ending_stripped": float(base.split("（")[0].split("(")[0].endswith(KEY_ENDINGS)),
            "options": float(options(p.text)), "ticked": float(ticked(p.text) is not None),
            "hint": float(is_hint(p.text)), "sentence": float(SENTENCE.search(p.text) is not None),
            "section": float(SECTION.match(p.text) is not None),
            "bracket": float(any(ch in "（(" for ch in p.text)),
            "hand_key": float(np.clip(key_score(p.text, t), -3, 3)) / 3,
            "q": float(t[0]), "a": float(t[1]), "h": float(t[2]), "o": float(t[3]),
            "line_q": float(lt[0]), "line_a": float(lt[1]), "line_h": float(lt[2]), "line_o": float(lt[3]),
            "page_qa": page_qa,
            "first_in_row": float(left is None), "row_pieces": min(n_row, 6) / 3,
            "row_index": min(int((lefts[on_row] < p.box[0]).sum()), 6) / 3,
            "has_right": float(right is not None),
            "right_dx": float(np.clip((right.box[0] - p.box[2]) / lh, 0, 20)) / 10 if right is not None else 0.0,
            "has_left": float(left is not None),
            "left_dx": float(np.clip((p.box[0] - left.box[2]) / lh, 0, 20)) / 10 if left is not None else 0.0,
            **_side("right", right, masses), **_side("left", left, masses),
            "has_below": float(below is not None), **_side("below", below, masses),
            "has_above": float(above is not None), **_side("above", above, masses),
            "size": float(np.clip(lh / med, 0, 3)), "x0": p.box[0] / w, "xc": (p.box[0] + p.box[2]) / 2 / w,
            "y": p.box[1] / h, "width": (p.box[2] - p.box[0]) / w,
            "centred": float(abs((p.box[0] + p.box[2]) / 2 - w / 2) < 0.08 * w),
            "alone_wide": float(not n_row and (p.box[2] - p.box[0]) > 0.3 * w),
            "column_n": min(n_col, 10) / 5,
            "column_labels": float(labelish[same].mean()) if n_col else 0.0,
            "column_digits": float(digity[same].mean()) if n_col else 0.0,
            "page_lines": min(len(page.lines), 80) / 40,
            "title_line": float(p.line in titles), "title_ending": float(p.text.endswith(TITLE_ENDINGS)),
            "lines_above": min(int(np.searchsorted(tops, p.box[1] - 0.5 * lh)), 10) / 5,
        }
        out.append(f)
    return out


@dataclass
class RoleModel:
    """p(role | piece) = softmax(MLP or linear model of the standardised features), roles in `ROLES` order."""
    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray                      # (features, hidden) or (features, 4) for a linear model
    b1: np.ndarray
    w2: np.ndarray | None = None        # (hidden, 4)
    b2: np.ndarray | None = None
    about: dict[str, Any] = field(default_factory=dict)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return forward(x, self.mean, self.scale, self.w1, self.b1, self.w2, self.b2 if self.b2 is not None else 0.0)

    def predict(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return np.zeros((0, len(ROLES)))
        z = self.logits(x)
        z = z - z.max(1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(1, keepdims=True)

    def rows(self, feats: list[dict[str, float]]) -> np.ndarray:
        return np.array([[f[n] for n in self.names] for f in feats], dtype=float).reshape(len(feats), len(self.names))

    def to_dict(self) -> dict[str, Any]:
        return {**net_to_dict(self.names, self.mean, self.scale, self.w1, self.b1, self.w2, self.b2),
                "about": self.about}

    @classmethod
    def from_dict(cls, raw: Any, where: str = "roles") -> "RoleModel":
        """ValueError for a malformed or foreign entry (features this code does not compute)."""
        return cls(*net_from_dict(raw, FEATURES, len(ROLES), where), dict(raw.get("about") or {}))


def relabel(page: Page, pieces: list[Piece], masses: list[np.ndarray], model: RoleModel,
            st: DecodeSettings = DEFAULT_SETTINGS) -> list[np.ndarray]:
    """The page's [question, answer, header, other] masses with each piece's characters (and the colon
    or spaces after it, up to the next piece) set to its learned role probabilities."""
    pieces = runs(pieces)
    if not pieces:
        return masses
    probs = model.predict(model.rows(piece_features(page, pieces, masses, st)))
    out = [m.copy() for m in masses]
    by_line: dict[int, list[tuple[Piece, np.ndarray]]] = {}
    for p, pr in zip(pieces, probs):
        by_line.setdefault(p.line, []).append((p, pr))
    for li, items in by_line.items():
        m = out[li]
        if not len(m):
            continue
        items.sort(key=lambda it: it[0].start)
        for j, (p, pr) in enumerate(items):
            lo = 0 if j == 0 else p.start
            hi = items[j + 1][0].start if j + 1 < len(items) else len(m)
            seen = ~np.isnan(m[lo:hi]).any(1)
            m[lo:hi][seen] = pr
    return out


# --- labels and fitting ---------------------------------------------------------------------------

def role_labels(pieces: list[Piece], truth: list[tuple[str, str, list[float]]]) -> np.ndarray:
    """Each piece's role index by the ground truth's printed lines (text, label, box): the line whose text
    it matches best (a piece cut from a longer line matches as a part), ties to the nearest box; a piece
    that matches no line well is "other"; one that matches a table's line (label TABLE_LINE) is -1, no role."""
    out = np.full(len(pieces), ROLES.index("other"), dtype=int)
    folded = [(alnum(t), lab, box) for t, lab, box in truth]
    for i, p in enumerate(pieces):
        pt = alnum(p.text)
        if not pt:
            continue
        best, pick = 0.0, None
        for gt, lab, box in folded:
            if not gt:
                continue
            r = SequenceMatcher(None, pt, gt).ratio()
            if len(pt) >= 2 and pt in gt:
                r = max(r, 0.9 if len(pt) * 2 >= len(gt) else 0.7)
            d = abs((box[0] + box[2]) / 2 - (p.box[0] + p.box[2]) / 2) + abs((box[1] + box[3]) / 2 -
                                                                              (p.box[1] + p.box[3]) / 2)
            score = r - 1e-6 * d
            if score > best:
                best, pick = score, lab
        if pick is not None and best >= 0.6:
            out[i] = ROLES.index(pick) if pick in ROLES else -1 if pick == TABLE_LINE else ROLES.index("other")
    return out


def merge(models: list[RoleModel]) -> RoleModel:
    """One model whose logits are the mean of `models`' logits (MLPs of one shape on one standardisation):
    their hidden layers side by side and the output weights divided by their number, so an ensemble of
    fits from several seeds costs one matrix product and keeps the file format."""
    first = models[0]
    if len(models) == 1 or first.w2 is None:
        return first
    k = len(models)
    return RoleModel(first.names, first.mean, first.scale, np.hstack([m.w1 for m in models]),
                     np.concatenate([m.b1 for m in models]), np.vstack([m.w2 for m in models if m.w2 is not None]) / k,
                     np.mean([m.b2 for m in models if m.b2 is not None], 0), first.about)


def fit_roles(x: np.ndarray, y: np.ndarray, names: list[str], hidden: int = 16, l2: float = 1e-3,
              epochs: int = 500, lr: float = 0.03, seed: int = 0, members: int = 1) -> RoleModel:
    """Full-batch Adam on the class-balanced softmax cross-entropy; `members` > 1: that many fits from
    different seeds, merged into one (their mean logit): a single small MLP's verdict on a layout far from
    its training pages swings with its seed, the mean of several much less."""
    if members > 1 and hidden:
        return merge([fit_roles(x, y, names, hidden, l2, epochs, lr, seed + i) for i in range(members)])
    k = len(ROLES)
    mean, scale, z = standardise(x)
    onehot = np.eye(k)[y]
    counts = np.bincount(y, minlength=k).astype(float)
    wt = (len(y) / (k * np.maximum(counts, 1.0)))[y]
    wt = np.sqrt(wt)                          # half-way to balanced: rare headers count, not dominate
    wt = wt / wt.mean()

    def grad(out: np.ndarray) -> np.ndarray:  # softmax cross-entropy by the logits
        e = np.exp(out - out.max(1, keepdims=True))
        return (e / e.sum(1, keepdims=True) - onehot) * wt[:, None] / len(y)
    params = train_mlp(z, k, hidden, grad, l2, epochs, lr, seed)
    return RoleModel(list(names), mean, scale, params["w1"], params["b1"], params.get("w2"), params.get("b2"))
