"""What the UI says to a person: check results and warnings in Chinese with English beside.

The validators (data/validate.py) and the pipeline write warnings for logs and JSON: English after a
slash, with field keys such as `invoice_number`, regular expressions and `items[0].amount`. A clerk
reading the page needs the field's printed name and the reason in words, so the UI rewrites them
here; the JSON and CSV exports keep the original warnings unchanged.

Why a field failed is not worked out again here: `validate` stores the code of the check it failed in
`Field.reason` (data/validate.py REASON_CODES), and `reason_words` only turns that code into words, with the
schema's own parameters (a pattern's digits, an enum's values, a rule's message).
"""
from __future__ import annotations

import re
from typing import Any

from data import validate as checks
from data.document import Document, Field

VALIDATOR_WORDS: dict[str, tuple[str, str]] = {
    "id_number": ("身份证号校验位或出生日期不对", "ID number check digit or birth date is wrong"),
    "credit_code": ("统一社会信用代码校验位不对", "credit code check character is wrong"),
    "tax_id": ("不是有效的纳税人识别号（18位信用代码，或15位、20位）", "not a valid taxpayer ID"),
    "date": ("不是可识别的日期（1900–2100年）", "not a readable date between 1900 and 2100"),
    "date_not_future": ("日期无法识别或晚于今天", "date is unreadable or in the future"),
    "amount": ("不是可识别的金额", "not a readable amount"),
    "amount_words": ("不是可识别的大写金额", "not readable as an amount in words"),
    "pattern": ("格式不符", "not in the expected format"),
    "enum": ("不在可选值之中", "not one of the allowed values"),
    "date_range": ("有效期无法识别", "not a readable validity period"),
    "rate": ("不是可识别的税率（如13%、免税、不征税）", "not a readable tax rate (13%, 免税, 不征税)"),
}
MASKED_TAXED = ("印为***，但税率不是免税、不征税或0%", "printed as *** but the tax rate is a taxed one")
EXEMPT_TAXED = ("免税或零税率的税额应为零", "the rate is exempt but a tax is printed")
RULE_WORDS: dict[str, tuple[str, str]] = {
    "sum": ("金额之和不等于合计", "the amounts do not add up to the total"),
    "words_match": ("大写金额与小写不符", "the amount in words differs from the figure"),
    "items_sum": ("明细金额之和不等于合计", "the line items do not add up to the total"),
    "item_product": ("数量乘单价不等于金额", "quantity × unit price is not the amount"),
    "date_order": ("日期先后顺序不对", "the dates are in the wrong order"),
    "id_birth": ("出生日期与身份证号不符", "the birth date differs from the ID number"),
    "id_sex": ("性别与身份证号不符", "the sex differs from the ID number"),
}
PASSED, NO_RULE, NOT_FOUND = "✓ 通过 passed", "— 无校验 no rule", "— 未识别 not found"
REVIEW = "⚠ 请核对 low confidence, check it"     # Field.review without a failed check (data/validate.py)


def load_schema_or_none(doc_type: str | None, model_dir: str | None = None) -> Any:
    """The schema of `doc_type` as the model that read the document carries it (models/model_dir.py
    `model_schema`: MODEL/schemas/, else the repo's), None when there is none."""
    if not doc_type:
        return None
    try:
        from models.model_dir import model_schema
        return model_schema(model_dir, doc_type)
    except Exception:   # a type without a readable schema: show fields as they are, nothing to check
        return None


def _schema(doc_type: str | None) -> Any:
    return load_schema_or_none(doc_type)


def pattern_words(pattern: str | None) -> tuple[str, str]:
    """A digits-only pattern in words ("\\d{10}|\\d{12}" -> 应为10位或12位数字); other patterns as
    "格式不符", never the expression itself."""
    counts = [re.fullmatch(r"\\d\{(\d+)\}", part) for part in (pattern or "").split("|")]
    if counts and all(counts):
        n = [m.group(1) for m in counts if m]
        return f"应为{'位或'.join(n)}位数字", f"should be {' or '.join(n)} digits"
    return VALIDATOR_WORDS["pattern"]


