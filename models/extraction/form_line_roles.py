"""Generic forms: a role for every line of a form's page (issue 36), read off what the decoder decided.

The decoder already says what most of a page is while it pairs: the data tables' headings and cells
(form_tables), the signature block (forms.signature_block), the keys and values of the pairs it gives, the
titles and section headings, hints and option lists (form_text), and the learned piece roles (form_roles,
or the encoder's tags without them). `line_roles` names it per line, so that the output shows why a line
is or is not in a pair. A piece takes the first role that holds, in this order:

    table_cell / header   a cell of a data table / one of its column headings
    signature             the label or the name/date of a signature-block entry
    label / value         the key / the value of one of the page's pairs
    signature             (in no pair) a label asking for a signature (审核人签字), a blank date (年  月  日)
    heading               a title line (form_pieces.title_lines) or a section heading (一、基本信息)
    hint                  printed help in a field (（由单位填写）, 请勾选)
    check_box             a printed option list (□男 ☑女)
    label                 a piece ending in a colon (a label left unanswered)
    label, value, header, text: the strongest of the piece's masses (question, answer, header, other)

A line takes the role of its first piece (the leftmost on it): 姓名：张三 is a "label" line, though its value
stands on it too; a piece printed over several lines gives its role to each of them (a wrapped value's
second line is "value"); a line with no piece (a blank fill ____) takes its own masses' role.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from data.document import Pair
from data.labels import SIGNATURE_KEY
from models.extraction.form_assign import Decoder
from models.extraction.form_pieces import Piece, piece_tags
from models.extraction.form_text import BLANK_DATE, SECTION, is_hint, options

ROLES = ("label", "value", "header", "table_cell", "hint", "check_box", "signature", "heading", "text")
MASS_ROLES = ("label", "value", "header", "text")     # the masses' columns: question, answer, header, other


def line_roles(dec: Decoder, pairs: list[Pair], signed: list[Pair], titles: set[int]) -> list[str]:
    """One of ROLES per line of `dec`'s page, after `dec.pairs()` gave `pairs` and `signed` (its signature
    block) and with `titles` the page's title lines (form_pieces.title_lines)."""
    decided: dict[int, str] = {}          # id(piece) -> its role, the strongest evidence first

    def mark(p: Piece, role: str) -> None:
        for q in _lines_of(p):
            decided.setdefault(id(q), role)

    for t in dec.tables:
        for p in t.head:
            mark(p, "header")
        for p in (p for row in t.rows for cell in row for p in cell):
            mark(p, "table_cell")
    taken = {(tuple(k.box), tuple(v.box)): (k, v) for _, k, v, _ in dec.taken}
    for group, key_role, value_role in ((signed, "signature", "signature"), (pairs, "label", "value")):
        for pair in group:
            kv = taken.get((tuple(pair.key_box or ()), tuple(pair.value_box or ())))
            if kv is not None:
                mark(kv[0], key_role)
                mark(kv[1], value_role)
    first: dict[int, tuple[int, int, str]] = {}    # line -> (start, undecided, role) of its first piece
    for top in dec.pieces:
        for p in _all_pieces(top):
            role = decided.get(id(p))
            entry = (p.start, role is None, role or _own_role(p, dec.masses, titles))
            if p.line not in first or entry[:2] < first[p.line][:2]:
                first[p.line] = entry
    out = []
    for li, line in enumerate(dec.page.lines):
        if li in first:
            out.append(first[li][2])
        else:
            text = line.text.strip()
            out.append(_own_role(Piece(li, 0, len(line.text), text, line.box), dec.masses, titles))
    return out


def _lines_of(p: Piece) -> Iterator[Piece]:
    """`p` and the pieces of its other lines (a label or a value printed over several lines)."""
    yield p
    for q in p.more:
        yield from _lines_of(q)


def _all_pieces(p: Piece) -> Iterator[Piece]:
    """`p`, its other lines' pieces and the text after its colon, each with theirs."""
    yield p
    for q in p.more:
        yield from _all_pieces(q)
    if p.value is not None:
        yield from _all_pieces(p.value)


def _own_role(p: Piece, masses: list[np.ndarray], titles: set[int]) -> str:
    """The role of a piece in no table, signature block or pair: what its text and its masses say."""
    if SIGNATURE_KEY.search(p.text) or ("年" in p.text and BLANK_DATE.match(p.text)):
        return "signature"              # a signature label left unsigned, a blank 年  月  日 to date it
    if p.line in titles or SECTION.match(p.text):
        return "heading"
    if is_hint(p.text):
        return "hint"
    if options(p.text):
        return "check_box"
    if p.colon_key:
        return "label"                  # a colon ends a label, whether or not anything answers it
    t = piece_tags(p, masses)           # zeros where the model saw nothing of it
    return MASS_ROLES[int(np.argmax(t))] if float(np.sum(t)) > 0 else "text"
