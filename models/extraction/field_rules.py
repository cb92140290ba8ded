"""The rules over a page's schema-field candidates, in the order models/extraction/rules.py runs them.

Each takes the page context: `ctx.header` holds the candidates for the schema's fields until
`choose_fields` turns the best candidate per field into a Field; the rules after it complete chosen
fields from the page's layout.
"""
from __future__ import annotations

import re

from data import geometry
from data.labels import COLONS
from data.normalize import normalize_amount, normalize_value, to_halfwidth
from models.extraction.base import (
    CODE_TYPES,
    TYPE_SHAPES,
    PageContext,
    Span,
    clean,
    line_of,
    line_starts,
    plausible,
)
from models.extraction.doctype import nearest_title
from models.extraction.fields import (
    credit_code_repair,
    grow_to_run,
    is_key_text,
    rekey_by_phrase,
    rekey_by_row,
    strip_key_phrase,
    to_segment_end,
    trim_to_type,
    whole_line,
)
from models.extraction.text_fields import join_bracket_below, join_bracket_tail, through_colon


def field_candidates(ctx: PageContext) -> None:
    """The model's spans of fields the schema has."""
    ctx.header = [s for s in ctx.spans if s.key in ctx.specs]


def rekey_after_key_phrase(ctx: PageContext) -> None:
    """A value after a colon whose key text is some fields' key phrase takes one of those fields."""
    ctx.header = [rekey_by_phrase(s, ctx.text(s), ctx.phrases, ctx.settings) for s in ctx.header]


def rekey_by_row_key(ctx: PageContext) -> None:
    """A value alone on its line takes a field named by the key line left of it on its row."""
    ctx.header = [rekey_by_row(s, ctx.page, ctx.phrases, ctx.settings) for s in ctx.header]


def drop_key_text(ctx: PageContext) -> None:
    """A candidate that lies inside a key phrase (or is a piece of one OCR cut) is no value."""
    ctx.header = [s for s in ctx.header if not is_key_text(s, ctx.text(s), ctx.every_phrase, ctx.settings)]


def strip_own_key(ctx: PageContext) -> None:
    """A value that begins with its own key phrase starts after it."""
    ctx.header = [strip_key_phrase(s, ctx.text(s), ctx.phrases.get(s.key, [])) for s in ctx.header]


def grow_code_run(ctx: PageContext) -> None:
    """A code the model tagged short of its run of letters and digits is the whole run, when that reads as the type."""
    ctx.header = [grow_to_run(s, ctx.specs[s.key], ctx.text(s)) for s in ctx.header]


def fit_to_type(ctx: PageContext) -> None:
    """A value that does not read as its type grows to the whole value around it, or shrinks to it."""
    ctx.header = [trim_to_type(s, ctx.specs[s.key], ctx.text(s)) for s in ctx.header]


def text_to_segment_end(ctx: PageContext) -> None:
    """Free text after its own key phrase runs to the end of its colon segment."""
    ctx.header = [to_segment_end(s, ctx.text(s), ctx.phrases.get(s.key, []))
                  if ctx.specs[s.key].type == "text" else s for s in ctx.header]


def text_whole_line(ctx: PageContext) -> None:
    """Free text tagged over half of a colon-less line with no other field is the whole line."""
    header = ctx.header
    ctx.header = [whole_line(s, ctx.text(s), header, ctx.every_phrase) if ctx.specs[s.key].type == "text"
                  else s for s in header]


def _weak(s: Span, text: str, share: float, mates: list[Span]) -> bool:
    """A free-text candidate that is a small piece of its colon segment (司 of a line of goods, 上海 of a
    seal's 上海税务局), or that fills the key slot of a "key：value" (纳视人识剧 of 纳视人识剧号：9251...)
    when no other candidate of its field is on its line (合同号：HT0770... is one remark, label and content)."""
    bounds = [-1] + [i for i, ch in enumerate(text) if ch in COLONS] + [len(text)]
    a = max(b for b in bounds if b < s.start)
    b = min(b for b in bounds if b >= s.end)
    seg = re.sub(r"\s+", "", text[a + 1:b])
    body = re.sub(r"\s+", "", text[s.start:s.end])
    key_slot = b < len(text) and bool(text[b + 1:].strip()) and not any(m is not s and m.line == s.line for m in mates)
    return len(body) < share * len(seg) or key_slot


