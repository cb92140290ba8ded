"""Forms without a ruled grid of label cells.

- form_cover:   a thesis cover: centred school and title, then label + colon-less value on an
                underline (题　　目 / 学　　院 ...); a long title runs over two underlined lines
- form_apply:   an application: numbered sections, "label：value" two per row over underlines, hint
                text in brackets after labels (（使领馆人员填写）, （请勾选）), empty fields, check-box
                groups, a reason that wraps below its label, signature and date lines
- form_clinic:  a medical record: "label：value" close together, up to three per row, check-box
                groups, a diagnosis that wraps over two lines beside its label, doctor's signature
- form_stacked: the label in small type above its value, no boxes, two or three per row
- form_spaced:  letter-spaced labels with no colon (姓　　名), values on underlines, two per row
- form_thesis:  a graduate thesis title page: small 分类号 / 密级 / 学号 pairs in the corners, the
                thesis title in large type (other: no label names it), then right-aligned labels
                (指导教师姓名、职称) with their values on underlines to the left-aligned column

Tables (kit.table: a caption, column names as headers, a row per record as other, ruled or aligned
by whitespace; recorded in the ground truth's `tables`): form_apply in 45% of pages (a member list,
项目组成员 with 序号 | 姓名 | 单位 | 分工, a résumé, education or work history, 家庭主要成员 or an
approval signature block, as a numbered section), form_stacked and form_spaced in 40% (the same
kinds, before the signature), form_thesis in 35% (答辩委员会). form_cover and form_clinic draw none.
"""
from __future__ import annotations

import random

from data.synth.canvas import Canvas
from data.synth.forms import kit
from data.synth.forms.labels import (
    CHECK_HINTS,
    CHECKS,
    HINTS,
    LONG,
    NUMERALS,
    SCHOOLS,
    SECTIONS,
    Label,
    make_value,
    pick_form,
    record_count,
    table_rows,
)

FREE_LAYOUTS: dict[str, dict] = {
    "form_cover": dict(fonts=["song", "hei", "kai"]),
    "form_apply": dict(fonts=["song", "hei", "fangsong"]),
    "form_clinic": dict(fonts=["hei", "song"]),
    "form_stacked": dict(fonts=["hei", "song"]),
    "form_spaced": dict(fonts=["song", "kai", "hei"]),
    "form_thesis": dict(fonts=["song", "hei", "kai"]),
}
THESIS_CORNER = [Label("分类号", "clc"), Label("密级", "secrecy"), Label("学校代码", "school_code"),
                 Label("UDC", "udc"), Label("学号", "student_no")]
THESIS_LABELS = [Label("研究生姓名", "name"), Label("指导教师姓名、职称", "teacher"), Label("学科、专业名称", "major"),
                 Label("研究方向", "field"), Label("所在学院", "college"), Label("论文提交日期", "date"),
                 Label("论文答辩日期", "date"), Label("学位类别", "degree")]

COVER_LABELS = [Label("题目", "topic"), Label("学院", "college"), Label("专业", "major"), Label("学生姓名", "name"),
                Label("学号", "student_no"), Label("指导教师", "teacher"), Label("完成日期", "date"),
                Label("年级", "klass"), Label("学位类别", "degree")]


def render_free(rng: random.Random, layout: str, decorations: bool) -> Canvas:
    deco = random.Random(rng.random())
    ink = kit.page_ink(rng, FREE_LAYOUTS[layout]["fonts"])
    W = rng.randint(1100, 1300)
    c = Canvas(W, 3200, rng, decorations=decorations)
    draw = {"form_cover": _cover, "form_apply": _apply, "form_clinic": _clinic, "form_stacked": _stacked,
            "form_spaced": _spaced, "form_thesis": _thesis}[layout]
    title, labels = pick_form(rng)
    y, company = draw(c, rng, ink, title, labels)
    c.crop_height(y + rng.uniform(40, 90))
    kit.decorate(c, deco, company, (W * 0.75, y - ink.size * 2), [ln.text for ln in c.lines],
                 p_stamp=0.3 if layout in ("form_cover", "form_thesis") else 0.5)
    return c


def _value_lines(c: Canvas, rng: random.Random, ink: kit.Ink, kind: str, width: float) -> tuple[list[str], int]:
    text = make_value(rng, kind)
    wrap_at = kit.break_width(rng, text, ink.value_font, ink.size, width, 0.5 if kind in LONG else 0.0)
    return kit.fit_lines(text, ink.value_font, ink.size, wrap_at)


