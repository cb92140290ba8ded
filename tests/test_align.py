"""Aligning known values to noisy OCR lines recovers the true character spans."""
from data.align import align_fields, align_value, best_substring


def test_exact_value_inside_a_line():
    m = align_value("07099363", ["发票代码：00100210001", "发票号码：07099363"])
    assert (m.line, m.start, m.end, m.score) == (1, 5, 13, 1.0)


def test_lookalike_letters_in_a_tax_id_still_align():
    lines = ["纳税人识别号：", "9IO11111AA2AAAAAOO", "911100008000000000"]
    m = align_value("91011111AA2AAAAA00", lines)
    assert (m.line, m.start, m.end) == (1, 0, 18) and 0.8 < m.score < 1.0


def test_spaces_and_full_width_are_folded_and_spans_map_back():
    line = "校  验  码： １００１４ ３２００２"
    m = align_value("1001432002", [line])
    assert line[m.start:m.end] == "１００１４ ３２００２"


def test_a_wrong_digit_loses_to_the_right_number():
    # two candidates, one off by a digit: the exact one must win even though it comes second
    m = align_value("53843662", ["53843663", "号码 53843662"])
    assert m.line == 1 and m.score == 1.0


def test_dropped_character_costs_but_matches():
    m = align_value("北京AI科技有限公司", ["称：北京A科技有限公司"])
    assert m is not None and "称：北京A科技有限公司"[m.start:m.end] == "北京A科技有限公司"


def test_nothing_close_gives_none():
    assert align_value("深圳蛋糕餐饮有限公司", ["合计", "¥388.10"]) is None


def test_fields_do_not_claim_the_same_characters():
    lines = ["合计 ¥388.10 ¥23.90"]
    out = align_fields({"total_amount": "388.10", "total_tax": "23.90"}, lines)
    a, b = out["total_amount"], out["total_tax"]
    assert lines[0][a.start:a.end] == "388.10" and lines[0][b.start:b.end] == "23.90"


def test_substring_cost_counts_edits():
    cost, s, e = best_substring("ABCD", "xxABXDyy")
    assert cost == 1.0 and (s, e) == (2, 6)


# --- printed forms, key phrases, lines OCR cut apart (failure classes of bench/weak_label_bench.py) ---
from data.align import FieldHint, printed_forms  # noqa: E402


def test_an_iso_date_is_found_in_its_printed_forms():
    line = "开票日期：2019年12月12日"
    m = align_value("2019-12-12", [line])
    assert m is not None and line[m.start:m.end] == "2019年12月12日" and m.score == 1.0
    spaced = "1985 年 10 月 12 日"
    m = align_value("1985-10-12", [spaced])
    assert m is not None and (m.start, m.end) == (0, len(spaced))
    # OCR dropped the space between date and time: the date is still a clean sub-span
    joined = "日期：2024/04/1519:42:51"
    m = align_value("2024-04-15", [joined], field_type="date")
    assert joined[m.start:m.end] == "2024/04/15"


def test_amount_words_field_is_found_as_words_not_as_the_figure():
    lines = ["￥151.60", "壹佰伍拾壹圆陆角"]
    hints = {"words": FieldHint("amount_words"), "total": FieldHint("amount")}
    out = align_fields({"words": "151.60", "total": "151.60"}, lines, hints=hints)
    assert out["words"].line == 1 and out["total"].line == 0
    assert printed_forms("1234.50", "amount") == ["1234.50", "1,234.50"]


ROWS = {  # a receipt's totals: one figure printed twice, told apart only by the key before it
    "合计": [10, 100, 60, 120], "40.96": [300, 100, 360, 120],
    "实收": [10, 140, 60, 160], "40.96 ": [300, 140, 360, 160],
}


def _receipt(order):
    lines = [t.strip() for t in order]
    return lines, [ROWS[t] for t in order]


def test_a_repeated_figure_goes_to_the_copy_beside_its_key_phrase():
    hints = {"total_amount": FieldHint("amount", ("合计",)), "paid_amount": FieldHint("amount", ("实收",))}
    for order in (["合计", "40.96", "实收", "40.96 "], ["40.96 ", "实收", "40.96", "合计"]):
        lines, boxes = _receipt(order)
        out = align_fields({"total_amount": "40.96", "paid_amount": "40.96"}, lines, boxes=boxes, hints=hints)
        assert boxes[out["total_amount"].line] == ROWS["40.96"], order
        assert boxes[out["paid_amount"].line] == ROWS["40.96 "], order


def test_a_tilted_row_and_a_letter_spaced_key_read_as_two_lines():
    # 合 / 计 are separate OCR lines; the photo's tilt puts the right value 20 px above the key,
    # an item amount with the same figure sits 90 px above it
    lines = ["合", "计", "24916.70", "¥24916.70"]
    boxes = [[160, 356, 176, 377], [205, 356, 221, 377], [724, 271, 778, 288], [719, 338, 780, 354]]
    hints = {"total_amount": FieldHint("amount", ("合计",))}
    out = align_fields({"total_amount": "24916.70"}, lines, boxes=boxes, hints=hints)
    assert out["total_amount"].line == 3


def test_a_value_ocr_cut_in_two_spans_both_lines():
    lines = ["电子发票", "（普通发票）", "发票号码：21341902187739191246"]
    boxes = [[482, 37, 589, 63], [575, 36, 717, 65], [825, 35, 1074, 54]]
    out = align_fields({"title": "电子发票(普通发票)"}, lines, boxes=boxes)
    assert out["title"].parts == [(0, 0, 4), (1, 0, 6)] and out["title"].score == 1.0
    # without boxes there is no telling the lines are neighbours: only the best part matches, weakly
    assert align_fields({"title": "电子发票(普通发票)"}, lines).get("title") is None


def test_page_tilt_tells_rows_apart_on_a_photographed_receipt():
    # real PP-OCR boxes of a receipt photo about 5 degrees off level: each value sits a row higher
    # than its key, so without the tilt 合计 would take 实收's copy
    from data.geometry import page_slope
    lines = ["400.54", "合计：", "400.54", "实收", "0.00"]
    boxes = [[310, 303, 354, 322], [70, 325, 104, 344], [315, 323, 356, 339], [72, 344, 103, 361],
             [330, 341, 361, 358]]
    hints = {"total_amount": FieldHint("amount", ("合计",)), "paid_amount": FieldHint("amount", ("实收",))}
    values = {"total_amount": "400.54", "paid_amount": "400.54"}
    quad = [[0, 20], [300, 0], [300, 20], [0, 40]]           # a long line whose top edge climbs 1 in 15
    tilt = page_slope([quad, [[0, 0], [10, 0], [10, 10], [0, 10]]])
    assert abs(tilt + 1 / 15) < 1e-9
    out = align_fields(values, lines, boxes=boxes, hints=hints, tilt=-0.09)
    assert (out["total_amount"].line, out["paid_amount"].line) == (0, 2)
    level = align_fields(values, lines, boxes=boxes, hints=hints)
    assert (level["total_amount"].line, level["paid_amount"].line) == (2, 0)
