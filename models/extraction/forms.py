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
   their boundary (form_layout.column_cuts); a label over two lines of one cell is joined into one key
   (form_layout.join_labels).
2. Keys. A piece ending in a colon is a key. A line without a colon is a key when it is more key-like
   than the text it would take as its value (`key_score`: question vs answer tags, a known label or a
   key noun at its end, no digits, short, not a sentence). Printed options and hints are never keys.
3. Candidates. A key's candidates are the text after its colon, the nearest piece right of it on its
   row (the next table cell) and the line under it. Vetoed: keys, labels (an empty field does not take
   the next label), hints (（...填写）, 请勾选), headers, blanks; an option list gives its ticked option
   or nothing.
4. Assignment. Each candidate's hand score is its layout prior (same line, right, below), how much more
   key-like the key is than the value, and the link head's logit `pred.link(key, value)` (trained on
   question -> answer links); the best scores are taken first, one value per key and one key per value.
   Where the model directory has a learned scorer (pair_scorer.json, models/extraction/pair_scorer.py,
   fitted by `python -m training pair-scorer`), it weighs `_Decoder.features` (geometry in line heights,
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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from data import geometry
from data.document import Page, Pair, Table
from data.labels import SIGNATURE_KEY
from models.extraction.base import PagePrediction
from models.extraction.form_cuts import CutModel
from models.extraction.form_layout import SECTION as SECTION_HEAD
from models.extraction.form_layout import (
    Layout,
    bracketed_note,
    code_cuts,
    column_cuts,
    continues_value,
    join_labels,
    join_spaced,
    option_group,
)
from models.extraction.form_pieces import (
    KEY_ENDINGS,
    SENTENCE,
    TICKED,
    Piece,
    char_share,
    cjk,
    is_header,
    is_hint,
    key_score,
    key_word,
    label_masses,
    options,
    piece_tags,
    prose,
    qualified_label,
    split_line,
    strip_key_hint,
    ticked,
    title_lines,
)
from models.extraction.form_pieces import is_value as text_is_value
from models.extraction.form_roles import RoleModel, relabel
from models.extraction.form_tables import TABLE_CELL_KEY, FoundTable, column_name, find_tables
from models.extraction.form_walls import wall_cuts
from models.extraction.pair_scorer import PairScorer
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

__all__ = ["decode_form", "form_candidates", "key_score", "FEATURES"]

WIDE_SLACK = 1.0        # with a learned scorer, keys and values this much below the hand thresholds are proposed


# the features `_Decoder.features` computes, in the order a new scorer is trained on
FEATURES = (
    "where_colon", "where_right", "where_far", "where_below", "where_tick", "dx", "dy", "left_dx", "size", "dist",
    "dist_vs_key", "dist_vs_value", "link", "has_link", "link_vs_key", "link_vs_value", "hand", "hand_vs_key",
    "hand_vs_value", "n_key", "n_value", "ks_key", "ks_value", "margin", "key_colon", "key_more", "value_more",
    "key_len", "value_len", "key_digits", "value_digits", "value_latin", "key_bracket", "value_bracket",
    "value_ticked", "value_options", "key_word", "value_word", "key_qualified", "value_qualified", "key_ending",
    "value_ending", "value_sentence", "key_first", "key_q", "key_a", "key_h", "key_o", "value_q", "value_a",
    "value_h", "value_o", "key_furniture", "value_furniture", "ocr", "ruled", "ruled_between", "cell_next",
)


SIGN_DATE = re.compile(r"^(签字|签名|签署|签章|盖章)?日期$")   # a signature block's date label
SIGN_DATE_ROWS = 3.0     # ... beside a signature label or at most this many of its line heights under it
COLUMN_SUPPORT = 2       # form_column_pairs: keys (values) of this page's pairs sharing the label's (value's) edge
COLUMN_EDGE = 0.7        # ... within this many line heights
COLUMN_LABEL_MAX = 8     # ... a label of at most this many characters, all Chinese


@dataclass
class Cand:
    """One link layout allows: key, value, where the value stands, the hand-weighted score."""
    k: Piece
    v: Piece
    where: str                   # colon, right, below
    hand: float
    far: bool = False            # right, far out on the key's underline
    tick: bool = False           # the ticked option of a check-box group


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
             scorer: PairScorer | None, roles: RoleModel | None = None, cuts: CutModel | None = None) -> "_Decoder":
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
    return _Decoder(page, pred, masses, pieces, st, off, scorer, learned)


