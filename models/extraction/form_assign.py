"""Generic forms, decoder layer 3: candidates -> pairs (`Decoder`), and the pairs completed and ordered.

The best candidates are taken first (by the learned scorer where the model directory has one, else by
hand weights), one value per key and one key per value; then a key followed by several values in its
row keeps them all (`row_values`), and a value that wraps takes its other lines (`lead_line`, `wrap`).
`make_pair` turns a key and value into a Pair with its confidence, `reading_order` sorts them as they are
read. The layers below are form_proposals.Proposals (the candidates) and form_evidence.Evidence (what each piece is).
Step rules here (run by `Decoder.pairs` over `Decoder.taken` where on, see forms.py FORM_RULES):
form_row_values (stage form_rows), form_join_values (form_values), form_ocr_min (form_kept). The switch
`cells` (form_cells) is Evidence's, set by its form_setup step where on (form_evidence.py).
"""
from __future__ import annotations

import numpy as np

from data import geometry
from data.document import Pair
from models.extraction.form_layout import continues_value
from models.extraction.form_pieces import Piece, piece_tags
from models.extraction.form_proposals import Proposals
from models.extraction.form_text import (
    bracketed_note,
    is_hint,
    key_word,
    options,
    qualified_label,
    strip_key_hint,
    ticked,
)

# the stages of step rules `Decoder.pairs` runs over the pairs taken, in this order (forms.py FORM_RULES)
PAIR_STAGES = ("form_rows", "form_values", "form_kept")


