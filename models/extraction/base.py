"""The typed pieces every rule works on: a page's predictions, candidate spans, the page context.

`PagePrediction` is what `Extractor.predict_page` returns; `Span` a candidate value (characters
[start, end) of one OCR line, with the field the model gave it); `PageContext` one page being decoded:
the document filled so far, the schema, the candidates, the settings and the rules switched off.
`Rule` is one decoding rule as models/extraction/rules.py lists it; `enabled_steps` the one place where
a stage's step rules switched off are left out (forms.py `form_steps`, spans.py `span_steps`, doctype.py
`type_steps`, rules.py's runners); `EncoderInput` what the "input" steps change (`turn_level`: level_lines).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from data import geometry
from data.document import Document, Field, Line, Page
from data.labels import COLONS
from data.normalize import normalize_value
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

if TYPE_CHECKING:   # an annotation only (pair_scorer sits below base in the order of forms.py's docstring)
    from models.extraction.pair_scorer import PairScorer


def shared_chars(a: str, b: str) -> int:
    """How many characters `a` and `b` have in common, each character used once (the overlap of their
    multisets). It bounds both their longest common subsequence and how many characters of `a` an alignment
    with `b` can match, so a test that needs many matches skips the quadratic comparison on lines that share
    too few characters (the title and key searches of doctype.py compare every line with every title)."""
    return sum(min(a.count(c), b.count(c)) for c in set(a))


@dataclass(frozen=True)
class Rule:
    name: str
    stage: str                       # the stage whose runner runs it (rules.py's docstring lists them)
    fn: Callable                     # the function that implements it
    core: bool = False               # the decoding itself: never switched off
    about: str = ""                  # what it does, where `fn` holds several rules

    @property
    def doc(self) -> str:
        text = self.about or " ".join((self.fn.__doc__ or "").split()).split(". ")[0].split(": ")[0].rstrip(".")
        return text if len(text) <= 90 else text[:87] + "..."


# stage -> its step functions, in the rules' order; a stage's steps share the signature its runner calls
Steps = dict[str, list[Callable[..., Any]]]


def enabled_steps(rules: Iterable[Rule], stages: Iterable[str], off: frozenset[str]) -> Steps:
    """The step functions of `rules` in the given stages, each stage's in the rules' order, without those
    named in `off` (a core rule always runs). The decoder that holds the result runs a stage's list at its
    point and checks no rule name itself."""
    wanted = set(stages)
    out: Steps = {stage: [] for stage in wanted}
    for r in rules:
        if r.stage in wanted and (r.core or r.name not in off):
            out[r.stage].append(r.fn)
    return out


@dataclass
class PagePrediction:
    """The model's raw reading of one page."""
    doc: np.ndarray                                   # doc-type probabilities, averaged over windows
    probs: list[np.ndarray]                           # per line, per character tag probabilities (NaN: space)
    link: Callable[[tuple[int, int], tuple[int, int]], float | None]   # link score of two (line, char)
    pair_scorer: PairScorer | None = None             # the model dir's learned form-pair scorer, if it has one


@dataclass
class Span:
    key: str
    line: int
    start: int
    end: int
    score: float
    alts: dict[str, float] = dc_field(default_factory=dict)   # mean key mass over the span, per key


@dataclass
class PageContext:
    """One page of a document being decoded under its type's schema."""
    doc: Document
    page: Page
    schema: Any
    spans: list[Span]
    settings: DecodeSettings = DEFAULT_SETTINGS
    header: list[Span] = dc_field(default_factory=list)       # candidates for the schema's fields
    used: set[tuple[int, int]] = dc_field(default_factory=set)           # (line, start) of chosen spans
    item_spans: list[Span] = dc_field(default_factory=list)
    cells: list[tuple[str, Field]] = dc_field(default_factory=list)
    rows: list[dict[str, Field]] = dc_field(default_factory=list)   # item rows read on this page
    height: float = 0.0                                        # median line height (item rows)
    figures: list[tuple[Any, int, int, int]] | None = None   # (value, line, start, end) of free money figures

    def __post_init__(self) -> None:
        self.specs = {f.key: f for f in self.schema.fields}
        self.item_specs = {f.key: f for f in self.schema.item_fields}
        self.phrases = {k: [re.sub(r"\s+", "", ph) for ph in f.key_phrases] for k, f in self.specs.items()}
        self.every_phrase = [ph for phs in self.phrases.values() for ph in phs if ph]
        self.owners: dict[str, set[str]] = {}          # key phrase -> the fields it names
        for key, phs in self.phrases.items():
            for ph in phs:
                if ph:
                    self.owners.setdefault(ph, set()).add(key)

    def text(self, s: Span) -> str:
        return self.page.lines[s.line].text

    def here(self) -> dict[str, Field]:
        """The fields read on this page (a field of another page is never completed from this one)."""
        return {key: f for key, f in self.doc.fields.items() if f.page == self.page.index}

    def make_field(self, key: str, spec: Any, s: Span) -> Field:
        return make_field(key, spec, self.page, s)


