"""The decoding rules as one ordered list: `RULES` says what runs, in which order, and can be printed.

A rule is a named function, a step of one stage; each stage's runner takes its enabled steps from this
list (base.py `enabled_steps`, or `decode_fields` below) and tests no rule name itself. The "input" steps
change what the encoder reads (`encoder_input`, called by models/extractor.py `predict_page`); "span_tags"
the page's tag probabilities before spans are cut (`decode_page`); "span_chars" and "span_ends" a line's
characters' fields and its spans (spans.py SPAN_RULES, `decode_spans`); "type" gives verdicts on the types
the classifier proposes (doctype.py TYPE_RULES, `pick_type`); "form_type" says whether a page taken for a
generic form is one (`is_form`, called by the extractor after decoding); the forms rules (forms.py
FORM_RULES, the end of this list) run inside form pairing, each a step of one of the forms decoder's stages
(form_pieces, form_setup, form_evidence, form_rows, ...); "fields", "items" and "arithmetic" run one after the other
over a `PageContext` (`decode_fields`).
A rule marked `core` is the decoding itself (no candidate would become a value without it) and is never
switched off; bench/decode_ablation.py switches each other rule off in turn and measures what it contributes.

    python -m bench.decode_ablation --list
"""
from __future__ import annotations

from typing import Any

import numpy as np

from data.document import Document, Line, Page, Pair
from data.labels import ITEM_PREFIX
from models.extraction import arithmetic, field_rules, items
from models.extraction.base import EncoderInput, PageContext, PagePrediction, Rule, enabled_steps, plausible, turn_level
from models.extraction.doctype import TYPE_RULES, form_structure
from models.extraction.forms import FORM_RULES, decode_form_page
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings
from models.extraction.spans import SPAN_RULES, decode_spans


def items_below_heads(page: Page, schema: Any, probs: list[np.ndarray], tag_labels: list[str],
                      st: DecodeSettings = DEFAULT_SETTINGS) -> list[np.ndarray]:
    """items_below_heads: no goods above the item table's column heads (items.above_item_heads): the lines
    there take no item field (`no_items_above_heads`)."""
    if not schema.item_fields:
        return probs
    return no_items_above_heads(probs, items.above_item_heads(page, schema, st), tag_labels)


def no_items_above_heads(line_probs: list[np.ndarray], above: set[int], tag_labels: list[str]) -> list[np.ndarray]:
    """`line_probs` with the item tags' probability of the lines in `above` moved to the other tags, in
    proportion (a name over the table the model half took for goods is then the header field it also saw)."""
    if not above:
        return line_probs
    item_cols = np.array([i for i, lab in enumerate(tag_labels) if lab[2:].startswith(ITEM_PREFIX)], dtype=int)
    out = list(line_probs)
    for li in above:
        p = line_probs[li]
        if p is None or not len(p):
            continue
        q = p.copy()
        q[:, item_cols] = 0.0
        total = q.sum(-1, keepdims=True)
        out[li] = np.where(total > 0, q / np.where(total > 0, total, 1.0), p)
    return out


RULES: list[Rule] = [
    Rule("level_lines", "input", turn_level,
         about="the encoder reads a tilted page's lines turned level, in reading order taken again"),
    *SPAN_RULES,          # vote_alnum_runs, vote_segments, extend_left (spans.py)
    Rule("items_below_heads", "span_tags", items_below_heads,
         about="no goods above the item table's column heads: lines there take no item field"),
    *TYPE_RULES,          # type_unsure_is_generic, type_needs_title (doctype.py)
    Rule("form_needs_structure", "form_type", form_structure,
         about="a page taken for a form with too few label-like key-value pairs for its lines is `other`"),
    Rule("field_candidates", "fields", field_rules.field_candidates, core=True),
    Rule("rekey_after_key_phrase", "fields", field_rules.rekey_after_key_phrase),
    Rule("rekey_by_row_key", "fields", field_rules.rekey_by_row_key),
    Rule("drop_key_text", "fields", field_rules.drop_key_text),
    Rule("strip_own_key", "fields", field_rules.strip_own_key),
    Rule("grow_code_run", "fields", field_rules.grow_code_run),
    Rule("fit_to_type", "fields", field_rules.fit_to_type),
    Rule("text_to_segment_end", "fields", field_rules.text_to_segment_end),
    Rule("text_whole_line", "fields", field_rules.text_whole_line),
    Rule("drop_weak_pieces", "fields", field_rules.drop_weak_pieces),
    Rule("amounts_whole", "fields", field_rules.amounts_whole),
    Rule("prefer_plausible", "fields", field_rules.prefer_plausible),
    Rule("choose_fields", "fields", field_rules.choose_fields, core=True),
    Rule("fill_by_pattern", "fields", field_rules.fill_by_pattern),
    Rule("fill_by_key_phrase", "fields", field_rules.fill_by_key_phrase),
    Rule("fields_by_label_cells", "fields", field_rules.fields_by_label_cells),
    Rule("check_char_repair", "fields", field_rules.check_char_repair),
    Rule("bracket_below", "fields", field_rules.bracket_below),
    Rule("bracket_head", "fields", field_rules.bracket_head),
    Rule("close_bracket", "fields", field_rules.close_bracket),
    Rule("text_to_word_end", "fields", field_rules.text_to_word_end),
    Rule("text_through_colon", "fields", field_rules.text_through_colon),
    Rule("title_nearest", "fields", field_rules.title_nearest),
    Rule("item_candidates", "items", items.item_candidates, core=True),
    Rule("join_cell_pieces", "items", items.join_cell_pieces),
    Rule("whole_cell", "items", items.whole_cell),
    Rule("item_cells", "items", items.item_cells, core=True),
    Rule("split_column_cells", "items", items.split_column_cells),
    Rule("star_name", "items", items.star_name),
    Rule("cluster_item_rows", "items", items.cluster_item_rows, core=True),
    Rule("lone_cells", "items", items.lone_cells),
    Rule("goods_rows_only", "items", items.goods_rows_only),
    Rule("drop_total_row", "items", items.drop_total_row),
    Rule("complete_item_row", "items", items.complete_item_row),
    Rule("item_arithmetic", "items", items.item_arithmetic),
    Rule("money_figures", "arithmetic", arithmetic.money_figures, core=True),
    Rule("fill_by_arithmetic", "arithmetic", arithmetic.fill_by_arithmetic),
    Rule("totals_by_arithmetic", "arithmetic", arithmetic.totals_by_arithmetic),
    Rule("words_by_arithmetic", "arithmetic", arithmetic.words_by_arithmetic),
    Rule("id_number_facts", "arithmetic", arithmetic.id_number_facts),
    *FORM_RULES,          # the forms decoder's rules (forms.py: each a step of one of its stages)
]
STEP_STAGES = ("fields", "items", "arithmetic")


