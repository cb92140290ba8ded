"""Generic forms: key-value pairs from layout evidence and the model's question/answer tags.

`decode_form(page, pred, tag_labels, allowed)` is what models/extractor.py calls for a page of a
generic form. A small model's question/answer tags do not carry over to a form layout it never saw
(or to a real scan), while a few layout facts hold on almost any form, so decoding leans on those
and uses the tags as evidence where layout alone cannot decide:

1. Pieces. Each OCR line splits at its key colons: "姓名：张三" is a key piece and a text piece;
   "联系人：刘平地址：合肥" splits the middle run where the question tags (or a space) start the
   second key; a short run between two colons with no value evidence ("电话：家中：0731...") joins
   the two into one key.
2. Keys. A piece ending in a colon is a key. A line without a colon is a key when it is more
   key-like than the text it would take as its value (`key_score`: question vs answer tags, a key
   noun at its end, no digits, short, not a sentence).
3. Values. A key takes the text after its colon; else the nearest piece to its right on the same
   row (tilt removed); else the line directly below it (overlapping, left-aligned or indented,
   close). The candidate must not be a key, a header, a sentence, or empty ("$", check boxes).
   Each value goes to one key: strongest evidence first.

Rules switched off by name (`off`, see models/extraction/rules.py): form_colonless_keys, form_furniture,
form_options_row, form_below, form_ocr_min. Thresholds: DecodeSettings.form_*.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from data import geometry
from data.document import Page, Pair
from data.labels import COLONS
from models.extraction.base import PagePrediction, char_box
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

# nouns that end most Chinese form keys (名称, 地址, 号码, 日期, 电话, 类别 ...): lexical evidence that
# holds across forms, used only to weigh a colon-less line or split a run of text before a colon
KEY_ENDINGS = tuple("名址号码期话别型数额行位门历校由称人件箱编龄族贯职务类级")
KEY_WORDS = ("地址", "电话", "手机", "姓名", "名称", "日期", "号码", "账号", "性别", "部门", "职位", "单位",
             "邮箱", "邮编", "传真", "金额", "备注", "学历", "民族", "籍贯", "年龄", "工号", "类型", "事由")
SENTENCE = re.compile(r"[，。？！；,?!;]")
NOT_A_VALUE = re.compile(r"^[\s$¥￥□☐☑☒■√×✓✔_\-—.·•:：/|()（）]*$")   # blank fills, currency signs, boxes
BLANK_DATE = re.compile(r"^[\s年月日时分秒]*$")                          # an unfilled 年  月  日
# unticked check boxes as OCR reads them: □同意 □不同意, or 口是口否 (the box read as 口) ...
CHECK_BOXES = re.compile(r"^([□☐]|口(?=[\u4e00-\u9fff]{1,3}(口|$)))")
# ... and a ticked one: the answer is the option after the tick (□男 ☑女 -> 女)
TICKED = re.compile(r"[☑☒■√✓✔]\s*([^\s□☐☑☒■√✓✔口]+)")

CHOICES = re.compile(r"^[^/\d]{1,4}(/[^/\d]{1,4}){2,}$")
PAGE_NUMBER = re.compile(r"^(.?第.{0,3}[页頁].*|.?\d*\s*[页頁]|\d+\s*/\s*\d+|page\s*\d+.*)$", re.I)

@dataclass
class Piece:
    """A run of one OCR line: a key (ended by a colon, or a colon-less line judged a key) or text."""
    line: int
    start: int
    end: int
    text: str                      # cleaned: no surrounding spaces or trailing colons
    box: list[float]
    colon_key: bool = False        # ended by a colon in the OCR text
    value: "Piece | None" = None   # the text right after the colon on the same line, if any
    used: bool = False


def decode_form(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings = DEFAULT_SETTINGS,
                off: frozenset[str] = frozenset()) -> list[Pair]:
    """The key-value pairs of one page, top to bottom; `pred` is `Extractor.predict_page`'s output."""
    masses = _label_masses(pred.probs, tag_labels)
    pieces = [p for li in range(len(page.lines)) for p in _split_line(page, li, masses[li])]
    return _link(page, pieces, masses, st, off)


# --- tags ------------------------------------------------------------------------------------------

