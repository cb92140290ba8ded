"""Field boxes show the value, not its key: boxes from printed character widths (a Chinese character an
em, a digit half of one), checked against the generator's tight value boxes on generated invoices read
from their exact lines by the bundled model."""
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
    wide, full, n = 0, 0, 0
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
            full += _iou(f.box, g["box"]) >= 0.7                 # ... as tall as its OCR line
    assert n >= 60
    assert wide == n
    # misses are boxes of digits on a line with taller Chinese characters (the line's height, not the ink's)
    assert full >= 0.85 * n