class _Decoder:
    def __init__(self, page: Page, pred: PagePrediction, masses: list[np.ndarray], pieces: list[Piece],
                 st: DecodeSettings, off: frozenset[str], scorer: PairScorer | None = None, roles: bool = False):
        self.page, self.masses, self.st, self.off, self.scorer = page, masses, st, off, scorer
        self.soft = False        # proposing for the scorer: model-tag vetoes (furniture, header) are features
        self.roles = roles       # the masses are learned piece roles (form_roles.py), not the encoder's tags
        self.prob: dict[tuple[int, int], float] = {}     # a reranking scorer's p(true pair) per (key, value)
        self.key_prob: dict[int, float] = {}             # ... of the pair each key took
        self.column: dict[int, Piece] = {}     # id(key) -> its value in the grid's value column (_candidates)
        self.tables: list[FoundTable] = []     # the data tables inside the form (form_tables.py)
        self.table: set[int] = set()           # ids of their headings and cells
        self.link: Callable = pred.link if "form_link" not in off else (lambda a, b: None)
        self.bare_first = "form_bare_first_option" not in off    # 是 | □否: 是 was ticked (form_layout.option_group)
        self.geo = Layout(page, pieces, st)
        # Where the model evidently knows the page (most lines tagged question/answer), its "other" tag
        # on a whole line is trusted: form furniture such as 编号：..., notes, amounts in words. On a page
        # it does not know (a real scan) it tags nearly everything other, and that says nothing.
        line_tags = [piece_tags(Piece(li, 0, len(m), "", []), masses) for li, m in enumerate(masses)]
        trust = np.mean([t[0] + t[1] >= 0.5 for t in line_tags]) if line_tags else 0.0
        self.furniture = {li for li, t in enumerate(line_tags) if trust >= st.form_trust and t[3] >= st.form_other} \
            if "form_furniture" not in off else set()
        if "form_join_labels" not in off:
            pieces = self.geo.pieces = join_spaced(self.geo, pieces, self.merged_tags)
            pieces = join_labels(self.geo, pieces, self.is_value,
                                 lambda p: not is_header(p, masses[p.line]) and p.line not in self.furniture and
                                 not self.role_answer(p),
                                 (lambda p: bool(np.subtract(*piece_tags(p, masses)[:2]) > 0))   # q > a
                                 if "form_cells" not in off else None, self.merged_tags)
            self.geo.pieces = pieces
        self.pieces = pieces
        # a label printed over two lines of one cell was joined by layout: that is key evidence itself
        self.own = {id(p): float(np.clip(key_score(p.text, piece_tags(p, masses)) + (1.0 if p.more else 0.0),
                                         -3.0, 3.0)) for p in pieces}
        for p in pieces:
            if p.value is not None:
                self.own[id(p.value)] = float(np.clip(key_score(p.value.text, piece_tags(p.value, masses)), -3, 3))
        # a data table inside the form (headings over rows of answers): neither keys nor values
        if "form_data_tables" not in off:
            self.tables = find_tables(
                self.geo, lambda p: not p.colon_key and not options(p.text) and
                (self.ks(p) >= st.form_key_min or is_header(p, self.masses[p.line]) or column_name(p.text)),
                lambda p: self.ks(p) < TABLE_CELL_KEY)
            self.table = {i for t in self.tables for i in t.ids()}

    def merged_tags(self, new: Piece, a: Piece, b: Piece) -> None:
        """A label joined from pieces on two OCR lines (姓 | 名) reads on its first line's span: that span
        takes the mean of both pieces' tags, so it is judged as the whole label, not as its first character."""
        ta, tb = piece_tags(a, self.masses), piece_tags(b, self.masses)
        m = self.masses[new.line]
        if len(m):
            span = m[new.start:new.end]
            span[~np.isnan(span).any(1)] = (ta + tb) / 2

    # --- evidence ------------------------------------------------------------------------------------
    def ks(self, p: Piece) -> float:
        """Key score; a colon key is a key whatever its text."""
        return 9.0 if p.colon_key else self.own.get(id(p), 0.0)

    def is_value(self, v: Piece, of: Piece | None = None, cell: bool = False) -> bool:
        """Could `v` answer a question (`of`: this one)? A line the model calls furniture cannot, unless it
        stands right of a plain label (`plain_field`: the model's tags mislead it on a layout it never saw)
        or in the next ruled cell of its row (`cell`: the grid outweighs a tag, as the value column does)."""
        furniture = v.line in self.furniture and not cell and \
            not (of is not None and (self.plain_field(of, v) or self.column.get(id(of)) is v))
        mass = self.masses[v.line]
        if self.soft:           # the model's furniture and header tags are the scorer's evidence, no veto
            furniture, mass = False, mass * np.array([1.0, 1.0, 0.0, 1.0]) if len(mass) else mass
        # the roles' label veto, but not for the text right after a key's colon (所在学院： | 文学院, the answer
        # OCR read as a line of its own): the colon says what follows is its answer
        after_colon = of is not None and of.colon_key and of.value is None and self.geo.right_of(of) is v and \
            v.box[0] - of.box[2] <= self.geo.line_height(of)
        # a phrase the roles call an answer is one even with a comma (申请理由 | 因工作需要…，需…), or one
        # sentence (经营范围 | 技术转让;…服务。); prose that ends a sentence and goes on is a form's notes and
        # questions, whatever the roles say (XFUND's 隐私声明 | 市政府收集…保密。除非…)
        answer = self.role_answer(v) and not prose(v.text)
        if self.roles and not ticked(v.text):
            t = piece_tags(v, self.masses)
            furniture = furniture or (not after_colon and t[0] - t[1] > self.st.form_role_label)
        return not v.colon_key and not furniture and id(v) not in self.table and not SECTION_HEAD.match(v.text) and \
            text_is_value(v, mass, hints="form_hints" not in self.off,
                          sentences=answer or (of is not None and qualified_label(of.text)))

    def role_answer(self, p: Piece) -> bool:
        """The learned roles call `p` an answer (answer - max(question, other) > form_role_answer): a value
        even as a sentence, and no part of a label over two lines (朱轩秀 over 汉族, the next row's value)."""
        if not self.roles or ticked(p.text):
            return False
        t = piece_tags(p, self.masses)
        return bool(t[1] - max(t[0], t[3]) > self.st.form_role_answer)

    def plain_field(self, k: Piece, v: Piece) -> bool:
        """`k` -> `v` is a field whatever the model's furniture tag on `v` says (学校代码 10279 in a cover's
        corner): `v` right after a known label or a clearly key-like colon-less label of at most 8
        characters, and no sentence. A colon key's furniture line (编号：76102358 over a form) stays the
        model's call: forms differ on whether that is a field."""
        if self.geo.right_of(k) is not v:
            return False
        if key_word(k.text):
            return True
        if "form_plain_fields" in self.off or SENTENCE.search(v.text) or len(k.text) > 8 or k.colon_key:
            return False
        return self.own.get(id(k), 0.0) >= self.st.form_key_min + self.st.form_key_margin

    def is_label(self, v: Piece) -> bool:
        """A label standing where a value could be (the next field's 姓名 under an empty 申报学院（部门）):
        a label everybody knows, or a key-like line with a value of its own right of it."""
        if "form_label_not_value" in self.off or ticked(v.text):
            return False
        if key_word(v.text):
            return True
        w = self.geo.right_of(v)
        if w is not None and not options(v.text) and "form_check_groups" not in self.off and \
                option_group(self.geo, w, self.bare_first)[0] and self.ks(v) >= self.st.form_key_min:
            return True                 # 证件类型 □身份证 □护照: a question with its own choices
        return w is not None and self.is_value(w) and not key_word(w.text) and \
            self.ks(v) >= self.st.form_key_min and self.ks(v) - self.ks(w) >= self.st.form_key_margin

    def options_row(self, v: Piece) -> bool:
        """Printed choices after a question (□自取 □邮寄 with the boxes lost): another short piece
        that is no key follows the value closely on its row."""
        if TICKED.search(v.text) or "form_options_row" in self.off:
            return False
        nxt = self.geo.right_of(v)
        if nxt is not None and options(nxt.text) and not options(v.text):
            return False                # 男 □女: the one option whose box OCR lost is the ticked one
        return (nxt is not None and not nxt.colon_key and len(v.text) <= 4 and len(nxt.text) <= 4
                and nxt.box[0] - v.box[2] <= 3 * self.geo.height(v) and self.ks(nxt) < self.st.form_key_min)

    def link_term(self, k: Piece, v: Piece) -> float:
        """The link head's logit for key -> value, scaled to at most `form_link_weight` either way."""
        s = self.link((k.line, k.start), (v.line, v.start))
        if s is None:
            return 0.0
        return self.st.form_link_weight * float(np.clip(s / self.st.form_link_scale, -1.0, 1.0))

    def can_key(self, k: Piece, key_min: float | None = None, grid: bool = False) -> bool:
        """Could `k` be a key? `grid`: the model's furniture tag aside (its value may stand in the page's
        value column, which outweighs a tag on a layout the model never saw)."""
        furniture = k.line in self.furniture and not key_word(k.text) and not (grid or id(k) in self.column)
        header = is_header(k, self.masses[k.line]) and not self.opens_cell_row(k)
        if SENTENCE.search(k.text) or (not self.soft and (header or furniture)):
            return False
        if id(k) in self.table or (not k.colon_key and SECTION_HEAD.match(k.text)):
            return False                          # a data table's column heading; a section's (四、审核意见)
        if ("form_check_groups" not in self.off and options(k.text)) or \
                ("form_hints" not in self.off and is_hint(k.text)):
            return False                          # □男 is nobody's key; neither is （请勾选）
        floor = self.st.form_key_min if key_min is None else key_min
        return k.colon_key or ("form_colonless_keys" not in self.off and self.ks(k) >= floor)

    def opens_cell_row(self, k: Piece) -> bool:
        """A ruled grid says `k`, a label over two lines of one cell, is a label whatever the tags say (a
        heading): the next cell of its row holds a value, no label or heading itself (提交证 / 件情况 |
        按规定执行; a section heading spans its row)."""
        if "form_cells" in self.off or not k.more:      # (one line: a table's heading row looks the same)
            return False
        n = self.geo.cell_right(k)
        return n is not None and not n.colon_key and self.ks(n) < self.st.form_key_min and \
            not is_header(n, self.masses[n.line]) and self.is_value(n, k)     # (第一债务人 | 第二债务人: headings)

    # --- candidates ----------------------------------------------------------------------------------
    def candidates(self, wide: bool = False) -> list[Cand]:
        """Every link layout allows, with its hand-weighted score. `wide` (a learned scorer decides):
        keys and values the key-score margin would drop are proposed too; vetoes stay."""
        key_min = self.st.form_key_min - (WIDE_SLACK if wide else 0.0)
        margin_min = self.st.form_key_margin - (WIDE_SLACK if wide else 0.0)
        self.soft = wide
        try:
            return self._candidates(key_min, margin_min)
        finally:
            self.soft = False

    def _candidates(self, key_min: float, margin_min: float) -> list[Cand]:
        out: list[Cand] = []
        self.column = {}
        keyish = [k for k in self.pieces if self.can_key(k, key_min, grid=True)]
        past = "form_far_past_key" in self.off
        if "form_value_column" not in self.off:
            self.column = self.geo.column_values(keyish, past_keys=past)
        for k in self.pieces:
            if not self.can_key(k, key_min):
                continue
            if k.colon_key and k.value is not None:          # 姓名：张三 on one line
                if self.is_value(k.value, k) and not self.options_row(k.value):
                    out.append(Cand(k, k.value, "colon", 10.0 + self.link_term(k, k.value)))
                continue
            right = self.geo.right_of(k)
            far = False
            if right is None and (k.colon_key or qualified_label(k.text)) and self.geo.first_in_row(k):
                right = self.geo.right_of(k, far=True)            # a cover's value far out on its underline
                if right is not None and not past and self.geo.past_a_key(k, right, keyish):
                    right = None                                  # another label's value
                far = right is not None
            if right is None and "form_cells" not in self.off:
                right = self.geo.cell_right(k)                    # the next cell of a ruled grid, however wide
                far = right is not None
            if right is None and "form_value_column" not in self.off:
                right = self.column.get(id(k))                    # a wide value cell of the page's grid
                far = right is not None
            looks: list[tuple[str, Piece | None]] = [("right", right)]
            if len(k.text) <= self.st.form_long_key and "form_below" not in self.off:
                looks.append(("below", self.geo.below(k)))
            for where, v in looks:
                if v is None:
                    continue
                if where == "right" and "form_check_groups" not in self.off:
                    group, tick = option_group(self.geo, v, self.bare_first)
                    if group:                            # the answer is the ticked box, or there is none
                        if tick is not None:
                            out.append(Cand(k, tick, where, 5.0 + self.link_term(k, tick), tick=True))
                        break
                if where == "right" and "form_hints" not in self.off and is_hint(v.text):
                    break                                # the field's own help text: it is empty
                if not self.is_value(v, k) or (where == "right" and self.options_row(v)) or self.is_label(v):
                    continue
                margin = self.ks(k) - self.ks(v)
                if margin >= margin_min:
                    prior = 0.5 if where == "right" else 0.0
                    out.append(Cand(k, v, where, min(margin, 5.0) + prior + self.link_term(k, v),
                                    far=far and where == "right"))
        return out

    def features(self, cands: list[Cand]) -> list[dict[str, float]]:
        """What a learned scorer weighs for each candidate (models/extraction/pair_scorer.py): geometry in
        line heights, the text of key and value, the model's tags and link logit, and how the candidate
        ranks among the other candidates of its key and of its value."""
        raw = [self.link((c.k.line, c.k.start), (c.v.line, c.v.start)) for c in cands]
        links = [float(np.clip(r, -20, 20)) if r is not None else 0.0 for r in raw]
        by_key: dict[int, list[int]] = {}
        by_val: dict[int, list[int]] = {}
        for i, c in enumerate(cands):
            by_key.setdefault(id(c.k), []).append(i)
            by_val.setdefault(id(c.v), []).append(i)
        dist = []
        for c in cands:
            h = max(1.0, self.geo.line_height(c.k))
            dist.append(float(np.hypot(max(0.0, c.v.box[0] - c.k.box[2]), self.geo.centre(c.v) - self.geo.centre(c.k))
                              / h))
        out = []
        for i, c in enumerate(cands):
            k, v = c.k, c.v
            h = max(1.0, self.geo.line_height(k))
            kt, vt = piece_tags(k, self.masses), piece_tags(v, self.masses)
            ks, vs = self.ks(k), (0.0 if c.tick else self.own.get(id(v), 0.0))
            ki, vi = by_key[id(k)], by_val[id(v)]
            ocr = min(self.page.lines[li].score for li in k.lines | v.lines)
            # ruled lines crossed from key to value (models/ocr/rulings.py): a grid's cell borders
            walls = (self.geo.floors(k, v) if c.where == "below" else
                     0 if c.where == "colon" else (self.geo.walls(k, v) or 0))
            f = {
                "where_colon": float(c.where == "colon"), "where_right": float(c.where == "right" and not c.far),
                "where_far": float(c.far), "where_below": float(c.where == "below"), "where_tick": float(c.tick),
                "dx": float(np.clip((v.box[0] - k.box[2]) / h, -5, 20)),
                "dy": float(np.clip((self.geo.centre(v) - self.geo.centre(k)) / h, -5, 5)),
                "left_dx": float(np.clip((v.box[0] - k.box[0]) / h, -5, 30)),
                "size": float(np.clip(self.geo.line_height(v) / h, 0, 3)),
                "dist": float(np.clip(dist[i], 0, 30)),
                "dist_vs_key": float(np.clip(dist[i] - min(dist[j] for j in ki), 0, 30)),
                "dist_vs_value": float(np.clip(dist[i] - min(dist[j] for j in vi), 0, 30)),
                "link": links[i] / 4.0, "has_link": float(raw[i] is not None),
                "link_vs_key": (links[i] - max(links[j] for j in ki)) / 4.0,
                "link_vs_value": (links[i] - max(links[j] for j in vi)) / 4.0,
                "hand": float(np.clip(c.hand, -5, 12)) / 5.0,
                "hand_vs_key": float(np.clip(c.hand - max(cands[j].hand for j in ki), -10, 0)) / 5.0,
                "hand_vs_value": float(np.clip(c.hand - max(cands[j].hand for j in vi), -10, 0)) / 5.0,
                "n_key": float(len(ki)), "n_value": float(len(vi)),
                "ks_key": float(np.clip(ks, -3, 3)) if not k.colon_key else 3.0, "ks_value": vs,
                "margin": float(np.clip((ks if not k.colon_key else 3.0) - vs, -6, 6)),
                "key_colon": float(k.colon_key), "key_more": float(bool(k.more)), "value_more": float(bool(v.more)),
                "key_len": min(len(k.text), 20) / 10, "value_len": min(len(v.text), 30) / 10,
                "key_digits": char_share(k.text, str.isdigit), "value_digits": char_share(v.text, str.isdigit),
                "value_latin": char_share(v.text, lambda ch: ch.isascii() and ch.isalpha()),
                "key_bracket": float(any(ch in "（(" for ch in k.text)),
                "value_bracket": float(any(ch in "（(" for ch in v.text)),
                "value_ticked": float(ticked(v.text) is not None), "value_options": float(options(v.text)),
                "key_word": float(key_word(k.text)), "value_word": float(key_word(v.text)),
                "key_qualified": float(qualified_label(k.text)), "value_qualified": float(qualified_label(v.text)),
                "key_ending": float(k.text.endswith(KEY_ENDINGS)), "value_ending": float(v.text.endswith(KEY_ENDINGS)),
                "value_sentence": float(SENTENCE.search(v.text) is not None),
                "key_first": float(self.geo.first_in_row(k)),
                "key_q": float(kt[0]), "key_a": float(kt[1]), "key_h": float(kt[2]), "key_o": float(kt[3]),
                "value_q": float(vt[0]), "value_a": float(vt[1]), "value_h": float(vt[2]), "value_o": float(vt[3]),
                "key_furniture": float(k.line in self.furniture), "value_furniture": float(v.line in self.furniture),
                "ocr": float(ocr),
                "ruled": float(bool(self.page.rules)), "ruled_between": float(min(walls, 3)),
                "cell_next": float(c.where == "right" and walls == 1),
            }
            out.append(f)
        return out

    # --- assignment and completion -------------------------------------------------------------------
    def ranked(self) -> list[tuple[float, Piece, Piece, str]]:
        """(strength, key, value, where), best first: by the learned scorer where the model directory has
        one (strength: its logit + 1, so a pair's confidence is its probability), else by hand weights."""
        if self.scorer is None:
            return sorted(((c.hand, c.k, c.v, c.where) for c in self.candidates()), key=lambda c: -c[0])
        if self.scorer.mode == "rerank":     # the hand candidates, all kept, ordered by hand + learned logit
            cands = self.candidates()
            z = self.scorer.logits(self.scorer.rows(self.features(cands))) if cands else np.zeros(0)
            self.prob = {(id(c.k), id(c.v)): float(1 / (1 + np.exp(-np.clip(q, -30, 30)))) for q, c in zip(z, cands)}
            return sorted(((c.hand + self.scorer.weight * float(np.clip(q, -5, 5)), c.k, c.v, c.where)
                           for q, c in zip(z, cands)), key=lambda c: -c[0])
        cands = self.candidates(wide=True)
        p = self.scorer.predict(self.scorer.rows(self.features(cands)))
        keep = [(float(np.log(q / (1 - q + 1e-9) + 1e-9)) + 1.0, c.k, c.v, c.where)
                for q, c in zip(p, cands) if q >= self.scorer.threshold]
        return sorted(keep, key=lambda c: -c[0])

    def pairs(self) -> list[Pair]:
        taken: list[tuple[float, Piece, Piece, str]] = []
        for c in self.ranked():
            _, k, v, _ = c
            if k.used or v.used:
                continue
            k.used = v.used = True
            if (id(k), id(v)) in self.prob:
                self.key_prob[id(k)] = self.prob[(id(k), id(v))]
            taken.append(c)
        if "form_column_pairs" not in self.off:
            taken += self.column_pairs(taken)
        out: list[tuple[float, Piece, Piece]] = []
        for strength, k, v, where in taken:
            out.append((strength, k, v))
            if where in ("colon", "right") and "form_row_values" not in self.off:
                out += [(strength, k, w) for w in self.row_values(k, v)]
        if "form_join_values" not in self.off:
            out = [(s, k, self.lead_line(k, v)) for s, k, v in out]
            for _, k, v in out:
                if not k.absorbed:
                    self.wrap(k, v)
        pairs = [p for p in (self.make_pair(s, k, v) for s, k, v in out if not k.absorbed) if p is not None]
        return reading_order(pairs, self.geo.slope)

    def column_pairs(self, taken: list[tuple[float, Piece, Piece, str]]) -> list[tuple[float, Piece, Piece, str]]:
        """Rows the page's own columns pair where the evidence on the pieces did not: an unpaired piece that
        ends (or starts) where at least COLUMN_SUPPORT keys of this page's pairs end (or start), with an
        unpaired piece right of it on its row that starts where at least COLUMN_SUPPORT of their values start.
        A label no list or model knows (研究方向 | 结构工程 on a cover whose other labels are known) stands in
        the labels' column with its value in the values' column; the layout says what its text cannot."""
        side = [(k, v) for _, k, v, where in taken if where == "right" and not k.more and not v.more]
        if len(side) < COLUMN_SUPPORT:
            return []
        out: list[tuple[float, Piece, Piece, str]] = []
        for k in self.pieces:
            if k.used or k.absorbed or k.colon_key or not 2 <= len(k.text) <= COLUMN_LABEL_MAX or \
                    not cjk(k.text) or id(k) in self.table or \
                    SECTION_HEAD.match(k.text) or is_header(k, self.masses[k.line]) or options(k.text):
                continue
            v = self.geo.right_of(k)
            if v is None or v.used or v.absorbed or v.colon_key or not self.is_value(v, k) or self.is_label(v) or \
                    options(v.text) or self.options_row(v) or self.ks(v) >= self.ks(k):
                continue
            h = self.geo.line_height(k)
            keys = sum(abs(a.box[2] - k.box[2]) <= COLUMN_EDGE * h or abs(a.box[0] - k.box[0]) <= COLUMN_EDGE * h
                       for a, _ in side)
            values = sum(abs(b.box[0] - v.box[0]) <= COLUMN_EDGE * h for _, b in side)
            if keys >= COLUMN_SUPPORT and values >= COLUMN_SUPPORT:
                k.used = v.used = True
                out.append((0.5, k, v, "right"))
        return out

    def row_values(self, k: Piece, v: Piece) -> list[Piece]:
        """Further values of `k` along its row (a label followed by several values in a table row, each up to
        form_far_gap line heights from the last: a wide row's cells leave its values far apart):
        unused value pieces that are not key-like, each with evidence of being an answer (a figure,
        answer tags, or the link head linking it to `k`)."""
        out: list[Piece] = []
        last = v
        for _ in range(8):
            n = self.geo.right_of(last, far=True)
            if n is None and "form_cells" not in self.off:
                n = self.geo.cell_right(last)                     # the row's next ruled cell, however wide
            # the next ruled cell of a label's row: a cell of its own, answering the label whatever the tags say
            cell = n is not None and "form_cells" not in self.off and self.geo.walls(last, n) == 1
            if n is None or n.used or not self.is_value(n, cell=cell) or self.is_label(n) or options(n.text) or \
                    self.ks(n) >= self.st.form_key_min + self.st.form_key_margin / 2:
                break
            tags = piece_tags(n, self.masses)
            link = self.link((k.line, k.start), (n.line, n.start))
            if not (cell or any(ch.isdigit() for ch in n.text) or tags[1] > tags[0] + 0.2
                    or (link is not None and link > self.st.form_row_link)):
                break
            n.used = True
            # a piece this close is the same value cut by OCR (1983/6/ | 8); two figures are two cells
            if n.box[0] - last.box[2] <= self.st.form_row_join * self.geo.line_height(last) and \
                    not (last.text[-1:].isdigit() and n.text[:1].isdigit()):
                last.join(n, _sep(last.text, n.text))
            else:
                out.append(n)
                last = n
        return out if len(out) <= self.st.form_row_max else []     # more: a row of a data table

    def lead_line(self, k: Piece, v: Piece) -> Piece:
        """The value with its first line, where a value of two lines stands centred on its label's row in
        one cell (郑州市金水区东风路95 / 号A座2208室 beside 家庭住址) and layout found the second: a free value
        line right of the key, right above `v` as its previous line, reaching into the key's row and
        with no other piece between the key and it (one further left, the empty field before the key's,
        is no rival)."""
        if v.used is False or v.more or v.box[0] < k.box[2]:
            return v
        for u in self.pieces:
            if u.used or u.absorbed or u is v or u is k or u.colon_key or u.box[0] < k.box[2] or \
                    u.box[3] <= k.box[1] or u.box[1] >= v.box[1]:
                continue
            left = self.geo.left_of(u)
            rival = left is not None and left is not k and (left.box[0] > k.box[0] or "form_far_past_key" in self.off)
            if rival or not continues_value(self.geo, u, v, None) or not self.is_value(u, k) or \
                    self.is_label(u) or options(u.text) or self.ks(u) >= self.st.form_key_min:
                continue
            u.used = True
            u.join(v, _sep(u.text, v.text))
            return u
        return v

    def wrap(self, k: Piece, v: Piece) -> None:
        """A value that runs over several lines takes its next lines: right under it, same type size,
        starting where it starts, no key or label, no one else's value; or any next line in the same ruled
        cell (the cell outweighs spacing and a hint under the label beside it)."""
        for _ in range(4):
            # a line read as a weak colon key with its own value (研究：基于...) may still be this value's next
            free = [p for p in self.pieces if p.line not in v.lines and not p.absorbed and
                    (not p.used or (p.colon_key and p.value is not None and p.value.used))]
            w = self.geo.below(v, free)
            if w is None:
                return
            if w.colon_key:             # 研究：基于...调查数据, a title's next line: a colon inside the value
                if w.value is None or key_word(w.text) or self.own.get(id(w), 0.0) >= self.st.form_key_min + \
                        self.st.form_key_margin or not self.is_value(w.value):
                    return
                whole = Piece(w.line, w.start, w.value.end, self.page.lines[w.line].text[w.start:w.value.end].strip(),
                              [w.box[0], min(w.box[1], w.value.box[1]), w.value.box[2], max(w.box[3], w.value.box[3])])
                if not continues_value(self.geo, v, whole, k):
                    return
                w.used = w.value.used = w.absorbed = True
                v.join(whole, _sep(v.text, whole.text))
                continue
            # one ruled cell holding both: the cell says they are one value, however tight or loose the lines
            cell = "form_cells" not in self.off and self.geo.same_cell(v, w) and not bracketed_note(w.text)
            if not cell and not continues_value(self.geo, v, w, k):
                return
            left = self.geo.left_of(w)
            if left is not None and left is not k and left not in k.more and not (cell and is_hint(left.text)):
                return                  # the next row's value: its own label stands left of it (not a hint
                                        # under this value's label, in the label's cell: 经营范围 / (必填))
            if not self.is_value(w, k) or self.is_label(w) or qualified_label(w.text) or options(w.text) or \
                    self.ks(w) >= self.st.form_key_min + self.st.form_key_margin:
                return
            v.join(w, _sep(v.text, w.text))

    def make_pair(self, strength: float, k: Piece, v: Piece) -> Pair | None:
        lines = [self.page.lines[i] for i in k.lines | v.lines]
        ocr = min(ln.score for ln in lines)
        # a misread or cut-off key (人, 门) makes a wrong pair
        if (ocr < self.st.form_ocr_min and "form_ocr_min" not in self.off) or len(k.text) < 2:
            return None
        # the reranking scorer's probability where it ranked the pair (fitted on true and false candidates, so
        # it is a probability); else the strength squashed (hand weights saturate it: a rank, not a chance)
        conf = self.key_prob.get(id(k), 1 / (1 + np.exp(-(strength - 1.0))))
        return Pair(key=strip_key_hint(k.text), value=ticked(v.text) or v.text, key_box=k.box, value_box=v.box,
                    score=round(float(conf * ocr), 4), page=self.page.index)


def reading_order(pairs: list[Pair], slope: float = 0.0) -> list[Pair]:
    """Pairs row by row, top to bottom, and left to right within a row (by their keys' boxes, deskewed):
    two pairs of one printed row (开始日期 | 结束日期) come in the order they are read, however a tilt or
    a taller box puts one key's top edge above the other's. Pairs without a key box come first."""
    boxed = [p for p in pairs if p.key_box]
    boxes = [p.key_box for p in boxed if p.key_box]
    if len(boxed) < 2:
        return [p for p in pairs if not p.key_box] + boxed
    heights = sorted(b[3] - b[1] for b in boxes)
    rows = geometry.cluster_rows([(str(i), b) for i, b in enumerate(boxes)], heights[len(heights) // 2], slope)
    return [p for p in pairs if not p.key_box] + [boxed[i] for row in rows for i in row]


def _sep(a: str, b: str) -> str:
    """What joins two pieces of one value: a space between two Latin words, else nothing (Chinese text,
    figures and their separators run on)."""
    return " " if a[-1:].isascii() and a[-1:].isalpha() and b[:1].isascii() and b[:1].isalpha() else ""
