"""Generic forms, layer 5: a label printed over two lines, or letter-spaced over two pieces, is one key.

OCR reads a label printed over two lines of one cell (政治 / 面貌, 提交证件 / 情况：) as two lines, and a
letter-spaced label in a narrow cell (姓 | 名) as one line a character. `join_labels` and `join_spaced`
join them into one piece before any key or value is chosen, from where the pieces sit (form_layout.Layout,
the layer below) and what their text says (form_text.py); the decoder (form_evidence.py) runs them under
the rule form_join_labels and tells them what it knows of values and labels as callables, so this file
reads no layer above it.
"""
from __future__ import annotations

import re
from typing import Callable

from models.extraction.form_layout import Layout
from models.extraction.form_pieces import Piece
from models.extraction.form_text import KEY_ENDINGS, SECTION, cjk, is_hint, key_word, options, qualified_label

OPEN_BRACKET = "（(〔【["
CONTINUES = "及和与或的、/（(〔【["  # what a label's second line starts with when it goes on from the first


def _first_of_line(p: Piece, pieces: list[Piece]) -> bool:
    return all(q.start >= p.start for q in pieces if q.line == p.line)


def _alone(p: Piece, pieces: list[Piece]) -> bool:
    return sum(q.line == p.line for q in pieces) == 1


def _touching_below(geo: Layout, a: Piece, pieces: list[Piece]) -> Piece | None:
    """The next line of a label whose OCR box overlaps `a`'s by up to `touch_overlap` of a line height (three
    lines packed into one cell: 法定代 / 表人): under `a`, overlapping it across, starting within a line
    height of its left edge, of the same type size."""
    h, st = geo.line_height(a), geo.st
    near = [p for p in pieces if p is not a and not (p.lines & a.lines) and
            a.box[3] - st.touch_overlap * h <= p.box[1] <= a.box[3] + st.tight_gap * h and
            p.box[1] > a.box[1] + h / 2 and
            min(a.box[2], p.box[2]) > max(a.box[0], p.box[0]) and abs(p.box[0] - a.box[0]) <= h and
            min(geo.line_height(p), h) / max(geo.line_height(p), h) >= st.form_same_size]
    return min(near, key=lambda p: p.box[1]) if near else None


