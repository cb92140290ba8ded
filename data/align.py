"""Find where a known field value sits in OCR text: normalised, fuzzy, digit-aware, and aware of
how documents print a value and which key phrase introduces it.

Used to label real OCR output of generated pages (we know each field's value, OCR decides how the
lines are cut and what characters come out) and by importers that get images plus a table of values.

The match is an approximate substring search (Sellers' edit distance with a free start and end in
the line) over *normalised* text: full-width forms to half-width, spaces dropped, upper case. A map
from each normalised character back to its position in the original line lets the span come back
in the line's own coordinates, so labels land on exactly the characters OCR emitted.

Substitution costs know OCR: a digit read as a look-alike letter (0/O, 1/l, 5/S, 8/B) is cheap, but a
digit read as another digit costs double, because in a tax ID or invoice number that is a different
value, and a nearly-right number on the wrong line must lose to the right one.

Three things a table of values does not say, and `align_fields` works out (measured on real PP-OCR
output of generated pages with bench/weak_label_bench.py):
- how the value is printed: tables hold normalised values (ISO dates, two-place amounts) while the
  page prints 2024年3月5日 or 2024/03/05, and a 价税合计（大写） field holds the figure its words spell;
  `printed_forms` lists the printed forms of a value and the best one wins;
- which copy is meant: the same figure is printed as 合计 and 实收 on a receipt, or as an item amount
  and the 合计 amount on an invoice; among near-equal matches the one closest to the field's key
  phrase (same line, then same row to its right, then below it) wins;
- where OCR cut the line: PP-OCR splits 电子发票（普通发票） at the bracket, so with line boxes given,
  two lines side by side on one row are also searched as one text (`Match.parts` then names both).
Every geometric test (rows with the page tilt taken out, below, a character's part of its line's box
by printed width) is data/geometry.py's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable

from data import geometry
from data.labels import COLONS
from data.normalize import format_amount_words, parse_amount, parse_date, to_halfwidth

# Glyph pairs OCR confuses; substituting within a group costs little.
LOOKALIKE_GROUPS = ["0OQD", "1LI|", "2Z", "5S", "6G", "8B", "9G", COLONS, "(（", ")）", "¥￥Y",
                    "-一—_", ".,·", "己已巳", "未末", "人入", "土士", "日曰", "干千于"]
_LOOKALIKE: dict[str, set[str]] = {}
for _group in LOOKALIKE_GROUPS:
    for _c in _group:
        _LOOKALIKE.setdefault(_c, set()).update(_group)

KEY_ROW = 0.6        # a value is on its key's row when the deskewed centres are this x line height apart ...
KEY_ROW_DRIFT = 0.07  # ... plus this share of the gap between them (tilt the page estimate left unmeasured)

CHEAP = 0.3      # look-alike substitution
DIGIT = 2.0      # one digit for another: a different number
# Matches this close to the best one are "the same value" and the key phrase decides between them.
# 0.05 lets two look-alike misreads through but never one wrong digit in a 20-digit number (0.10).
TIE_MARGIN = 0.05

Box = list[float]


@dataclass
class Match:
    line: int          # index of the line in the list searched (the first one when `parts` has more)
    start: int         # [start, end) character offsets into that line's original text
    end: int
    score: float       # 1 - cost / len(value), clipped to 0..1
    # (line, start, end) per line the value covers, in reading order; one entry for a one-line match.
    parts: list[tuple[int, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.parts:
            self.parts = [(self.line, self.start, self.end)]


@dataclass(frozen=True)
class FieldHint:
    """What a schema says about a field that helps find it: its type and the phrases printed before it."""
    type: str | None = "text"       # None: guess the type from the value's shape (ISO dates)
    key_phrases: tuple[str, ...] = ()


def hints_from_schema(schema: Any) -> dict[str, FieldHint]:
    """{key: FieldHint} from a data.schemas Schema (header fields and item fields)."""
    out = {}
    for spec in list(schema.fields) + list(schema.item_fields):
        out[spec.key] = FieldHint(spec.type, tuple(spec.key_phrases))
    return out


def normalise_with_map(text: str) -> tuple[str, list[int]]:
    """(normalised text, original index of each normalised character)."""
    out, where = [], []
    for i, ch in enumerate(text):
        h = to_halfwidth(ch)
        if h.isspace():
            continue
        out.append(h.upper())
        where.append(i)
    return "".join(out), where


# --- printed forms ----------------------------------------------------------------------------------

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CN_NUM = "〇一二三四五六七八九"


def _cn_small(n: int) -> str:
    if n < 10:
        return _CN_NUM[n]
    tens, ones = divmod(n, 10)
    return ("" if tens == 1 else _CN_NUM[tens]) + "十" + (_CN_NUM[ones] if ones else "")


def _date_forms(value: str) -> list[str]:
    d = parse_date(value)
    if d is None:
        return []
    y, m, dd = d.year, d.month, d.day
    forms = []
    for mm, ds in ((f"{m:02d}", f"{dd:02d}"), (str(m), str(dd))):
        forms += [f"{y}年{mm}月{ds}日", f"{y}-{mm}-{ds}", f"{y}/{mm}/{ds}", f"{y}.{mm}.{ds}"]
    forms.append(f"{y}{m:02d}{dd:02d}")
    forms.append("".join(_CN_NUM[int(c)] for c in str(y)) + f"年{_cn_small(m)}月{_cn_small(dd)}日")
    return forms


def _amount_forms(value: str) -> list[str]:
    a = parse_amount(value)
    if a is None:
        return []
    two = f"{a.quantize(Decimal('0.01'))}"
    return [two, f"{a.quantize(Decimal('0.01')):,}"]


def printed_forms(value: str, field_type: str | None = None) -> list[str]:
    """The ways a document may print `value`: the value itself first, then forms its type allows
    (dates in 年月日 and separator styles, amounts with thousands commas, 大写 words for amount_words).
    Without a type, an ISO date is still recognised by its shape."""
    value = value.strip()
    forms = [value]
    if field_type in ("date",) or (field_type in (None, "text") and _ISO_DATE.fullmatch(value)):
        forms += _date_forms(value)
    elif field_type == "amount" and parse_amount(value) is not None:
        forms += _amount_forms(value)
    elif field_type == "amount_words":
        a = parse_amount(value)
        if a is not None:
            # the table may hold the figure the words spell; the words are what is printed
            forms = [format_amount_words(a)]
    seen: dict[str, None] = {}
    for f in forms:
        seen.setdefault(f)
    return list(seen)


# --- fuzzy substring ----------------------------------------------------------------------------------

def _sub_cost(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if b in _LOOKALIKE.get(a, ()):
        return CHEAP
    if a.isdigit() and b.isdigit():
        return DIGIT
    return 1.0


def _cost_floor(pattern: str, text: str) -> float:
    """A lower bound of best_substring's cost, cheap to compute: every pattern character with no
    equal or look-alike character anywhere in the text costs at least 1 (substituted or deleted)."""
    chars = set(text)
    floor = 0.0
    for c in pattern:
        if c not in chars and not (_LOOKALIKE.get(c, set()) & chars):
            floor += 1.0
    return floor


def best_substring(pattern: str, text: str) -> tuple[float, int, int]:
    """(cost, start, end) of the substring of `text` closest to `pattern` by weighted edit distance.

    Sellers' algorithm: row 0 is all zeros so a match may start anywhere; the best cell of the
    last row is where it ends. The start is carried along each cell's best path.
    """
    n = len(text)
    prev = [0.0] * (n + 1)
    start = list(range(n + 1))
    for i, pc in enumerate(pattern, 1):
        cur = [float(i)] + [0.0] * n
        cur_start = [0] * (n + 1)
        for j in range(1, n + 1):
            sub = prev[j - 1] + _sub_cost(pc, text[j - 1])
            dele = prev[j] + 1.0          # pattern char missing from the text
            ins = cur[j - 1] + 1.0        # extra char in the text
            if sub <= dele and sub <= ins:
                cur[j], cur_start[j] = sub, start[j - 1]
            elif dele <= ins:
                cur[j], cur_start[j] = dele, start[j]
            else:
                cur[j], cur_start[j] = ins, cur_start[j - 1]
        prev, start = cur, cur_start
    end = min(range(n + 1), key=lambda j: (prev[j], -(j - start[j])))
    return prev[end], start[end], end


def _best_form(forms: list[str], text: str, min_score: float) -> tuple[float, int, int] | None:
    """(score, start, end) in normalised `text` of the best-matching form, or None below min_score."""
    best = None
    for form in forms:
        pattern, _ = normalise_with_map(form)
        if not pattern or not text:
            continue
        if 1.0 - _cost_floor(pattern, text) / len(pattern) < min(min_score, 1.0) - 1e-9:
            continue
        cost, s, e = best_substring(pattern, text)
        if e <= s:
            continue
        score = max(0.0, 1.0 - cost / len(pattern))
        if best is None or (score, -(e - s)) > (best[0], -(best[2] - best[1])):
            best = (score, s, e)
    if best is None or best[0] < min_score - 1e-9:
        return None
    return best


def align_value(value: str, lines: list[str], min_score: float = 0.75,
                prefer: int | None = None, field_type: str | None = None) -> Match | None:
    """The best place for `value` among `lines`, or None when nothing is close enough.

    `prefer` (a line index, e.g. where the value sat before OCR) breaks ties towards that line;
    `field_type` (a schema type) adds the value's other printed forms (see `printed_forms`).
    """
    forms = printed_forms(value, field_type)
    best: Match | None = None
    best_key = None
    for li, line in enumerate(lines):
        norm, where = normalise_with_map(line)
        hit = _best_form(forms, norm, min_score)
        if hit is None:
            continue
        score, s, e = hit
        key = (score, li == prefer, -(e - s))
        if best_key is None or key > best_key:
            best_key = key
            best = Match(li, where[s], where[e - 1] + 1, round(score, 4))
    return best


# --- several fields on one page ---------------------------------------------------------------------

@dataclass
class _Text:
    """A searchable text: one line, or lines side by side on a row joined without a separator."""
    lines: list[int]
    norm: str
    where: list[tuple[int, int]]     # (line, original offset) of each normalised character


def _texts(lines: list[str], boxes: list[Box] | None, max_gap: float = 1.5, tilt: float = 0.0) -> list[_Text]:
    out = []
    for li, line in enumerate(lines):
        norm, where = normalise_with_map(line)
        out.append(_Text([li], norm, [(li, w) for w in where]))
    if boxes:
        for a in range(len(lines)):
            for b in range(len(lines)):
                if a != b and geometry.continues_right(boxes[a], boxes[b], tilt, max_gap):
                    ta, tb = out[a], out[b]
                    out.append(_Text([a, b], ta.norm + tb.norm, ta.where + tb.where))
    return out


def _match_from(t: _Text, score: float, s: int, e: int) -> Match:
    parts: list[tuple[int, int, int]] = []
    for li, off in t.where[s:e]:
        if parts and parts[-1][0] == li:
            parts[-1] = (li, parts[-1][1], off + 1)
        else:
            parts.append((li, off, off + 1))
    li, start, end = parts[0]
    return Match(li, start, end, round(score, 4), parts)


def _key_spots(phrases: Iterable[str], lines: list[str], boxes: list[Box] | None, tilt: float = 0.0
               ) -> list[tuple[int, int, int]]:
    """(line, start, end) of every printed key phrase (normalised, exact). A letter-spaced label
    that OCR read as two lines (合 / 计) is found too, placed on its first line."""
    texts = _texts(lines, boxes, max_gap=6.0, tilt=tilt)
    spots = set()
    for phrase in phrases:
        pat, _ = normalise_with_map(phrase)
        if not pat:
            continue
        for t in texts:
            for m in re.finditer(re.escape(pat), t.norm):
                li, s = t.where[m.start()]
                e = t.where[m.end() - 1][1] + 1 if t.where[m.end() - 1][0] == li else len(lines[li])
                spots.add((li, s, e))
    return sorted(spots)


def _distance(m: Match, spots: list[tuple[int, int, int]], lines: list[str],
              boxes: list[Box] | None, tilt: float = 0.0) -> float:
    """How far the match sits from the nearest key phrase, in line heights; smaller is closer.
    Same line after the key < same row to its right < below it < anywhere else."""
    best = float("inf")
    li, s, _ = m.parts[0]
    for kl, ks, ke in spots:
        if kl == li and ke <= s:
            return 0.0
        if boxes is None:
            best = min(best, 10.0 + abs(kl - li))
            continue
        kb = geometry.char_box(boxes[kl], lines[kl], ks, ke)
        vb = geometry.char_box(boxes[li], lines[li], s, m.parts[0][2])
        h = min(geometry.height(kb), geometry.height(vb))
        gap = vb[0] - kb[2]
        # the key's row continued to the value's x along the page's tilt (rows of a receipt photo
        # 5 degrees off level climb a full row height in 230 px); what tilt is left unmeasured moves
        # a far value up or down by a share of its distance, so the row widens with the gap
        dy = geometry.row_offset(kb, vb, tilt)
        row_tol = KEY_ROW + KEY_ROW_DRIFT * max(0.0, gap) / h
        if gap >= -h and geometry.same_row(kb, vb, tilt, row_tol, line_height=h):  # same row, to the right
            d = 1.0 + dy / h + max(0.0, gap) / h / 50.0
        elif geometry.under(kb, vb, tilt):                                          # value below the key
            d = 3.0 + geometry.gap_below(kb, vb, tilt) / h
        else:
            dx = max(0.0, kb[0] - vb[2], vb[0] - kb[2])
            dy = max(0.0, kb[1] - vb[3], vb[1] - kb[3])
            d = 10.0 + (dx * dx + dy * dy) ** 0.5 / h
        best = min(best, d)
    return best


def _candidates(forms: list[str], texts: list[_Text], masked_norm: list[str], min_score: float
                ) -> list[Match]:
    out = []
    for t, norm in zip(texts, masked_norm):
        hit = _best_form(forms, norm, min_score)
        if hit is None:
            continue
        m = _match_from(t, *hit)
        if len(t.lines) > 1 and len(m.parts) < 2:
            continue               # the one-line text already holds this match
        out.append(m)
    return out


def align_fields(values: dict[str, str], lines: list[str], min_score: float = 0.75,
                 boxes: list[Box] | None = None, hints: dict[str, FieldHint] | None = None,
                 tilt: float = 0.0) -> dict[str, Match]:
    """Align several values; longer values first, and two fields never claim overlapping characters.

    `boxes` (one [x0, y0, x1, y1] per line) lets a value run across two lines OCR cut apart and ranks
    copies of a value by their place next to the key phrase; `hints` ({key: FieldHint}, see
    `hints_from_schema`) gives each field's type (for its printed forms) and key phrases; `tilt`
    (`data.geometry.page_slope`) is the slope of the page's text rows, so a key and its value far to the right
    on a photographed page still count as one row.
    """
    hints = hints or {}
    texts = _texts(lines, boxes, tilt=tilt)
    taken: set[tuple[int, int]] = set()        # (line, original offset) already labelled
    out: dict[str, Match] = {}
    for key in sorted(values, key=lambda k: -len(values[k] or "")):
        value = values[key]
        if not value or not value.strip():
            continue
        hint = hints.get(key, FieldHint(type=None))   # type None: guess ISO dates by shape
        forms = printed_forms(value, hint.type)
        masked = ["".join("\u0000" if w in taken else c for c, w in zip(t.norm, t.where)) for t in texts]
        cands = _candidates(forms, texts, masked, min_score)
        if not cands:
            continue
        top = max(c.score for c in cands)
        near = [c for c in cands if c.score >= top - TIE_MARGIN]
        if len(near) > 1 and hint.key_phrases:
            spots = _key_spots(hint.key_phrases, lines, boxes, tilt)
            near.sort(key=lambda c: (_distance(c, spots, lines, boxes, tilt), -c.score, len(c.parts)))
        else:
            near.sort(key=lambda c: (-c.score, len(c.parts), c.end - c.start))
        m = near[0]
        out[key] = m
        for li, s, e in m.parts:
            taken.update((li, i) for i in range(s, e))
    return out
