"""The first four generic-form layouts (see data/synth/form.py): each question's answer is a single
line, no check boxes are ticked.

- form_grid:   a ruled table, two question/answer cell pairs per row
- form_inline: no table; "question：" then the answer over an underline, one or two per row
- form_above:  boxes with the question in small type at the top and the answer below
- form_sections: no boxes; section headings, "question：answer" close together (OCR often reads a
  pair as one line), one question whose answer sits indented on the line below, an unticked
  check-box question, a table and signature lines: the parts of a real form that hold no pairs,
  around the ones that do. The table (every page) is half the time a ruled list of items to fill in
  (header row, item names, empty or "￥" cells), half the time records (a member list, résumé,
  education or work history, 家庭主要成员, an approval signature block), ruled or aligned by
  whitespace; column names are headers, cells other, recorded in the ground truth's `tables`
"""
from __future__ import annotations

import datetime as dt
import random
from typing import Callable

from data.normalize import format_amount_words
from data.synth import values as V
from data.synth.blocks import Style
from data.synth.canvas import Canvas
from data.synth.forms import kit
from data.synth.forms.labels import record_count, table_rows

CLASSIC_LAYOUTS: dict[str, dict] = {
    "form_grid": dict(fonts=["song", "hei"], cols=2),
    "form_inline": dict(fonts=["hei", "kai", "song"], cols=2),
    "form_above": dict(fonts=["hei", "song"], cols=3),
    "form_sections": dict(fonts=["song", "hei", "fangsong"], cols=2),
}

Gen = Callable[[random.Random], str]


def _date(rng: random.Random) -> str:
    d = V.date_between(rng, dt.date(2018, 1, 1), dt.date(2025, 6, 30))
    return rng.choice([f"{d.year}年{d.month}月{d.day}日", f"{d:%Y-%m-%d}", f"{d:%Y.%m.%d}"])


def _birth(rng: random.Random) -> str:
    d = V.date_between(rng, dt.date(1960, 1, 1), dt.date(2004, 12, 31))
    return f"{d.year}年{d.month}月{d.day}日"


def _amount(rng: random.Random) -> str:
    return f"{rng.randint(50, 20000)}.{rng.randint(0, 99):02d}"


def _id(rng: random.Random) -> str:
    return V.id_number(rng, V.date_between(rng, dt.date(1960, 1, 1), dt.date(2004, 1, 1)), rng.random() < 0.5)


TEMPLATES: list[tuple[str, list[tuple[str, Gen]]]] = [
    ("员工入职登记表", [("姓名", V.person_name), ("性别", lambda r: r.choice("男女")), ("出生日期", _birth),
                   ("身份证号码", _id), ("联系电话", lambda r: V.phone(r, mobile=True)),
                   ("现住址", lambda r: V.address(r, short=True)), ("毕业院校", lambda r: r.choice(
                       ["北京大学", "浙江大学", "武汉大学", "四川大学", "华南理工大学", "山东大学"])),
                   ("学历", lambda r: r.choice(["本科", "硕士", "大专", "博士"])),
                   ("部门", lambda r: r.choice(["财务部", "技术部", "市场部", "人力资源部", "行政部"])),
                   ("职位", lambda r: r.choice(["工程师", "会计", "经理", "专员", "主管"])), ("入职日期", _date),
                   ("紧急联系人", V.person_name), ("紧急联系电话", lambda r: V.phone(r, mobile=True))]),
    ("费用报销单", [("报销人", V.person_name), ("部门", lambda r: r.choice(["销售部", "技术部", "采购部", "行政部"])),
               ("报销日期", _date),
               ("费用类别", lambda r: r.choice(["差旅费", "招待费", "办公用品", "交通费", "培训费"])),
               ("金额（小写）", _amount),
               ("事由", lambda r: r.choice(["出差参加展会", "客户接待", "采购办公用品", "项目培训"])),
               ("附单据张数", lambda r: str(r.randint(1, 12))), ("审批人", V.person_name),
               ("收款单位", V.company_name), ("开户银行", lambda r: r.choice(V.BANKS))]),
    ("请假申请表", [("申请人", V.person_name), ("工号", lambda r: V.digits(r, 6)),
               ("部门", lambda r: r.choice(["研发中心", "客服部", "生产部", "质量部"])),
               ("请假类型", lambda r: r.choice(["事假", "病假", "年假", "婚假", "调休"])), ("开始日期", _date),
               ("结束日期", _date), ("请假天数", lambda r: f"{r.randint(1, 10)}天"),
               ("请假事由", lambda r: r.choice(["家中有事", "身体不适", "回老家探亲", "陪同家人就医"])),
               ("部门负责人", V.person_name), ("联系电话", lambda r: V.phone(r, mobile=True))]),
    ("客户信息登记表", [("客户名称", V.company_name), ("统一社会信用代码", V.credit_code),
                 ("联系人", V.person_name), ("联系电话", V.phone), ("地址", lambda r: V.address(r, short=True)),
                 ("开户银行", lambda r: r.choice(V.BANKS)), ("银行账号", lambda r: V.digits(r, 19)),
                 ("登记日期", _date), ("客户经理", V.person_name)]),
]


