"""Item rows (goods lines of an invoice or receipt): cells from the model's item spans, one row per
printed table row, and the rules that complete or drop rows.
"""
from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from data.document import Document, Field, Page
from data.geometry import cluster_rows, deskewed_centre, page_slope
from data.labels import ITEM_PREFIX
from data.normalize import normalize_value, parse_amount
from data.text_distance import edit_distance
from models.extraction.base import PageContext, Span, line_starts
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def whole_cells(spans: list[Span], page: Page) -> list[Span]:
    """Table cells are OCR lines of their own: an item span that covers part of a line no other item
    span shares grows to the whole line when the rest holds no space (250ML cut from 250ML*24)."""
    out = []
    for sp in spans:
        text = page.lines[sp.line].text
        alone = sum(1 for o in spans if o.line == sp.line) == 1
        body = text.strip()
        if alone and body and " " not in body and "　" not in body and (sp.end - sp.start) < len(body):
            a = text.index(body)
            sp = Span(sp.key, sp.line, a, a + len(body), sp.score, sp.alts)
        out.append(sp)
    return out


def join_pieces(spans: list[Span], page: Page) -> list[Span]:
    """Several item spans on one OCR line, all of one key (*纸制品*复印纸 tagged as *, *纸制品* and 印; 46 as
    4 and 46), are pieces of one cell: one span from the first piece's start to the last one's end,
    when the line holds no space (a space may part two cells OCR read as one line)."""
    out: list[Span] = []
    done: set[int] = set()
    for sp in spans:
        if sp.line in done:
            continue
        mates = [o for o in spans if o.line == sp.line]
        body = page.lines[sp.line].text.strip()
        if len(mates) > 1 and len({o.key for o in mates}) == 1 and " " not in body and "　" not in body:
            done.add(sp.line)
            sp = Span(sp.key, sp.line, min(o.start for o in mates), max(o.end for o in mates),
                      max(o.score for o in mates), sp.alts)
        out.append(sp)
    return out


def drop_total_rows(doc: Document) -> None:
    """A nameless row whose amount is the sum of the other rows' amounts is the 合计 line under the
    table (a receipt prints it without ¥), not goods: drop it so the totals can claim it."""
    def amount(row: dict[str, Field]) -> Any:
        return parse_amount(row["amount"].value) if "amount" in row else None
    for row in list(doc.items):
        others = [amount(r) for r in doc.items if r is not row]
        if "name" not in row and amount(row) is not None and others and None not in others \
                and sum(others) == amount(row):
            doc.items.remove(row)


def is_item_row(row: dict[str, Field], page_text: str) -> bool:
    """Whether clustered cells make a goods row: it has a figure, and it is not the 合计 row (only
    ¥-marked figures, no name). A lone name fragment is text the model half-tagged elsewhere."""
    figures = [f for k, f in row.items() if k != "name" and re.search(r"\d", f.raw or "")]
    if not figures:
        return False

    def yen(f: Field) -> bool:
        before = page_text[:f.span[0]].rstrip(" ")[-1:] if f.span else ""
        return (f.raw or "").lstrip()[:1] in ("¥", "￥") or before in ("¥", "￥")
    return "name" in row or not all(yen(f) for f in figures)