def _title(c: Canvas, rng: random.Random, ink: kit.Ink, title: str) -> float:
    c.text(c.width / 2, 40, title, ink.size + rng.randint(8, 14), rng.choice(["hei_bold", "song_bold"]), (0, 0, 0),
           label="header", align="center")
    return 40 + ink.size * 3.4


def _pair_at(c: Canvas, rng: random.Random, ink: kit.Ink, x: float, y: float, lab: Label, x_end: float,
             colon: str = "：", gap: tuple[float, float] = (0.3, 1.0), underline: bool = True,
             empty: float = 0.1, hint: float = 0.0) -> float:
    """label：value (value may be a check group, empty, or followed by a bracketed hint); returns the
    height used (two lines when the value wraps)."""
    size = ink.size
    k = c.text(x, y, lab.text + colon, size, ink.font, ink.color, label="question")
    ax = c.lines[k].box[2] + size * rng.uniform(*gap)
    key = kit.lines_text(c, [k])
    if rng.random() < hint:                     # （请勾选） / （使领馆人员填写） between label and value
        text = rng.choice(CHECK_HINTS if lab.kind in CHECKS else HINTS)
        hid = c.text(ax, y + size * 0.1, text, size - 3, ink.font, ink.hint_color, label="other")
        ax = c.lines[hid].box[2] + size * 0.6
        empty = 0.5 if lab.kind not in CHECKS else 0.0     # a field for someone else: often blank
    if lab.kind in CHECKS:
        bottom = kit.checks(c, rng, [k], ax, y, CHECKS[lab.kind], ink, max_x=x_end)
        return max(size * 2.0, bottom - y + size * 0.9)
    if underline:
        c.hline(ax - 4, x_end - size, y + size * 1.25, (90, 90, 90))
    if rng.random() < empty or ax > x_end - 3 * size:
        return size * 2.0
    lines, vsize = _value_lines(c, rng, ink, lab.kind, x_end - size - ax)
    vs = kit.stacked(c, ax, y, lines, vsize, ink.value_font, ink.value_color, "answer", gap=1.5)
    if len(lines) > 1 and underline:
        c.hline(ax - 4, x_end - size, y + size * 2.75, (90, 90, 90))
    kit.group(c, [k], vs, key, "".join(lines))
    return size * (2.0 + 1.5 * (len(lines) - 1))


RECORD_TABLES = ["members", "project", "resume", "study", "work", "family", "approval"]


