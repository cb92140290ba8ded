"""The forms decoder's step rules are data (issue 35): each is a function in RULES with a stage of the decoder,
the decoder runs a stage's steps in RULES order and leaves out those switched off in one place
(forms.form_steps), and no forms file reads such a rule's name from `off` itself (tests/test_rule_steps.py)."""

import models.extraction.forms as forms
from data.document import Document, Line, Page
from data.synth.generator import generate, page_seed
from models.extraction.rules import RULES
from models.extractor import get_extractor

STEPS = {"form_cuts", "form_column_cuts", "form_roles", "form_furniture", "form_join_labels", "form_data_tables",
         "form_row_values", "form_join_values", "form_ocr_min", "form_signatures", "form_link",
         "form_bare_first_option", "form_cells", "form_below", "form_check_groups", "form_hints",
         "form_label_not_value", "form_colonless_keys"}


def test_each_forms_step_rule_is_a_step_of_a_decoder_stage():
    # (no model file tests a rule's name: tests/test_rule_steps.py) each is a step of a decoder stage instead,
    # its own function, not the whole decoder
    steps = {r.name: r for r in RULES if r.name in STEPS}
    assert set(steps) == STEPS
    assert all(r.stage in forms.FORM_STAGES and r.fn is not forms.decode_form for r in steps.values())


def test_form_steps_leave_out_what_is_switched_off_and_keep_the_rules_order():
    on, off = forms.form_steps(frozenset()), forms.form_steps(frozenset({"form_furniture", "form_signatures"}))
    assert on["form_evidence"] == [forms.furniture_lines, forms.join_label_lines]
    assert off["form_evidence"] == [forms.join_label_lines]
    assert on["form_pieces"] == off["form_pieces"] == [forms.cut_columns]
    assert on["form_page"] == [forms.sign_apart] and off["form_page"] == []
    linkless = forms.form_steps(frozenset({"form_link"}))
    setup = [forms.allow_colonless_keys, forms.look_below, forms.use_link, forms.labels_not_values, forms.use_hints,
             forms.use_check_groups, forms.bare_first_option, forms.use_cells]      # FORM_RULES order
    assert on["form_setup"] == setup
    assert linkless["form_setup"] == [s for s in setup if s is not forms.use_link]
    cell_less = forms.form_steps(frozenset({"form_cells", "form_hints"}))["form_setup"]
    assert cell_less == [s for s in setup if s not in (forms.use_cells, forms.use_hints)]


def _page(i: int) -> Page:
    _, gt = generate("generic_form", page_seed(991, i), degrade="none")
    return Page(index=0, width=gt["width"], height=gt["height"],
                lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in gt["lines"]])


def test_a_step_rule_switched_off_through_extract_changes_the_page_it_matters_on():
    """A generated clinic form: the physician's signature is a signature block and the diagnosis wraps onto a
    second line; with form_signatures off the signature is one more pair, with form_join_values off the
    diagnosis stops at its first line."""
    ex, page = get_extractor(), _page(7)

    def extract(*off: str) -> Document:
        return ex.extract(Document(source="form.png", pages=[page]), off=frozenset(off))
    on = extract()
    assert [(p.key, p.value) for p in on.signatures] == [("医师签名", "万辉宇")]
    assert ("诊断意见", "轻度脂肪肝，建议控制饮食、加强锻炼") in [(p.key, p.value) for p in on.pairs]
    unsigned = extract("form_signatures")
    assert unsigned.signatures == [] and ("医师签名", "万辉宇") in [(p.key, p.value) for p in unsigned.pairs]
    unwrapped = dict((p.key, p.value) for p in extract("form_join_values").pairs)
    assert unwrapped["诊断意见"] == "轻度脂肪肝，建议控制饮"
