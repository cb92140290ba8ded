"""Span-level rules for schema fields: which field a candidate is, and where its value starts and ends.

Each function maps one candidate `Span` (and its OCR line's text) to a corrected span, or says whether
it is key text; models/extraction/rules.py applies them in order over a page's candidates.
"""
from __future__ import annotations

import re
from typing import Any

from data.document import Page
from data.geometry import same_row
from data.labels import COLONS
from data.normalize import to_halfwidth
from data.validate import CREDIT_ALPHABET, is_valid_credit_code
from models.extraction.base import CODE_TYPES, TYPE_SHAPES, Span, clean, near, plausible
from models.extraction.doctype import title_evidence
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

_WORDS = "零壹贰叁肆伍陆柒捌玖拾佰仟万亿圆元角分整正参參貳陸圓"    # with the variants data/normalize.py reads
# 大写: also across one stray character, where OCR read 圆 as 回/国 (data/normalize.py reads it back)
GROW_SHAPES = {"date": TYPE_SHAPES["date"], "amount_words": rf"[{_WORDS}]+(?:[^\s:：{_WORDS}][{_WORDS}]+)?",
               **{t: r"[0-9A-Za-z]+" for t in CODE_TYPES}}


def grow_to_run(sp: Span, spec: Any, text: str) -> Span:
    """A code never ends inside a run of letters and digits: where the model's tags stopped short (15 of
    an 18-character tax ID, which still reads as an old 15-character one; 10 of a 12-digit invoice code)
    and the whole run reads as the field's type and pattern, the value is the whole run."""
    if spec.type not in CODE_TYPES:
        return sp
    a, b = sp.start, sp.end
    while a > 0 and text[a - 1].isascii() and text[a - 1].isalnum():
        a -= 1
    while b < len(text) and text[b].isascii() and text[b].isalnum():
        b += 1
    if (a, b) != (sp.start, sp.end) and text[a:b] != clean(text[sp.start:sp.end]) and plausible(spec, text[a:b]):
        return Span(sp.key, sp.line, a, b, sp.score, sp.alts)
    return sp


def credit_code_repair(value: str) -> str | None:
    """An 18-character credit code with exactly one character GB 32100 never prints (I, O, S, V, Z: OCR's
    reading of a seal's edge or a look-alike) has that character fixed by its check character: of the 31
    symbols exactly one makes the code check, the weights being invertible mod 31. None when that is
    not the case (none or several such characters, or another length)."""
    bad = [i for i, ch in enumerate(value) if ch not in CREDIT_ALPHABET]
    if len(value) != 18 or len(bad) != 1:
        return None
    fits = [value[:bad[0]] + c + value[bad[0] + 1:] for c in CREDIT_ALPHABET]
    fits = [v for v in fits if is_valid_credit_code(v)]
    return fits[0] if len(fits) == 1 else None


def trim_to_type(sp: Span, spec: Any, text: str) -> Span:
    """Fit a span that does not read as its type: grow it to the whole value around it in its
    colon segment (a long number OCR cut with a space, a date the model found only part of), else
    shrink it to the part that reads as the type (the first match of the type's shape or pattern)."""
    raw = clean(text[sp.start:sp.end])
    # a date cut inside its day (2025-05-2|113:05:18, a time glued on) reads as a date too: dates grow
    if plausible(spec, raw) and spec.type not in ("amount_words", "date"):
        return sp
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    after = next((i for i in range(sp.end, len(text)) if text[i] in COLONS), len(text))
    seg = text[before + 1:after]
    if spec.type in CODE_TYPES and seg.strip() and plausible(spec, re.sub(r"\s+", "", seg)):
        lead = len(seg) - len(seg.lstrip())      # 校验码：1001432002 3319800000
        return Span(sp.key, sp.line, before + 1 + lead, before + 1 + len(seg.rstrip()), sp.score, sp.alts)
    grow = GROW_SHAPES.get(spec.type)
    for m in re.finditer(grow, seg) if grow else ():
        s0, e0 = before + 1 + m.start(), before + 1 + m.end()
        if s0 < sp.end and sp.start < e0 and plausible(spec, m.group()) and len(m.group()) >= len(raw):
            return Span(sp.key, sp.line, s0, e0, sp.score, sp.alts)
    if plausible(spec, raw):        # 大写 that reads as it is and has no longer reading around it
        return sp
    if spec.type in CODE_TYPES and raw.isalnum():
        return sp      # a clean run of letters and digits is the value as read, even off-pattern
    shape = spec.pattern if spec.pattern and spec.type == "code" else TYPE_SHAPES.get(spec.type)
    if not shape:
        return sp
    for m in re.finditer(shape, text[sp.start:sp.end]):
        if plausible(spec, m.group()):
            return Span(sp.key, sp.line, sp.start + m.start(), sp.start + m.end(), sp.score, sp.alts)
    return sp