def _rule_keys(rule: Any) -> list[str]:
    return list(rule.fields) + [k for k in (rule.equals, rule.words, rule.figure) if k]


def reason_words(code: str | None, schema: Any, key: str, item: bool = False) -> tuple[str, str] | None:
    """(zh, en) of a stored reason (`Field.reason`, a data/validate.py REASON_CODES entry) of field `key`
    (an item column where `item`); None for no code or one this version does not know. The schema gives the
    wording's parameters: the field's pattern and choices, the failed rule's own Chinese message."""
    if code == checks.MASKED_TAXED:
        return MASKED_TAXED
    if code == checks.EXEMPT_TAXED:
        return EXEMPT_TAXED
    specs = (schema.item_fields if item else schema.fields) if schema is not None else []
    spec = next((s for s in specs if s.key == key), None)
    if code == "pattern":
        return pattern_words(spec.pattern if spec is not None else None)
    if code == "enum" and spec is not None and spec.choices:
        return f"应为{'、'.join(spec.choices)}之一", f"should be one of {', '.join(spec.choices)}"
    if code in VALIDATOR_WORDS:
        return VALIDATOR_WORDS[code]
    if code in RULE_WORDS:
        zh, en = RULE_WORDS[code]
        rule = next((r for r in (schema.rules if schema is not None else [])
                     if r.check == code and key in _rule_keys(r)), None)
        return (rule.message_zh if rule is not None and rule.message_zh else zh), en
    return None


def check_words(doc: Document, key: str, field: Field | None, item_key: str | None = None) -> str:
    """The check cell of a field's row: passed, no rule, not found, or ✗ with the reason in Chinese
    (and English) when the field failed a check."""
    if field is None:
        return NOT_FOUND
    if field.valid is not False and field.review:
        return REVIEW
    if field.valid is None:
        return NO_RULE
    if field.valid:
        return PASSED
    reason = reason_words(field.reason, _schema(doc.doc_type), item_key or key, item_key is not None)
    zh, en = reason or ("校验未通过", "check failed")
    return f"✗ {zh} / {en}"


# --- warnings -----------------------------------------------------------------------------------------

_PIPELINE = [
    (re.compile(r"^page (\d+): almost no text was found"),
     lambda m, s: f"第{m[1]}页几乎没有文字：如果该页有字，请以更高分辨率重新扫描 / page {m[1]}: almost no text "
                  "was found; if it has text, scan it again at a higher resolution"),
    (re.compile(r"^page (\d+) reads poorly \(mean OCR confidence ([\d.]+)\)"),
     lambda m, s: f"第{m[1]}页识别质量差（平均置信度 {m[2]}），请对照原件核对，或以更高分辨率重新扫描 / page {m[1]} "
                  f"reads poorly (mean confidence {m[2]}): check the values against the page, or scan it again"),
    (re.compile(r"^page (\d+) of (\d+) was skipped as blank"),
     lambda m, s: f"第{m[1]}页（共{m[2]}页）是空白页，已跳过 / page {m[1]} of {m[2]} was skipped as blank"),
    (re.compile(r"^no extraction model is installed"),
     lambda m, s: "未安装字段抽取模型，只显示OCR文字 / no extraction model is installed: only the OCR text is shown"),
    (re.compile(r"^the file holds (\d+) documents"),
     lambda m, s: f"该文件包含{m[1]}份文档，每份从自己的页面识别 / the file holds {m[1]} documents, each read "
                  "from its own page(s)"),
    (re.compile(r"^(.+?) \((\w+)\) read as (.*): taken as the words for (\w+) (\S+), which differ from it in "
                r"(\d+) character"),
     lambda m, s: f"{m[1]}识别为“{m[3]}”，与{_label(s, m[4])} {m[5]} 相差{m[6]}个字，已按其改正 / {m[1]} was read "
                  f"as “{m[3]}” and corrected to match {_label(s, m[4])} {m[5]}"),
    (re.compile(r"^(.+?) \((\w+)\) was not read on the page; (.*) is taken from (.+?) \((\w+)\)$"),
     lambda m, s: f"页面上未识别到{m[1]}，{m[3]} 取自{m[4]} / {m[1]} was not read on the page; {m[3]} is "
                  f"taken from {m[4]}"),
]


