"""Validators for Chinese document fields, `validate_fields` which applies a schema's rules, and
`validate(document, schema)`: the one call the extractor and the UI (after every edit) make.

Check characters:
- resident ID number, GB 11643-1999: 17 digits weighted by 2^(17-i) mod 11, check = (12 - sum mod 11)
  mod 11, where 10 is written X.
- unified social credit code, GB 32100-2015: 17 characters over a 31-symbol alphabet (digits and
  capitals without I, O, Z, S, V) weighted by 3^i mod 31, check = 31 - sum mod 31 (31 -> 0).
  Characters 9-17 embed the organisation code of GB 11714 with its own check character.
Older tax IDs (15-digit, and 20-digit ID-number based) are accepted by format only: they carry no
check character we can verify.
"""
from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from data.document import Document, Field
from data.normalize import (
    is_masked,
    normalize_code,
    normalize_rate,
    normalize_value,
    parse_amount,
    parse_amount_words,
    parse_date,
    rate_is_zero,
)

if TYPE_CHECKING:  # the schema module imports nothing from here; keep the type for hints only
    from data.schemas import Schema

# --- GB 11643 resident ID ----------------------------------------------------------------------------

_ID_WEIGHTS = [pow(2, 17 - i, 11) for i in range(17)]   # 7 9 10 5 8 4 2 1 6 3 7 9 10 5 8 4 2


def id_check_char(first17: str) -> str:
    """The GB 11643 check character for 17 digits."""
    if not re.fullmatch(r"\d{17}", first17):
        raise ValueError(f"need 17 digits to compute an ID check character, got {first17!r}")
    total = sum(int(c) * w for c, w in zip(first17, _ID_WEIGHTS))
    check = (12 - total % 11) % 11
    return "X" if check == 10 else str(check)


def is_valid_id_number(text: str, today: _dt.date | None = None) -> bool:
    """18-character resident ID: region code, a real birth date not in the future, check character."""
    s = normalize_code(text)
    if not re.fullmatch(r"[1-9]\d{16}[\dX]", s):
        return False
    birth = parse_date(s[6:14])
    if birth is None or birth.year < 1880 or birth > (today or _dt.date.today()):
        return False
    return id_check_char(s[:17]) == s[17]


# --- GB 32100 unified social credit code -----------------------------------------------------------

CREDIT_ALPHABET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
_CREDIT_VALUE = {c: i for i, c in enumerate(CREDIT_ALPHABET)}
_CREDIT_WEIGHTS = [pow(3, i, 31) for i in range(17)]    # 1 3 9 27 19 26 16 17 20 29 25 13 8 24 10 30 28
_ORG_WEIGHTS = [3, 7, 9, 10, 5, 8, 4, 2]


def credit_check_char(first17: str) -> str:
    """The GB 32100 check character for the first 17 characters of a credit code."""
    if len(first17) != 17 or any(c not in _CREDIT_VALUE for c in first17):
        raise ValueError(f"need 17 characters of {CREDIT_ALPHABET} to compute a credit-code check "
                         f"character, got {first17!r}")
    total = sum(_CREDIT_VALUE[c] * w for c, w in zip(first17, _CREDIT_WEIGHTS))
    return CREDIT_ALPHABET[(31 - total % 31) % 31]


def org_code_check_char(first8: str) -> str:
    """The GB 11714 organisation-code check character for 8 digits/capitals (X stands for 10)."""
    if not re.fullmatch(r"[0-9A-Z]{8}", first8):
        raise ValueError(f"need 8 digits or capitals for an organisation code, got {first8!r}")
    total = sum((int(c) if c.isdigit() else ord(c) - 55) * w for c, w in zip(first8, _ORG_WEIGHTS))
    check = 11 - total % 11
    return {10: "X", 11: "0"}.get(check, str(check))


def is_valid_credit_code(text: str) -> bool:
    """18-character unified social credit code with a correct GB 32100 check character."""
    s = normalize_code(text)
    if not re.fullmatch(rf"[{CREDIT_ALPHABET}]{{18}}", s):
        return False
    return credit_check_char(s[:17]) == s[17]


