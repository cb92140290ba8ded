"""Train tickets (火车票): the card-sized paper ticket of China Railway.

A ticket has a red ticket number at the top left (E012345), the 检票 gate at the top right, the
two stations in large type with their pinyin below and the train number between them, the date and
departure time with the seat, the price with the class, the passenger's masked ID and name, a
service box, a serial line and a QR code. Every value is a span of the line it is printed on, so a
line such as "2024年03月05日 08:30开" carries two fields (date and time).

Layouts:
- tt_blue:    the blue magnetic ticket (2009 on), stations on one row with "站" printed apart
- tt_compact: the blue ticket of recent years, 报销凭证 style: date and seat share a row, the name
              before the ID, gate written 检票口
- tt_red:     the older pink/red soft-paper ticket: "南京南站" in one line, ￥ price, barcode-like QR
"""
from __future__ import annotations

import datetime as dt
import random

import numpy as np
from PIL import Image

from data.synth import values as V
from data.synth.blocks import qr_code
from data.synth.canvas import Canvas, Color

LAYOUTS: dict[str, dict] = {
    "tt_blue": dict(paper="blue", station_apart=True, fonts=["hei", "song"], station_fonts=["hei_bold", "song_bold"],
                    name_first=False, gate_key="检票：", yen="¥", compact=False),
    "tt_compact": dict(paper="blue", station_apart=True, fonts=["song", "hei", "fangsong"],
                       station_fonts=["song_bold", "kai", "hei_bold"], name_first=True, gate_key="检票口",
                       yen="¥", compact=True),
    "tt_red": dict(paper="red", station_apart=False, fonts=["song", "kai"], station_fonts=["song_bold", "kai"],
                   name_first=False, gate_key="检票口：", yen="￥", compact=False),
}
PAPER: dict[str, tuple[Color, Color]] = {"blue": ((206, 226, 242), (180, 205, 230)),
                                         "red": ((246, 214, 214), (232, 180, 185))}
NUMBER_RED = (200, 30, 35)


def _paper(c: Canvas, rng: random.Random, paper: str, s: float) -> None:
    """Tinted paper with a fine wave pattern and the faint railway logo rings (decoration only)."""
    phase, fx, fy = rng.uniform(0, 6.28), rng.uniform(0.4, 0.6), rng.uniform(0.45, 0.6)
    if not c.decorations:            # the same draws either way, so text-only pages hold the same values
        return
    base, line = PAPER[paper]
    w, h = c.width, c.height
    yy, xx = np.mgrid[0:h:4, 0:w:4].astype(np.float32)
    wave = 0.5 + 0.5 * np.sin(xx / (18 * s) + np.sin(yy / (40 * s)) * 2.0 + phase)
    arr = np.array(base, np.float32) * (1 - 0.05 * wave[..., None])
    img = Image.fromarray(arr.clip(0, 255).astype(np.uint8)).resize((w, h), Image.Resampling.BILINEAR)
    c.image.paste(img)
    cx, cy = w * fx, h * fy
    for r in (90 * s, 120 * s):
        c.draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=line, width=max(2, round(5 * s)))


