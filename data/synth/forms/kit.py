"""Drawing pieces shared by the form layouts: wrapped labels and values, key-value groups with their
links, check-box groups, hints, signature lines, tables, show-through and stamps.

Ground truth of a key or value that runs over several lines (see data/synth/form.py): every key
line links to every value line, and the pair records all of them (`key_lines`, `value_lines`) with
the joined texts as key and value.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageOps

from data.fonts import pil_font
from data.synth.canvas import Canvas, Color
from data.synth.stamp import seal_mask, stamp

TICKS_FULL = ["☑", "☑", "■", "√"]      # fonts with the ballot-box glyph (hei, song)
TICKS_PLAIN = ["■", "√"]               # kai / fangsong lack ☑


@dataclass
class Ink:
    """One page's type: the printed form and the filled-in values."""
    font: str
    value_font: str
    size: int
    color: Color = (20, 20, 20)
    value_color: Color = (20, 20, 20)
    hint_color: Color = (90, 90, 90)


def page_ink(rng: random.Random, fonts: list[str], size: tuple[int, int] = (17, 22)) -> Ink:
    return Ink(font=rng.choice(fonts), value_font=rng.choice(["hei", "song", "kai", "song"]),
               size=rng.randint(*size), value_color=rng.choice([(20, 20, 20), (20, 40, 120), (70, 70, 78)]))


def wrap(text: str, style: str, size: int, width: float) -> list[str]:
    """`text` cut into lines no wider than `width` (characters, Chinese has no word breaks)."""
    font = pil_font(style, size)
    out, cur = [], ""
    for ch in text:
        if cur and font.getlength(cur + ch) > width:
            out.append(cur)
            cur = ""
        cur += ch
    if cur:
        out.append(cur)
    # never leave a line that is only closing punctuation
    if len(out) > 1 and all(ch in "）。；，" for ch in out[-1]):
        out[-2] += out.pop()
    return out


def fit_lines(text: str, style: str, size: int, width: float, max_lines: int = 2) -> tuple[list[str], int]:
    """`text` wrapped to `width`, in the largest size (down to size - 6) that needs at most `max_lines`
    lines; (lines, size). Very long text keeps more lines rather than running out of its cell."""
    lines = wrap(text, style, size, width)
    small = size
    while len(lines) > max_lines and small > max(11, size - 6):
        small -= 1
        lines = wrap(text, style, small, width)
    return lines, small


def break_width(rng: random.Random, text: str, style: str, size: int, width: float, p: float) -> float:
    """The width a value is wrapped at: its cell's, or (probability `p`) a narrower one, as people
    writing or typing into a form break a long value over two lines before the cell ends."""
    full = pil_font(style, size).getlength(text)
    if len(text) >= 8 and rng.random() < p:
        return min(width, full * rng.uniform(0.5, 0.75))
    return width