def is_valid_tax_id(text: str) -> bool:
    """A taxpayer ID as printed on invoices: an 18-character credit code (checked), or an older
    15-digit or 20-character tax registration number (format only)."""
    s = normalize_code(text)
    if len(s) == 18:
        return is_valid_credit_code(s)
    if len(s) == 15:
        return bool(re.fullmatch(r"\d{6}[0-9A-Z]{9}", s))
    if len(s) == 20:
        return bool(re.fullmatch(r"\d{17}[\dX][0-9A-Z]{2}", s))
    return False


# --- arithmetic and dates ---------------------------------------------------------------------------

def amounts_add_up(parts: list[str], total: str, tolerance: Decimal = Decimal("0.01")) -> bool | None:
    """sum(parts) == total within `tolerance` (one cent: invoices round tax per line).
    None when any figure is unreadable, so a missing value is not reported as wrong arithmetic."""
    values = [parse_amount(p) for p in parts]
    t = parse_amount(total)
    known = [v for v in values if v is not None]
    if t is None or len(known) < len(values):
        return None
    return abs(sum(known, Decimal(0)) - t) <= tolerance


def words_match_figure(words: str, figure: str) -> bool | None:
    """大写 words equal the figure to the cent; None when either is unreadable."""
    w, f = parse_amount_words(words), parse_amount(figure)
    if w is None or f is None:
        return None
    return w == f.quantize(Decimal("0.01"))


def is_sane_date(text: str, not_future: bool = False, today: _dt.date | None = None,
                 earliest: int = 1900) -> bool:
    d = parse_date(text)
    if d is None or d.year < earliest or d.year > 2100:
        return False
    return not (not_future and d > (today or _dt.date.today()))


# --- schema-driven validation ---------------------------------------------------------------------

VALIDATORS = ("id_number", "credit_code", "tax_id", "date", "date_not_future", "amount",
              "amount_words", "pattern", "enum", "date_range", "rate")
RULE_CHECKS = ("sum", "words_match", "items_sum", "item_product", "date_order", "id_birth", "id_sex")
MASKED_TAXED = "masked_taxed"    # an amount printed as *** where the rate is a taxed one
EXEMPT_TAXED = "exempt_taxed"    # a tax other than zero on an item line whose rate is exempt
# What `Field.reason` holds after `validate`: the code of the first check a value failed, as data for the
# UI (app/ui/words.py words it; the parameters, a pattern or the allowed values, are the schema field's):
# a validator name (the value itself is wrong), a cross-field rule check (it disagrees with other fields;
# every field of the failed rule gets it) or one of the two *** codes above.
REASON_CODES = VALIDATORS + RULE_CHECKS + (MASKED_TAXED, EXEMPT_TAXED)

# The English reason each validator's warning gives ("{label}格式不正确 / {key}: {reason} ({raw})"); {pattern}
# and {choices} are the schema field's. The UI reads a warning's validator back from it (`failed_validator`).
VALIDATOR_REASONS: dict[str, str] = {
    "id_number": "ID number check digit or birth date is wrong",
    "credit_code": "credit code check character is wrong",
    "tax_id": "not a valid taxpayer ID (18-char credit code, 15 or 20 chars)",
    "date": "not a readable date between 1900 and 2100",
    "date_not_future": "date is unreadable or in the future",
    "amount": "not a readable amount",
    "amount_words": "not readable as 大写金额",
    "pattern": "does not match the expected format {pattern}",
    "enum": "is not one of {choices}",
    "date_range": "not a readable validity period",
    "rate": "not a readable tax rate (13%, 免税, 不征税)",
}


def validator_reason(validator: str, spec: Any) -> str:
    """The English reason of `validator` failing on schema field `spec`, as its warning says it."""
    return VALIDATOR_REASONS[validator].format(pattern=spec.pattern, choices=", ".join(spec.choices or []))


