"""The railway e-ticket invoice 电子发票（铁路电子客票）: since November 2024 a train ticket's
reimbursement voucher is a digital e-invoice (doc type e_invoice, layout einv_railway).

Unlike the other e-invoices it has no seller block, no item table and no 大写 amount: the title with
the tax bureau's red oval seal (over the title on about half the pages, beside it on the rest), the
20-digit 发票号码 and 开票日期 at the top right, the journey as a ticket prints it (stations, train,
departure, seat, class), the fare 票价 ￥xx.xx (the schema's total_with_tax), the passenger's masked ID
and name, the 电子客票号 and the buyer's name and credit code (购买方名称, 统一社会信用代码).
The journey is ground truth too, under the train ticket's keys the e_invoice schema shares (from_station,
to_station without their 站, train_number, departure_date and _time, seat, seat_class, passenger_id and
_name), so a model learns every field the ticket prints.
"""
from __future__ import annotations

import datetime as dt
import random

from data.synth import values as V
from data.synth.blocks import Entry, Style, kv_line, qr_code
from data.synth.canvas import Canvas
from data.synth.stamp import tax_bureau_seal
from data.synth.ticket import _values as journey

TITLE = "电子发票（铁路电子客票）"


def render_railway(rng: random.Random, st: Style, decorations: bool = True) -> Canvas:
    """One railway e-ticket invoice in the page style `st` (its form colour prints the title and
    labels, its value colour the rest: the whole page is printed in one pass, so nothing is offset)."""
    s = st.size / 20
    W = round(rng.uniform(1250, 1350) * s)
    c = Canvas(W, round(1100 * s), rng, decorations=decorations)
    x0, x1 = rng.uniform(50, 80) * s, W - rng.uniform(50, 80) * s
    mode = rng.choice(["inline", "inline", "split"])
    ink, form = st.value_color, st.form_color

    # --- title with the tax bureau's seal, QR, number and date -------------------------------------
    title_size = round(rng.uniform(32, 40) * s)
    hx = W * rng.uniform(0.64, 0.68)                             # where the number and date start
    tl = c.text(W / 2, 36 * s, TITLE, title_size, rng.choice(["song_bold", "hei_bold", "kai"]), form,
                label="header", align="center", max_width=2 * (hx - W / 2) - 40 * s)
    c.field("title", tl, 0, len(TITLE))
    tb = c.lines[tl].box
    where = V.place(rng)
    over_title = rng.random() < 0.5
    seal_x = (tb[0] + tb[2]) / 2 + rng.uniform(-60, 60) * s if over_title else tb[0] - rng.uniform(105, 125) * s
    tax_bureau_seal(c.image if decorations else None, rng, where[0],
                    (seal_x, (tb[1] + tb[3]) / 2 + rng.uniform(-8, 8) * s), s)
    qr_code(c, random.Random(rng.getrandbits(32)), x0, 20 * s, 105 * s)

    v = journey(rng, dt.date(2024, 11, 1), dt.date(2025, 6, 20))
    departure = dt.datetime.strptime(v["date"], "%Y年%m月%d日").date()
    issue = departure + dt.timedelta(days=rng.choice((0, 0, 1, 2, 5, 12, 30)))
    number = f"{issue.year % 100:02d}{where[3][:2]}9" + V.digits(rng, 15)
    for i, e in enumerate([Entry("发票号码：", number, "invoice_number", "code"),
                           Entry("开票日期：", V.format_date_cn(issue), "issue_date", "date")]):
        kv_line(c, st, hx, 40 * s + i * 34 * s, e, mode, x1 - hx, rng)

    # --- the journey --------------------------------------------------------------------------------
    top = 175 * s
    frame = rng.random() < 0.5
    size, big = st.size + round(4 * s), round(st.size * 1.5)
    step = size * rng.uniform(2.3, 2.9)                          # row pitch
    y = top + 10 * s
    left, right = x0 + 70 * s, W * 0.6
    station_font = rng.choice(["hei_bold", "song_bold"])
    ends = []
    # the journey's values are the schema's train-ticket fields (from_station ... passenger_name); marking
    # them draws nothing at random, so a seed's page is the one it was before they were marked
    for key, name, pinyin, x in (("from_station", v["from"], v["from_py"], left),
                                 ("to_station", v["to"], v["to_py"], right)):
        line = c.text(x, y, name + "站", big, station_font, ink, label="answer")
        c.field(key, line, 0, len(name))                         # 站 is printed, not kept (drop_suffix)
        ends.append(c.lines[line].box[2])
        c.text(x + 4 * s, y + big * 1.25, pinyin, round(size * 0.7), "hei", ink, label="other")
    line = c.text((ends[0] + right) / 2, y + 4 * s, v["train"], round(size * 1.15), "hei", ink, label="answer",
                  align="center")
    c.field("train_number", line, 0, len(v["train"]), "code")
    y += big * 1.25 + step
    line = c.text(left, y, f"{v['date']} {v['time']}开", size, st.value_font, ink, label="answer")
    c.field("departure_date", line, 0, len(v["date"]), "date")
    c.field("departure_time", line, len(v["date"]) + 1, len(v["date"]) + 1 + len(v["time"]))
    line = c.text(W * 0.45, y, v["seat"], size, st.value_font, ink, label="answer")
    c.field("seat", line, 0, len(v["seat"]))
    line = c.text(right + 60 * s, y, v["class"], size, st.value_font, ink, label="answer")
    c.field("seat_class", line, 0, len(v["class"]))
    y += step

    fare = f"{float(v['price']):.2f}"
    yen = rng.choice(["￥", "¥"])
    if mode == "inline":
        line = c.text(left, y, f"票价：{yen}{fare}", size, st.value_font, ink)
        c.field("total_with_tax", line, 4, 4 + len(fare), "amount")
    else:
        k = c.text(left, y, "票价：", size, st.form_font, form, label="question")
        line = c.text(c.lines[k].box[2] + 2.2 * size, y, yen + fare, size, st.value_font, ink, label="answer")
        c.field("total_with_tax", line, 1, 1 + len(fare), "amount")
        c.link(k, line)
    y += step
    gap = rng.choice([" ", "  "])
    text = v["id"] + gap + v["name"]
    line = c.text(left, y, text, size, st.value_font, ink, label="answer")
    c.field("passenger_id", line, 0, len(v["id"]), "code")
    c.field("passenger_name", line, len(v["id"]) + len(gap), len(text))
    y += step
    kv_line(c, st, left, y, Entry("电子客票号：", V.digits(rng, rng.choice((21, 24))), None), mode, x1 - left, rng)
    y += step * 1.2

    # --- buyer: name and credit code, no seller ------------------------------------------------------
    where = V.place(rng)
    buyer = [Entry("购买方名称：", V.company_name(rng, where), "buyer_name"),
             Entry("统一社会信用代码：", V.credit_code(rng, where), "buyer_tax_id", "tax_id")]
    if rng.random() < 0.5:                                       # side by side
        kv_line(c, st, left, y, buyer[0], mode, W * 0.5 - left, rng)
        kv_line(c, st, W * 0.52, y, buyer[1], mode, x1 - W * 0.52, rng)
        y += step * 0.8
    else:
        for e in buyer:
            kv_line(c, st, left, y, e, mode, x1 - left, rng)
            y += step * 0.8
    small = round(size * 0.72)
    y += step * 0.4
    c.text(W / 2, y, rng.choice(["买票请到12306 发货请到95306", "仅供报销使用"]), small,
           st.value_font, ink, label="other", align="center")
    y += small + rng.uniform(40, 90) * s
    if frame:
        c.rect([x0, top - 20 * s, x1, y - 20 * s], form, width=1)
    c.crop_height(y)          # the page ends below its last line, about A5 landscape
    return c
