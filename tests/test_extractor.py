"""Model directories, windows, and an extractor built from a small untrained model: the shapes,
caching and error messages the UI and CLI rely on (no training here)."""
import numpy as np
import pytest

from data.document import Document, Line, Page, box_to_quad
from data.schemas import load_schema
from models.extraction import PageContext
from models.extraction.doctype import pick_type, title_evidence
from models.extraction.rules import decode_fields
from models.extractor import Extractor, get_extractor
from models.model_dir import ModelDirError, find_model_dirs


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir):
    return tiny_model_dir


def _page() -> Page:
    texts = ["增值税普通发票", "发票号码：07099363", "开票日期：2023年02月03日"] + \
        [f"第{i}行 货物 1 件" for i in range(20)]
    return Page(index=0, width=1000, height=1000,
                lines=[Line(t, box_to_quad([10, 20 + 40 * i, 400, 50 + 40 * i])) for i, t in enumerate(texts)])


def test_model_dir_is_complete_and_found(model_dir):
    for name in ("config.json", "model_state.safetensors", "vocab.txt", "labels.json", "schemas/vat_invoice.yaml"):
        assert (model_dir / name).is_file(), name
    assert model_dir.resolve() in find_model_dirs(model_dir.parent)


def test_missing_model_dir_says_how_to_train(tmp_path):
    with pytest.raises(ModelDirError, match="python -m training train"):
        Extractor.load(tmp_path / "nothing")


def test_long_page_is_cut_into_windows_and_every_character_gets_a_tag(model_dir):
    ex = Extractor.load(model_dir)
    page = _page()
    pred = ex.predict_page(page)
    assert sum(len(ln.text) for ln in page.lines) > ex.cfg.max_len      # more than one window
    for ln, probs in zip(page.lines, pred.probs):
        for ch, row in zip(ln.text, probs):
            assert ch.isspace() == bool(np.isnan(row).any())              # a tag for every visible char
            if not ch.isspace():
                assert abs(row.sum() - 1) < 1e-4
    assert abs(pred.doc.sum() - 1) < 1e-4


def test_extract_fills_a_document_within_the_schema(model_dir):
    ex = Extractor.load(model_dir)
    doc = ex.extract(Document(source="x", pages=[_page()]), doc_type="vat_invoice")
    assert doc.doc_type == "vat_invoice" and doc.doc_type_score == 1.0
    allowed = {f.key for f in ex.schemas["vat_invoice"].fields}
    assert set(doc.fields) <= allowed
    for f in doc.fields.values():     # every value maps back to its characters on the page
        assert doc.pages[0].text[f.span[0]:f.span[1]].strip(":： ") == f.raw
    assert "extract" in doc.timings
    auto = ex.extract(Document(pages=[_page()]))
    assert auto.doc_type in ("vat_invoice", "generic_form") and 0 <= auto.doc_type_score <= 1
    with pytest.raises(ValueError, match="choose from"):
        ex.extract(Document(pages=[_page()]), doc_type="passport")


def test_get_extractor_loads_once(model_dir):
    assert get_extractor(model_dir) is get_extractor(str(model_dir))


def _decode(ex, doc, page, spans, off=frozenset()):
    """The field, item and arithmetic rules over hand-made candidate spans (models/extraction/rules.py)."""
    decode_fields(PageContext(doc, page, ex.schemas[doc.doc_type], spans), off)


def _probs(labels, rows):
    """Per-character probability rows from {label: p} dicts (rest spread over nothing)."""
    out = np.zeros((len(rows), len(labels)))
    for i, row in enumerate(rows):
        if row is None:
            out[i] = np.nan
            continue
        for lab, p in row.items():
            out[i, labels.index(lab)] = p
    return out


def test_spans_follow_key_mass_not_a_shaky_b():
    from models.extraction.spans import decode_spans
    labels = ["O", "B-invoice_number", "I-invoice_number", "B-buyer_name", "I-buyer_name"]
    rows = [{"O": 0.9, "I-buyer_name": 0.1},                     # key text
            {"B-invoice_number": 0.3, "I-invoice_number": 0.35, "O": 0.35},   # unsure B/I, sure key
            None,                                                # a space inside the value
            {"I-invoice_number": 0.9, "O": 0.1},
            {"B-buyer_name": 0.8, "O": 0.2}]
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool))
    assert [(s.key, s.start, s.end) for s in spans] == [("invoice_number", 1, 4), ("buyer_name", 4, 5)]
    only_buyer = np.array([True, False, False, True, True])
    assert [s.key for s in decode_spans([_probs(labels, rows)], labels, only_buyer)] == ["buyer_name"]


