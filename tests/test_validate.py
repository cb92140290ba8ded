"""Normalisers and validators: known valid/invalid IDs and codes, 大写金额 both ways, dates, rules."""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest

from data.normalize import (
    format_amount_words,
    normalize_amount,
    normalize_code,
    normalize_date,
    normalize_date_range,
    normalize_rate,
    parse_amount_words,
    to_halfwidth,
)
from data.schemas import load_schema
from data.validate import (
    credit_check_char,
    id_check_char,
    is_valid_credit_code,
    is_valid_id_number,
    is_valid_tax_id,
    org_code_check_char,
    validate_fields,
    words_match_figure,
)

# --- check characters, computed here by the published table formulation -------------------------

ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
ID_CHECK_TABLE = "10X98765432"          # index: weighted sum mod 11


def reference_id_check(first17: str) -> str:
    return ID_CHECK_TABLE[sum(int(c) * w for c, w in zip(first17, ID_WEIGHTS)) % 11]


CREDIT_CHARS = "0123456789ABCDEFGHJKLMNPQRTUWXY"
CREDIT_WEIGHTS = [1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28]


def reference_credit_check(first17: str) -> str:
    c = 31 - sum(CREDIT_CHARS.index(ch) * w for ch, w in zip(first17, CREDIT_WEIGHTS)) % 31
    return "0" if c == 31 else CREDIT_CHARS[c]


@pytest.mark.parametrize("number", ["11010519491231002X", "440524188001010014", "11010119900307803X"])
def test_published_id_numbers_are_valid(number):
    assert is_valid_id_number(number)


def test_id_check_digit_matches_reference_table_on_random_numbers():
    rng = random.Random(7)
    for _ in range(300):
        first17 = "110105" + f"{rng.randint(1950, 2010)}0{rng.randint(1, 9)}1{rng.randint(0, 9)}" \
                  + "".join(str(rng.randint(0, 9)) for _ in range(3))
        assert id_check_char(first17) == reference_id_check(first17)
        assert is_valid_id_number(first17 + reference_id_check(first17))


@pytest.mark.parametrize("number", [
    "110105194912310021",      # wrong check character (should be X)
    "11010519491331002X",      # month 13
    "1101051949123100",        # too short
    "01010519491231002X",      # region cannot start with 0
    "110105299912310027",      # birth in the future
])
def test_invalid_id_numbers_are_rejected(number):
    assert not is_valid_id_number(number)


def test_every_single_digit_change_breaks_the_id_check():
    good = "11010519491231002X"
    for pos in range(14, 17):             # sequence digits: date stays valid, only the check breaks
        for d in "0123456789":
            if d != good[pos]:
                assert not is_valid_id_number(good[:pos] + d + good[pos + 1:])


@pytest.mark.parametrize("code", ["91350100M000100Y43", "91110108551385082Q", "91440300708461136T"])
def test_published_credit_codes_are_valid(code):
    assert is_valid_credit_code(code)
    assert is_valid_tax_id(code)


def test_credit_check_char_matches_reference_on_random_codes():
    rng = random.Random(3)
    for _ in range(300):
        first17 = "91" + "".join(rng.choice(CREDIT_CHARS) for _ in range(15))
        assert credit_check_char(first17) == reference_credit_check(first17)
        assert is_valid_credit_code(first17 + reference_credit_check(first17))


def test_org_code_part_of_published_credit_code():
    assert org_code_check_char("M000100Y") == "4"        # 91350100[M000100Y4]3


@pytest.mark.parametrize("code", ["91350100M000100Y44", "91350100M000100Y4", "91350100M0001O0Y43",
                                  "91110108551385082R"])
def test_invalid_credit_codes_are_rejected(code):
    assert not is_valid_credit_code(code)


def test_old_tax_ids_are_accepted_by_format():
    assert is_valid_tax_id("110108551385082")            # 15-character registration number
    assert is_valid_tax_id("11010519491231002X01")       # 20-character ID-based
    assert not is_valid_tax_id("1101085513850")          # 13 characters
    assert normalize_code("９１３５ ０１００Ｍ０００１００Ｙ４３") == "91350100M000100Y43"


# --- 大写金额 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("figure, words", [
    ("412.00", "肆佰壹拾贰圆整"),
    ("12345.67", "壹万贰仟叁佰肆拾伍圆陆角柒分"),
    ("1005.50", "壹仟零伍圆伍角"),
    ("10.05", "壹拾圆零伍分"),
    ("0.50", "伍角"),
    ("100000.00", "壹拾万圆整"),
    ("100100.00", "壹拾万零壹佰圆整"),
    ("1010.00", "壹仟零壹拾圆整"),
    ("100000005.00", "壹亿零伍圆整"),
    ("20030000.00", "贰仟零叁万圆整"),
])
def test_amount_words_format_and_parse(figure, words):
    assert format_amount_words(figure) == words
    assert parse_amount_words(words) == Decimal(figure)


