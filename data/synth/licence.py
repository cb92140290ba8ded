"""Business licences (营业执照) in the post-2016 "five certificates in one" form.

A licence is a pre-printed form (patterned frame, emblem, the title, the keys) with the company's
values printed into it, the registering authority's round red seal over the bottom right and a QR
code at the top. The unified social credit code carries a correct GB 32100 check character.

经营范围 (business scope) runs over several printed lines, each its own ground-truth line; a field
value never straddles lines, so the `business_scope` field is the FIRST printed line of the scope
only. The other lines are answer lines linked to the same key.

Layouts:
- bl_landscape: the wide 正本/副本, fields in two columns, code top left and QR top right
- bl_portrait:  the upright 副本, one column of fields under the title
- bl_copy:      a grey photocopy of the upright form with "key：value" lines and a 复印件 watermark
"""
from __future__ import annotations

import datetime as dt
import math
import random
from typing import Any

from PIL import Image, ImageDraw

from data.fonts import pil_font
from data.synth import values as V
from data.synth.blocks import Style, qr_code
from data.synth.canvas import Canvas, Color
from data.synth.stamp import seal_mask, stamp

LAYOUTS: dict[str, dict] = {
    "bl_landscape": dict(shape="landscape", kv="split", gray=False, key_fonts=["song", "hei"],
                         value_fonts=["song", "hei", "fangsong"]),
    "bl_portrait": dict(shape="portrait", kv="split", gray=False, key_fonts=["hei", "song"],
                        value_fonts=["song", "kai", "hei"]),
    "bl_copy": dict(shape="portrait", kv="inline", gray=True, key_fonts=["song", "hei"],
                    value_fonts=["song", "hei"]),
}
# key as printed on the split form (two-character keys are spaced out to the width of four)
KEYS = {"name": "名称", "company_type": "类型", "legal_representative": "法定代表人", "business_scope": "经营范围",
        "registered_capital": "注册资本", "established_date": "成立日期", "business_term": "营业期限",
        "address": "住所"}
TYPES = {"registered_capital": "amount_words", "established_date": "date", "business_term": "date_range"}


def _spaced(key: str) -> str:
    return f"{key[0]}　　{key[1]}" if len(key) == 2 else key


def _emblem(c: Canvas, cx: float, cy: float, r: float, gray: bool) -> None:
    """A round red emblem with a gold ring, a large star and four small ones (decoration only)."""
    if not c.decorations:
        return
    red = (140, 140, 140) if gray else (205, 35, 35)
    gold = (200, 200, 200) if gray else (240, 195, 60)
    d = c.draw
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=red)
    d.ellipse([cx - r * 0.86, cy - r * 0.86, cx + r * 0.86, cy + r * 0.86], outline=gold, width=max(2, round(r / 18)))

    def star(x: float, y: float, R: float, turn: float = 0.0) -> None:
        pts = [(x + (R if k % 2 == 0 else R * 0.4) * math.sin(math.pi * k / 5 + turn),
                y - (R if k % 2 == 0 else R * 0.4) * math.cos(math.pi * k / 5 + turn)) for k in range(10)]
        d.polygon(pts, fill=gold)

    star(cx - r * 0.2, cy - r * 0.25, r * 0.32)
    for k in range(4):
        a = math.radians(-10 + 22 * k)
        star(cx - r * 0.2 + r * 0.55 * math.cos(a), cy - r * 0.25 + r * 0.55 * math.sin(a) - r * 0.25,
             r * 0.1, turn=a)
    # the gate and the wheat below the stars, as bars
    for k in range(3):
        y = cy + r * (0.22 + 0.14 * k)
        d.rectangle([cx - r * 0.5 + k * r * 0.08, y, cx + r * 0.5 - k * r * 0.08, y + r * 0.07], fill=gold)


def _frame(c: Canvas, s: float, color: Color) -> None:
    """The patterned border: two rules with a band of small diamonds between them."""
    if not c.decorations:
        return
    w, h = c.width, c.height
    m1, m2 = 22 * s, 44 * s
    c.rect([m1, m1, w - m1, h - m1], color, width=max(2, round(3 * s)))
    c.rect([m2, m2, w - m2, h - m2], color, width=1)
    mid = (m1 + m2) / 2
    step = 22 * s
    q = 5 * s
    for x0, y0, x1, y1 in ((m2, mid, w - m2, mid), (m2, h - mid, w - m2, h - mid),
                           (mid, m2, mid, h - m2), (w - mid, m2, w - mid, h - m2)):
        n = max(1, int(max(x1 - x0, y1 - y0) / step))
        for k in range(n + 1):
            x = x0 + (x1 - x0) * k / n
            y = y0 + (y1 - y0) * k / n
            c.draw.polygon([(x, y - q), (x + q, y), (x, y + q), (x - q, y)], outline=color)