def _table(c: Canvas, rng: random.Random, ink: kit.Ink, x0: float, x1: float, y: float, kinds: list[str],
           numeral: str = "") -> float:
    """A caption (a header) and a table under it, ruled or aligned by whitespace, from top `y`;
    returns where the next text may start."""
    size = ink.size
    records, spare = record_count(rng)
    caption, cols, rows = table_rows(rng, rng.choice(kinds), records, spare)
    look = kit.table_look(rng, ruled=True if records <= 1 else None)
    c.text(x0, y, numeral + caption, size + 1, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header")
    return kit.records_table(c, ink, x0, y + size * 2.0, x1, cols, rows, look) + size * 1.2


def _cover(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    W, size = c.width, ink.size + 4
    ink.size = size
    school = rng.choice(SCHOOLS)
    c.text(W / 2, 90, school, size + 26, rng.choice(["kai", "song_bold", "hei_bold"]), (0, 0, 0), label="header",
           align="center")
    kind = rng.choice(["本科毕业论文（设计）", "硕士学位论文", "博士学位论文", "毕业设计说明书", "课程设计报告",
                       "本科生毕业论文"])
    c.text(W / 2, 90 + size * 3.6, kind, size + 18, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header",
           align="center")
    y = 90 + size * rng.uniform(9.0, 13.0)
    if rng.random() < 0.5:
        c.text(W / 2, y - size * 2.5, rng.choice(["（申请学士学位）", "（2024届）", "（全日制专业学位）"]), size,
               ink.font, ink.color, label="other", align="center")
    chosen = [COVER_LABELS[0]] + rng.sample(COVER_LABELS[1:], rng.randint(5, 7))
    colon = rng.choice(["", "", "：", "："])
    lx = W * rng.uniform(0.22, 0.3)
    vx0, vx1 = lx + size * (5.6 if colon else 5.2), W - lx + size
    for lab in chosen:
        k = c.text(lx, y, kit.spaced(lab.text) + colon, size, ink.font, ink.color, label="question")
        if lab.kind == "topic":
            topic = make_value(rng, lab.kind)
            if rng.random() < 0.5:
                topic += rng.choice(["——以", "：基于"]) + make_value(rng, "native")[-3:].rstrip("市") + \
                    rng.choice(["市为例", "地区调查数据"])
            lines = kit.wrap(topic, ink.value_font, size, vx1 - vx0 - size)
        else:
            lines = [make_value(rng, lab.kind)]
        filled = rng.random() > 0.08
        vs = []
        for i, text in enumerate(lines):
            yy = y + i * size * 2.0
            c.hline(vx0, vx1, yy + size * 1.3, (0, 0, 0))
            if filled:
                vs.append(c.text((vx0 + vx1) / 2, yy, text, size, ink.value_font, ink.value_color, label="answer",
                                 align="center", max_width=vx1 - vx0 - 10))
        if vs:
            kit.group(c, [k], vs, kit.lines_text(c, [k]), "".join(c.lines[v].text for v in vs))
        y += size * 2.0 * len(lines) + size * rng.uniform(0.4, 1.4)
    d = kit.wrap(make_value(rng, "date"), ink.font, size, 400)[0]
    c.text(W / 2, y + size * 2.5, rng.choice(["二〇二四年五月", "二〇二五年六月", "2024年5月", d]), size + 2, ink.font,
           ink.color, label="other", align="center")
    return y + size * 4.5, school


def _apply(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    size = ink.size
    x0, x1 = 70.0, c.width - 70.0
    y = _title(c, rng, ink, title)
    if rng.random() < 0.5:
        c.text(c.width / 2, y - size * 1.2, rng.choice(["（请用黑色签字笔填写）", "（以下由申请人填写）"]), size - 2,
               ink.font, ink.hint_color, label="other", align="center")
        y += size * 1.2
    n = rng.randint(min(len(labels), 9), len(labels))
    half = (x1 - x0) / 2
    sec = 0
    col = 0
    row_h = 0.0
    next_sec = 0
    for i, lab in enumerate(labels[:n]):
        if i == next_sec:
            next_sec += rng.randint(3, 6)
            y += row_h if col else 0
            col, row_h = 0, 0.0
            c.text(x0, y, f"{NUMERALS[sec]}、{rng.choice(SECTIONS)}", size + 1, rng.choice(["hei_bold", "song_bold"]),
                   (0, 0, 0), label="header")
            sec = (sec + 1) % len(NUMERALS)
            y += size * 2.0
        if lab.kind in LONG:                   # label, then the value wrapped below it, indented
            y += row_h if col else 0
            col, row_h = 0, 0.0
            k = c.text(x0, y, lab.text + "：", size, ink.font, ink.color, label="question")
            lines, vsize = _value_lines(c, rng, ink, lab.kind, rng.uniform(0.3, 0.7) * (x1 - x0))
            vs = kit.stacked(c, x0 + size * 2, y + size * 1.6, lines, vsize, ink.value_font, ink.value_color,
                             "answer", gap=1.5)
            kit.group(c, [k], vs, kit.lines_text(c, [k]), "".join(lines))
            y += size * (1.6 + 1.5 * len(lines) + 0.6)
            continue
        h = _pair_at(c, rng, ink, x0 + col * half, y, lab, x0 + (col + 1) * half, hint=0.15, empty=0.12)
        row_h = max(row_h, h)
        col += 1
        if col == 2:
            y += row_h
            col, row_h = 0, 0.0
    y += row_h + size * 0.8
    if rng.random() < 0.45:                    # a section that is a table: members, résumé ...
        y = _table(c, rng, ink, x0, x1, y, RECORD_TABLES, f"{NUMERALS[sec]}、")
    promise = rng.choice(["本人承诺：以上所填内容真实、准确。", "承诺：本人已阅读并同意相关规定。"])
    c.text(x0, y, promise, size, ink.font, ink.color, label="other", max_width=x1 - x0)
    y += size * 2.4
    kit.signature(c, rng, x0, y, ink, rng.choice(["申请人签名", "签名", "承诺人"]), half,
                  make_value(rng, "name") if rng.random() < 0.5 else None)
    if rng.random() < 0.5:
        kit.signature(c, rng, x0 + half, y, ink, rng.choice(["审核人", "受理人"]), half, None)
    return y + size * 1.5, make_value(rng, "company")


def _clinic(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    size = ink.size
    x0, x1 = 60.0, c.width - 60.0
    hospital = make_value(rng, "native")[:2] + rng.choice(["市人民医院", "中医院", "第一人民医院", "妇幼保健院",
                                                          "大学附属医院", "社区卫生服务中心"])
    c.text(c.width / 2, 30, hospital, size + 6, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header",
           align="center")
    title, labels = pick_form(rng, "medical")
    c.text(c.width / 2, 30 + size * 2.6, title, size + rng.randint(4, 10), rng.choice(["hei_bold", "song_bold"]),
           (0, 0, 0), label="header", align="center")
    y = 30 + size * 6.4
    c.hline(x0, x1, y - size * 0.8, (0, 0, 0), 2)
    cols = rng.choice([2, 3, 3])
    unit = (x1 - x0) / cols
    n = rng.randint(min(len(labels), 9), len(labels))
    col, row_h = 0, 0.0
    for lab in labels[:n]:
        if lab.kind in LONG:                   # beside its label, wrapped over two lines
            y += row_h if col else 0
            col, row_h = 0, 0.0
            k = c.text(x0, y, lab.text + "：", size, ink.font, ink.color, label="question")
            ax = c.lines[k].box[2] + size * 0.4
            lines, vsize = _value_lines(c, rng, ink, lab.kind, rng.uniform(0.3, 0.6) * (x1 - ax))
            vs = kit.stacked(c, ax, y, lines, vsize, ink.value_font, ink.value_color, "answer", gap=1.45)
            kit.group(c, [k], vs, kit.lines_text(c, [k]), "".join(lines))
            y += size * (0.6 + 1.45 * len(lines))
            continue
        h = _pair_at(c, rng, ink, x0 + col * unit, y, lab, x0 + (col + 1) * unit, gap=(0.1, 0.6),
                     underline=False, empty=0.08)
        row_h = max(row_h, h)
        col += 1
        if col == cols:
            y += row_h
            col, row_h = 0, 0.0
    y += row_h + size
    c.hline(x0, x1, y - size * 0.5, (0, 0, 0), 1)
    kit.signature(c, rng, x0 + (x1 - x0) * 0.5, y + size * 0.5, ink, rng.choice(["医师签名", "医生", "检查者"]),
                  (x1 - x0) * 0.5, make_value(rng, "name") if rng.random() < 0.6 else None)
    return y + size * 2.0, hospital


def _stacked(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    size = ink.size
    x0, x1 = 60.0, c.width - 60.0
    y = _title(c, rng, ink, title)
    cols = rng.choice([2, 3])
    unit = (x1 - x0) / cols
    ks = max(12, round(size * rng.uniform(0.65, 0.8)))
    n = rng.randint(min(len(labels), 9), len(labels))
    col = 0
    for lab in labels[:n]:
        span = cols if lab.kind in LONG else 1
        if col + span > cols:
            y += size * 3.6
            col = 0
        x = x0 + col * unit
        k = c.text(x + 6, y, lab.text, ks, ink.font, ink.hint_color, label="question")
        vy = y + ks + size * 0.5
        under = vy + size * 1.3
        if lab.kind in CHECKS:
            bottom = kit.checks(c, rng, [k], x + 8, vy, CHECKS[lab.kind], ink, max_x=x + span * unit - 20)
            more = max(0.0, bottom - (vy + size * 1.2))
            y += more
            under += more
        elif rng.random() > 0.1:
            lines, vsize = _value_lines(c, rng, ink, lab.kind, span * unit * rng.uniform(0.5, 1.0) - 40)
            vs = kit.stacked(c, x + 8, vy, lines, vsize, ink.value_font, ink.value_color, "answer", gap=1.4)
            kit.group(c, [k], vs, kit.lines_text(c, [k]), "".join(lines))
            if len(lines) > 1:
                y += size * 1.4 * (len(lines) - 1)
                under += size * 1.4 * (len(lines) - 1)
        c.hline(x + 4, x + span * unit - 20, under, (120, 120, 120))
        col += span
        if col >= cols:
            y += size * 3.6
            col = 0
    y += size * (3.6 if col else 0.5)
    if rng.random() < 0.4:
        y = _table(c, rng, ink, x0, x1, y, RECORD_TABLES)
    kit.signature(c, rng, x0 + (x1 - x0) * 0.4, y, ink, rng.choice(["签名", "填表人签字"]), (x1 - x0) * 0.6,
                  make_value(rng, "name") if rng.random() < 0.4 else None)
    return y + size * 1.5, make_value(rng, "company")


def _spaced(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    size = ink.size
    x0, x1 = 80.0, c.width - 80.0
    y = _title(c, rng, ink, title)
    half = (x1 - x0) / 2
    n = rng.randint(min(len(labels), 8), len(labels))
    col, row_h = 0, 0.0
    for lab in labels[:n]:
        shown = Label(kit.spaced(lab.text) if len(lab.text) < 4 else lab.text, lab.kind)
        if lab.kind in LONG and col:
            y += row_h
            col, row_h = 0, 0.0
        x_end = x1 if lab.kind in LONG else x0 + (col + 1) * half
        h = _pair_at(c, rng, ink, x0 + col * half, y, shown, x_end, colon="", gap=(0.8, 1.6), empty=0.12,
                     hint=0.08)
        row_h = max(row_h, h + size * 0.4)
        col = 2 if lab.kind in LONG else col + 1
        if col == 2:
            y += row_h
            col, row_h = 0, 0.0
    y += row_h + size
    if rng.random() < 0.4:
        y = _table(c, rng, ink, x0, x1, y, RECORD_TABLES)
    kit.signature(c, rng, x0 + half, y, ink, rng.choice(["报名人签字", "签字", "确认人"]), half,
                  make_value(rng, "name") if rng.random() < 0.5 else None)
    return y + size * 1.5, make_value(rng, "company")


def _thesis(c: Canvas, rng: random.Random, ink: kit.Ink, title: str, labels: list[Label]) -> tuple[float, str]:
    W, size = c.width, ink.size + 2
    ink.size = size
    corner = rng.sample(THESIS_CORNER, rng.randint(2, 4))
    colon = rng.choice(["：", ""])
    y = 40.0
    for i, lab in enumerate(corner):             # two columns at the top: 分类号 TP391 | 密级 公开
        x = 70.0 if i % 2 == 0 else W * 0.62
        k = c.text(x, y, lab.text + colon, size - 2, ink.font, ink.color, label="question")
        vx = c.lines[k].box[2] + size * rng.uniform(0.4, 1.2)
        c.hline(vx - 4, vx + size * 6, y + size * 1.15, (0, 0, 0))
        if rng.random() < 0.85:
            v = c.text(vx, y, make_value(rng, lab.kind), size - 2, ink.value_font, ink.value_color, label="answer")
            kit.group(c, [k], [v], kit.lines_text(c, [k]), c.lines[v].text)
        if i % 2 == 1:
            y += size * 1.8
    gap = size * rng.uniform(1.0, 1.6)            # a cover spreads over an upright page
    y += 3.5 * gap
    school = rng.choice(SCHOOLS)
    c.text(W / 2, y, school, size + 22, rng.choice(["kai", "song_bold"]), (0, 0, 0), label="header", align="center")
    y += 3.2 * gap
    c.text(W / 2, y, rng.choice(["硕士学位论文", "博士学位论文", "专业学位硕士论文"]), size + 14,
           rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header", align="center")
    y += 4.0 * gap
    for line in kit.wrap(make_value(rng, "topic"), "hei_bold", size + 8, W * 0.7):
        c.text(W / 2, y, line, size + 8, "hei_bold", (0, 0, 0), label="other", align="center")
        y += size * 2.0
    y += 3.0 * gap
    right = W * rng.uniform(0.42, 0.47)           # labels end here, values start after a gap
    colon = rng.choice(["", "：", ""])
    for lab in rng.sample(THESIS_LABELS, rng.randint(4, 6)):
        k = c.text(right, y, lab.text + colon, size, ink.font, ink.color, label="question", align="right")
        vx = right + size * 1.2
        c.hline(vx - 6, W * 0.84, y + size * 1.3, (0, 0, 0))
        if rng.random() < 0.9:
            v = c.text(vx, y, make_value(rng, lab.kind), size, ink.value_font, ink.value_color, label="answer",
                       max_width=W * 0.84 - vx - 8)
            kit.group(c, [k], [v], kit.lines_text(c, [k]), c.lines[v].text)
        y += size * 2.3 + gap * 0.3
    if rng.random() < 0.35:                    # the defence committee, as a thesis's title pages list it
        y = _table(c, rng, ink, W * 0.12, W * 0.88, y + gap, ["committee"])
    c.text(W / 2, y + 2.5 * gap, rng.choice(["二〇二四年六月", "二〇二五年五月", "二〇二三年十二月"]), size + 2,
           ink.font, ink.color, label="other", align="center")
    return y + 5.0 * gap, school
