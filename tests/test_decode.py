"""Decoding hand-made tag sequences into fields, item rows and pairs with the right text and boxes."""
from __future__ import annotations

import numpy as np
import pytest

from data.document import Line, box_to_quad
from models.decode import Span, bio_spans, cluster_rows, doc_type, link_pairs, page_slope, spans_to_fields
from models.heads import tag_labels
from models.tokenizer import Tokenizer

LABELS = tag_labels(["invoice_number", "date", "items.name", "items.amount", "question", "answer"])


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_dir(None)


def _probs(enc, tags: dict[int, str], confidence: float = 0.9) -> np.ndarray:
    """One-hot-ish probabilities: `tags` maps token -> label, everything else O."""
    probs = np.full((len(enc), len(LABELS)), (1 - confidence) / (len(LABELS) - 1))
    for t in range(len(enc)):
        probs[t, LABELS.index(tags.get(t, "O"))] = confidence
    return probs


def _tag(enc, line: int, start: int, end: int, key: str) -> dict[int, str]:
    """B-key on the first token of line[start:end], I-key on the rest."""
    toks = [t for t in range(len(enc)) if enc.line[t] == line and start <= enc.start[t] < end]
    return {t: ("B-" if i == 0 else "I-") + key for i, t in enumerate(toks)}


def test_fields_take_original_text_offsets_score_and_box(tok):
    lines = [Line("发票号码：24312000000123456789", box_to_quad([100, 50, 700, 80])),
             Line("开票日期：2024年 03月15日", box_to_quad([100, 100, 500, 130]))]
    enc = tok.encode_page(lines, 800, 600, max_len=64)
    tags = {**_tag(enc, 0, 5, 25, "invoice_number"), **_tag(enc, 1, 5, 17, "date")}
    probs = _probs(enc, tags, confidence=0.8)
    for t in list(tags)[:3]:                          # lower confidence on three tokens
        probs[t, LABELS.index(tags[t])] = 0.5
    fields, items = spans_to_fields(bio_spans(probs, LABELS, enc, page=2))
    assert items == []
    num, date = fields["invoice_number"], fields["date"]
    assert num.value == "24312000000123456789" and date.value == "2024年 03月15日"   # inner space kept
    assert num.page == 2 and num.score == pytest.approx((17 * 0.8 + 3 * 0.5) / 20)
    page_text = "\n".join(ln.text for ln in lines)
    assert page_text[num.span[0]:num.span[1]] == num.value
    assert page_text[date.span[0]:date.span[1]] == date.value
    # box = union of the character boxes: starts after "发票号码：" (5 CJK of 25 width units)
    x0, y0, x1, y1 = num.box
    assert x0 == pytest.approx(100 + 600 * 5 / 15) and x1 == pytest.approx(700) and (y0, y1) == (50, 80)


def test_best_span_wins_and_stray_i_starts_a_span(tok):
    lines = [Line("号码 123", box_to_quad([0, 0, 100, 20])), Line("号码 456", box_to_quad([0, 30, 100, 50]))]
    enc = tok.encode_page(lines, 100, 60, max_len=32)
    tags = _tag(enc, 0, 3, 6, "invoice_number")
    later = _tag(enc, 1, 3, 6, "invoice_number")
    tags.update({t: "I-invoice_number" for t in later})          # no B on the second one
    probs = _probs(enc, tags, confidence=0.6)
    for t in later:
        probs[t, LABELS.index("I-invoice_number")] = 0.95
    spans = bio_spans(probs, LABELS, enc)
    assert [s.text for s in spans] == ["123", "456"]
    fields, _ = spans_to_fields(spans)
    assert fields["invoice_number"].value == "456"
    # B directly after a span of the same key starts a new span rather than extending it
    tags2 = {0: "B-date", 1: "B-date"}
    assert [s.text for s in bio_spans(_probs(enc, tags2), LABELS, enc)] == ["号", "码"]


def test_item_spans_group_into_rows_by_table_line(tok):
    # two table rows; OCR gives each cell as its own line, rows at different heights
    lines = [Line("办公用品", box_to_quad([50, 300, 200, 320])), Line("120.00", box_to_quad([600, 302, 680, 322])),
             Line("打印纸", box_to_quad([50, 340, 170, 360])), Line("35.50", box_to_quad([600, 341, 670, 361])),
             Line("合计 155.50", box_to_quad([50, 400, 300, 420]))]
    enc = tok.encode_page(lines, 800, 600, max_len=64)
    tags = {**_tag(enc, 0, 0, 4, "items.name"), **_tag(enc, 1, 0, 6, "items.amount"),
            **_tag(enc, 2, 0, 3, "items.name"), **_tag(enc, 3, 0, 5, "items.amount")}
    fields, items = spans_to_fields(bio_spans(_probs(enc, tags), LABELS, enc))
    assert fields == {}
    assert [{k: f.value for k, f in row.items()} for row in items] == [
        {"name": "办公用品", "amount": "120.00"}, {"name": "打印纸", "amount": "35.50"}]
    assert items[1]["amount"].box == [600, 341, 670, 361]


