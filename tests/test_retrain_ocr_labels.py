"""`retrain --ocr-train`: a training page as OCR read it is labelled by aligning the page's own field
values to the OCR lines (training/ocr_labels.py). OCR here is a hand-written Page with what PP-OCR
does to a page: misreads a look-alike, cuts lines differently, prints dates its own way, and repeats
an item figure on two rows."""
from __future__ import annotations

from data.document import Line, Page, box_to_quad
from training.dataset import gt_lines
from training.ocr_labels import label_coverage, ocr_labelled_record


def field(value: str, text: str, box: list[float]) -> dict:
    return {"value": value, "text": text, "line": 0, "span": [0, len(text)], "box": box}


RECORD = {
    "image": "p.png", "doc_type": "vat_invoice", "layout": "vat_electronic", "width": 600, "height": 400,
    "lines": [{"id": 0, "text": "(generator lines: replaced by OCR's)", "box": [0, 0, 10, 10]}],
    "fields": {"invoice_number": field("12345678", "12345678", [120, 20, 200, 40]),
               "issue_date": field("2024-03-05", "2024年03月05日", [120, 50, 260, 70]),
               "buyer_tax_id": field("91310000MA1FL0XX0A", "91310000MA1FL0XX0A", [150, 80, 330, 100]),
               "drawer": field("王小明", "王小明", [420, 300, 480, 320])},
    "items": [{"name": field("*电线*铜线", "*电线*铜线", [20, 200, 120, 220]),
               "amount": field("100.00", "100.00", [400, 200, 460, 220])},
              {"name": field("*电线*铝线", "*电线*铝线", [20, 240, 120, 260]),
               "amount": field("100.00", "100.00", [400, 240, 460, 260])}],
    "pairs": [],
}


def ocr_page() -> Page:
    rows = [("发票号码：12345678", [20, 20, 200, 40]),
            ("开票日期：2024年03月05日", [20, 50, 260, 70]),
            ("纳税人识别号：9131OOOOMA1FL0XX0A", [20, 80, 330, 100]),    # 0 read as O twice
            ("*电线*铜线", [20, 200, 120, 220]), ("100.00", [400, 200, 460, 220]),
            ("*电线*铝线", [20, 240, 120, 260]), ("100.00", [400, 240, 460, 260]),
            ("合计", [20, 280, 60, 300])]                                   # the drawer was not read at all
    return Page(index=0, width=600, height=400, lines=[Line(t, box_to_quad(b)) for t, b in rows])


def test_fields_point_at_what_ocr_emitted():
    rec = ocr_labelled_record(RECORD, ocr_page())
    lines = [ln["text"] for ln in rec["lines"]]
    assert lines[0] == "发票号码：12345678" and rec["width"] == 600

    def text_of(f: dict) -> str:
        return rec["lines"][f["line"]]["text"][slice(*f["span"])]

    assert text_of(rec["fields"]["invoice_number"]) == "12345678"
    assert text_of(rec["fields"]["issue_date"]) == "2024年03月05日"
    assert rec["fields"]["issue_date"]["value"] == "2024-03-05", "the record's normalised value is kept"
    assert text_of(rec["fields"]["buyer_tax_id"]) == "9131OOOOMA1FL0XX0A", "OCR's misread characters are labelled"
    assert "drawer" not in rec["fields"], "a value OCR lost stays unlabelled"
    # the same figure on two rows: each row's amount is the one on its own row
    amounts = [row["amount"]["line"] for row in rec["items"]]
    assert [lines[i] for i in amounts] == ["100.00", "100.00"] and amounts[0] != amounts[1]
    assert rec["lines"][amounts[1]]["box"][1] == 240
    assert label_coverage([RECORD], [rec]) == {"values": 8, "labelled": 7}


def test_labelled_ocr_page_tags_the_right_characters():
    page = gt_lines(ocr_labelled_record(RECORD, ocr_page()))
    tax_line = page.lines[2]
    assert tax_line.tags[:7] == ["O"] * 7
    assert tax_line.tags[7] == "B-buyer_tax_id" and set(tax_line.tags[8:]) == {"I-buyer_tax_id"}
    assert page.lines[6].tags[0] == "B-items.amount"
    assert set(page.lines[7].tags) == {"O"}
