"""The document type, and the title field: what the page prints as its title.

`pick_type` takes the classifier's probabilities and the page's printed title; its rules (`TYPE_RULES`:
type_unsure_is_generic, type_needs_title) are steps of stage "type", each giving its verdict on one type
weighed (`TypeChoice`), those switched off left out in one place (`type_steps`). `form_structure` (rule
form_needs_structure, stage form_type) says whether a page taken for a generic form is one;
`nearest_title` mends a title OCR misread.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from data.labels import COLONS
from data.normalize import to_halfwidth
from data.text_distance import lcs_length
from models.extraction.base import Rule, enabled_steps, shared_chars
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings


def title_evidence(phrases: list[str], lines: list[str], max_extra: int | None = None, min_chars: int = 1) -> float:
    """How much of one of the titles a page prints: the best share, over titles and lines, of a title's
    characters found in order in one OCR line (longest common subsequence), so 增值税专用发 read for
    增值税专用发票 still counts. 0 when the page prints nothing like any of them. With `max_extra`, lines
    longer than the title by more than that many characters are not searched, and a match of fewer than
    `min_chars` characters (or the whole of a shorter title) counts as none (see DecodeSettings)."""
    best = 0.0
    for ph in (to_halfwidth(t) for t in phrases):
        for ln in lines:
            if max_extra is not None and len(ln) > len(ph) + max_extra:
                continue
            if shared_chars(ph, ln) / len(ph) <= best:     # cannot beat the best (the LCS is no longer)
                continue
            found = lcs_length(ph, ln)
            if found >= min(min_chars, len(ph)):
                best = max(best, found / len(ph))
    return best


def title_line(phrases: list[str], lines: list[str], extra: int = DEFAULT_SETTINGS.title_extra,
               edits: int = 0) -> int:
    """Length of the longest title a page prints as a title: a line holding the title exactly, with at
    most four characters more (a province: 湖南增值税电子普通发票). 0 when there is none. With `edits`, a
    line holding the title misread in up to that many characters per 6 (电子发(增值税专用发票), 票 under the
    seal) counts too, as the title's length less the edits: an e-invoice whose 票 OCR lost is still
    nearer its own title than the VAT title inside it."""
    best = 0
    lines = [re.sub(r"[()]", "", ln) for ln in lines]        # OCR drops a bracket now and then
    for ph in (re.sub(r"[\s()]+", "", to_halfwidth(t)) for t in phrases):
        if any(ph in ln and len(ln) <= len(ph) + extra for ln in lines):
            best = max(best, len(ph))
        elif edits:
            allowed = max(1, edits * len(ph) // 6)
            # a line sharing fewer than len(ph) - allowed characters with the title needs more edits
            near = [_fit(ph, ln)[0] for ln in lines if len(ph) - allowed <= len(ln) <= len(ph) + extra
                    and len(ph) - shared_chars(ph, ln) <= allowed]
            if near and min(near) <= allowed:
                best = max(best, len(ph) - min(near))
    return best


@dataclass(frozen=True)
class TypeChoice:
    """One type `pick_type` weighs, in the classifier's order: what a type step reads."""
    index: int
    schema: Any                      # the type's schema (None: a type without one)
    prob: float
    lines: list[str]                 # the page's lines, without spaces, half-width
    st: DecodeSettings
    generic: int | None              # the generic type's index, where the model has one

    @property
    def title_less(self) -> bool:
        """A schema type whose pages print no fixed title (a receipt), not the generic type itself."""
        return self.schema is not None and not self.schema.title_required and self.generic is not None and \
            self.index != self.generic


GENERIC_PAGE = "generic"     # a type step's verdict: the page is a generic page, not this type
PASS_OVER = "pass"           # ... this type is passed over for the next most likely one


def unsure_is_generic(c: TypeChoice) -> str | None:
    """type_unsure_is_generic: a title-less type the classifier is not sure of (`unsure_type`) is a generic
    page: a newspaper page the classifier gives 3% as a receipt is no receipt."""
    return GENERIC_PAGE if c.title_less and c.prob < c.st.unsure_type else None


def needs_title(c: TypeChoice) -> str | None:
    """type_needs_title: a type whose schema says every page prints one of its titles (title_required) is
    passed over when the page shows less than `title_evidence` of every such title and too few of its keys
    (`key_evidence`): a form with 姓名 and 日期 is not a VAT invoice because the classifier leaned that way."""
    if c.schema is None or not c.schema.title_required:
        return None
    st = c.st
    shown = title_evidence(c.schema.title_phrases, c.lines, st.title_evidence_extra, st.title_min_chars) >= \
        st.title_evidence or key_evidence(c.schema, c.lines, st) >= st.type_key_evidence
    return None if shown else PASS_OVER


# The type rules as models/extraction/rules.py lists them (RULES holds these, in this order): steps of stage
# "type", each a verdict on one `TypeChoice` (None: no say), the first verdict given deciding.
TYPE_RULES: list[Rule] = [
    Rule("type_unsure_is_generic", "type", unsure_is_generic,
         about="a title-less type the classifier is unsure of is a generic page (no schema fields)"),
    Rule("type_needs_title", "type", needs_title,
         about="a type whose pages all print a title is passed over when the page shows too little of it"),
]


