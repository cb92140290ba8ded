"""Ruled-table forms: label cells with the value in the next cell (no colon), as registration,
HR and application forms print them.

- form_cells:   two label/value pairs per row, a photo cell, whole-row cells for long values
- form_cells3:  three pairs per row in narrow cells, so most labels wrap over two lines (政治/面貌)
- form_rows:    one pair per row plus rows where a label is followed by several values
                (联系方式 | 138... | ...@163.com: one pair per value), hint cells and a signature row
- form_banded:  sections as a vertical band of characters on the left (基/本/信/息), pairs on the right

All of them: check-box cells (□男 ☑女), empty value cells, hint text in brackets inside a cell or
in small type under a label, values that wrap over two lines, section rows spanning the table,
in 45% of pages a table (a member list, résumé, education or work history, 家庭主要成员: column
names are headers, cells other, no pairs, recorded in the ground truth's `tables`; see _list_table)
and a signature row (申请人签名 | | 日期 | 年 月 日) closing the table.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from data.synth.canvas import Canvas
from data.synth.forms import kit
from data.synth.forms.labels import (
    CHECKS,
    HINTS,
    LONG,
    MULTI,
    NUMERALS,
    SECTIONS,
    Label,
    make_value,
    pick_form,
    record_count,
    table_rows,
)

NOTES = (["（选填）", "（如有）", "（必填）", "（本人手写）", "（须与证件一致）"], ["（请勾选）", "（单选）", "请勾选"])
GRID_LAYOUTS: dict[str, dict] = {
    "form_cells": dict(fonts=["song", "hei"], cols=2, photo=True),
    "form_cells3": dict(fonts=["song", "hei", "fangsong"], cols=3, photo=False),
    "form_rows": dict(fonts=["hei", "song"], cols=1, photo=False),
    "form_banded": dict(fonts=["song", "kai", "hei"], cols=2, photo=False),
}


@dataclass
class Cell:
    label: Label | None            # None: a section row
    span: int = 1                  # value cells merged to the right (a whole-row value)
    multi: list[str] = field(default_factory=list)   # several values (kinds) after one label
    empty: bool = False
    hint: str = ""                 # in the empty value cell
    note: str = ""                 # small, under the label in its cell: 签名 / （本人手写）


def _plan(rng: random.Random, labels: list[Label], cols: int, multi_rows: int, sections: bool) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    row: list[Cell] = []

    def flush() -> None:
        if row:
            row[-1].span = cols - len(row) + 1       # the last value cell takes the rest of the row
            rows.append(list(row))
            row.clear()

    n = rng.randint(min(len(labels), 9), len(labels))
    sec_at = set(rng.sample(range(2, max(3, n - 2)), k=min(2, max(0, n // 6)))) if sections else set()
    for i, lab in enumerate(labels[:n]):
        if i in sec_at:
            flush()
            rows.append([Cell(None)])
        empty = rng.random() < 0.12
        hint = rng.choice(HINTS) if empty and rng.random() < 0.5 else ""
        if lab.kind in LONG and cols > 1 and rng.random() < 0.5:     # a whole row, else it wraps in its cell
            flush()
            rows.append([Cell(lab, span=cols, empty=empty, hint=hint)])
            continue
        note = rng.choice(NOTES[lab.kind in CHECKS]) if not hint and rng.random() < 0.08 else ""
        row.append(Cell(lab, empty=empty, hint=hint, note=note))
        if len(row) == cols:
            flush()
    flush()
    for _ in range(multi_rows):
        text, kinds = rng.choice(MULTI)
        at = rng.randint(1, len(rows))
        rows.insert(at, [Cell(Label(text, "multi"), span=cols, multi=kinds)])
    return rows


def render_grid(rng: random.Random, layout: str, decorations: bool) -> Canvas:
    p = GRID_LAYOUTS[layout]
    deco = random.Random(rng.random())
    title, labels = pick_form(rng)
    ink = kit.page_ink(rng, p["fonts"], (16, 20) if p["cols"] == 3 else (17, 21))
    size, cols = ink.size, p["cols"]
    W = rng.randint(1100, 1300)
    c = Canvas(W, 3200, rng, decorations=decorations)
    x0, x1 = rng.uniform(50, 80), W - rng.uniform(50, 80)
    c.text(W / 2, 40, title, size + rng.randint(8, 14), rng.choice(["hei_bold", "song_bold"]), (0, 0, 0),
           label="header", align="center")
    y = 40 + size * 3.4
    if rng.random() < 0.6:
        y += size * 1.2
        k = c.text(x0, y - size * 1.6, rng.choice(["填表日期：", "编号：", "登记日期："]), size - 2, ink.font,
                   ink.color, label="question")
        if rng.random() < 0.7:
            v = c.text(c.lines[k].box[2] + 8, y - size * 1.6, make_value(rng, "date"), size - 2, ink.value_font,
                       ink.value_color, label="answer")
            kit.group(c, [k], [v], kit.lines_text(c, [k]), c.lines[v].text)
    band = size * 2.2 if layout == "form_banded" else 0.0
    rows = _plan(rng, labels, cols, rng.randint(1, 2) if layout == "form_rows" else int(rng.random() < 0.4),
                 sections=layout != "form_banded")
    photo_rows = 4 if p["photo"] else 0
    photo_w = size * 6.5
    label_w = size * rng.uniform(4.4, 5.2) if cols < 3 else size * rng.uniform(3.3, 4.0)
    shade = rng.random() < 0.4
    centre = rng.random() < 0.3                 # values centred in their cells
    spread = rng.random() < 0.3                 # short labels spaced out to a common width: 姓　　名
    top = photo_bottom = y
    band_start, band_names = y, list(rng.sample(SECTIONS, 4))
    for r, row in enumerate(rows):
        right = x1 - (photo_w if r < photo_rows else 0)
        left = x0 + band
        if row[0].label is None:                       # a section row
            h = size * 2.0
            c.rect([left, y, right, y + h], (0, 0, 0), 1, fill=(240, 240, 240) if shade else None)
            name = rng.choice(SECTIONS)
            text = f"{NUMERALS[r % 8]}、{name}" if rng.random() < 0.5 else name
            centred = rng.random() < 0.5
            c.text((left + right) / 2 if centred else left + 10, y + h / 2 - size * 0.55, text, size,
                   rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header",
                   align="center" if centred else "left")
            y += h
            if r + 1 == photo_rows:
                photo_bottom = y
            continue
        if layout == "form_banded" and r and r % max(2, len(rows) // 3) == 0 and r <= len(rows) - 2 and band_names:
            _band(c, ink, x0, band_start, y, band_names.pop(0))
            band_start = y
        unit = (right - left) / cols
        h = _row(c, rng, ink, row, left, y, unit, label_w, shade, centre, spread)
        y += h
        if r + 1 == photo_rows:
            photo_bottom = y
    if rng.random() < 0.45:                             # a table inside the form: no pairs
        y += _list_table(c, rng, ink, x0 + band, y, x1, label_w)
    who = rng.choice(["申请人签名", "本人签字", "填表人", "经办人签字", "审核人签字"])
    signed = make_value(rng, "name") if rng.random() < 0.4 else None
    in_table = rng.random() < 0.5
    if in_table:                                        # 申请人签名 | (name) | 日期 | 年  月  日
        y += _sign_row(c, rng, ink, x0 + band, y, x1, label_w, who, signed)
    if layout == "form_banded" and band_names:
        _band(c, ink, x0, band_start, y, band_names.pop(0))
    if photo_rows:
        c.rect([x1 - photo_w, top, x1, photo_bottom], (0, 0, 0), 1)
        c.text(x1 - photo_w / 2, (top + photo_bottom) / 2 - size * 0.55,
               rng.choice(["照片", "（贴照片处）", "一寸照片"]), size - 2, ink.font, (80, 80, 80), label="other",
               align="center")
    y += size * 1.2
    if rng.random() < 0.7:
        c.text(x0, y, rng.choice(["本人承诺以上所填信息真实有效，如有虚假，愿承担相应责任。",
                                  "注：本表一式两份，请用黑色签字笔填写，字迹清晰。", "说明：带*号的为必填项。"]),
               size - 2, ink.font, ink.color, label="other", max_width=x1 - x0)
        y += size * 2.2
    if not in_table:
        kit.signature(c, rng, x0 + (x1 - x0) * 0.45, y, ink, who, (x1 - x0) * 0.55, signed)
    else:
        y -= size * 1.2
    c.crop_height(y + size * 1.4 + rng.uniform(40, 90))
    kit.decorate(c, deco, make_value(deco, "company"), (x1 - 140, y), [ln.text for ln in c.lines])
    return c


GRID_TABLES = ["members", "project", "resume", "study", "work", "family"]


def _list_table(c: Canvas, rng: random.Random, ink: kit.Ink, left: float, y: float, right: float,
                label_w: float) -> float:
    """A member list, résumé, education or work history inside the ruled form: a row of column names
    (headers) and a row per record ("other", as form_sections labels its table; recorded in
    `Canvas.tables`), with spare blank rows at the end. Its caption is a header, in a cell spanning
    the table on the left or in a row of its own across it. Returns the height."""
    size = ink.size
    caption, cols, rows = table_rows(rng, rng.choice(GRID_TABLES), *record_count(rng))
    look = kit.table_look(rng, ruled=True)
    look.pitch = rng.uniform(1.8, 2.6)
    if rng.random() < 0.6:                     # the caption in a cell on the left
        h = kit.records_table(c, ink, left + label_w, y, right, cols, rows, look) - y
        c.rect([left, y, left + label_w, y + h], (0, 0, 0), 1)
        parts = [caption] if c.text_width(caption, size, ink.font) <= label_w - 10 else kit.split_label(caption)
        ids = kit.stacked(c, left + label_w / 2, y + h / 2 - size * (0.55 + (len(parts) - 1) * 0.625), parts, size,
                          ink.font, ink.color, "header", "center", max_width=label_w - 8)
        for i in ids:                          # 简历 / （从高中起填写）: the bracket is a hint
            if c.lines[i].text.startswith("（"):
                c.lines[i].label = "other"
        return h
    ch = size * 2.0                            # a caption row across the table
    c.rect([left, y, right, y + ch], (0, 0, 0), 1)
    c.text((left + right) / 2, y + ch / 2 - size * 0.55, caption, size, rng.choice(["hei_bold", "song_bold"]),
           (0, 0, 0), label="header", align="center")
    return kit.records_table(c, ink, left, y + ch, right, cols, rows, look) - y


def _sign_row(c: Canvas, rng: random.Random, ink: kit.Ink, left: float, y: float, right: float, label_w: float,
              who: str, signed: str | None) -> float:
    """The table's last row: a signature cell and a date cell. Unsigned, both labels are questions
    without answers (the printed 年 月 日 is other); signed, the name answers the signature label."""
    size = ink.size
    h = size * 3.2
    mid = left + (right - left) * rng.uniform(0.5, 0.6)
    parts = [who] if c.text_width(who, size, ink.font) <= label_w - 10 else kit.split_label(who)
    for box in ([left, y, left + label_w, y + h], [left + label_w, y, mid, y + h], [mid, y, mid + label_w, y + h],
                [mid + label_w, y, right, y + h]):
        c.rect(box, (0, 0, 0), 1)
    ky = y + h / 2 - size * (0.55 + (len(parts) - 1) * 0.625)
    keys = kit.stacked(c, left + label_w / 2, ky, parts, size, ink.font, ink.color, "question", "center",
                       max_width=label_w - 8)
    if signed:
        v = c.text(left + label_w + size * 2, y + h / 2 - size * 0.6, signed, size + 3, "kai", (30, 30, 60),
                   label="answer")
        kit.group(c, keys, [v], kit.lines_text(c, keys), signed)
    c.text(mid + label_w / 2, y + h / 2 - size * 0.55, rng.choice(["日期", "签字日期", "填表日期"]), size, ink.font,
           ink.color, label="question", align="center", max_width=label_w - 8)
    c.text(right - size, y + h / 2 - size * 0.55, "年    月    日", size, ink.font, ink.color, label="other",
           align="right")
    return h


def _band(c: Canvas, ink: kit.Ink, x: float, y0: float, y1: float, name: str) -> None:
    """A section named down a narrow left column, one character a line (headers)."""
    w = ink.size * 2.2
    c.rect([x, y0, x + w, y1], (0, 0, 0), 1)
    if (y1 - y0) < ink.size * 1.0 * (len(name) + 1):     # a short band: a short name
        name = "备注" if (y1 - y0) >= ink.size * 3 else "注"
    step = min(ink.size * 1.5, (y1 - y0) / (len(name) + 1))
    size = min(ink.size, int(step * 0.85))
    start = (y0 + y1) / 2 - step * len(name) / 2
    for i, ch in enumerate(name):
        c.text(x + w / 2, start + i * step, ch, size, ink.font, (0, 0, 0), label="header", align="center")


def _row(c: Canvas, rng: random.Random, ink: kit.Ink, row: list[Cell], left: float, y: float, unit: float,
         label_w: float, shade: bool, centre: bool = False, spread: bool = False) -> float:
    """Draw one table row of label/value cells; returns its height."""
    size = ink.size
    gap = 1.25
    plans = []
    for cell in row:
        assert cell.label is not None
        lab = cell.label.text
        if spread and len(lab) < 4 and c.text_width("名" * 4, size, ink.font) <= label_w - 10:
            lab = kit.spaced(lab)
        width = unit * cell.span - label_w
        parts = [lab] if c.text_width(lab, size, ink.font) <= label_w - 10 else kit.split_label(lab)
        values: list[list[str]] = []
        vsize = size
        if cell.label.kind in CHECKS and not cell.empty:
            need = sum(c.text_width("□" + o, size, ink.font) + 2.0 * size for o in CHECKS[cell.label.kind])
            values = [[""] * (1 if need <= width - 20 else 2)]      # room for the options (drawn below)
        elif cell.multi:
            values = [[make_value(rng, k)] for k in cell.multi]
        elif not cell.empty and cell.label.kind not in CHECKS:
            text = make_value(rng, cell.label.kind)
            wrap_at = kit.break_width(rng, text, ink.value_font, size, width - 20,
                                      0.5 if cell.label.kind in LONG else 0.0)
            lines, vsize = kit.fit_lines(text, ink.value_font, size, wrap_at)
            values = [lines]
        plans.append((cell, parts, values, width, vsize))
    n_lines = max([len(p[1]) + bool(p[0].note) for p in plans] + [len(v) for p in plans for v in p[2]] + [1])
    h = size * (2.2 if n_lines == 1 else 1.1 + gap * n_lines)
    x = left
    for cell, parts, values, width, vsize in plans:
        assert cell.label is not None
        c.rect([x, y, x + label_w, y + h], (0, 0, 0), 1, fill=(238, 238, 238) if shade else None)
        c.rect([x + label_w, y, x + label_w + width, y + h], (0, 0, 0), 1)
        ky = y + h / 2 - size * (0.55 + (len(parts) + bool(cell.note) - 1) * gap / 2)
        keys = kit.stacked(c, x + label_w / 2, ky, parts, size, ink.font, ink.color, "question", "center", gap,
                           max_width=label_w - 8)
        if cell.note:
            c.text(x + label_w / 2, ky + len(parts) * size * gap + size * 0.1, cell.note, size - 4, ink.font,
                   ink.hint_color, label="other", align="center", max_width=label_w - 6)
        vx = x + label_w + 10
        if cell.label.kind in CHECKS and not cell.empty:
            cy = y + h / 2 - size * (0.55 + (len(values[0]) - 1) * 0.65)
            kit.checks(c, rng, keys, vx, cy, CHECKS[cell.label.kind], ink, max_x=x + label_w + width - 6)
        elif cell.multi:
            sub = width / len(values)
            for j, (text,) in enumerate(values):
                if j:
                    c.vline(vx - 10 + j * sub, y, y + h, (0, 0, 0))
                v = c.text(vx + j * sub, y + h / 2 - size * 0.55, text, size, ink.value_font, ink.value_color,
                           label="answer", max_width=sub - 20)
                kit.group(c, keys, [v], kit.lines_text(c, keys), text)
        elif values:
            lines = values[0]
            # filled in by a printer or by hand: a little off the middle of the cell
            vy = y + h / 2 - size * (0.55 + (len(lines) - 1) * gap / 2) + rng.uniform(-0.12, 0.12) * size
            at, how = (x + label_w + width / 2, "center") if centre else (vx, "left")
            vs = kit.stacked(c, at, vy, lines, vsize, ink.value_font, ink.value_color, "answer", how, gap)
            kit.group(c, keys, vs, kit.lines_text(c, keys), "".join(lines))
        elif cell.hint:
            c.text(vx, y + h / 2 - size * 0.5, cell.hint, size - 3, ink.font, ink.hint_color, label="other",
                   max_width=width - 20)
        x += label_w + width
    return h