def complete_item_rows(ctx: PageContext) -> None:
    """A row's quantity or tax the model missed (a lone "1" is easy to miss) is the untaken figure
    in the row's band that makes 数量 x 单价 = 金额 (or 金额 x 税率 = 税额) hold."""
    doc, page, item_specs, height = ctx.doc, ctx.page, ctx.item_specs, ctx.height
    here = [f for row in doc.items for f in row.values()] + list(doc.fields.values())
    taken = {tuple(f.span) for f in here if f.span and f.page == page.index}
    starts = line_starts(page)
    for row in doc.items:
        if any(f.page != page.index for f in row.values()):
            continue            # a row of an earlier page: its band is on that page
        amount = parse_amount(row["amount"].value) if "amount" in row else None
        if amount is None:
            continue
        ys = [(f.box[1] + f.box[3]) / 2 for f in row.values() if f.box]
        want: dict[str, Any] = {}
        price = parse_amount(row["unit_price"].value) if "unit_price" in row else None
        if "quantity" not in row and "quantity" in item_specs and price:
            want["quantity"] = (lambda v, price=price, amount=amount:
                                abs(v * price - amount) <= Decimal("0.01") * max(1, v))
        rate = row["tax_rate"].value if "tax_rate" in row else None
        if "tax" not in row and "tax" in item_specs and rate and rate.endswith("%"):
            r = parse_amount(rate[:-1])
            if r is not None:
                want["tax"] = (lambda v, amount=amount, r=r:
                               "." in str(v) and abs(v - amount * r / 100) <= Decimal("0.011"))
        for key, ok in want.items():
            fits = []
            for li, ln in enumerate(page.lines):
                text = ln.text.strip()
                if not text:
                    continue
                cy = (ln.box[1] + ln.box[3]) / 2
                v = parse_amount(text)
                at = int(starts[li]) + ln.text.index(text[0])
                span = (at, at + len(text))
                if v is not None and v > 0 and span not in taken and \
                        any(abs(cy - y) < ctx.settings.item_band * height for y in ys) and ok(v):
                    fits.append((li, span))
            if len(fits) == 1:
                li, span = fits[0]
                a = span[0] - int(starts[li])
                row[key] = ctx.make_field(key, item_specs[key], Span(ITEM_PREFIX + key, li, a,
                                                                     a + span[1] - span[0], 0.5))
                taken.add(span)


# the tax rates and levy rates (征收率) Chinese invoices print, in percent
RATES = (0, 1, 1.5, 3, 5, 6, 9, 10, 11, 13, 16, 17)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text or "")


def repair_item_figures(ctx: PageContext) -> None:
    """A row's rate, tax or unit price OCR misread in one character (13% as 135 or 3%, 217.06 as 217306,
    869.79 as 809.79) is the figure the row's arithmetic gives (金额 x 税率 = 税额, 数量 x 单价 = 金额),
    when the printed digits are one edit from that figure's: the rate from 税额 / 金额 among the rates
    invoices print, then the tax from 金额 x 税率, then the unit price from 金额 / 数量 at the printed
    number of decimals. Each repair is said in a warning."""
    for i, row in enumerate(ctx.doc.items):
        if any(f.page != ctx.page.index for f in row.values()) or "amount" not in row:
            continue
        a = parse_amount(row["amount"].value)
        if a is None or a <= 0:
            continue

        def fix(key: str, value: str, row: dict[str, Field] = row, i: int = i) -> None:
            f = row[key]
            if f.value != value and edit_distance(_digits(f.raw), _digits(value)) <= 1:
                ctx.doc.warnings.append(f"items[{i}].{key}: read {f.raw!r}, taken as {value} by the row's arithmetic")
                f.value = value
        t = parse_amount(row["tax"].value) if "tax" in row else None
        if "tax_rate" in row and t is not None:
            fits = [r for r in RATES if abs(a * Decimal(str(r)) / 100 - t) <= Decimal("0.011")]
            if len(fits) == 1:
                fix("tax_rate", f"{Decimal(str(fits[0])).normalize():f}%")
        rate = row["tax_rate"].value if "tax_rate" in row else ""
        r = parse_amount(rate[:-1]) if rate.endswith("%") else None
        if "tax" in row and r is not None:
            fix("tax", str((a * r / 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)))
        q = parse_amount(row["quantity"].value) if "quantity" in row else None
        if "unit_price" in row and q and "." in (row["unit_price"].raw or ""):
            places = len(row["unit_price"].raw.rsplit(".", 1)[1])
            p = (a / q).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
            if abs(p * q - a) <= Decimal("0.01") * max(Decimal(1), q):
                fix("unit_price", f"{p.normalize():f}" if places else str(p))


