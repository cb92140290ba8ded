"""Every decoding rule is a step of a stage (issue: "each rule is a function in RULES with its own settings; no
`not in off` checks inside other code"): level_lines (input), the span rules (span_tags, span_chars, span_ends),
the type rules (type, form_type) and the forms' switches (form_setup: link, bare first option, cells, below,
check groups, hints, label not value, colon-less keys). Their runners take the enabled steps from RULES and no
model file tests a rule name."""
import ast
import math
from pathlib import Path

import numpy as np

import models.extraction.rules as rules
from data.document import Line, Page, Pair, box_to_quad
from data.geometry import level_quads, reading_order
from models.extraction import doctype, forms, spans
from models.extraction.base import PagePrediction
from models.extraction.rules import RULES, encoder_input, is_form
from models.extraction.settings import DEFAULT_SETTINGS

FORM_LABELS = ["O", "B-header", "I-header", "B-question", "I-question", "B-answer", "I-answer"]

MODELS = Path(rules.__file__).parents[1]
STEPPED = {"level_lines", "items_below_heads", "vote_alnum_runs", "vote_segments", "extend_left",
           "type_unsure_is_generic", "type_needs_title", "form_needs_structure", "form_link",
           "form_bare_first_option", "form_cells", "form_below", "form_check_groups", "form_hints",
           "form_label_not_value", "form_colonless_keys"}
# the form_setup switches and the form_evidence.Evidence attribute each switches on
SWITCHES = {"form_link": "link", "form_bare_first_option": "bare_first", "form_cells": "cells", "form_below": "below",
            "form_check_groups": "check_groups", "form_hints": "hints", "form_label_not_value": "label_not_value",
            "form_colonless_keys": "colonless_keys"}


def _names_tested(path: Path) -> set[str]:
    """String constants a file tests with `in` / `not in` ("x" not in off, "x" in self.off)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                isinstance(node.left.value, str) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            out.add(node.left.value)
    return out


def test_no_model_file_tests_a_rule_name():
    names = {r.name for r in RULES if not r.core}
    assert STEPPED <= names
    files = sorted(MODELS.glob("extraction/*.py")) + [MODELS / "extractor.py"]
    assert len(files) >= 20
    tested = {f.name: sorted(_names_tested(f) & names) for f in files}
    assert {f: n for f, n in tested.items() if n} == {}
    # ... and no rule is the whole forms decoder any more: each has a stage of its own and a function
    assert not [r.name for r in RULES if r.stage == "forms" or r.fn is forms.decode_form]


def test_each_forms_switch_is_off_until_its_setup_step_runs():
    """The decoder's layers read each switch as an Evidence attribute: on with every rule on, off with its rule
    switched off, the others untouched."""
    page = Page(index=0, width=1200, height=1600, lines=[Line("姓名：张三", box_to_quad([100, 100, 260, 124]))])
    pred = PagePrediction(np.zeros(1), [np.zeros((5, len(FORM_LABELS)))], lambda a, b: None)

    def switches(off: frozenset[str]) -> dict[str, bool]:
        dec = forms._decoder(page, pred, FORM_LABELS, DEFAULT_SETTINGS, off, None)
        # form_link's switch is the link head's scorer itself (else one that has no say)
        return {name: getattr(dec, attr) is (pred.link if attr == "link" else True) for name, attr in SWITCHES.items()}
    assert switches(frozenset()) == dict.fromkeys(SWITCHES, True)
    for name in SWITCHES:
        assert switches(frozenset({name})) == {n: n != name for n in SWITCHES}
    assert not hasattr(forms._decoder(page, pred, FORM_LABELS, DEFAULT_SETTINGS, frozenset(), None), "off")


def test_each_rule_made_a_step_has_its_own_function_and_a_stage_its_runner_runs():
    by_name = {r.name: r for r in RULES}
    stages = {"input", "span_tags", "form_type", "type", *spans.SPAN_STAGES, "form_setup"}
    assert {by_name[n].stage for n in STEPPED} <= stages
    fns = [by_name[n].fn for n in STEPPED]
    assert len(set(fns)) == len(fns)                      # no two rules share one function (pick_type, decode_form)
    assert spans.span_steps(frozenset()) == {"span_chars": [spans.alnum_runs, spans.segments],
                                             "span_ends": [spans.grow_left]}
    assert spans.span_steps(frozenset({"vote_alnum_runs"}))["span_chars"] == [spans.segments]
    assert doctype.type_steps(frozenset()) == [doctype.unsure_is_generic, doctype.needs_title]
    assert doctype.type_steps(frozenset({"type_unsure_is_generic"})) == [doctype.needs_title]


def test_encoder_input_turns_a_tilted_page_level_unless_level_lines_is_off():
    rows = [["名称：甲公司", "3", "30.00"], ["地址：乙路1号", "5", "50.00"]]
    texts = [t for row in rows for t in row]
    quads = [box_to_quad([50 + 300 * c, 100 + 30 * r, 250 + 300 * c, 120 + 30 * r])
             for r, row in enumerate(rows) for c, _ in enumerate(row)]
    tilted = level_quads(quads, math.tan(math.radians(-6)), 1000, 400)
    page = Page(index=0, width=1000, height=400, lines=reading_order([Line(t, q) for t, q in zip(texts, tilted)]))
    lines, order = encoder_input(page)
    assert [ln.text for ln in lines] == texts and [page.lines[i].text for i in order] == texts
    assert lines[0].quad != page.lines[order[0]].quad                    # turned level
    same, order = encoder_input(page, frozenset({"level_lines"}))
    assert same is page.lines and order == list(range(len(page.lines)))


def test_is_form_asks_form_needs_structure_unless_it_is_off():
    prose = [Pair(key="说明", value="见下")]
    lines = ["天气"] * 40
    assert not is_form(prose, lines)
    assert is_form(prose, lines, frozenset({"form_needs_structure"}))