def test_a_number_is_never_split_between_fields():
    from models.extraction.spans import decode_spans
    labels = ["O", "B-invoice_code", "I-invoice_code", "B-invoice_number", "I-invoice_number"]
    text = "代码031012306531"
    rows = [{"O": 1.0}] * 2 + [{"I-invoice_code": 0.9, "O": 0.1}] * 9 + [{"I-invoice_number": 0.8, "O": 0.2}] * 3
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool), [text])
    assert [(s.key, text[s.start:s.end]) for s in spans] == [("invoice_code", "031012306531")]


def test_a_name_after_its_colon_keeps_one_field_when_the_model_scatters_tags():
    from models.extraction.spans import decode_spans
    labels = ["O", "B-seller_name", "I-seller_name", "B-items.name", "I-items.name"]
    text = "称：深圳蛋糕餐饮有限公司"
    rows = ([{"O": 1.0}] * 2 + [{"B-seller_name": 0.8, "O": 0.2}, {"I-seller_name": 0.9, "O": 0.1},
                                 {"I-items.name": 0.6, "I-seller_name": 0.4}]
            + [{"I-seller_name": 0.7, "B-seller_name": 0.25, "O": 0.05}] * 7)
    probs = [_probs(labels, rows)]
    voted = decode_spans(probs, labels, np.ones(len(labels), bool), [text], {"seller_name"})
    assert [(s.key, text[s.start:s.end]) for s in voted] == [("seller_name", "深圳蛋糕餐饮有限公司")]
    # without the vote (a field that is not free text) the stray item tag still splits the name
    plain = decode_spans(probs, labels, np.ones(len(labels), bool), [text])
    assert ("seller_name", "深圳蛋糕餐饮有限公司") not in [(s.key, text[s.start:s.end]) for s in plain]


def test_a_value_with_junk_shrinks_to_what_reads_as_its_type():
    from data.schemas import FieldSpec
    from models.extraction import Span
    from models.extraction.base import plausible
    from models.extraction.fields import trim_to_type
    date = FieldSpec(key="date", label="日期", type="date")
    text = "日期：2024-08-3012:30"
    sp = trim_to_type(Span("date", 0, 3, len(text), 0.9), date, text)
    assert text[sp.start:sp.end] == "2024-08-30"
    tax = FieldSpec(key="buyer_tax_id", label="纳税人识别号", type="tax_id")
    assert plausible(tax, "91011111AA2AAAAA00") and not plausible(tax, "9579400323")
    code = FieldSpec(key="invoice_code", label="发票代码", type="code", pattern=r"\d{10}|\d{12}")
    text = "00100210001"      # off-pattern but clean: kept as read, never cut to ten digits
    assert trim_to_type(Span("invoice_code", 0, 0, 11, 0.9), code, text).end == 11


def test_key_phrases_from_the_schema_fix_the_field_and_drop_key_text():
    from models.extraction import Span
    from models.extraction.fields import is_key_text, rekey_by_phrase, strip_key_phrase
    phrases = {"seller_tax_id": ["纳税人识别号"], "buyer_tax_id": ["纳税人识别号"],
               "seller_address_phone": ["地址、电话"], "drawer": ["开票人"], "seller_bank_account": ["开户行及账号"]}
    text = "纳税人识别号：911100008000000000"
    sp = Span("seller_address_phone", 0, 7, len(text), 0.8,
              {"seller_address_phone": 0.5, "seller_tax_id": 0.3, "buyer_tax_id": 0.1})
    assert rekey_by_phrase(sp, text, phrases).key == "seller_tax_id"
    text = "纳税人只别号：91610113H375012B86"         # the key misread in one character still names it
    sp = Span("buyer_address_phone", 0, 7, len(text), 0.9, {"buyer_address_phone": 0.9, "buyer_tax_id": 0.05})
    assert rekey_by_phrase(sp, text, phrases).key == "buyer_tax_id"
    text = "开票入：小红"                           # a short key is not guessed at from one misread
    sp = Span("payee", 0, 4, len(text), 0.9, {"payee": 0.9, "drawer": 0.05})
    assert rekey_by_phrase(sp, text, phrases).key == "payee"
    text = "开票人 小红"
    sp = strip_key_phrase(Span("drawer", 0, 0, len(text), 0.8), text, phrases["drawer"])
    assert text[sp.start:sp.end] == "小红"
    text = "核一北会信期代码/的税人职别号"           # a long key misread in five characters is key text still
    assert is_key_text(Span("buyer_name", 0, 0, 3, 0.9), text, ["统一社会信用代码/纳税人识别号"])
    assert not is_key_text(Span("buyer_name", 0, 0, 3, 0.9), "永顺（南昌）酒店管理有限公司",
                            ["统一社会信用代码/纳税人识别号"])
    text = "开户行及账号：中国银行深圳支行"
    assert is_key_text(Span("seller_bank_account", 0, 1, 3, 0.9), text, ["开户行及账号"])
    assert not is_key_text(Span("seller_bank_account", 0, 7, len(text), 0.9), text, ["开户行及账号"])


