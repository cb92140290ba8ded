"""Generic key-value forms in the XFUND style: every line is a header, question, answer or other, and
each question links to its answer (question -> answer). Some questions are left blank, as on real
forms, and get no link. The layouts live in data/synth/forms/:

- classic.py: form_grid, form_inline, form_above, form_sections (the first four, easy ones)
- grid.py:    form_cells, form_cells3, form_rows, form_banded (ruled tables with label cells)
- free.py:    form_cover, form_apply, form_clinic, form_stacked, form_spaced, form_thesis (no table)
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
- Ruled lists inside a form (家庭主要成员 | 称谓 | 姓名 ...): column names are headers and entries
  "other", no pairs, as form_sections labels its table.
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
