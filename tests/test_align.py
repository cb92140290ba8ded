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