def _values(rng: random.Random, first: dt.date = dt.date(2015, 1, 1),
            last: dt.date = dt.date(2025, 6, 30)) -> dict[str, str]:
    """A journey's printed values, departing between `first` and `last` (the railway e-invoice reuses
    them)."""
    (a, a_py), (b, b_py) = rng.sample(V.STATIONS, 2)
    prefix = rng.choice("GGGGDDCKKTZ")
    classes, kind = V.TRAIN_KINDS[prefix]
    seat_class, rate = rng.choice(classes)
    number = rng.randint(1, 9999 if prefix in "GDK" else 999)
    car = rng.randint(1, 16)
    if kind == "high":
        letters = {"二等座": "ABCDF", "一等座": "ACDF", "商务座": "ACF"}[seat_class]
        seat = f"{car:02d}车{rng.randint(1, 20):02d}{rng.choice(letters)}号"
    elif seat_class == "硬座":
        seat = f"{car:02d}车{rng.randint(1, 118):03d}号"
    else:
        berth = rng.choice("上中下" if seat_class == "硬卧" else "上下")
        seat = f"{car:02d}车{rng.randint(1, 66):03d}号{berth}铺"
    km = rng.randint(80, 2200)
    price = max(5.0, round(rate * km / 100 * 2) / 2)          # fares end in .0 or .5
    when = dt.datetime.combine(V.date_between(rng, first, last),
                               dt.time(rng.randint(5, 22), rng.choice(range(0, 60, 1))))
    birth = V.date_between(rng, dt.date(1950, 1, 1), dt.date(2015, 12, 31))
    id_number = V.id_number(rng, birth, rng.random() < 0.5)
    letter = rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ")
    return {"from": a, "from_py": a_py, "to": b, "to_py": b_py, "train": f"{prefix}{number}",
            "seat": seat, "class": seat_class, "price": f"{price:.1f}", "date": f"{when:%Y年%m月%d日}",
            "time": f"{when:%H:%M}", "id": V.masked_id(rng, id_number), "name": V.person_name(rng),
            "ticket": f"{letter}{V.digits(rng, 6)}",
            "gate": rng.choice([f"{rng.choice('ABC')}{rng.randint(1, 28)}", str(rng.randint(1, 30)),
                                f"{rng.randint(1, 20)}{rng.choice('AB')}"]),
            "office": rng.choice(V.STATIONS)[0]}


def _arrow(c: Canvas, x0: float, x1: float, y: float, color: Color, s: float) -> None:
    if not c.decorations:
        return
    c.draw.line([(x0, y), (x1, y)], fill=color, width=max(2, round(3 * s)))
    c.draw.polygon([(x1, y), (x1 - 14 * s, y - 7 * s), (x1 - 14 * s, y + 7 * s)], fill=color)