# --- rules over the page context ------------------------------------------------------------------

def _item_key(s: Span) -> str:
    return s.key[len(ITEM_PREFIX):]


def item_candidates(ctx: PageContext) -> None:
    """The model's item spans of fields the schema has."""
    ctx.item_spans = [s for s in ctx.spans if s.key.startswith(ITEM_PREFIX) and _item_key(s) in ctx.item_specs]


def join_cell_pieces(ctx: PageContext) -> None:
    """Item spans of one key that part one OCR line between them are one cell."""
    ctx.item_spans = join_pieces(ctx.item_spans, ctx.page)


def whole_cell(ctx: PageContext) -> None:
    """An item span alone on its OCR line grows to the whole line when the rest holds no space."""
    ctx.item_spans = whole_cells(ctx.item_spans, ctx.page)


def item_cells(ctx: PageContext) -> None:
    """Each item span as a cell (field key, Field); empty cells or cells without a box are dropped."""
    cells = [(_item_key(s), ctx.make_field(_item_key(s), ctx.item_specs[_item_key(s)], s)) for s in ctx.item_spans]
    ctx.cells = [(k, f) for k, f in cells if f.raw and f.box]


def split_column_cells(ctx: PageContext) -> None:
    """A column of short cells the detector took as one vertical box (次 / 台 / 箱 of three rows' units
    read as 次台箱, in a box taller than wide and as tall as its characters' rows) is one cell per
    character, each in its share of the box from the top: rows then cluster as printed."""
    flat = [ln.box[3] - ln.box[1] for ln in ctx.page.lines if ln.box[2] - ln.box[0] > ln.box[3] - ln.box[1]]
    if not flat:
        return
    h = float(np.median(flat))
    out: list[tuple[str, Field]] = []
    for k, f in ctx.cells:
        text = re.sub(r"\s+", "", f.raw or "")
        x0, y0, x1, y1 = f.box or (0, 0, 0, 0)
        n = len(text)
        if n >= 2 and (y1 - y0) > 1.5 * (x1 - x0) and (y1 - y0) >= (n - 0.5) * h and \
                (y1 - y0) <= (n + 1.5) * h and f.span is not None:
            step = (y1 - y0) / n
            for i, ch in enumerate(text):
                out.append((k, Field(key=f.key, value=normalize_value(ctx.item_specs[k].type, ch) or ch, raw=ch,
                                     score=f.score, box=[x0, y0 + i * step, x1, y0 + (i + 1) * step], page=f.page,
                                     label=f.label, span=[f.span[0] + i, f.span[0] + i + 1])))
        else:
            out.append((k, f))
    ctx.cells = out


def star_name(ctx: PageContext) -> None:
    """货物名称 is printed *类别*名称; OCR often drops the first star, reads the second as a quotation
    mark or a dot (会议服务“会议费, 日用杂品·保温袋), or reads a speck after the first (*"日用杂品*保温袋)."""
    for k, f in ctx.cells:
        if k != "name":
            continue
        value = re.sub(r"^\*?[“”\"'·•・.,，、]+(?=[\u4e00-\u9fff])", "*", f.value or "")
        value = re.sub(r"(?<=[\u4e00-\u9fff])[“”\"＊※·•・](?=[\u4e00-\u9fff])", "*", value, count=1)
        if re.fullmatch(r"[^*\s][^*]*\*[^*]+", value):
            value = "*" + value
        f.value = value


def lone_cells(ctx: PageContext) -> None:
    """A row of one cell that is neither a name nor an amount (a 8 read off the ⓧ before the 大写 line,
    taken for a quantity) is no goods row."""
    drop = [row for row in ctx.rows if len(row) == 1 and not {"name", "amount"} & set(row)]
    ctx.rows = [row for row in ctx.rows if not any(row is d for d in drop)]
    ctx.doc.items = [row for row in ctx.doc.items if not any(row is d for d in drop)]