def drop_weak_pieces(ctx: PageContext) -> None:
    """Of a free-text field's candidates, the weak ones (`_weak`: a small piece of its segment, or a key
    slot) give way when the field has a candidate that is neither: a tiny model tags stray characters of
    other lines with a name's field at a higher mean score than the whole name it also tagged."""
    share = ctx.settings.piece_share
    for key in {s.key for s in ctx.header if ctx.specs[s.key].type == "text"}:
        mine = [s for s in ctx.header if s.key == key]
        weak = [s for s in mine if _weak(s, ctx.text(s), share, mine)]
        if weak and len(weak) < len(mine):
            ctx.header = [s for s in ctx.header if not any(s is w for w in weak)]


RUN_CHAR = re.compile(r"[0-9A-Za-z*]")


def amounts_whole(ctx: PageContext) -> None:
    """A money figure is never a piece of a longer run of digits, letters or masks: 1401051951 cut out of
    the passenger's 1401051951****7740 is no ticket price. Such candidates of amount fields leave."""
    def cut(s: Span) -> bool:
        text = ctx.text(s)
        body = text[s.start:s.end]
        a = s.start + len(body) - len(body.lstrip())
        b = s.end - (len(body) - len(body.rstrip()))
        return (a > 0 and RUN_CHAR.match(text[a - 1]) is not None) or \
            (b < len(text) and RUN_CHAR.match(text[b]) is not None)
    ctx.header = [s for s in ctx.header if ctx.specs[s.key].type != "amount" or not cut(s)]


def prefer_plausible(ctx: PageContext) -> None:
    """Of a typed field's candidates (a code, a tax ID, a date, an amount), those that do not read as the
    type give way when one does: 103 of the cipher area tagged as the seller's tax ID at 0.48 loses to
    916101139A151A634F after 纳税人识别号 at 0.41. The validator's agreement outranks the model's score."""
    for key in {s.key for s in ctx.header if ctx.specs[s.key].type != "text"}:
        spec = ctx.specs[key]
        mine = [s for s in ctx.header if s.key == key]
        bad = [s for s in mine if not plausible(spec, ctx.text(s)[s.start:s.end])]
        if bad and len(bad) < len(mine):
            ctx.header = [s for s in ctx.header if not any(s is b for b in bad)]


def choose_fields(ctx: PageContext) -> None:
    """Per field the most confident candidate that holds any text."""
    for s in sorted(ctx.header, key=lambda s: -s.score):
        if s.key not in ctx.doc.fields and clean(ctx.text(s)[s.start:s.end]):
            ctx.doc.fields[s.key] = ctx.make_field(s.key, ctx.specs[s.key], s)
            ctx.used.add((s.line, s.start))


def check_char_repair(ctx: PageContext) -> None:
    """A tax ID or credit code read with one character outside the GB 32100 alphabet is the code its
    check character allows (`credit_code_repair`), said in a warning."""
    for key, f in ctx.here().items():
        if ctx.specs[key].type in ("tax_id", "credit_code"):
            fixed = credit_code_repair(f.value)
            if fixed is not None:
                ctx.doc.warnings.append(f"{ctx.specs[key].label} ({key}): read {f.value}, taken as {fixed} by its "
                                        f"check character")
                f.value = fixed


def _overlaps(a: int, b: int, spans: list) -> bool:
    """Whether page-text offsets [a, b) overlap any of `spans` ([start, end] pairs)."""
    return any(t[0] < b and a < t[1] for t in spans)


def fill_by_key_phrase(ctx: PageContext) -> None:
    """A typed field (a code, a date) the model tagged nowhere, printed after a key phrase that names it
    alone (校验码：2939..., 发票号码：4836...): the value after that colon, when it reads as the field's type
    and pattern and no chosen value holds it; an amount also right after its key phrase with no colon
    (¥443.5元, 票价 66.50). Exactly one such value on the page, else nothing is filled."""
    offsets = line_starts(ctx.page)
    taken = [f.span for f in ctx.here().values() if f.span]
    for key, spec in ctx.specs.items():
        if key in ctx.doc.fields or spec.type not in CODE_TYPES + ("date", "amount"):
            continue
        own = [ph for ph in ctx.phrases.get(key, []) if ph and ctx.owners[ph] == {key}]
        found: dict[str, Span] = {}
        for li, ln in enumerate(ctx.page.lines):
            if spec.type == "amount":
                for ph in own:          # ￥ and ¥, （ and ( are one character here (to_halfwidth keeps offsets)
                    for m in re.finditer(re.escape(to_halfwidth(ph)) + rf"[\s{COLONS}]*¥?\s*(" +
                                         TYPE_SHAPES["amount"] + ")", to_halfwidth(ln.text)):
                        a, b = m.start(1), m.end(1)
                        if plausible(spec, m.group(1)) and not _overlaps(offsets[li] + a, offsets[li] + b, taken):
                            found.setdefault(normalize_amount(m.group(1)) or m.group(1), Span(key, li, a, b, 0.5))
                continue
            for m in re.finditer(f"[{COLONS}]", ln.text):
                head = re.sub(r"\s+", "", ln.text[:m.start()])
                if not any(head.endswith(ph) for ph in own):
                    continue
                shape = r"[0-9A-Za-z]+" if spec.type in CODE_TYPES else TYPE_SHAPES["date"]
                v = re.match(r"\s*(" + shape + ")", ln.text[m.end():])
                if v is None or not plausible(spec, v.group(1)):
                    continue
                a, b = m.end() + v.start(1), m.end() + v.end(1)
                if not _overlaps(offsets[li] + a, offsets[li] + b, taken):
                    found.setdefault(clean(v.group(1)), Span(key, li, a, b, 0.5))
        if len(found) == 1:
            ctx.doc.fields[key] = ctx.make_field(key, spec, next(iter(found.values())))


