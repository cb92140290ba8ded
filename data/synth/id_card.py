"""Resident ID cards (居民身份证): the portrait side and the emblem side.

The card is 85.6 x 54 mm; it is drawn at about 10 px/mm with the keys in the card's blue, the values
in black, a tinted guilloche background and a grey portrait placeholder. The address is kept to one
line (real cards wrap it; a field value never straddles two ground-truth lines). ID numbers carry a
correct GB 11643 check digit and agree with the printed birth date and sex.
"""
from __future__ import annotations

import datetime as dt
import math
import random

import numpy as np
from PIL import Image, ImageDraw

from data.synth import values as V
from data.synth.blocks import Entry, Style, kv_line
from data.synth.canvas import Canvas

KEY_BLUE = (40, 95, 165)

FRONT_LAYOUTS: dict[str, dict] = {
    "idf_standard": dict(kv="split", gray=False, fonts=["hei"], key_fonts=["hei"], tight=False),
    "idf_copy": dict(kv="split", gray=True, fonts=["hei", "song"], key_fonts=["hei", "song"], tight=False),
    "idf_inline": dict(kv="inline", gray=False, fonts=["song", "hei"], key_fonts=["hei"], tight=True),
}
BACK_LAYOUTS: dict[str, dict] = {
    "idb_standard": dict(kv="split", gray=False),
    "idb_copy": dict(kv="split", gray=True),
    "idb_inline": dict(kv="inline", gray=False),
}


def _card(rng: random.Random, gray: bool, decorations: bool) -> tuple[Canvas, float]:
    s = rng.uniform(0.9, 1.25)
    w, h = round(856 * s), round(540 * s)
    c = Canvas(w, h, rng, background=(255, 255, 255) if gray or not decorations else (236, 240, 238),
               decorations=decorations)
    if decorations:
        # pale tint from top-left to bottom-right and a guilloche of fine sine waves
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        t = (xx / w + yy / h) / 2
        base = np.array([238, 241, 236], np.float32) if not gray else np.array([246, 246, 246], np.float32)
        tint = np.array([226, 234, 244], np.float32) if not gray else np.array([236, 236, 236], np.float32)
        arr = base * (1 - t[..., None]) + tint * t[..., None]
        c.image.paste(Image.fromarray(arr.astype(np.uint8)))
        draw = ImageDraw.Draw(c.image)
        wave = (205, 218, 228) if not gray else (222, 222, 222)
        phase, amp, period = rng.uniform(0, 6.28), rng.uniform(6, 14) * s, rng.uniform(60, 120) * s
        for k in range(0, h, max(6, round(14 * s))):
            pts = [(x, k + amp * math.sin(x / period * 6.28 + phase + k / 40)) for x in range(0, w, 8)]
            draw.line(pts, fill=wave, width=1)
    return c, s


def _portrait(c: Canvas, s: float, gray: bool) -> None:
    if not c.decorations:
        return
    x0, y0, x1, y1 = 560 * s, 70 * s, 790 * s, 370 * s
    d = c.draw
    shade = (150, 150, 150) if gray else (120, 128, 138)
    cx = (x0 + x1) / 2
    d.ellipse([cx - 62 * s, y0 + 30 * s, cx + 62 * s, y0 + 185 * s], fill=shade)
    d.pieslice([x0 + 5 * s, y0 + 190 * s, x1 - 5 * s, y1 + 150 * s], 180, 360, fill=shade)


def _style(rng: random.Random, p: dict, s: float) -> Style:
    gray = p.get("gray", False)
    return Style(form_font=rng.choice(p.get("key_fonts", ["hei"])), value_font=rng.choice(p.get("fonts", ["hei"])),
                 form_color=(90, 90, 90) if gray else KEY_BLUE, value_color=(10, 10, 10),
                 size=round(rng.uniform(25, 28) * s))