def _label_masses(line_probs: list[np.ndarray], tag_labels: list[str]) -> list[np.ndarray]:
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


def _mean_mass(mass: np.ndarray, start: int, end: int) -> np.ndarray:
    seen = mass[start:end]
    seen = seen[~np.isnan(seen).any(1)] if len(seen) else seen
    return seen.mean(0) if len(seen) else np.zeros(4)


# --- pieces ----------------------------------------------------------------------------------------

def _key_colons(text: str) -> list[int]:
    """Colon positions that end a key; a colon between digits (10:30) is part of a value."""
    out = []
    for i, ch in enumerate(text):
        if ch in COLONS and not (0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()):
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
    stripped = body
    k = first + len(body)
    while k > first and len(mass) > k - 1 and not np.isnan(mass[k - 1]).any() and mass[k - 1, 0] > mass[k - 1, 1]:
        k -= 1
    if first < k < first + len(body):    # the model tags a question run just before the colon
        return k
    if k == first:
        return lo
    for word in sorted(KEY_WORDS, key=len, reverse=True):
        if stripped.endswith(word) and len(stripped) > len(word):
            return first + len(stripped) - len(word)
    if len(stripped) <= 4 and not any(c.isdigit() for c in stripped):
        return lo                  # a short label between colons qualifies the first key
    return first + len(body) - 2


def _split_line(page: Page, li: int, mass: np.ndarray) -> list[Piece]:
    line = page.lines[li]
    text = line.text
    colons = _key_colons(text)
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


# --- evidence --------------------------------------------------------------------------------------

def key_score(text: str, tags: np.ndarray) -> float:
    """How much a colon-less piece of text looks like a form key rather than a value (> 0: key).
    `tags` is its mean [question, answer, header, other] mass."""
    if SENTENCE.search(text):
        return -3.0
    s = 2.0 * float(tags[0] - tags[1])
    if text.endswith(KEY_ENDINGS):
        s += 0.8
    if any(ch.isdigit() for ch in text):
        s -= 1.0
    if len(text) > 12:
        s -= 1.5
    return s


def _is_value(p: Piece, mass: np.ndarray) -> bool:
    """Could this text answer a question? Blank fills, page numbers, empty date templates, unticked
    boxes, sentences, printed options and headers cannot."""
    if p.colon_key:
        return False
    if TICKED.search(p.text):
        return True
    if any(rx.match(p.text) for rx in (NOT_A_VALUE, PAGE_NUMBER, BLANK_DATE, CHECK_BOXES)):
        return False
    if SENTENCE.search(p.text) and len(p.text) >= 6:    # instructions and notes, not answers
        return False
    if CHOICES.match(p.text):                           # printed options (每周/每两周/每月), not an answer
        return False
    return _mean_mass(mass, p.start, p.end)[2] < 0.5     # a header is nobody's value


def _is_header(p: Piece, mass: np.ndarray) -> bool:
    return _mean_mass(mass, p.start, p.end)[2] >= 0.5


# --- linking ---------------------------------------------------------------------------------------

class _Layout:
    """Where pieces sit relative to each other, with the page tilt taken out (data/geometry.py), so a
    row that drifts across a skewed photo stays one row."""

    def __init__(self, page: Page, pieces: list[Piece], st: DecodeSettings = DEFAULT_SETTINGS):
        self.st = st
        self.slope = geometry.page_slope([ln.quad for ln in page.lines])
        self.pieces = pieces

    @staticmethod
    def height(p: Piece) -> float:
        return geometry.height(p.box)

    def same_row(self, a: Piece, b: Piece) -> bool:
        return a.line != b.line and geometry.same_row(a.box, b.box, self.slope, self.st.form_row_tol)

    def right_of(self, k: Piece) -> Piece | None:
        """The nearest piece to the right of `k` on its row, if it starts close enough."""
        others = [p for p in self.pieces if p is not k and p.line != k.line]
        i = geometry.right_of(k.box, [p.box for p in others], self.slope, self.st.form_right_gap, self.st.form_row_tol)
        return others[i] if i is not None else None

    def below(self, k: Piece) -> Piece | None:
        """The nearest line under `k` that overlaps it and starts at or right of its left edge."""
        others = [p for p in self.pieces if p.line != k.line]
        i = geometry.below(k.box, [p.box for p in others], self.slope, self.st.form_below_gap)
        return others[i] if i is not None else None