def fill_by_pattern(ctx: PageContext) -> None:
    """A field whose schema gives its pattern (a departure time HH:MM, a seat 06车017号) and which the
    model left empty, or filled with a value its pattern refuses: the one run on the page that the
    pattern matches whole (not inside a longer run of letters and digits), reads as the field's type,
    and is not inside another chosen field of that type (a departure date's span may hold the time
    printed after it). Two different such runs on the page, and nothing is filled."""
    offsets = line_starts(ctx.page)
    for key, spec in ctx.specs.items():
        f = ctx.doc.fields.get(key)
        if not spec.pattern or (f is not None and (f.page != ctx.page.index or
                                                   re.fullmatch(spec.pattern, str(f.value)) is not None)):
            continue
        others = [g.span for k, g in ctx.here().items() if k != key and g.span and
                  ctx.specs[k].type == spec.type]
        found: dict[str, Span] = {}
        for li, ln in enumerate(ctx.page.lines):
            for m in re.finditer(rf"(?<![0-9A-Za-z])(?:{spec.pattern})(?![0-9A-Za-z])", ln.text):
                if _overlaps(offsets[li] + m.start(), offsets[li] + m.end(), others) or \
                        not plausible(spec, m.group(0)):
                    continue
                found.setdefault(m.group(0), Span(key, li, m.start(), m.end(), 0.5))
        if len(found) == 1:
            ctx.doc.fields[key] = ctx.make_field(key, spec, next(iter(found.values())))


def fields_by_label_cells(ctx: PageContext) -> None:
    """A label printed as a line of its own that is exactly one field's key phrase (成立日期, 住所), with a
    line right of it on its row within `label_cell_gap` line heights (a licence's label | value cells): that
    line is the field's value, when it reads as the field's type and is no label itself, and the model
    chose for the field nothing, a value that does not read as its type, or a line other than that cell
    (the scope's first line, or a line of the scope under its label, taken as the address), or, for free
    text, under half of the cell's line (程 of a line of the scope). A field whose own label was not read
    loses a value that stands in another label's cell (the scope's first line taken as the address under
    an unread 住所). Layout says whose value a cell is where the model's tags, on a layout it never saw,
    say otherwise."""
    page = ctx.page
    label = {li: next(iter(ctx.owners[t])) for li, ln in enumerate(page.lines)
             if len(ctx.owners.get(t := re.sub(rf"[\s{COLONS}]+", "", ln.text), ())) == 1}
    if not label:
        return
    slope = geometry.page_slope([ln.quad for ln in page.lines])
    boxes = [ln.box for ln in page.lines]
    value: dict[str, int] = {}
    for li, key in label.items():
        others = [j for j in range(len(boxes)) if j != li]
        i = geometry.right_of(boxes[li], [boxes[j] for j in others], slope, ctx.settings.label_cell_gap)
        if i is None or others[i] in label or key in value:
            continue
        text = page.lines[others[i]].text
        if any(ph and re.sub(r"\s+", "", text).startswith(ph) for ph in ctx.every_phrase) or \
                not plausible(ctx.specs[key], clean(text)):
            continue
        value[key] = others[i]
    if not value:
        return
    offsets = line_starts(page)
    theirs = {j: k for k, j in value.items()}
    for key, vj in value.items():
        spec, f = ctx.specs[key], ctx.doc.fields.get(key)
        if f is not None:
            if f.page != page.index or not f.span:
                continue
            at = line_of(offsets, f.span[0])
            whole = len(re.sub(r"\s+", "", page.lines[at].text))
            piece = spec.type == "text" and 2 * len(re.sub(r"\s+", "", f.raw)) < whole    # 程 of a line
            if plausible(spec, f.raw) and at == vj and not piece:
                continue                # the model's value reads as the type and stands in its label's cell
        text = page.lines[vj].text
        start = len(text) - len(text.lstrip())
        ctx.doc.fields[key] = ctx.make_field(key, spec, Span(key, vj, start, len(text.rstrip()), 0.5))
    for key, f in list(ctx.here().items()):     # a field whose own label is not read keeps no other's value
        if key not in value and f.span and theirs.get(line_of(offsets, f.span[0]), key) != key:
            del ctx.doc.fields[key]


