"""Candidate spans from per-character tag probabilities: the model's reading of each OCR line.

`decode_spans` gives each character the field with most mass p(B-key) + p(I-key) (or O) and cuts runs
of one field into spans. Three rules refine a line's characters' fields before the runs are cut and its
spans after: `SPAN_RULES` (in models/extraction/rules.py RULES), steps over a `LineSpans` that the
decoder runs at their stage's point, those switched off left out in one place (`span_steps`):
vote_alnum_runs and vote_segments (stage span_chars), extend_left (span_ends).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from data.labels import COLONS
from models.extraction.base import Rule, Span, Steps, enabled_steps
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def vote_alnum_runs(text: str | None, best: np.ndarray) -> np.ndarray:
    """A run of letters, digits and decimal points (a code, tax ID, amount) never changes field in
    the middle: when most of its characters name a field, all of them take the most named one, or the
    field of the character the run is glued to when part of the run names it."""
    if not text:
        return best
    best = best.copy()
    i = 0
    while i < len(text):
        if not (text[i].isascii() and (text[i].isalnum() or text[i] == ".")):
            i += 1
            continue
        j = i
        while j < len(text) and text[j].isascii() and (text[j].isalnum() or text[j] == "."):
            j += 1
        keyed = [int(k) for k in best[i:j] if k != 0]
        if j - i > 1 and len(keyed) * 2 >= j - i:
            # a run glued to the value before it (合同号：HT2937 with HT tagged as that value) goes on
            # with that value: the model's other field for the tail is a second reading, not a second
            # value starting in the middle of a code
            glued = int(best[i - 1]) if i > 0 and not text[i - 1].isspace() else 0
            best[i:j] = glued if glued and glued in keyed else max(set(keyed), key=keyed.count)
        i = j
    return best


def vote_segments(text: str | None, best: np.ndarray, visible: np.ndarray, vote: np.ndarray,
                  mass: np.ndarray | None = None, code_fits: Callable[[int, str], bool] | None = None,
                  st: DecodeSettings = DEFAULT_SETTINGS) -> tuple[np.ndarray, np.ndarray]:
    """Between two colons (or a colon and the line's end) OCR text holds one value, maybe followed
    by the next key phrase. When most of a segment's tagged characters name one free-text field
    (`vote[k]`: names, addresses, titles), its first to last tagged character all take that field:
    a tiny model scatters other fields' tags over a long name (深圳蛋糕 with 蛋 as an item) and a
    value split in pieces loses all but one. Returns (new best, voted mask)."""
    voted = np.zeros(len(best), dtype=bool)
    if not text:
        return best, voted
    best = best.copy()
    # a code run OCR glued onto the value (名称 then 统一社会信用代码 read as one line) keeps its own field
    # and takes no part in the vote when it reads as that field (`code_fits`): a bank account the
    # model took for a tax ID still votes with its bank's name (银行名称 + 账号 is one value)
    code = np.zeros(len(text), dtype=bool)
    for m in re.finditer(r"[0-9A-Za-z]{6,}", text):
        k = int(best[m.start()])
        code[m.start():m.end()] = k != 0 and not vote[k] and code_fits is not None and code_fits(k, m.group())
    bounds = [-1] + [i for i, ch in enumerate(text) if ch in COLONS] + [len(text)]
    for a, b in zip(bounds, bounds[1:]):
        seg = [i for i in range(a + 1, b) if visible[i] and not code[i]]
        tagged = [i for i in seg if best[i] != 0]
        if len(tagged) < 2:
            continue
        keyed = [int(best[i]) for i in tagged]
        k = max(set(keyed), key=keyed.count)
        if mass is not None and keyed.count(k) < st.segment_share * len(tagged):
            # no field holds half the characters (武汉 | 美越物 | 流有限公 | 司 scattered over three
            # names): the field with most probability mass over them, when it holds 40% of it
            m = np.nan_to_num(mass[tagged, 1:]).sum(0)
            if m.sum() > 0 and m.max() >= st.segment_mass_share * m.sum():
                k = int(m.argmax()) + 1
                keyed = [k] * len(tagged)
        if not vote[k] or keyed.count(k) < st.segment_share * len(tagged) or \
                len(tagged) < st.segment_tagged_share * len(seg):
            continue
        first, last = tagged[0], tagged[-1]
        best[first:last + 1] = k
        voted[first:last + 1] = True
    return best, voted


@dataclass
class LineSpans:
    """One OCR line being decoded, what the span steps read and change: each character's field (`best`,
    an index into [O] + keys), which characters a segment vote gave theirs (`voted`), and the spans cut."""
    text: str | None
    probs: np.ndarray                     # [chars, tags], NaN on whitespace
    mass: np.ndarray                      # [chars, 1 + K]: p(O), then p(B-key) + p(I-key) per key
    keys: list[str]
    vote: np.ndarray                      # [1 + K]: the free-text fields a segment vote may give
    fits: Callable[[int, str], bool] | None   # a code run reads as field k (vote_segments)
    st: DecodeSettings
    best: np.ndarray
    visible: np.ndarray
    voted: np.ndarray
    spans: list[Span] = field(default_factory=list)


def alnum_runs(ln: LineSpans) -> None:
    """vote_alnum_runs over a line (`vote_alnum_runs`)."""
    ln.best = vote_alnum_runs(ln.text, ln.best)


def segments(ln: LineSpans) -> None:
    """vote_segments over a line (`vote_segments`)."""
    ln.best, ln.voted = vote_segments(ln.text, ln.best, ln.visible, ln.vote, mass=ln.mass, code_fits=ln.fits,
                                      st=ln.st)


def grow_left(ln: LineSpans) -> None:
    """extend_left over each span of a line (`extend_left`); a free-text field's span by the characters' fields."""
    for sp in ln.spans:
        extend_left(sp, ln.text, ln.probs, ln.mass, ln.keys,
                    ln.best if ln.vote[ln.keys.index(sp.key) + 1] else None, ln.st.extend_floor)


# The span rules as models/extraction/rules.py lists them (RULES holds these, in this order): steps over a
# LineSpans, run at their stage's point of `decode_spans` (span_chars: before the runs are cut; span_ends:
# over the spans cut).
SPAN_RULES: list[Rule] = [
    Rule("vote_alnum_runs", "span_chars", alnum_runs,
         about="a run of letters and digits (a code, an amount) never changes field in the middle"),
    Rule("vote_segments", "span_chars", segments,
         about="a colon segment whose tagged characters mostly name one free-text field is that field"),
    Rule("extend_left", "span_ends", grow_left,
         about="a span grows left over characters still giving its field mass, up to a colon"),
]
SPAN_STAGES = ("span_chars", "span_ends")


def span_steps(off: frozenset[str]) -> Steps:
    """The span rules' steps per stage, without those named in `off`: the one place they are left out."""
    return enabled_steps(SPAN_RULES, SPAN_STAGES, off)