def failed_validator(warning: str, spec: Any) -> str | None:
    """Which of `spec`'s validators a "格式不正确" warning of `validate_fields` reports (its code), read from
    the warning's own words: the check is not run again. None for another warning."""
    for name in spec.validators:
        if name in VALIDATOR_REASONS and f": {validator_reason(name, spec)} (" in warning:
            return name
    return None


def _passes(validator: str, spec: Any, raw: str, today: _dt.date | None) -> bool:
    """Whether one named validator accepts one raw value."""
    if validator == "id_number":
        return is_valid_id_number(raw, today)
    if validator == "credit_code":
        return is_valid_credit_code(raw)
    if validator == "tax_id":
        return is_valid_tax_id(raw)
    if validator == "date":
        return is_sane_date(raw, today=today)
    if validator == "date_not_future":
        return is_sane_date(raw, not_future=True, today=today)
    if validator == "amount":
        return parse_amount(raw) is not None
    if validator == "amount_words":
        return parse_amount_words(raw) is not None
    if validator == "pattern":
        return bool(spec.pattern and re.fullmatch(spec.pattern, normalize_value(spec.type, raw) or ""))
    if validator == "enum":
        return (normalize_value(spec.type, raw) or "") in (spec.choices or [])
    if validator == "date_range":
        return normalize_value("date_range", raw) is not None
    if validator == "rate":
        return normalize_rate(raw) is not None
    raise ValueError(f"unknown validator {validator!r}; known: {', '.join(VALIDATORS)}")


