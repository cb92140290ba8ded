"""Generic forms: the tables inside a form (学习经历: 起止时间 | 学校 | 专业 over a row per school).

A row of column headings with rows of entries under it is a table, not pairs: 姓名 is not the key of
出生年月 beside it, and a name in the second row is nobody's value. `find_tables` finds them from layout
and two tests the form decoder gives it (forms.py): `is_head`, a piece that could head a column (a
label or what the model calls a header), and `is_cell`, a piece that reads as an entry (not label-like):

- a row of at least TABLE_COLUMNS pieces, all headings: short words without digits (a column is named, not
  answered), or what the model calls a label or header; not a row where labels and entries take turns over
  a row that does the same (法定代表人 | 肖娜 | 注册资本 | 壹佰万元整 over 邮政编码 | 405872 | ...: a grid of
  label-value pairs, however short their values);
- each heading owns a column: up to the ruled line between it and the next where the page has one, else
  to the middle of the white between them; a piece stands in the column it overlaps most;
- then the rows under it, each standing under at least TABLE_COLUMNS distinct headings (fewer where the
  table has fewer columns), more entries (not clearly labels: TABLE_CELL_KEY) than labels, or so past its
  first column (a table naming its rows: 学院意见 | 同意 | 韩怡 | 日期, the row name and an answer read as
  labels) where labels and entries do not take turns, each no further below the last than TABLE_ROW_GAP
  line heights; after the first, a record may leave cells blank down to two columns if all it holds are
  entries; a row holding a heading's name is none (labels printed above their values, row after row, with
  a label row lost to OCR);
- a row of fewer columns right under the last one, each piece under a column that row filled with a line
  as wide as the column, is the next printed line of those cells (an address or a school name wrapped in
  its cell), not a row of its own;
- at least TABLE_ROWS such rows. A heading row over a single row of answers is indistinguishable from
  labels printed above their values, and stays fields; unless ruled rows follow that are blank or name
  their row only (`_ruled_rows`: 交通费 | | , a printed 序号), or, where the heading row fills its ruled
  cells and their walls run on through the row, name it with anything and hold entries in other columns
  (身份证复印件 | | , 交通费 | 120 | ): a row of column names over them (after records or none) is a table (a
  blank member list, an expense list), those rows are its records, and its names are nobody's key or value
  (姓名 -> 出生年月 was read as a pair).

Its headings are no keys and its cells nobody's value (forms.py vetoes them), and it comes out as a
`data.document.Table`: the headings name the columns, each row a record with one cell per column (blank
where nothing stands under a heading), each cell with the union box of its pieces. The table's score is
the mean OCR confidence of its lines: how sure the reading is, not how sure the table is a table.
Rule name: form_data_tables (models/extraction/rules.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from data.document import Cell, Page, Table, union_box
from models.extraction.form_layout import Layout
from models.extraction.form_pieces import Piece

TABLE_COLUMNS = 3     # a data table in a form: this many column headings in a row ...
TABLE_ROWS = 2        # ... over this many rows of entries
TABLE_ROW_GAP = 2.5   # x line height: a record row starts at most this far under the one above (ruled rows
                      # of 2.8x the type size leave 1.8 line heights between their text)
TABLE_CELL_KEY = 0.5  # an entry is what is not clearly a label: a key score below this (names, posts and places
                      # score about 0, a known label 1.5 and more; forms.py)
TABLE_WRAP_FILL = 0.6  # ... and only after a line that fills this share of its column's width
COLUMN_NAME_MAX = 8   # characters of a column name (学校或工作单位 7, 工作单位及职务 7)
TABLE_WRAP_GAP = 0.45  # x line height: a cell's next printed line stands this close under its first (rows of
                       # an unruled table stand 0.5 line heights apart and more)


@dataclass
class FoundTable:
    """A table as pieces: its headings left to right, and per record the pieces under each heading."""
    head: list[Piece]
    h: float                               # the headings' line height: the unit of every distance
    spans: list[tuple[float, float]]       # each heading's column, left to right (`column_spans`)
    rows: list[list[list[Piece]]] = field(default_factory=list)
    walled: bool = False                   # every column edge is a ruled line: each heading fills its own cell

    def column(self, p: Piece) -> int | None:
        """The column `p` overlaps most (a left-aligned entry wider than its heading, a centred one narrower),
        None where it overlaps none by half its width."""
        over = [min(p.box[2], b) - max(p.box[0], a) for a, b in self.spans]
        best = max(range(len(self.spans)), key=lambda i: over[i])
        return best if over[best] >= (p.box[2] - p.box[0]) / 2 else None

    def ids(self) -> set[int]:
        return {id(p) for p in self.head} | {id(p) for row in self.rows for cell in row for p in cell}

    def table(self, page: Page) -> Table:
        """The `Table` of the document model (page number, column names, one Cell per column and record)."""
        lines = [p for p in self.head] + [p for row in self.rows for cell in row for p in cell]
        scores = [page.lines[i].score for p in lines for i in sorted(p.lines)]
        return Table(columns=[p.text for p in self.head],
                     rows=[[Cell(_cell_text(cell), union_box([p.box for p in cell])) for cell in row]
                           for row in self.rows],
                     column_boxes=[list(p.box) for p in self.head],
                     box=union_box([p.box for p in lines]),
                     score=round(sum(scores) / len(scores), 4) if scores else 1.0,
                     page=page.index)


def _cell_text(cell: list[Piece]) -> str:
    """A cell's pieces in reading order: top to bottom, then left to right; Chinese joins without a space,
    Latin and digits with one (2007.09 -2009.06 is one period, Zhang San two words)."""
    out = ""
    for p in sorted(cell, key=lambda p: (round(p.box[1] / max(1.0, p.box[3] - p.box[1])), p.box[0])):
        if out and out[-1].isascii() and out[-1].isalnum() and p.text[:1].isascii() and p.text[:1].isalnum():
            out += " "
        out += p.text
    return out


def column_name(text: str) -> bool:
    """Text that can name a column: 2 to COLUMN_NAME_MAX Chinese characters (a bracket or 、/ inside allowed),
    no digit, no sentence punctuation."""
    core = re.sub(r"[（）()、/]", "", text)
    return 2 <= len(core) <= COLUMN_NAME_MAX and all("\u4e00" <= ch <= "\u9fff" for ch in core)


def find_tables(geo: Layout, is_head: Callable[[Piece], bool], is_cell: Callable[[Piece], bool]) -> list[FoundTable]:
    """The data tables among `geo.pieces`, top to bottom (see the module docstring)."""
    out: list[FoundTable] = []
    seen: set[int] = set()
    inside: set[int] = set()
    for first in sorted(geo.pieces, key=lambda p: (p.box[1], p.box[0])):
        if id(first) in seen or id(first) in inside:
            continue
        head = geo.row(first)
        seen.update(id(p) for p in head)
        if len(head) < TABLE_COLUMNS or not all(is_head(p) for p in head):
            continue
        turns = _alternates([is_cell(p) for p in head])
        found = _records(geo, head, is_cell)
        if turns and found.rows and _alternates([bool(cell) and all(map(is_cell, cell)) for cell in found.rows[0]]):
            continue                    # label | value rows, one under the other: a grid of fields
        ruled = _ruled_rows(geo, found, is_cell) if all(column_name(p.text) for p in head) and not turns else None
        if len(found.rows) < TABLE_ROWS and ruled is None:
            continue
        found.rows += [row for row in ruled or [] if any(row)]
        out.append(found)
        inside |= found.ids()
    return out


def _alternates(cells: list[bool]) -> bool:
    """Labels and entries take turns along the row (姓名 | 汉族 | 籍贯 | 河南郑州): a row of label-value pairs, no
    row of column names."""
    return len(cells) >= 4 and all(a != b for a, b in zip(cells, cells[1:]))


def _ruled_rows(geo: Layout, found: FoundTable, is_cell: Callable[[Piece], bool]) -> list[list[list[Piece]]] | None:
    """The ruled rows right under the last row of `found` (its headings where it has no record): rows between
    horizontal ruled lines that run across the whole table, at least a line height apart, each as its cells
    ([] where blank); None where no such row follows. A row is one of the table's when it is blank, holds
    entries in its first column only (a printed 序号, a row label read as an entry: 父亲), or, where the
    table's column walls run on through it, anything in its first column (a row label that reads as a label:
    交通费, 身份证复印件, 学院意见) and entries in the others (a ruled list naming its items, a figure against
    some of them). A form printed to be filled in by hand (a blank member list or résumé, an expense list
    naming its items) is a table: its headings name columns, whatever the model thinks of them, and none of
    them answers another; a label under them that does not keep to the first column (工作单位 | 职务 over
    their answers, in the same grid) ends it. The border under the last row may be lost where its text
    touched it: the first ruled row may then start one row further down, with nothing in between."""
    h, spans = found.h, found.spans
    x0, x1 = spans[0][0], spans[-1][1]
    last = found.rows[-1] if found.rows else [[p] for p in found.head]
    bottom = max(p.box[3] for cell in last for p in cell)
    ys = [y for y in geo.rules_across(x0 + h / 2, x1 - h / 2, h) if y >= bottom - h / 4]
    rows: list[list[list[Piece]]] = []
    for top, low in zip(ys, ys[1:]):
        if low - top < h:
            continue                    # a double border
        inside = [p for p in geo.pieces
                  if x0 <= (p.box[0] + p.box[2]) / 2 <= x1 and top < (p.box[1] + p.box[3]) / 2 < low]
        if not rows and top - bottom > h and (top - bottom > low - top + h or any(
                x0 <= (p.box[0] + p.box[2]) / 2 <= x1 and bottom < (p.box[1] + p.box[3]) / 2 < top
                for p in geo.pieces)):
            break                       # (more than one lost border, or a row of text between: not this table's)
        cols = [found.column(p) for p in inside]
        if any(c is None or (c > 0 and not is_cell(p)) for c, p in zip(cols, inside)):
            break
        if any(c or not is_cell(p) for c, p in zip(cols, inside)) and \
                not (found.walled and _walls_through(geo, found, (top + low) / 2)):
            break
        row: list[list[Piece]] = [[] for _ in spans]
        for c, p in zip(cols, inside):
            row[c or 0].append(p)
        rows.append(row)
    return rows or None


def _walls_through(geo: Layout, found: FoundTable, y: float) -> bool:
    """Every inner column edge of a walled table has a vertical ruled line at height `y` (the row's middle):
    the row is divided as the heading row is."""
    h = found.h
    for x in (a for a, _ in found.spans[1:]):
        if not any(y0 - h / 2 <= y <= y1 + h / 2 and
                   abs((x0 + (x1 - x0) * (y - y0) / (y1 - y0) if y1 > y0 else x0) - x) <= h / 2
                   for x0, y0, x1, y1 in geo.vrules):
            return False
    return True


def _records(geo: Layout, head: list[Piece], is_cell: Callable[[Piece], bool]) -> FoundTable:
    """The rows under a heading row that stand under its headings, read until one does not."""
    h = max(geo.line_height(p) for p in head)
    spans = column_spans(geo, head, h)
    walls = geo.walls_across(head[0]) if geo.vrules else []
    found = FoundTable(head, h, spans, walled=all(any(abs(x - w) < 1 for w in walls)
                                                  for x in [spans[0][0]] + [b for _, b in spans]))
    column = found.column
    names = {p.text for p in head}      # a row that names a column again is another label row, no record
    bottom = max(p.box[3] for p in head)
    taken = {id(p) for p in head}       # a row is read once (one of thin boxes, a dash, would come back)
    while True:
        below = [p for p in geo.pieces
                 if id(p) not in taken and bottom - h / 4 <= p.box[1] <= bottom + TABLE_ROW_GAP * h]
        if not below:
            break
        nxt = geo.row(min(below, key=lambda p: p.box[1]))
        under = [(column(p), p) for p in nxt]
        placed = [(c, p) for c, p in under if c is not None]
        cols = {c for c, _ in placed}
        if found.rows and _wraps(found.rows[-1], placed, len(placed) == len(nxt), h, spans):
            for c, p in placed:
                found.rows[-1][c].append(p)
        elif not _record(found, cols, [(c, bool(is_cell(p))) for c, p in placed], len(head)) or \
                names & {p.text for _, p in placed}:
            break
        else:
            row: list[list[Piece]] = [[] for _ in head]
            for c, p in placed:
                row[c].append(p)
            found.rows.append(row)
        taken.update(id(p) for p in nxt)
        # (the pieces in its columns: a caption cell left of the table, as tall as two rows, is no row's bottom)
        bottom = max(bottom, max(p.box[3] for _, p in placed))
    return found


def column_spans(geo: Layout, head: list[Piece], h: float) -> list[tuple[float, float]]:
    """Each heading's column [left, right]: between two headings, the ruled line between them where the page
    has one, else the middle of the white between them; past the outer headings, the table's ruled border or
    as far out as the column's half-gap (at least one line height `h`)."""
    walls = geo.walls_across(head[0]) if geo.vrules else []
    cuts = []
    for a, b in zip(head, head[1:]):
        between = [x for x in walls if a.box[2] - h / 2 <= x <= b.box[0] + h / 2]
        cuts.append(between[0] if len(between) == 1 else (a.box[2] + b.box[0]) / 2)
    first, last = head[0], head[-1]
    out_left = [x for x in walls if x <= first.box[0] + h / 2]
    out_right = [x for x in walls if x >= last.box[2] - h / 2]
    left = out_left[-1] if out_left else first.box[0] - max(h, (cuts[0] - first.box[2]) if cuts else h)
    right = out_right[0] if out_right else last.box[2] + max(h, (last.box[0] - cuts[-1]) if cuts else h)
    edges = [left, *cuts, right]
    return list(zip(edges, edges[1:]))


def _record(found: FoundTable, cols: set[int], cells: list[tuple[int, bool]], columns: int) -> bool:
    """A row under the headings is a record: the first fills at least TABLE_COLUMNS columns (fewer where the
    table has fewer) with more entries than labels (a grid of label | value | label | value rows is none), or
    more entries than labels past its first column, where a table names its rows (学院意见 | 同意 | 韩怡 |
    2022年4月22日: the row label and an answer the model calls labels), unless labels and entries take turns
    along it; a later one may leave cells blank, down to two columns, all of them entries (a label-value row
    after the table, 姓名 | 张三 under two of its columns, is none)."""
    flags = [yes for _, yes in cells]
    if len(cols) >= min(TABLE_COLUMNS, columns):
        rest = [yes for c, yes in cells if c > 0]
        named = bool(cells) and cells[0][0] == 0 and not _alternates(flags) and sum(rest) * 2 > len(rest)
        return sum(flags) * 2 > len(flags) or named
    return bool(found.rows) and len(cols) >= 2 and all(flags)


def _wraps(last: list[list[Piece]], placed: list[tuple[int, Piece]], all_placed: bool, h: float,
           spans: list[tuple[float, float]]) -> bool:
    """`placed` (a row of pieces under their columns) is the next printed line of the cells of the record
    `last`: fewer columns than the record has (a full row of its own is a record), every piece right under a
    cell of that record whose last line fills its column (text wraps where the column ends; the next record
    of a packed table stands as close)."""
    if not placed or not all_placed or len({c for c, _ in placed}) >= sum(1 for cell in last if cell):
        return False
    for c, p in placed:
        if not last[c]:
            return False
        end = max(last[c], key=lambda q: q.box[3])
        if p.box[1] - end.box[3] > TABLE_WRAP_GAP * h or \
                end.box[2] - end.box[0] < TABLE_WRAP_FILL * (spans[c][1] - spans[c][0]):
            return False
    return True
