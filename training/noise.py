"""Simulated OCR noise on tagged lines, so a model trained on generator ground truth meets what OCR emits.

What PP-OCR does to a clean page, and how each is imitated here (tags stay one per character):
- reads a glyph as a look-alike (0/O, 1/l, 己/已, ：/:) -> `confuse`, the tag is kept
- drops a character or adds a stray one (a table rule read as 1 or |) -> `drop` / `extra`
- cuts a line at a wide gap ("名      称：" becomes "名" and "称：") or between a key and its value
  -> `split`; the cut never falls inside a field value, so a value stays one span
- joins neighbours on one row ("（小写）" + "¥412.00") -> `merge`
- boxes a little off -> `jitter`
Every operation takes a `random.Random`, so a noisy page is reproducible from its seed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

CONFUSIONS = {
    "0": "OD", "O": "0", "1": "lI", "l": "1", "I": "1", "2": "Z", "5": "S", "S": "5", "8": "B",
    "B": "8", "6": "b", "9": "g", ":": "：", "：": ":", "(": "（", "（": "(", ")": "）", "）": ")",
    "¥": "￥Y", "￥": "¥", "己": "已巳", "已": "己", "未": "末", "末": "未", "人": "入", "入": "人",
    "土": "士", "士": "土", "日": "曰", "田": "由", "王": "玉", "大": "太", "天": "夫", "千": "干",
    "贝": "见", "税": "锐", "码": "玛", "号": "亏", "名": "各", "称": "祢", "期": "其", "额": "颔",
    "-": "一", "一": "-", ".": ",", ",": ".",
}
STRAY = "1|l.,-_:'一丨"


@dataclass
class TaggedLine:
    """A text line with one tag per character: "O", "B-<key>" or "I-<key>"."""
    text: str
    box: list[float]
    tags: list[str]
    label: str | None = None      # generic forms: header / question / answer / other
    id: int = -1                  # line id for key-value linking (-1: none)

    def __post_init__(self) -> None:
        if len(self.tags) != len(self.text):
            raise ValueError(f"{len(self.tags)} tags for {len(self.text)} characters in {self.text!r}")


@dataclass
class NoiseConfig:
    """The `noise:` section of the training config (training/config.py); the defaults are what the
    bundled model was trained with (configs/default.yaml)."""
    confuse: float = 0.02         # per character
    drop: float = 0.01            # per character
    extra: float = 0.05           # per line
    split_gap: float = 0.8        # per line with a run of 2+ spaces: cut there (OCR always does)
    split_value: float = 0.35     # per line holding key text then a value: cut at the value
    merge: float = 0.1            # per pair of neighbours on one row
    jitter: float = 0.04          # box jitter as a share of the line height
    strip_spaces: float = 0.7     # per line: OCR rarely emits the spaces of spaced-out labels
    page_shift: float = 0.25      # move the whole text block by up to this share of its size, so fields
    page_scale: float = 0.2       # are not found by absolute position; and stretch it, x and y apart
    extra_fields: dict = field(default_factory=dict)


def _is_value(tag: str) -> bool:
    return tag != "O"


def confuse(line: TaggedLine, p: float, rng: random.Random) -> TaggedLine:
    chars = [rng.choice(CONFUSIONS[c]) if c in CONFUSIONS and rng.random() < p else c for c in line.text]
    return replace(line, text="".join(chars))


def drop(line: TaggedLine, p: float, rng: random.Random) -> TaggedLine:
    keep = [i for i in range(len(line.text)) if rng.random() >= p]
    if not keep:
        return line
    text = "".join(line.text[i] for i in keep)
    tags = [line.tags[i] for i in keep]
    return replace(line, text=text, tags=_repair_bio(tags))


def extra(line: TaggedLine, rng: random.Random) -> TaggedLine:
    """A stray character at either end (where table rules and stamps touch the text)."""
    ch = rng.choice(STRAY)
    if rng.random() < 0.5:
        return replace(line, text=ch + line.text, tags=["O"] + line.tags)
    return replace(line, text=line.text + ch, tags=line.tags + ["O"])


def strip_spaces(line: TaggedLine) -> TaggedLine:
    keep = [i for i, c in enumerate(line.text) if not c.isspace()]
    return replace(line, text="".join(line.text[i] for i in keep),
                   tags=_repair_bio([line.tags[i] for i in keep]))


def _repair_bio(tags: list[str]) -> list[str]:
    """After characters are removed an entity may start with I-: make it B-."""
    out = list(tags)
    for i, t in enumerate(out):
        if t.startswith("I-") and (i == 0 or out[i - 1][2:] != t[2:] or out[i - 1] == "O"):
            out[i] = "B-" + t[2:]
    return out


def _cut(line: TaggedLine, at: int, resume: int) -> list[TaggedLine]:
    """Two lines: text[:at] and text[resume:], boxes split in proportion to the characters."""
    n = max(1, len(line.text))
    x0, y0, x1, y1 = line.box
    w = x1 - x0
    left = replace(line, text=line.text[:at], tags=line.tags[:at], box=[x0, y0, x0 + w * at / n, y1])
    right = replace(line, text=line.text[resume:], tags=_repair_bio(line.tags[resume:]),
                    box=[x0 + w * resume / n, y0, x1, y1])
    return [part for part in (left, right) if part.text.strip()]


def split(line: TaggedLine, cfg: NoiseConfig, rng: random.Random) -> list[TaggedLine]:
    text, tags = line.text, line.tags
    # a wide gap outside any value
    for i in range(len(text) - 1):
        if text[i] == " " and text[i + 1] == " " and tags[i] == "O" and rng.random() < cfg.split_gap:
            j = i
            while j < len(text) and text[j] == " ":
                j += 1
            return _cut(line, i, j)[:1] + split(_cut(line, i, j)[-1], cfg, rng) if j < len(text) else [line]
    # between leading key text and the value that follows it
    first = next((i for i, t in enumerate(tags) if t.startswith("B-")), None)
    if first and tags[first - 1] == "O" and rng.random() < cfg.split_value:
        return _cut(line, first, first)
    return [line]


def merge(lines: list[TaggedLine], p: float, rng: random.Random) -> list[TaggedLine]:
    """Join a line with the next when both sit on one row and nearly touch."""
    out: list[TaggedLine] = []
    for line in lines:
        if out and rng.random() < p:
            prev = out[-1]
            h = max(1.0, prev.box[3] - prev.box[1])
            same_row = abs((prev.box[1] + prev.box[3]) / 2 - (line.box[1] + line.box[3]) / 2) < 0.4 * h
            near = 0 <= line.box[0] - prev.box[2] < 3 * h
            if same_row and near and prev.label is None and line.label is None:
                out[-1] = replace(prev, text=prev.text + line.text, tags=prev.tags + _repair_bio(line.tags),
                                  box=[min(prev.box[0], line.box[0]), min(prev.box[1], line.box[1]),
                                       max(prev.box[2], line.box[2]), max(prev.box[3], line.box[3])])
                continue
        out.append(line)
    return out


def jitter(line: TaggedLine, share: float, rng: random.Random) -> TaggedLine:
    h = max(1.0, line.box[3] - line.box[1])
    d = [rng.uniform(-share, share) * h for _ in range(4)]
    x0, y0, x1, y1 = (v + e for v, e in zip(line.box, d))
    return replace(line, box=[x0, y0, max(x0 + 1, x1), max(y0 + 1, y1)])


def move_page(lines: list[TaggedLine], shift: float, scale: float, rng: random.Random) -> list[TaggedLine]:
    """Shift and stretch all boxes of a page together. A few synthetic layouts put each field at
    nearly the same place on every page; a real form puts it elsewhere. Moving the whole block makes
    absolute position a weak cue, so the model reads the key text and the relative layout instead."""
    if not lines or (shift <= 0 and scale <= 0):
        return lines
    x0 = min(ln.box[0] for ln in lines)
    y0 = min(ln.box[1] for ln in lines)
    w = max(1.0, max(ln.box[2] for ln in lines) - x0)
    h = max(1.0, max(ln.box[3] for ln in lines) - y0)
    sx, sy = 1 + rng.uniform(-scale, scale), 1 + rng.uniform(-scale, scale)
    tx, ty = rng.uniform(-shift, shift) * w, rng.uniform(-shift, shift) * h
    out = []
    for ln in lines:
        bx0, by0, bx1, by1 = ln.box
        nb = [max(0.0, x0 + (bx0 - x0) * sx + tx), max(0.0, y0 + (by0 - y0) * sy + ty),
              max(1.0, x0 + (bx1 - x0) * sx + tx), max(1.0, y0 + (by1 - y0) * sy + ty)]
        out.append(replace(ln, box=nb))
    return out


def add_noise(lines: list[TaggedLine], cfg: NoiseConfig, rng: random.Random) -> list[TaggedLine]:
    """One noisy version of a page's lines (reading order kept)."""
    lines = move_page(lines, cfg.page_shift, cfg.page_scale, rng)
    out: list[TaggedLine] = []
    for line in lines:
        for part in split(line, cfg, rng):
            if rng.random() < cfg.strip_spaces:
                part = strip_spaces(part)
            part = confuse(part, cfg.confuse, rng)
            part = drop(part, cfg.drop, rng)
            if rng.random() < cfg.extra:
                part = extra(part, rng)
            part = jitter(part, cfg.jitter, rng)
            if part.text:
                out.append(part)
    return merge(out, cfg.merge, rng)


# A user's corpus (retrain) is real pages, often read by real OCR already: noised lightly and never
# moved on the page (the values the fine-tune was tuned with before the training defaults changed).
CORPUS_NOISE = NoiseConfig(extra=0.01, split_value=0.3, jitter=0.03, page_shift=0.0, page_scale=0.0)
