"""Generic forms: key-value pairs, proposed and vetoed by layout, decided by the model's link head and tags.

`decode_form(page, pred, tag_labels, settings, off)` is what models/extractor.py calls for a page of a
generic form. A small model's question/answer tags do not carry over to a form layout it never saw
(or to a real scan), while a few layout facts hold on almost any form, so layout proposes and vetoes
and the model's evidence ranks what layout allows:

0. Roles (form_roles.py), where the model directory's pair_scorer.json has them: a small model fitted on
   generated forms reads each piece's layout context (first in its row, what stands right, left and under
   it, the labels sharing its left edge, its type size) with its text and the encoder's tags, and says
   key, value, header or other. Its probabilities replace the encoder's tags as the masses every rule
   below reads; a piece it calls a label (question - answer > form_role_label) is nobody's value.
1. Pieces (form_pieces.py). Each OCR line splits at its key colons; a colon-less line OCR read as label
   and value at once (研究方向 思想政治教育) is cut where the learned cuts say (form_cuts.py, in the same
   pair_scorer.json; without them, after a known label), or where the page's other label/value rows align
   their boundary (form_glued.column_cuts); a label over two lines of one cell is joined into one key
   (form_joins.join_labels).
2. Keys (form_evidence.py). A piece ending in a colon is a key. A line without a colon is a key when it is more key-like
   than the text it would take as its value (`key_score`: question vs answer tags, a known label or a
   key noun at its end, no digits, short, not a sentence). Printed options and hints are never keys.
3. Candidates (form_proposals.py). A key's candidates are the text after its colon, the nearest piece right of it on its
   row (the next table cell) and the line under it. Vetoed: keys, labels (an empty field does not take
   the next label), hints (（...填写）, 请勾选), headers, blanks; an option list gives its ticked option
   or nothing.
4. Assignment (form_assign.py). Each candidate's hand score is its layout prior (same line, right, below), how much more
   key-like the key is than the value, and the link head's logit `pred.link(key, value)` (trained on
   question -> answer links); the best scores are taken first, one value per key and one key per value.
   Where the model directory has a learned scorer (pair_scorer.json, models/extraction/pair_scorer.py,
   fitted by `python -m training pair-scorer`), it weighs `Proposals.features` (geometry in line heights,
   text of key and value, tags, link logit, rank among the key's and the value's other candidates):
   mode "rerank" adds weight x its logit to the hand score of the same candidates; mode "decide" proposes
   more (the model-tag vetoes, furniture and header, become features) and keeps what it finds likely.
5. Completion. A value that wraps takes its next lines; a key followed by several values in its row
   keeps them all (one pair each).

Rules (`FORM_RULES` below, the end of models/extraction/rules.py RULES; each can be switched off by name
in `off`). Each is a step: a function the decoder runs at its stage's point in the rules' order, those
switched off left out in one place (`form_steps`): form_cuts (stage form_lines: the learned line cuts of
form_cuts.py, where the scorer file has them), form_column_cuts (form_pieces), form_roles (form_masses:
the learned piece roles of form_roles.py); form_link, form_bare_first_option, form_cells (a ruled grid's
next cell: Page.rules, models/ocr/rulings.py), form_below (a candidate source), form_check_groups,
form_hints, form_label_not_value and form_colonless_keys (vetoes) at stage form_setup, each switching on
the attribute of form_evidence.Evidence the decoder's layers read; form_furniture and form_join_labels
(form_evidence), form_data_tables (form_tables), form_row_values (form_rows), form_join_values
(form_values), form_ocr_min (form_kept), form_signatures (form_page). No layer reads a rule's name.
Thresholds: DecodeSettings.form_*.

The forms files import each other in one direction, each only from the layers before it (settings.py and
mlp.py, which import no extraction file, sit under all of them; the files named on one line import none of
each other; tests/test_form_layers.py reads this table and holds the files to it):

    form_text       what a text says: known labels, hints, options and ticks, section headings
    form_pieces     OCR lines -> pieces, the tags a piece carries (learned cuts: any `LineCuts`)
    form_cuts       the learned cuts of colon-less lines (CutModel)
    form_grid       a piece's line height and centre, the page's ruled lines and cells (Grid)
    form_layout     rows, columns, stacked lines, option groups (Layout, a Grid)
    form_joins, form_glued, form_tables, form_roles
                    built on the layout: joined labels, glued-line cuts, data tables, the learned piece
                    roles (RoleModel)
    pair_scorer     the learned pair scorer, holding the roles and cuts it was fitted with
    base            PagePrediction (it carries a PairScorer), shared by every extraction stage
    form_evidence   decoder layer 1: what each piece is (Evidence)
    form_proposals  decoder layer 2: the candidates and their features (Proposals, FEATURES)
    form_assign     decoder layer 3: the pairs taken, completed and ordered (Decoder)
    form_line_roles  a role for every line (label, value, table cell, ...) read off the decoder's decisions
    forms           this file: the page's pieces cut and relabelled, the decoder run, signatures set apart
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from data.document import Page, Pair, Table
from data.labels import SIGNATURE_KEY
from models.extraction.base import PagePrediction, Rule, Steps, enabled_steps
from models.extraction.form_assign import (
    PAIR_STAGES,
    Decoder,
    add_row_values,
    join_value_lines,
    ocr_floor,
)
from models.extraction.form_cuts import CutModel
from models.extraction.form_evidence import (
    allow_colonless_keys,
    bare_first_option,
    data_tables,
    furniture_lines,
    join_label_lines,
    labels_not_values,
    look_below,
    use_cells,
    use_check_groups,
    use_hints,
    use_link,
)
from models.extraction.form_glued import column_cuts
from models.extraction.form_line_roles import line_roles
from models.extraction.form_pieces import Piece, label_masses, piece_tags, split_line, title_lines
from models.extraction.form_proposals import FEATURES
from models.extraction.form_roles import RoleModel, relabel
from models.extraction.form_text import key_score, strip_key_hint, ticked
from models.extraction.pair_scorer import PairScorer
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

__all__ = ["decode_form", "form_candidates", "key_score", "FEATURES"]

SIGN_DATE = re.compile(r"^(签字|签名|签署|签章|盖章)?日期$")   # a signature block's date label


@dataclass
class FormCandidate:
    """A candidate as the pair scorer's trainer sees it: the texts it would pair and its features."""
    key: str
    value: str
    where: str
    features: dict[str, float]
    key_line: int = -1             # the OCR lines the key and the value start on
    value_line: int = -1