def cluster_item_rows(ctx: PageContext) -> None:
    """One row per printed table row: cell centres clustered after taking out the page tilt; of two
    cells of one key in a row the longer text wins, then the higher score."""
    if not ctx.cells:
        return
    quads = [ln.quad for ln in ctx.page.lines]
    ctx.height = float(np.median([np.hypot(*(np.subtract(q[3], q[0]))) for q in quads]))
    cells = ctx.cells
    for idx in cluster_rows([(k, f.box or []) for k, f in cells], ctx.height, page_slope(quads),
                            ctx.settings.row_tolerance, ctx.settings.row_lower):
        row: dict[str, Field] = {}
        for k, f in (cells[j] for j in idx):
            if k not in row or (len(f.raw), f.score) > (len(row[k].raw), row[k].score):
                row[k] = f
        ctx.rows.append(row)
        ctx.doc.items.append(row)


def goods_rows_only(ctx: PageContext) -> None:
    """A clustered row without a figure, or the 合计 row (only ¥-marked figures, no name), is no goods row."""
    page_text = "\n".join(ln.text for ln in ctx.page.lines)
    drop = [row for row in ctx.rows if not is_item_row(row, page_text)]
    ctx.rows = [row for row in ctx.rows if not any(row is d for d in drop)]
    ctx.doc.items = [row for row in ctx.doc.items if not any(row is d for d in drop)]


def drop_total_row(ctx: PageContext) -> None:
    """A nameless row whose amount is the sum of the other rows' is the 合计 line, not goods."""
    if ctx.cells:
        drop_total_rows(ctx.doc)


def item_arithmetic(ctx: PageContext) -> None:
    """A row's figure OCR misread in one character is the one the row's arithmetic gives."""
    if ctx.cells:
        repair_item_figures(ctx)


def complete_item_row(ctx: PageContext) -> None:
    """A row's missing quantity or tax is the one untaken figure in its band that makes the row's
    arithmetic hold."""
    if ctx.cells:
        complete_item_rows(ctx)


def above_item_heads(page: Page, schema: Any, st: DecodeSettings = DEFAULT_SETTINGS) -> set[int]:
    """The lines that stand wholly above the item table's head row (项目名称 | 单位 | 数量 | 单价 | 金额 read as
    lines of their own, on one row), tilt taken out: no goods are printed above the heads of their columns.
    A phrase that also names a header field (名称 is the buyer's) is no column head. Empty when the page
    shows fewer than `heads_min` fields' heads on one row."""
    header_phrases = {re.sub(r"\s+", "", ph) for f in schema.fields for ph in f.key_phrases}
    head_of = {re.sub(r"\s+", "", ph): f.key for f in schema.item_fields for ph in f.key_phrases}
    head_of = {ph: key for ph, key in head_of.items() if ph and ph not in header_phrases}
    if not head_of or not page.lines:
        return set()
    slope = page_slope([ln.quad for ln in page.lines])
    boxes = [ln.box for ln in page.lines]
    heads = [i for i, ln in enumerate(page.lines) if re.sub(r"\s+", "", ln.text) in head_of]
    if len(heads) < st.heads_min:
        return set()
    keys = [head_of[re.sub(r"\s+", "", page.lines[i].text)] for i in heads]
    height = float(np.median([boxes[i][3] - boxes[i][1] for i in heads]))
    best: list[int] = []
    for row in cluster_rows([(k, boxes[i]) for k, i in zip(keys, heads)], height, slope):
        if len({keys[j] for j in row}) >= st.heads_min and len(row) > len(best):
            best = [heads[j] for j in row]
    if not best:
        return set()
    top = min(deskewed_centre(boxes[i], slope) - (boxes[i][3] - boxes[i][1]) / 2 for i in best)
    return {i for i, b in enumerate(boxes)
            if i not in best and deskewed_centre(b, slope) + (b[3] - b[1]) / 2 <= top}