def decode_spans(line_probs: list[np.ndarray], tag_labels: list[str], allowed: np.ndarray,
                 line_texts: list[str] | None = None, vote_keys: set[str] | None = None,
                 fits: Callable[[str, str], bool] | None = None, st: DecodeSettings = DEFAULT_SETTINGS,
                 off: frozenset[str] = frozenset()) -> list[Span]:
    """Spans per line from per-character tag probabilities, restricted to the `allowed` tags.

    Each character takes the key with the most mass p(B-key) + p(I-key) (or O): a tiny model is
    often unsure whether a value's first character is B or I, but sure which field it belongs to.
    A span is a run of one key (across spaces); a strong B inside a run starts a new span. The span
    rules left on (`span_steps`) refine the characters' fields before the cut and the spans after.
    """
    steps = span_steps(off)
    keys = sorted({lab[2:] for lab, ok in zip(tag_labels, allowed) if ok and lab != "O"})
    b_col = np.array([tag_labels.index(f"B-{k}") for k in keys], dtype=int)
    i_col = np.array([tag_labels.index(f"I-{k}") for k in keys], dtype=int)
    vote = np.array([False] + [k in (vote_keys or ()) for k in keys])
    code_fits = (lambda k, t: fits(keys[k - 1], t)) if fits else None
    out: list[Span] = []
    for li, probs in enumerate(line_probs):
        if probs is None or not len(probs):
            continue
        mass = np.concatenate([probs[:, :1], probs[:, b_col] + probs[:, i_col]], axis=1)  # [chars, 1+K]
        best = np.nan_to_num(mass, nan=-1.0).argmax(-1)
        ln = LineSpans(line_texts[li] if line_texts else None, probs, mass, keys, vote, code_fits, st, best,
                       ~np.isnan(probs).any(-1), np.zeros(len(best), dtype=bool))
        for step in steps["span_chars"]:
            step(ln)
        cur: Span | None = None
        scores: list[float] = []
        for ci, t in enumerate(ln.best):
            if np.isnan(probs[ci]).any():      # whitespace: no token; a value may run across it
                continue
            if t == 0:
                cur = None
                continue
            key = keys[t - 1]
            p = float(mass[ci, t])
            strong_b = probs[ci, b_col[t - 1]] > st.strong_b and \
                probs[ci, b_col[t - 1]] > st.strong_b_ratio * probs[ci, i_col[t - 1]]
            if cur is not None and key == cur.key and (ln.voted[ci] or not strong_b):
                cur.end = ci + 1
                scores.append(p)
                cur.score = float(np.mean(scores))
                continue
            cur = Span(key, li, ci, ci + 1, p)
            scores = [p]
            ln.spans.append(cur)
        for step in steps["span_ends"]:
            step(ln)
        for sp in ln.spans:
            seen = [ci for ci in range(sp.start, sp.end) if ln.visible[ci]]
            if seen:
                sp.alts = {k: float(m) for k, m in zip(keys, mass[seen, 1:].mean(0))}
        out += ln.spans
    return out


def extend_left(sp: Span, text: str | None, probs: np.ndarray, mass: np.ndarray, keys: list[str],
                 best: np.ndarray | None = None, floor: float = 0.1) -> None:
    """Grow a span leftwards over characters that still give its field some mass, up to a colon or
    the line start: a small model often loses the first character or two of a value after "：",
    but rarely gives them to another field. A free-text field (`best` given: the per-character
    keys) grows over every character no other field claims: 小 of 收款人：小明 read as O is still
    part of the name; a key phrase it takes in is cut off later by the schema (rule strip_key_phrase)."""
    if not text:
        return
    t = keys.index(sp.key) + 1
    i = sp.start - 1
    while i >= 0 and text[i] not in COLONS and (np.isnan(probs[i]).any() or (
            best[i] in (0, t) if best is not None else mass[i, t] >= floor and mass[i].argmax() in (0, t))):
        i -= 1
    first = i + 1
    while first < sp.start and text[first].isspace():
        first += 1
    sp.start = first
