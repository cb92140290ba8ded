"""Totals from the arithmetic an invoice prints: sums, 大写 words beside figures, item rows, ID numbers.

Every rule reads the schema's `rules` (data/schemas/*.yaml: sum, words_match, items_sum, id_sex,
id_birth) and fills or corrects a field only when exactly one figure on the page fits.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from data.document import Field
from data.normalize import format_amount, format_amount_words, normalize_code, parse_amount, parse_amount_words
from data.text_distance import lcs_length
from data.validate import is_valid_id_number
from models.extraction.base import TYPE_SHAPES, PageContext, Span
from models.extraction.items import complete_item_rows

# the characters of 大写 words as invoices print them, with the variants data/normalize.py reads
WORD_CHARS = set("零壹贰叁肆伍陆柒捌玖拾佰仟万亿圆元角分整正参參貳陸圓")


# a money figure, with the ¥ PP-OCR reads as V, Y, N or X glued on (V924965.90): the shape of an amount that
# is not a piece of a code, looked at before the sign
FIGURE = re.compile(r"(?<![0-9A-Za-z.])[¥￥VYNX]?" + TYPE_SHAPES["amount"].replace("(?<![0-9A-Za-z.])", "", 1))


def _rules(ctx: PageContext, *checks: str) -> list[Any]:
    return [r for r in getattr(ctx.schema, "rules", []) if r.check in checks]


def _value_of(ctx: PageContext, key: str) -> Any:
    f = ctx.doc.fields.get(key)
    if f is None:
        return None
    # both types hold a decimal string once normalised (大写 words included)
    return parse_amount(f.value) if ctx.specs[key].type in ("amount", "amount_words") else None


def _fill(ctx: PageContext, key: str, want: Any) -> bool:
    """Fill amount field `key` with the one free money figure of the page equal to `want`."""
    doc, specs, figures = ctx.doc, ctx.specs, ctx.figures or []
    if key in doc.fields or key not in specs or specs[key].type != "amount" or want is None:
        return False
    fits = [(li, a, b) for v, li, a, b in figures if v == want]
    if len(fits) != 1:
        return False
    li, a, b = fits[0]
    doc.fields[key] = ctx.make_field(key, specs[key], Span(key, li, a, b, 0.5))
    figures[:] = [fg for fg in figures if fg[1:] != fits[0]]
    return True


def money_figures(ctx: PageContext) -> None:
    """Every money figure of the page (with a decimal point) that no field or item cell has taken."""
    doc, page = ctx.doc, ctx.page
    taken = [f.span for f in doc.fields.values() if f.span and f.page == page.index] + \
            [f.span for row in doc.items for f in row.values() if f.span and f.page == page.index]
    offsets = [sum(len(ln.text) + 1 for ln in page.lines[:i]) for i in range(len(page.lines))]
    ctx.figures = []
    for li, ln in enumerate(page.lines):
        for m in FIGURE.finditer(ln.text):
            value = parse_amount(m.group())
            a, b = offsets[li] + m.start(), offsets[li] + m.end()
            if value is not None and "." in m.group() and not any(t[0] < b and a < t[1] for t in taken):
                ctx.figures.append((value, li, m.start(), m.end()))


def fill_by_arithmetic(ctx: PageContext) -> None:
    """A total the model did not tag at all: the figure of 价税合计 equals its 大写 words; a missing
    term of 合计金额 + 合计税额 = 价税合计 is their difference; a missing 合计金额/税额 is the sum of the
    item rows. Filled only when exactly one free figure of the page has that exact value."""
    doc = ctx.doc
    for _ in range(3):       # one fill can make the next rule computable
        changed = False
        for rule in getattr(ctx.schema, "rules", []):
            if rule.check == "words_match" and rule.words and rule.figure:
                changed |= _fill(ctx, rule.figure, _value_of(ctx, rule.words))
            elif rule.check == "sum" and rule.equals:
                terms = list(rule.fields) + [rule.equals]
                missing = [k for k in terms if k not in doc.fields]
                known = {k: _value_of(ctx, k) for k in terms if k in doc.fields}
                if len(missing) != 1 or None in known.values():
                    continue
                parts = sum(v for k, v in known.items() if k != rule.equals)
                changed |= _fill(ctx, missing[0], parts if missing[0] == rule.equals else known[rule.equals] - parts)
            elif rule.check == "items_sum" and rule.equals and rule.item_field and doc.items:
                vals: list[Any] = [parse_amount(row[rule.item_field].value) for row in doc.items
                                   if rule.item_field in row]
                if vals and None not in vals and len(vals) == len(doc.items):
                    changed |= _fill(ctx, rule.equals, sum(vals))
        if not changed:
            break


def id_number_facts(ctx: PageContext) -> None:
    """An ID card's sex or birth date that OCR missed (a lone 男 is easy to miss) is printed inside a
    valid ID number too: taken from there, with no box of its own, and said in a warning."""
    doc, specs, page = ctx.doc, ctx.specs, ctx.page
    for rule in _rules(ctx, "id_sex", "id_birth"):
        if len(rule.fields) != 2:
            continue
        id_key, key = rule.fields
        if key in doc.fields or key not in specs or id_key not in doc.fields:
            continue
        number = normalize_code(doc.fields[id_key].value)
        if not is_valid_id_number(number):
            continue
        value = ("男" if int(number[16]) % 2 else "女") if rule.check == "id_sex" else \
            f"{number[6:10]}-{number[10:12]}-{number[12:14]}"
        doc.fields[key] = Field(key=key, value=value, raw="", score=round(0.5 * doc.fields[id_key].score, 4),
                                box=None, page=page.index, label=specs[key].label)
        doc.warnings.append(f"{specs[key].label} ({key}) was not read on the page; {value} is taken "
                            f"from {specs[id_key].label} ({id_key})")


def _page_figures(ctx: PageContext, zero: bool = False) -> dict[Any, list[tuple[int, int, int]]]:
    """Every positive money figure printed on the page (with a decimal point), taken by a field or item
    cell or not: value -> [(line, start, end)]; with `zero`, printed zeros (0.00) too."""
    out: dict[Any, list[tuple[int, int, int]]] = {}
    for li, ln in enumerate(ctx.page.lines):
        for m in FIGURE.finditer(ln.text):
            value = parse_amount(m.group())
            if value is not None and (value > 0 or zero and value == 0) and "." in m.group():
                out.setdefault(value, []).append((li, m.start(), m.end()))
    return out


def words_line(ctx: PageContext, value: Any) -> tuple[float, int]:
    """The OCR line that reads most like `value` written in 大写 words: (share of the words' characters
    found in order in it, line index); (0.0, -1) when no line has any. Independent evidence of a figure:
    the 大写 line is printed apart from the figures, and a misread 佰 or a dropped 角 leaves most of it."""
    words = format_amount_words(value)
    best, at = 0.0, -1
    for li, ln in enumerate(ctx.page.lines):
        body = "".join(ch for ch in ln.text if ch in WORD_CHARS)
        if body:
            share = lcs_length(words, body) / len(words)
            if share > best:
                best, at = share, li
    return best, at


def _place(ctx: PageContext, key: str, value: Any, spots: list[tuple[int, int, int]]) -> Field:
    """A field for `key` at one printed place of `value`: one no item cell holds, lowest on the page
    (totals are printed under the rows they sum)."""
    cells = [(f.span[0], f.span[1]) for row in ctx.doc.items for f in row.values()
             if f.span and f.page == ctx.page.index]
    offsets = [sum(len(ln.text) + 1 for ln in ctx.page.lines[:i]) for i in range(len(ctx.page.lines))]

    def in_cell(s: tuple[int, int, int]) -> bool:
        a, b = offsets[s[0]] + s[1], offsets[s[0]] + s[2]
        return any(c0 < b and a < c1 for c0, c1 in cells)
    li, a, b = max(spots, key=lambda s: (not in_cell(s), ctx.page.lines[s[0]].box[1]))
    return ctx.make_field(key, ctx.specs[key], Span(key, li, a, b, 0.5))


def totals_by_arithmetic(ctx: PageContext) -> None:
    """Totals that do not add up (合计金额 + 合计税额 != 价税合计, or one unreadable) are the printed figures
    that do: among every triple of the page's money figures with a + t = s, the one holding most of the
    figures the model chose for these totals (under any of the three keys: a model's 合计金额 taken for
    价税合计 still counts), with the 大写 line that reads as s (`words_line`) as one more; then the one
    keeping most of them in place; then a tax smaller than the amount it is levied on. A printed zero is a
    term too (a receipt's 找零 0.00: 合计 = 实收), its triple a + 0 = a counting a once. The best must hold
    at least `sum_keep` and be the only best. Each total changed says so in a warning."""
    doc, specs, st = ctx.doc, ctx.specs, ctx.settings
    for rule in _rules(ctx, "sum"):
        keys = list(rule.fields) + [rule.equals]
        if len(rule.fields) != 2 or any(specs.get(k) is None or specs[k].type != "amount" for k in keys) or \
                any(k in doc.fields and doc.fields[k].page != ctx.page.index for k in keys):
            continue
        cur = {k: _value_of(ctx, k) for k in keys}
        if None not in cur.values() and abs(cur[keys[0]] + cur[keys[1]] - cur[keys[2]]) <= Decimal("0.01"):
            continue
        figures = _page_figures(ctx, zero=True)
        words = next((r.words for r in _rules(ctx, "words_match") if r.figure == rule.equals and r.words), None)
        said = _value_of(ctx, words) if words else None
        chosen = {v for v in cur.values() if v is not None}      # a model's total given to the wrong key counts
        ranked = []
        for a in figures:
            for t in figures:
                s = a + t
                if s not in figures or a == 0:
                    continue
                exact = sum(cur[k] == v for k, v in zip(keys, (a, t, s)))
                keep = sum(v in chosen for v in ((a, t, s) if t else (a, t)))
                if words:
                    keep += said == s or words_line(ctx, s)[0] >= st.words_share
                ranked.append(((keep, exact, a > t), (a, t, s)))
        if not ranked:
            continue
        ranked.sort(key=lambda r: r[0], reverse=True)
        (keep, _, _), triple = ranked[0]
        if keep < st.sum_keep or (len(ranked) > 1 and ranked[1][0] == ranked[0][0]):
            continue
        for k, v in zip(keys, triple):
            if cur[k] != v:
                old = doc.fields[k].value if k in doc.fields else None
                doc.fields[k] = _place(ctx, k, v, figures[v])
                doc.warnings.append(f"{specs[k].label} ({k}): {old or 'not read'} -> {doc.fields[k].value}, the "
                                    f"figure with which {' + '.join(rule.fields)} = {rule.equals}")
        if ctx.cells and triple != tuple(cur[k] for k in keys):
            complete_item_rows(ctx)       # a figure a wrong total held may be the one its row misses


def _printed_words(ctx: PageContext, f: Field) -> bool:
    """Whether a words field reads as a well-formed amount of its own and is all the 大写 its line holds
    (陆角伍分 tagged out of 玖拾捌万零柒佰陆拾叁圆陆角伍分 is well-formed, but a piece)."""
    value = parse_amount_words(f.raw, ocr_tolerant=False)
    if value is None or format_amount_words(value) != re.sub(r"\s+", "", f.raw):
        return False
    if f.span is None:
        return True
    offsets = [sum(len(ln.text) + 1 for ln in ctx.page.lines[:i]) for i in range(len(ctx.page.lines) + 1)]
    li = max(i for i in range(len(ctx.page.lines)) if offsets[i] <= f.span[0])
    return sum(ch in WORD_CHARS for ch in ctx.page.lines[li].text) <= sum(ch in WORD_CHARS for ch in f.raw)


def words_by_arithmetic(ctx: PageContext) -> None:
    """大写 words OCR misread (教柒圳拾肆圆 for 柒佰捌拾肆圆), cut, or gave to another field, beside a figure the
    sum confirms (合计金额 + 合计税额 = 价税合计): the line that reads most like that figure in words, when
    `words_share` of its characters are there in order, is the words, and their value is the figure's.
    Words OCR read as a well-formed amount of their own are kept: the validator reports a mismatch."""
    doc, specs, st = ctx.doc, ctx.specs, ctx.settings
    for rule in _rules(ctx, "words_match"):
        fig, words = rule.figure, rule.words
        if not fig or not words or fig not in doc.fields or words not in specs or \
                doc.fields[fig].page != ctx.page.index:
            continue
        s = _value_of(ctx, fig)
        sums = [r for r in _rules(ctx, "sum") if r.equals == fig]
        if s is None or not sums or any(_value_of(ctx, k) is None for k in sums[0].fields) or \
                abs(sum(_value_of(ctx, k) for k in sums[0].fields) - s) > Decimal("0.01"):
            continue
        said = doc.fields.get(words)
        if said is not None and (_value_of(ctx, words) == s or said.page != ctx.page.index or
                                 _printed_words(ctx, said)):
            continue
        share, li = words_line(ctx, s)
        if share < st.words_share:
            continue
        text = ctx.page.lines[li].text
        at = [i for i, ch in enumerate(text) if ch in WORD_CHARS]
        old = said.value if said is not None else None
        f = ctx.make_field(words, specs[words], Span(words, li, at[0], at[-1] + 1, round(0.5 * share, 4)))
        f.value = format_amount(s)
        doc.fields[words] = f
        doc.warnings.append(f"{specs[words].label} ({words}): read {f.raw!r}{f' (taken as {old})' if old else ''}; "
                            f"{f.value}, the figure of {fig} its characters spell and the sum confirms")
