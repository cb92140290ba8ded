"""Document schemas are data: one YAML file per document type in this folder.

A schema lists a document type's fields (stable English key, Chinese label, value type, the key
phrases printed before the value, validators), the fields of repeated item rows, and cross-field
rules (amount + tax = total, 大写 = 小写 ...). A new document type is added by dropping a YAML file
here, or by loading the user's own file with `load_schema_file(path)`; the loader checks the file
and says what to fix.

    >>> s = load_schema("vat_invoice")
    >>> s.field("invoice_code").key_phrases
    ['发票代码']
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from data.labels import LINE_LABELS
from data.validate import RULE_CHECKS, VALIDATORS

SCHEMA_DIR = Path(__file__).resolve().parent

FIELD_TYPES = ("text", "code", "number", "date", "date_range", "amount", "amount_words", "rate",
               "quantity", "decimal", "id_number", "credit_code", "tax_id", "enum")
# validators a type gets without listing them, so schema files stay short
DEFAULT_VALIDATORS = {
    "date": ["date"],
    "date_range": ["date_range"],
    "amount": ["amount"],
    "amount_words": ["amount_words"],
    "rate": ["rate"],
    "id_number": ["id_number"],
    "credit_code": ["credit_code"],
    "tax_id": ["tax_id"],
    "enum": ["enum"],
}


class SchemaError(ValueError):
    """A schema file is malformed; the message names the file, the place and the fix."""


@dataclass
class FieldSpec:
    key: str                       # stable English key, e.g. "invoice_code"
    label: str                     # Chinese label as printed, e.g. "发票代码"
    type: str = "text"             # one of FIELD_TYPES
    key_phrases: list[str] = field(default_factory=list)   # printed text that introduces the value
    validators: list[str] = field(default_factory=list)
    required: bool = False
    pattern: str | None = None     # regex over the normalised value (validator "pattern")
    choices: list[str] | None = None   # allowed values (type "enum")
    description: str = ""
    drop_suffix: str = ""          # printed after the value but no part of it (站 of 南京南站)
    masked_when_exempt: bool = False   # a tax amount printed as *** where the rate is 免税/不征税/0%: 0.00


@dataclass
class Rule:
    """A cross-field check; which attributes matter depends on `check` (see data/validate.py)."""
    check: str                     # sum | words_match | items_sum | item_product | date_order | id_birth | id_sex
    fields: list[str] = field(default_factory=list)
    equals: str | None = None
    words: str | None = None
    figure: str | None = None
    item_field: str | None = None
    message_zh: str = ""


@dataclass
class Schema:
    name: str                      # document type key, e.g. "vat_invoice"
    label: str                     # Chinese name, e.g. "增值税发票"
    title_phrases: list[str] = field(default_factory=list)   # titles that identify the type
    title_required: bool = False   # every real page of the type prints one of title_phrases
    description: str = ""
    fields: list[FieldSpec] = field(default_factory=list)
    item_fields: list[FieldSpec] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    line_labels: list[str] = field(default_factory=list)     # generic forms: XFUND line labels
    source: str = ""               # file it was loaded from

    def field(self, key: str) -> FieldSpec:
        for spec in self.fields + self.item_fields:
            if spec.key == key:
                return spec
        raise KeyError(f"schema {self.name!r} has no field {key!r}; it has "
                       f"{', '.join(self.keys())}")

    def keys(self) -> list[str]:
        return [f.key for f in self.fields]

    def item_keys(self) -> list[str]:
        return [f.key for f in self.item_fields]


# --- loading -----------------------------------------------------------------------------------------

_KEY_RE = re.compile(r"[a-z][a-z0-9_]*")


def _fail(where: str, message: str) -> None:
    raise SchemaError(f"{where}: {message}")


def _parse_field(raw: Any, where: str) -> FieldSpec:
    if not isinstance(raw, dict):
        _fail(where, "each field must be a mapping with at least `key` and `label`")
    unknown = set(raw) - {"key", "label", "type", "key_phrases", "validators", "required",
                          "pattern", "choices", "description", "drop_suffix", "masked_when_exempt"}
    if unknown:
        _fail(where, f"unknown setting(s) {sorted(unknown)}; allowed: key, label, type, key_phrases, "
                     "validators, required, pattern, choices, description, drop_suffix, masked_when_exempt")
    key = raw.get("key")
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        _fail(where, f"`key` must be lower_snake_case English (e.g. invoice_number), got {key!r}")
    where = f"{where} ({key})"
    label = raw.get("label")
    if not isinstance(label, str) or not label:
        _fail(where, "`label` (the Chinese name as printed) is required")
    ftype = raw.get("type", "text")
    if ftype not in FIELD_TYPES:
        _fail(where, f"`type` {ftype!r} is not one of {', '.join(FIELD_TYPES)}")
    phrases = raw.get("key_phrases", [label])
    if isinstance(phrases, str):
        phrases = [phrases]
    if not isinstance(phrases, list) or not all(isinstance(p, str) and p for p in phrases):
        _fail(where, "`key_phrases` must be a list of non-empty strings, e.g. [购买方名称, 名称]")
    validators = raw.get("validators")
    if validators is None:
        validators = list(DEFAULT_VALIDATORS.get(ftype, []))
    if isinstance(validators, str):
        validators = [validators]
    for v in validators:
        if v not in VALIDATORS:
            _fail(where, f"validator {v!r} is unknown; use one of {', '.join(VALIDATORS)}")
    pattern = raw.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            _fail(where, f"`pattern` is not a valid regular expression: {e}")
        if "pattern" not in validators:
            validators.append("pattern")
    elif "pattern" in validators:
        _fail(where, "validator `pattern` needs a `pattern:` regex")
    choices = raw.get("choices")
    if ftype == "enum" and not (isinstance(choices, list) and choices):
        _fail(where, "type `enum` needs a non-empty `choices:` list")
    suffix = raw.get("drop_suffix", "")
    if not isinstance(suffix, str):
        _fail(where, f"`drop_suffix` must be a string (e.g. 站), got {suffix!r}")
    masked = raw.get("masked_when_exempt", False)
    if not isinstance(masked, bool) or (masked and ftype != "amount"):
        _fail(where, "`masked_when_exempt: true` is for fields of type amount (a tax printed as *** on an "
                     "exempt invoice)")
    return FieldSpec(key=key, label=label, type=ftype, key_phrases=list(phrases),
                     validators=list(validators), required=bool(raw.get("required", False)),
                     pattern=pattern, choices=[str(c) for c in choices] if choices else None,
                     description=str(raw.get("description", "")), drop_suffix=suffix,
                     masked_when_exempt=masked)


def _parse_rule(raw: Any, where: str, keys: set[str], item_keys: set[str]) -> Rule:
    if not isinstance(raw, dict) or raw.get("check") not in RULE_CHECKS:
        _fail(where, f"each rule needs `check:` one of {', '.join(RULE_CHECKS)}")
    rule = Rule(check=raw["check"], fields=list(raw.get("fields", [])), equals=raw.get("equals"),
                words=raw.get("words"), figure=raw.get("figure"), item_field=raw.get("item_field"),
                message_zh=str(raw.get("message_zh", "")))
    needs = {"sum": ("fields", "equals"), "words_match": ("words", "figure"),
             "items_sum": ("item_field", "equals"), "item_product": ("fields", "equals"),
             "date_order": ("fields",), "id_birth": ("fields",), "id_sex": ("fields",)}[rule.check]
    for attr in needs:
        if not getattr(rule, attr):
            _fail(where, f"rule `{rule.check}` needs `{attr}:`")
    on_items = rule.check == "item_product"
    names = rule.fields + [n for n in (rule.equals, rule.words, rule.figure) if n]
    for name in names:
        if name not in (item_keys if on_items else keys):
            _fail(where, f"rule `{rule.check}` refers to unknown field {name!r}")
    if rule.item_field and rule.item_field not in item_keys:
        _fail(where, f"rule `{rule.check}` refers to unknown item field {rule.item_field!r}")
    return rule


def parse_schema(data: Any, source: str = "<memory>") -> Schema:
    """Build and check a Schema from an already-parsed YAML mapping."""
    if not isinstance(data, dict):
        _fail(source, "a schema file must be a YAML mapping with `name`, `label` and `fields`")
    name = data.get("name")
    if not isinstance(name, str) or not _KEY_RE.fullmatch(name):
        _fail(source, f"`name` must be lower_snake_case (e.g. vat_invoice), got {name!r}")
    label = data.get("label")
    if not isinstance(label, str) or not label:
        _fail(source, "`label` (the Chinese document name) is required")
    raw_fields = data.get("fields")
    if not isinstance(raw_fields, list) or (not raw_fields and not data.get("line_labels")):
        _fail(source, "`fields` must be a list of field mappings")
    fields = [_parse_field(f, f"{source} fields[{i}]") for i, f in enumerate(raw_fields)]
    items = [_parse_field(f, f"{source} items[{i}]") for i, f in enumerate(data.get("items") or [])]
    for group, specs in (("fields", fields), ("items", items)):
        seen: set[str] = set()
        for spec in specs:
            if spec.key in seen:
                _fail(source, f"{group} has the key {spec.key!r} twice; keys must be unique")
            seen.add(spec.key)
    keys, item_keys = {f.key for f in fields}, {f.key for f in items}
    rules = [_parse_rule(r, f"{source} rules[{i}]", keys, item_keys)
             for i, r in enumerate(data.get("rules") or [])]
    line_labels = list(data.get("line_labels") or [])
    for lab in line_labels:
        if lab not in LINE_LABELS:
            _fail(source, f"line label {lab!r} is not one of {', '.join(LINE_LABELS)}")
    unknown = set(data) - {"name", "label", "title_phrases", "title_required", "description", "fields",
                           "items", "rules", "line_labels"}
    if unknown:
        _fail(source, f"unknown top-level setting(s) {sorted(unknown)}")
    title_required = data.get("title_required", False)
    if not isinstance(title_required, bool):
        _fail(source, f"title_required must be true or false, got {title_required!r}")
    if title_required and not data.get("title_phrases"):
        _fail(source, "title_required is true but title_phrases is empty; list the titles the type prints")
    return Schema(name=name, label=label, title_phrases=list(data.get("title_phrases") or []),
                  title_required=title_required,
                  description=str(data.get("description", "")).strip(), fields=fields,
                  item_fields=items, rules=rules, line_labels=line_labels, source=source)


def load_schema_file(path: str | Path) -> Schema:
    """Load and check a user's schema YAML (a new document type)."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"{path}: no such schema file; pass the path of a .yaml file "
                          f"like those in {SCHEMA_DIR}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise SchemaError(f"{path}: not valid YAML ({e}); fix the syntax and reload") from None
    return parse_schema(data, str(path))


def list_schemas() -> list[str]:
    """Names of the bundled document types."""
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.yaml"))


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> Schema:
    """The bundled schema of a document type (cached; treat it as read-only)."""
    path = SCHEMA_DIR / f"{name}.yaml"
    if not path.is_file():
        raise SchemaError(f"unknown document type {name!r}; known: {', '.join(list_schemas())}. "
                          f"For a new type use load_schema_file(path).")
    schema = load_schema_file(path)
    if schema.name != name:
        raise SchemaError(f"{path}: `name` is {schema.name!r} but the file is {name}.yaml; make them equal")
    return schema