def render_front(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = FRONT_LAYOUTS[layout]
    c, s = _card(rng, p["gray"], decorations)
    st = _style(rng, p, s)
    key_size = round(st.size * 0.82)
    where = V.place(rng)
    male = rng.random() < 0.5
    birth = V.date_between(rng, dt.date(1950, 1, 1), dt.date(2008, 12, 31))
    number = V.id_number(rng, birth, male, where)
    name = V.person_name(rng)
    ethnicity = rng.choice(V.ETHNICITIES)
    spaced = rng.random() < 0.6
    birth_text = (f"{birth.year} 年 {birth.month} 月 {birth.day} 日" if spaced
                  else f"{birth.year}年{birth.month}月{birth.day}日")
    address = V.address(rng, where, short=True)

    x = rng.uniform(45, 70) * s
    vx = x + (95 if not p["tight"] else 80) * s       # value column of the split layout
    row = rng.uniform(58, 64) * s
    y = rng.uniform(45, 60) * s
    mode = p["kv"]
    sep = "" if mode == "split" else "　"

    def pair(px: float, py: float, key: str, value: str, field: str, ftype: str, width: float) -> None:
        if mode == "inline":
            kv_line(c, st, px, py, Entry(key + sep, value, field, ftype), "inline", width, rng)
            return
        k = c.text(px, py + (st.size - key_size) * 0.6, key, key_size, st.form_font, st.form_color,
                   label="question")
        v = c.text(px + (vx - x), py, value, st.size, st.value_font, st.value_color, label="answer",
                   max_width=width - (vx - x))
        c.field(field, v, 0, len(value), ftype)
        c.link(k, v)

    _portrait(c, s, p["gray"])
    text_w = 540 * s - x
    pair(x, y, "姓名", name, "name", "text", text_w)
    y += row
    pair(x, y, "性别", "男" if male else "女", "sex", "enum", 180 * s)
    pair(x + 210 * s, y, "民族", ethnicity, "ethnicity", "text", 200 * s)
    y += row
    pair(x, y, "出生", birth_text, "birth_date", "date", text_w)
    y += row
    pair(x, y, "住址", address, "address", "text", text_w)
    # the number sits low on the card, its key in smaller type
    ny = c.height - rng.uniform(95, 120) * s
    nsize = round(st.size * 1.1)
    if mode == "inline":
        line = c.text(x, ny, "公民身份号码　" + number, nsize, "hei", st.value_color,
                      max_width=c.width - x - 30 * s)
        c.field("id_number", line, 7, 7 + len(number), "id_number")
    else:
        k = c.text(x, ny + nsize * 0.15, "公民身份号码", key_size, st.form_font, st.form_color, label="question")
        v = c.text(c.lines[k].box[2] + rng.uniform(40, 70) * s, ny, number, nsize, "hei", st.value_color,
                   label="answer")
        c.field("id_number", v, 0, len(number), "id_number")
        c.link(k, v)
    return c


def _emblem(c: Canvas, s: float, gray: bool) -> None:
    if not c.decorations:
        return
    red = (120, 120, 120) if gray else (200, 40, 40)
    gold = (200, 200, 200) if gray else (235, 190, 60)
    cx, cy, r = 130 * s, 130 * s, 80 * s
    c.draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=red)
    c.draw.ellipse([cx - r * 0.8, cy - r * 0.8, cx + r * 0.8, cy + r * 0.8], outline=gold, width=max(2, round(4 * s)))
    star = [(cx + (r * 0.45 if k % 2 == 0 else r * 0.18) * math.sin(math.pi * k / 5),
             cy - (r * 0.45 if k % 2 == 0 else r * 0.18) * math.cos(math.pi * k / 5)) for k in range(10)]
    c.draw.polygon(star, fill=gold)


def valid_period(rng: random.Random, age: int, issued: dt.date) -> str:
    """Validity by age at issue: under 16: 5 years, 16-25: 10, 26-45: 20, over 45: 长期."""
    years = 5 if age < 16 else 10 if age <= 25 else 20 if age <= 45 else 0
    start = f"{issued:%Y.%m.%d}"
    if not years:
        return f"{start}-长期"
    try:
        end = issued.replace(year=issued.year + years)
    except ValueError:                                  # 29 February
        end = issued.replace(year=issued.year + years, day=28)
    return f"{start}-{end:%Y.%m.%d}"


def render_back(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = BACK_LAYOUTS[layout]
    c, s = _card(rng, p["gray"], decorations)
    st = _style(rng, dict(p, fonts=["hei", "song"], key_fonts=["hei"]), s)
    _emblem(c, s, p["gray"])
    title_color = (20, 20, 20)
    c.text(c.width * 0.62, 55 * s, "中华人民共和国", round(40 * s), "song_bold", title_color, label="header",
           align="center")
    c.text(c.width * 0.62, 140 * s, "居民身份证", round(56 * s), "song_bold", title_color, label="header",
           align="center")
    where = V.place(rng)
    authority = f"{where[1]}公安局{where[2]}分局" if rng.random() < 0.7 else f"{where[1]}公安局"
    issued = V.date_between(rng, dt.date(2005, 1, 1), dt.date(2024, 12, 31))
    period = valid_period(rng, rng.randint(10, 75), issued)
    x = rng.uniform(140, 190) * s
    key_size = round(st.size * 0.82)
    for i, (key, value, field, ftype) in enumerate((("签发机关", authority, "issuing_authority", "text"),
                                                    ("有效期限", period, "valid_period", "date_range"))):
        y = c.height - (150 - 62 * i) * s
        if p["kv"] == "inline":
            kv_line(c, st, x, y, Entry(key + "　", value, field, ftype), "inline", c.width - x - 30 * s, rng)
        else:
            k = c.text(x, y + (st.size - key_size) * 0.6, key, key_size, st.form_font, st.form_color,
                       label="question")
            v = c.text(x + 130 * s, y, value, st.size, st.value_font, st.value_color, label="answer",
                       max_width=c.width - x - 160 * s)
            c.field(field, v, 0, len(value), ftype)
            c.link(k, v)
    return c