def rekey_by_phrase(sp: Span, text: str, phrases: dict[str, list[str]], st: DecodeSettings = DEFAULT_SETTINGS) -> Span:
    """When the text before the value's colon is a key phrase of some fields and the model named
    another, the value takes the one of those fields the model gave most mass (纳税人识别号：… read
    as the seller's address becomes the seller's tax ID, not the buyer's)."""
    colon = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    if colon < 0:
        return sp
    key_text = re.sub(r"\s+", "", text[:colon])
    owners = [k for k, phs in phrases.items() if any(ph and key_text.endswith(ph) for ph in phs)] or \
        [k for k, phs in phrases.items()       # a long key misread in one character (纳税人只别号)
         if any(len(ph) >= st.rekey_misread_min and near(key_text[-len(ph):], ph) for ph in phs)]
    return rekey_to(sp, owners)


def rekey_to(sp: Span, owners: list[str]) -> Span:
    """The span under the one of `owners` (the fields a key names) it gave most mass, unless it already
    is one of them or no key named any."""
    if not owners or sp.key in owners:
        return sp
    best = max(owners, key=lambda k: sp.alts.get(k, 0.0))
    return Span(best, sp.line, sp.start, sp.end, sp.score, sp.alts)


def rekey_by_row(sp: Span, page: Page, phrases: dict[str, list[str]], st: DecodeSettings = DEFAULT_SETTINGS) -> Span:
    """A value alone on its OCR line, whose key stands as a separate line to its left on the same row
    (实收： ... 280.00 on a receipt), belongs to a field that key names: when the model named another
    field, the value takes the one of the key's fields it gave most mass."""
    line = page.lines[sp.line]
    if line.text[:sp.start].strip() or line.text[sp.end:].strip():
        return sp
    x0, y0, _, y1 = line.box
    h = max(1.0, y1 - y0)
    left = [m for m in page.lines if m is not line and same_row(m.box, line.box, line_height=h)
            and m.box[2] <= x0 + st.row_key_reach * h]
    if not left:
        return sp
    key_line = max(left, key=lambda m: m.box[2])
    # a key that waits for its value ends with a colon, or stands close: a label without a colon far to
    # the left is another column's (an e-invoice prints its labels above the values)
    if not key_line.text.rstrip().endswith(tuple(COLONS)) and x0 - key_line.box[2] > st.row_key_far * h:
        return sp
    key_text = re.sub(r"[\s:：]+", "", key_line.text)
    owners = [k for k, phs in phrases.items() if key_text and any(ph and key_text.endswith(ph) for ph in phs)]
    return rekey_to(sp, owners)