def decode_form(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings = DEFAULT_SETTINGS,
                off: frozenset[str] = frozenset()) -> list[Pair]:
    """The key-value pairs of one page, top to bottom; `pred` is `Extractor.predict_page`'s output (its
    `pair_scorer`, the model directory's learned scorer if it has one, ranks the candidates)."""
    return decode_form_page(page, pred, tag_labels, st, off)[0]


class FormPage(NamedTuple):
    """What a form's page holds: its key-value pairs, its tables and its signature block, and per line its
    role (form_line_roles.ROLES: label, value, header, table_cell, ...)."""
    pairs: list[Pair]
    tables: list[Table]
    signatures: list[Pair]
    roles: list[str]


def decode_form_page(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings = DEFAULT_SETTINGS,
                     off: frozenset[str] = frozenset()) -> FormPage:
    """One page's key-value pairs, its tables (form_tables.py) and its signature block, each top to bottom; no
    pair holds a table's line, and no pair is a signature (`signature_block`); and each line's role, as those
    decisions and the pieces' own evidence name it (form_line_roles.py)."""
    scorer = pred.pair_scorer
    dec = _decoder(page, pred, tag_labels, st, off, scorer, scorer.roles if scorer is not None else None,
                   scorer.cuts if scorer is not None else None)
    ctx = FormContext(page, st, [], None, None, pairs=dec.pairs())
    run_steps(dec.steps, "form_page", ctx)         # sign_apart
    kept = {id(p) for p in ctx.signed}      # by identity: two equal pairs are two pairs
    pairs = [p for p in ctx.pairs if id(p) not in kept]
    return FormPage(pairs, [t.table(page) for t in dec.tables], ctx.signed,
                    line_roles(dec, pairs, ctx.signed, title_lines(page, st)))