def _label(schema: Any, key: str) -> str:
    try:
        return str(schema.field(key).label) if schema is not None else key
    except KeyError:
        return key


def _check_warning(warning: str, doc: Document, schema: Any) -> str | None:
    """A validator warning ("中文 / english with keys (raw)") as Chinese + English without keys."""
    if " / " not in warning or schema is None:
        return None
    zh = warning.split(" / ", 1)[0].strip()
    m = re.match(r"^(.*)格式不正确 / (items\[(\d+)\]\.)?(\w+): ", warning)
    if m:
        label, row, key = m[1], m[3], m[4]
        where = f"第{int(row) + 1}行明细" if row is not None else ""
        field = doc.items[int(row)].get(key) if row is not None and int(row) < len(doc.items) else \
            doc.fields.get(key)
        reason = check_words(doc, key, field, item_key=key if row is not None else None)
        if reason.startswith("✗ "):
            return f"{where}{label}：{reason[2:]}"
        specs = schema.item_fields if row is not None else schema.fields     # a warning of no document field:
        spec = next((s for s in specs if s.key == key), None)                 # its validator from its words
        said = reason_words(checks.failed_validator(warning, spec), schema, key, row is not None) \
            if spec is not None else None
        zh_reason, en_reason = said or ("格式不正确", "not in the expected format")
        return f"{where}{label}：{zh_reason} / {en_reason}"
    m = re.match(r"^(.+?)印为\*\*\*，但税率不是免税、不征税或0% / (items\[(\d+)\]\.)?\w+: ", warning)
    if m:
        where = f"第{int(m[3]) + 1}行明细" if m[3] is not None else ""
        return f"{where}{m[1]}{MASKED_TAXED[0]} / {MASKED_TAXED[1]}"
    m = re.match(r"^免税或零税率明细的(.+?)应为零 / items\[(\d+)\]", warning)
    if m:
        return f"第{int(m[2]) + 1}行明细：{EXEMPT_TAXED[0]} / {EXEMPT_TAXED[1]}"
    m = re.match(r"^缺少(.+) / missing ", warning)
    if m:
        return f"缺少{m[1]} / {m[1]} is missing"
    for rule in schema.rules:
        rzh, ren = RULE_WORDS.get(rule.check, ("", ""))
        if zh in (rule.message_zh, rzh):
            row = re.search(r"items\[(\d+)\]", warning)
            where = f"第{int(row[1]) + 1}行明细：" if row else ""
            return f"{where}{zh} / {ren}"
    return None


def warning_words(warning: str, doc: Document) -> str:
    """One warning of `doc` as the UI shows it: Chinese first, English beside, no keys or regexes."""
    schema = _schema(doc.doc_type)
    for pattern, words in _PIPELINE:
        m = pattern.match(warning)
        if m:
            return words(m, schema)
    said = _check_warning(warning, doc, schema)
    if said:
        return said
    return re.sub(r"\s*\((\w+_\w+)\)", "", warning)     # at least no "(field_key)" in what is shown


ERROR_WORDS = {
    "InputError": "无法作为文档读取 / The file could not be used as a document.",
    "UnreadableFile": "文件无法读取 / The file could not be read.",
}


def error_words(error: dict[str, str]) -> str:
    lead = ERROR_WORDS.get(error.get("type", ""), "此文档处理失败 / This document could not be processed.")
    return f"{lead} {error.get('message', '')}".strip()
