"""Schemas load from YAML, carry the required keys, and a bad user file gives a clear error."""
from __future__ import annotations

import textwrap

import pytest

from data.schemas import FIELD_TYPES, SchemaError, list_schemas, load_schema, load_schema_file

VAT_KEYS = ["title", "invoice_code", "invoice_number", "issue_date", "check_code", "machine_number",
            "buyer_name", "buyer_tax_id", "buyer_address_phone", "buyer_bank_account", "seller_name",
            "seller_tax_id", "seller_address_phone", "seller_bank_account", "total_amount", "total_tax",
            "total_with_tax", "total_with_tax_in_words", "payee", "reviewer", "drawer"]
ITEM_KEYS = ["name", "spec", "unit", "quantity", "unit_price", "amount", "tax_rate", "tax"]


def test_all_bundled_types_are_listed_and_load():
    names = list_schemas()
    for expected in ("vat_invoice", "e_invoice", "id_card_front", "id_card_back", "business_licence",
                     "train_ticket", "receipt", "generic_form"):
        assert expected in names
    for name in names:
        schema = load_schema(name)
        assert schema.name == name and schema.label
        for spec in schema.fields + schema.item_fields:
            assert spec.type in FIELD_TYPES and spec.label


def test_vat_invoice_has_the_agreed_keys_and_rules():
    schema = load_schema("vat_invoice")
    assert set(VAT_KEYS) <= set(schema.keys())
    assert schema.item_keys() == ITEM_KEYS
    assert schema.field("invoice_code").key_phrases == ["发票代码"]
    assert schema.field("issue_date").type == "date"
    assert "tax_id" in schema.field("seller_tax_id").validators        # default from the type
    sums = [r for r in schema.rules if r.check == "sum"]
    assert sums[0].fields == ["total_amount", "total_tax"] and sums[0].equals == "total_with_tax"
    assert any(r.check == "words_match" and r.words == "total_with_tax_in_words" for r in schema.rules)


def test_e_invoice_differs_from_vat_invoice():
    e = load_schema("e_invoice")
    assert "invoice_code" not in e.keys() and "check_code" not in e.keys()
    assert e.field("invoice_number").pattern == r"\d{20}"


def test_id_card_keys():
    assert load_schema("id_card_front").keys() == ["name", "sex", "ethnicity", "birth_date", "address",
                                                   "id_number"]
    assert load_schema("id_card_back").keys() == ["issuing_authority", "valid_period"]
    assert load_schema("generic_form").line_labels == ["header", "question", "answer", "other"]


def test_unknown_name_names_the_known_ones():
    with pytest.raises(SchemaError, match="vat_invoice"):
        load_schema("no_such_type")


def test_user_schema_file_loads(tmp_path):
    path = tmp_path / "hotel_bill.yaml"
    path.write_text(textwrap.dedent("""
        name: hotel_bill
        label: 酒店账单
        fields:
          - {key: guest_name, label: 宾客姓名, key_phrases: [宾客姓名, 姓名]}
          - {key: total, label: 合计, type: amount}
          - {key: room, label: 房号, type: code, pattern: '\\d{3,4}'}
    """), encoding="utf-8")
    schema = load_schema_file(path)
    assert schema.keys() == ["guest_name", "total", "room"]
    assert schema.field("total").validators == ["amount"]
    assert schema.field("room").validators == ["pattern"]
    assert schema.field("total").key_phrases == ["合计"]          # defaults to the label
    assert schema.field("room").drop_suffix == ""
    assert load_schema("train_ticket").field("to_station").drop_suffix == "站"


@pytest.mark.parametrize("body, message", [
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b, type: money}\n", "type"),
    ("name: x\nlabel: y\nfields:\n  - {key: A-1, label: b}\n", "lower_snake_case"),
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b}\n  - {key: a, label: c}\n", "twice"),
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b, validators: [luhn]}\n", "luhn"),
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b, type: amount}\n"
     "rules:\n  - {check: sum, fields: [a, z], equals: a}\n", "unknown field 'z'"),
    ("name: x\nlabel: y\nfields: [\n", "not valid YAML"),
    ("name: x\nfields: []\n", "label"),
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b, type: enum}\n", "choices"),
    ("name: x\nlabel: y\nfields:\n  - {key: a, label: b, drop_suffix: [站]}\n", "drop_suffix"),
    ("name: x\nlabel: y\ntitle_required: true\nfields:\n  - {key: a, label: b}\n", "title_phrases is empty"),
    ("name: x\nlabel: y\ntitle_phrases: [t]\ntitle_required: 1\nfields:\n  - {key: a, label: b}\n",
     "true or false"),
])
def test_bad_user_schema_gives_clear_error(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(SchemaError, match=message) as err:
        load_schema_file(path)
    assert str(path) in str(err.value)


def test_missing_file_error_says_what_to_do(tmp_path):
    with pytest.raises(SchemaError, match="no such schema file"):
        load_schema_file(tmp_path / "nope.yaml")
