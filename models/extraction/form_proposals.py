"""Generic forms, decoder layer 2: the candidates layout allows (`Proposals`) and what a scorer weighs.

A key's candidates are the text after its colon, the nearest piece right of it on its row (or far out on
its underline, in the next ruled cell, in the page's value column), the line under it, and the ticked box
of an option group; the evidence (form_evidence.Evidence, the layer below) vetoes the impossible ones.
Each candidate carries a hand-weighted score (layout prior + key score margin + link logit) and, for a
learned scorer (pair_scorer.py), the features `FEATURES` names. Which candidates become pairs is the
layer above (form_assign.Decoder). The switches it reads (`cells`, `below`, `check_groups`, `hints`) are
Evidence's, set by the form_setup steps left on (form_evidence.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.extraction.form_evidence import Evidence
from models.extraction.form_layout import option_group
from models.extraction.form_pieces import Piece, piece_tags
from models.extraction.form_text import (
    KEY_ENDINGS,
    SENTENCE,
    char_share,
    is_hint,
    key_word,
    options,
    qualified_label,
    ticked,
)

# the features `Proposals.features` computes, in the order a new scorer is trained on
FEATURES = (
    "where_colon", "where_right", "where_far", "where_below", "where_tick", "dx", "dy", "left_dx", "size", "dist",
    "dist_vs_key", "dist_vs_value", "link", "has_link", "link_vs_key", "link_vs_value", "hand", "hand_vs_key",
    "hand_vs_value", "n_key", "n_value", "ks_key", "ks_value", "margin", "key_colon", "key_more", "value_more",
    "key_len", "value_len", "key_digits", "value_digits", "value_latin", "key_bracket", "value_bracket",
    "value_ticked", "value_options", "key_word", "value_word", "key_qualified", "value_qualified", "key_ending",
    "value_ending", "value_sentence", "key_first", "key_q", "key_a", "key_h", "key_o", "value_q", "value_a",
    "value_h", "value_o", "key_furniture", "value_furniture", "ocr", "ruled", "ruled_between", "cell_next",
)


@dataclass
class Cand:
    """One link layout allows: key, value, where the value stands, the hand-weighted score."""
    k: Piece
    v: Piece
    where: str                   # colon, right, below
    hand: float
    far: bool = False            # right, far out on the key's underline
    tick: bool = False           # the ticked option of a check-box group



class Proposals(Evidence):
    """The evidence of a page with the candidates it allows; the decoder's second layer."""

    def candidates(self, wide: bool = False) -> list[Cand]:
        """Every link layout allows, with its hand-weighted score. `wide` (a learned scorer decides):
        keys and values the key-score margin would drop are proposed too; vetoes stay."""
        key_min = self.st.form_key_min - (self.st.wide_slack if wide else 0.0)
        margin_min = self.st.form_key_margin - (self.st.wide_slack if wide else 0.0)
        self.soft = wide
        try:
            return self._candidates(key_min, margin_min)
        finally:
            self.soft = False

    def _candidates(self, key_min: float, margin_min: float) -> list[Cand]:
        out: list[Cand] = []
        keyish = [k for k in self.pieces if self.can_key(k, key_min, grid=True)]
        self.column = self.geo.column_values(keyish)
        for k in self.pieces:
            if not self.can_key(k, key_min):
                continue
            if k.colon_key and k.value is not None:          # 姓名：张三 on one line
                if self.is_value(k.value, k) and not self.options_row(k.value):
                    out.append(Cand(k, k.value, "colon", 10.0 + self.link_term(k, k.value)))
                continue
            right = self.geo.right_of(k)
            far = False
            if right is None and (k.colon_key or qualified_label(k.text)) and self.geo.first_in_row(k):
                right = self.geo.right_of(k, far=True)            # a cover's value far out on its underline
                if right is not None and self.geo.past_a_key(k, right, keyish):
                    right = None                                  # another label's value
                far = right is not None
            if right is None and self.cells:
                right = self.geo.cell_right(k)                    # the next cell of a ruled grid, however wide
                far = right is not None
            if right is None:
                right = self.column.get(id(k))                    # a wide value cell of the page's grid
                far = right is not None
            looks: list[tuple[str, Piece | None]] = [("right", right)]
            if len(k.text) <= self.st.form_long_key and self.below:
                looks.append(("below", self.geo.below(k)))
            for where, v in looks:
                if v is None:
                    continue
                if where == "right" and self.check_groups:
                    group, tick = option_group(self.geo, v, self.bare_first)
                    if group:                            # the answer is the ticked box, or there is none
                        if tick is not None:
                            out.append(Cand(k, tick, where, 5.0 + self.link_term(k, tick), tick=True))
                        break
                if where == "right" and self.hints and is_hint(v.text):
                    break                                # the field's own help text: it is empty
                if not self.is_value(v, k) or (where == "right" and self.options_row(v)) or self.is_label(v):
                    continue
                margin = self.ks(k) - self.ks(v)
                if margin >= margin_min:
                    prior = 0.5 if where == "right" else 0.0
                    out.append(Cand(k, v, where, min(margin, 5.0) + prior + self.link_term(k, v),
                                    far=far and where == "right"))
        return out

    def features(self, cands: list[Cand]) -> list[dict[str, float]]:
        """What a learned scorer weighs for each candidate (models/extraction/pair_scorer.py): geometry in
        line heights, the text of key and value, the model's tags and link logit, and how the candidate
        ranks among the other candidates of its key and of its value."""
        raw = [self.link((c.k.line, c.k.start), (c.v.line, c.v.start)) for c in cands]
        links = [float(np.clip(r, -20, 20)) if r is not None else 0.0 for r in raw]
        by_key: dict[int, list[int]] = {}
        by_val: dict[int, list[int]] = {}
        for i, c in enumerate(cands):
            by_key.setdefault(id(c.k), []).append(i)
            by_val.setdefault(id(c.v), []).append(i)
        dist = []
        for c in cands:
            h = max(1.0, self.geo.line_height(c.k))
            dist.append(float(np.hypot(max(0.0, c.v.box[0] - c.k.box[2]), self.geo.centre(c.v) - self.geo.centre(c.k))
                              / h))
        out = []
        for i, c in enumerate(cands):
            k, v = c.k, c.v
            h = max(1.0, self.geo.line_height(k))
            kt, vt = piece_tags(k, self.masses), piece_tags(v, self.masses)
            ks, vs = self.ks(k), (0.0 if c.tick else self.own.get(id(v), 0.0))
            ki, vi = by_key[id(k)], by_val[id(v)]
            ocr = min(self.page.lines[li].score for li in k.lines | v.lines)
            # ruled lines crossed from key to value (models/ocr/rulings.py): a grid's cell borders
            walls = (self.geo.floors(k, v) if c.where == "below" else
                     0 if c.where == "colon" else (self.geo.walls(k, v) or 0))
            f = {
                "where_colon": float(c.where == "colon"), "where_right": float(c.where == "right" and not c.far),
                "where_far": float(c.far), "where_below": float(c.where == "below"), "where_tick": float(c.tick),
                "dx": float(np.clip((v.box[0] - k.box[2]) / h, -5, 20)),
                "dy": float(np.clip((self.geo.centre(v) - self.geo.centre(k)) / h, -5, 5)),
                "left_dx": float(np.clip((v.box[0] - k.box[0]) / h, -5, 30)),
                "size": float(np.clip(self.geo.line_height(v) / h, 0, 3)),
                "dist": float(np.clip(dist[i], 0, 30)),
                "dist_vs_key": float(np.clip(dist[i] - min(dist[j] for j in ki), 0, 30)),
                "dist_vs_value": float(np.clip(dist[i] - min(dist[j] for j in vi), 0, 30)),
                "link": links[i] / 4.0, "has_link": float(raw[i] is not None),
                "link_vs_key": (links[i] - max(links[j] for j in ki)) / 4.0,
                "link_vs_value": (links[i] - max(links[j] for j in vi)) / 4.0,
                "hand": float(np.clip(c.hand, -5, 12)) / 5.0,
                "hand_vs_key": float(np.clip(c.hand - max(cands[j].hand for j in ki), -10, 0)) / 5.0,
                "hand_vs_value": float(np.clip(c.hand - max(cands[j].hand for j in vi), -10, 0)) / 5.0,
                "n_key": float(len(ki)), "n_value": float(len(vi)),
                "ks_key": float(np.clip(ks, -3, 3)) if not k.colon_key else 3.0, "ks_value": vs,
                "margin": float(np.clip((ks if not k.colon_key else 3.0) - vs, -6, 6)),
                "key_colon": float(k.colon_key), "key_more": float(bool(k.more)), "value_more": float(bool(v.more)),
                "key_len": min(len(k.text), 20) / 10, "value_len": min(len(v.text), 30) / 10,
                "key_digits": char_share(k.text, str.isdigit), "value_digits": char_share(v.text, str.isdigit),
                "value_latin": char_share(v.text, lambda ch: ch.isascii() and ch.isalpha()),
                "key_bracket": float(any(ch in "（(" for ch in k.text)),
                "value_bracket": float(any(ch in "（(" for ch in v.text)),
                "value_ticked": float(ticked(v.text) is not None), "value_options": float(options(v.text)),
                "key_word": float(key_word(k.text)), "value_word": float(key_word(v.text)),
                "key_qualified": float(qualified_label(k.text)), "value_qualified": float(qualified_label(v.text)),
                "key_ending": float(k.text.endswith(KEY_ENDINGS)), "value_ending": float(v.text.endswith(KEY_ENDINGS)),
                "value_sentence": float(SENTENCE.search(v.text) is not None),
                "key_first": float(self.geo.first_in_row(k)),
                "key_q": float(kt[0]), "key_a": float(kt[1]), "key_h": float(kt[2]), "key_o": float(kt[3]),
                "value_q": float(vt[0]), "value_a": float(vt[1]), "value_h": float(vt[2]), "value_o": float(vt[3]),
                "key_furniture": float(k.line in self.furniture), "value_furniture": float(v.line in self.furniture),
                "ocr": float(ocr),
                "ruled": float(bool(self.page.rules)), "ruled_between": float(min(walls, 3)),
                "cell_next": float(c.where == "right" and walls == 1),
            }
            out.append(f)
        return out