def render_ticket(rng: random.Random, layout: str, decorations: bool = True) -> Canvas:
    p = LAYOUTS[layout]
    s = rng.uniform(0.9, 1.2)
    W, H = round(870 * s), round(560 * s)
    c = Canvas(W, H, rng, background=(255, 255, 255), decorations=decorations)
    _paper(c, rng, p["paper"], s)
    v = _values(rng)
    font = rng.choice(p["fonts"])
    ink = rng.choice([(15, 15, 15), (35, 35, 40), (70, 70, 78)])   # print head from fresh to worn
    size = round(rng.uniform(26, 30) * s)
    big = round(size * rng.uniform(1.45, 1.65))
    # a ticket printer feeds cards loosely: the whole printout sits a few pixels off
    ox, oy = rng.uniform(-12, 12) * s, rng.uniform(-8, 8) * s
    x0 = 55 * s + ox
    y = 36 * s + oy

    # --- number and gate ---------------------------------------------------------------------------
    line = c.text(x0, y, v["ticket"], round(size * 1.15), rng.choice(["hei", "song"]), NUMBER_RED, label="answer")
    c.field("ticket_number", line, 0, len(v["ticket"]), "code")
    gate_text = p["gate_key"] + v["gate"]
    line = c.text(W - 60 * s + ox, y + 2 * s, gate_text, size, font, ink, align="right")
    c.field("gate", line, len(p["gate_key"]), len(gate_text))
    y += size * 2.1

    # --- stations and train ------------------------------------------------------------------------
    st_font = rng.choice(p["station_fonts"])
    left_x, right_x = x0 + 20 * s, W * 0.64 + ox
    first_station = len(c.lines)
    for key, name, pinyin, x in (("from_station", v["from"], v["from_py"], left_x),
                                 ("to_station", v["to"], v["to_py"], right_x)):
        if p["station_apart"]:
            line = c.text(x, y, name, big, st_font, ink, max_width=W * 0.3)
            c.field(key, line, 0, len(name))
            c.text(c.lines[line].box[2] + 10 * s, y + big - size * 1.05, "站", size, font, ink, label="other")
        else:
            line = c.text(x, y, name + "站", big, st_font, ink, max_width=W * 0.32)
            c.field(key, line, 0, len(name))
        if p["station_apart"] or rng.random() < 0.5:
            c.text(x + 4 * s, y + big * 1.2, pinyin, round(size * 0.75), "hei", ink, label="other")
    left_end = max(ln.box[2] for ln in c.lines[first_station:] if ln.box[0] < right_x - 5)
    mid = (left_end + right_x) / 2
    train = c.text(mid, y + (big - size * 1.2) / 2 - 10 * s, v["train"], round(size * 1.2),
                   rng.choice(["hei", "song"]), ink, align="center")
    c.field("train_number", train, 0, len(v["train"]), "code")
    tb = c.lines[train].box
    _arrow(c, tb[0] - 25 * s, tb[2] + 25 * s, tb[3] + 14 * s, ink, s)
    y += big * 1.2 + size * 1.6

    # --- date, time, seat, price, class --------------------------------------------------------------
    sep = rng.choice([" ", "  ", ""])
    dt_text = f"{v['date']}{sep}{v['time']}开"
    line = c.text(x0, y, dt_text, size, font, ink)
    c.field("departure_date", line, 0, len(v["date"]), "date")
    start = len(v["date"]) + len(sep)
    c.field("departure_time", line, start, start + len(v["time"]))
    seat_x = W * (0.47 if p["compact"] else 0.64) + ox
    qr = (125 if p["compact"] else 150) * s
    # the compact ticket has its QR code at the right of the date rows, the others at the bottom
    qx, qy = (W - qr - 50 * s, y - 8 * s) if p["compact"] else (W - qr - 45 * s, H - qr - 30 * s)
    line = c.text(seat_x, y, v["seat"], size, font, ink)
    c.field("seat", line, 0, len(v["seat"]))
    y += size * 1.55
    price_text = f"{p['yen']}{v['price']}元"
    line = c.text(x0, y, price_text, size, font, ink)
    c.field("price", line, 1, 1 + len(v["price"]), "amount")
    if rng.random() < 0.4:                                   # the circled 网 of an online booking
        cx = c.lines[line].box[2] + 45 * s
        r = size * 0.7
        if c.decorations:
            c.draw.ellipse([cx - r, y + size * 0.55 - r, cx + r, y + size * 0.55 + r], outline=ink, width=2)
        c.text(cx, y, "网", size, font, ink, label="other", align="center")
    line = c.text(seat_x, y, v["class"], size, font, ink)
    c.field("seat_class", line, 0, len(v["class"]))
    y += size * 1.55
    c.text(x0, y, rng.choice(["限乘当日当次车", "限乘当日当次车", "仅供报销使用", "始发改签"]), round(size * 0.85),
           font, ink, label="other")
    y += size * 1.5

    # --- passenger ------------------------------------------------------------------------------------
    gap = rng.choice([" ", "  "])
    if p["name_first"]:
        text = v["name"] + gap + v["id"]
        line = c.text(x0, y, text, size, font, ink)
        c.field("passenger_name", line, 0, len(v["name"]))
        c.field("passenger_id", line, len(v["name"]) + len(gap), len(text), "code")
    else:
        text = v["id"] + gap + v["name"]
        line = c.text(x0, y, text, size, font, ink)
        c.field("passenger_id", line, 0, len(v["id"]), "code")
        c.field("passenger_name", line, len(v["id"]) + len(gap), len(text))
    y += size * 1.6

    # --- service box, serial, QR ------------------------------------------------------------------------
    box_right = (W - 60 * s) if p["compact"] else qx - 25 * s
    small = round(size * 0.72)
    if not p["compact"] and y + small * 3.2 < H - 40 * s:
        if c.decorations:
            c.rect([x0, y, box_right, y + small * 3.2], ink, 1)
        c.text((x0 + box_right) / 2, y + small * 0.45, rng.choice(["买票请到12306 发货请到95306", "报销凭证 遗失不补"]),
               small, font, ink, label="other", align="center", max_width=box_right - x0 - 10 * s)
        c.text((x0 + box_right) / 2, y + small * 1.75, "中国铁路祝您旅途愉快", small, font, ink, label="other",
               align="center", max_width=box_right - x0 - 10 * s)
    serial = f"{V.digits(rng, 14)}{v['ticket']} {v['office']}售"
    c.text(x0, H - 34 * s - small, serial, small, "hei", ink, label="other", max_width=box_right - x0)
    qr_code(c, random.Random(rng.random()), qx, qy, qr)
    return c
