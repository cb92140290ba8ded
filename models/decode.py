"""Model outputs -> Fields, item rows and key-value Pairs, every value tied to its characters and box.

Inputs are page-level (one row per page token, see `Encoding.merge` for windows):
- `tag_probs`  [N, n_tags] softmax over the BIO labels of models/heads.py (`tag_labels`)
- `link_probs` [N, N]      sigmoid of the link logits (token i = first token of a key/question span)

`bio_spans` turns tags into `Span`s (key, original text, score = mean probability of the chosen tags,
box = union of the characters' boxes, page-text offsets). `spans_to_fields` keeps the best span per
key as a `data.document.Field` and groups `items.<key>` spans into rows (one row per printed table
row: deskewed box centres clustered, see `cluster_rows`). `link_pairs` builds generic-form `Pair`s
from question/answer spans.
Normalising and validating values is data/schemas' job, after this.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from data.document import Box, Field, Pair, union_box
from models.heads import FORM_KEYS, ITEM_PREFIX
from models.tokenizer import Encoding


@dataclass
class Span:
    key: str
    text: str                  # original characters of the page
    score: float
    box: Box | None
    page: int
    first: int                 # page token indices, inclusive
    last: int
    span: list[int]            # [start, end) in the page text ("\n".join of line texts)

    def to_field(self, key: str | None = None) -> Field:
        return Field(key=key or self.key, value=self.text, raw=self.text, score=round(self.score, 4),
                     box=self.box, page=self.page, span=self.span)


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = np.exp(z - z.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float64)))


def _parse(label: str) -> tuple[str, str]:
    if label == "O":
        return "O", ""
    prefix, _, key = label.partition("-")
    if prefix not in ("B", "I") or not key:
        raise ValueError(f"tag label {label!r} is not O, B-<key> or I-<key>")
    return prefix, key


def bio_spans(tag_probs: np.ndarray, labels: list[str], enc: Encoding, page: int = 0) -> list[Span]:
    """Contiguous B/I runs of one key. An I- without a matching B- starts a span (models often
    miss the B on the first character); a B- always starts a new one."""
    tag_probs = np.asarray(tag_probs)
    if tag_probs.shape != (len(enc), len(labels)):
        raise ValueError(f"tag_probs shape {tag_probs.shape} != (tokens {len(enc)}, labels {len(labels)})")
    parsed = [_parse(lb) for lb in labels]
    best = tag_probs.argmax(axis=1) if len(enc) else np.zeros(0, dtype=int)
    spans: list[Span] = []
    run: list[int] = []
    run_key = ""

    def close() -> None:
        if run:
            first, last = run[0], run[-1]
            spans.append(Span(key=run_key, text=enc.text(first, last),
                              score=float(np.mean([tag_probs[t, best[t]] for t in run])),
                              box=union_box([enc.char_box[t] for t in run]), page=page,
                              first=first, last=last, span=enc.page_span(first, last)))

    for t in range(len(enc)):
        prefix, key = parsed[best[t]]
        if prefix == "I" and run and key == run_key:
            run.append(t)
            continue
        close()
        run, run_key = ([t], key) if prefix in ("B", "I") else ([], "")
    close()
    return spans


def page_slope(quads: list) -> float:
    """Median top-edge slope (dy/dx) of the wide text lines of a page: the page tilt. Only lines at
    least twice as wide as tall count, because short cells give noisy edges."""
    slopes = []
    for q in quads:
        q = np.asarray(q, dtype=float)
        dx, height = q[1, 0] - q[0, 0], float(np.hypot(*(q[3] - q[0])))
        if dx > 2 * max(height, 1.0):
            slopes.append((q[1, 1] - q[0, 1]) / dx)
    return float(np.median(slopes)) if slopes else 0.0


def cluster_rows(cells: list[tuple[str, Box]], line_height: float, slope: float = 0.0,
                 tolerance: float = 0.5, lower: float = 0.35) -> list[list[int]]:
    """Cells (key, box) -> rows as lists of cell indices, rows top to bottom, cells left to right.

    The page tilt is taken out first (each centre moved along the median line slope to x=0), so a
    row that drifts across a tilted page stays one row. Deskewed centres within `tolerance` x
    `line_height` of the row's mean centre join it; a second cell of a key the row already holds
    starts a new row only when it sits `lower` x `line_height` below that cell (clearly the next
    printed row), otherwise it stays in the row (the caller picks one of the same-key cells)."""
    h = max(line_height, 1.0)
    centre = [(b[1] + b[3]) / 2 - slope * (b[0] + b[2]) / 2 for _, b in cells]
    rows: list[list[int]] = []
    for i in sorted(range(len(cells)), key=lambda i: (centre[i], cells[i][1][0])):
        if rows:
            row = rows[-1]
            mean = sum(centre[j] for j in row) / len(row)
            same_key = [j for j in row if cells[j][0] == cells[i][0]]
            clearly_lower = any(centre[i] - centre[j] > lower * h for j in same_key)
            if centre[i] - mean <= tolerance * h and not clearly_lower:
                row.append(i)
                continue
        rows.append([i])
    return [sorted(row, key=lambda j: (cells[j][1][0], centre[j])) for row in rows]


def group_rows(spans: list[Span], slope: float = 0.0) -> list[dict[str, Span]]:
    """Item spans -> rows (see `cluster_rows`; the line height is the median span height). Of two
    spans of one key in one row the longer text wins, then the higher score."""
    boxed = [s for s in spans if s.box]
    if not boxed:
        return [{s.key: s} for s in spans]
    boxes: list[Box] = [s.box for s in boxed if s.box]       # the same order as `boxed`
    height = float(np.median([b[3] - b[1] for b in boxes]))
    if slope:      # an axis-aligned box is taller than its tilted text line
        height = max(1.0, height - abs(slope) * float(np.median([b[2] - b[0] for b in boxes])))
    rows = []
    for idx in cluster_rows([(s.key, b) for s, b in zip(boxed, boxes)], height, slope):
        row: dict[str, Span] = {}
        for j in idx:
            s = boxed[j]
            if s.key not in row or (len(s.text), s.score) > (len(row[s.key].text), row[s.key].score):
                row[s.key] = s
        rows.append(row)
    return rows


def spans_to_fields(spans: list[Span], slope: float = 0.0) -> tuple[dict[str, Field], list[dict[str, Field]]]:
    """(fields, items): the highest-scoring span per plain key; `items.<key>` spans grouped into rows
    with the prefix dropped. Generic-form line labels (header/question/answer) are left to
    `link_pairs` and not returned as fields."""
    fields: dict[str, Field] = {}
    item_spans = []
    for s in spans:
        if s.key.startswith(ITEM_PREFIX):
            item_spans.append(Span(**{**s.__dict__, "key": s.key[len(ITEM_PREFIX):]}))
        elif s.key not in FORM_KEYS and (s.key not in fields or s.score > fields[s.key].score):
            fields[s.key] = s.to_field()
    items = [{k: s.to_field() for k, s in row.items()} for row in group_rows(item_spans, slope)]
    return fields, items


def link_pairs(spans: list[Span], link_probs: np.ndarray, threshold: float = 0.5) -> list[Pair]:
    """Generic-form pairs: each answer span is linked to the question span whose first token scores
    highest with the answer's first token, if that probability reaches `threshold`."""
    link_probs = np.asarray(link_probs)
    questions = [s for s in spans if s.key == "question"]
    answers = [s for s in spans if s.key == "answer"]
    pairs = []
    for a in answers:
        if not questions:
            break
        scores = [float(link_probs[q.first, a.first]) for q in questions]
        k = int(np.argmax(scores))
        if scores[k] >= threshold:
            q = questions[k]
            pairs.append(Pair(key=q.text.rstrip(":：").strip(), value=a.text, key_box=q.box,
                              value_box=a.box, score=round(scores[k], 4), page=a.page))
    pairs.sort(key=lambda p: (p.key_box[1], p.key_box[0]) if p.key_box else (0.0, 0.0))
    return pairs


def doc_type(doc_logits: np.ndarray, doc_types: list[str]) -> tuple[str | None, float]:
    """Average the per-window doc-type probabilities; (best type, its probability)."""
    if not doc_types:
        return None, 0.0
    probs = softmax(np.asarray(doc_logits).reshape(-1, len(doc_types))).mean(axis=0)
    k = int(probs.argmax())
    return doc_types[k], float(probs[k])
