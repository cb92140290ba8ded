"""Totals from the arithmetic an invoice prints: sums, 大写 words beside figures, item rows, ID numbers.

Every rule reads the schema's `rules` (data/schemas/*.yaml: sum, words_match, items_sum, id_sex,
id_birth) and fills or corrects a field only when exactly one figure on the page fits.
"""
from __future__ import annotations

import re
from typing import Any

from data.document import Field
from data.normalize import format_amount_words, normalize_code, normalize_value, parse_amount
from data.validate import is_valid_id_number
from models.extraction.base import TYPE_SHAPES, PageContext, Span, clean
from models.ocr_eval import edit_distance


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


def complete_sums(ctx: PageContext) -> None:
    """A sum rule (合计金额 + 合计税额 = 价税合计) with one term missing takes the one unused amount
    candidate that makes it hold: the model found the figure but gave it to a neighbouring field.
    Nothing is filled when no candidate, or more than one, fits."""
    doc, page, specs = ctx.doc, ctx.page, ctx.specs
    spare = [s for s in ctx.header if (s.line, s.start) not in ctx.used]
    for rule in _rules(ctx, "sum"):
        if not rule.equals:
            continue
        terms = list(rule.fields) + [rule.equals]
        missing = [k for k in terms if k not in doc.fields and k in specs]
        if len(missing) != 1 or specs[missing[0]].type != "amount":
            continue
        known: dict[str, Any] = {k: parse_amount(doc.fields[k].value) for k in terms if k in doc.fields}
        if None in known.values():
            continue
        gap = sum(v for k, v in known.items() if k != rule.equals) - known[rule.equals] \
            if rule.equals in known else None
        fits = []
        for sp in spare:
            value = parse_amount(clean(page.lines[sp.line].text[sp.start:sp.end]).lstrip("¥￥"))
            if value is None:
                continue
            if (gap is not None and value == -gap) or \
                    (gap is None and value == sum(known.values())):
                fits.append(sp)
        if len(fits) == 1:
            sp = fits[0]
            doc.fields[missing[0]] = ctx.make_field(missing[0], specs[missing[0]],
                                                    Span(missing[0], sp.line, sp.start, sp.end, sp.score))


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


def total_from_terms(ctx: PageContext) -> None:
    """A total the sum contradicts (价税合计 read as 2.00 beside ￥10493960.17): when the terms add up to
    exactly one free figure on the page and the 大写 words do not stand by the value taken, that
    figure is the total."""
    doc, specs = ctx.doc, ctx.specs
    for rule in _rules(ctx, "sum"):
        if not rule.equals or rule.equals not in doc.fields or \
                specs.get(rule.equals) is None or specs[rule.equals].type != "amount":
            continue
        parts: list[Any] = [_value_of(ctx, k) if k in doc.fields else None for k in rule.fields]
        total = _value_of(ctx, rule.equals)
        if not parts or None in parts or total is None or sum(parts) == total:
            continue
        words = [_value_of(ctx, r.words) for r in ctx.schema.rules
                 if r.check == "words_match" and r.figure == rule.equals and r.words in doc.fields]
        if total in words:
            continue
        old = doc.fields.pop(rule.equals)
        if not _fill(ctx, rule.equals, sum(parts)):
            doc.fields[rule.equals] = old


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


def words_misread(ctx: PageContext) -> None:
    """大写 words OCR misread (贰拾贰万壹仟叁佰参拾壹圆柒角攻分): when they are within one character in
    eight of the words for the 小写 figure printed beside them, they say that figure."""
    doc = ctx.doc
    for rule in _rules(ctx, "words_match"):
        if rule.words not in doc.fields or rule.figure not in doc.fields:
            continue
        words, figure = doc.fields[rule.words], _value_of(ctx, rule.figure)
        if figure is None or figure < 0:
            continue
        said = parse_amount(words.value)
        # words that read as another amount are taken for a misreading only when the figure is
        # borne out by the invoice's sum (合计金额 + 合计税额 = 价税合计): then OCR, not the invoice, erred
        terms: list[list[Any]] = [[_value_of(ctx, k) if k in doc.fields else None for k in r.fields]
                                  for r in ctx.schema.rules if r.check == "sum" and r.equals == rule.figure]
        summed = [t for t in terms if t and None not in t and sum(t) == figure]
        if said is not None and (said == figure or not summed):
            continue
        read = re.sub(r"[\s⊗ⓧ×Ⓧ⨂()（）]|人民币", "", words.raw)
        expected = format_amount_words(figure)
        off = edit_distance(read, expected) if read else len(expected)
        if off <= max(1, len(expected) // ctx.settings.words_misread_per):
            words.value = normalize_value("amount", str(figure)) or str(figure)
            doc.warnings.append(f"{words.label} ({rule.words}) read as {words.raw}: taken as the words for "
                                f"{rule.figure} {figure}, which differ from it in {off} character(s)")


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