def spaced(text: str, width: int = 4) -> str:
    """Labels padded with ideographic spaces to a common width, as printed forms align them."""
    if len(text) >= width or len(text) < 2:
        return text
    gaps = len(text) - 1
    pad = width - len(text)
    per = [pad // gaps + (1 if i < pad % gaps else 0) for i in range(gaps)]
    return "".join(ch + "\u3000" * (per[i] if i < gaps else 0) for i, ch in enumerate(text))


def split_label(text: str) -> list[str]:
    """A label stacked on two lines as narrow cells print it: 政治/面貌, 提交证件/情况, 申报学院/（部门）."""
    if "（" in text and text.index("（") > 1:
        i = text.index("（")
        return [text[:i], text[i:]]
    i = (len(text) + 1) // 2
    return [text[:i], text[i:]]


def group(c: Canvas, key_lines: list[int], value_lines: list[int], key: str, value: str,
          options: list[str] | None = None) -> None:
    """A pair whose key and value may each span several lines: a link from each key line to each value
    line, and one pair entry holding them all."""
    for k in key_lines:
        for v in value_lines:
            c.link(k, v)
    pair: dict = {"key": key, "value": value, "key_line": key_lines[0], "value_line": value_lines[0],
                  "key_lines": list(key_lines), "value_lines": list(value_lines)}
    if options is not None:
        pair["options"] = list(options)
    c.pairs.append(pair)


def lines_text(c: Canvas, ids: list[int]) -> str:
    return "".join(c.lines[i].text for i in ids).rstrip("：:")


def stacked(c: Canvas, x: float, y: float, parts: list[str], size: int, style: str, color: Color,
            label: str, align: str = "left", gap: float = 1.25, max_width: float | None = None) -> list[int]:
    """Lines one under the other, starting at top `y`, all in one size (the largest where every line
    fits `max_width`)."""
    if max_width is not None:
        size = min(c.fit_size(p, style, size, max_width) for p in parts)
    return [c.text(x, y + i * size * gap, p, size, style, color, label=label, align=align) for i, p in enumerate(parts)]


def check_group(c: Canvas, rng: random.Random, x: float, y: float, options: list[str], ticked: int | None,
                ink: Ink, max_x: float | None = None) -> tuple[list[int], int | None]:
    """□男 ☑女: each option its own line; the ticked one is returned (it is the answer), the others are
    "other". `ticked=None` prints them all unticked. Options that run past `max_x` continue below."""
    glyphs = TICKS_FULL if ink.font in ("hei", "song") else TICKS_PLAIN
    tick = rng.choice(glyphs)
    box = "□"
    ids, hit = [], None
    ox, oy = x, y
    for i, opt in enumerate(options):
        text = (tick if i == ticked else box) + opt
        w = c.text_width(text, ink.size, ink.font)
        if max_x is not None and ox + w > max_x and ox > x:
            ox, oy = x, oy + ink.size * 1.3
        line = c.text(ox, oy, text, ink.size, ink.font, ink.color, label="answer" if i == ticked else "other")
        ids.append(line)
        if i == ticked:
            hit = line
        ox = c.lines[line].box[2] + ink.size * rng.uniform(0.8, 2.0)
    return ids, hit


def checks(c: Canvas, rng: random.Random, key_lines: list[int], x: float, y: float, options: list[str],
           ink: Ink, max_x: float | None = None, none_ticked: float = 0.1) -> float:
    """A check-box group answering `key_lines`: ground truth key -> the ticked option (value without
    the box). Returns the bottom of the group (options that did not fit went on a second line)."""
    ticked = None if rng.random() < none_ticked else rng.randrange(len(options))
    ids, hit = check_group(c, rng, x, y, options, ticked, ink, max_x)
    if hit is not None and ticked is not None:
        group(c, key_lines, [hit], lines_text(c, key_lines), options[ticked], options)
    return max(c.lines[i].box[3] for i in ids)


def signature(c: Canvas, rng: random.Random, x: float, y: float, ink: Ink, who: str, width: float,
              name: str | None = None) -> None:
    """签名：______  年  月  日. The signature label is a question; signed (`name`), it links to the name
    in a hand-like font; unsigned, it has no answer. The blank date is "other"."""
    k = c.text(x, y, who + "：", ink.size, ink.font, ink.color, label="question")
    x1 = c.lines[k].box[2] + 6
    c.hline(x1, x1 + width * 0.35, y + ink.size * 1.2, (80, 80, 80))
    if name:
        v = c.text(x1 + ink.size, y - ink.size * 0.15, name, ink.size + 2, "kai", (30, 30, 60), label="answer")
        group(c, [k], [v], lines_text(c, [k]), name)
    dx = x + width * rng.uniform(0.55, 0.65)
    c.text(dx, y, rng.choice(["年    月    日", "年   月   日", "    年    月    日"]).strip(), ink.size, ink.font,
           ink.color, label="other")


@dataclass
class TableLook:
    """How a table is printed: ruled (a border round every cell) or aligned by whitespace only."""
    ruled: bool = True
    bold: bool = False             # the header row in bold type
    centre: bool = True            # cells centred in their columns, else left-aligned
    pitch: float = 2.0             # height of a one-line row, in type sizes
    rules: bool = False            # unruled: a rule above, under the header row and below (三线表)


def table_look(rng: random.Random, ruled: bool | None = None) -> TableLook:
    ruled = rng.random() < 0.6 if ruled is None else ruled
    return TableLook(ruled, rng.random() < 0.4, rng.random() < 0.5,
                     rng.uniform(1.6, 2.8) if ruled else rng.uniform(1.6, 2.2), not ruled and rng.random() < 0.4)


def table(c: Canvas, ink: Ink, left: float, y: float, right: float, columns: list[str], widths: list[float],
          rows: list[list[str]], look: TableLook, hand: tuple[int, ...] = ()) -> float:
    """A header row of column names and a row per record under it, between `left` and `right` from top
    `y`; returns the bottom. Column names are "header" lines, cells "other" (in a hand-like font in the
    `hand` columns: signatures); a name or cell too wide for its column wraps, and its row grows.
    Records `Canvas.tables`: a name or cell over several lines is its first line's id and the texts
    joined; a blank cell is "" and None; a row with nothing printed (the spare rows a ruled form
    leaves) is no record and is not listed."""
    size = ink.size
    unit = (right - left) / sum(widths)
    xs = [left + unit * sum(widths[:j]) for j in range(len(widths) + 1)]
    pad = max(5.0, size * (0.3 if look.ruled else 0.5))     # unruled: a type size of white between columns
    head_style = ("hei_bold" if ink.font == "hei" else "song_bold") if look.bold else ink.font
    entry: dict = {"columns": [], "column_lines": [], "rows": [], "cell_lines": []}
    if look.rules:
        c.hline(left, right, y, (0, 0, 0), 2)
    for r, texts in enumerate([columns] + rows):
        head = r == 0
        cells = []
        for j, text in enumerate(texts):
            style = head_style if head else ("kai" if j in hand else ink.value_font)
            fsize = size if head else size + 1 if j in hand else size - 1
            lines, fsize = fit_lines(text, style, fsize, xs[j + 1] - xs[j] - 2 * pad) if text else ([], size)
            cells.append((lines, style, fsize))
        n = max([len(lines) for lines, _, _ in cells] + [1])
        h = size * (look.pitch + 1.25 * (n - 1))
        ids: list[list[int]] = []
        for j, (lines, style, fsize) in enumerate(cells):
            if look.ruled:
                c.rect([xs[j], y, xs[j + 1], y + h], (0, 0, 0), 1)
            if not lines:
                ids.append([])
                continue
            ty = y + h / 2 - fsize * (0.55 + (len(lines) - 1) * 1.25 / 2)
            centred = look.centre or (head and look.ruled)
            x = (xs[j] + xs[j + 1]) / 2 if centred else xs[j] + pad
            color = ink.color if head else ((30, 30, 60) if j in hand else ink.value_color)
            ids.append(stacked(c, x, ty, lines, fsize, style, color, "header" if head else "other",
                               "center" if centred else "left", 1.25, max_width=xs[j + 1] - xs[j] - 2 * pad))
        if head:
            entry["columns"] = ["".join(c.lines[i].text for i in ln) for ln in ids]
            entry["column_lines"] = [ln[0] if ln else None for ln in ids]
        elif any(ids):
            entry["rows"].append(["".join(c.lines[i].text for i in ln) for ln in ids])
            entry["cell_lines"].append([ln[0] if ln else None for ln in ids])
        y += h
        if head and look.rules:
            c.hline(left, right, y, (0, 0, 0), 1)
    if look.rules:
        c.hline(left, right, y, (0, 0, 0), 2)
    c.tables.append(entry)
    return y


def records_table(c: Canvas, ink: Ink, left: float, y: float, right: float, cols: list[tuple[str, str, float]],
                  rows: list[list[str]], look: TableLook) -> float:
    """`table` for the columns of data/synth/forms/labels.py's `table_rows` (name, cell kind, width);
    signature columns in a hand-like font. An unruled table drops the spare rows: nothing shows them."""
    if not look.ruled:
        rows = [row for row in rows if any(t and ck != "seq" for t, (_, ck, _) in zip(row, cols))]
    return table(c, ink, left, y, right, [name for name, _, _ in cols], [w for _, _, w in cols], rows, look,
                 tuple(j for j, (_, ck, _) in enumerate(cols) if ck == "sign"))


def show_through(c: Canvas, rng: random.Random, texts: list[str]) -> None:
    """Faint mirrored text from the back of the sheet (thin paper, scanned): `texts` are the lines of a
    page like this one. Decoration: no ground truth."""
    if not c.decorations:
        return
    back = Image.new("L", c.image.size, 0)
    d = ImageDraw.Draw(back)
    size = rng.randint(16, 24)
    font = pil_font(rng.choice(["song", "hei"]), size)
    y = rng.uniform(20, 80)
    while y < c.height - size:
        line = "".join(rng.choice(texts) + rng.choice(["：", "  ", "，"]) for _ in range(rng.randint(1, 5)))
        d.text((rng.uniform(40, 300), y), line, font=font, fill=255)
        y += size * rng.uniform(1.6, 3.0)
    back = ImageOps.mirror(back)
    alpha = np.asarray(back, np.float32)[..., None] / 255 * rng.uniform(0.04, 0.1)
    img = np.asarray(c.image, np.float32)
    c.image = Image.fromarray((img * (1 - alpha)).clip(0, 255).astype(np.uint8))
    c.draw = ImageDraw.Draw(c.image)


def add_stamp(c: Canvas, rng: random.Random, cx: float, cy: float, company: str) -> None:
    """A red company seal over the signature area. Decoration: no ground truth."""
    if not c.decorations:
        return
    d = rng.randint(130, 170)
    mask = seal_mask(rng, company, "", rng.choice(["", "公章", "人事专用章", "业务专用章"]), d, d, star=True)
    stamp(c.image, mask, (cx, cy), rng)
    c.draw = ImageDraw.Draw(c.image)


def decorate(c: Canvas, deco: random.Random, company: str, at: tuple[float, float], texts: list[str],
             p_stamp: float = 0.5, p_show: float = 0.35) -> None:
    """Stamp and show-through, drawn from their own random stream so they never change the text."""
    if deco.random() < p_show:
        show_through(c, deco, texts)
    if deco.random() < p_stamp:
        add_stamp(c, deco, at[0] + deco.uniform(-40, 40), at[1] + deco.uniform(-30, 30), company)