def type_steps(off: frozenset[str]) -> list[Callable[[TypeChoice], str | None]]:
    """The type rules' steps, in order, without those named in `off`: the one place they are left out."""
    return enabled_steps(TYPE_RULES, ("type",), off)["type"]


def pick_type(probs: np.ndarray, types: list[str], schemas: dict, lines: list[str],
              st: DecodeSettings = DEFAULT_SETTINGS, off: frozenset[str] = frozenset(), generic: int | None = None
              ) -> int:
    """The document type from the classifier and the page's printed title.

    A page that prints a type's title as its own line, read exactly (电子发票（增值税专用发票）), is that
    type even when the classifier leaned elsewhere (a small, noisy photo taken for a generic form); with
    several such types the longest title wins (an e-invoice's title holds a VAT invoice's). Otherwise
    the classifier's most likely type the type steps left on (`type_steps`) neither pass over
    (type_needs_title) nor call a generic page (type_unsure_is_generic), and the next most likely type
    is taken. When no type passes, the most likely one stays. A title-less type with money fields on a
    page of key-colon lines that shows none of them (`form_without_evidence`) is a generic page too."""
    steps = type_steps(off)
    lines = [re.sub(r"\s+", "", to_halfwidth(t)) for t in lines]
    # a title OCR cut in two (电子发票 | （增值税专用发票）) is whole again in a line joined to the next
    joined = lines + [a + b for a, b in zip(lines, lines[1:])]
    titled = {i: title_line(schemas[t].title_phrases, joined, st.title_extra, st.title_line_edits)
              for i, t in enumerate(types)
              if schemas.get(t) is not None and schemas[t].title_required}
    longest = max(titled.values(), default=0)
    if longest:
        return max((i for i, n in titled.items() if n == longest), key=lambda i: probs[i])
    for i in np.argsort(-probs, kind="stable"):
        c = TypeChoice(int(i), schemas.get(types[i]), float(probs[i]), lines, st, generic)
        verdict = next((v for v in (step(c) for step in steps) if v is not None), None)
        if generic is not None and (verdict == GENERIC_PAGE or
                                    (c.title_less and form_without_evidence(c.schema, lines, st))):
            return generic
        if verdict != PASS_OVER:
            return int(i)
    return int(probs.argmax())


def key_evidence(schema: Any, lines: list[str], st: DecodeSettings = DEFAULT_SETTINGS) -> float:
    """Share of a schema's fields whose own printed key (a key phrase of `key_evidence_min_len` characters or
    more: 发票代码, 开票日期, 纳税人识别号; not 名称) the page prints somewhere. A title under a seal or torn off
    leaves an invoice with most of its keys, while a form or a letter that the classifier leaned towards an
    invoice prints few of them: a type whose title is not shown is still kept on this evidence
    (`type_key_evidence`). Fewer than `key_evidence_min_found` keys shown is no evidence: a form asking for
    公民身份号码 is no ID card. A key of four characters or more also counts when one line holds
    `key_read_share` of its characters in order (in a line at most `key_line_longer` times as long):
    開票日期 (traditional script), 纳税人阈别号 (OCR), as `title_evidence` reads titles."""
    text = "".join(lines)
    keyed = [[ph for ph in (re.sub(r"\s+", "", to_halfwidth(k)) for k in f.key_phrases)
              if len(ph) >= st.key_evidence_min_len] for f in list(schema.fields) + list(schema.item_fields)]
    keyed = [phs for phs in keyed if phs]
    if not keyed:
        return 0.0

    counts = [(ln, Counter(ln)) for ln in lines]    # each line's characters, counted once

    def shown(ph: str) -> bool:
        if ph in text:
            return True
        if len(ph) < 4:
            return False
        need = st.key_read_share * len(ph)
        mine = Counter(ph).items()
        # shared_chars(ph, ln) from the counts: it bounds the LCS, so most lines skip the quadratic comparison
        return any(len(ln) <= st.key_line_longer * len(ph) and sum(min(n, c[ch]) for ch, n in mine) >= need and
                   lcs_length(ph, ln) >= need for ln, c in counts)
    found = sum(any(shown(ph) for ph in phs) for phs in keyed)
    return found / len(keyed) if found >= st.key_evidence_min_found else 0.0


KEY_LINE = re.compile(r"^[^:：\d]{2,10}[:：]")          # 姓名：..., 出生日期：... (lines without spaces)


def form_without_evidence(schema: Any, lines: list[str], st: DecodeSettings = DEFAULT_SETTINGS) -> bool:
    """A page of key-colon lines (`type_form_keys` or more) that prints neither the title of a title-less
    type with money fields (a receipt) nor any key phrase of those money fields (合计, 实收, 单价 ...): a
    form (a registration sheet), not that type, however the classifier leaned. `lines` without spaces."""
    money = [ph for f in list(schema.fields) + list(schema.item_fields) if f.type in ("amount", "decimal")
             for ph in f.key_phrases]
    shown = title_evidence(schema.title_phrases, lines, st.title_evidence_extra, st.title_min_chars)
    if not money or shown >= st.title_evidence:
        return False
    keys = sum(1 for ln in lines if KEY_LINE.match(ln))
    return keys >= st.type_form_keys and not any(ph in ln for ln in lines for ph in money)


