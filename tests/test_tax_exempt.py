"""Tax-exempt invoices: 税率 免税 / 不征税 / 0% and 税额 printed as *** are valid and add up as 0.00, while
*** on a taxed line and exempt invoices whose figures disagree are still flagged (issue 40, item 4)."""
from __future__ import annotations

import datetime as dt

import pytest

from data.document import Document, Field
from data.normalize import is_masked, normalize_rate, normalize_value, rate_is_zero
from data.schemas import SchemaError, load_schema, parse_schema
from data.validate import validate
from tests.test_validate import GOOD_INVOICE

TODAY = dt.date(2025, 1, 1)

# a paper VAT invoice for books sold tax-free: 税率 免税, 税额 *** on the lines and in the 合计 row
VAT_EXEMPT = {
    **{k: v for k, v in GOOD_INVOICE.items() if k != "items"},
    "title": "上海增值税普通发票", "buyer_name": "上海某科技有限公司", "seller_name": "上海某书店有限公司",
    "total_amount": "¥300.00", "total_tax": "***", "total_with_tax": "¥300.00",
    "total_with_tax_in_words": "⊗叁佰圆整",
}
VAT_ITEMS = [
    {"name": "*图书*算法导论", "quantity": "1", "unit_price": "100", "amount": "100.00", "tax_rate": "免税",
     "tax": "***"},
    {"name": "*图书*数据库系统", "quantity": "2", "unit_price": "100", "amount": "200.00", "tax_rate": "免税",
     "tax": "***"},
]

# a 数电票 for a prepaid card: 不征税, the asterisks full-width and spaced as OCR gives them
E_EXEMPT = {
    "title": "电子发票（普通发票）", "invoice_number": "24312000000012345678", "issue_date": "2024年06月01日",
    "buyer_name": "张三", "seller_name": "上海某商贸有限公司", "seller_tax_id": "91350100M000100Y43",
    "total_amount": "¥500.00", "total_tax": "* * *", "total_with_tax": "¥500.00",
    "total_with_tax_in_words": "伍佰圆整",
}
E_ITEMS = [{"name": "*预付卡销售*购物卡", "amount": "500.00", "tax_rate": "不征税", "tax": "＊＊＊"}]


def document(doc_type: str, fields: dict[str, str], items: list[dict[str, str]]) -> Document:
    """A Document as extraction leaves it: raw as printed, the value normalised where the type reads it."""
    schema = load_schema(doc_type)

    def field(key: str, raw: str, item: bool) -> Field:
        spec = next(s for s in (schema.item_fields if item else schema.fields) if s.key == key)
        return Field(key, normalize_value(spec.type, raw) or raw, raw=raw)

    doc = Document(doc_type=doc_type)
    doc.fields = {k: field(k, v, False) for k, v in fields.items()}
    doc.items = [{k: field(k, v, True) for k, v in row.items()} for row in items]
    return doc


def check(doc: Document) -> list[str]:
    return validate(doc, load_schema(str(doc.doc_type)), today=TODAY)


@pytest.mark.parametrize("doc_type, fields, items", [("vat_invoice", VAT_EXEMPT, VAT_ITEMS),
                                                     ("e_invoice", E_EXEMPT, E_ITEMS)])
def test_exempt_invoice_is_valid_with_its_rate(doc_type, fields, items):
    doc = document(doc_type, fields, items)
    assert check(doc) == [] and doc.checks == []
    assert doc.fields["total_tax"].valid is True
    for key in ("total_amount", "total_with_tax", "total_with_tax_in_words"):
        assert doc.fields[key].valid is True, key
    for row in doc.items:
        assert row["tax"].valid is True and row["amount"].valid is True
        assert row["tax_rate"].valid is True and row["tax_rate"].value in ("免税", "不征税")


def test_asterisks_on_a_taxed_line_are_flagged():
    rows = [dict(VAT_ITEMS[0]), dict(VAT_ITEMS[1], tax_rate="13%")]
    doc = document("vat_invoice", VAT_EXEMPT, rows)
    warnings = check(doc)
    assert doc.items[0]["tax"].valid is True
    assert doc.items[1]["tax"].valid is False
    assert doc.fields["total_tax"].valid is False, "one line is taxed, so the total cannot be ***"
    assert any("items[1].tax" in w and "not exempt" in w for w in warnings)
    assert any(w.startswith("合计税额印为***") for w in warnings)


@pytest.mark.parametrize("change, message, failing, total_tax", [
    # tax added to the total although every line is exempt
    ({"total_with_tax": "¥339.00", "total_with_tax_in_words": "叁佰叁拾玖圆整"}, "合计金额加合计税额不等于价税合计",
     "total_with_tax", False),
    # a tax figure in the 合计 row, the lines say none
    ({"total_tax": "¥39.00", "total_with_tax": "¥339.00", "total_with_tax_in_words": "叁佰叁拾玖圆整"},
     "明细税额之和不等于合计税额", "total_tax", False),
    # the lines do not add up to the amount; the *** total itself is right
    ({"total_amount": "¥310.00", "total_with_tax": "¥310.00", "total_with_tax_in_words": "叁佰壹拾圆整"},
     "明细金额之和不等于合计金额", "total_amount", True),
])
def test_inconsistent_exempt_invoice_fails(change, message, failing, total_tax):
    """The *** counts as 0.00, so the sums run on an exempt invoice and name what disagrees."""
    doc = document("vat_invoice", dict(VAT_EXEMPT, **change), VAT_ITEMS)
    warnings = check(doc)
    assert any(w.startswith(message) for w in warnings), warnings
    assert doc.fields[failing].valid is False
    assert doc.fields["total_tax"].valid is total_tax