class Decoder(Proposals):
    """One page's form decoder: evidence, candidates, and the pairs taken from them (`pairs`)."""
    taken: list[tuple[float, Piece, Piece, str]]     # (strength, key, value, where) so far, for PAIR_STAGES

    def ranked(self) -> list[tuple[float, Piece, Piece, str]]:
        """(strength, key, value, where), best first: by the learned scorer where the model directory has
        one (strength: its logit + 1, so a pair's confidence is its probability), else by hand weights."""
        if self.scorer is None:
            return sorted(((c.hand, c.k, c.v, c.where) for c in self.candidates()), key=lambda c: -c[0])
        if self.scorer.mode == "rerank":     # the hand candidates, all kept, ordered by hand + learned logit
            cands = self.candidates()
            z = self.scorer.logits(self.scorer.rows(self.features(cands))) if cands else np.zeros(0)
            self.prob = {(id(c.k), id(c.v)): float(1 / (1 + np.exp(-np.clip(q, -30, 30)))) for q, c in zip(z, cands)}
            return sorted(((c.hand + self.scorer.weight * float(np.clip(q, -5, 5)), c.k, c.v, c.where)
                           for q, c in zip(z, cands)), key=lambda c: -c[0])
        cands = self.candidates(wide=True)
        p = self.scorer.predict(self.scorer.rows(self.features(cands)))
        keep = [(float(np.log(q / (1 - q + 1e-9) + 1e-9)) + 1.0, c.k, c.v, c.where)
                for q, c in zip(p, cands) if q >= self.scorer.threshold]
        return sorted(keep, key=lambda c: -c[0])

    def pairs(self) -> list[Pair]:
        self.taken = []
        for c in self.ranked():
            _, k, v, _ = c
            if k.used or v.used:
                continue
            k.used = v.used = True
            if (id(k), id(v)) in self.prob:
                self.key_prob[id(k)] = self.prob[(id(k), id(v))]
            self.taken.append(c)
        for stage in PAIR_STAGES:     # more values, whole values, the unsure ones dropped
            self.run(stage)
        pairs = [p for p in (self.make_pair(s, k, v) for s, k, v, _ in self.taken if not k.absorbed) if p is not None]
        return reading_order(pairs, self.geo.slope)

    def row_values(self, k: Piece, v: Piece) -> list[Piece]:
        """Further values of `k` along its row (a label followed by several values in a table row, each up to
        form_far_gap line heights from the last: a wide row's cells leave its values far apart):
        unused value pieces that are not key-like, each with evidence of being an answer (a figure,
        answer tags, or the link head linking it to `k`)."""
        out: list[Piece] = []
        last = v
        for _ in range(8):
            n = self.geo.right_of(last, far=True)
            if n is None and self.cells:
                n = self.geo.cell_right(last)                     # the row's next ruled cell, however wide
            # the next ruled cell of a label's row: a cell of its own, answering the label whatever the tags say
            cell = n is not None and self.cells and self.geo.walls(last, n) == 1
            if n is None or n.used or not self.is_value(n, cell=cell) or self.is_label(n) or options(n.text) or \
                    self.ks(n) >= self.st.form_key_min + self.st.form_key_margin / 2:
                break
            tags = piece_tags(n, self.masses)
            link = self.link((k.line, k.start), (n.line, n.start))
            if not (cell or any(ch.isdigit() for ch in n.text) or tags[1] > tags[0] + self.st.form_tag_margin
                    or (link is not None and link > self.st.form_row_link)):
                break
            n.used = True
            # a piece this close is the same value cut by OCR (1983/6/ | 8); two figures are two cells
            if n.box[0] - last.box[2] <= self.st.form_row_join * self.geo.line_height(last) and \
                    not (last.text[-1:].isdigit() and n.text[:1].isdigit()):
                last.join(n, _sep(last.text, n.text))
            else:
                out.append(n)
                last = n
        return out if len(out) <= self.st.form_row_max else []     # more: a row of a data table

    def lead_line(self, k: Piece, v: Piece) -> Piece:
        """The value with its first line, where a value of two lines stands centred on its label's row in
        one cell (郑州市金水区东风路95 / 号A座2208室 beside 家庭住址) and layout found the second: a free value
        line right of the key, right above `v` as its previous line, reaching into the key's row and
        with no other piece between the key and it (one further left, the empty field before the key's,
        is no rival)."""
        if v.used is False or v.more or v.box[0] < k.box[2]:
            return v
        for u in self.pieces:
            if u.used or u.absorbed or u is v or u is k or u.colon_key or u.box[0] < k.box[2] or \
                    u.box[3] <= k.box[1] or u.box[1] >= v.box[1]:
                continue
            left = self.geo.left_of(u)
            rival = left is not None and left is not k and left.box[0] > k.box[0]
            if rival or not continues_value(self.geo, u, v, None) or not self.is_value(u, k) or \
                    self.is_label(u) or options(u.text) or self.ks(u) >= self.st.form_key_min:
                continue
            u.used = True
            u.join(v, _sep(u.text, v.text))
            return u
        return v

    def wrap(self, k: Piece, v: Piece) -> None:
        """A value that runs over several lines takes its next lines: right under it, same type size,
        starting where it starts, no key or label, no one else's value; or any next line in the same ruled
        cell (the cell outweighs spacing and a hint under the label beside it)."""
        for _ in range(4):
            # a line read as a weak colon key with its own value (研究：基于...) may still be this value's next
            free = [p for p in self.pieces if p.line not in v.lines and not p.absorbed and
                    (not p.used or (p.colon_key and p.value is not None and p.value.used))]
            w = self.geo.below(v, free)
            if w is None:
                return
            if w.colon_key:             # 研究：基于...调查数据, a title's next line: a colon inside the value
                if w.value is None or key_word(w.text) or self.own.get(id(w), 0.0) >= self.st.form_key_min + \
                        self.st.form_key_margin or not self.is_value(w.value):
                    return
                whole = Piece(w.line, w.start, w.value.end, self.page.lines[w.line].text[w.start:w.value.end].strip(),
                              [w.box[0], min(w.box[1], w.value.box[1]), w.value.box[2], max(w.box[3], w.value.box[3])])
                if not continues_value(self.geo, v, whole, k):
                    return
                w.used = w.value.used = w.absorbed = True
                v.join(whole, _sep(v.text, whole.text))
                continue
            # one ruled cell holding both: the cell says they are one value, however tight or loose the lines
            cell = self.cells and self.geo.same_cell(v, w) and not bracketed_note(w.text)
            if not cell and not continues_value(self.geo, v, w, k):
                return
            left = self.geo.left_of(w)
            if left is not None and left is not k and left not in k.more and not (cell and is_hint(left.text)):
                return                  # the next row's value: its own label stands left of it (not a hint
                                        # under this value's label, in the label's cell: 经营范围 / (必填))
            if not self.is_value(w, k) or self.is_label(w) or qualified_label(w.text) or options(w.text) or \
                    self.ks(w) >= self.st.form_key_min + self.st.form_key_margin:
                return
            v.join(w, _sep(v.text, w.text))

    def ocr(self, k: Piece, v: Piece) -> float:
        """How surely OCR read the pair: its least sure line's score."""
        return min(self.page.lines[i].score for i in k.lines | v.lines)

    def make_pair(self, strength: float, k: Piece, v: Piece) -> Pair | None:
        ocr = self.ocr(k, v)
        if len(k.text) < 2:             # a misread or cut-off key (人, 门) makes a wrong pair
            return None
        # the reranking scorer's probability where it ranked the pair (fitted on true and false candidates, so
        # it is a probability); else the strength squashed (hand weights saturate it: a rank, not a chance)
        conf = self.key_prob.get(id(k), 1 / (1 + np.exp(-(strength - 1.0))))
        return Pair(key=strip_key_hint(k.text), value=ticked(v.text) or v.text, key_box=k.box, value_box=v.box,
                    score=round(float(conf * ocr), 4), page=self.page.index)


