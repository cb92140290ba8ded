"""Why a value failed is data: `validate` stores the code of the first check each field failed
(`Field.reason`, data/validate.py REASON_CODES), the JSON keeps it, and the UI's check cell words that code
(app/ui/words.py `reason_words`) without running any validator again."""
from __future__ import annotations

import pytest

import data.validate as checks
from app.ui.words import RULE_WORDS, VALIDATOR_WORDS, check_words
from data.document import Document, Field
from data.schemas import load_schema
from data.validate import REASON_CODES, failed_validator, validate, validate_fields


def invoice(fields: dict[str, str], items: list[dict[str, str]] | None = None) -> Document:
    doc = Document(doc_type="vat_invoice")
    doc.fields = {k: Field(k, v, raw=v) for k, v in fields.items()}
    doc.items = [{k: Field(k, v, raw=v) for k, v in row.items()} for row in items or []]
    return doc


def test_validate_stores_the_first_check_each_value_failed():
    doc = invoice({"invoice_number": "12345678", "seller_tax_id": "123", "issue_date": "2099-01-01",
                   "total_amount": "100.00", "total_tax": "13.00", "total_with_tax": "120.00"},
                  [{"quantity": "2", "unit_price": "50.00", "amount": "90.00"}])
    validate(doc, load_schema("vat_invoice"))
    reasons = {k: f.reason for k, f in doc.fields.items()}
    assert reasons == {"invoice_number": None, "seller_tax_id": "tax_id", "issue_date": "date_not_future",
                       "total_amount": "sum", "total_tax": "sum", "total_with_tax": "sum"}
    assert doc.items[0]["amount"].reason == "item_product" and doc.items[0]["quantity"].reason is None
    assert all(f.valid is False for f in doc.fields.values() if f.reason)
    assert set(reasons.values()) - {None} <= set(REASON_CODES)
    back = Document.from_dict(doc.to_dict())                  # the JSON carries the reason
    assert back.fields["seller_tax_id"].reason == "tax_id" and back.items[0]["amount"].reason == "item_product"
    doc.fields["seller_tax_id"].raw = doc.fields["seller_tax_id"].value = "110108123456789"
    validate(doc, load_schema("vat_invoice"))                 # fixed: its reason goes with its failure
    assert doc.fields["seller_tax_id"].valid is True and doc.fields["seller_tax_id"].reason is None


def test_the_check_cell_words_the_stored_reason_and_checks_nothing_again(monkeypatch: pytest.MonkeyPatch):
    def no_check(*_: object) -> bool:
        raise AssertionError("the UI ran a validator again")
    monkeypatch.setattr(checks, "_passes", no_check)
    doc = Document(doc_type="vat_invoice")
    total = Field("total_with_tax", "abc", raw="abc", valid=False)
    total.reason = "sum"            # "abc" is no amount either: the words are the stored reason's, not a recheck's
    assert check_words(doc, "total_with_tax", total) == f"✗ 合计金额加合计税额不等于价税合计 / {RULE_WORDS['sum'][1]}"
    seller = Field("seller_tax_id", "91350100M000100Y43", raw="91350100M000100Y43", valid=False)
    seller.reason = "tax_id"
    assert check_words(doc, "seller_tax_id", seller) == "✗ {} / {}".format(*VALIDATOR_WORDS["tax_id"])
    amount = Field("amount", "90.00", raw="90.00", valid=False)
    amount.reason = "item_product"
    assert check_words(doc, "amount", amount, item_key="amount") == \
        f"✗ 数量乘单价不等于金额 / {RULE_WORDS['item_product'][1]}"
    assert check_words(doc, "x", Field("x", "1", valid=False)) == "✗ 校验未通过 / check failed"   # no reason kept


def test_a_warning_names_its_validator_in_its_own_words(monkeypatch: pytest.MonkeyPatch):
    schema = load_schema("vat_invoice")
    _, warnings = validate_fields(schema, {"seller_tax_id": "123", "issue_date": "2099-01-01"})
    monkeypatch.setattr(checks, "_passes", lambda *_: pytest.fail("read back, not checked again"))
    named = {w.split(" / ")[1].split(":")[0]: failed_validator(w, schema.field(w.split(" / ")[1].split(":")[0]))
             for w in warnings if "格式不正确" in w}
    assert named == {"seller_tax_id": "tax_id", "issue_date": "date_not_future"}