def render_classic(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    if layout == "form_sections":
        return _render_sections(rng, decorations)
    p = CLASSIC_LAYOUTS[layout]
    title, template = rng.choice(TEMPLATES)
    n = rng.randint(max(4, len(template) - 5), len(template))
    questions = template[:n]
    font = rng.choice(p["fonts"])
    size = rng.randint(18, 22)
    st = Style(form_font=font, value_font=rng.choice(["hei", "song", "kai"]), size=size,
               form_color=(20, 20, 20), value_color=rng.choice([(20, 20, 20), (20, 40, 120), (85, 85, 92)]))
    cols = p["cols"]
    rows = (n + cols - 1) // cols
    row_h = size * (2.2 if layout != "form_above" else 3.4)
    W = rng.randint(1100, 1300)
    H = round(220 + rows * row_h + 140)
    c = Canvas(W, H, rng, decorations=decorations)
    x0, x1 = 60.0, W - 60.0
    c.text(W / 2, 40, title, size + 12, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header",
           align="center")
    c.text(x1, 110, f"编号：{V.digits(rng, 8)}", size - 2, font, (60, 60, 60), label="other", align="right")
    top = 150.0
    cell_w = (x1 - x0) / cols
    blank = set(rng.sample(range(n), k=min(2, n // 5)))    # questions left unanswered
    for i, (question, gen) in enumerate(questions):
        r, col = divmod(i, cols)
        cx0, cy0 = x0 + col * cell_w, top + r * row_h
        answer = "" if i in blank else gen(rng)
        if layout == "form_grid":
            kw = cell_w * 0.36
            c.rect([cx0, cy0, cx0 + cell_w, cy0 + row_h], (0, 0, 0), 1)
            c.vline(cx0 + kw, cy0, cy0 + row_h, (0, 0, 0))
            k = c.text(cx0 + kw / 2, cy0 + row_h / 2 - size * 0.55, question, size, font, st.form_color,
                       label="question", align="center", max_width=kw - 12)
            if answer:
                v = c.text(cx0 + kw + 10, cy0 + row_h / 2 - size * 0.55, answer, size, st.value_font,
                           st.value_color, label="answer", max_width=cell_w - kw - 20)
                c.pair(k, v, question, answer)
        elif layout == "form_inline":
            k = c.text(cx0, cy0 + row_h / 2 - size * 0.55, question + "：", size, font, st.form_color,
                       label="question")
            ax = c.lines[k].box[2] + 1.5 * size
            c.hline(ax - 6, cx0 + cell_w - 30, cy0 + row_h / 2 + size * 0.75, (80, 80, 80))
            if answer:
                v = c.text(ax, cy0 + row_h / 2 - size * 0.55, answer, size, st.value_font, st.value_color,
                           label="answer", max_width=cx0 + cell_w - 40 - ax)
                c.pair(k, v, question, answer)
        else:  # form_above
            c.rect([cx0 + 4, cy0 + 4, cx0 + cell_w - 4, cy0 + row_h - 4], (120, 120, 120), 1)
            ks = max(12, round(size * 0.7))
            k = c.text(cx0 + 12, cy0 + 10, question, ks, font, (90, 90, 90), label="question",
                       max_width=cell_w - 24)
            if answer:
                v = c.text(cx0 + 14, cy0 + 14 + ks + size * 0.4, answer, size, st.value_font, st.value_color,
                           label="answer", max_width=cell_w - 30)
                c.pair(k, v, question, answer)
    y = top + rows * row_h + 30
    note = rng.choice(["填表说明：请用黑色签字笔填写，字迹清晰。", "本表一式两份，一份留存。",
                       f"大写金额：{format_amount_words(rng.randint(100, 9999))}"])
    c.text(x0, y, note, size - 2, font, (40, 40, 40), label="other", max_width=x1 - x0)
    c.text(x1 - 340, y + size * 2.4, "签字：", size, font, st.form_color, label="other")
    c.text(x1 - 120, y + size * 2.4, "第1页", size - 2, font, (60, 60, 60), label="other")
    c.crop_height(y + size * 2.4 + rng.uniform(40, 90))
    return c


SECTION_TABLES = [("费用明细", ["项目", "金额", "备注"], ["交通费", "住宿费", "餐费", "其他"]),
                  ("家庭成员", ["称谓", "姓名", "工作单位"], ["父亲", "母亲", "配偶"]),
                  ("材料清单", ["材料名称", "份数", "是否原件"], ["身份证复印件", "营业执照", "申请书"])]
SECTION_RECORDS = ["members", "resume", "study", "work", "family", "approval"]
CHECK_QUESTIONS = [("是否同意", ["同意", "不同意"]), ("是否加急", ["是", "否"]),
                   ("领取方式", ["自取", "邮寄", "电子版"])]


def _render_sections(rng: random.Random, decorations: bool) -> Canvas:
    """form_sections (see the module doc). Pairs: the filled "question：answer" rows and the
    question answered on the line below; everything else is header or other."""
    p = CLASSIC_LAYOUTS["form_sections"]
    title, template = rng.choice(TEMPLATES)
    n = rng.randint(max(4, len(template) - 4), len(template))
    font = rng.choice(p["fonts"])
    size = rng.randint(18, 22)
    value_font = rng.choice(["hei", "song", "kai"])
    value_color = rng.choice([(20, 20, 20), (20, 40, 120), (85, 85, 92)])
    W = rng.randint(1100, 1300)
    c = Canvas(W, 2000, rng, decorations=decorations)
    x0, x1 = 60.0, W - 60.0
    c.text(W / 2, 36, title, size + 12, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header",
           align="center")
    c.text(W / 2, 36 + size * 2.3, rng.choice(["（请如实填写）", "（以下内容由申请人填写）"]), size - 2, font,
           (60, 60, 60), label="header", align="center")
    y = 36 + size * 4.6
    c.text(x0, y, "一、基本信息", size + 2, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header")
    y += size * 2.2
    below_q = n - 1                                          # answered on the line below, indented
    row_qs = list(range(below_q))
    blank = set(rng.sample(row_qs, k=min(2, len(row_qs) // 4)))
    half = (x1 - x0) / 2
    for j, i in enumerate(row_qs):
        question, gen = template[i]
        col = j % 2
        if col == 0 and j:
            y += size * 2.0
        qx = x0 + col * half
        k = c.text(qx, y, question + "：", size, font, (20, 20, 20), label="question")
        ax = c.lines[k].box[2] + size * rng.uniform(0.3, 0.9)
        if i in blank:
            c.hline(ax, qx + half - 40, y + size * 1.2, (90, 90, 90))
            continue
        v = c.text(ax, y, gen(rng), size, value_font, value_color, label="answer", max_width=qx + half - 40 - ax)
        c.pair(k, v, question, c.lines[v].text)
    y += size * 2.2
    question, gen = template[below_q]
    k = c.text(x0, y, question + "：", size, font, (20, 20, 20), label="question")
    y += size * 1.6
    v = c.text(x0 + size * 2, y, gen(rng), size, value_font, value_color, label="answer",
               max_width=x1 - x0 - size * 2)
    c.pair(k, v, question, c.lines[v].text)
    y += size * 2.2
    check_q, options = rng.choice(CHECK_QUESTIONS)           # printed choices, none ticked: no pair
    k = c.text(x0, y, check_q + "：", size, font, (20, 20, 20), label="question")
    ox = c.lines[k].box[2] + size
    for opt in options:
        o = c.text(ox, y, "□" + opt, size, font, (20, 20, 20), label="other")
        ox = c.lines[o].box[2] + size * 1.5
    y += size * 2.6
    ink = kit.Ink(font, value_font, size, (0, 0, 0), value_color)
    if rng.random() < 0.5:                                   # a list of items to fill in, ruled
        heading, names, items = rng.choice(SECTION_TABLES)
        used = items[:rng.randint(2, len(items))]
        rows = [[item] + ["￥" if heading == "费用明细" and j == 0 and rng.random() < 0.7 else ""
                          for j in range(len(names) - 1)] for item in used]
        ink.value_font, ink.value_color = font, (20, 20, 20)
        columns: list[tuple[str, str, float]] = [(name, "text", 1.0) for name in names]
        look = kit.TableLook(ruled=True, centre=False, pitch=2.0)
    else:                                                    # records: members, résumé, education ...
        records, spare = record_count(rng, (0, 1, 2))
        heading, columns, rows = table_rows(rng, rng.choice(SECTION_RECORDS), records, spare)
        look = kit.table_look(rng, ruled=True if records <= 1 else None)
    c.text(x0, y, "二、" + heading, size + 2, rng.choice(["hei_bold", "song_bold"]), (0, 0, 0), label="header")
    y = kit.records_table(c, ink, x0, y + size * 2.0, x1, columns, rows, look) + size * 1.5
    sign = c.text(x0, y, "申请人签字：", size, font, (20, 20, 20), label="question")
    c.hline(c.lines[sign].box[2] + 6, x0 + half - 60, y + size * 1.2, (90, 90, 90))
    date_q = c.text(x0 + half, y, "日期：", size, font, (20, 20, 20), label="question")
    c.text(c.lines[date_q].box[2] + size * 3, y, "年    月    日", size, font, (20, 20, 20), label="other")
    c.crop_height(y + size * 1.2 + rng.uniform(40, 90))
    return c