def _text_fields(ctx: PageContext) -> list:
    # line indices and text offsets (span) of a field refer to the page it was read on: a field of an
    # earlier page is never completed from this page's lines
    return [f for key, f in ctx.here().items() if ctx.specs[key].type == "text"]


def bracket_below(ctx: PageContext) -> None:
    """A name's bracketed part (（朝阳区店）) OCR read as a line right of it or below it is appended."""
    lines = {ln for ln, _ in ctx.used}
    for f in _text_fields(ctx):
        join_bracket_below(f, ctx.page, lines, ctx.settings)


def bracket_head(ctx: PageContext) -> None:
    """A value that starts with a bracket takes the head OCR read as a line left of it or above it."""
    lines = {ln for ln, _ in ctx.used}
    for f in _text_fields(ctx):
        join_bracket_tail(f, ctx.page, lines, ctx.settings)


_HAN = re.compile(r"[\u4e00-\u9fff]")


def close_bracket(ctx: PageContext) -> None:
    """Free text the model tagged to inside a bracket (瑞联咖啡(西 of 瑞联咖啡 | (西城区店)) runs on to the
    bracket's close when the line it ends on closes it within a few characters, with no colon between: a
    value never ends inside its own bracket."""
    offsets = line_starts(ctx.page)
    for f in _text_fields(ctx):
        if not f.raw or not f.span or sum(f.raw.count(c) for c in "(（") <= sum(f.raw.count(c) for c in ")）"):
            continue
        li = line_of(offsets, f.span[1] - 1)
        line = ctx.page.lines[li]
        m = re.match(r"[^（()）:：]{0,12}[)）]", line.text[f.span[1] - offsets[li]:])
        if m is None:
            continue
        f.raw += m.group()
        f.value = normalize_value("text", f.raw) or f.raw
        f.span = [f.span[0], f.span[1] + m.end()]
        if f.box is not None:
            b = line.box
            f.box = [min(f.box[0], b[0]), min(f.box[1], b[1]), max(f.box[2], b[2]), max(f.box[3], b[3])]


def text_to_word_end(ctx: PageContext) -> None:
    """Free text the model tagged short of the end of a word of Chinese characters (孟燕 of 9347  孟燕建)
    runs on to the word's end, when at most `word_end_chars` characters are left of it and no other field
    holds them: OCR separates words with spaces, and a value does not end inside one."""
    offsets = line_starts(ctx.page)
    held = [g.span for g in ctx.here().values() if g.span]
    for f in _text_fields(ctx):
        if not f.raw or not f.span:
            continue
        li = line_of(offsets, f.span[0])
        text = ctx.page.lines[li].text
        a, b = int(f.span[0] - offsets[li]), int(f.span[1] - offsets[li])
        if b > len(text) or b < 1 or not _HAN.fullmatch(text[b - 1]):
            continue
        m = re.match(r"[\u4e00-\u9fff]+", text[b:])
        after = text[b + m.end():b + m.end() + 1] if m else ""
        if m is None or m.end() > ctx.settings.word_end_chars or after not in ("", " ", "\t"):
            continue
        lo, hi = f.span[1], f.span[1] + m.end()
        if any(o[0] < hi and lo < o[1] for o in held if o is not f.span):
            continue
        ctx.doc.fields[f.key] = ctx.make_field(f.key, ctx.specs[f.key], Span(f.key, li, a, b + m.end(), f.score))


def text_through_colon(ctx: PageContext) -> None:
    """Free text that is itself "label：content" runs through its colon to the line's end."""
    here = ctx.here()
    for f in _text_fields(ctx):
        through_colon(f, ctx.page, [g.span for g in here.values() if g is not f and g.span], ctx.settings)


def title_nearest(ctx: PageContext) -> None:
    """A title OCR misread in a character or two (a bracket dropped, a look-alike) is the nearest known title."""
    if "title" in ctx.here() and getattr(ctx.schema, "title_phrases", None):
        f = ctx.doc.fields["title"]
        f.value = nearest_title(f.value, ctx.schema.title_phrases, ctx.settings)
