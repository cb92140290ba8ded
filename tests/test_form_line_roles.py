"""Every line of a page read as a generic form carries its role (models/extraction/form_line_roles.py: label,
value, header, table_cell, hint, check_box, signature, heading, text), in the Document and its JSON; no other
page's line has one, and their JSON has no "role" key (issue 36, item 2)."""
from __future__ import annotations

import functools

import numpy as np

from data.document import Document, Line, Page, box_to_quad
from data.synth.generator import generate
from models.extraction import PagePrediction
from models.extraction.form_line_roles import ROLES
from models.extraction.forms import decode_form_page
from models.extractor import get_extractor

LABELS = ["O", "B-header", "I-header", "B-question", "I-question", "B-answer", "I-answer"]


def _gt_page(gt: dict) -> Page:
    return Page(index=0, width=gt["width"], height=gt["height"],
                lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in gt["lines"]])


@functools.lru_cache(maxsize=None)
def _form(layout: str, seed: int = 5) -> tuple[dict, Document]:
    """A generated form's ground truth, and the Document its ground-truth lines extract to."""
    gt = generate("generic_form", seed, layout, decorations=False)[1]
    return gt, get_extractor().extract(Document(source="form.png", pages=[_gt_page(gt)]), doc_type="generic_form")


def test_every_line_of_a_generated_form_has_a_role():
    for layout in ("form_rows", "form_clinic", "form_cover"):
        _, doc = _form(layout)
        roles = [ln.role for ln in doc.pages[0].lines]
        assert roles and all(r in ROLES for r in roles), (layout, roles)


def test_labels_values_table_and_signature_lines_get_the_roles_of_what_was_decoded():
    pairs = headers = cells = signed = 0
    for layout in ("form_rows", "form_clinic", "form_sections", "form_stacked", "form_grid"):
        gt, doc = _form(layout)
        role = [ln.role for ln in doc.pages[0].lines]
        assert role[0] == "heading", layout                        # the form's title
        found = {(p.key.replace("\u3000", ""), p.value) for p in doc.pairs}
        for p in gt["pairs"]:
            if (p["key"].replace("\u3000", ""), p["value"]) in found:
                # a label with its value after the colon on its line (姓名：张三) is a label line
                assert role[p["key_line"]] == "label", (layout, p)
                assert role[p["value_line"]] == ("label" if p["value_line"] == p["key_line"] else "value"), (layout, p)
                pairs += 1
        for t in gt["tables"]:
            if any(d.columns == t["columns"] for d in doc.tables):
                assert [role[i] for i in t["column_lines"] if i is not None] == \
                    ["header"] * len([i for i in t["column_lines"] if i is not None]), layout
                record = [role[i] for row in t["cell_lines"] for i in row if i is not None]
                assert record == ["table_cell"] * len(record), layout
                headers, cells = headers + 1, cells + len(record)
        got = {(s.key, s.value) for s in doc.signatures}
        for s in gt["signatures"]:
            if (s["key"], s["value"]) in got:
                assert role[s["key_line"]] == role[s["value_line"]] == "signature", (layout, s)
                signed += 1
    assert pairs >= 30 and headers >= 1 and cells >= 6 and signed >= 1


def test_hints_options_headings_and_blank_signature_lines_on_a_page_the_model_knows_nothing_of():
    lines = [("员工入职登记表", [400, 60, 800, 120]), ("一、基本信息", [100, 160, 300, 190]),
             ("姓名：张三", [100, 220, 300, 250]), ("（请用黑色签字笔填写）", [600, 220, 900, 250]),
             ("□男 ☑女", [100, 280, 300, 310]), ("备注：", [100, 340, 200, 370]),
             ("联系电话", [100, 400, 220, 430]), ("13812345678", [400, 400, 600, 430]),
             ("审核人签字：", [100, 500, 300, 530]), ("年  月  日", [600, 500, 800, 530])]
    page = Page(index=0, width=1200, height=1600, lines=[Line(text=t, quad=box_to_quad(b)) for t, b in lines])
    probs = [np.tile(np.eye(len(LABELS))[0], (len(t), 1)) for t, _ in lines]      # every character tagged O
    form = decode_form_page(page, PagePrediction(np.zeros(1), probs, lambda a, b: None), LABELS)
    assert form.roles == ["heading", "heading", "label", "hint", "check_box", "label", "label", "value",
                          "signature", "signature"]


def test_invoice_pages_have_no_roles_and_their_json_no_role_key():
    gt = generate("vat_invoice", 3)[1]
    doc = get_extractor().extract(Document(source="inv.png", pages=[_gt_page(gt)]))
    assert doc.doc_type == "vat_invoice"
    assert all(ln.role is None for ln in doc.lines)
    assert all(set(ln) == {"text", "quad", "score", "label"} for ln in doc.to_dict()["pages"][0]["lines"])
    assert '"role"' not in doc.to_json()


def test_a_form_read_again_as_an_invoice_loses_its_roles():
    gt = generate("generic_form", 5, "form_rows", decorations=False)[1]
    doc = get_extractor().extract(Document(source="form.png", pages=[_gt_page(gt)]), doc_type="generic_form")
    assert any(ln.role for ln in doc.lines)
    again = get_extractor().extract(doc, doc_type="vat_invoice")
    assert all(ln.role is None for ln in again.lines)


def test_roles_survive_the_json_round_trip():
    _, doc = _form("form_rows")
    back = Document.from_json(doc.to_json())
    assert [ln.role for ln in back.lines] == [ln.role for ln in doc.lines]
    assert "table_cell" in [ln.role for ln in back.lines] and back.to_dict() == doc.to_dict()
