"""The decoding rules as data (models/extraction/rules.py): the list, switching rules off, and what the
rules that only a whole page shows do, through the public decoding functions."""
from __future__ import annotations

import numpy as np
import pytest

from data.document import Document, Line, Page, Pair, box_to_quad
from data.schemas import load_schema
from models.extraction import RULES, PageContext, PagePrediction, Span, check_names
from models.extraction.doctype import pick_type
from models.extraction.forms import decode_form
from models.extraction.rules import decode_fields
from models.extraction.spans import decode_spans
from tests.test_form_pairs import LABELS as FORM_TAGS
from tests.test_form_pairs import _page as _form_page
from tests.test_form_pairs import _pairs as _form_pairs


def test_rules_are_named_once_in_order_and_print():
    from models.extraction.rules import table
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert names.index("field_candidates") < names.index("choose_fields") < names.index("money_figures")
    printed = table().splitlines()
    assert len(printed) == len(RULES) and all(r.name in line for r, line in zip(RULES, printed))
    assert all(r.doc for r in RULES)


def test_only_known_rules_that_are_not_core_can_be_switched_off():
    check_names(frozenset(r.name for r in RULES if not r.core))
    with pytest.raises(ValueError, match="no such rule"):
        check_names(frozenset(["choose_fields"]))          # core: the decoding itself
    with pytest.raises(ValueError, match="no such rule"):
        check_names(frozenset(["rekey_by_phrase_typo"]))


def test_schema_labels_cover_every_field_and_item_field():
    from data.schemas import list_schemas, load_schema
    from models.heads import FORM_KEYS, ITEM_PREFIX, schema_field_keys, tag_labels
    keys, doc_types = schema_field_keys()
    assert doc_types == list(list_schemas())
    for name in doc_types:
        schema = load_schema(name)
        assert {f.key for f in schema.fields} <= set(keys)
        assert {ITEM_PREFIX + f.key for f in schema.item_fields} <= set(keys)
    assert set(FORM_KEYS) <= set(keys) and len(keys) == len(set(keys))
    labels = tag_labels(keys)
    assert labels[0] == "O" and len(labels) == 1 + 2 * len(keys)
    assert labels[labels.index("B-items.amount") + 1] == "I-items.amount"


# --- each rule, on and off, through the public decoding functions -------------------------------------------

def _page(rows: list[tuple[str, list[float]]]) -> Page:
    return Page(index=0, width=1300, height=800, lines=[Line(t, box_to_quad(b)) for t, b in rows])


def _stacked(texts: list[str]) -> list[tuple[str, list[float]]]:
    return [(t, [10, 20 + 40 * i, 400, 50 + 40 * i]) for i, t in enumerate(texts)]


def _fields(doc_type: str, rows, spans: list[Span], off: frozenset[str] = frozenset()) -> Document:
    page = _page(rows)
    doc = Document(pages=[page], doc_type=doc_type)
    decode_fields(PageContext(doc, page, load_schema(doc_type), spans), off)
    return doc


def _on_off(rule: str, doc_type: str, rows, spans: list[Span]) -> tuple[Document, Document]:
    return _fields(doc_type, rows, spans), _fields(doc_type, rows, spans, frozenset([rule]))


def _value(doc: Document, key: str) -> str | None:
    return doc.fields[key].value if key in doc.fields else None


def _probs(labels: list[str], rows: list[dict | None]) -> np.ndarray:
    out = np.zeros((len(rows), len(labels)))
    for i, row in enumerate(rows):
        if row is None:
            out[i] = np.nan
            continue
        for lab, p in row.items():
            out[i, labels.index(lab)] = p
    return out


def _spans(labels, rows, text, free=(), off=frozenset()):
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool), [text], set(free), off=off)
    return [(s.key, text[s.start:s.end]) for s in spans]


def test_vote_alnum_runs_keeps_a_number_in_one_field():
    labels = ["O", "B-invoice_code", "I-invoice_code", "B-invoice_number", "I-invoice_number"]
    text = "代码031012306531"
    rows = [{"O": 1.0}] * 2 + [{"I-invoice_code": 0.9, "O": 0.1}] * 9 + [{"I-invoice_number": 0.8, "O": 0.2}] * 3
    assert _spans(labels, rows, text) == [("invoice_code", "031012306531")]
    assert len(_spans(labels, rows, text, off=frozenset(["vote_alnum_runs"]))) == 2


def test_vote_segments_keeps_a_name_the_model_scatters_in_one_field():
    labels = ["O", "B-seller_name", "I-seller_name", "B-items.name", "I-items.name"]
    text = "称：深圳蛋糕餐饮有限公司"
    rows = ([{"O": 1.0}] * 2 + [{"B-seller_name": 0.8, "O": 0.2}, {"I-seller_name": 0.9, "O": 0.1},
                                 {"I-items.name": 0.6, "I-seller_name": 0.4}]
            + [{"I-seller_name": 0.7, "B-seller_name": 0.25, "O": 0.05}] * 7)
    assert _spans(labels, rows, text, {"seller_name"}) == [("seller_name", "深圳蛋糕餐饮有限公司")]
    assert ("seller_name", "深圳蛋糕餐饮有限公司") not in \
        _spans(labels, rows, text, {"seller_name"}, frozenset(["vote_segments"]))


def test_extend_left_takes_back_the_first_characters_after_the_colon():
    labels = ["O", "B-invoice_number", "I-invoice_number"]
    text = "名称：北京某某公司"
    rows = [{"O": 1.0}] * 3 + [{"O": 0.8, "I-invoice_number": 0.2}] * 2 + [{"I-invoice_number": 0.9, "O": 0.1}] * 4
    assert _spans(labels, rows, text) == [("invoice_number", "北京某某公司")]
    assert _spans(labels, rows, text, off=frozenset(["extend_left"])) == [("invoice_number", "某某公司")]