def signature_block(pairs: list[Pair], st: DecodeSettings = DEFAULT_SETTINGS) -> list[Pair]:
    """The pairs that are a signature block's entries, not fields: a label that asks for a signature
    (data.labels.SIGNATURE_KEY: 负责人签名 -> the name signed) and a date asked for beside or under one
    (日期, 签字日期 within `sign_date_rows` line heights of a signature's row)."""
    signs = [p for p in pairs if SIGNATURE_KEY.search(p.key)]
    out = list(signs)
    for p in pairs:
        if any(p is q for q in out) or not SIGN_DATE.match(p.key) or p.key_box is None:
            continue
        for s in signs:
            if s.key_box is None or s.page != p.page:
                continue
            h = s.key_box[3] - s.key_box[1]
            if -h / 2 <= p.key_box[1] - s.key_box[1] <= st.sign_date_rows * h:
                out.append(p)
                break
    return out


def form_candidates(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings = DEFAULT_SETTINGS,
                    off: frozenset[str] = frozenset(), wide: bool = True,
                    roles: RoleModel | None = None, cuts: CutModel | None = None) -> list[FormCandidate]:
    """Every candidate a learned scorer would rank on this page, with its features (training/pair_scorer.py);
    `wide`: as a deciding scorer sees them, else as a reranking one (the hand candidates); `roles`: the
    learned piece roles the scorer will decode with, `cuts` the learned cuts of its lines."""
    dec = _decoder(page, pred, tag_labels, st, off, None, roles, cuts)
    cands = dec.candidates(wide=wide)
    return [FormCandidate(strip_key_hint(c.k.text), ticked(c.v.text) or c.v.text, c.where, f, c.k.line, c.v.line)
            for c, f in zip(cands, dec.features(cands))]


def _decoder(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings, off: frozenset[str],
             scorer: PairScorer | None, roles: RoleModel | None = None, cuts: CutModel | None = None) -> Decoder:
    """`roles`: the learned piece roles (form_roles.py) replace the encoder's tags as the decoder's masses;
    `cuts`: the learned cuts of colon-less lines (form_cuts.py) replace form_pieces.inline_label."""
    steps = form_steps(off)
    ctx = FormContext(page, st, label_masses(pred.probs, tag_labels), cuts, roles)
    run_steps(steps, "form_lines", ctx)            # learned_cuts
    titles = title_lines(page, st)
    ctx.pieces = [p for li in range(len(page.lines))
                  for p in split_line(page, li, ctx.masses[li], st.form_colon_key_max, ctx.cut, titles)]
    run_steps(steps, "form_pieces", ctx)           # cut_columns
    run_steps(steps, "form_masses", ctx)           # learned_roles
    return Decoder(page, pred, ctx.masses, ctx.pieces, st, steps, scorer, ctx.learned)


@dataclass
class FormContext:
    """What the step rules of this file read and change: a page's masses (the encoder's tags, or the
    learned roles once `learned`), the learned models the scorer file holds, the cuts used to split its
    lines (`cut`), its pieces, and after decoding its pairs and signature block."""
    page: Page
    st: DecodeSettings
    masses: list[np.ndarray]
    cuts: CutModel | None                  # the learned cuts the scorer file holds
    roles: RoleModel | None                # ... and the learned roles
    cut: CutModel | None = None            # the cuts split_line uses (learned_cuts)
    pieces: list[Piece] = field(default_factory=list)
    learned: bool = False                  # the masses are the learned roles (learned_roles)
    pairs: list[Pair] = field(default_factory=list)
    signed: list[Pair] = field(default_factory=list)


def run_steps(steps: Steps, stage: str, ctx: FormContext) -> None:
    """Run the steps of `stage` left on (`form_steps`), in the rules' order, over `ctx`."""
    for step in steps.get(stage, ()):
        step(ctx)


def learned_cuts(ctx: FormContext) -> None:
    """form_cuts: a colon-less line read as label and value at once is cut where the learned cuts say."""
    ctx.cut = ctx.cuts