OTHER_TYPE = "other"     # a page that is neither a schema type nor a form: its text, no fields, no pairs
# a key that begins with an outline mark ((1) 含义, ① 卫星云图, (a), 一、) heads a point of notes or a book, not a
# form's blank; a value of running text (a comma or full stop in 12+ characters) is a sentence, not an answer
OUTLINE_MARK = re.compile(r"^\s*(?:[(（][0-9a-zA-Z一二三四五六七八九十]{1,3}[)）]|[0-9a-zA-Z]{1,2}[)）]|[①-⑳]"
                          r"|[一二三四五六七八九十]{1,3}[、.．])")
SENTENCE_MARK = re.compile(r"[。，；！？]")


def label_like(key: str, value: str) -> bool:
    """A pair as a form prints one: a short key (1-12 characters, a letter or Chinese character in it) that is
    neither a sentence nor an outline point, with a value that is not running text."""
    k = re.sub(r"\s+", "", key).rstrip(COLONS)
    v = re.sub(r"\s+", "", value)
    return 1 <= len(k) <= 12 and re.search(r"[A-Za-z\u4e00-\u9fff]", k) is not None \
        and not SENTENCE_MARK.search(k) and not OUTLINE_MARK.match(key) \
        and not (len(v) >= 12 and SENTENCE_MARK.search(v))


def form_structure(pairs: list[Any], lines: list[str], st: DecodeSettings = DEFAULT_SETTINGS) -> bool:
    """Whether a page taken for a generic form has a form's key-value structure: at least `form_min_keys`
    distinct label-like keys (`label_like`) among its pairs, and at least `form_key_density` of them per OCR
    line. A form is mostly blanks and their answers; a newspaper, a book page, a slide or a page of notes is
    mostly running text, where a few phrases before a colon or beside a number make a handful of pairs among
    hundreds of lines (11 pairs on a 460-line newspaper page). Such a page is `OTHER_TYPE`."""
    keys = {re.sub(r"\s+", "", p.key).rstrip(COLONS) for p in pairs if label_like(p.key, p.value)}
    return len(keys) >= st.form_min_keys and len(keys) >= st.form_key_density * max(1, len(lines))


def _fit(title: str, value: str) -> tuple[int, int, int]:
    """The fewest edits that turn some piece of `value` into `title` (semi-global alignment: what stands
    before or after the piece is free), with where that piece starts and ends in `value`."""
    # cost[j], start[j]: best alignment of the title so far ending at value[:j]
    cost, start = [0] * (len(value) + 1), list(range(len(value) + 1))
    for i, ch in enumerate(title, 1):
        new, new_start = [i] + [0] * len(value), [0] * (len(value) + 1)
        for j, c in enumerate(value, 1):
            new[j], new_start[j] = min((cost[j - 1] + (ch != c), start[j - 1]), (cost[j] + 1, start[j]),
                                       (new[j - 1] + 1, new_start[j - 1]))
        cost, start = new, new_start
    end = min(range(len(value) + 1), key=lambda j: (cost[j], -j))
    return cost[end], start[end], end


def nearest_title(value: str, phrases: list[str], st: DecodeSettings = DEFAULT_SETTINGS) -> str:
    """A title OCR misread in a character or two is the one known title it is nearest to: 电子发票普通发票）
    or 电子发票普通发票 with brackets dropped, 增值税奇用发票, a traditional title read with one simplified 税, a seal's
    (龙江税务局) read onto its end. The title within `title_edits` per `title_edit_chars` characters
    (at least one) of a piece of the value, and strictly nearer than every other title, replaces that piece;
    up to `title_extra` characters before it (a province) stay, what follows it goes."""
    titles = sorted({to_halfwidth(t) for t in phrases})
    # brackets are compared as nothing: OCR drops them more than any character (电子发票普通发票 for
    # 电子发票(普通发票) is two edits with them, none without), and no two titles differ by brackets alone
    v = re.sub(r"\s+", "", to_halfwidth(value or ""))
    kept = [i for i, ch in enumerate(v) if _unbracket(ch)]     # the value's characters that are no bracket
    if not kept or not titles:
        return value
    fits = sorted((_fit(_unbracket(t), _unbracket(v)), t) for t in titles)
    (edits, a, _), best = fits[0]
    a = kept[a] if a < len(kept) else len(v)         # where the piece starts in the value as read
    allowed = max(1, st.title_edits * len(_unbracket(best)) // st.title_edit_chars)
    if edits > allowed or (len(fits) > 1 and fits[1][0][0] == edits) or a > st.title_extra:
        return value
    return v[:a] + best


def _unbracket(text: str) -> str:
    return re.sub(r"[()\[\]]", "", text)
