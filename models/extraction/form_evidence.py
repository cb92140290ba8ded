"""Generic forms, decoder layer 1: a page's pieces and what the evidence says of each (`Evidence`).

The decoder is three classes, each the one before with a step added, in three files: `Evidence` (here)
holds the page's pieces after the layout's joins, the model's masses (the encoder's tags or the learned
roles), the furniture lines, the data tables, each piece's key score, and answers the questions every
later step asks: could this piece be a key (`can_key`), a value of that key (`is_value`), is it a label
standing where a value could be (`is_label`), what does the link head say (`link_term`).
form_proposals.Proposals adds the candidates and their features; form_assign.Decoder takes the best
candidates and completes them into pairs. Each reads only the files below it (forms.py's docstring).
Step rules here (run by `Evidence.run` where on, see forms.py FORM_RULES): the stage form_setup switches on
what the later steps and all three layers read as plain attributes (form_link: `link`, form_bare_first_option:
`bare_first`, form_cells: `cells`, form_below: `below`, form_check_groups: `check_groups`, form_hints: `hints`,
form_label_not_value: `label_not_value`, form_colonless_keys: `colonless_keys`; each off until its step runs,
so a rule switched off is a step left out, and no layer reads a rule's name), form_furniture and
form_join_labels (stage form_evidence), form_data_tables (stage form_tables).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from data.document import Page
from models.extraction.base import PagePrediction, Steps
from models.extraction.form_joins import join_labels, join_spaced
from models.extraction.form_layout import Layout, option_group
from models.extraction.form_pieces import Piece, is_header, piece_tags
from models.extraction.form_pieces import is_value as text_is_value
from models.extraction.form_tables import TABLE_CELL_KEY, FoundTable, column_name, find_tables
from models.extraction.form_text import (
    SECTION,
    SENTENCE,
    TICKED,
    is_hint,
    key_score,
    key_word,
    options,
    prose,
    qualified_label,
    ticked,
)
from models.extraction.pair_scorer import PairScorer
from models.extraction.settings import DecodeSettings


class Evidence:
    """The pieces of one page and the evidence on each; the decoder's first layer (see the module docstring)."""

    def __init__(self, page: Page, pred: PagePrediction, masses: list[np.ndarray], pieces: list[Piece],
                 st: DecodeSettings, steps: Steps, scorer: PairScorer | None = None, roles: bool = False):
        self.page, self.masses, self.st, self.scorer = page, masses, st, scorer
        self.steps = steps       # the step rules left on, per stage (forms.py form_steps): run by `run`
        self.soft = False        # proposing for the scorer: model-tag vetoes (furniture, header) are features
        self.roles = roles       # the masses are learned piece roles (form_roles.py), not the encoder's tags
        self.prob: dict[tuple[int, int], float] = {}     # a reranking scorer's p(true pair) per (key, value)
        self.key_prob: dict[int, float] = {}             # ... of the pair each key took
        self.column: dict[int, Piece] = {}     # id(key) -> its value in the grid's value column (_candidates)
        self.tables: list[FoundTable] = []     # the data tables inside the form (form_tables.py)
        self.table: set[int] = set()           # ids of their headings and cells
        self.furniture: set[int] = set()       # lines the model tags as form furniture (furniture_lines)
        self.pred = pred
        self.link: Callable = no_link          # the link head's scorer, where form_link is on (use_link)
        self.bare_first = False                # 是 | □否: 是 was ticked (form_layout.option_group; bare_first_option)
        self.cells = False                     # a ruled grid's cells say where values stand (use_cells)
        self.below = False                     # a short key may take the line under it (look_below)
        self.check_groups = False              # a box list answers with its ticked option (use_check_groups)
        self.hints = False                     # a field's hint text is no value and no key (use_hints)
        self.label_not_value = False           # a label is no value (labels_not_values)
        self.colonless_keys = False            # a colon-less key-like piece is a key (allow_colonless_keys)
        self.run("form_setup")                 # use_link, bare_first_option, use_cells, look_below, ...
        self.geo = Layout(page, pieces, st)
        self.pieces = pieces
        self.run("form_evidence")              # furniture_lines, join_label_lines
        # a label printed over two lines of one cell was joined by layout: that is key evidence itself
        self.own = {id(p): float(np.clip(key_score(p.text, piece_tags(p, masses)) + (1.0 if p.more else 0.0),
                                         -3.0, 3.0)) for p in self.pieces}
        for p in self.pieces:
            if p.value is not None:
                self.own[id(p.value)] = float(np.clip(key_score(p.value.text, piece_tags(p.value, masses)), -3, 3))
        self.run("form_tables")                # data_tables

    def run(self, stage: str) -> None:
        """Run the steps of `stage` left on, in the rules' order, each over this decoder."""
        for step in self.steps.get(stage, ()):
            step(self)

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
        return not v.colon_key and not furniture and id(v) not in self.table and not SECTION.match(v.text) and \
            text_is_value(v, mass, hints=self.hints,
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
        if SENTENCE.search(v.text) or len(k.text) > 8 or k.colon_key:
            return False
        return self.own.get(id(k), 0.0) >= self.st.form_key_min + self.st.form_key_margin

    def is_label(self, v: Piece) -> bool:
        """A label standing where a value could be (the next field's 姓名 under an empty 申报学院（部门）):
        a label everybody knows, or a key-like line with a value of its own right of it."""
        if not self.label_not_value or ticked(v.text):
            return False
        if key_word(v.text):
            return True
        w = self.geo.right_of(v)
        if w is not None and not options(v.text) and self.check_groups and \
                option_group(self.geo, w, self.bare_first)[0] and self.ks(v) >= self.st.form_key_min:
            return True                 # 证件类型 □身份证 □护照: a question with its own choices
        return w is not None and self.is_value(w) and not key_word(w.text) and \
            self.ks(v) >= self.st.form_key_min and self.ks(v) - self.ks(w) >= self.st.form_key_margin

    def options_row(self, v: Piece) -> bool:
        """Printed choices after a question (□自取 □邮寄 with the boxes lost): another short piece
        that is no key follows the value closely on its row."""
        if TICKED.search(v.text):
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
        if id(k) in self.table or (not k.colon_key and SECTION.match(k.text)):
            return False                          # a data table's column heading; a section's (四、审核意见)
        if (self.check_groups and options(k.text)) or (self.hints and is_hint(k.text)):
            return False                          # □男 is nobody's key; neither is （请勾选）
        floor = self.st.form_key_min if key_min is None else key_min
        return k.colon_key or (self.colonless_keys and self.ks(k) >= floor)

    def opens_cell_row(self, k: Piece) -> bool:
        """A ruled grid says `k`, a label over two lines of one cell, is a label whatever the tags say (a
        heading): the next cell of its row holds a value, no label or heading itself (提交证 / 件情况 |
        按规定执行; a section heading spans its row)."""
        if not self.cells or not k.more:      # (one line: a table's heading row looks the same)
            return False
        n = self.geo.cell_right(k)
        return n is not None and not n.colon_key and self.ks(n) < self.st.form_key_min and \
            not is_header(n, self.masses[n.line]) and self.is_value(n, k)     # (第一债务人 | 第二债务人: headings)


# --- the step rules of this layer (forms.py FORM_RULES), each over an Evidence being built --------------
def no_link(a: tuple[int, int], b: tuple[int, int]) -> float | None:
    """The link head's say with form_link off: none."""
    return None


def use_link(ev: Evidence) -> None:
    """form_link: the link head's score (`PagePrediction.link`) ranks the candidates layout allows."""
    ev.link = ev.pred.link


def bare_first_option(ev: Evidence) -> None:
    """form_bare_first_option: a bare option right before boxed ones (是 | □否) is the ticked one."""
    ev.bare_first = True


def use_cells(ev: Evidence) -> None:
    """form_cells: where the page's ruled lines draw cells (Page.rules, models/ocr/rulings.py), a label's value
    is the next cell of its row however far, and every line of that cell; a label over two lines of one cell
    is a label when the next cell holds a value (`opens_cell_row`)."""
    ev.cells = True


def look_below(ev: Evidence) -> None:
    """form_below: a short key (at most form_long_key characters) takes the line below as a candidate."""
    ev.below = True


def use_check_groups(ev: Evidence) -> None:
    """form_check_groups: a box list answers with its ticked option, or not at all; options are no keys, and
    a question with its own choices is a label (`is_label`)."""
    ev.check_groups = True


def use_hints(ev: Evidence) -> None:
    """form_hints: a field's hint text (（...填写）, 请勾选) is no value and no key: the field is empty."""
    ev.hints = True


def labels_not_values(ev: Evidence) -> None:
    """form_label_not_value: a label standing where a value could be is none (`is_label`): an empty field
    does not take the next label."""
    ev.label_not_value = True


def allow_colonless_keys(ev: Evidence) -> None:
    """form_colonless_keys: a colon-less piece more key-like than its value (key score >= the floor) is a key;
    without it only colon keys are."""
    ev.colonless_keys = True


def furniture_lines(ev: Evidence) -> None:
    """form_furniture: where the model evidently knows the page (most lines tagged question/answer), its
    "other" tag on a whole line is trusted: form furniture such as 编号：..., notes, amounts in words. On a
    page it does not know (a real scan) it tags nearly everything other, and that says nothing."""
    line_tags = [piece_tags(Piece(li, 0, len(m), "", []), ev.masses) for li, m in enumerate(ev.masses)]
    trust = np.mean([t[0] + t[1] >= 0.5 for t in line_tags]) if line_tags else 0.0
    ev.furniture = {li for li, t in enumerate(line_tags) if trust >= ev.st.form_trust and t[3] >= ev.st.form_other}


def join_label_lines(ev: Evidence) -> None:
    """form_join_labels: a label spaced out on its line, or printed over two lines of one cell, is one key
    (form_joins.join_spaced, join_labels)."""
    masses = ev.masses
    pieces = ev.geo.pieces = join_spaced(ev.geo, ev.pieces, ev.merged_tags)
    pieces = join_labels(ev.geo, pieces, ev.is_value,
                         lambda p: not is_header(p, masses[p.line]) and p.line not in ev.furniture and
                         not ev.role_answer(p),
                         (lambda p: bool(np.subtract(*piece_tags(p, masses)[:2]) > 0))   # q > a
                         if ev.cells else None, ev.merged_tags)
    ev.geo.pieces = ev.pieces = pieces


def data_tables(ev: Evidence) -> None:
    """form_data_tables: a data table inside the form (headings over rows of answers) holds neither keys
    nor values (form_tables.find_tables)."""
    ev.tables = find_tables(
        ev.geo, lambda p: not p.colon_key and not options(p.text) and
        (ev.ks(p) >= ev.st.form_key_min or is_header(p, ev.masses[p.line]) or column_name(p.text)),
        lambda p: ev.ks(p) < TABLE_CELL_KEY)
    ev.table = {i for t in ev.tables for i in t.ids()}