def _link(page: Page, pieces: list[Piece], masses: list[np.ndarray], st: DecodeSettings = DEFAULT_SETTINGS,
          off: frozenset[str] = frozenset()) -> list[Pair]:
    geo = _Layout(page, pieces, st)
    # Where the model evidently knows the page (most lines tagged question/answer), its "other" tag
    # on a whole line is trusted: form furniture such as 编号：..., notes, amounts in words. On a page
    # it does not know (a real scan) it tags nearly everything other, and that says nothing.
    line_tags = [_mean_mass(m, 0, len(m)) for m in masses]
    trust = np.mean([t[0] + t[1] >= 0.5 for t in line_tags]) if line_tags else 0.0
    furniture = {li for li, t in enumerate(line_tags) if trust >= st.form_trust and t[3] >= st.form_other} \
        if "form_furniture" not in off else set()
    free = [p for p in pieces if not p.colon_key]
    own = {id(p): float(np.clip(key_score(p.text, _mean_mass(masses[p.line], p.start, p.end)), -3.0, 3.0))
           for p in free}

    def ks(p: Piece, versus: Piece | None = None) -> float:
        """Key score; a colon key is a key whatever its text (`versus`: the piece it is weighed against)."""
        return 9.0 if p.colon_key else own[id(p)]

    def is_value(v: Piece) -> bool:
        return not v.colon_key and v.line not in furniture and _is_value(v, masses[v.line])

    def options_row(v: Piece) -> bool:
        """Printed choices after a question (□自取 □邮寄 with the boxes lost): another short piece
        that is no key follows the value closely on its row."""
        if TICKED.search(v.text) or "form_options_row" in off:
            return False
        nxt = geo.right_of(v)
        return (nxt is not None and not nxt.colon_key and len(v.text) <= 4 and len(nxt.text) <= 4
                and nxt.box[0] - v.box[2] <= 3 * geo.height(v) and ks(nxt, v) < st.form_key_min)

    # candidate links (strength, key, value); strongest first, each piece used once
    cands: list[tuple[float, Piece, Piece]] = []
    for k in pieces:
        if _is_header(k, masses[k.line]) or SENTENCE.search(k.text) or k.line in furniture:
            continue
        if k.colon_key and k.value is not None:          # 姓名：张三 on one line
            if is_value(k.value) and not options_row(k.value):
                cands.append((10.0, k, k.value))
            continue
        if not k.colon_key and ("form_colonless_keys" in off or ks(k) < st.form_key_min):
            continue
        # a long prompt ending in a colon introduces a list or a table, not a value on the next line
        looks = [("right", geo.right_of(k))]
        looks += [("below", geo.below(k))] if len(k.text) <= st.form_long_key and "form_below" not in off else []
        for where, v in looks:
            if v is None or not is_value(v) or (where == "right" and options_row(v)):
                continue
            margin = ks(k, v) - ks(v, k)
            if margin >= st.form_key_margin:
                cands.append((min(margin, 5.0) + (0.5 if where == "right" else 0.0), k, v))
                break                                # a value to the right wins over the line below
    cands.sort(key=lambda c: -c[0])
    pairs: list[Pair] = []
    for strength, k, v in cands:
        if k.used or v.used:
            continue
        k.used = v.used = True
        ocr = min(page.lines[k.line].score, page.lines[v.line].score)
        # a misread or cut-off key (人, 门) makes a wrong pair
        if (ocr < st.form_ocr_min and "form_ocr_min" not in off) or len(k.text) < 2:
            continue
        conf = 1 / (1 + np.exp(-(strength - 1.0)))
        ticked = TICKED.search(v.text)
        pairs.append(Pair(key=k.text, value=ticked.group(1) if ticked else v.text, key_box=k.box, value_box=v.box,
                          score=round(float(conf * ocr), 4), page=page.index))
    pairs.sort(key=lambda p: (p.key_box[1], p.key_box[0]) if p.key_box else (0.0, 0.0))
    return pairs