def cut_columns(ctx: FormContext) -> None:
    """form_column_cuts: a line read as label and value at once is cut where the page's other rows align
    labels' ends and values' starts (form_glued.column_cuts)."""
    masses, st = ctx.masses, ctx.st
    ctx.pieces = column_cuts(ctx.page, ctx.pieces, lambda p: p.colon_key or
                             key_score(p.text, piece_tags(p, masses)) >= st.form_key_min, st)


def learned_roles(ctx: FormContext) -> None:
    """form_roles: each piece's learned role replaces the encoder's tags as the masses (form_roles.py)."""
    if ctx.roles is not None:
        ctx.masses = relabel(ctx.page, ctx.pieces, ctx.masses, ctx.roles, ctx.st)
        ctx.learned = True


def sign_apart(ctx: FormContext) -> None:
    """form_signatures: a signature label's name and its date are a signature block (`signature_block`)."""
    ctx.signed = signature_block(ctx.pairs, ctx.st)


# The forms rules as models/extraction/rules.py lists them (RULES ends with these, in this order). A rule of
# a step stage is a function the decoder runs at that stage's point, over this file's FormContext (form_lines,
# form_pieces, form_masses, form_page), form_evidence.Evidence (form_setup, form_evidence, form_tables) or
# form_assign.Decoder (form_rows, form_values, form_kept); `form_steps` leaves out those switched
# off. A form_setup step switches on an Evidence attribute the layers read (off until the step runs).
FORM_RULES: list[Rule] = [
    Rule("form_colonless_keys", "form_setup", allow_colonless_keys,
         about="a colon-less line more key-like than its value is a key"),
    Rule("form_furniture", "form_evidence", furniture_lines,
         about="on a page the model knows, a line it tags other holds no key or value"),
    Rule("form_below", "form_setup", look_below,
         about="a short key takes the line below when nothing stands right of it"),
    Rule("form_ocr_min", "form_kept", ocr_floor, about="no pair from a line OCR read unsurely"),
    Rule("form_link", "form_setup", use_link, about="the link head's score ranks the candidates layout allows"),
    Rule("form_join_labels", "form_evidence", join_label_lines, about="a label over two lines of one cell is one key"),
    Rule("form_join_values", "form_values", join_value_lines, about="a value that wraps takes its next lines"),
    Rule("form_row_values", "form_rows", add_row_values,
         about="a key followed by several values in its row keeps them all"),
    Rule("form_label_not_value", "form_setup", labels_not_values,
         about="a label is no value: an empty field does not take the next label"),
    Rule("form_hints", "form_setup", use_hints,
         about="hint text in a field (（...填写）, 请勾选) is no value and no key"),
    Rule("form_check_groups", "form_setup", use_check_groups,
         about="a box list answers with its ticked option, or not at all; options are no keys"),
    Rule("form_data_tables", "form_tables", data_tables,
         about="a data table in a form (headings over two or more rows of answers) gives no pairs"),
    Rule("form_roles", "form_masses", learned_roles,
         about="each piece's role (key, value, header, other) learned from its layout replaces the encoder's tags"),
    Rule("form_bare_first_option", "form_setup", bare_first_option,
         about="a bare option right before boxed ones (是 | □否: the filled box OCR lost) is the ticked one"),
    Rule("form_signatures", "form_page", sign_apart,
         about="a signature label's name and its date are a signature block, not key-value pairs"),
    Rule("form_cells", "form_setup", use_cells,
         about="where the page's ruled lines draw cells, a label's value is the next cell of its row, however far, "
               "and every line of that cell"),
    Rule("form_cuts", "form_lines", learned_cuts,
         about="a colon-less line read as label and value at once is cut where a learned model says"),
    Rule("form_column_cuts", "form_pieces", cut_columns,
         about="a line read as label and value at once is cut where other rows align labels' ends and values' starts"),
]
FORM_STAGES = ("form_lines", "form_pieces", "form_masses", "form_setup", "form_evidence", "form_tables", *PAIR_STAGES,
               "form_page")


def form_steps(off: frozenset[str]) -> Steps:
    """The forms decoder's step rules per stage, without those named in `off`: the one place they are left out."""
    return enabled_steps(FORM_RULES, FORM_STAGES, off)