def join_labels(geo: Layout, pieces: list[Piece], is_value: Callable[[Piece], bool],
                is_label_part: Callable[[Piece], bool], key_like: Callable[[Piece], bool] | None = None,
                merged_from: Callable[[Piece, Piece, Piece], None] | None = None) -> list[Piece]:
    """A label printed over two lines of one cell (政治 / 面貌, 提交证件 / 情况：, 申报学院 / （部门）) is one
    key. The second line continues the first when it ends the key with a colon, is a bracketed part of
    it, or when the value beside them stands between the two lines (one cell spanning both), or when the
    page's ruled lines put both in one cell, both tagged more question than answer (`key_like`) and together they
    read as a label or have one value in the next cell (统一社会 / 信用代码, whatever else the model's tags on
    a layout it never saw say: a heading)."""
    out = list(pieces)
    for a in pieces:
        if a.used or a.colon_key or not _alone(a, pieces) or len(a.text) > 8 or any(c.isdigit() for c in a.text) \
                or options(a.text) or is_hint(a.text) or SECTION.match(a.text):
            continue
        part = is_label_part(a)
        if not part and not geo.vrules:
            continue
        below = geo.below(a, [p for p in out if not p.used])
        if below is None or not geo.stacked(a, below):
            below = _touching_below(geo, a, [p for p in out if not p.used])     # OCR boxes of a packed cell
        if below is None or not _first_of_line(below, pieces):
            continue
        b = below
        if len(b.text) > 6 or any(c.isdigit() for c in b.text) or options(b.text) or \
                b.box[2] - b.box[0] > a.box[2] - a.box[0] + geo.line_height(a):
            continue
        whole = re.sub(r"\s+", "", a.text + b.text)
        # one ruled cell holds both, and together they end as labels end or the next cell beside both holds one
        # value (户口所 / 在地 | 山东省南京市); neither tagged an answer (开户银行 / 交通银行, 闫霞 / 请假类型 where the
        # border between two rows is too faint to be found)
        celled = key_like is not None and not b.colon_key and not is_hint(b.text) and key_like(a) and key_like(b) \
            and geo.same_cell(a, b) and \
            (key_word(whole) or whole.endswith(KEY_ENDINGS) or geo.cell_right(a) is geo.cell_right(b) is not None)
        if celled and (a.text.endswith(KEY_ENDINGS) or qualified_label(a.text)) and b.text[0] not in CONTINUES:
            # two rows of a grid whose border between them was not found (a photo): the first reads as a whole
            # label with a value of its own on its row, and so does the second, or it reads as a whole label too
            # (注册资本 | 壹拾万元整 over 联系人 | 王玲飞; 联系人 | 王玲飞 over 工作经历 | far right)
            ra, rb = geo.right_of(a), geo.right_of(b)
            own_a = ra is not None and is_value(ra) and ra is not rb
            celled = not (own_a and ((rb is not None and is_value(rb)) or b.text.endswith(KEY_ENDINGS) or
                                     qualified_label(b.text)))
        if not part and not celled:
            continue
        # a label everybody knows over a line that neither goes on from it nor makes a known label with it is
        # two rows of a packed column, not one label (年龄 / 教育背景, 医师签名 / 病历号, 学号 / 密级：)
        two_rows = qualified_label(a.text) and b.text[0] not in CONTINUES and not qualified_label(whole)
        ends_key = b.colon_key and (b.value is None or is_value(b.value)) and not two_rows
        bracket = b.text[0] in OPEN_BRACKET and not is_hint(b.text)
        # two fragments printed touching in one cell that only together make a label (家庭 / 住址, 紧急联 / 系人,
        # 论文 / 题目, 是否一般 / 纳税人): the first no label on its own, the whole one ending as labels end (the
        # first may end as a label does where the whole is a label everybody knows: 联系 / 电话)
        # (the first no label of its own, not 所在学院 / 专业 of two rows; a four-character second line too
        # where the two make a label everybody knows: 统一社会 / 信用代码,
        # not 就诊科室 / 联系电话, two labels of two rows)
        tight = not b.colon_key and len(a.text) <= geo.st.tight_chars and \
            (len(b.text) <= 3 or (len(b.text) <= geo.st.tight_chars and key_word(whole))) and \
            not qualified_label(a.text) and \
            (not a.text.endswith(KEY_ENDINGS) or key_word(whole)) and \
            (whole.endswith(KEY_ENDINGS) or qualified_label(whole)) and \
            b.box[1] - a.box[3] <= geo.st.tight_gap * geo.line_height(a)
        between = tight
        if not ends_key and not bracket and not b.colon_key and not tight:
            ra, rb = geo.right_of(a), geo.right_of(b)
            union = Piece(a.line, a.start, a.end, a.text + b.text, [min(a.box[0], b.box[0]), a.box[1],
                          max(a.box[2], b.box[2]), b.box[3]], more=[b])
            c = geo.right_of(union) or geo.right_of(union, far=True)    # (a wide row's value may stand far out)
            fa, fb = (ra, rb) if ra is not None or rb is not None else (geo.right_of(a, far=True),
                                                                         geo.right_of(b, far=True))
            h = geo.line_height(a)      # (not each of two rows' own far values: fa, fb)
            between = c is not None and fa in (None, c) and fb in (None, c) and (is_value(c) or options(c.text)) and \
                geo.centre(a) + 0.25 * h < geo.centre(c) < geo.centre(b) - 0.25 * h and not two_rows
            # (two_rows even with the value between them; 经办人 / 签字 and 工作单位 / 及职务 are one label each)
            # ... or the value beside them wraps in step with them (通讯 / 地址 beside its address's two
            # lines): two fragments of at most three characters, the first no label itself (姓名 / 性别,
            # 报销人 / 报销日期 are two rows of a tight table)
            between = between or (ra is not None and rb is not None and ra is not rb and is_value(ra) and
                                   is_value(rb) and len(a.text) <= 3 and len(b.text) <= 3 and
                                   not key_word(a.text) and not a.text.endswith(KEY_ENDINGS) and
                                   geo.stacked(ra, rb, [ra.box[0]]))
        if ends_key or bracket or between or celled:
            if celled and merged_from is not None:
                merged_from(a, a, b)        # judged as the whole label (统一社会 half tagged a heading)
            a.join(b)
            out.remove(b)
    return out


def join_spaced(geo: Layout, pieces: list[Piece], merged_from: Callable[[Piece, Piece, Piece], None]) -> list[Piece]:
    """A letter-spaced label that OCR read as separate lines, one character each (姓 | 名, 工 | 号 in a
    narrow cell): one character, then one or two more within `spaced_gap` line heights on its row, together a
    label everybody knows, is one key. (A spaced label OCR read as one line, 姓  名, is form_text.SPACED.)
    `merged_from(new, a, b)` is told of each join (the decoder gives the new piece the evidence of both)."""
    out = list(pieces)
    for a in pieces:
        if a not in out or len(a.text) != 1 or not cjk(a.text) or a.colon_key or not _alone(a, pieces):
            continue
        b = geo.right_of(a, out)
        if b is None or not 1 <= len(b.text) <= 2 or not cjk(b.text) or not _alone(b, pieces) or \
                b.box[0] - a.box[2] > geo.st.spaced_gap * geo.line_height(a) or not key_word(a.text + b.text):
            continue
        merged = Piece(a.line, a.start, a.end, a.text + b.text, [min(a.box[0], b.box[0]), min(a.box[1], b.box[1]),
                       max(a.box[2], b.box[2]), max(a.box[3], b.box[3])], colon_key=b.colon_key, value=b.value)
        out[out.index(a)] = merged
        out.remove(b)
        merged_from(merged, a, b)
    return out