def test_item_cells_on_a_tilted_page_group_one_row_per_printed_row():
    # page tilted ~2 degrees: across 1000 px a printed row climbs 35 px, more than the 26 px row pitch,
    # so plain vertical overlap would cut rows apart; cells are given out of order
    slope, pitch = -0.035, 26.0

    def cell(key: str, text: str, x: float, row: int, dy: float = 0.0) -> Span:
        y = 330 + row * pitch + slope * x + dy
        return Span(key=f"items.{key}", text=text, score=0.9, box=[x, y - 9, x + 40, y + 9], page=0,
                    first=0, last=0, span=[0, len(text)])

    spans = [cell("tax", "156.44", 1120, 0), cell("name", "机油滤清器", 70, 0), cell("amount", "1203.36", 870, 0),
             cell("quantity", "5", 620, 0, dy=2), cell("quantity", "52", 620, 0, dy=2),
             cell("name", "布洛芬", 72, 1), cell("tax", "60.78", 1122, 1), cell("amount", "467.50", 872, 1, dy=-3),
             cell("name", "打印机", 74, 2), cell("tax", "6537.37", 1124, 2)]
    quads = [box_to_quad([0, 0, 1, 1])] + [[[0, 100], [800, 100 + 800 * slope], [800, 120 + 800 * slope], [0, 120]]] * 3
    assert page_slope(quads) == pytest.approx(slope)
    _, items = spans_to_fields(spans, slope=page_slope(quads))
    assert [{k: f.value for k, f in row.items()} for row in items] == [
        {"name": "机油滤清器", "quantity": "52", "amount": "1203.36", "tax": "156.44"},
        {"name": "布洛芬", "amount": "467.50", "tax": "60.78"},
        {"name": "打印机", "tax": "6537.37"}]
    # without the tilt correction the same cells do not come out as three rows
    assert len(spans_to_fields(spans)[1]) != 3


def test_same_key_clearly_lower_starts_a_new_row():
    # two names 0.6 line heights apart with nothing else: two rows; 0.1 apart: one row, left to right
    boxes = [("name", [0, 100, 50, 120]), ("name", [0, 112, 50, 132]), ("amount", [200, 101, 250, 121])]
    assert cluster_rows(boxes, 20.0) == [[0, 2], [1]]
    assert cluster_rows([("name", [0, 100, 50, 120]), ("name", [60, 102, 90, 122])], 20.0) == [[0, 1]]


def test_question_answer_links_become_pairs(tok):
    lines = [Line("姓名：", box_to_quad([10, 10, 70, 30])), Line("张三", box_to_quad([80, 10, 130, 30])),
             Line("电话：", box_to_quad([10, 50, 70, 70])), Line("13800138000", box_to_quad([80, 50, 200, 70]))]
    enc = tok.encode_page(lines, 300, 100, max_len=64)
    tags = {**_tag(enc, 0, 0, 3, "question"), **_tag(enc, 1, 0, 2, "answer"),
            **_tag(enc, 2, 0, 3, "question"), **_tag(enc, 3, 0, 11, "answer")}
    spans = bio_spans(_probs(enc, tags), LABELS, enc)
    first = {enc.text(s.first, s.last): s.first for s in spans}
    links = np.full((len(enc), len(enc)), 0.1)
    links[first["姓名："], first["张三"]] = 0.9
    links[first["电话："], first["13800138000"]] = 0.7
    links[first["姓名："], first["13800138000"]] = 0.3          # weaker competitor, below threshold
    pairs = link_pairs(spans, links)
    assert [(p.key, p.value, p.score) for p in pairs] == [("姓名", "张三", 0.9), ("电话", "13800138000", 0.7)]
    assert pairs[0].key_box == [10, 10, 70, 30] and pairs[1].value_box == [80, 50, 200, 70]
    # form labels are pairs, not schema fields
    assert spans_to_fields(spans)[0] == {}
    # below the threshold no pair is made
    assert link_pairs(spans, np.full((len(enc), len(enc)), 0.2)) == []


def test_doc_type_averages_windows():
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.5, 0.0]])
    name, score = doc_type(logits, ["vat_invoice", "receipt", "id_card"])
    assert name == "vat_invoice" and 0.4 < score < 0.8


def test_shape_mismatch_is_reported(tok):
    enc = tok.encode_page([Line("ab", box_to_quad([0, 0, 10, 10]))], 10, 10, max_len=8)
    with pytest.raises(ValueError, match="tag_probs shape"):
        bio_spans(np.zeros((3, len(LABELS))), LABELS, enc)


def test_schema_labels_cover_every_field_and_item_field():
    from data.schemas import list_schemas, load_schema
    from models.heads import FORM_KEYS, ITEM_PREFIX, schema_field_keys
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