def test_a_missing_sum_term_takes_the_one_amount_that_makes_the_rule_hold(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    texts = ["合计", "¥388.10", "￥23.90", "（小写）¥412.00", "¥100.00"]
    page = Page(index=0, width=1000, height=1000,
                lines=[Line(t, box_to_quad([10, 20 + 40 * i, 400, 50 + 40 * i])) for i, t in enumerate(texts)])
    doc = Document(pages=[page], doc_type="vat_invoice")
    # the model gave 388.10 to the total with tax, which the 小写 figure wins on confidence
    _decode(ex, doc, page, [Span("total_with_tax", 1, 1, 7, 0.5), Span("total_tax", 2, 1, 6, 0.9),
                           Span("total_with_tax", 3, 5, 11, 0.9), Span("total_with_tax", 4, 1, 7, 0.4)])
    assert doc.fields["total_amount"].value == "388.10"
    assert doc.fields["total_with_tax"].value == "412.00"


def test_a_fragment_grows_to_the_whole_value_of_its_type():
    from data.schemas import FieldSpec
    from models.extraction import Span
    from models.extraction.fields import trim_to_type
    date = FieldSpec(key="issue_date", label="开票日期", type="date")
    text = "开票日期：2023年07月08日"
    sp = trim_to_type(Span("issue_date", 0, 13, 15, 0.9), date, text)          # only "08" found
    assert text[sp.start:sp.end] == "2023年07月08日"
    text = "日期：2025-05-2113:05:18"                     # a time glued on: 2025-05-2 is a date too
    sp = trim_to_type(Span("issue_date", 0, 3, 12, 0.9), date, text)
    assert text[sp.start:sp.end] == "2025-05-21"
    code = FieldSpec(key="invoice_code", label="发票代码", type="code", pattern=r"\d{10}|\d{12}")
    text = "发票代码：031012306531"
    sp = trim_to_type(Span("invoice_code", 0, 11, 17, 0.9), code, text)        # "306531"
    assert text[sp.start:sp.end] == "031012306531"
    check = FieldSpec(key="check_code", label="校验码", type="code", pattern=r"\d{20}")
    text = "校验码：1001432002 3319800000"
    sp = trim_to_type(Span("check_code", 0, 4, 14, 0.9), check, text)
    assert text[sp.start:sp.end] == "1001432002 3319800000"


def test_a_bracketed_tail_takes_the_head_ocr_cut_off_on_the_same_row(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    page = Page(index=0, width=1000, height=1000,
                lines=[Line("盛达餐厅", box_to_quad([100, 20, 220, 50])),
                       Line("（朝阳区店）", box_to_quad([225, 20, 400, 50])),
                       Line("收银员：李", box_to_quad([100, 80, 300, 110]))])
    doc = Document(pages=[page], doc_type="vat_invoice")
    _decode(ex, doc, page, [Span("buyer_name", 1, 0, 6, 0.9)])
    f = doc.fields["buyer_name"]
    assert f.raw == "盛达餐厅（朝阳区店）" and f.box[0] == 100 and f.span == [0, 11]

    def name(rows):         # the model tagged the second OCR line (7 characters) as the name
        page = _lines_page(rows)
        doc = Document(pages=[page], doc_type="vat_invoice")
        _decode(ex, doc, page, [Span("buyer_name", 1, 0, 7, 0.9)])
        return doc.fields["buyer_name"].raw
    # OCR cut before the bracket and read the head's last character on both sides
    assert name([("博锦面包房", [137, 40, 282, 66]), ("房（玄武区店）", [268, 40, 432, 66]),
                 ("地址：南京市", [30, 93, 385, 114])]) == "博锦面包房（玄武区店）"
    # boxes that overlap by a third of the line height read the same ink twice, even when misread
    assert name([("云睿烘焙坊", [144, 39, 275, 63]), ("市（西城区店）", [264, 39, 409, 63])]) == \
        "云睿烘焙坊（西城区店）"
    # ... but not a neighbour that merely ends in another character, nor one a gap away
    for head, box in (("博锦面包店", [137, 40, 266, 66]), ("博锦面包房", [100, 40, 230, 66])):
        assert name([(head, box), ("房（玄武区店）", [268, 40, 432, 66])]) == "房（玄武区店）"


def _lines_page(rows: list[tuple[str, list[float]]]) -> Page:
    return Page(index=0, width=1300, height=800, lines=[Line(t, box_to_quad(b)) for t, b in rows])


def test_a_title_printed_in_two_stacked_lines_is_joined(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    # einv_stacked: 电子发票 centred over （增值税专用发票）; OCR boxes of a split title also overlap on one row
    page = _lines_page([("发票号码：19421166816495979415", [840, 24, 1081, 43]), ("电子发票", [560, 20, 690, 50]),
                        ("（增值税专用发票）", [500, 56, 760, 88])])
    doc = Document(pages=[page], doc_type="vat_invoice")
    _decode(ex, doc, page, [Span("title", 2, 0, 9, 0.9)])
    assert doc.fields["title"].value == "电子发票(增值税专用发票)"
    page = _lines_page([("电子发票", [410, 32, 546, 63]), ("（增值税专用发票）", [530, 32, 798, 64])])
    doc = Document(pages=[page], doc_type="vat_invoice")
    _decode(ex, doc, page, [Span("title", 1, 0, 9, 0.9)])
    assert doc.fields["title"].value == "电子发票(增值税专用发票)"


def test_totals_the_model_missed_are_found_by_the_invoice_arithmetic(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    page = _lines_page([("合计", [80, 400, 130, 420]), ("￥18361.29", [700, 400, 800, 420]),
                        ("￥2302.13", [1100, 400, 1190, 420]), ("价税合计（大写）", [80, 440, 250, 460]),
                        ("贰万零陆佰陆拾叁回肆角贰分", [300, 440, 600, 460]), ("（小写）", [800, 440, 860, 460]),
                        ("¥20663.42", [870, 440, 980, 460]), ("¥999.99", [870, 480, 980, 500])])
    doc = Document(pages=[page], doc_type="vat_invoice")
    # the model tagged only the words (OCR read 圆 as 回) and the 合计 amount, and the tax as an item cell
    _decode(ex, doc, page, [Span("total_with_tax_in_words", 4, 0, 13, 0.9), Span("total_amount", 1, 1, 9, 0.9),
                           Span("items.tax", 2, 1, 8, 0.8)])
    assert doc.fields["total_with_tax_in_words"].value == "20663.42"
    assert doc.fields["total_with_tax"].value == "20663.42" and doc.fields["total_with_tax"].box[0] >= 870
    assert doc.fields["total_tax"].value == "2302.13"
    assert doc.items == []          # a row of ¥ figures with no name is the 合计 row, not goods


def test_an_amount_words_fragment_grows_across_a_misread_yuan():
    from data.schemas import FieldSpec
    from models.extraction import Span
    from models.extraction.fields import trim_to_type
    spec = FieldSpec(key="total_with_tax_in_words", label="价税合计（大写）", type="amount_words")
    text = "壹万伍仟伍佰零壹国肆角壹分"
    sp = trim_to_type(Span(spec.key, 0, 9, 13, 0.9), spec, text)               # only 肆角壹分 tagged
    assert text[sp.start:sp.end] == text
    text = "柒万玖仟伍佰陆拾参圆贰角参分"                                       # 参 read for 叁
    sp = trim_to_type(Span(spec.key, 0, 0, 12, 0.9), spec, text)               # the model stopped at 角
    assert text[sp.start:sp.end] == text


def test_item_cells_grow_to_their_line_and_the_row_arithmetic_fills_a_missed_cell(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    y = [300, 320]
    page = _lines_page([("运输服务*国内货物运输服务", [60, *y[:1], 300, y[1]]), ("250ML*24", [320, y[0], 400, y[1]]),
                        ("次", [420, y[0], 440, y[1]]), ("3", [470, y[0], 480, y[1]]),
                        ("83.77", [520, y[0], 600, y[1]]), ("251.31", [640, y[0], 720, y[1]]),
                        ("9%", [760, y[0], 790, y[1]]), ("22.62", [820, y[0], 900, y[1]]),
                        ("22.61", [820, 500, 900, 520])])
    doc = Document(pages=[page], doc_type="vat_invoice")
    # the model cut the spec at its star and missed the quantity and the tax
    _decode(ex, doc, page, [Span("items.name", 0, 0, 13, 0.9), Span("items.spec", 1, 0, 5, 0.9),
                           Span("items.unit", 2, 0, 1, 0.9), Span("items.unit_price", 4, 0, 5, 0.9),
                           Span("items.amount", 5, 0, 6, 0.9), Span("items.tax_rate", 6, 0, 2, 0.9)])
    [row] = doc.items
    assert row["name"].value == "*运输服务*国内货物运输服务"
    assert row["spec"].value == "250ML*24"
    assert row["quantity"].value == "3" and row["quantity"].box[0] == 470
    assert row["tax"].value == "22.62"          # 251.31 x 9% on the row; 22.61 lies in another row
    # the second star read as a quotation mark, the first dropped; a spec's star between digits stays
    page.lines[0].text = "会议服务“会议费"
    doc = Document(pages=[page], doc_type="vat_invoice")
    _decode(ex, doc, page, [Span("items.name", 0, 0, 8, 0.9), Span("items.spec", 1, 0, 8, 0.9),
                           Span("items.amount", 5, 0, 6, 0.9)])
    assert doc.items[0]["name"].value == "*会议服务*会议费" and doc.items[0]["spec"].value == "250ML*24"


def test_free_text_after_its_key_phrase_runs_to_the_end_of_its_segment():
    from models.extraction import Span
    from models.extraction.fields import to_segment_end
    text = "支付方式：微信支付"
    sp = to_segment_end(Span("payment_method", 0, 5, 7, 0.9), text, ["支付方式"])     # only 微信
    assert text[sp.start:sp.end] == "微信支付"
    text = "收款人：李明  复核：王"                       # another cell follows: left alone
    assert to_segment_end(Span("payee", 0, 4, 5, 0.9), text, ["收款人"]).end == 5
    assert to_segment_end(Span("payee", 0, 4, 5, 0.9), "某某：李明", ["收款人"]).end == 5


def test_a_name_takes_its_bracketed_branch_from_the_next_ocr_line(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    for tail_box in ([270, 37, 411, 61], [160, 66, 250, 90]):            # right on the row; stacked below
        page = _lines_page([("智融生活超市", [130, 37, 282, 62]), ("（朝阳区店）", tail_box),
                            ("地址：北京市朝阳区人民路409号", [30, 110, 305, 130])])
        doc = Document(pages=[page], doc_type="vat_invoice")
        _decode(ex, doc, page, [Span("seller_name", 0, 0, 6, 0.9)])
        assert doc.fields["seller_name"].value == "智融生活超市(朝阳区店)"


def test_a_key_misread_in_one_character_is_still_not_a_value():
    from models.extraction import Span
    from models.extraction.fields import is_key_text
    phrases = ["统一社会信用代码/纳税人识别号", "名称"]
    text = "统一社会信用代码/纳税人识刷"
    assert is_key_text(Span("buyer_name", 0, 0, len(text), 0.9), text, phrases)
    text = "南昌德晨教育科技有限责任公司"
    assert not is_key_text(Span("buyer_name", 0, 0, len(text), 0.9), text, phrases)


def test_the_figure_given_to_a_sum_term_moves_to_the_total_its_words_match(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    page = _lines_page([("￥273682.62", [700, 400, 820, 420]), ("￥35578.74", [1050, 400, 1160, 420]),
                        ("叁拾万玖仟贰佰陆拾壹圆叁角陆分", [300, 440, 600, 460]),
                        ("（小写）￥309261.36", [800, 440, 1000, 460])])
    doc = Document(pages=[page], doc_type="vat_invoice")
    _decode(ex, doc, page, [Span("total_amount", 3, 4, 14, 0.9), Span("total_tax", 1, 0, 9, 0.9),
                           Span("total_with_tax_in_words", 2, 0, 15, 0.9)])
    assert doc.fields["total_with_tax"].value == "309261.36"
    assert doc.fields["total_amount"].value == "273682.62"


def test_title_evidence_tolerates_misreads_and_finds_no_title_on_a_form():
    titles = load_schema("vat_invoice").title_phrases
    assert title_evidence(titles, ["北京增值税专用发票"]) == 1.0
    assert title_evidence(titles, ["增值税专用发", "No 123"]) == pytest.approx(6 / 7)
    assert title_evidence(titles, ["姓名：张三", "联系电话", "现住址"]) < 0.5
    assert title_evidence(titles, []) == 0.0


def test_type_needs_its_printed_title_when_the_schema_says_so():
    types = ["vat_invoice", "generic_form", "receipt", "id_card_front"]
    schemas = {t: load_schema(t) for t in types}
    assert schemas["vat_invoice"].title_required and not schemas["receipt"].title_required
    probs = np.array([0.6, 0.3, 0.05, 0.05])
    form = ["个人信息登记表", "姓名：张三", "联系电话：138 0000 0000", "现住址：北京市"]
    assert types[pick_type(probs, types, schemas, form)] == "generic_form"
    invoice = ["北京增值税专用发票", "购买方", "名称：北京某某科技有限公司"]
    assert types[pick_type(probs, types, schemas, invoice)] == "vat_invoice"
    # a receipt prints no fixed title, so it is never passed over for lack of one
    assert types[pick_type(np.array([0.1, 0.1, 0.7, 0.1]), types, schemas, ["好又多超市"])] == "receipt"
    # a title printed as its own line wins over the classifier; an e-invoice's title holds a VAT one's
    types3 = ["vat_invoice", "e_invoice", "generic_form"]
    schemas3 = {t: load_schema(t) for t in types3}
    lean_form = np.array([0.1, 0.2, 0.7])
    assert types3[pick_type(lean_form, types3, schemas3, ["电子发票（增值税专用发票）", "号4：19822"])] == "e_invoice"
    assert types3[pick_type(lean_form, types3, schemas3, ["湖南增值税电子普通发票", "人"])] == "vat_invoice"
    # ... also when OCR dropped its closing bracket
    assert types3[pick_type(np.array([0.9, 0.05, 0.05]), types3, schemas3,
                             ["电子发票", "（增值税专用发票", "号码"])] == "e_invoice"
    # a title OCR cut in two lines is joined again, and the longer title still wins
    assert types3[pick_type(np.array([0.6, 0.3, 0.1]), types3, schemas3,
                             ["电子发票", "（增值税专用发票）", "号码"])] == "e_invoice"
    # a form with the word 发票 in it is no invoice
    assert types3[pick_type(np.array([0.97, 0.01, 0.02]), types3, schemas3, ["发票号码：8030", "姓名：张三"])] == \
        "generic_form"
    # the title inside a longer line (a form's 发票类型 field) is no title line
    assert types3[pick_type(lean_form, types3, schemas3, ["发票类型：增值税专用发票（纸质）", "姓名"])] == \
        "generic_form"
    # no type passes: the most likely stays
    only = ["vat_invoice", "id_card_front"]
    assert only[pick_type(np.array([0.8, 0.2]), only, schemas, ["姓名"])] == "vat_invoice"


def test_a_code_glued_to_a_value_goes_on_with_that_value():
    """备注 合同号：HT29377841 with the digits tagged as a tax ID: the run stays in the remark (it was cut
    to 合同号 when the tax ID reading, too short to be one, was dropped)."""
    from models.extraction.spans import decode_spans
    labels = ["O", "B-remarks", "I-remarks", "B-seller_tax_id", "I-seller_tax_id"]
    text = "合同号：HT29377841"
    rows = [{"B-remarks": 0.7, "O": 0.3}] + [{"I-remarks": 0.95}] * 6 + [{"I-seller_tax_id": 0.7, "I-remarks": 0.3}] * 7
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool), [text])
    assert [(s.key, text[s.start:s.end]) for s in spans] == [("remarks", text)]
    # a run on its own (nothing glued before it) still takes the field most of it names
    text2 = "HT29377841"
    spans = decode_spans([_probs(labels, rows[4:])], labels, np.ones(len(labels), bool), [text2])
    assert [(s.key, text2[s.start:s.end]) for s in spans] == [("seller_tax_id", text2)]


def test_id_card_sex_and_birth_date_ocr_missed_come_from_a_valid_id_number(model_dir):
    from models.extraction import Span
    ex = Extractor.load(model_dir)
    ex.schemas["id_card_front"] = load_schema("id_card_front")
    page = _lines_page([("姓名", [50, 60, 100, 90]), ("毛飞宇", [150, 60, 220, 90]), ("性别", [50, 120, 100, 150]),
                        ("民族", [260, 120, 300, 150]), ("汉", [350, 120, 380, 150]),
                        ("公民身份号码", [50, 440, 170, 460]), ("340104199102167611", [240, 440, 520, 460])])
    doc = Document(pages=[page], doc_type="id_card_front")
    _decode(ex, doc, page, [Span("name", 1, 0, 3, 0.9), Span("ethnicity", 4, 0, 1, 0.9),
                           Span("id_number", 6, 0, 18, 0.9)])
    assert doc.fields["sex"].value == "男" and doc.fields["sex"].box is None and doc.fields["sex"].raw == ""
    assert doc.fields["birth_date"].value == "1991-02-16"
    assert any("sex" in w and "id_number" in w for w in doc.warnings)
    # an ID number that fails its check character gives nothing
    bad = _lines_page([("公民身份号码", [50, 440, 170, 460]), ("340104199102167612", [240, 440, 520, 460])])
    doc = Document(pages=[bad], doc_type="id_card_front")
    _decode(ex, doc, bad, [Span("id_number", 1, 0, 18, 0.9)])
    assert "sex" not in doc.fields and "birth_date" not in doc.fields


def test_a_value_alone_on_its_line_takes_the_field_its_key_on_the_row_names():
    from models.extraction import Span
    from models.extraction.fields import rekey_by_row
    phrases = {"paid_amount": ["实收", "实付"], "change": ["找零"], "total_amount": ["合计"]}
    page = _lines_page([("合计：", [28, 365, 86, 393]), ("183.68", [427, 369, 500, 390]),
                        ("实收：", [28, 401, 82, 426]), ("280.00", [433, 404, 500, 423]),
                        ("找零：", [27, 436, 82, 461]), ("96.32", [444, 438, 501, 458]),
                        ("支付方式：现金 找零 5.00", [30, 474, 400, 494])])
    sp = rekey_by_row(Span("paid_amount", 5, 0, 5, 0.9, {"paid_amount": 0.8, "change": 0.1}), page, phrases)
    assert sp.key == "change"
    assert rekey_by_row(Span("paid_amount", 3, 0, 6, 0.9), page, phrases).key == "paid_amount"
    # a label without a colon far to the left belongs to another column (stacked e-invoice labels)
    stacked = _lines_page([("名称", [93, 215, 117, 231]), ("统一社会信用代码/纳税人识别号", [399, 220, 590, 241]),
                           ("和腾（石家庄）化工有限公司", [677, 214, 887, 237])])
    sp = Span("seller_name", 2, 0, 13, 0.9, {"seller_name": 0.6, "seller_tax_id": 0.1})
    assert rekey_by_row(sp, stacked, {"seller_name": ["名称"], "seller_tax_id": ["纳税人识别号"]}).key == "seller_name"
    # a value sharing its line with other text is left to the phrase rule
    assert rekey_by_row(Span("paid_amount", 6, 14, 18, 0.9), page, phrases).key == "paid_amount"


def test_a_name_glued_to_its_tax_id_and_a_name_scattered_over_three_fields_stay_one_name():
    from models.extraction.spans import decode_spans
    labels = ["O", "B-buyer_name", "I-buyer_name", "B-seller_name", "I-seller_name", "B-items.name", "I-items.name",
              "B-buyer_tax_id", "I-buyer_tax_id", "B-buyer_bank_account", "I-buyer_bank_account"]
    free = {"buyer_name", "seller_name", "buyer_bank_account"}
    fits = lambda k, t: k != "buyer_tax_id" or len(t) == 18          # noqa: E731 (a tax ID reads as 18 characters)
    # OCR read 名称 and 统一社会信用代码 as one line: the code keeps its field, the name votes without it
    text = "新晟中医疗器械股份有限公司91460106676TLLL10U"
    rows = [{"I-buyer_name": 0.9}, {"O": 0.4, "I-buyer_name": 0.3},
            {"B-buyer_bank_account": 0.7, "I-buyer_name": 0.2}] + \
        [{"I-buyer_name": 0.9}] * 3 + [{"I-items.name": 0.5, "O": 0.3}] + [{"I-buyer_name": 0.95}] * 6 + \
        [{"I-buyer_tax_id": 0.95}] * 18
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool), [text], free, fits)
    assert [(s.key, text[s.start:s.end]) for s in spans] == [("buyer_name", "新晟中医疗器械股份有限公司"),
                                                           ("buyer_tax_id", "91460106676TLLL10U")]
    # no field holds half the characters: the one with most probability mass takes the name
    text = "武汉美越物流有限公司"
    rows = [{"B-buyer_name": 0.47, "B-seller_name": 0.2}, {"I-buyer_name": 0.95},
            {"B-items.name": 0.58, "B-buyer_name": 0.36}, {"I-items.name": 0.37, "O": 0.29}, {"I-items.name": 0.9},
            {"I-seller_name": 0.58, "I-buyer_name": 0.17}, {"I-seller_name": 0.47, "I-buyer_name": 0.45},
            {"I-seller_name": 0.57, "I-buyer_name": 0.28}, {"I-seller_name": 0.63, "I-buyer_name": 0.15},
            {"I-buyer_name": 0.79, "I-seller_name": 0.2}]
    spans = decode_spans([_probs(labels, rows)], labels, np.ones(len(labels), bool), [text], free, fits)
    assert [(s.key, text[s.start:s.end]) for s in spans] == [("buyer_name", text)]


def test_a_remark_that_is_itself_label_and_content_runs_through_its_colon():
    from data.document import Field
    from models.extraction.text_fields import through_colon

    def remark(text, start, end, taken=()):
        page = _lines_page([("备", [50, 440, 70, 460]), (text, [92, 460, 243, 477])])
        f = Field("remarks", text[start:end], text[start:end], span=[2 + start, 2 + end], box=[0, 0, 1, 1])
        through_colon(f, page, list(taken))
        return f.raw
    assert remark("项目：餐饮管理服务", 0, 3) == "项目：餐饮管理服务"        # the colon tagged with the label
    assert remark("项目：餐饮管理服务", 0, 2) == "项目：餐饮管理服务"        # the colon left out
    # not when a chosen value stands in the rest, the value does not start its line, or more colons follow
    assert remark("项目：餐饮管理服务", 0, 3, [[5, 9]]) == "项目："
    assert remark("甲项目：餐饮管理服务", 1, 4) == "项目："
    assert remark("项目：a：b", 0, 3) == "项目："

def test_a_name_alone_on_its_line_is_the_whole_line():
    from models.extraction import Span
    from models.extraction.fields import whole_line
    phrases = ["开票人", "复核", "收款人"]
    assert whole_line(Span("drawer", 0, 0, 2, 0.9), "白兰华", [], phrases).end == 3
    # not with a colon, a key phrase beside it, another field's value on the line, or under half tagged
    assert whole_line(Span("drawer", 0, 4, 6, 0.9), "开票人：白兰华", [], phrases).end == 6
    assert whole_line(Span("drawer", 0, 0, 3, 0.9), "白兰华 复核", [], phrases).end == 3
    other = Span("payee", 0, 4, 6, 0.9)
    assert whole_line(Span("drawer", 0, 0, 3, 0.9), "白兰华 李四", [other], phrases).end == 3
    assert whole_line(Span("drawer", 0, 0, 1, 0.9), "白兰华", [], phrases).end == 1


def test_link_scores_computed_on_demand_are_the_full_forward_passes(model_dir):
    """The extractor leaves the link head out of the forward pass and computes it from the kept hidden states
    when a form's decoding first asks (models/extractor.py `_forward`): every score and tag probability must be
    the very number the whole model computes in one pass, or form pairs would drift from what was measured.
    (The Paddle backend, bit for bit; the ONNX backend agrees with it within 1e-4: tests/test_onnx_encoder.py.)"""
    import paddle

    ex = Extractor.load(model_dir, backend="paddle")
    page = _page()
    pred = ex.predict_page(page)
    enc = ex.vocab.encode_page(page.lines, page.width, page.height, ex.cfg.max_len)
    arr = enc.arrays()
    assert len(enc.windows) > 1
    with paddle.no_grad():
        res = ex.model(*(paddle.to_tensor(arr[k]) for k in ("input_ids", "bbox")), None,
                       paddle.to_tensor(arr["attention_mask"]))
    links, tags = res[2].numpy(), paddle.nn.functional.softmax(res[0], -1).numpy()
    merged = enc.merge(tags)
    token_of = {(enc.line[t], enc.start[t]): t for t in range(len(enc.ids))}
    checked = 0
    for a, ta in list(token_of.items())[::7]:
        assert np.array_equal(pred.probs[a[0]][a[1]], merged[ta])
        for b, tb in list(token_of.items())[::11]:
            want = [links[wi, w.position(ta), w.position(tb)] for wi, w in enumerate(enc.windows)
                    if w.start <= ta < w.end and w.start <= tb < w.end]
            got = pred.link(a, b)
            assert (got is None) == (not want) and (got is None or got == float(max(want)))
            checked += got is not None
    assert checked > 20


def test_shared_characters_bound_the_title_and_key_comparisons_they_skip():
    """doctype.py skips the quadratic title alignment (`_fit`) and key LCS on lines sharing too few characters
    with the title (models/extraction/base.py `shared_chars`): sound only while the shared characters bound
    both from the right side. Random strings over a small alphabet, so that many characters repeat."""
    import random

    from data.text_distance import lcs_length
    from models.extraction.base import shared_chars
    from models.extraction.doctype import _fit

    rnd = random.Random(7)
    for _ in range(400):
        a = "".join(rnd.choice("增值税专用发票(电子)") for _ in range(rnd.randint(1, 10)))
        b = "".join(rnd.choice("增值税专用发票(电子)普通江") for _ in range(rnd.randint(0, 16)))
        s = shared_chars(a, b)
        assert lcs_length(a, b) <= s and len(a) - s <= _fit(a, b)[0]