TYPE_SHAPES = {
    "date": r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?",
    "amount": r"(?<![0-9A-Za-z.])-?\d[\d,]*(?:\.\d{1,2})?(?![0-9A-Za-z])",   # not a piece of a code
    "tax_id": r"[0-9A-Z]{20}|[0-9A-Z]{18}|[0-9A-Z]{15}",
    "credit_code": r"[0-9A-Z]{18}",
    "id_number": r"\d{17}[\dXx]",
}
TAX_ID = re.compile(r"[0-9A-Z]{15}|[0-9A-Z]{18}|[0-9A-Z]{20}")
CODE_TYPES = ("code", "tax_id", "id_number", "credit_code")


def plausible(spec: Any, raw: str) -> bool:
    """Whether a candidate's text reads as the field's type (and pattern, when the schema has one)."""
    raw = clean(raw)
    if not raw:
        return False
    value = normalize_value(spec.type, raw)
    if value is None:
        return False
    if spec.type == "tax_id" and not TAX_ID.fullmatch(value):
        return False
    if spec.type == "id_number" and len(value) != 18:
        return False
    if spec.pattern and spec.type in CODE_TYPES:
        return re.fullmatch(spec.pattern, value) is not None
    return True


def near(a: str, b: str) -> bool:
    """Same length and at most one character different: one OCR misreading apart."""
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) <= 1


def char_box(line: Line, start: int, end: int) -> list[float]:
    """The part of a line's box under characters [start, end), by printed width (data/geometry.py)."""
    return geometry.char_box(line.box, line.text, start, end)


def value_box(line: Line, start: int, end: int) -> list[float]:
    """The box a field shows around characters [start, end) of a line: `char_box` as tall as their ink
    (data/geometry.py `ink_box`)."""
    return geometry.ink_box(line.box, line.text, start, end)


def clean(text: str) -> str:
    return text.strip().strip(COLONS).strip()


def line_starts(page: Page) -> np.ndarray:
    """Offset of each line's first character in the page text (lines joined by newlines), plus the end."""
    return np.cumsum([0] + [len(ln.text) + 1 for ln in page.lines])


def line_of(offsets: np.ndarray, pos: int) -> int:
    """Index of the line that holds page-text offset `pos`."""
    return int(np.searchsorted(offsets, pos, side="right") - 1)


def make_field(key: str, spec: Any, page: Page, s: Span) -> Field:
    """A Field from a span: raw text, normalised value, box and page-text offsets."""
    line = page.lines[s.line]
    raw = clean(line.text[s.start:s.end])
    value = normalize_value(spec.type if spec else "text", raw)
    suffix = spec.drop_suffix if spec else ""
    if value is not None and suffix and value.endswith(suffix) and len(value) > len(suffix):
        value = value[:-len(suffix)].rstrip()          # 南京南站 -> 南京南: the schema's value leaves it out
    offset = sum(len(ln.text) + 1 for ln in page.lines[:s.line])
    return Field(key=key, value=value if value is not None else raw, raw=raw, score=round(s.score, 4),
                 box=value_box(line, s.start, s.end), page=page.index, label=spec.label if spec else key,
                 span=[offset + s.start, offset + s.end])


LEVEL_MIN_SLOPE = geometry.LEVEL_MIN_SLOPE   # level_lines: a page tilted more than this is turned level


@dataclass
class EncoderInput:
    """What the encoder reads of a page: its lines and each one's index in page.lines. The steps of stage
    "input" (models/extraction/rules.py `encoder_input`) change it in turn; none changes the page itself."""
    page: Page
    lines: list[Line]
    order: list[int]


def turn_level(inp: EncoderInput) -> None:
    """level_lines: on a page tilted more than LEVEL_MIN_SLOPE, the lines turned level about the page centre
    (data/geometry.py `level_quads`) and put in reading order again (`level_reading_order`: OCR already reads
    in that order, pages from older caches or importers may not); a level page's lines stay as they are."""
    page, lines = inp.page, inp.lines
    slope, quads, order = geometry.level_reading_order([ln.quad for ln in lines], page.width, page.height)
    if slope:
        inp.lines, inp.order = [dataclasses.replace(lines[i], quad=quads[i]) for i in order], \
            [inp.order[i] for i in order]


def level_lines(page: Page) -> tuple[list[Line], list[int]]:
    """The page's lines as the encoder reads them with rule level_lines on, and each one's index in
    page.lines (`turn_level`). Only the encoder's input changes: decoding, boxes in the output and every
    layout rule use the lines as read."""
    inp = EncoderInput(page, page.lines, list(range(len(page.lines))))
    turn_level(inp)
    return inp.lines, inp.order