# --- the step rules of this layer (forms.py FORM_RULES), each over the Decoder's pairs taken ------------
def add_row_values(dec: Decoder) -> None:
    """form_row_values: a key followed by several values in its row keeps them all, one pair each, each
    right after the key's first (`Decoder.row_values`)."""
    out: list[tuple[float, Piece, Piece, str]] = []
    for strength, k, v, where in dec.taken:
        out.append((strength, k, v, where))
        if where in ("colon", "right"):
            out += [(strength, k, w, "row") for w in dec.row_values(k, v)]
    dec.taken = out


def join_value_lines(dec: Decoder) -> None:
    """form_join_values: a value takes its first line where layout found its second (`Decoder.lead_line`),
    and a value that wraps its next lines (`Decoder.wrap`)."""
    dec.taken = [(s, k, dec.lead_line(k, v), where) for s, k, v, where in dec.taken]
    for _, k, v, _ in dec.taken:
        if not k.absorbed:
            dec.wrap(k, v)


def ocr_floor(dec: Decoder) -> None:
    """form_ocr_min: no pair from a line OCR read unsurely (below DecodeSettings.form_ocr_min)."""
    dec.taken = [c for c in dec.taken if not dec.ocr(c[1], c[2]) < dec.st.form_ocr_min]


def reading_order(pairs: list[Pair], slope: float = 0.0) -> list[Pair]:
    """Pairs row by row, top to bottom, and left to right within a row (by their keys' boxes, deskewed):
    two pairs of one printed row (开始日期 | 结束日期) come in the order they are read, however a tilt or
    a taller box puts one key's top edge above the other's. Pairs without a key box come first."""
    boxed = [p for p in pairs if p.key_box]
    boxes = [p.key_box for p in boxed if p.key_box]
    if len(boxed) < 2:
        return [p for p in pairs if not p.key_box] + boxed
    heights = sorted(b[3] - b[1] for b in boxes)
    rows = geometry.cluster_rows([(str(i), b) for i, b in enumerate(boxes)], heights[len(heights) // 2], slope)
    return [p for p in pairs if not p.key_box] + [boxed[i] for row in rows for i in row]


def _sep(a: str, b: str) -> str:
    """What joins two pieces of one value: a space between two Latin words, else nothing (Chinese text,
    figures and their separators run on)."""
    return " " if a[-1:].isascii() and a[-1:].isalpha() and b[:1].isascii() and b[:1].isalpha() else ""