@pytest.mark.parametrize("words, figure", [
    ("⊗肆佰壹拾贰圆整", "412"), ("壹万贰仟叁佰肆拾伍元陆角柒分", "12345.67"), ("叁拾圆正", "30"),
    ("拾万圆整", "100000"), ("负壹佰圆整", "-100"), ("壹佰圆零伍分", "100.05"),
    ("陆仟陆佰玖拾参圆壹角柒分", "6693.17"), ("參拾貳圓陸角", "32.60")])
def test_amount_words_variants_parse(words, figure):
    assert parse_amount_words(words) == Decimal(figure)


def test_amount_words_round_trip_random():
    rng = random.Random(11)
    for _ in range(500):
        value = Decimal(rng.randint(0, 10 ** rng.randint(1, 10))) / 100
        assert parse_amount_words(format_amount_words(value)) == value.quantize(Decimal("0.01"))


def test_unreadable_words_give_none():
    assert parse_amount_words("hello") is None
    assert parse_amount_words("") is None
    assert words_match_figure("肆佰壹拾贰圆整", "412.00") is True
    assert words_match_figure("肆佰壹拾贰圆整", "413.00") is False


# --- dates, amounts, width --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["2024年3月5日", "2024年03月05日", "2024-03-05", "2024/3/5", "2024.3.5",
                                  "20240305", "二〇二四年三月五日", "２０２４年３月５日", "2024 年 3 月 5 日"])
def test_dates_normalise_to_iso(text):
    assert normalize_date(text) == "2024-03-05"


@pytest.mark.parametrize("text", ["2024年2月30日", "2024-13-01", "March 5", "", "2024"])
def test_bad_dates_give_none(text):
    assert normalize_date(text) is None


def test_amounts_and_rates():
    assert normalize_amount("¥1,234.5") == "1234.50"
    assert normalize_amount("￥388.1") == "388.10"
    assert normalize_amount("1234.505元") == "1234.51"
    assert normalize_amount("-23.9") == "-23.90"
    assert normalize_amount("abc") is None
    assert normalize_rate("13%") == "13%" and normalize_rate("0.06") == "6%" and normalize_rate("免税") == "免税"
    assert to_halfwidth("发票号码：１２３（Ａ）") == "发票号码:123(A)"
    assert normalize_date_range("2015.03.05-2035.03.05") == "2015-03-05/2035-03-05"
    assert normalize_date_range("2015.03.05-长期") == "2015-03-05/长期"


# --- schema-driven validation ------------------------------------------------------------------------

GOOD_INVOICE = {
    "title": "北京增值税专用发票", "invoice_code": "1100204130", "invoice_number": "07099363",
    "issue_date": "2023年02月03日", "seller_tax_id": "91350100M000100Y43",
    "buyer_name": "北京某科技有限公司", "seller_name": "深圳某餐饮有限公司",
    "total_amount": "¥388.10", "total_tax": "¥23.90", "total_with_tax": "¥412.00",
    "total_with_tax_in_words": "⊗肆佰壹拾贰圆整",
    "items": [{"name": "*餐饮服务*餐饮服务", "quantity": "1", "unit_price": "379.25", "amount": "379.25",
               "tax_rate": "6%", "tax": "22.75"},
              {"name": "*日用杂品*保温袋", "quantity": "1", "unit_price": "8.85", "amount": "8.85",
               "tax_rate": "13%", "tax": "1.15"}],
}


def test_good_invoice_passes():
    valid, warnings = validate_fields(load_schema("vat_invoice"), GOOD_INVOICE, today=dt.date(2024, 1, 1))
    assert warnings == []
    for key in ("invoice_code", "invoice_number", "issue_date", "seller_tax_id", "total_amount",
                "total_tax", "total_with_tax", "total_with_tax_in_words"):
        assert valid[key] is True, key
    assert valid["payee"] is None and valid["buyer_name"] is None


def test_bad_invoice_is_flagged_in_chinese_and_english():
    bad = dict(GOOD_INVOICE, total_with_tax="¥413.00", seller_tax_id="91350100M000100Y44",
               issue_date="2023年02月30日")
    valid, warnings = validate_fields(load_schema("vat_invoice"), bad, today=dt.date(2024, 1, 1))
    assert valid["total_with_tax"] is False and valid["total_amount"] is False
    assert valid["total_with_tax_in_words"] is False
    assert valid["seller_tax_id"] is False and valid["issue_date"] is False
    text = "\n".join(warnings)
    assert "价税合计" in text and "total_with_tax" in text and "销售方纳税人识别号" in text


