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

Rules switched off by name (`off`, see models/extraction/rules.py): form_colonless_keys, form_furniture,
form_options_row, form_below, form_ocr_min, form_link, form_join_labels, form_join_values, form_row_values,
form_label_not_value, form_hints, form_check_groups, form_value_column, form_plain_fields,
form_data_tables, form_roles (the learned piece roles of form_roles.py, where the scorer file has them),
form_cuts (the learned line cuts of form_cuts.py, likewise), form_wall_cuts (form_walls.py), form_code_cuts,
form_column_cuts, form_column_pairs, form_cells (a ruled grid's next cell: Page.rules, models/ocr/rulings.py).
Thresholds: DecodeSettings.form_*.

The forms files import each other in one direction, each only from the layers before it (settings.py and
mlp.py, which import no extraction file, sit under all of them; the files named on one line import none of
each other; tests/test_form_layers.py reads this table and holds the files to it):

    form_text       what a text says: known labels, hints, options and ticks, section headings
    form_pieces     OCR lines -> pieces, the tags a piece carries (learned cuts: any `LineCuts`)
    form_cuts       the learned cuts of colon-less lines (CutModel)
    form_grid       a piece's line height and centre, the page's ruled lines and cells (Grid)
    form_layout     rows, columns, stacked lines, option groups (Layout, a Grid)
    form_joins, form_glued, form_walls, form_tables, form_roles
                    built on the layout: joined labels, glued-line cuts, ruled-line cuts, data tables,
                    the learned piece roles (RoleModel)
    pair_scorer     the learned pair scorer, holding the roles and cuts it was fitted with
    base            PagePrediction (it carries a PairScorer), shared by every extraction stage
    form_evidence   decoder layer 1: what each piece is (Evidence)
    form_proposals  decoder layer 2: the candidates and their features (Proposals, FEATURES)
    form_assign     decoder layer 3: the pairs taken, completed and ordered (Decoder)
    forms           this file: the page's pieces cut and relabelled, the decoder run, signatures set apart
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from data.document import Page, Pair, Table
from data.labels import SIGNATURE_KEY
from models.extraction.base import PagePrediction
from models.extraction.form_assign import Decoder
from models.extraction.form_cuts import CutModel
from models.extraction.form_glued import code_cuts, column_cuts
from models.extraction.form_pieces import label_masses, piece_tags, split_line, title_lines
from models.extraction.form_proposals import FEATURES
from models.extraction.form_roles import RoleModel, relabel
from models.extraction.form_text import key_score, strip_key_hint, ticked
from models.extraction.form_walls import wall_cuts
from models.extraction.pair_scorer import PairScorer
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

__all__ = ["decode_form", "form_candidates", "key_score", "FEATURES"]

SIGN_DATE = re.compile(r"^(签字|签名|签署|签章|盖章)?日期$")   # a signature block's date label
SIGN_DATE_ROWS = 3.0     # ... beside a signature label or at most this many of its line heights under it


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
    """What a form's page holds: its key-value pairs, its tables and its signature block."""
    pairs: list[Pair]
    tables: list[Table]
    signatures: list[Pair]


def decode_form_page(page: Page, pred: PagePrediction, tag_labels: list[str], st: DecodeSettings = DEFAULT_SETTINGS,
                     off: frozenset[str] = frozenset()) -> FormPage:
    """One page's key-value pairs, its tables (form_tables.py) and its signature block, each top to bottom; no
    pair holds a table's line, and no pair is a signature (`signature_block`)."""
    scorer = pred.pair_scorer
    dec = _decoder(page, pred, tag_labels, st, off, scorer, scorer.roles if scorer is not None else None,
                   scorer.cuts if scorer is not None else None)
    pairs = dec.pairs()
    signed = signature_block(pairs) if "form_signatures" not in off else []
    kept = {id(p) for p in signed}      # by identity: two equal pairs are two pairs
    return FormPage([p for p in pairs if id(p) not in kept], [t.table(page) for t in dec.tables], signed)


def signature_block(pairs: list[Pair]) -> list[Pair]:
    """The pairs that are a signature block's entries, not fields: a label that asks for a signature
    (data.labels.SIGNATURE_KEY: 负责人签名 -> the name signed) and a date asked for beside or under one
    (日期, 签字日期 within SIGN_DATE_ROWS line heights of a signature's row)."""
    signs = [p for p in pairs if SIGNATURE_KEY.search(p.key)]
    out = list(signs)
    for p in pairs:
        if any(p is q for q in out) or not SIGN_DATE.match(p.key) or p.key_box is None:
            continue
        for s in signs:
            if s.key_box is None or s.page != p.page:
                continue
            h = s.key_box[3] - s.key_box[1]
            if -h / 2 <= p.key_box[1] - s.key_box[1] <= SIGN_DATE_ROWS * h:
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
    masses = label_masses(pred.probs, tag_labels)
    cut = cuts if "form_cuts" not in off else None
    titles = title_lines(page)
    pieces = [p for li in range(len(page.lines))
              for p in split_line(page, li, masses[li], st.form_colon_key_max, cut, titles)]
    if "form_wall_cuts" not in off:
        pieces = wall_cuts(page, pieces, st)
    if "form_code_cuts" not in off:
        pieces = code_cuts(page, pieces)
    if "form_column_cuts" not in off:
        pieces = column_cuts(page, pieces, lambda p: p.colon_key or
                             key_score(p.text, piece_tags(p, masses)) >= st.form_key_min, st)
    learned = roles is not None and "form_roles" not in off
    if roles is not None and learned:       # (both: mypy narrows `roles` by the first test only)
        masses = relabel(page, pieces, masses, roles, st)
    return Decoder(page, pred, masses, pieces, st, off, scorer, learned)