def _value_text(v: Any) -> str | None:
    """Accept plain strings or Field-like objects/dicts carrying `value`/`raw`."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return v.get("raw") or v.get("value")
    return getattr(v, "raw", None) or getattr(v, "value", None)


def validate_fields(schema: "Schema", values: dict[str, Any], today: _dt.date | None = None
                    ) -> tuple[dict[str, bool | None], list[str]]:
    """`check_fields` without the reasons: ({key: True | False | None}, warnings)."""
    result, warnings, _ = check_fields(schema, values, today)
    return result, warnings


def check_fields(schema: "Schema", values: dict[str, Any], today: _dt.date | None = None
                 ) -> tuple[dict[str, bool | None], list[str], dict[str, str]]:
    """Check each value against its field's validators and the schema's cross-field rules.

    `values` maps field keys to text (raw or normalised; Field objects or dicts with value/raw work
    too); an optional "items" entry holds a list of {item_key: text} rows.
    Returns ({key: True | False | None}, warnings, {key: reason code}): None where no rule applies or the
    value is missing; item fields appear as "items[i].key". Warnings are short Chinese + English sentences
    for logs and exports; the reason code (REASON_CODES) of each False key is the first check it failed,
    as data for whoever words it.
    A tax-exempt invoice prints 税额 as ***: on a field marked `masked_when_exempt` that is valid where the
    rate is 免税/不征税/0% (`_exempt_masks`), wrong where it is a taxed rate, and 0.00 in the sums.
    """
    result: dict[str, bool | None] = {}
    warnings: list[str] = []
    reasons: dict[str, str] = {}
    flat = {k: _value_text(v) for k, v in values.items() if k != "items"}
    rows = [{k: _value_text(v) for k, v in r.items()} for r in values.get("items") or []]
    masks, zero_rows = _exempt_masks(schema, flat, rows)

    def check(key: str, spec: Any, raw: str | None) -> None:
        if raw is None or not str(raw).strip():
            result[key] = None
            if spec.required:
                warnings.append(f"缺少{spec.label} / missing {key}")
            return
        if key in masks:
            result[key] = masks[key]
            if masks[key] is False:
                reasons.setdefault(key, MASKED_TAXED)
                warnings.append(f"{spec.label}印为***，但税率不是免税、不征税或0% / {key}: printed as *** but "
                                f"the tax rate is not exempt ({raw})")
            return
        if not spec.validators:
            result[key] = None
            return
        ok_all = True
        for name in spec.validators:
            if not _passes(name, spec, str(raw), today):
                ok_all = False
                reasons.setdefault(key, name)
                warnings.append(f"{spec.label}格式不正确 / {key}: {validator_reason(name, spec)} ({raw})")
        result[key] = ok_all

    for spec in schema.fields:
        check(spec.key, spec, flat.get(spec.key))
    for i, row in enumerate(rows):
        for spec in schema.item_fields:
            check(item_result_key(i, spec.key), spec, row.get(spec.key))
            tax = parse_amount(row.get(spec.key) or "") if spec.masked_when_exempt and zero_rows[i] else None
            if tax:                      # a figure other than zero on a 免税 / 0% line
                result[item_result_key(i, spec.key)] = False
                reasons.setdefault(item_result_key(i, spec.key), EXEMPT_TAXED)
                warnings.append(f"免税或零税率明细的{spec.label}应为零 / {item_result_key(i, spec.key)}: the tax "
                                f"rate is exempt but the tax is {row.get(spec.key)}")

    # a mask that is not known to be wrong counts as 0.00 in the arithmetic, which then confirms it or not
    for key, zero in masks.items():
        if zero is not False:
            m = _ITEM_KEY.fullmatch(key)
            if m:
                rows[int(m.group(1))][m.group(2)] = "0.00"
            else:
                flat[key] = "0.00"
    for rule in schema.rules:
        _apply_rule(rule, flat, rows, result, warnings, reasons)
    return result, warnings, reasons


def _exempt_masks(schema: "Schema", flat: dict[str, str | None], rows: list[dict[str, str | None]]
                  ) -> tuple[dict[str, bool | None], list[bool | None]]:
    """What the rates say of the amounts printed as *** (fields marked `masked_when_exempt`: 税额 and
    合计税额), by result key, and of each item row (`rate_is_zero` of its rate).

    An item's *** is right (True) where its row's rate is 免税/不征税/0% and wrong (False) where the rate
    reads as a taxed one; a document field's *** is right where every readable item rate is exempt and
    wrong where one is not. None where no rate can be read: the mask then counts as 0.00 and the sums
    (amount + tax = total, items = totals) decide."""
    rate_keys = [spec.key for spec in schema.item_fields if spec.type == "rate"]

    def all_zero(flags: list[bool | None]) -> bool | None:
        known = [f for f in flags if f is not None]
        return all(known) if known else None

    zero_rows = [all_zero([rate_is_zero(row.get(k)) for k in rate_keys]) for row in rows]
    masks: dict[str, bool | None] = {}
    for i, row in enumerate(rows):
        for spec in schema.item_fields:
            if spec.masked_when_exempt and is_masked(row.get(spec.key)):
                masks[item_result_key(i, spec.key)] = zero_rows[i]
    for spec in schema.fields:
        if spec.masked_when_exempt and is_masked(flat.get(spec.key)):
            masks[spec.key] = all_zero(zero_rows)
    return masks, zero_rows


def item_result_key(row: int, key: str) -> str:
    """How `validate_fields` names an item cell in its result: "items[<row>].<key>"."""
    return f"items[{row}].{key}"


_ITEM_KEY = re.compile(r"items\[(\d+)\]\.(\w+)")       # item_result_key, read back


def field_text(f: Field) -> str:
    """What the validators read of a field: the text as printed (`raw`), else the normalised value. A
    大写金额 must be checked as its words, never as the figure it normalises to; a date as printed."""
    return f.raw or f.value


# A value read with less confidence than this is flagged for review (Field.review) even where no check failed
# or none applies. Two scales, each with its threshold: the model's own softmax probability (a model directory
# without a calibration) and the calibrated P(right) of models/calibration.py (`Field.model_score` set).
# bench.review_bench, held-out layouts through real OCR: for the softmax, 0.7 was the largest threshold that
# flagged at most one right field in ten on seed 6161 and flagged 10.1% on seed 7272; 0.6 flags 7-10% of the
# right fields, but few wrong ones (8-43%): the model reads most of its errors at 0.95-1.00.
REVIEW_THRESHOLD = 0.6
# For the calibrated confidence, fitted on seeds 5151 and 5252: 0.95 was the largest threshold flagging at
# most one right field in ten on those rows (9.6%, and 70% of the wrong ones); on seed 8383, which the fit
# never saw, it flags 8.0% of the right fields and 71% of the wrong ones, where the softmax at 0.6 flagged
# 10.0% and 43%.
CALIBRATED_REVIEW_THRESHOLD = 0.95


def review_threshold(f: Field) -> float:
    """The threshold of the field's confidence: CALIBRATED_REVIEW_THRESHOLD for a calibrated one
    (`model_score` kept beside it), else REVIEW_THRESHOLD (the model's own probability; a typed value's 1.0)."""
    return CALIBRATED_REVIEW_THRESHOLD if f.model_score is not None else REVIEW_THRESHOLD


def needs_review(f: Field) -> bool:
    """Whether a person should look at a field: a check failed, or its confidence is below its
    `review_threshold`, whether or not a check applies to it."""
    return f.valid is False or f.score < review_threshold(f)


def straight_through(document: Document) -> bool:
    """Whether nothing in `document` asks for a person's look: it was read (no error) and has fields, every
    field and item cell is valid or has no check and none is under review (`needs_review`), and no check
    failed on the document as a whole (a missing required field, a sum that does not add up)."""
    cells = list(document.fields.values()) + [f for row in document.items for f in row.values()]
    return (document.error is None and bool(document.fields) and not document.checks
            and not any(needs_review(f) for f in cells))


def validate(document: Document, schema: "Schema | None", today: _dt.date | None = None) -> list[str]:
    """Check a document against its schema from scratch; returns the validator's warnings.

    Every field's and item cell's `valid` is set anew (None where no rule applies, and for every field
    when `schema` is None: a generic form or an unknown type has nothing to check), its `reason` (the code
    of the first check it failed, REASON_CODES; None unless `valid` is False), and its `review`: a
    failed check or a confidence below its threshold (`needs_review`), where a person should look. The warnings of the
    previous call (`document.checks`) leave `document.warnings` and this call's join them, so a value
    fixed after extraction takes its warning with it; other warnings (pipeline, decoding) stay.
    `document.straight_through` is set anew (`straight_through`)."""
    result: dict[str, bool | None] = {}
    warnings: list[str] = []
    reasons: dict[str, str] = {}
    if schema is not None:
        values: dict[str, Any] = {k: field_text(f) for k, f in document.fields.items()}
        values["items"] = [{k: field_text(f) for k, f in row.items()} for row in document.items]
        result, warnings, reasons = check_fields(schema, values, today)
    for key, f in document.fields.items():
        f.valid = result.get(key)
        f.reason = reasons.get(key) if f.valid is False else None
        f.review = needs_review(f)
    for i, row in enumerate(document.items):
        for key, f in row.items():
            f.valid = result.get(item_result_key(i, key))
            f.reason = reasons.get(item_result_key(i, key)) if f.valid is False else None
            f.review = needs_review(f)
    stale = list(document.checks)
    kept = []
    for w in document.warnings:
        if w in stale:
            stale.remove(w)          # each old check once: an equal warning from elsewhere stays
        else:
            kept.append(w)
    document.warnings = kept + warnings
    document.checks = list(warnings)
    document.straight_through = straight_through(document)
    return warnings


def _mark(result: dict[str, bool | None], keys: list[str], ok: bool, reasons: dict[str, str], check: str
          ) -> None:
    """A failed cross-field rule makes every field in it False (its reason the rule's check, unless an
    earlier check already failed it); a passed one leaves them unchanged or raises None to True (the rule
    is the only check on e.g. a total)."""
    for k in keys:
        if not ok:
            result[k] = False
            reasons.setdefault(k, check)
        elif result.get(k) is None:
            result[k] = True


def _apply_rule(rule: Any, flat: dict[str, str | None], rows: list[dict[str, str | None]],
                result: dict[str, bool | None], warnings: list[str], reasons: dict[str, str]) -> None:
    if rule.check == "sum":
        maybe = [flat.get(k) for k in rule.fields]
        total = flat.get(rule.equals)
        parts = [p for p in maybe if p is not None]
        if total is None or len(parts) < len(maybe):
            return
        ok = amounts_add_up(parts, total)
        if ok is None:
            return
        _mark(result, rule.fields + [rule.equals], ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '金额之和不等于合计'} / "
                            f"{' + '.join(rule.fields)} != {rule.equals} ({' + '.join(parts)} != {total})")
    elif rule.check == "words_match":
        words, figure = flat.get(rule.words), flat.get(rule.figure)
        if words is None or figure is None:
            return
        ok = words_match_figure(words, figure)
        if ok is None:
            return
        _mark(result, [rule.words, rule.figure], ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '大写金额与小写不符'} / {rule.words} does not match "
                            f"{rule.figure} ({words} vs {figure})")
    elif rule.check == "items_sum":
        total = flat.get(rule.equals)
        if not rows or total is None:
            return
        cells = [r.get(rule.item_field) for r in rows]
        items = [c for c in cells if c is not None]
        if len(items) < len(cells):
            return
        ok = amounts_add_up(items, total, tolerance=Decimal("0.01") * len(items))
        if ok is None:
            return
        _mark(result, [rule.equals], ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '明细金额之和不等于合计'} / sum of items.{rule.item_field} "
                            f"!= {rule.equals}")
    elif rule.check == "item_product":
        # quantity * unit_price == amount per row; unit prices are printed with many decimals, so
        # allow a cent of rounding per row
        for i, r in enumerate(rows):
            q, p, a = (parse_amount(r.get(k) or "") for k in (rule.fields[0], rule.fields[1], rule.equals))
            if q is None or p is None or a is None:
                continue
            ok = abs(q * p - a) <= Decimal("0.01") + abs(q) * Decimal("0.000001")
            _mark(result, [item_result_key(i, rule.equals)], ok, reasons, rule.check)
            if not ok:
                warnings.append(f"{rule.message_zh or '数量乘单价不等于金额'} / items[{i}]: "
                                f"{q} x {p} != {a}")
    elif rule.check == "date_order":
        first, second = flat.get(rule.fields[0]), flat.get(rule.fields[1])
        da, db = parse_date(first or ""), parse_date(second or "")
        if da is None or db is None:
            return
        ok = da <= db
        _mark(result, rule.fields, ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '日期先后顺序不对'} / {rule.fields[0]} is after {rule.fields[1]}")
    elif rule.check == "id_birth":
        ok = id_birth_matches(flat.get(rule.fields[0]) or "", flat.get(rule.fields[1]) or "")
        if ok is None:
            return
        _mark(result, [rule.fields[1]], ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '出生日期与身份证号不符'} / {rule.fields[1]} does not "
                            f"match the birth date inside {rule.fields[0]}")
    elif rule.check == "id_sex":
        ok = id_sex_matches(flat.get(rule.fields[0]) or "", flat.get(rule.fields[1]) or "")
        if ok is None:
            return
        _mark(result, [rule.fields[1]], ok, reasons, rule.check)
        if not ok:
            warnings.append(f"{rule.message_zh or '性别与身份证号不符'} / {rule.fields[1]} does not "
                            f"match the sex digit of {rule.fields[0]}")
    else:
        raise ValueError(f"unknown rule check {rule.check!r}; known: {', '.join(RULE_CHECKS)}")


def id_sex_matches(id_number: str, sex: str) -> bool | None:
    """The 17th digit of an ID number is odd for 男 and even for 女."""
    s = normalize_code(id_number)
    sex = sex.strip()
    if len(s) != 18 or not s[16].isdigit() or sex not in ("男", "女"):
        return None
    return (int(s[16]) % 2 == 1) == (sex == "男")


def id_birth_matches(id_number: str, birth_date: str) -> bool | None:
    """Whether the birth date inside an ID number equals a printed birth date."""
    s = normalize_code(id_number)
    d = parse_date(birth_date)
    if len(s) != 18 or d is None:
        return None
    return s[6:14] == d.strftime("%Y%m%d")