def _watermark(c: Canvas, rng: random.Random, text: str) -> None:
    """Grey diagonal text repeated over the page, as users stamp on copies they hand out."""
    angle = rng.uniform(20, 35)
    spots = [(rng.uniform(-30, 30), rng.uniform(-30, 30)) for _ in range(3)]
    if not c.decorations:            # the same draws either way, so text-only pages hold the same values
        return
    size = round(c.width / 14)
    tile = Image.new("L", (size * (len(text) + 1), size * 2), 0)
    ImageDraw.Draw(tile).text((size // 2, size // 2), text, font=pil_font("hei", size), fill=255)
    tile = tile.rotate(angle, expand=True, resample=Image.Resampling.BILINEAR)
    gray = Image.new("RGB", tile.size, (185, 185, 185))
    alpha = tile.point(lambda v: v * 0.45)
    for k, (jx, jy) in enumerate(spots):
        c.image.paste(gray, (round(c.width * (0.1 + 0.2 * k) + jx), round(c.height * (0.2 + 0.25 * k) + jy)), alpha)


def _wrap(text: str, style: str, size: int, width: float, max_lines: int) -> list[str]:
    """Greedy line breaks by measured width; at most `max_lines` lines (the rest is cut)."""
    font = pil_font(style, size)
    lines: list[str] = []
    start = 0
    while start < len(text) and len(lines) < max_lines:
        end = start + 1
        while end < len(text) and font.getlength(text[start:end + 1]) <= width:
            end += 1
        lines.append(text[start:end])
        start = end
    return [ln.strip() for ln in lines if ln.strip()]


class _Form:
    """The pen of one licence: where keys go, where values go, and the printer's offset."""

    def __init__(self, c: Canvas, st: Style, mode: str, key_size: int, offset: tuple[float, float]):
        self.c, self.st, self.mode, self.key_size, self.offset = c, st, mode, key_size, offset

    def pair(self, x: float, y: float, value_x: float, right: float, field: str, value: str,
             ftype: str = "text") -> int:
        """One key and its value on a row; returns the value's line id."""
        c, st = self.c, self.st
        key = KEYS[field]
        if self.mode == "inline":
            prefix = key + "："
            line = c.text(x, y, prefix + value, st.size, st.value_font, st.value_color, max_width=right - x)
            c.field(field, line, len(prefix), len(prefix) + len(value), ftype)
            return line
        k = c.text(x, y + (st.size - self.key_size) * 0.6, _spaced(key), self.key_size, st.form_font,
                   st.form_color, label="question")
        dx, dy = self.offset
        v = c.text(value_x + dx, y + dy, value, st.size, st.value_font, st.value_color, label="answer",
                   max_width=right - value_x - dx)
        c.field(field, v, 0, len(value), ftype)
        c.link(k, v)
        return v

    def scope(self, x: float, y: float, value_x: float, right: float, scope: str, max_lines: int,
              leading: float) -> float:
        """经营范围 over several lines; the field is the first line. Returns the y below it."""
        c, st = self.c, self.st
        if self.mode == "inline":
            prefix = "经营范围："
            first_w = right - x - pil_font(st.value_font, st.size).getlength(prefix)
            head = _wrap(scope, st.value_font, st.size, first_w, 1)[0]
            line = c.text(x, y, prefix + head, st.size, st.value_font, st.value_color, max_width=right - x)
            c.field("business_scope", line, len(prefix), len(prefix) + len(head))
            rest = _wrap(scope[len(head):].strip(), st.value_font, st.size, right - value_x, max_lines - 1)
            for i, text in enumerate(rest):
                c.text(value_x, y + leading * (i + 1), text, st.size, st.value_font, st.value_color,
                       max_width=right - value_x)
            return y + leading * (len(rest) + 1)
        dx, dy = self.offset
        k = c.text(x, y + (st.size - self.key_size) * 0.6, _spaced("经营范围"), self.key_size, st.form_font,
                   st.form_color, label="question")
        lines = _wrap(scope, st.value_font, st.size, right - value_x - max(dx, 0), max_lines)
        for i, text in enumerate(lines):
            v = c.text(value_x + dx, y + dy + leading * i, text, st.size, st.value_font, st.value_color,
                       label="answer", max_width=right - value_x - dx)
            if i == 0:
                c.field("business_scope", v, 0, len(text))
            c.link(k, v)
        return y + leading * len(lines)


def _values(rng: random.Random) -> dict[str, Any]:
    where = V.place(rng)
    established = V.date_between(rng, dt.date(1995, 1, 1), dt.date(2024, 12, 31))
    # the licence in hand was (re)issued on or after the founding, after a change or a renewal
    registered = V.date_between(rng, established, min(established + dt.timedelta(days=365 * 8),
                                                      dt.date(2025, 6, 30)))
    pad = rng.random() < 0.8
    if rng.random() < 0.6:
        term_end = "长期"
    else:
        years = rng.choice((10, 20, 30, 50))
        end = established.replace(year=established.year + years, day=min(established.day, 28))
        term_end = V.format_date_cn(end - dt.timedelta(days=1), pad)
    return {
        "where": where,
        "credit_code": V.credit_code(rng, where),
        "name": V.company_name(rng, where),
        "company_type": rng.choice(V.COMPANY_TYPES),
        "legal_representative": V.person_name(rng),
        "registered_capital": V.registered_capital(rng),
        "established_date": V.format_date_cn(established, pad),
        "business_term": f"{V.format_date_cn(established, pad)}{rng.choice(['至', ' 至 '])}{term_end}",
        "address": V.address(rng, where),
        "business_scope": V.business_scope(rng),
        "registration_authority": V.authority(rng, where),
        "registration_date": V.format_date_cn(registered, True),
    }


def render_licence(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = LAYOUTS[layout]
    s = rng.uniform(0.85, 1.1)
    landscape = p["shape"] == "landscape"
    W, H = (round(1500 * s), round(1060 * s)) if landscape else (round(1060 * s), round(1500 * s))
    gray = p["gray"]
    paper = (255, 255, 255) if gray or not decorations else (253, 250, 240)
    c = Canvas(W, H, rng, background=paper, decorations=decorations)
    ink = rng.choice([(15, 15, 15), (40, 40, 45), (75, 75, 80)]) if not gray else (45, 45, 45)
    st = Style(form_font=rng.choice(p["key_fonts"]), value_font=rng.choice(p["value_fonts"]),
               form_color=(20, 20, 20) if not gray else (50, 50, 50), value_color=ink,
               size=round(rng.uniform(21, 25) * s))
    key_size = round(st.size * rng.uniform(0.95, 1.1))
    # values are printed into the pre-printed form: the whole printout sits a little off its slots
    offset = ((rng.uniform(-14, 14) * s, rng.uniform(-5, 5) * s) if p["kv"] == "split" else (0.0, 0.0))
    pen = _Form(c, st, p["kv"], key_size, offset)
    val = _values(rng)
    frame_color = (150, 150, 150) if gray else rng.choice([(185, 75, 55), (190, 145, 70), (160, 60, 60)])
    _frame(c, s, frame_color)
    if gray:
        _watermark(c, rng, rng.choice(["复印件", "仅供投标使用", "仅供办理业务使用", "与原件一致"]))
    _emblem(c, W / 2, 125 * s, 62 * s, gray)

    # --- title, copy mark, code, QR --------------------------------------------------------------
    title_style = rng.choice(["song_bold", "hei_bold", "kai"])
    title_size = round(rng.uniform(76, 92) * s)
    c.text(W / 2, 200 * s, rng.choice(["营业执照", "营 业 执 照"]), title_size, title_style,
           (200, 30, 30) if not gray and rng.random() < 0.3 else (20, 20, 20), label="header", align="center")
    ty = 200 * s + title_size * 1.25
    if rng.random() < 0.7:
        c.text(W / 2, ty, "（副　本）" if rng.random() < 0.5 else "（副本）", round(26 * s), st.form_font,
               st.form_color, label="header", align="center")
    serial = f"{rng.randint(1, 3)}-{rng.randint(1, 3)}"
    c.text(W - 110 * s, ty, f"（{serial}）", round(20 * s), st.form_font, st.form_color, label="other",
           align="right")
    cx = 90 * s
    cy = 250 * s if landscape else 330 * s
    code_key = c.text(cx, cy, "统一社会信用代码", round(st.size * 0.95), st.form_font, st.form_color,
                      label="question")
    code_size = round(st.size * 1.15)
    code = c.text(cx + offset[0] * 0.5, cy + st.size * 1.5 + offset[1], val["credit_code"], code_size,
                  rng.choice(["hei", "song"]), st.value_color, label="answer")
    c.field("credit_code", code, 0, len(val["credit_code"]), "credit_code")
    c.link(code_key, code)
    qr = 135 * s
    qx, qy = W - qr - 100 * s, (210 * s if landscape else 300 * s)
    qr_code(c, random.Random(rng.random()), qx, qy, qr)
    note = ["扫描二维码登录“国家企业", "信用信息公示系统”了解更", "多登记、备案、许可、监管信息"]
    for i, text in enumerate(note):
        c.text(qx + qr / 2, qy + qr + 8 * s + i * 17 * s, text, round(13 * s), "song", (60, 60, 60),
               label="other", align="center")

    # --- fields ------------------------------------------------------------------------------------
    row = st.size * rng.uniform(2.3, 2.6)
    leading = st.size * 1.45
    key_w = pil_font(st.form_font, key_size).getlength("法定代表人") + 34 * s
    if landscape:
        top = 410 * s
        lx, rx = 100 * s, W / 2 + 40 * s
        left = [("name", val["name"]), ("company_type", val["company_type"]),
                ("legal_representative", val["legal_representative"])]
        right = [("registered_capital", val["registered_capital"]), ("established_date", val["established_date"]),
                 ("business_term", val["business_term"]), ("address", val["address"])]
        for i, (f, v) in enumerate(left):
            pen.pair(lx, top + row * i, lx + key_w, rx - 40 * s, f, v, TYPES.get(f, "text"))
        for i, (f, v) in enumerate(right):
            pen.pair(rx, top + row * i, rx + key_w, W - 90 * s, f, v, TYPES.get(f, "text"))
        pen.scope(lx, top + row * len(left), lx + key_w, rx - 40 * s, val["business_scope"],
                  max_lines=6, leading=leading)
        auth_x, auth_y = W - 330 * s, H - 250 * s
    else:
        top = 530 * s
        x = 100 * s
        order = ["name", "company_type", "address", "legal_representative", "registered_capital",
                 "established_date", "business_term"]
        if rng.random() < 0.5:                           # older prints put the money and dates first
            order = ["name", "company_type", "legal_representative", "registered_capital", "established_date",
                     "business_term", "address"]
        for i, f in enumerate(order):
            pen.pair(x, top + row * i, x + key_w, W - 100 * s, f, val[f], TYPES.get(f, "text"))
        pen.scope(x, top + row * len(order), x + key_w, W - 100 * s, val["business_scope"],
                  max_lines=5, leading=leading)
        auth_x, auth_y = W - 360 * s, H - 260 * s

    # --- authority, date, seal ---------------------------------------------------------------------
    ak = c.text(auth_x, auth_y, "登记机关", round(st.size * 1.25), st.form_font, st.form_color, label="question")
    asize = round(st.size * 0.9)
    av = c.text(auth_x - 40 * s, auth_y + st.size * 2.0, val["registration_authority"], asize, st.value_font,
                st.value_color, label="answer", max_width=W - 70 * s - (auth_x - 40 * s))
    c.field("registration_authority", av, 0, len(val["registration_authority"]))
    c.link(ak, av)
    dv = c.text(auth_x, auth_y + st.size * 3.6, val["registration_date"], st.size, st.value_font,
                st.value_color, label="answer")
    c.field("registration_date", dv, 0, len(val["registration_date"]), "date")
    c.link(ak, dv)
    c.text(W / 2, H - 100 * s, "国家企业信用信息公示系统网址：http://www.gsxt.gov.cn", round(14 * s), "song",
           (70, 70, 70), label="other", align="center")
    c.text(W / 2, H - 78 * s, "国家市场监督管理总局监制", round(14 * s), "song", (70, 70, 70),
           label="other", align="center")
    if decorations:
        d = round(rng.uniform(200, 230) * s)
        mask = seal_mask(rng, val["registration_authority"], "", "", d, d, star=True)
        stamp(c.image, mask, (auth_x + 60 * s + rng.uniform(-25, 25) * s, auth_y + st.size * 2.2), rng,
              color=(120, 120, 120) if gray else (215, 30, 35))
    return c