def check_names(off: frozenset[str]) -> None:
    """Refuse unknown or core rule names (a typo would silently switch nothing off)."""
    known = {r.name for r in RULES if not r.core}
    bad = sorted(set(off) - known)
    if bad:
        raise ValueError(f"no such rule to switch off: {', '.join(bad)}; choose from {', '.join(sorted(known))}")


def decode_fields(ctx: PageContext, off: frozenset[str] = frozenset()) -> None:
    """Run the step rules over one page, in `RULES` order, skipping those named in `off`."""
    for rule in RULES:
        if rule.stage in STEP_STAGES and (rule.core or rule.name not in off):
            rule.fn(ctx)


def encoder_input(page: Page, off: frozenset[str] = frozenset()) -> tuple[list[Line], list[int]]:
    """The lines the encoder reads of `page`, and each one's index in page.lines: the page's own lines, changed
    by the "input" steps left on (level_lines: a tilted page's turned level, in reading order again)."""
    inp = EncoderInput(page, page.lines, list(range(len(page.lines))))
    for step in enabled_steps(RULES, ("input",), off)["input"]:
        step(inp)
    return inp.lines, inp.order


def is_form(pairs: list[Pair], lines: list[str], off: frozenset[str] = frozenset(),
            settings: DecodeSettings = DEFAULT_SETTINGS) -> bool:
    """Whether a page taken for a generic form, with these pairs and OCR lines, is one: every "form_type" step
    left on says so (form_needs_structure: doctype.form_structure); with none on, it is."""
    return all(step(pairs, lines, settings) for step in enabled_steps(RULES, ("form_type",), off)["form_type"])


def table() -> str:
    """RULES as printed by `python -m bench.decode_ablation --list`."""
    rows = [f"{i:>2}. {r.name:<24} {r.stage:<13} {'core ' if r.core else ''}{r.doc}" for i, r in enumerate(RULES, 1)]
    return "\n".join(rows)


def decode_page(doc: Document, page: Page, pred: PagePrediction, schema: Any, tag_labels: list[str],
                allowed: np.ndarray, generic: bool, settings: DecodeSettings = DEFAULT_SETTINGS,
                off: frozenset[str] = frozenset()) -> None:
    """Add one page's values to `doc` (fields and items of its schema, or a generic form's pairs)."""
    if generic:
        form = decode_form_page(page, pred, tag_labels, settings, off)
        doc.pairs += form.pairs
        doc.tables += form.tables
        doc.signatures += form.signatures
        for line, role in zip(page.lines, form.roles):
            line.role = role
        return
    specs = {f.key: f for f in schema.fields}
    free_text = {f.key for f in schema.fields if f.type == "text"}
    probs = pred.probs
    for step in enabled_steps(RULES, ("span_tags",), off)["span_tags"]:
        probs = step(page, schema, probs, tag_labels, settings)
    cands = decode_spans(probs, tag_labels, allowed, [ln.text for ln in page.lines], free_text,
                         lambda k, t: k in specs and plausible(specs[k], t), settings, off)
    decode_fields(PageContext(doc, page, schema, cands, settings), off)