def test_exempt_line_with_a_tax_figure_fails():
    doc = document("vat_invoice", dict(VAT_EXEMPT, total_tax="¥13.00", total_with_tax="¥313.00",
                                       total_with_tax_in_words="叁佰壹拾叁圆整"),
                   [VAT_ITEMS[0], dict(VAT_ITEMS[1], tax="13.00")])
    warnings = check(doc)
    assert doc.items[1]["tax"].valid is False
    assert any("items[1].tax" in w and "exempt" in w for w in warnings)


def test_zero_rate_line_may_print_asterisks():
    doc = document("vat_invoice", VAT_EXEMPT, [dict(r, tax_rate="0%") for r in VAT_ITEMS])
    assert check(doc) == [] and all(r["tax"].valid for r in doc.items)


def test_masked_total_without_items_is_settled_by_the_sum():
    """No line items read: nothing says the rate, so *** counts as 0.00 and amount + tax = total decides."""
    doc = document("e_invoice", E_EXEMPT, [])
    assert check(doc) == [] and doc.fields["total_tax"].valid is True
    doc = document("e_invoice", dict(E_EXEMPT, total_with_tax="¥565.00", total_with_tax_in_words="伍佰陆拾伍圆整"),
                   [])
    assert check(doc) and doc.fields["total_tax"].valid is False


def test_a_fixed_mask_revalidates():
    """A clerk typing 0.00 over *** on a taxed line: the warning goes on the next validate."""
    rows = [dict(VAT_ITEMS[0], tax_rate="13%", tax="13.00"), VAT_ITEMS[1]]
    doc = document("vat_invoice", dict(VAT_EXEMPT, total_tax="***"), rows)
    assert check(doc)
    doc.fields["total_tax"].raw = doc.fields["total_tax"].value = "13.00"
    doc.fields["total_with_tax"].raw = doc.fields["total_with_tax"].value = "313.00"
    doc.fields["total_with_tax_in_words"].raw = "叁佰壹拾叁圆整"
    assert check(doc) == [] and doc.fields["total_tax"].valid is True


def test_rates_and_masks_read():
    assert [normalize_rate(t) for t in ("免税", "免 税", "不征税", "0%", "0.00%", "零税率", "13%", "abc")] == \
        ["免税", "免税", "不征税", "0%", "0%", "0%", "13%", None]
    assert [rate_is_zero(t) for t in ("免税", "不征税", "0%", "13%", "***", "", None)] == \
        [True, True, True, False, None, None, None]
    assert all(is_masked(t) for t in ("***", "＊＊＊", "* * *", "¥***", "￥ ＊＊＊"))
    assert not any(is_masked(t) for t in ("", "0.00", "*1*", "¥", None))


def test_a_rate_that_does_not_read_is_flagged():
    doc = document("vat_invoice", VAT_EXEMPT, [dict(VAT_ITEMS[0], tax_rate="1B%"), VAT_ITEMS[1]])
    check(doc)
    assert doc.items[0]["tax_rate"].valid is False and doc.items[1]["tax_rate"].valid is True


def test_schema_takes_masked_when_exempt_on_amounts_only():
    def schema(ftype: str) -> dict:
        return {"name": "x", "label": "y", "fields": [{"key": "a", "label": "b", "type": ftype,
                                                        "masked_when_exempt": True}]}
    assert parse_schema(schema("amount")).fields[0].masked_when_exempt is True
    with pytest.raises(SchemaError, match="is for fields of type amount"):
        parse_schema(schema("text"))


def test_the_ui_says_why_asterisks_on_a_taxed_line_fail():
    """The check cell and the warning name the reason in words, not "not a readable amount" or a key."""
    from app.ui.words import MASKED_TAXED, _check_warning, check_words
    from data.document import Document, Field
    from data.schemas import load_schema
    from data.validate import validate, validate_fields
    schema = load_schema("vat_invoice")
    _, warnings = validate_fields(schema, {"total_amount": "100.00", "total_tax": "***", "total_with_tax": "100.00",
                                           "items": [{"amount": "100.00", "tax_rate": "13%", "tax": "***"}]})
    doc = Document(doc_type="vat_invoice")
    doc.items = [{"tax": Field(key="tax", value="***", raw="***"),
                  "tax_rate": Field(key="tax_rate", value="13%", raw="13%")}]
    doc.fields = {"total_tax": Field(key="total_tax", value="***", raw="***")}
    validate(doc, schema)                   # stores why each failed: the UI words that, it checks nothing again
    assert doc.items[0]["tax"].reason == doc.fields["total_tax"].reason == "masked_taxed"
    assert check_words(doc, "tax", doc.items[0]["tax"], item_key="tax") == f"✗ {MASKED_TAXED[0]} / {MASKED_TAXED[1]}"
    said = [_check_warning(w, doc, schema) for w in warnings if "***" in w]
    reason = f"{MASKED_TAXED[0]} / {MASKED_TAXED[1]}"
    assert said == [f"合计税额{reason}", f"第1行明细税额{reason}"]
