"""Totals from the arithmetic an invoice prints: sums, 大写 words beside figures, item rows, ID numbers.

Every rule reads the schema's `rules` (data/schemas/*.yaml: sum, words_match, items_sum, id_sex,
id_birth) and fills or corrects a field only when exactly one figure on the page fits.
"""
from __future__ import annotations

import re
from typing import Any

from data.document import Field
from data.normalize import normalize_code, parse_amount
from data.validate import is_valid_id_number
from models.extraction.base import TYPE_SHAPES, PageContext, Span


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
        for m in re.finditer(r"[¥￥VYNX]?" + TYPE_SHAPES["amount"], ln.text):
            value = parse_amount(m.group())
            a, b = offsets[li] + m.start(), offsets[li] + m.end()
            if value is not None and "." in m.group() and not any(t[0] < b and a < t[1] for t in taken):
                ctx.figures.append((value, li, m.start(), m.end()))


def figure_from_words(ctx: PageContext) -> None:
    """The 小写 figure given to a term of the sum: when it equals the 大写 words and the figure they
    match is missing, it is that figure (the term is then found by the sum)."""
    doc, specs = ctx.doc, ctx.specs
    for rule in _rules(ctx, "words_match"):
        if rule.figure and rule.figure not in doc.fields and rule.words:
            words = _value_of(ctx, rule.words)
            sums = [r for r in ctx.schema.rules if r.check == "sum" and r.equals == rule.figure]
            for term in (k for r in sums for k in r.fields):
                if words is not None and _value_of(ctx, term) == words and specs.get(term) and \
                        specs[term].type == "amount":
                    f = doc.fields.pop(term)
                    doc.fields[rule.figure] = Field(**{**f.__dict__, "key": rule.figure,
                                                       "label": specs[rule.figure].label})
                    break


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
