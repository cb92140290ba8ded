"""Find where a known field value sits in OCR text: normalised, fuzzy and digit-aware.

Used to label real OCR output of generated pages (we know each field's value, OCR decides how the
lines are cut and what characters come out) and by importers that get images plus a table of values.

The match is an approximate substring search (Sellers' edit distance with a free start and end in
the line) over *normalised* text: full-width forms to half-width, spaces dropped, upper case. A map
from each normalised character back to its position in the original line lets the span come back
in the line's own coordinates, so labels land on exactly the characters OCR emitted.

Substitution costs know OCR: a digit read as a look-alike letter (0/O, 1/l, 5/S, 8/B) is cheap, but a
digit read as another digit costs double, because in a tax ID or invoice number that is a different
value, and a nearly-right number on the wrong line must lose to the right one.
"""
from __future__ import annotations

from dataclasses import dataclass

from data.normalize import to_halfwidth

# Glyph pairs OCR confuses; substituting within a group costs little.
LOOKALIKE_GROUPS = ["0OQD", "1LI|", "2Z", "5S", "6G", "8B", "9G", ":：", "(（", ")）", "¥￥Y",
                    "-一—_", ".,·", "己已巳", "未末", "人入", "土士", "日曰", "干千于"]
_LOOKALIKE = {}
for _group in LOOKALIKE_GROUPS:
    for _c in _group:
        _LOOKALIKE.setdefault(_c, set()).update(_group)

CHEAP = 0.3      # look-alike substitution
DIGIT = 2.0      # one digit for another: a different number


@dataclass
class Match:
    line: int          # index of the line in the list searched
    start: int         # [start, end) character offsets into that line's original text
    end: int
    score: float       # 1 - cost / len(value), clipped to 0..1


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


def _sub_cost(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if b in _LOOKALIKE.get(a, ()):
        return CHEAP
    if a.isdigit() and b.isdigit():
        return DIGIT
    return 1.0


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


def align_value(value: str, lines: list[str], min_score: float = 0.75,
                prefer: int | None = None) -> Match | None:
    """The best place for `value` among `lines`, or None when nothing is close enough.

    `prefer` (a line index, e.g. where the value sat before OCR) breaks ties towards that line.
    """
    pattern, _ = normalise_with_map(value)
    if not pattern:
        return None
    best: Match | None = None
    best_key = None
    for li, line in enumerate(lines):
        norm, where = normalise_with_map(line)
        if not norm:
            continue
        cost, s, e = best_substring(pattern, norm)
        if e <= s:
            continue
        score = max(0.0, 1.0 - cost / len(pattern))
        key = (score, li == prefer, -(e - s))
        if best_key is None or key > best_key:
            best_key = key
            best = Match(li, where[s], where[e - 1] + 1, round(score, 4))
    if best is None or best.score < min_score:
        return None
    return best


def align_fields(values: dict[str, str], lines: list[str], min_score: float = 0.75
                 ) -> dict[str, Match]:
    """Align several values; longer values first, and two fields never claim overlapping characters."""
    taken: dict[int, list[tuple[int, int]]] = {}
    out: dict[str, Match] = {}
    for key in sorted(values, key=lambda k: -len(values[k] or "")):
        value = values[key]
        if not value:
            continue
        masked = list(lines)
        for li, spans in taken.items():
            chars = list(masked[li])
            for s, e in spans:
                for i in range(s, e):
                    chars[i] = "\u0000"   # never matches a pattern character
            masked[li] = "".join(chars)
        m = align_value(value, masked, min_score)
        if m is None:
            continue
        out[key] = m
        taken.setdefault(m.line, []).append((m.start, m.end))
    return out
