"""Field boxes show the value, not its key: boxes from printed character widths (a Chinese character an
em, a digit half of one) and as tall as their ink, checked against the generator's tight value boxes on
generated invoices read from their exact lines by the bundled model through the public extraction API."""
from __future__ import annotations

from data.document import Document, Line, Page, box_to_quad
from data.synth.generator import generate
from models.extraction.base import char_box
from models.extractor import get_extractor


def _overlap(a: list[float], b: list[float], lo: int, hi: int) -> float:
    inter = max(0.0, min(a[hi], b[hi]) - max(a[lo], b[lo]))
    union = (a[hi] - a[lo]) + (b[hi] - b[lo]) - inter
    return inter / union if union > 0 else 0.0


def _iou(a: list[float], b: list[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy
    return ix * iy / union if union > 0 else 0.0


def test_a_figure_after_its_key_gets_the_part_of_the_line_it_is_printed_on():
    line = Line("金额：12.50", box_to_quad([100, 0, 200, 20]))    # 3 ems of key, 2.5 ems of figure
    x0, _, x1, _ = char_box(line, 3, 8)
    assert abs(x0 - (100 + 100 * 3 / 5.5)) < 0.1 and x1 == 200


def test_field_boxes_match_the_generators_value_boxes_on_generated_invoices():
    ex = get_extractor()
    wide, full, low, n = 0, 0, 0, 0
    for doc_type, seed in [("vat_invoice", s) for s in range(4)] + [("e_invoice", s) for s in range(2)]:
        _, gt = generate(doc_type, seed)
        page = Page(index=0, width=gt["width"], height=gt["height"],
                    lines=[Line(ln["text"], ln["quad"]) for ln in gt["lines"]])
        doc = ex.extract(Document(pages=[page]), doc_type=doc_type)
        for key, g in gt["fields"].items():
            f = doc.fields.get(key)
            if f is None or not f.box or f.value.replace(" ", "") != str(g["value"]).replace(" ", ""):
                continue
            n += 1
            wide += _overlap(f.box, g["box"], 0, 2) >= 0.9      # the value's own span of the line ...
            ok = _iou(f.box, g["box"]) >= 0.7                     # ... as tall as its ink
            full += ok
            low += not ok and f.raw.isascii()
    assert n >= 60
    assert wide == n
    # each box, digits on a line with taller Chinese characters too (ink height, not the line's)
    assert full == n, f"{n - full} of {n} field boxes under IoU 0.7 ({low} of them digits or Latin)"


def test_digits_beside_chinese_characters_get_their_ink_height_and_keep_the_middle():
    from data.geometry import ink_box
    box = [100, 30, 200, 50]
    x0, y0, x1, y1 = ink_box(box, "金额：12.50", 3, 8)
    assert (round(y1 - y0, 1), (y0 + y1) / 2) == (14.0, 40.0) and x1 == 200
    assert ink_box(box, "金额：12.50", 0, 2)[1::2] == [30, 50]       # Chinese characters: the line's height
    assert ink_box(box, "12.50", 0, 5)[1::2] == [30, 50]            # a line of digits is as tall as they are
