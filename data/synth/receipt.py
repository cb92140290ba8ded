"""Till receipts (购物小票): a narrow thermal-paper slip with a store header, order details, item rows,
totals and payment. Item cells are separate lines with wide gaps, as a text detector splits them.
Arithmetic holds: quantity x price = amount per row, rows sum to the total, paid - total = change.
"""
from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from data.synth import values as V
from data.synth.blocks import Entry, Style, kv_line
from data.synth.canvas import Canvas

LAYOUTS: dict[str, dict] = {
    # items as one row of cells under a column header
    "rcpt_columns": dict(rows="columns", fonts=["hei"], width=(520, 600), center_header=True),
    # name on one line, "qty x price   amount" on the next
    "rcpt_tworow": dict(rows="tworow", fonts=["hei", "song"], width=(460, 540), center_header=True),
    # left-aligned header, key and value far apart (split), dotted separators
    "rcpt_split": dict(rows="columns", fonts=["song", "hei"], width=(540, 620), center_header=False),
}
SHOP_KINDS = ["便利店", "超市", "生活超市", "餐厅", "咖啡", "面包房", "烘焙坊", "快餐店"]


def _separator(c: Canvas, rng: random.Random, y: float, x0: float, x1: float, style: str) -> None:
    if not c.decorations:
        return
    if style == "dash":
        x = x0
        while x < x1:
            c.draw.line([(x, y), (min(x + 8, x1), y)], fill=(60, 60, 60), width=1)
            x += 14
    else:
        c.hline(x0, x1, y, (60, 60, 60), 1)