def is_key_text(sp: Span, text: str, phrases: list[str], st: DecodeSettings = DEFAULT_SETTINGS) -> bool:
    """Whether the span lies inside the key of a "key：value" (the text from the line start or the
    previous colon up to the next colon is some field's key phrase), or is itself a piece of a
    longer key phrase OCR cut off (统一社会信 of 统一社会信用代码): key text is never a value."""
    body = re.sub(r"\s+", "", clean(text[sp.start:sp.end]))
    if len(body) >= st.key_piece_min and any(len(ph) > len(body) and body in ph for ph in phrases):
        return True
    # a long key OCR misread in one character (纳税人识刷) is still key text
    if len(body) >= st.key_misread_min and any(near(body, ph[j:j + len(body)]) for ph in phrases
                              for j in range(len(ph) - len(body) + 1)):
        return True
    # ... and a line that is a long key (8+ characters) misread in several: two thirds of the key's
    # characters in order, the line no more than two longer (核一北会信期代码/的税人职别号)
    whole = re.sub(r"[\s:：]+", "", to_halfwidth(text))
    if body and body in whole and any(len(ph) >= st.long_key and abs(len(whole) - len(ph)) <= st.long_key_extra and
                                      title_evidence([ph], [whole]) >= st.long_key_share for ph in phrases):
        return True
    after = next((i for i in range(sp.end, len(text)) if text[i] in COLONS), None)
    if after is None:
        return False
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    key_text = re.sub(r"\s+", "", text[before + 1:after])
    return any(key_text.endswith(ph) or (len(ph) >= st.key_misread_min and near(key_text[-len(ph):], ph))
               for ph in phrases)


def strip_key_phrase(sp: Span, text: str, phrases: list[str]) -> Span:
    """A value that begins with its own key phrase (a span grown left over 开票人 on a line without a
    colon) starts after the phrase and any spaces or colon that follow it."""
    body = text[sp.start:sp.end]
    for ph in sorted(phrases, key=len, reverse=True):
        i, j = 0, 0      # match the phrase against the text, skipping spaces in the text
        while i < len(body) and j < len(ph) and (body[i] == ph[j] or body[i].isspace()):
            j += body[i] == ph[j]
            i += 1
        if ph and j == len(ph) and i < len(body):
            while i < len(body) and (body[i].isspace() or body[i] in COLONS):
                i += 1
            if i < len(body):
                return Span(sp.key, sp.line, sp.start + i, sp.end, sp.score, sp.alts)
    return sp


def to_segment_end(sp: Span, text: str, phrases: list[str]) -> Span:
    """Free text after its own key phrase (支付方式：微信支付) runs to the end of that colon segment:
    the model often stops a character or two early. Only when the text before the colon ends with one
    of the field's key phrases and nothing after the span looks like another cell (a wide gap, a colon)."""
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    if before < 0 or not phrases:
        return sp
    key = re.sub(r"\s+", "", text[:before])
    rest = text[sp.end:]
    if not any(key.endswith(ph) for ph in phrases) or not rest.strip() or any(c in COLONS for c in rest) \
            or re.search(r"\s{2,}", rest.rstrip()):
        return sp
    return Span(sp.key, sp.line, sp.start, len(text.rstrip()), sp.score, sp.alts)


def whole_line(sp: Span, text: str, others: list[Span], phrases: list[str]) -> Span:
    """A free-text value alone on its OCR line (a name under its stacked label: 白兰华) of which the
    model tagged at least half but not all is the whole line, when the line has no colon, no other
    field's value and no key phrase beside the value."""
    body = text.strip()
    lead = len(text) - len(text.lstrip())
    if not body or any(c in COLONS for c in text) or (sp.start, sp.end) == (lead, lead + len(body)) or \
            any(o.line == sp.line and o.key != sp.key for o in others):
        return sp
    rest = re.sub(r"\s+", "", text[:sp.start] + text[sp.end:])
    if 2 * len(re.sub(r"\s+", "", text[sp.start:sp.end])) < len(re.sub(r"\s+", "", body)) or \
            any(ph and ph in rest for ph in phrases):
        return sp
    return Span(sp.key, sp.line, lead, lead + len(body), sp.score, sp.alts)
