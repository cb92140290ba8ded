"""Generic forms, layer 2: OCR lines -> pieces (keys and text runs), and the tags a piece carries.

A piece is a run of one OCR line: "姓名：张三" is a key piece holding a text piece; "联系人：刘平地址：合肥"
splits the middle run where the question tags (or a space) start the second key; a short run between
two colons with no value evidence ("电话：家中：0731...") joins the two into one key. What the text of a
piece says (`key_score`, `is_hint`, `options`) is form_text.py, the layer below; where pieces sit is
form_grid.py and form_layout.py, the layers above. The learned cuts of colon-less lines (form_cuts.py) sit
above this file too: `split_line` takes them as any object with their `cut` method (`LineCuts`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Protocol

import numpy as np

from data import geometry
from data.document import Line, Page
from data.labels import COLONS
from models.extraction.form_text import (
    BLANK_DATE,
    CHECK_BOXES,
    CHOICES,
    KEY_ENDINGS,
    KEY_WORDS,
    NOT_A_VALUE,
    PAGE_NUMBER,
    PHOTO_BOX,
    SENTENCE,
    is_hint,
    options,
    ticked,
)
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


class LineCuts(Protocol):
    """Where a colon-less line is cut into label and value (form_cuts.CutModel, learned): the index the
    value starts at, or None. `known` is where `inline_label` would cut, one piece of its evidence."""

    def cut(self, text: str, mass: np.ndarray, known: int | None) -> int | None: ...


@dataclass
class Piece:
    """A run of one OCR line: a key (ended by a colon, or a colon-less line judged a key) or text. A label
    or a value printed over several lines is one piece holding the others in `more`."""
    line: int
    start: int
    end: int
    text: str                      # cleaned: no surrounding spaces or trailing colons
    box: list[float]
    colon_key: bool = False        # ended by a colon in the OCR text
    value: "Piece | None" = None   # the text right after the colon on the same line, if any
    used: bool = False
    absorbed: bool = False         # taken into another piece's value: no pair of its own
    more: list["Piece"] = field(default_factory=list)   # continuation lines joined to this piece
    _lines: tuple[int, frozenset[int]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def lines(self) -> frozenset[int]:
        """The OCR lines this piece stands on (kept until `more` grows: the layout asks it ~1M times a page)."""
        if self._lines is None or self._lines[0] != len(self.more):
            self._lines = (len(self.more), frozenset({self.line} | {p.line for p in self.more}))
        return self._lines[1]

    def join(self, other: "Piece", sep: str = "") -> None:
        """Take `other` (the next line of this label or value) into this piece."""
        self.more.append(other)
        self.text = self.text + sep + other.text
        self.box = [min(self.box[0], other.box[0]), min(self.box[1], other.box[1]),
                    max(self.box[2], other.box[2]), max(self.box[3], other.box[3])]
        self.colon_key = self.colon_key or other.colon_key
        if other.value is not None:
            self.value = other.value
        other.used = True


# --- tags ------------------------------------------------------------------------------------------

def label_masses(line_probs: list[np.ndarray], tag_labels: list[str]) -> list[np.ndarray]:
    """Per line, per character: [question, answer, header, other] probability mass (B + I), NaN
    on characters the model did not see (whitespace)."""
    cols = {k: [i for i, lab in enumerate(tag_labels) if lab in (f"B-{k}", f"I-{k}")]
            for k in ("question", "answer", "header")}
    out = []
    for probs in line_probs:
        if probs is None or not len(probs):
            out.append(np.zeros((0, 4)))
            continue
        q, a, h = (probs[:, c].sum(1) if c else np.zeros(len(probs)) for c in cols.values())
        out.append(np.stack([q, a, h, np.clip(1 - q - a - h, 0, 1)], 1))
    return out


def mean_mass(mass: np.ndarray, start: int, end: int) -> np.ndarray:
    seen = mass[start:end]
    seen = seen[~np.isnan(seen).any(1)] if len(seen) else seen
    return seen.mean(0) if len(seen) else np.zeros(4)


def char_box(line: Line, start: int, end: int) -> list[float]:
    """The part of a line's box under characters [start, end), by printed width (data/geometry.py): base.char_box,
    which the forms layers do not import (base sits above them, beside the decoder; forms.py's docstring)."""
    return geometry.char_box(line.box, line.text, start, end)


def glued_key(line: Line, li: int, key: tuple[int, int, str], value: tuple[int, int, str]) -> Piece:
    """A line OCR read as label and value at once, as the piece it is cut into: the label (`key`: start,
    end, text) as if a colon ended it, holding the rest (`value`, likewise) as its value."""
    k = Piece(li, key[0], key[1], key[2], char_box(line, key[0], key[1]), colon_key=True)
    k.value = Piece(li, value[0], value[1], value[2], char_box(line, value[0], value[1]))
    return k


def piece_tags(p: Piece, masses: list[np.ndarray]) -> np.ndarray:
    return mean_mass(masses[p.line], p.start, p.end)


# --- pieces ----------------------------------------------------------------------------------------

URL_SCHEME = re.compile(r"(?i)(?:https?|ftp)\s*$")


def _key_colons(text: str, key_max: int = 14) -> list[int]:
    """Colon positions that end a key; a colon between digits (10:30) or after a web address's scheme (http://)
    is part of a value, and so is a colon after more than `key_max` characters followed by more text (a
    title's subtitle: 方法研究：以...为例)."""
    out: list[int] = []
    for i, ch in enumerate(text):
        if ch not in COLONS or (0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()):
            continue
        if URL_SCHEME.search(text[:i]) and text[i + 1:i + 3] in ("//", "／／"):
            continue                 # http://www.gzkjxy.net: the colon of a web address
        run = text[(out[-1] + 1 if out else 0):i].strip()
        if len(run) > key_max and text[i + 1:].strip():
            continue
        out.append(i)
    return out


def _second_key_start(text: str, lo: int, hi: int, mass: np.ndarray) -> int:
    """Where the key before the colon at `hi` starts inside the run text[lo:hi] that follows an
    earlier key's colon. Returns lo when the whole run belongs to the key (a compound key such as
    电话：家中：), else the first character of the second key."""
    run = text[lo:hi]
    body = run.strip()
    if not body:
        return lo
    first = lo + len(run) - len(run.lstrip())
    gaps = [m.end() for m in re.finditer(r"\s+", body)]
    if gaps:                       # OCR kept the space between the first value and the second key
        return first + gaps[-1]
    k = first + len(body)
    while k > first and len(mass) > k - 1 and not np.isnan(mass[k - 1]).any() and mass[k - 1, 0] > mass[k - 1, 1]:
        k -= 1
    if first < k < first + len(body):    # the model tags a question run just before the colon
        return k
    if k == first:
        return lo
    for word in sorted(KEY_WORDS, key=len, reverse=True):
        if body.endswith(word) and len(body) > len(word):
            return first + len(body) - len(word)
    if len(body) <= 4 and not any(c.isdigit() for c in body):
        return lo                  # a short label between colons qualifies the first key
    return first + len(body) - 2


SPACED_KEY_WORDS = tuple(re.compile(r"\s*".join(map(re.escape, w))) for w in KEY_WORDS)   # 姓　　名 too


def inline_label(text: str, mass: np.ndarray) -> int | None:
    """Where the value starts in a colon-less line that OCR read as label and value at once: a known
    label (姓　　名 林丽霞, 所学专业环境科学: up to three characters before a label everybody knows) followed
    by text that is no label itself and that the model does not tag as a question. None: no such split."""
    best: tuple[int, int] | None = None
    head = text[:12]
    for word, spaced in zip(KEY_WORDS, SPACED_KEY_WORDS):
        if word[0] not in head:
            continue
        for m in spaced.finditer(head):
            lead = text[:m.start()]
            # up to three characters qualify the label (所学专业); an enumeration may run longer (学科、专业名称)
            if len(lead.strip()) > (5 if "、" in lead else 3) or \
                    not all("\u4e00" <= c <= "\u9fff" or c.isspace() or c == "、" for c in lead):
                continue
            if best is None or m.end() > best[1]:
                best = (m.start(), m.end())
    if best is None:
        return None
    best = (best[0], _extend_label(text, best[1], mass))
    rest = text[best[1]:]
    value = rest.strip()
    start = best[1] + len(rest) - len(rest.lstrip())
    label = re.sub(r"\s+", "", text[:best[1]])
    same = next((w for w in KEY_WORDS if label.endswith(w)), None)
    folded = re.sub(r"\s+", "", value)
    # 申请人的姓名, 联系人电话: one label; but a value naming one of its label's kind (所在学院 | 文学院) is a value
    if not value or value[0] in "（(：:的之及和或与" or SENTENCE.search(value) or \
            (folded.endswith(KEY_WORDS) and not (same is not None and folded.endswith(same) and folded != same)):
        return None
    tags = mean_mass(mass, start, len(text)) if len(mass) else np.zeros(4)
    return None if tags[0] > tags[1] + DEFAULT_SETTINGS.form_tag_margin else start


def _extend_label(text: str, end: int, mass: np.ndarray) -> int:
    """Where a label that starts with a known word really ends (学位 | 类别博士 is 学位类别 | 博士, 指导教师 |
    姓名、职称魏彬 is 指导教师姓名、职称 | 魏彬): the longest run of up to `label_tail` more Chinese characters
    (or 、) that ends as labels end, leaves a value, and either ends in a known label (姓名、职称) or each of
    whose characters the model tags clearly (`form_tag_margin`) more a question than an answer (学位类别博士
    with 类别 read as an answer, or by a model that knows nothing of the page, stays 学位 | 类别博士)."""
    best, margin = end, DEFAULT_SETTINGS.form_tag_margin
    for j in range(end + 2, min(len(text) - 1, end + DEFAULT_SETTINGS.label_tail) + 1):
        tail = text[end:j]
        if not all("\u4e00" <= c <= "\u9fff" or c == "、" for c in tail):
            break
        if not tail.endswith(KEY_ENDINGS):
            continue
        if tail.endswith(KEY_WORDS) or (len(mass) > 0 and
                                        all(t[0] > t[1] + margin for t in (mean_mass(mass, i, i + 1)
                                                                        for i in range(end, j)))):
            best = j
    return best


def title_line(page: Page, li: int, st: DecodeSettings = DEFAULT_SETTINGS) -> bool:
    """A line printed as a title (硕士学位论文, 专业学位硕士论文 on a cover): in larger type than `title_size` x
    the page's median line and alone on its row. A known word inside it (学位) opens no label."""
    return li in _titles([ln.box for ln in page.lines], [li], st.title_size)


def title_lines(page: Page, st: DecodeSettings = DEFAULT_SETTINGS) -> set[int]:
    """Every line `title_line` calls a title, in one pass (a Line's box is computed from its quad on each read)."""
    boxes = [ln.box for ln in page.lines]
    return _titles(boxes, range(len(boxes)), st.title_size)


def _titles(boxes: list[list[float]], lines: Iterable[int], size: float) -> set[int]:
    heights = sorted(b[3] - b[1] for b in boxes)
    if not heights:
        return set()
    big = size * heights[len(heights) // 2]
    out = set()
    for li in lines:
        b = boxes[li]
        mid = (b[1] + b[3]) / 2
        if b[3] - b[1] >= big and not any(i != li and o[1] < mid < o[3] for i, o in enumerate(boxes)):
            out.add(li)
    return out

def split_line(page: Page, li: int, mass: np.ndarray, key_max: int = DEFAULT_SETTINGS.form_colon_key_max,
               cuts: LineCuts | None = None, titles: set[int] | None = None) -> list[Piece]:
    """A line's pieces: a key up to each colon and the text after it; a colon-less line OCR read as label
    and value at once is cut where `cuts` (form_cuts.CutModel, learned) says, and where it finds no cut (or
    without one) where `inline_label` finds a known label. `titles`: the page's `title_lines`, when the
    caller splits every line (found once, not once a line)."""
    line = page.lines[li]
    text = line.text
    colons = _key_colons(text, key_max)
    if not colons and not (li in titles if titles is not None else title_line(page, li)):
        known = inline_label(text, mass)
        cut = cuts.cut(text, mass, known) if cuts is not None else None
        cut = known if cut is None else cut
        if cut is not None and options(text[:cut].strip()):
            cut = None               # □A型 □B型: a printed option is no label, whatever stands after it
        if cut is not None:
            colons = [cut - 1] if text[cut - 1].isspace() else []
            if not colons:           # no space to stand in for the colon: cut between two characters
                return [glued_key(line, li, (0, cut, text[:cut].strip()), (cut, len(text), text[cut:].strip()))]
    out: list[Piece] = []

    def piece(start: int, end: int, colon_key: bool = False) -> Piece | None:
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        start, end = start + lead, start + len(raw.rstrip())
        clean = text[start:end].strip().rstrip(COLONS).strip().strip("_＿").lstrip("•●▪·").strip()
        if not clean:
            return None
        return Piece(li, start, end, clean, char_box(line, start, end), colon_key)

    key_start = 0
    last_key: Piece | None = None
    for n, c in enumerate(colons):
        ks = key_start if n == 0 else _second_key_start(text, key_start, c, mass)
        if last_key is not None and ks > key_start:
            last_key.value = piece(key_start, ks)
        if last_key is not None and ks == key_start and n > 0:
            ks = last_key.start                      # compound key: 电话：家中：
            out.remove(last_key)
        k = piece(ks, c + 1, colon_key=True)
        if k is not None:
            out.append(k)
        last_key = k
        key_start = c + 1
    rest = piece(key_start, len(text))
    if last_key is not None:
        last_key.value = rest
    elif rest is not None:
        out.append(rest)
    return out


def is_value(p: Piece, mass: np.ndarray, hints: bool = True, sentences: bool = False) -> bool:
    """Could this text answer a question? Blank fills, page numbers, empty date templates, photo boxes,
    unticked boxes, sentences (unless `sentences`: the answer to 诊断意见 is one), printed options, hints and
    headers cannot."""
    if p.colon_key:
        return False
    if ticked(p.text):
        return True
    if any(rx.match(p.text) for rx in (NOT_A_VALUE, PAGE_NUMBER, BLANK_DATE, CHECK_BOXES, PHOTO_BOX)):
        return False
    if hints and is_hint(p.text):
        return False
    if SENTENCE.search(p.text) and len(p.text) >= 6 and not sentences:    # instructions and notes
        return False
    if CHOICES.match(p.text):                           # printed options (每周/每两周/每月), not an answer
        return False
    return mean_mass(mass, p.start, p.end)[2] < 0.5     # a header is nobody's value


def is_header(p: Piece, mass: np.ndarray) -> bool:
    return mean_mass(mass, p.start, p.end)[2] >= 0.5