def test_type_rules_follow_the_printed_title():
    types = ["vat_invoice", "e_invoice", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    lean_form = np.array([0.1, 0.2, 0.7])
    page = ["电子发票（增值税专用发票）", "号4：19822"]
    assert types[pick_type(lean_form, types, schemas, page)] == "e_invoice"
    form = ["个人信息登记表", "姓名：张三", "现住址：北京市"]
    lean_vat = np.array([0.6, 0.1, 0.3])
    assert types[pick_type(lean_vat, types, schemas, form)] == "generic_form"
    assert types[pick_type(lean_vat, types, schemas, form, off=frozenset(["type_needs_title"]))] == "vat_invoice"


def test_rekey_after_key_phrase():
    text = "纳税人识别号：911100008000000000"
    sp = Span("seller_address_phone", 0, 7, len(text), 0.8, {"seller_address_phone": 0.5, "seller_tax_id": 0.3})
    on, off = _on_off("rekey_after_key_phrase", "vat_invoice", _stacked([text]), [sp])
    assert _value(on, "seller_tax_id") == "911100008000000000" and "seller_tax_id" not in off.fields


def test_rekey_by_row_key():
    rows = [("实收：", [28, 401, 82, 426]), ("280.00", [433, 404, 500, 423]),
            ("找零：", [27, 436, 82, 461]), ("96.32", [444, 438, 501, 458])]
    sp = Span("paid_amount", 3, 0, 5, 0.9, {"paid_amount": 0.8, "change": 0.1})
    on, off = _on_off("rekey_by_row_key", "receipt", rows, [sp])
    assert _value(on, "change") == "96.32" and _value(off, "paid_amount") == "96.32"


def test_drop_key_text():
    text = "开户行及账号：中国银行深圳支行"
    on, off = _on_off("drop_key_text", "vat_invoice", _stacked([text]), [Span("seller_bank_account", 0, 1, 3, 0.9)])
    assert "seller_bank_account" not in on.fields and _value(off, "seller_bank_account") == "户行"


def test_strip_own_key():
    on, off = _on_off("strip_own_key", "vat_invoice", _stacked(["开票人 小红"]), [Span("drawer", 0, 0, 6, 0.8)])
    assert _value(on, "drawer") == "小红" and _value(off, "drawer") != "小红"


def test_fit_to_type():
    text = "开票日期：2024-08-3012:30"
    on, off = _on_off("fit_to_type", "vat_invoice", _stacked([text]), [Span("issue_date", 0, 5, len(text), 0.9)])
    assert _value(on, "issue_date") == "2024-08-30" and off.fields["issue_date"].raw == "2024-08-3012:30"


def test_text_to_segment_end():
    rows, spans = _stacked(["支付方式：微信支付"]), [Span("payment_method", 0, 5, 7, 0.9)]
    word = frozenset(["text_to_word_end"])            # (which also runs a value on to its word's end)
    on, off = _fields("receipt", rows, spans, word), _fields("receipt", rows, spans, word | {"text_to_segment_end"})
    assert _value(on, "payment_method") == "微信支付" and _value(off, "payment_method") == "微信"


def test_text_whole_line():
    rows, spans = _stacked(["白兰华"]), [Span("drawer", 0, 0, 2, 0.9)]
    word = frozenset(["text_to_word_end"])
    on, off = _fields("vat_invoice", rows, spans, word), _fields("vat_invoice", rows, spans, word | {"text_whole_line"})
    assert _value(on, "drawer") == "白兰华" and _value(off, "drawer") == "白兰"


def test_bracket_below():
    rows = [("智融生活超市", [130, 37, 282, 62]), ("（朝阳区店）", [160, 66, 250, 90])]
    on, off = _on_off("bracket_below", "vat_invoice", rows, [Span("seller_name", 0, 0, 6, 0.9)])
    assert _value(on, "seller_name") == "智融生活超市(朝阳区店)" and _value(off, "seller_name") == "智融生活超市"


def test_bracket_head():
    rows = [("盛达餐厅", [100, 20, 220, 50]), ("（朝阳区店）", [225, 20, 400, 50])]
    on, off = _on_off("bracket_head", "vat_invoice", rows, [Span("buyer_name", 1, 0, 6, 0.9)])
    assert on.fields["buyer_name"].raw == "盛达餐厅（朝阳区店）" and off.fields["buyer_name"].raw == "（朝阳区店）"


def test_text_through_colon():
    rows = [("备", [50, 440, 70, 460]), ("项目：餐饮管理服务", [92, 460, 243, 477])]
    on, off = _on_off("text_through_colon", "vat_invoice", rows, [Span("remarks", 1, 0, 3, 0.9)])
    assert on.fields["remarks"].raw == "项目：餐饮管理服务" and off.fields["remarks"].raw == "项目"


def _goods(name: str = "运输服务*国内货物运输服务") -> tuple[list, list[Span]]:
    y = [300, 320]
    rows = [(name, [60, y[0], 300, y[1]]), ("250ML*24", [320, y[0], 400, y[1]]), ("次", [420, y[0], 440, y[1]]),
            ("3", [470, y[0], 480, y[1]]), ("83.77", [520, y[0], 600, y[1]]), ("251.31", [640, y[0], 720, y[1]]),
            ("9%", [760, y[0], 790, y[1]]), ("22.62", [820, y[0], 900, y[1]]), ("22.61", [820, 500, 900, 520])]
    spans = [Span("items.name", 0, 0, len(name), 0.9), Span("items.spec", 1, 0, 5, 0.9),
             Span("items.unit", 2, 0, 1, 0.9), Span("items.unit_price", 4, 0, 5, 0.9),
             Span("items.amount", 5, 0, 6, 0.9), Span("items.tax_rate", 6, 0, 2, 0.9)]
    return rows, spans


def test_level_lines_gives_the_encoder_a_tilted_page_level_and_in_reading_order():
    """A page photographed 6 degrees off: its upright boxes interleave the rows (a seller's name on the left
    sorts between two item cells on the right). The encoder's lines are turned level and read row by row;
    each keeps its index in page.lines, so the tags come back to the lines as read."""
    import math

    from data.geometry import level_quads, page_slope, reading_order
    from models.extraction.base import level_lines
    rows = [["名称：甲公司", "3", "30.00"], ["地址：乙路1号", "5", "50.00"], ["开户行：丙银行", "7", "70.00"]]
    lines, quads = [], []
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            quads.append(box_to_quad([50 + 300 * c, 100 + 30 * r, 250 + 300 * c, 120 + 30 * r]))
            lines.append(text)
    tilted = level_quads(quads, math.tan(math.radians(-6)), 1000, 400)
    page = Page(index=0, width=1000, height=400,
                lines=reading_order([Line(t, q) for t, q in zip(lines, tilted)]))
    as_read = [ln.text for ln in page.lines]
    assert as_read[:3] != ["名称：甲公司", "3", "30.00"]                    # the rows as read interleave
    level, index = level_lines(page)
    assert [ln.text for ln in level] == lines                            # row by row, left to right
    assert [page.lines[i].text for i in index] == lines                  # each one's line as read
    assert abs(page_slope([ln.quad for ln in level])) < 1e-9
    assert page.lines[0].quad == reading_order([Line(t, q) for t, q in zip(lines, tilted)])[0].quad  # untouched
    straight = Page(index=0, width=1000, height=400, lines=[Line(t, q) for t, q in zip(lines, quads)])
    same, index = level_lines(straight)                                  # a level page is read as it is
    assert same is straight.lines and index == list(range(len(lines)))


def test_item_rules():
    rows, spans = _goods()
    on = _fields("vat_invoice", rows, spans).items[0]
    assert on["spec"].value == "250ML*24" and on["quantity"].value == "3" and on["tax"].value == "22.62"
    assert _fields("vat_invoice", rows, spans, frozenset(["whole_cell"])).items[0]["spec"].value == "250ML"
    assert "quantity" not in _fields("vat_invoice", rows, spans, frozenset(["complete_item_row"])).items[0]
    rows, spans = _goods("会议服务“会议费")
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "*会议服务*会议费"
    assert _fields("vat_invoice", rows, spans, frozenset(["star_name"])).items[0]["name"].value == "会议服务“会议费"


def test_goods_rows_only_and_fill_by_arithmetic():
    rows = [("合计", [80, 400, 130, 420]), ("￥18361.29", [700, 400, 800, 420]), ("￥2302.13", [1100, 400, 1190, 420]),
            ("价税合计（大写）", [80, 440, 250, 460]), ("贰万零陆佰陆拾叁圆肆角贰分", [300, 440, 600, 460]),
            ("（小写）", [800, 440, 860, 460]), ("¥20663.42", [870, 440, 980, 460])]
    spans = [Span("total_with_tax_in_words", 4, 0, 13, 0.9), Span("total_amount", 1, 1, 9, 0.9),
             Span("items.tax", 2, 1, 8, 0.8)]
    on = _fields("vat_invoice", rows, spans)
    assert on.items == [] and _value(on, "total_with_tax") == "20663.42" and _value(on, "total_tax") == "2302.13"
    # a lone tax cell is no goods row either (lone_cells): both off, the 合计 row stays
    assert _fields("vat_invoice", rows, spans, frozenset(["goods_rows_only", "lone_cells"])).items != []
    # totals_by_arithmetic finds the same figure (the sum's terms and the 大写 line agree on it): both off, none
    assert _value(_fields("vat_invoice", rows, spans, frozenset(["totals_by_arithmetic"])), "total_with_tax") == \
        "20663.42"
    # the label cell （小写） with the figure right of it finds it too (fields_by_label_cells): all three off, none
    assert _value(_fields("vat_invoice", rows, spans, frozenset(["fill_by_arithmetic", "totals_by_arithmetic"])),
                  "total_with_tax") == "20663.42"
    assert "total_with_tax" not in _fields("vat_invoice", rows, spans, frozenset(
        ["fill_by_arithmetic", "totals_by_arithmetic", "fields_by_label_cells"])).fields


def test_drop_total_row():
    rows = [("苹果", [60, 300, 200, 320]), ("12.50", [600, 300, 700, 320]),
            ("香蕉", [60, 340, 200, 360]), ("7.50", [600, 340, 700, 360]), ("20.00", [600, 380, 700, 400])]
    spans = [Span("items.name", 0, 0, 2, 0.9), Span("items.amount", 1, 0, 5, 0.9), Span("items.name", 2, 0, 2, 0.9),
             Span("items.amount", 3, 0, 4, 0.9), Span("items.amount", 4, 0, 5, 0.9)]
    assert len(_fields("receipt", rows, spans).items) == 2
    assert len(_fields("receipt", rows, spans, frozenset(["drop_total_row"])).items) == 3


def test_totals_by_arithmetic_moves_a_total_the_model_gave_to_a_term():
    # the model tagged the 小写 figure of 价税合计 as 合计金额: 273682.62 + 35578.74 = 309261.36, and the 大写
    # line spells 309261.36, so that figure is the sum and the free 273682.62 the term
    rows = [("￥273682.62", [700, 400, 820, 420]), ("￥35578.74", [1050, 400, 1160, 420]),
            ("叁拾万玖仟贰佰陆拾壹圆叁角陆分", [300, 440, 600, 460]), ("（小写）￥309261.36", [800, 440, 1000, 460])]
    spans = [Span("total_amount", 3, 4, 14, 0.9), Span("total_tax", 1, 0, 9, 0.9),
             Span("total_with_tax_in_words", 2, 0, 15, 0.9)]
    on, off = _on_off("totals_by_arithmetic", "vat_invoice", rows, spans)
    assert _value(on, "total_with_tax") == "309261.36" and _value(on, "total_amount") == "273682.62"
    assert _value(off, "total_amount") == "309261.36"


def test_totals_by_arithmetic_with_a_printed_zero():
    # a receipt paid exactly (找零 0.00): the model took the zero for 实收 and left 找零 empty; the printed
    # zero is a term of 合计 + 找零 = 实收
    rows = _stacked(["合计：104.34", "实收：104.34", "找零：0.00", "小计 52.17"])
    spans = [Span("total_amount", 0, 3, 9, 0.9), Span("paid_amount", 2, 3, 7, 0.6)]
    phrases = frozenset(["fill_by_key_phrase", "rekey_after_key_phrase"])     # (they find these keys here too)
    on = _fields("receipt", rows, spans, phrases)
    off = _fields("receipt", rows, spans, phrases | {"totals_by_arithmetic"})
    assert (_value(on, "total_amount"), _value(on, "paid_amount"), _value(on, "change")) == ("104.34", "104.34", "0.00")
    assert (_value(off, "paid_amount"), _value(off, "change")) == ("0.00", None)
    invoice = _stacked(["合计 ¥500.00", "税额 ¥0.00 免税", "价税合计（小写）¥500.00"])
    spans = [Span("total_with_tax", 2, 9, 16, 0.9)]
    assert "total_tax" not in _fields("vat_invoice", invoice, spans).fields, "one total kept is not enough"


def test_close_bracket():
    # the model's tags stop inside a bracket the line goes on to close: 川亿快餐店(海 of 川亿快餐店(海曙区店)
    rows = _stacked(["川亿快餐店(海曙区店)", "地址：宁波市海曙区中山路12号（二楼：前台）"])
    spans = [Span("store_name", 0, 0, 7, 0.9)]
    rest = frozenset(["text_to_segment_end", "text_whole_line"])      # (they reach the line's end here too)
    on = _fields("receipt", rows, spans, rest)
    off = _fields("receipt", rows, spans, rest | {"close_bracket"})
    assert (_value(on, "store_name"), _value(off, "store_name")) == ("川亿快餐店(海曙区店)", "川亿快餐店(海")
    # a bracket closed only past a colon is left open
    spans = [Span("store_address", 1, 3, 17, 0.9)]
    rest |= {"text_through_colon"}
    assert _value(_fields("receipt", rows, spans, rest), "store_address") == "宁波市海曙区中山路12号(二"


def test_text_to_word_end():
    # the model tagged a passenger's name one character short: 孟燕 of 4201061974****9347  孟燕建
    rows = _stacked(["4201061974****9347  孟燕建", "二等座"])
    spans = [Span("passenger_name", 0, 20, 22, 0.9)]
    on, off = _on_off("text_to_word_end", "train_ticket", rows, spans)
    assert (_value(on, "passenger_name"), _value(off, "passenger_name")) == ("孟燕建", "孟燕")
    # more than `word_end_chars` left of the word, or a word going on into digits, is not taken
    long = _stacked(["4201061974****9347  孟燕建国华"])
    assert _value(_fields("train_ticket", long, [Span("passenger_name", 0, 20, 22, 0.9)]), "passenger_name") == "孟燕"
    glued = _fields("train_ticket", _stacked(["孟燕建5630"]), [Span("passenger_name", 0, 0, 2, 0.9)])
    assert _value(glued, "passenger_name") == "孟燕"


def test_id_number_facts():
    rows = [("公民身份号码", [50, 440, 170, 460]), ("340104199102167611", [240, 440, 520, 460])]
    on, off = _on_off("id_number_facts", "id_card_front", rows, [Span("id_number", 1, 0, 18, 0.9)])
    assert _value(on, "sex") == "男" and _value(on, "birth_date") == "1991-02-16" and "sex" not in off.fields


FORM_LABELS = ["O", "B-header", "I-header", "B-question", "I-question", "B-answer", "I-answer"]


def _pairs(rows, tags=None, scores=None, off=frozenset()) -> list[tuple[str, str]]:
    cols = {"O": 0, "Q": 4, "A": 6}
    page = Page(index=0, width=1200, height=1600, lines=[Line(t, box_to_quad(b), score=(scores or {}).get(i, 0.99))
                                                          for i, (t, b) in enumerate(rows)])
    probs = []
    for i, (text, _) in enumerate(rows):
        p = np.zeros((len(text), len(FORM_LABELS)))
        for ci in range(len(text)):
            p[ci, cols[(tags[i] if tags else "O" * len(text))[ci]]] = 1.0
        probs.append(p)
    return [(p.key, p.value) for p in decode_form(page, PagePrediction(np.zeros(1), probs, lambda a, b: None),
                                                  FORM_LABELS, off=off)]


def test_form_rules():
    below = [("申请针对的物业地址", [100, 100, 400, 130]), ("紫藤苑4号楼3单元301", [170, 140, 440, 170])]
    assert _pairs(below) == [("申请针对的物业地址", "紫藤苑4号楼3单元301")]
    assert _pairs(below, off=frozenset(["form_below"])) == []
    assert _pairs(below, off=frozenset(["form_colonless_keys"])) == []
    furniture = [("编号：80247952", [800, 40, 950, 60]), ("姓名：", [100, 100, 160, 124]),
                 ("张三", [180, 100, 230, 124])]
    known = ["O" * 11, "QQQ", "AA"]
    assert _pairs(furniture, known) == [("姓名", "张三")]
    assert ("编号", "80247952") in _pairs(furniture, known, off=frozenset(["form_furniture"]))
    options = [("领取方式：", [100, 100, 200, 124]), ("自取", [220, 100, 260, 124]), ("邮寄", [280, 100, 320, 124])]
    assert _pairs(options, ["QQQQQ", "AA", "AA"]) == []
    unsure = [("部门：", [100, 160, 160, 184]), ("采购部", [180, 160, 240, 184])]
    assert _pairs(unsure, scores={1: 0.5}) == []
    assert _pairs(unsure, scores={1: 0.5}, off=frozenset(["form_ocr_min"])) == [("部门", "采购部")]


def test_the_learned_roles_rule_is_switched_off_in_its_own_tests():
    # "form_roles" needs a role model (tests/test_form_roles.py builds one and decodes with it on and off)
    from pathlib import Path
    text = Path(__file__).with_name("test_form_roles.py").read_text(encoding="utf-8")
    assert 'off=frozenset({"form_roles"})' in text or 'frozenset({"form_roles"})' in text


def test_the_learned_cuts_rule_is_switched_off_in_its_own_tests():
    # "form_cuts" needs a cut model (tests/test_form_cuts.py fits one and decodes with it on and off)
    from pathlib import Path
    text = Path(__file__).with_name("test_form_cuts.py").read_text(encoding="utf-8")
    assert 'off=frozenset({"form_cuts"})' in text


def test_form_cells():
    from tests.test_form_pairs import _row_grid, _ruled
    lines, tags = [("申请事项", [60, 100, 156, 124]), ("已提交", [560, 102, 632, 126])], ["QQQQ", "AAA"]
    assert _ruled(lines, _row_grid([40, 180, 1100]), tags) == [("申请事项", "已提交")]
    assert _ruled(lines, _row_grid([40, 180, 1100]), tags, off=frozenset(["form_cells"])) == []


def test_every_rule_that_can_be_switched_off_has_a_test_here():
    import inspect
    import sys
    here = inspect.getsource(sys.modules[__name__])
    assert [r.name for r in RULES if not r.core and f'"{r.name}"' not in here] == []


def test_a_signature_and_its_date_are_a_signature_block_not_pairs():
    from models.extraction.forms import decode_form_page
    lines = [("姓名：张三", [100, 100, 300, 125]), ("负责人签名：李四", [100, 300, 330, 325]),
             ("日期：2024年6月23日", [400, 300, 640, 325]), ("填表日期：2024年6月1日", [100, 500, 400, 525])]
    page, pred = _form_page(lines)
    form = decode_form_page(page, pred, FORM_TAGS)
    assert [(p.key, p.value) for p in form.pairs] == [("姓名", "张三"), ("填表日期", "2024年6月1日")]
    assert [(p.key, p.value) for p in form.signatures] == [("负责人签名", "李四"), ("日期", "2024年6月23日")]
    form = decode_form_page(page, pred, FORM_TAGS, off=frozenset(["form_signatures"]))
    assert form.signatures == [] and ("负责人签名", "李四") in [(p.key, p.value) for p in form.pairs]

def test_type_unsure_is_generic():
    types = ["vat_invoice", "receipt", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    newspaper = ["本报讯", "记者 王芳", "全市新增绿地面积12.5万平方米"]
    unsure = np.array([0.2, 0.45, 0.35])            # a receipt, the classifier says, at 45%
    assert types[pick_type(unsure, types, schemas, newspaper, generic=2)] == "generic_form"
    assert types[pick_type(unsure, types, schemas, newspaper, off=frozenset(["type_unsure_is_generic"]),
                           generic=2)] == "receipt"
    sure = np.array([0.0, 0.9999, 0.0001])
    assert types[pick_type(sure, types, schemas, ["好又多超市", "合计：12.50"], generic=2)] == "receipt"


def test_keys_read_in_traditional_script_or_misread_still_count_as_printed():
    # a traditional-script e-invoice photographed with the tax bureau's seal over its title: the keys are
    # printed, but as 開票日期 and 發票號码, not the schema's 开票日期 / 发票号码
    types = ["e_invoice", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    lines = ["電", "通發票)", "發票號码：24331125618447864449", "開票日期：2024年09月20日", "名稱",
             "统一社會信用代码/纳税人阈别號", "项目名稱", "规格型號", "單位", "数量", "單價", "金额", "税率/微收率",
             "合計", "價税合計（大寫）", "備註", "開票人：王霞艳"]
    leaning = np.array([0.999, 0.001])
    assert types[pick_type(leaning, types, schemas, lines, generic=1)] == "e_invoice"
    # a form that shares two words with an invoice is still no invoice
    form = ["个人信息登记表", "姓名", "张三", "出生日期", "1990年01月01日", "联系电话", "13800000000", "备注"]
    assert types[pick_type(leaning, types, schemas, form, generic=1)] == "generic_form"


def test_form_layout_rules():
    two_line = [("政治", [100, 100, 148, 124]), ("面貌", [100, 128, 148, 152]), ("中共党员", [260, 114, 360, 138])]
    assert _pairs(two_line) == [("政治面貌", "中共党员")]
    assert ("政治面貌", "中共党员") not in _pairs(two_line, off=frozenset(["form_join_labels"]))
    wrapped = [("通讯地址：湖南省长沙市岳麓区", [100, 100, 460, 124]), ("麓山南路932号", [210, 128, 380, 152])]
    assert _pairs(wrapped) == [("通讯地址", "湖南省长沙市岳麓区麓山南路932号")]
    assert _pairs(wrapped, off=frozenset(["form_join_values"])) == [("通讯地址", "湖南省长沙市岳麓区")]
    row = [("学习经历", [100, 100, 196, 124]), ("2015-2019", [260, 100, 380, 124]), ("2019-2022", [480, 100, 600, 124])]
    assert _pairs(row) == [("学习经历", "2015-2019"), ("学习经历", "2019-2022")]
    assert _pairs(row, off=frozenset(["form_row_values"])) == [("学习经历", "2015-2019")]
    empty = [("申报学院（部门）：", [100, 100, 300, 124]), ("姓名", [100, 140, 148, 164]),
             ("李明", [260, 140, 310, 164])]
    assert _pairs(empty) == [("姓名", "李明")]
    assert ("申报学院（部门）", "姓名") in _pairs(empty, off=frozenset(["form_label_not_value"]))
    hint = [("签名：", [100, 100, 160, 124]), ("（使领馆人员填写）", [300, 100, 500, 124])]
    assert _pairs(hint) == []
    assert _pairs(hint, off=frozenset(["form_hints", "form_signatures"])) == [("签名", "（使领馆人员填写）")]
    boxes = [("性别", [100, 100, 148, 124]), ("□男", [200, 100, 250, 124]), ("☑女", [280, 100, 330, 124])]
    assert _pairs(boxes) == [("性别", "女")]
    assert _pairs(boxes, off=frozenset(["form_check_groups"])) != [("性别", "女")]
    grid = [(t, [60, 100 + 50 * (i // 2), 108, 124 + 50 * (i // 2)] if i % 2 == 0 else
             [640, 103 + 50 * (i // 2), 760, 127 + 50 * (i // 2)])
            for i, t in enumerate(["学号", "2023283597", "院系", "经济管理系", "班级", "机械2002班"])]
    grid_tags = ["QQ", "AAAAAAAAAA", "QQ", "AAAAA", "QQ", "AAAAAAA"]
    assert _pairs(grid, grid_tags) == [("学号", "2023283597"), ("院系", "经济管理系"), ("班级", "机械2002班")]
    corner = [("学校代码", [690, 74, 770, 98]), ("10279", [778, 76, 826, 94]), ("姓名：", [100, 200, 160, 224]),
              ("张三", [180, 200, 230, 224])]
    corner_tags = ["QQQQ", "OOOOO", "QQQ", "AA"]       # the model knows the page and calls 10279 furniture
    assert ("学校代码", "10279") in _pairs(corner, corner_tags)
    table = [("姓名", [100, 300, 148, 324]), ("关系", [300, 300, 348, 324]), ("单位", [500, 300, 548, 324]),
             ("李明", [100, 340, 150, 364]), ("父子", [300, 340, 348, 364]), ("华为", [500, 340, 548, 364]),
             ("王芳", [100, 380, 150, 404]), ("母子", [300, 380, 348, 404]), ("腾讯", [500, 380, 548, 404])]
    table_tags = ["QQ"] * 3 + ["AA"] * 6
    assert _pairs(table, table_tags) == []
    assert ("关系", "父子") in _pairs(table, table_tags, off=frozenset(["form_data_tables"]))
    # a cover's rows align their labels' ends and values' starts: a line OCR read glued across that column
    # is cut there, though no known word says where the label ends
    cover = [("所在学院", [397, 588, 517, 613]), ("外国语学院", [541, 588, 667, 613]),
             ("论文提交日期", [349, 653, 513, 676]), ("2018年11月6日", [539, 653, 698, 676]),
             ("研究方向计算机视觉", [413, 716, 650, 742])]
    cover_tags = ["QQQQ", "AAAAA", "QQQQQQ", "A" * 11, "A" * 9]
    assert ("研究方向", "计算机视觉") in _pairs(cover, cover_tags)
    assert ("研究方向", "计算机视觉") not in _pairs(cover, cover_tags, off=frozenset(["form_column_cuts"]))
    # ... but not a title in a larger type over them, nor a line that is not among the rows
    title = [("高速铁路桥梁振动特性分析", [413, 420, 760, 452])] + cover[:4]
    assert [k for k, _ in _pairs(title, ["A" * 12] + cover_tags[:4])] == ["所在学院", "论文提交日期"]
    # form_link: the head's logit picks the line below over the name right of the key
    rows = [("负责人", [100, 100, 172, 124]), ("王五", [300, 100, 350, 124]), ("赵六", [100, 130, 150, 154])]
    page = Page(index=0, width=1200, height=1600, lines=[Line(t, box_to_quad(b)) for t, b in rows])
    probs = [np.eye(len(FORM_LABELS))[np.zeros(len(t), int)] for t, _ in rows]
    pred = PagePrediction(np.zeros(1), probs, lambda a, b: {(0, 2): 6.0, (0, 1): -6.0}.get((a[0], b[0])))
    assert [(p.key, p.value) for p in decode_form(page, pred, FORM_LABELS)] == [("负责人", "赵六")]
    assert [(p.key, p.value) for p in decode_form(page, pred, FORM_LABELS, off=frozenset(["form_link"]))] == \
        [("负责人", "王五")]


def test_type_unsure_is_generic_covers_a_registration_form_the_classifier_calls_a_receipt():
    """A registration form (many key-colon lines, no title, no receipt wording) that the classifier
    calls a VAT invoice, then a receipt at 0.001: not a receipt with receipt fields, a generic form."""
    types = ["vat_invoice", "e_invoice", "receipt", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    form = ["学生登记表", "姓名：李明", "性别：男", "出生日期：2001年3月2日", "学号：20190312",
            "专业：软件工程", "联系电话：13800001111", "家庭住址：湖南省长沙市"]
    probs = np.array([0.996, 0.002, 0.001, 0.001])
    assert types[pick_type(probs, types, schemas, form, generic=3)] == "generic_form"
    assert types[pick_type(probs, types, schemas, form, off=frozenset(["type_unsure_is_generic"]),
                           generic=3)] == "generic_form"           # form_without_evidence catches it too


def test_key_colon_lines_without_receipt_wording_are_no_receipt():
    """The classifier fairly sure of a receipt (0.8) on a page of key-colon lines with no receipt wording:
    a form. A receipt prints its sums, and stays a receipt at the same score."""
    types = ["vat_invoice", "receipt", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    leaning = np.array([0.1, 0.8, 0.1])
    form = ["出国人员登记表", "姓名：李明", "性别：男", "出生日期：2001年3月2日", "护照号码：E12345678",
            "联系电话：13800001111", "家庭住址：湖南省长沙市"]
    assert types[pick_type(leaning, types, schemas, form, generic=2)] == "generic_form"
    till = ["好又多超市", "单号：20240512001", "日期：2024-05-12", "收银员：王芳", "电话：0731-8888", "合计：12.50"]
    assert types[pick_type(leaning, types, schemas, till, generic=2)] == "receipt"


def test_a_short_title_needs_three_of_its_characters_printed_as_a_unit():
    from dataclasses import replace

    from models.extraction.settings import DEFAULT_SETTINGS
    types = ["business_licence", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    lean_licence = np.array([0.9, 0.1])
    report = ["常熟银行2023年半年报点评", "营业收入(百万元)",
              "本报告署名分析师具有中国证券业协会授予的证券投资咨询执业资格并登记为注册分析师"]
    assert types[pick_type(lean_licence, types, schemas, report)] == "generic_form"
    loose = replace(DEFAULT_SETTINGS, title_min_chars=1, title_evidence_extra=1000)
    assert types[pick_type(lean_licence, types, schemas, report, loose)] == "business_licence"
    licence = ["营业执照", "统一社会信用代码 91310115MA1K4QXX2Y", "名称 上海某某科技有限公司"]
    assert types[pick_type(lean_licence, types, schemas, licence)] == "business_licence"
    misread = ["营业执熙", "名称 上海某某科技有限公司"]      # one character misread: still the title
    assert types[pick_type(lean_licence, types, schemas, misread)] == "business_licence"


def test_grow_code_run():
    # the model's tags stop three characters short of an 18-character tax ID: 15 still read as an old tax ID
    rows = _stacked(["9232050573F3U65984"])
    on, off = _on_off("grow_code_run", "e_invoice", rows, [Span("buyer_tax_id", 0, 0, 15, 0.9)])
    assert _value(on, "buyer_tax_id") == "9232050573F3U65984" and _value(off, "buyer_tax_id") == "9232050573F3U65"
    # a run that does not read as the type (a code glued to a number) is not taken whole
    on = _fields("vat_invoice", _stacked(["发票代码：04201231235548364289"]), [Span("invoice_code", 0, 5, 17, 0.9)])
    assert _value(on, "invoice_code") == "042012312355"


def test_fill_by_key_phrase():
    rows = _stacked(["校验码：29392485974249617064", "纳税人识别号：9251010749A2478Q71", "发票号码：4836428"])
    on, off = _on_off("fill_by_key_phrase", "vat_invoice", rows, [])
    assert _value(on, "check_code") == "29392485974249617064" == _value(off, "check_code")   # fill_by_pattern
    off = _fields("vat_invoice", rows, [], frozenset(["fill_by_key_phrase", "fill_by_pattern"]))
    assert "check_code" not in off.fields
    # 纳税人识别号 names the buyer's and the seller's: no owner; 4836428 does not read as an 8-digit number
    assert "buyer_tax_id" not in on.fields and "seller_tax_id" not in on.fields and "invoice_number" not in on.fields
    # a value a chosen field already holds is not taken twice
    taken = _fields("vat_invoice", rows, [Span("invoice_number", 0, 4, 24, 0.9)], frozenset(["rekey_after_key_phrase"]))
    assert _value(taken, "invoice_number") == "29392485974249617064" and "check_code" not in taken.fields


def test_fields_by_label_cells():
    # a licence printed as label | value cells in two columns; the model, on a layout it never saw, took
    # the scope's first line for the address, a piece of the capital, and no date at all
    rows = [("名称", [130, 444, 228, 478]), ("南京佳浩房地产开发有限公司", [268, 453, 550, 484]),
            ("注册资本", [830, 461, 922, 489]), ("人民币陆拾万元整", [964, 466, 1139, 497]),
            ("成立日期", [828, 513, 921, 546]), ("2020年11月15日", [961, 520, 1119, 551]),
            ("经营范围", [130, 610, 221, 638]), ("机械设备租赁；销售计算机、软件", [264, 616, 762, 651]),
            ("住所", [824, 621, 920, 655]), ("南京市鼓楼区望江路526号", [961, 630, 1333, 662]),
            ("法定代表人", [131, 554, 244, 586]), ("营业期限", [262, 561, 360, 588])]
    spans = [Span("name", 1, 0, 13, 0.9), Span("registered_capital", 3, 1, 8, 0.6), Span("address", 7, 0, 6, 0.5),
             Span("business_scope", 7, 0, 15, 0.4)]
    on, off = _on_off("fields_by_label_cells", "business_licence", rows, spans)
    assert (_value(on, "address"), _value(on, "registered_capital"), _value(on, "established_date")) == \
        ("南京市鼓楼区望江路526号", "600000.00", "2020-11-15")
    assert (_value(off, "address"), _value(off, "established_date")) == ("机械设备租赁", None)
    assert _value(on, "name") == _value(off, "name") == "南京佳浩房地产开发有限公司"     # the model's, read as a name
    # a label right of a label (法定代表人 | 营业期限: an empty cell) gives neither a value
    assert "legal_representative" not in on.fields and "business_term" not in on.fields
    # a piece of a line is weak (程 of the scope's line), and with 住所 unread, the address may not keep the
    # scope's cell
    unread = [r for r in rows if r[0] != "住所"]
    spans = [Span("business_scope", 7, 7, 8, 0.9), Span("address", 7, 0, 6, 0.5)]
    on, off = _on_off("fields_by_label_cells", "business_licence", unread, spans)
    assert _value(on, "business_scope") == "机械设备租赁;销售计算机、软件" and "address" not in on.fields
    assert (_value(off, "business_scope"), _value(off, "address")) == ("销", "机械设备租赁")
    # the model took a later line of the scope, in no label's cell, for the address: 住所's cell wins
    more = rows + [("加工、建筑装饰工程施工；物业管理", [264, 660, 762, 690])]
    spans = [Span("business_scope", 7, 0, 15, 0.9), Span("address", 12, 0, 16, 0.6)]
    on, off = _on_off("fields_by_label_cells", "business_licence", more, spans)
    assert _value(on, "address") == "南京市鼓楼区望江路526号"
    assert _value(off, "address") == "加工、建筑装饰工程施工;物业管理"
    # the model's own choice of that cell is kept as it is
    spans = [Span("business_scope", 7, 0, 15, 0.9), Span("address", 9, 0, 14, 0.6)]
    assert _value(_fields("business_licence", more, spans), "address") == "南京市鼓楼区望江路526号"


def test_fill_by_pattern():
    # a ticket's departure time printed after its date; the model tagged the date only, the seat short of 号
    rows = _stacked(["昆明南站", "2020年11月22日15:23开", "06车017号上铺", "新空调硬卧", "检票口：4B"])
    spans = [Span("departure_date", 1, 0, 11, 0.9), Span("seat", 2, 0, 6, 0.9), Span("from_station", 0, 0, 4, 0.9)]
    on, off = _on_off("fill_by_pattern", "train_ticket", rows, spans)
    assert (_value(on, "departure_time"), _value(on, "seat")) == ("15:23", "06车017号上铺")
    assert (_value(off, "departure_time"), _value(off, "seat")) == (None, "06车017")
    # the seat class the model left untagged: the schema's pattern lists the railway's classes
    assert _value(on, "seat_class") == "新空调硬卧" and _value(off, "seat_class") is None
    assert _value(on, "departure_date") == "2020-11-22"
    assert _value(on, "from_station") == "昆明南"                    # the schema's drop_suffix: 站 is printed, not kept
    # two different times on the page: which one is not known, nothing is filled
    two = _fields("train_ticket", _stacked(["2020年11月22日15:23开", "到达 18:40"]),
                  [Span("departure_date", 0, 0, 11, 0.9)])
    assert "departure_time" not in two.fields


def test_amounts_whole_and_an_amount_after_its_key_phrase():
    # the model took 1401051951 of the passenger's masked ID for the price; ¥443.5元 is printed after ¥
    rows = _stacked(["￥443.5元", "1401051951****7740 白浩娜"])
    spans = [Span("price", 1, 0, 10, 0.4)]
    on = _fields("train_ticket", rows, spans)
    assert _value(on, "price") == "443.50"
    assert _value(_fields("train_ticket", rows, spans, frozenset(["amounts_whole"])), "price") == "1401051951.00"
    assert "price" not in _fields("train_ticket", rows, spans, frozenset(["fill_by_key_phrase"])).fields
    # a figure standing alone is a price as before
    assert _value(_fields("train_ticket", _stacked(["66.50"]), [Span("price", 0, 0, 5, 0.4)]), "price") == "66.50"


def test_title_nearest():
    for read, title in [("电子发票普通发票）", "电子发票(普通发票)"),
                        ("電子發票（增值税專用發票）", "電子發票(增值稅專用發票)"),
                        ("电子发票（增值税奇用发票）", "电子发票(增值税专用发票)"),
                        ("电子发票(普通发票)(龙江税务局)", "电子发票(普通发票)"),
                        ("电子发票普通发票", "电子发票(普通发票)")]:        # both brackets dropped
        on, off = _on_off("title_nearest", "e_invoice", _stacked([read]), [Span("title", 0, 0, len(read), 0.9)])
        assert _value(on, "title") == title and _value(off, "title") != title, read
    # a province before the title stays; a reading as near to two titles is left as read
    on = _fields("vat_invoice", _stacked(["福建增值税专用发栗"]), [Span("title", 0, 0, 9, 0.9)])
    assert _value(on, "title") == "福建增值税专用发票"
    on = _fields("vat_invoice", _stacked(["增值税电子发票"]), [Span("title", 0, 0, 7, 0.9)])
    assert _value(on, "title") == "增值税电子发票"
    # brackets count as nothing, but the characters read before the title still count from the reading
    on = _fields("vat_invoice", _stacked(["电子发票(增值税专用发票)"]), [Span("title", 0, 0, 13, 0.9)])
    assert _value(on, "title") == "电子发票(增值税专用发票)"


def _totals(tax_line: int, words: str = "壹拾肆万叁仟柒佰伍拾贰圆壹角捌分") -> tuple[list, list[Span]]:
    rows = [("375.56", [1434, 300, 1500, 320]), ("合计", [80, 400, 130, 420]),
            ("¥131614.67", [1088, 400, 1197, 420]), ("V12137.51", [1398, 400, 1495, 420]),
            ("价税合计（大写）", [80, 440, 250, 460]), (words, [300, 440, 600, 460]),
            ("(小写)¥143752.18", [1066, 440, 1241, 460])]
    spans = [Span("total_amount", 2, 1, 10, 0.9), Span("total_tax", tax_line, 0, len(rows[tax_line][0]), 0.9),
             Span("total_with_tax", 6, 5, 15, 0.9), Span("total_with_tax_in_words", 5, 0, 1, 0.9)]
    return rows, spans


def test_totals_by_arithmetic():
    # the model took an item row's tax for 合计税额: the totals row's V12137.51 (¥ read as V) makes the sum hold
    rows, spans = _totals(0)
    on, off = _on_off("totals_by_arithmetic", "vat_invoice", rows, spans)
    assert _value(on, "total_tax") == "12137.51" and _value(off, "total_tax") == "375.56"
    assert _value(on, "total_amount") == "131614.67" and _value(on, "total_with_tax") == "143752.18"
    assert any("total_tax" in w and "12137.51" in w for w in on.warnings)
    # totals that add up are left alone
    rows, spans = _totals(3)
    assert _value(_fields("vat_invoice", rows, spans), "total_tax") == "12137.51"
    # one total kept and nothing else agreeing (no words, no （小写） total on the page) is a coincidence,
    # not evidence; the printed （小写） total, read after its key phrase (fill_by_key_phrase), agrees
    rows, spans = _totals(0, words="")
    assert _value(_fields("vat_invoice", rows[:6], spans[:2]), "total_tax") == "375.56"
    assert _value(_fields("vat_invoice", rows, spans[:2]), "total_tax") == "12137.51"


def test_words_by_arithmetic():
    # 大写 words OCR misread (教柒圳 for 柒佰捌) and the model tagged one character of: the sum confirms 784.98
    rows = [("¥694.67", [700, 400, 800, 420]), ("¥90.31", [1050, 400, 1150, 420]),
            ("教柒圳拾肆圆玖角捌分", [300, 440, 600, 460]), ("(小写)¥784.98", [800, 440, 1000, 460])]
    spans = [Span("total_amount", 0, 1, 7, 0.9), Span("total_tax", 1, 1, 6, 0.9), Span("total_with_tax", 3, 5, 11, 0.9),
             Span("total_with_tax_in_words", 2, 1, 2, 0.9)]
    on, off = _on_off("words_by_arithmetic", "vat_invoice", rows, spans)
    assert _value(on, "total_with_tax_in_words") == "784.98"
    assert on.fields["total_with_tax_in_words"].raw == "柒圳拾肆圆玖角捌分"
    assert _value(off, "total_with_tax_in_words") != "784.98"
    # words printed as a well-formed amount of their own are kept for the validator to report
    rows[2] = ("柒佰捌拾叁圆玖角捌分", [300, 440, 600, 460])
    spans[3] = Span("total_with_tax_in_words", 2, 0, 10, 0.9)
    assert _value(_fields("vat_invoice", rows, spans), "total_with_tax_in_words") == "783.98"


def test_join_cell_pieces():
    # an item name the model tagged in three pieces (*, *纸制品*, 印) is one cell, the whole line
    rows = [("*纸制品*复印纸", [60, 300, 200, 320]), ("30", [470, 300, 480, 320]), ("6266.81", [640, 300, 720, 320])]
    spans = [Span("items.name", 0, 0, 1, 0.9), Span("items.name", 0, 1, 5, 0.9), Span("items.name", 0, 7, 8, 0.6),
             Span("items.quantity", 1, 0, 2, 0.9), Span("items.amount", 2, 0, 7, 0.9)]
    on, off = _on_off("join_cell_pieces", "vat_invoice", rows, spans)
    assert on.items[0]["name"].value == "*纸制品*复印纸" and off.items[0]["name"].value == "纸制品*"
    # pieces of two keys on one line, or a line with a space, stay apart
    rows[0] = ("*纸制品* 复印纸", [60, 300, 200, 320])
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "纸制品*"
    rows[0] = ("*纸制品*复印纸", [60, 300, 200, 320])
    spans[2] = Span("items.spec", 0, 7, 8, 0.6)
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "纸制品*"


def test_drop_weak_pieces():
    # a stray character of the 大写 line tagged as the seller's name at a higher score than the whole name
    rows = _stacked(["玖拾捌万零柒佰陆拾叁圆陆角伍分", "名称：新锦咨询服务有限公司"])
    spans = [Span("seller_name", 0, 1, 2, 0.99), Span("seller_name", 1, 3, 13, 0.8)]
    on, off = _on_off("drop_weak_pieces", "vat_invoice", rows, spans)
    assert _value(on, "seller_name") == "新锦咨询服务有限公司" and _value(off, "seller_name") == "拾"
    # a misread key (纳视人识剧号：...) is a key slot, not the buyer's name
    rows = _stacked(["纳视人识剧号：9251010749A2478Q71", "称：成都锦旋辰文化传媒有限公司"])
    spans = [Span("buyer_name", 0, 0, 5, 0.98), Span("buyer_name", 1, 2, 15, 0.97)]
    assert _value(_fields("vat_invoice", rows, spans), "buyer_name") == "成都锦旋辰文化传媒有限公司"
    # a piece that is the field's only candidate stays
    assert _value(_fields("vat_invoice", rows, spans[:1]), "buyer_name").startswith("纳视人识剧")


def test_text_through_colon_when_the_label_ends_untagged():
    rows = [("备", [50, 440, 70, 460]), ("合同号：HT07708944", [92, 460, 243, 477])]
    on, off = _on_off("text_through_colon", "vat_invoice", rows, [Span("remarks", 1, 0, 2, 0.9)])
    assert on.fields["remarks"].raw == "合同号：HT07708944" and off.fields["remarks"].raw == "合同"
    rows[1] = ("合同 号：HT07708944", [92, 460, 243, 477])       # a space before the colon: another cell
    assert _fields("vat_invoice", rows, [Span("remarks", 1, 0, 2, 0.9)]).fields["remarks"].raw == "合同"


def test_lone_cells():
    # the model tagged the ⓧ before the 大写 line (read 8) as a quantity: a row of that one cell is no goods
    rows, spans = _goods()
    rows += [("价税合计（大写）", [80, 440, 250, 460]), ("8", [270, 440, 285, 460])]
    spans += [Span("items.quantity", 10, 0, 1, 0.9)]
    on = _fields("vat_invoice", rows, spans)
    assert len(on.items) == 1 and on.items[0]["name"].value == "*运输服务*国内货物运输服务"
    off = _fields("vat_invoice", rows, spans, frozenset(["lone_cells"]))
    assert len(off.items) == 2 and {k: f.value for k, f in off.items[1].items()} == {"quantity": "8"}


def test_item_arithmetic():
    y = [300, 320]
    rows = [("*文具*中性笔", [60, y[0], 300, y[1]]), ("3", [470, y[0], 480, y[1]]), ("809.79", [520, y[0], 600, y[1]]),
            ("2609.37", [640, y[0], 720, y[1]]), ("135", [760, y[0], 790, y[1]]), ("339.22", [820, y[0], 900, y[1]])]
    spans = [Span("items.name", 0, 0, 7, 0.9), Span("items.quantity", 1, 0, 1, 0.9),
             Span("items.unit_price", 2, 0, 6, 0.9), Span("items.amount", 3, 0, 7, 0.9),
             Span("items.tax_rate", 4, 0, 3, 0.9), Span("items.tax", 5, 0, 6, 0.9)]
    on, off = _on_off("item_arithmetic", "vat_invoice", rows, spans)
    # 339.22 / 2609.37 is 13%: 135 is 13% misread; 2609.37 / 3 = 869.79, one digit from 809.79
    assert on.items[0]["tax_rate"].value == "13%" and on.items[0]["unit_price"].value == "869.79"
    assert off.items[0]["tax_rate"].value != "13%" and off.items[0]["unit_price"].value == "809.79"
    # a tax misread by more than one character is left as read
    rows[5] = ("389.72", [820, y[0], 900, y[1]])
    rows[4] = ("13%", [760, y[0], 790, y[1]])
    assert _fields("vat_invoice", rows, spans).items[0]["tax"].value == "389.72"
    rows[5] = ("339.2", [820, y[0], 900, y[1]])
    spans[5] = Span("items.tax", 5, 0, 5, 0.9)
    assert _fields("vat_invoice", rows, spans).items[0]["tax"].value == "339.22"


def test_star_name_reads_a_dot_as_the_second_star():
    rows, spans = _goods("*日用杂品·保温袋")
    spans[0] = Span("items.name", 0, 0, 9, 0.9)
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "*日用杂品*保温袋"
    rows, spans = _goods('*"日用杂品*保温袋')
    spans[0] = Span("items.name", 0, 0, 10, 0.9)
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "*日用杂品*保温袋"
    assert _fields("vat_invoice", rows, spans, frozenset(["star_name"])).items[0]["name"].value == '*"日用杂品*保温袋'


def test_check_char_repair():
    # V is no GB 32100 symbol: the check character allows exactly one symbol in its place
    rows = _stacked(["纳税人识别号：12210V02TT987N79XT"])
    on, off = _on_off("check_char_repair", "vat_invoice", rows, [Span("seller_tax_id", 0, 7, 25, 0.9)])
    assert _value(on, "seller_tax_id") == "12210202TT987N79XT" and _value(off, "seller_tax_id") == "12210V02TT987N79XT"
    assert any("check character" in w for w in on.warnings)
    # a code of alphabet symbols that does not check (a mock value) is left as read
    rows = _stacked(["纳税人识别号：91011111AA2AAAAA00"])
    assert _value(_fields("vat_invoice", rows, [Span("seller_tax_id", 0, 7, 25, 0.9)]), "seller_tax_id") == \
        "91011111AA2AAAAA00"


def test_a_title_line_misread_in_a_character_still_names_its_type():
    import dataclasses

    from models.extraction.settings import DEFAULT_SETTINGS
    types = ["vat_invoice", "e_invoice", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    lean_vat = np.array([0.6, 0.3, 0.1])
    # 票 lost under the seal: the VAT title inside the e-invoice's is read exactly, the e-invoice's one edit off
    page = ["电子发（增值税专用发票）", "发票号码：24311936202392949404"]
    assert types[pick_type(lean_vat, types, schemas, page)] == "e_invoice"
    exact = dataclasses.replace(DEFAULT_SETTINGS, title_line_edits=0)
    assert types[pick_type(lean_vat, types, schemas, page, exact)] == "vat_invoice"
    # a bracket dropped and one lost: 电子发票普通发票）
    assert types[pick_type(lean_vat, types, schemas, ["电子发票普通发票）"])] == "e_invoice"


def test_prefer_plausible():
    # three digits of the cipher area tagged as the seller's tax ID more surely than the tax ID itself
    rows = _stacked(["-730>103*64//5>44068-<74963", "纳税人识别号：916101139A151A634F"])
    spans = [Span("seller_tax_id", 0, 5, 8, 0.48), Span("seller_tax_id", 1, 7, 25, 0.41)]
    on, off = _on_off("prefer_plausible", "vat_invoice", rows, spans)
    assert _value(on, "seller_tax_id") == "916101139A151A634F" and _value(off, "seller_tax_id") == "103"
    # the only candidate stays, plausible or not
    assert _value(_fields("vat_invoice", rows, spans[:1]), "seller_tax_id") == "103"


def test_drop_weak_pieces_keeps_a_remark_that_is_label_and_content():
    rows = [("备", [50, 440, 70, 460]), ("合同号：HT07708944", [92, 460, 243, 477])]
    spans = [Span("remarks", 1, 0, 2, 0.95), Span("remarks", 1, 4, 14, 0.9)]
    assert _fields("vat_invoice", rows, spans).fields["remarks"].raw == "合同号：HT07708944"


def test_words_by_arithmetic_repairs_a_well_formed_piece_of_the_words():
    # 陆角伍分 is a well-formed amount, but only the end of the 大写 its line holds
    rows = [("V924965.90", [700, 400, 800, 420]), ("V55797.75", [1050, 400, 1150, 420]),
            ("政拾州万零渠佰陆拾泰国陆角伍分", [300, 440, 600, 460]), ("(小写)¥980763.65", [800, 440, 1000, 460])]
    spans = [Span("total_amount", 0, 0, 10, 0.9), Span("total_tax", 1, 0, 9, 0.9),
             Span("total_with_tax", 3, 5, 15, 0.9), Span("total_with_tax_in_words", 2, 11, 15, 0.9)]
    on, off = _on_off("words_by_arithmetic", "vat_invoice", rows, spans)
    assert _value(on, "total_with_tax_in_words") == "980763.65" and _value(off, "total_with_tax_in_words") == "0.65"


def test_split_column_cells():
    # three rows' units read as one vertical box 次台箱: one cell per character, each in its own row
    rows = [("*邮政服务*快递服务费", [240, 480, 440, 512]), ("9.43", [980, 482, 1040, 510]),
            ("*办公设备*碎纸机", [240, 516, 400, 548]), ("484.03", [980, 518, 1040, 546]),
            ("*饮料*矿泉水", [240, 552, 400, 584]), ("36.79", [980, 554, 1040, 582]),
            ("次台箱", [792, 482, 830, 584])]
    spans = [Span("items.name", 0, 0, 11, 0.9), Span("items.amount", 1, 0, 4, 0.9),
             Span("items.name", 2, 0, 9, 0.9), Span("items.amount", 3, 0, 6, 0.9),
             Span("items.name", 4, 0, 7, 0.9), Span("items.amount", 5, 0, 5, 0.9), Span("items.unit", 6, 0, 3, 0.9)]
    on, off = _on_off("split_column_cells", "vat_invoice", rows, spans)
    assert [r["unit"].value for r in on.items] == ["次", "台", "箱"]
    assert [r["unit"].value for r in off.items if "unit" in r] == ["次台箱"]
    # a unit of two characters on one line (wider than tall) stays whole
    rows[6] = ("千个", [792, 482, 830, 510])
    spans[6] = Span("items.unit", 6, 0, 2, 0.9)
    assert _fields("vat_invoice", rows, spans).items[0]["unit"].value == "千个"


def test_star_name_reads_a_quote_before_the_category_as_its_star():
    rows, spans = _goods("“餐饮服务*餐饮服务")
    spans[0] = Span("items.name", 0, 0, 10, 0.9)
    assert _fields("vat_invoice", rows, spans).items[0]["name"].value == "*餐饮服务*餐饮服务"


def test_key_phrases_keep_an_invoice_whose_title_is_lost_under_its_seal():
    """A VAT invoice whose title the seal hid (OCR read only the seal's 甘肃税务局) still prints its keys
    (发票代码, 开票日期, 校验码, 机器编号, 纳税人识别号 ...): it stays a VAT invoice. A form the classifier
    leaned the same way prints none of them and stays a form (doctype.key_evidence)."""
    types = ["vat_invoice", "e_invoice", "generic_form"]
    schemas = {t: load_schema(t) for t in types}
    lean_vat = np.array([0.8, 0.1, 0.1])
    sealed = ["发票代码：062012151100", "发票号码：73256142", "甘肃税务局", "开票日期：2021年08月20日",
              "校验码：33093473469410784182", "机器编号：603653488843", "名称：鼎朗锦餐饮管理有限公司",
              "纳税人识别号：91130102XU27316159", "地址、电话：上海市浦东新区天府大道104号", "开户行及账号：中信银行",
              "价税合计（大写）", "（小写）¥23570.06", "收款人：江远勇", "复核：王芳", "开票人：钟伟"]
    assert types[pick_type(lean_vat, types, schemas, sealed)] == "vat_invoice"
    form = ["个人信息登记表", "姓名：张三", "现住址：北京市", "联系电话：13800001111", "填表日期：2024年5月1日"]
    assert types[pick_type(lean_vat, types, schemas, form)] == "generic_form"
    # three keys are not yet an invoice's: a form asking for a tax ID, a name and a date stays a form
    few = ["供应商登记表", "纳税人识别号：", "开票日期：", "名称："]
    assert types[pick_type(lean_vat, types, schemas, few)] == "generic_form"


def test_items_below_heads_gives_a_name_over_the_table_back_to_the_header():
    """On a tilted photo the model took the buyer's name, printed just above the item table, mostly for a
    goods name; no goods stand above their column heads, so the line is the buyer's name. A line under
    the heads keeps its item tags, and a page without a head row is left as the model read it."""
    from models.extraction.items import above_item_heads
    from models.extraction.rules import decode_page, no_items_above_heads
    schema = load_schema("e_invoice")
    tilt = 0.04                      # the page turned about 2.3 degrees: the heads' row slopes down to the right

    def at(x0: float, y0: float, x1: float) -> list[float]:
        return [x0, y0 + tilt * x0, x1, y0 + 24 + tilt * x0]
    name, goods = "川智隆(海口)服饰有限公司", "*服装*衬衫"
    rows = [("名称", at(60, 100, 110)), (name, at(60, 130, 330)),
            ("项目名称", at(60, 190, 150)), ("单位", at(420, 190 - 12, 470)), ("数量", at(520, 190 - 12, 570)),
            ("单价", at(640, 190 - 12, 690)), ("金额", at(800, 190 - 12, 850)),
            (goods, at(60, 230, 200)), ("件", at(420, 230 - 12, 440)), ("120.00", at(800, 230 - 12, 860))]
    page = _page(rows)
    assert above_item_heads(page, schema) == {0, 1}
    labels = ["O", "B-buyer_name", "I-buyer_name", "B-items.name", "I-items.name", "B-items.unit", "I-items.unit",
              "B-items.amount", "I-items.amount"]
    probs = [_probs(labels, [{"O": 1.0}] * 2),
             _probs(labels, [{"I-items.name": 0.6, "I-buyer_name": 0.35, "O": 0.05}] * len(name))]
    probs += [_probs(labels, [{"O": 1.0}] * len(t)) for t, _ in rows[2:7]]
    probs += [_probs(labels, [{"I-items.name": 0.7, "I-buyer_name": 0.3}] * len(goods)),
              _probs(labels, [{"B-items.unit": 0.9, "O": 0.1}]),
              _probs(labels, [{"B-items.amount": 0.9, "O": 0.1}] + [{"I-items.amount": 0.9, "O": 0.1}] * 5)]
    allowed = np.array([True] * len(labels))

    def decode(off: frozenset[str] = frozenset()) -> Document:
        doc = Document(pages=[page], doc_type="e_invoice")
        decode_page(doc, page, PagePrediction(doc=np.zeros(1), probs=probs, link=lambda a, b: None),
                    schema, labels, allowed, False, off=off)
        return doc
    on, off = decode(), decode(frozenset(["items_below_heads"]))
    assert _value(on, "buyer_name") == "川智隆(海口)服饰有限公司"
    assert _value(off, "buyer_name") != _value(on, "buyer_name")
    moved = no_items_above_heads(probs, above_item_heads(page, schema), labels)
    assert moved[7] is probs[7] and np.allclose(moved[1][:, 3:].sum(), 0) and np.allclose(moved[1].sum(-1), 1)
    headless = _page([r for r in rows if r[0] not in ("单位", "数量", "单价", "金额")])
    assert above_item_heads(headless, schema) == set()


def test_the_encoder_reads_a_tilted_page_as_it_reads_the_page_level(tiny_model_dir):
    """With "level_lines" on, a page turned 6 degrees gives the encoder the level page's lines and boxes, so
    every character gets the level page's tag probabilities back; switched off, they differ."""
    import math

    from data.geometry import level_quads, reading_order
    from models.extractor import Extractor
    ex = Extractor.load(tiny_model_dir)
    texts = ["增值税普通发票", "发票号码：07099363", "名称：甲公司", "3", "30.00", "地址：乙路1号", "5", "50.00"]
    boxes = [[300, 20, 700, 60], [600, 80, 950, 110]] + \
        [[50 + 300 * c, 150 + 40 * r, 250 + 300 * c, 175 + 40 * r] for r in range(2) for c in range(3)]
    level = Page(index=0, width=1000, height=400, lines=[Line(t, box_to_quad(b)) for t, b in zip(texts, boxes)])
    tilted = Page(index=0, width=1000, height=400, lines=reading_order(
        [Line(t, q) for t, q in zip(texts, level_quads([box_to_quad(b) for b in boxes],
                                                       math.tan(math.radians(-6)), 1000, 400))]))
    want = {ln.text: p for ln, p in zip(level.lines, ex.predict_page(level).probs)}
    on = {ln.text: p for ln, p in zip(tilted.lines, ex.predict_page(tilted).probs)}
    off = {ln.text: p for ln, p in zip(tilted.lines, ex.predict_page(tilted, frozenset(["level_lines"])).probs)}
    assert all(np.allclose(on[t], want[t], atol=1e-4) for t in texts)
    assert not all(np.allclose(off[t], want[t], atol=1e-4) for t in texts)


def test_a_bare_first_option_before_boxed_ones_is_the_ticked_one():
    # 是否加急 | 是 | □否: the filled box before 是 was lost by OCR; the one bare option is the answer, not
    # the figure under the label (the next field's, or nobody's)
    lines = [("是否加急", [100, 100, 196, 124]), ("是", [220, 100, 244, 124]), ("□否", [280, 100, 330, 124]),
             ("2018.09", [100, 140, 180, 164])]
    page, pred = _form_page(lines, ["QQQQ", "O", "AA", "AAAAAAA"])
    assert [(p.key, p.value) for p in decode_form(page, pred, FORM_TAGS)] == [("是否加急", "是")]
    off = frozenset({"form_bare_first_option"})
    assert [(p.key, p.value) for p in decode_form(page, pred, FORM_TAGS, off=off)] == [("是否加急", "2018.09")]
    # a ticked box further on names the answer; two bare options leave it unknown
    assert _form_pairs([lines[0], lines[1], ("☑否", [280, 100, 330, 124])]) == [("是否加急", "否")]
    assert _form_pairs([lines[0], lines[1], lines[2], ("其他", [360, 100, 408, 124])]) == []


def test_a_far_value_with_another_label_before_it_on_its_row_is_that_labels():
    # two fields a row on a photo tilted 3 degrees, the left one (申请日期) empty; the right one's value
    # wraps over two lines, the second starting 3 px further left, so it is 通讯地址's nearest piece, and
    # the first line, nearer the date's row than 通讯地址 is, was offered to the date by the value column
    slope = 0.05
    rows = [("申请人", "上官磊雨"), ("受理编号", "5992290237"), ("经办人", "朱秀敏"), ("联系人", "谭红")]
    lines, tags = [], []

    def at(text: str, x: float, y: float, w: float, tag: str) -> None:
        top, end = y + slope * x, y + slope * (x + w)
        lines.append((text, [[x, top], [x + w, end], [x + w, end + 24], [x, top + 24]]))
        tags.append(tag * len(text))
    for i, (k, v) in enumerate(rows):
        at(k, 60, 100 + 60 * i, 24 * len(k), "Q")
        at(v, 700, 100 + 60 * i, 12 * len(v), "A")
    at("申请日期", 60, 340, 96, "Q")
    at("通讯地址", 520, 356, 96, "Q")
    at("南宁市青秀区湖滨路260号", 700, 338, 230, "A")
    at("工业园2609室", 697, 360, 120, "A")
    got = _form_pairs(lines, tags)
    assert ("通讯地址", "南宁市青秀区湖滨路260号工业园2609室") in got and not any(k == "申请日期" for k, _ in got)


def test_form_needs_structure():
    """A page taken for a form is one when label-like keys with short answers are a fair share of its lines
    (models/extraction/doctype.py form_structure); notes, a book page or a newspaper with a few pairs among
    their lines are `other` (the extractor: tests/test_doctype_other.py)."""
    from models.extraction.doctype import form_structure
    assert "form_needs_structure" in {r.name for r in RULES}      # switched off through Extractor.extract(off=)
    form = [Pair("姓名", "李明"), Pair("出生日期", "1983-06-08"), Pair("电话", "0731-56494164")]
    assert form_structure(form, ["申请表"] + [f"{p.key}：{p.value}" for p in form] * 2)
    prose = ["今年以来，全市茶园生态和茶叶品种更加优化，农民增收明显。"] * 40
    assert not form_structure(form, prose), "3 keys among 46 lines of running text"
    notes = [Pair("(1)含义", "短时间里的大气状况"), Pair("①卫星云图", "蓝色表示海洋"), Pair("(2)特点", "变化大")]
    assert not form_structure(notes, ["天气"] * 6), "outline points are not a form's blanks"
    sentences = [Pair("含义", "是一个地方短时间里阴晴，风雨、冷热等大气状况"),
                 Pair("影响", "天气对交通、生活，农业生产影响深刻。")]
    assert not form_structure(sentences, ["天气"] * 4), "an answer of running text is no form's answer"
