from data.text_distance import edit_distance, lcs_length
from models.ocr.eval import best_span, substring_distance


def test_edit_distance_and_lcs():
    assert edit_distance("发票号码", "发票号吗") == 1
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "ab") == 2
    assert lcs_length("增值税专用发票", "增值税专用发") == 6       # a title with its last character lost
    assert lcs_length("营业执照", "本报告营业收入") == 2 and lcs_length("", "abc") == 0


def test_substring_distance_and_best_span_share_one_alignment():
    hay = "名称：北京AI科技有限公司 纳税人识别号"
    assert substring_distance("北京A科技", hay) == 1
    dist, start, end = best_span("北京AI科技", hay)
    assert (dist, hay[start:end]) == (0, "北京AI科技")
    dist, start, end = best_span("有限公同", hay)
    assert dist == 1 and hay[start:end] == "有限公司"
