"""Generic key-value forms in the XFUND style: every line is a header, question, answer or other, and
each question links to its answer (question -> answer). Some questions are left blank, as on real
forms, and get no link. The layouts live in data/synth/forms/:

- classic.py: form_grid, form_inline, form_above, form_sections (the first four, easy ones)
- grid.py:    form_cells, form_cells3, form_rows, form_banded (ruled grids of label cells)
- free.py:    form_cover, form_apply, form_clinic, form_stacked, form_spaced, form_thesis (no grid)
- labels.py:  the label lists (personal, company, application, HR, medical, school, registration
              forms) and a value generator per label kind; kit.py: the shared drawing pieces

Ground truth, beyond the generator's contract (data/synth/generator.py):

- A key or value printed over several lines (a label stacked in a narrow cell, 政治 / 面貌; an
  address wrapped in its cell) is one line per printed line, each labelled question (or answer).
  Every key line links to every value line, so the linking targets of training/dataset.py (first
  token of a question line -> first token of an answer line) hold for each of them. The pair entry
  says which lines form the key and the value: `key_lines` and `value_lines` (top to bottom, in
  reading order), with `key_line` / `value_line` the first of each; `key` and `value` are the lines'
  texts joined without a separator (Chinese), the key without its trailing colon.
- Several values after one label in a table row (联系方式 | 138... | a@163.com) are separate pairs
  with the same key: separate values, not one value wrapped.
- A check-box group (□男 ☑女) prints each option as its own line. The ticked option's line is the
  answer, linked from the key; the unticked ones are "other". The pair's value is the ticked option
  without its box (女), and `options` lists all of them. A group with no box ticked has no pair.
- Hints in brackets (（使领馆人员填写）, （请勾选）), signature dates (年  月  日), notes and photo cells
  are "other"; an unsigned signature label is a question with no link, like any empty field.
- Tables inside a form (a member list 姓名 | 出生年月 | 专业 | 本人签字, 项目组成员 序号 | 姓名 | 单位 |
  分工, a résumé 起始年月 | 终止年月 | 学校或工作单位 | 职务, education or work history, 家庭主要成员,
  an approval block 审批环节 | 意见 | 签字 | 日期, a defence committee), ruled or aligned by whitespace:
  column names are headers and cells "other", no pairs and no links; the caption above or beside
  is a header. The ground truth's `tables` holds each one (data/synth/generator.py): the column
  names and their lines, and per record one text per column ("" and None where blank). A row with
  nothing printed (the spare rows a ruled form leaves at the end) is no record; one with only its
  printed 序号 is. Drawn by kit.table from the page's own random stream: form_sections on every
  page (half of them a list of items to fill in: 项目 | 金额 | 备注), the four grid layouts on 45%,
  form_apply 45%, form_stacked and form_spaced 40%, form_thesis 35% (答辩委员会); form_grid,
  form_inline, form_above, form_cover and form_clinic never.
- Show-through (faint mirrored text from the back of the sheet) and red seals are decorations: no
  lines. They are drawn from their own random stream, so pages with and without decorations hold
  the same text.

Every pair entry carries `key_lines` and `value_lines` (the four classic layouts' single lines too).
"""
from __future__ import annotations

import random

from data.synth.canvas import Canvas
from data.synth.forms.classic import CLASSIC_LAYOUTS, render_classic
from data.synth.forms.free import FREE_LAYOUTS, render_free
from data.synth.forms.grid import GRID_LAYOUTS, render_grid

LAYOUTS: dict[str, dict] = {**CLASSIC_LAYOUTS, **GRID_LAYOUTS, **FREE_LAYOUTS}


def render_form(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    if layout in GRID_LAYOUTS:
        c = render_grid(rng, layout, decorations)
    elif layout in FREE_LAYOUTS:
        c = render_free(rng, layout, decorations)
    else:
        c = render_classic(rng, layout, decorations)
    for pair in c.pairs:
        pair.setdefault("key_lines", [pair["key_line"]])
        pair.setdefault("value_lines", [pair["value_line"]])
    return c