def render_receipt(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = LAYOUTS[layout]
    font = rng.choice(p["fonts"])
    size = rng.randint(19, 23)
    # thermal print fades: from near black to a pale grey
    ink = rng.choice([(25, 25, 25), (25, 25, 25), (70, 70, 70), (105, 105, 108)])
    st = Style(form_font=font, value_font=font, form_color=ink, value_color=ink, size=size)
    n = rng.randint(1, 7)
    goods = rng.sample(V.RECEIPT_GOODS, n)
    rows: list[tuple[str, str, str, str]] = []      # name, quantity, price, amount as printed
    for g in goods:
        count = rng.choice((1, 1, 1, 2, 2, 3, 4, 6))
        cost = Decimal(rng.randint(150, 6800)) / 100
        rows.append((g, str(count), f"{cost:.2f}", f"{count * cost:.2f}"))
    total = sum(Decimal(r[3]) for r in rows)
    method = rng.choice(V.PAYMENTS)
    paid = total if method != "现金" else Decimal((int(total) // 10 + 1) * 10 + rng.choice((0, 0, 10, 90)))
    change = paid - total

    line_h = size * 1.6
    per_item = 2 if p["rows"] == "tworow" else 1
    H = round((18 + n * per_item) * line_h + 200)   # cropped to the content at the end
    W = rng.randint(*p["width"])
    c = Canvas(W, H, rng, background=(250, 250, 247), decorations=decorations)
    x0, x1 = 28.0, W - 28.0
    y = 30.0
    where = V.place(rng)
    store = f"{rng.choice(V.NAME_CHARS)}{rng.choice(V.NAME_CHARS)}{rng.choice(SHOP_KINDS)}（{where[2]}店）"
    if p["center_header"]:
        line = c.text(W / 2, y, store, size + 6, "hei_bold", st.value_color, label="header", align="center",
                      max_width=x1 - x0)
    else:
        line = c.text(x0, y, store, size + 6, "hei_bold", st.value_color, label="header", max_width=x1 - x0)
    c.field("store_name", line)
    y += line_h * 1.5
    mode = "split" if layout == "rcpt_split" else "inline"
    when = dt.datetime.combine(V.date_between(rng, dt.date(2021, 1, 1), dt.date(2025, 6, 30)),
                               dt.time(rng.randint(7, 22), rng.randint(0, 59), rng.randint(0, 59)))
    date_fmt = rng.choice(("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d"))
    info = [Entry("地址：", V.address(rng, where, short=True), "store_address"),
            Entry("电话：", V.phone(rng, where), "store_phone"),
            Entry("单号：", f"{when:%Y%m%d}{V.digits(rng, 6)}", "receipt_number", "code"),
            Entry("收银员：", V.person_name(rng), "cashier")]
    for e in info:
        kv_line(c, st, x0, y, e, mode, x1 - x0, rng)
        y += line_h
    # the date's field is the date part only; the time follows after a space
    date_text = when.strftime(date_fmt)
    line = c.text(x0, y, f"日期：{date_text} {when:%H:%M:%S}", size, font, st.value_color, max_width=x1 - x0)
    c.field("date", line, 3, 3 + len(date_text), "date")
    y += line_h
    _separator(c, rng, y + size * 0.1, x0, x1, "dash")
    y += size * 0.7

    cols = [x0, x0 + (x1 - x0) * 0.55, x0 + (x1 - x0) * 0.72, x1]      # name | qty | price | amount
    if p["rows"] == "columns":
        for text, x, align in (("商品名称", cols[0], "left"), ("数量", cols[1], "center"),
                               ("单价", cols[2], "center"), ("金额", cols[3], "right")):
            c.text(x, y, text, size, font, st.value_color, label="question", align=align)
        y += line_h
    for r, (name, qty, price, amount) in enumerate(rows):
        if p["rows"] == "columns":
            ln = c.text(cols[0], y, name, size, font, st.value_color, label="answer",
                        max_width=cols[1] - cols[0] - 2 * size)
            c.field("name", ln, row=r)
            ln = c.text(cols[1], y, qty, size, font, st.value_color, label="answer", align="center")
            c.field("quantity", ln, field_type="quantity", row=r)
            ln = c.text(cols[2] + size, y, price, size, font, st.value_color, label="answer", align="center")
            c.field("unit_price", ln, field_type="decimal", row=r)
            ln = c.text(cols[3], y, amount, size, font, st.value_color, label="answer", align="right")
            c.field("amount", ln, field_type="amount", row=r)
            y += line_h
        else:
            ln = c.text(x0, y, f"{r + 1}. {name}", size, font, st.value_color, max_width=x1 - x0)
            c.field("name", ln, len(f"{r + 1}. "), row=r)
            y += line_h
            ln = c.text(x0 + 2 * size, y, f"{qty} x {price}", size, font, st.value_color)
            c.field("quantity", ln, 0, len(qty), "quantity", row=r)
            c.field("unit_price", ln, len(qty) + 3, len(qty) + 3 + len(price), "decimal", row=r)
            ln = c.text(x1, y, amount, size, font, st.value_color, align="right")
            c.field("amount", ln, field_type="amount", row=r)
            y += line_h
    _separator(c, rng, y + size * 0.1, x0, x1, "solid" if rng.random() < 0.5 else "dash")
    y += size * 0.7
    for key, value, field in (("合计：", f"{total:.2f}", "total_amount"), ("实收：", f"{paid:.2f}", "paid_amount"),
                              ("找零：", f"{change:.2f}", "change")):
        k = c.text(x0, y, key, size + (2 if field == "total_amount" else 0), font, st.value_color, label="question")
        v = c.text(x1, y, value, size + (2 if field == "total_amount" else 0), font, st.value_color,
                   label="answer", align="right")
        c.field(field, v, field_type="amount")
        c.link(k, v)
        y += line_h
    kv_line(c, st, x0, y, Entry("支付方式：", method, "payment_method"), mode, x1 - x0, rng)
    y += line_h * 1.4
    c.text(W / 2, y, rng.choice(["谢谢惠顾，欢迎再次光临！", "请妥善保管小票", "凭小票七日内可退换"]), size - 2, font,
           st.value_color, label="other", align="center", max_width=x1 - x0)
    c.crop_height(y + line_h + rng.uniform(10, 60))
    return c
