"""VAT invoices (增值税专用/普通发票, paper and electronic) and digital e-invoices (数电票).

Both share the frame: a title with a double rule, header codes at the top right, the buyer block,
the item table with its 合计 row, the 价税合计 row with 大写 and 小写, the seller block and the
signatures, with the seller's seal stamped over the bottom right. The VAT invoice adds the invoice
code, check code, machine number and the 密码区; the e-invoice has a 20-digit number and puts buyer
and seller side by side.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import replace

from data.synth import values as V
from data.synth.blocks import Entry, Style, cell_text, kv_block, kv_line, qr_code, vertical_label
from data.synth.canvas import Canvas
from data.synth.script import to_traditional
from data.synth.stamp import seal_mask, seal_red, stamp, tax_bureau_seal

FORM_COLORS = {"brown": (150, 85, 45), "maroon": (150, 45, 40), "blue": (35, 70, 140),
               "black": (35, 35, 35), "green": (40, 105, 70)}
# printer ink from a fresh ribbon to a worn one: light grey print is common on real paper invoices
VALUE_COLORS = {"black": (15, 15, 15), "navy": (20, 30, 90), "grey": (70, 70, 78), "faded": (100, 100, 108),
                "worn": (125, 125, 132), "ribbon_blue": (50, 60, 115)}

# layout name -> settings; every layout varies geometry, type and colour within its own ranges so
# that holding a layout out of training holds out a genuinely different look
VAT_LAYOUTS: dict[str, dict] = {
    "vat_paper_inline": dict(kv="inline", electronic=False, form_colors=["brown", "blue"],
                             form_fonts=["song", "kai"], value_fonts=["song", "hei"], size=(18, 21),
                             misregister=0.0, header_x=0.68, block_h=150, signs_inline=True),
    "vat_paper_split": dict(kv="split", electronic=False, form_colors=["brown", "maroon", "green"],
                            form_fonts=["song", "fangsong"], value_fonts=["hei", "song"], size=(18, 21),
                            misregister=0.6, header_x=0.64, block_h=150, signs_inline=False),
    "vat_electronic": dict(kv="inline", electronic=True, form_colors=["brown", "maroon"],
                           form_fonts=["song", "hei"], value_fonts=["song", "kai"], size=(17, 20),
                           misregister=0.0, header_x=0.70, block_h=140, signs_inline=True),
    "vat_stacked": dict(kv="above", electronic=False, form_colors=["blue", "black"],
                        form_fonts=["hei", "kai"], value_fonts=["song", "hei"], size=(17, 19),
                        misregister=0.0, header_x=0.66, block_h=190, signs_inline=False),
}
E_LAYOUTS: dict[str, dict] = {
    "einv_standard": dict(kv="inline", form_colors=["maroon", "brown"], form_fonts=["song", "hei"],
                          value_fonts=["song", "hei"], size=(17, 20), misregister=0.0, block_h=120,
                          signs_inline=True),
    "einv_split": dict(kv="split", form_colors=["brown", "black"], form_fonts=["kai", "song"],
                       value_fonts=["hei", "fangsong"], size=(17, 20), misregister=0.3, block_h=120,
                       signs_inline=False),
    "einv_stacked": dict(kv="above", form_colors=["blue", "maroon"], form_fonts=["hei", "song"],
                         value_fonts=["song", "kai"], size=(16, 19), misregister=0.0, block_h=150,
                         signs_inline=False),
    # 电子发票（铁路电子客票）: drawn by data/synth/railway.py
    "einv_railway": dict(railway=True, form_colors=["maroon", "brown", "black"], form_fonts=["song", "hei"],
                         value_fonts=["song", "hei"], size=(18, 21), misregister=0.0),
}
# share of e-invoices (not railway) printed with traditional-script labels and title (電子發票（普通發票）)
TRADITIONAL_SHARE = 0.15
# share of pages whose seals sit over text: the tax bureau's over the title, the seller's over its name
SEAL_OVER_TEXT = 0.5

VAT_ITEM_HEADERS = ["货物或应税劳务、服务名称", "规格型号", "单位", "数量", "单价", "金额", "税率", "税额"]
E_ITEM_HEADERS = ["项目名称", "规格型号", "单位", "数量", "单价", "金额", "税率/征收率", "税额"]
ITEM_KEYS = ["name", "spec", "unit", "quantity", "unit_price", "amount", "tax_rate", "tax"]
ITEM_TYPES = ["text", "text", "text", "quantity", "decimal", "amount", "rate", "amount"]
COL_WEIGHTS = [0.26, 0.11, 0.06, 0.09, 0.13, 0.13, 0.08, 0.14]


def _print_offset(rng: random.Random, p: dict, size: int) -> tuple[float, float]:
    """Where a dot-matrix printer put the values against the pre-printed paper form: usually a few
    pixels off, often up to ~20 px sideways and half a line up or down. Electronic invoices are
    drawn in one pass and sit exactly."""
    if p.get("electronic", True):
        return 0.0, 0.0
    s = size / 20
    spread = rng.choice((4.0, 12.0, 20.0))
    return rng.uniform(-spread, spread) * s, rng.uniform(-0.45, 0.45) * spread * s


def _style(rng: random.Random, p: dict) -> Style:
    form = FORM_COLORS[rng.choice(p["form_colors"])]
    size = rng.randint(*p["size"])
    return Style(form_font=rng.choice(p["form_fonts"]), value_font=rng.choice(p["value_fonts"]),
                 form_color=form, value_color=VALUE_COLORS[rng.choice(list(VALUE_COLORS))],
                 rule_color=form, size=size, misregister=p["misregister"], offset=_print_offset(rng, p, size))


def _party(rng: random.Random, e_invoice: bool) -> dict[str, str]:
    where = V.place(rng)
    return {"name": V.company_name(rng, where), "tax_id": V.credit_code(rng, where),
            "address_phone": f"{V.address(rng, where, short=True)} {V.phone(rng, where, mobile=False)}",
            "bank": V.bank_account(rng, where)}


def _party_entries(prefix: str, party: dict[str, str], e_invoice: bool, with_contact: bool) -> list[Entry]:
    tax_key = "统一社会信用代码/纳税人识别号：" if e_invoice else "纳税人识别号："
    entries = [Entry("名　　称：" if not e_invoice else "名称：", party["name"], f"{prefix}_name"),
               Entry(tax_key, party["tax_id"], f"{prefix}_tax_id", "tax_id")]
    if with_contact:
        entries += [Entry("地 址、电 话：", party["address_phone"], f"{prefix}_address_phone", wide=True),
                    Entry("开户行及账号：", party["bank"], f"{prefix}_bank_account", wide=True)]
    return entries


def _items_table(c: Canvas, st: Style, rng: random.Random, x0: float, x1: float, y0: float,
                 items: list[V.Item], tot: V.Totals, headers: list[str], row_h: float, body_h: float,
                 rules: bool, total_label: str = "合　　计") -> float:
    """Header row, item rows, 合计 row. Returns the bottom y."""
    widths = [w / sum(COL_WEIGHTS) * (x1 - x0) for w in COL_WEIGHTS]
    edges = [x0]
    for w in widths:
        edges.append(edges[-1] + w)
    head_size = max(12, st.size - 3)
    for j, h in enumerate(headers):
        cell_text(c, st, h, (edges[j], y0, edges[j + 1], y0 + row_h), head_size, form=True, label="question")
        if rules and j:
            c.vline(edges[j], y0, y0 + row_h + body_h, st.rule_color)
    y = y0 + row_h
    item_h = min(row_h, body_h / max(1, len(items)))
    for r, it in enumerate(items):
        cells = [it.name, it.spec, it.unit, it.quantity, it.unit_price, it.amount, it.tax_rate, it.tax]
        for j, text in enumerate(cells):
            if not text:
                continue
            align = "left" if j < 2 else ("center" if j in (2, 6) else "right")
            line = cell_text(c, st, text, (edges[j], y, edges[j + 1], y + item_h), st.size - 1, align,
                             label="answer")
            c.field(ITEM_KEYS[j], line, 0, len(text), ITEM_TYPES[j], row=r)
        y += item_h
    # 合计 row
    ty0 = y0 + row_h + body_h
    ty1 = ty0 + row_h
    c.hline(x0, x1, ty0, st.rule_color)
    cell_text(c, st, total_label, (edges[0], ty0, edges[1], ty1), st.size, form=True, label="question")
    for key, value, col in (("total_amount", tot.amount, 5), ("total_tax", tot.tax, 7)):
        line = cell_text(c, st, "¥" + value, (edges[col], ty0, edges[col + 1], ty1), st.size, "right",
                         label="answer")
        c.field(key, line, 1, 1 + len(value), "amount")
    return ty1


def _cross_mark(c: Canvas, st: Style, x: float, y: float) -> None:
    """The ⊗ before 大写 amounts, in a font that has the glyph (the kai fonts lack it)."""
    c.text(x + st.offset[0], y + st.offset[1], "⊗", st.size, "song", st.value_color, label="other")


def _seller_seal(c: Canvas, rng: random.Random, name: str, tax_id: str, center: tuple[float, float],
                 scale: float) -> None:
    if not c.decorations:
        return
    mask = seal_mask(rng, name, tax_id, "发票专用章", int(190 * scale), int(130 * scale))
    stamp(c.image, mask, center, rng, color=seal_red(rng))


def render_invoice(rng: random.Random, layout: str, e_invoice: bool, decorations: bool = True) -> Canvas:
    p = (E_LAYOUTS if e_invoice else VAT_LAYOUTS)[layout]
    trad = e_invoice and rng.random() < TRADITIONAL_SHARE

    def L(text: str) -> str:
        """A printed label in the page's script."""
        return to_traditional(text) if trad else text

    st = _style(rng, p)
    ox, oy = st.offset
    s = st.size / 20                                   # geometry scales with the type size
    W = round(rng.uniform(1480, 1560) * s)
    block_h = p["block_h"] * s
    n_items = rng.choice((1, 1, 2, 2, 3, 4, 5))
    items = V.invoice_items(rng, n_items)
    tot = V.totals(items)
    row_h = 34 * s
    body_h = max(3, n_items) * row_h
    bottom_pad = 90 * s
    top_h = 175 * s
    H = round(top_h + block_h * 2 + row_h * 3 + body_h + bottom_pad + rng.uniform(10, 60) * s)
    c = Canvas(W, H, rng, decorations=decorations)
    mx = rng.uniform(40, 70) * s
    x0, x1 = mx, W - mx
    kv = p["kv"]

    # --- title, codes, QR -----------------------------------------------------------------------
    where = V.place(rng)
    if e_invoice:
        title = L(rng.choice(["电子发票（增值税专用发票）", "电子发票（普通发票）"]))
    elif p["electronic"]:
        title = f"{where[0]}增值税电子普通发票"
    else:
        title = f"{where[0]}增值税{rng.choice(['专用', '普通'])}发票"
    title_size = round(rng.uniform(32, 40) * s)
    tl = c.text(W / 2, 28 * s, title, title_size, rng.choice(["song_bold", "kai", "hei_bold"]),
                st.form_color, label="header", align="center")
    c.field("title", tl, 0, len(title))
    tb = c.lines[tl].box
    c.hline(tb[0] - 20 * s, tb[2] + 20 * s, tb[3] + 10 * s, st.form_color, 2)
    c.hline(tb[0] - 20 * s, tb[2] + 20 * s, tb[3] + 15 * s, st.form_color, 1)
    if p.get("electronic") or e_invoice:
        qr_code(c, rng, x0 + 10 * s, 22 * s, 110 * s)
    if e_invoice:
        # the tax bureau's seal: over the title's middle, or just left of it
        over = rng.random() < SEAL_OVER_TEXT
        sx = (tb[0] + tb[2]) / 2 + rng.uniform(-60, 60) * s if over else tb[0] - rng.uniform(100, 120) * s
        tax_bureau_seal(c.image if decorations else None, rng, where[0],
                        (sx, (tb[1] + tb[3]) / 2 + rng.uniform(-8, 8) * s), s)

    issue = V.date_between(rng, dt.date(2019, 1, 1), dt.date(2025, 6, 30))
    date_text = V.format_date_cn(issue, zero_pad=rng.random() < 0.8)
    if e_invoice:
        number = f"{issue.year % 100:02d}{where[3][:2]}{rng.choice('12')}" + V.digits(rng, 15)
        header = [Entry(L("发票号码："), number, "invoice_number", "code"),
                  Entry(L("开票日期："), date_text, "issue_date", "date")]
    else:
        # 10 digits on paper (region, year, batch, kind), 12 on electronic ones (a leading 0)
        code = f"{where[3][:4]}{issue.year % 100:02d}{rng.randint(1, 4)}{rng.randint(1, 3)}{V.digits(rng, 2)}"
        if p["electronic"]:
            code = f"0{where[3][:4]}{issue.year % 100:02d}{V.digits(rng, 5)}"
        header = [Entry("发票代码：", code, "invoice_code", "code"),
                  Entry("发票号码：", V.digits(rng, 8), "invoice_number", "code"),
                  Entry("开票日期：", date_text, "issue_date", "date")]
        if p["electronic"] or rng.random() < 0.5:
            check = V.digits(rng, 20)
            printed = " ".join(check[i:i + 5] for i in range(0, 20, 5)) if rng.random() < 0.5 else check
            header.append(Entry("校 验 码：", printed, "check_code", "code"))
    hx = W * p.get("header_x", 0.68)
    header_mode = "split" if kv == "split" else "inline"
    for i, e in enumerate(header):
        y = 30 * s + i * 32 * s
        kv_line(c, st, hx, y, e, header_mode, x1 - hx, rng)
    if not e_invoice:
        kv_line(c, st, x0 + (140 * s if p["electronic"] else 0), 138 * s,
                Entry("机器编号：", V.digits(rng, 12), "machine_number", "code"), header_mode, 500 * s, rng)
    if not e_invoice and decorations:
        sup = seal_mask(rng, "全国统一发票监制章", "国家税务总局", f"{where[0]}税务局", int(170 * s), int(112 * s))
        stamp(c.image, sup, (W / 2 + rng.uniform(-30, 30) * s, 70 * s), rng, angle=0,
              color=seal_red(rng), strength=rng.uniform(0.55, 0.85))

    # --- frame and blocks ------------------------------------------------------------------------
    y = top_h
    frame_top = y
    lab_w = 40 * s
    buyer, seller = _party(rng, e_invoice), _party(rng, e_invoice)
    pad = 10 * s
    if e_invoice:
        mid = (x0 + x1) / 2
        vertical_label(c, st, L("购买方信息"), x0 + lab_w / 2, y + 4 * s, y + block_h - 4 * s, round(16 * s))
        vertical_label(c, st, L("销售方信息"), mid + lab_w / 2, y + 4 * s, y + block_h - 4 * s, round(16 * s))
        c.vline(x0 + lab_w, y, y + block_h, st.rule_color)
        c.vline(mid, y, y + block_h, st.rule_color)
        c.vline(mid + lab_w, y, y + block_h, st.rule_color)
        kv_block(c, st, (x0 + lab_w + pad, y + pad, mid - pad, y + block_h - pad),
                 [replace(e, key=L(e.key)) for e in _party_entries("buyer", buyer, True, False)], kv, rng)
        kv_block(c, st, (mid + lab_w + pad, y + pad, x1 - pad, y + block_h - pad),
                 [replace(e, key=L(e.key)) for e in _party_entries("seller", seller, True, False)], kv, rng)
    else:
        split_x = x0 + (x1 - x0) * 0.58
        vertical_label(c, st, "购买方", x0 + lab_w / 2, y + 8 * s, y + block_h - 8 * s, round(18 * s))
        vertical_label(c, st, "密码区", split_x + lab_w / 2, y + 8 * s, y + block_h - 8 * s, round(18 * s))
        c.vline(x0 + lab_w, y, y + block_h, st.rule_color)
        c.vline(split_x, y, y + block_h, st.rule_color)
        c.vline(split_x + lab_w, y, y + block_h, st.rule_color)
        kv_block(c, st, (x0 + lab_w + pad, y + pad, split_x - pad, y + block_h - pad),
                 _party_entries("buyer", buyer, False, True), kv, rng)
        rows = V.cipher_lines(rng)
        ch = (block_h - 2 * pad) / len(rows)
        csize = round(min(18 * s, ch * 0.8))
        for i, row in enumerate(rows):
            c.text(split_x + lab_w + pad + ox, y + pad + ch * i + (ch - csize) / 2 + oy, row, csize, "hei",
                   st.value_color, label="other", max_width=x1 - split_x - lab_w - 2 * pad - max(ox, 0))
    y += block_h
    c.hline(x0, x1, y, st.rule_color)
    y = _items_table(c, st, rng, x0, x1, y, items, tot,
                     VAT_ITEM_HEADERS if not e_invoice else [L(h) for h in E_ITEM_HEADERS],
                     row_h, body_h, rules=kv != "above" or rng.random() < 0.5, total_label=L("合　　计"))
    c.hline(x0, x1, y, st.rule_color)

    # --- 价税合计 row -------------------------------------------------------------------------------
    lab_end = x0 + (x1 - x0) * 0.2
    c.vline(lab_end, y, y + row_h, st.rule_color)
    if kv == "split" or kv == "above":
        k = cell_text(c, st, L("价税合计（大写）"), (x0, y, lab_end, y + row_h), st.size - 1, form=True,
                      label="question")
        _cross_mark(c, st, lab_end + 12 * s, y + row_h / 2 - st.size * 0.55)
        v = c.text(lab_end + 12 * s + 2.5 * st.size + ox, y + row_h / 2 - st.size * 0.55 + oy, tot.words,
                   st.size, st.value_font, st.value_color, label="answer")
        c.field("total_with_tax_in_words", v, 0, len(tot.words), "amount_words")
        c.link(k, v)
        sx = x0 + (x1 - x0) * 0.68
        k2 = c.text(sx, y + row_h / 2 - st.size * 0.55, L("（小写）"), st.size, st.form_font, st.form_color,
                    label="question")
        v2 = c.text(c.lines[k2].box[2] + 2.5 * st.size + ox, y + row_h / 2 - st.size * 0.55 + oy,
                    "¥" + tot.with_tax, st.size, st.value_font, st.value_color, label="answer")
        c.field("total_with_tax", v2, 1, 1 + len(tot.with_tax), "amount")
        c.link(k2, v2)
    else:
        cell_text(c, st, L("价税合计（大写）"), (x0, y, lab_end, y + row_h), st.size - 1, form=True, label="question")
        _cross_mark(c, st, lab_end + 12 * s, y + row_h / 2 - st.size * 0.55)
        v = c.text(lab_end + 12 * s + 2.5 * st.size + ox, y + row_h / 2 - st.size * 0.55 + oy, tot.words,
                   st.size, st.value_font, st.value_color)
        c.field("total_with_tax_in_words", v, 0, len(tot.words), "amount_words")
        v2 = c.text(x0 + (x1 - x0) * 0.68 + ox, y + row_h / 2 - st.size * 0.55 + oy, L("（小写）") + "¥" + tot.with_tax,
                    st.size, st.value_font, st.value_color)
        c.field("total_with_tax", v2, 5, 5 + len(tot.with_tax), "amount")
    y += row_h
    c.hline(x0, x1, y, st.rule_color)

    # --- seller block / remarks ---------------------------------------------------------------------
    remark = rng.choice(["", "", f"合同号：HT{V.digits(rng, 8)}", "含运费", f"项目：{rng.choice(V.INDUSTRIES)}服务"])
    if e_invoice:
        vertical_label(c, st, L("备注"), x0 + lab_w / 2, y + 8 * s, y + block_h - 8 * s, round(18 * s))
        c.vline(x0 + lab_w, y, y + block_h, st.rule_color)
        if remark:
            line = c.text(x0 + lab_w + pad, y + pad, remark, st.size, st.value_font, st.value_color)
            c.field("remarks", line, 0, len(remark))
    else:
        split_x = x0 + (x1 - x0) * 0.58
        vertical_label(c, st, "销售方", x0 + lab_w / 2, y + 8 * s, y + block_h - 8 * s, round(18 * s))
        vertical_label(c, st, "备注", split_x + lab_w / 2, y + 8 * s, y + block_h - 8 * s, round(18 * s))
        c.vline(x0 + lab_w, y, y + block_h, st.rule_color)
        c.vline(split_x, y, y + block_h, st.rule_color)
        c.vline(split_x + lab_w, y, y + block_h, st.rule_color)
        kv_block(c, st, (x0 + lab_w + pad, y + pad, split_x - pad, y + block_h - pad),
                 _party_entries("seller", seller, False, True), kv, rng)
        if remark:
            line = c.text(split_x + lab_w + pad + ox, y + pad + max(oy, 0), remark, st.size, st.value_font,
                          st.value_color)
            c.field("remarks", line, 0, len(remark))
    y += block_h
    c.rect([x0, frame_top, x1, y], st.rule_color, width=2)

    # --- signatures and seal ---------------------------------------------------------------------
    sy = y + 18 * s
    signs = [("收 款 人：", "payee"), ("复 核：", "reviewer"), ("开 票 人：", "drawer")]
    if e_invoice:
        signs = [(L("开票人："), "drawer")]
    sign_mode = "inline" if p["signs_inline"] else "split"
    slot = (x1 - x0) / 4
    for i, (key, fkey) in enumerate(signs):
        kv_line(c, st, x0 + slot * i, sy, Entry(key, V.person_name(rng), fkey), sign_mode, slot - 30 * s, rng)
    if not e_invoice:
        c.text(x0 + slot * 3, sy, "销售方：（章）", st.size, st.form_font, st.form_color, label="other")
    # the seal sits over "销售方：（章）" and the frame's bottom rule, as on paper, or over the seller's
    # name and code
    seal_center = (x0 + slot * 3 + rng.uniform(40, 160) * s, sy - rng.uniform(-10, 40) * s)
    if rng.random() < SEAL_OVER_TEXT:
        nb = c.fields["seller_name"].box
        seal_center = ((nb[0] + nb[2]) / 2 + rng.uniform(-40, 40) * s, nb[3] + rng.uniform(-5, 25) * s)
    _seller_seal(c, rng, seller["name"], seller["tax_id"], seal_center, s)
    return c


def render_vat(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    return render_invoice(rng, layout, False, decorations)


def render_e_invoice(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = E_LAYOUTS[layout]
    if p.get("railway"):
        from data.synth.railway import render_railway
        return render_railway(rng, _style(rng, p), decorations)
    return render_invoice(rng, layout, True, decorations)
