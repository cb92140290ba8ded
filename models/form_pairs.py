"""Generic forms: question -> answer pairs from the tag probabilities and the link head.

`decode_form(page, pred, tag_labels, allowed)` is what models/extractor.py calls for a page of a
generic form: line-level entity spans (header/question/answer) from the per-character tags, then each
answer is linked to the question the link head scores highest, with a geometric fallback (nearest
question to the left on the row, else above) for an answer the link head leaves unclaimed.
"""
from __future__ import annotations

import numpy as np

from data.document import Pair, Page


def decode_form(page: Page, pred: dict, tag_labels: list[str], allowed: np.ndarray) -> list[Pair]:
    """The key-value pairs of one page; `pred` is `Extractor.predict_page`'s output."""
    spans = _form_spans(pred["probs"], tag_labels, allowed, [ln.text for ln in page.lines])
    return _pairs(page, spans, pred["link"])


def _form_spans(line_probs: list[np.ndarray], tag_labels: list[str], allowed: np.ndarray,
                line_texts: list[str] | None = None, share: float = 0.6) -> list:
    """Generic forms: a line whose characters mostly agree on one label (header/question/answer)
    becomes one entity with that label, first to last visible character. XFUND-style forms label
    whole lines, so a vote per line undoes a shaky first or last character. Lines without a clear
    majority keep their per-character spans (a key and its value sharing one OCR line)."""
    from models.extractor import Span, _spans     # the extractor's span decoding; imported late (it imports us)
    per_char = _spans(line_probs, tag_labels, allowed, line_texts)
    out: list[Span] = []
    for li, probs in enumerate(line_probs):
        mine = [s for s in per_char if s.line == li]
        visible = [ci for ci in range(len(probs)) if not np.isnan(probs[ci]).any()]
        if not mine or not visible:
            continue
        votes: dict[str, int] = {}
        for s in mine:
            votes[s.key] = votes.get(s.key, 0) + sum(1 for ci in visible if s.start <= ci < s.end)
        key, n = max(votes.items(), key=lambda kv: kv[1])
        if n >= share * len(visible):
            score = float(np.mean([s.score for s in mine if s.key == key]))
            out.append(Span(key, li, visible[0], visible[-1] + 1, score))
        else:
            out += mine
    return out


def _pairs(page: Page, spans: list, link) -> list[Pair]:
    qs = [s for s in spans if s.key == "question"]
    ans = [s for s in spans if s.key == "answer"]
    from models.extractor import _char_box, _clean
    text = lambda s: _clean(page.lines[s.line].text[s.start:s.end])
    pairs: list[Pair] = []
    for a in ans:
        if not text(a):
            continue
        best, best_score = None, 0.0
        for q in qs:
            score = link((q.line, q.start), (a.line, a.start))
            if score is not None and score > best_score:
                best, best_score = q, score
        prob = 1 / (1 + np.exp(-best_score)) if best is not None else 0.0
        if best is None:
            best = _nearest_question(page, a, qs)
            prob = 0.5
        if best is None or not text(best):
            continue
        pairs.append(Pair(key=text(best), value=text(a), key_box=_char_box(page.lines[best.line], best.start, best.end),
                          value_box=_char_box(page.lines[a.line], a.start, a.end),
                          score=round(float(prob * min(a.score, best.score)), 4), page=page.index))
    return pairs


def _nearest_question(page: Page, a, qs: list):
    from models.extractor import _char_box
    ab = _char_box(page.lines[a.line], a.start, a.end)
    h = max(1.0, ab[3] - ab[1])
    best, best_d = None, float("inf")
    for q in qs:
        qb = _char_box(page.lines[q.line], q.start, q.end)
        same_row = abs((qb[1] + qb[3]) / 2 - (ab[1] + ab[3]) / 2) < 0.6 * h
        if same_row and qb[0] <= ab[0]:
            d = ab[0] - qb[2]
        elif qb[3] <= ab[1] + 0.3 * h and qb[0] < ab[2] and ab[0] < qb[2]:
            d = 3 * (ab[1] - qb[3]) + 1000
        else:
            continue
        if d < best_d:
            best, best_d = q, d
    return best