def test_item_rules_catch_wrong_row():
    rows = [dict(GOOD_INVOICE["items"][0], amount="380.25"), GOOD_INVOICE["items"][1]]
    valid, warnings = validate_fields(load_schema("vat_invoice"), dict(GOOD_INVOICE, items=rows),
                                      today=dt.date(2024, 1, 1))
    assert valid["items[0].amount"] is False and valid["total_amount"] is False
    assert any("items[0]" in w for w in warnings)


def test_id_card_rules():
    schema = load_schema("id_card_front")
    good = {"name": "张三", "sex": "女", "birth_date": "1949年12月31日", "id_number": "11010519491231002X"}
    valid, warnings = validate_fields(schema, good)
    assert warnings == [] and valid["id_number"] and valid["birth_date"] and valid["sex"]
    valid, warnings = validate_fields(schema, dict(good, sex="男", birth_date="1950年1月1日"))
    assert valid["sex"] is False and valid["birth_date"] is False and len(warnings) == 2


def test_missing_required_field_is_warned_not_invalid():
    valid, warnings = validate_fields(load_schema("id_card_front"), {"name": "张三"})
    assert valid["id_number"] is None
    assert any("missing id_number" in w for w in warnings)


@pytest.mark.parametrize("words,figure", [("贰万零陆佰陆拾叁回肆角贰分", "20663.42"),   # 圆 read as 回
                                          ("壹万伍仟伍佰零壹国肆角壹分", "15501.41"),   # ... as 国
                                          ("陆仟零贰拾肆捌角捌分", "6024.88"),          # 圆 dropped
                                          ("贰佰国整", "200.00")])
def test_amount_words_as_ocr_misreads_them(words, figure):
    assert str(parse_amount_words(words).quantize(Decimal('0.01'))) == figure
    assert parse_amount_words(words, ocr_tolerant=False) is None


@pytest.mark.parametrize("words", ["佰陆拾", "仟柒佰柒", "随任张佰陆拾型妈整", "壹佰叁拾", "贰回叁国肆角"])
def test_garbled_amount_words_stay_unread(words):
    assert parse_amount_words(words) is None


def test_ocr_yen_lookalikes_and_dropped_brackets():
    assert normalize_amount("V358.98") == "358.98" and normalize_amount("N100.63") == "100.63"
    assert normalize_amount("N100") is None            # a code, not money
    from data.normalize import normalize_text
    assert normalize_text("电子发票（普通发票") == "电子发票(普通发票)"
    assert normalize_text("方隆便利店(浦东新区店)") == "方隆便利店(浦东新区店)"


def test_validate_recomputes_a_documents_checks_from_scratch():
    """data.validate.validate: `valid` and the validator's warnings anew on every call; other warnings stay,
    a fixed value's warning goes, and a JSON round trip keeps what to take out next time."""
    from data.document import Document, Field
    from data.validate import validate
    schema = load_schema("vat_invoice")
    doc = Document(doc_type="vat_invoice", warnings=["page 1 reads poorly (mean OCR confidence 0.61)"])
    for key, raw in GOOD_INVOICE.items():
        if key != "items":
            doc.fields[key] = Field(key, raw, raw=raw)
    doc.items = [{k: Field(k, v, raw=v) for k, v in row.items()} for row in GOOD_INVOICE["items"]]
    words = doc.fields["total_with_tax_in_words"]
    words.value = str(parse_amount_words(words.raw))            # the figure the words say, as extraction stores it
    doc.fields["invoice_number"].raw = "1234567"                # 7 digits
    first = validate(doc, schema, today=dt.date(2024, 1, 1))
    assert len(first) == 1 and "invoice_number" in first[0] and doc.checks == first
    assert doc.fields["invoice_number"].valid is False and words.valid is True, "the words are read, not the figure"
    doc = Document.from_json(doc.to_json())
    doc.fields["invoice_number"].raw = doc.fields["invoice_number"].value = "12345678"
    assert validate(doc, schema, today=dt.date(2024, 1, 1)) == []
    assert doc.warnings == ["page 1 reads poorly (mean OCR confidence 0.61)"] and doc.checks == []
    assert doc.fields["invoice_number"].valid is True and doc.items[0]["amount"].valid is True
    validate(doc, None)                                          # nothing to check against: nothing claimed
    assert all(f.valid is None for f in doc.fields.values()) and len(doc.warnings) == 1
