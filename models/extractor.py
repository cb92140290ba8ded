"""The extractor: OCR'd `Document` in, the same `Document` out with doc type, fields, items and pairs.

    ex = get_extractor()                    # models/default, loaded once per process
    doc = ex.extract(ocr_document)          # doc_type(+score), fields, items, pairs, warnings

Steps per page: lines in reading order -> character tokens with line boxes in overlapping windows
(models/tokenizer.py) -> encoder + extraction head -> per-character tag probabilities (each from the
window where the character has most context) -> spans ->
per field the best span of the page's doc type -> normalised value, box, validation (data/validate.py).
Generic forms come out as question -> answer pairs (models/form_pairs.py): keys and values from page
layout (colons, rows, the line below), with the model's question/answer/other tags as evidence.

A model directory holds config.json, model_state.pdparams, vocab.txt, labels.json, schemas/*.yaml,
metrics.json and provenance.json; `find_model_dirs` lists such directories for the UI's picker.
"""
from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import asdict, dataclass
from dataclasses import field as dc_field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import numpy as np
import paddle

from data.document import Document, Field, Line, Page
from data.normalize import format_amount_words, normalize_code, normalize_value, parse_amount, to_halfwidth
from data.validate import is_valid_id_number
from models.decode import cluster_rows, page_slope
from models.encoder import Encoder, EncoderConfig
from models.form_pairs import decode_form
from models.heads import ExtractionHead, HeadConfig
from models.ocr_eval import edit_distance
from models.runtime import on_model_thread
from models.tokenizer import Tokenizer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default"
GENERIC = "generic_form"
FORM_LABELS = ("header", "question", "answer")


class ModelDirError(FileNotFoundError):
    """A model directory that is missing or incomplete; the message says how to get a good one."""


def is_model_dir(path: str | Path) -> bool:
    p = Path(path)
    return (p / "config.json").is_file() and (p / "model_state.pdparams").is_file() and (p / "vocab.txt").is_file()


def find_model_dirs(root: str | Path | None = None) -> list[Path]:
    """Model directories under `root` (itself included), the bundled default first when present."""
    roots = [Path(root)] if root is not None else [DEFAULT_MODEL_DIR.parent]
    found = []
    for r in roots:
        if is_model_dir(r):
            found.append(r.resolve())
        if r.is_dir():
            found += sorted(p.parent.resolve() for p in r.rglob("config.json") if is_model_dir(p.parent)
                            and p.parent.resolve() != r.resolve())
    found = list(dict.fromkeys(found))
    default = DEFAULT_MODEL_DIR.resolve()
    return sorted(found, key=lambda p: (p != default, str(p)))


@dataclass
class ExtractorConfig:
    encoder: dict
    tag_labels: list[str]
    doc_types: list[str]
    link: bool = True
    max_len: int = 512

    def build(self) -> Encoder:
        enc = EncoderConfig(**self.encoder)
        head = ExtractionHead(HeadConfig(hidden_size=enc.hidden_size, tag_labels=list(self.tag_labels),
                                         doc_types=list(self.doc_types), link=self.link))
        return Encoder(enc, head)

    def save(self, model_dir: Path) -> None:
        (model_dir / "config.json").write_text(json.dumps(asdict(self), ensure_ascii=False, indent=1),
                                               encoding="utf-8")

    @classmethod
    def load(cls, model_dir: Path) -> "ExtractorConfig":
        return cls(**json.loads((model_dir / "config.json").read_text(encoding="utf-8")))


def save_vocab(tok: Tokenizer, path: Path) -> None:
    path.write_text("\n".join(tok.vocab) + "\n", encoding="utf-8")


def save_model(model: Encoder, cfg: ExtractorConfig, vocab, model_dir: str | Path,
               half: bool = True) -> Path:
    """Write a complete model directory (weights in float16 by default: half the size, same tags)."""
    from data.schemas import SCHEMA_DIR
    d = Path(model_dir)
    d.mkdir(parents=True, exist_ok=True)
    cfg.save(d)
    save_vocab(vocab, d / "vocab.txt")
    state = {k: (v.astype("float16") if half and v.dtype == paddle.float32 else v)
             for k, v in model.state_dict().items()}
    paddle.save(state, str(d / "model_state.pdparams"))
    (d / "labels.json").write_text(json.dumps({"tags": cfg.tag_labels, "doc_types": cfg.doc_types},
                                              ensure_ascii=False, indent=1), encoding="utf-8")
    sdir = d / "schemas"
    sdir.mkdir(exist_ok=True)
    for name in cfg.doc_types:
        src = SCHEMA_DIR / f"{name}.yaml"
        if src.is_file():
            (sdir / src.name).write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    return d


@dataclass
class Span:
    key: str
    line: int
    start: int
    end: int
    score: float
    alts: dict[str, float] = dc_field(default_factory=dict)   # mean key mass over the span, per key


def _vote_alnum_runs(text: str | None, best: np.ndarray) -> np.ndarray:
    """A run of letters, digits and decimal points (a code, tax ID, amount) never changes field in
    the middle: when most of its characters name a field, all of them take the most named one, or the
    field of the character the run is glued to when part of the run names it."""
    if not text:
        return best
    best = best.copy()
    i = 0
    while i < len(text):
        if not (text[i].isascii() and (text[i].isalnum() or text[i] == ".")):
            i += 1
            continue
        j = i
        while j < len(text) and text[j].isascii() and (text[j].isalnum() or text[j] == "."):
            j += 1
        keyed = [int(k) for k in best[i:j] if k != 0]
        if j - i > 1 and len(keyed) * 2 >= j - i:
            # a run glued to the value before it (合同号：HT2937 with HT tagged as that value) goes on
            # with that value: the model's other field for the tail is a second reading, not a second
            # value starting in the middle of a code
            glued = int(best[i - 1]) if i > 0 and not text[i - 1].isspace() else 0
            best[i:j] = glued if glued and glued in keyed else max(set(keyed), key=keyed.count)
        i = j
    return best


COLONS = ":："


def _vote_segments(text: str | None, best: np.ndarray, visible: np.ndarray, vote: np.ndarray,
                   share: float = 0.5, mass: np.ndarray | None = None,
                   code_fits: Callable[[int, str], bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Between two colons (or a colon and the line's end) OCR text holds one value, maybe followed
    by the next key phrase. When most of a segment's tagged characters name one free-text field
    (`vote[k]`: names, addresses, titles), its first to last tagged character all take that field:
    a tiny model scatters other fields' tags over a long name (深圳蛋糕 with 蛋 as an item) and a
    value split in pieces loses all but one. Returns (new best, voted mask)."""
    voted = np.zeros(len(best), dtype=bool)
    if not text:
        return best, voted
    best = best.copy()
    # a code run OCR glued onto the value (名称 then 统一社会信用代码 read as one line) keeps its own field
    # and takes no part in the vote when it reads as that field (`code_fits`): a bank account the
    # model took for a tax ID still votes with its bank's name (银行名称 + 账号 is one value)
    code = np.zeros(len(text), dtype=bool)
    for m in re.finditer(r"[0-9A-Za-z]{6,}", text):
        k = int(best[m.start()])
        code[m.start():m.end()] = k != 0 and not vote[k] and code_fits is not None and code_fits(k, m.group())
    bounds = [-1] + [i for i, ch in enumerate(text) if ch in COLONS] + [len(text)]
    for a, b in zip(bounds, bounds[1:]):
        seg = [i for i in range(a + 1, b) if visible[i] and not code[i]]
        tagged = [i for i in seg if best[i] != 0]
        if len(tagged) < 2:
            continue
        keyed = [int(best[i]) for i in tagged]
        k = max(set(keyed), key=keyed.count)
        if mass is not None and keyed.count(k) < share * len(tagged):
            # no field holds half the characters (武汉 | 美越物 | 流有限公 | 司 scattered over three
            # names): the field with most probability mass over them, when it holds 40% of it
            m = np.nan_to_num(mass[tagged, 1:]).sum(0)
            if m.sum() > 0 and m.max() >= 0.4 * m.sum():
                k = int(m.argmax()) + 1
                keyed = [k] * len(tagged)
        if not vote[k] or keyed.count(k) < share * len(tagged) or len(tagged) < 0.4 * len(seg):
            continue
        first, last = tagged[0], tagged[-1]
        best[first:last + 1] = k
        voted[first:last + 1] = True
    return best, voted


def _spans(line_probs: list[np.ndarray], tag_labels: list[str], allowed: np.ndarray,
           line_texts: list[str] | None = None, vote_keys: set[str] | None = None,
           fits: Callable[[str, str], bool] | None = None) -> list[Span]:
    """Spans per line from per-character tag probabilities, restricted to the `allowed` tags.

    Each character takes the key with the most mass p(B-key) + p(I-key) (or O): a tiny model is
    often unsure whether a value's first character is B or I, but sure which field it belongs to.
    A span is a run of one key (across spaces); a strong B inside a run starts a new span.
    """
    keys = sorted({lab[2:] for lab, ok in zip(tag_labels, allowed) if ok and lab != "O"})
    b_col = np.array([tag_labels.index(f"B-{k}") for k in keys], dtype=int)
    i_col = np.array([tag_labels.index(f"I-{k}") for k in keys], dtype=int)
    vote = np.array([False] + [k in (vote_keys or ()) for k in keys])
    out: list[Span] = []
    for li, probs in enumerate(line_probs):
        if probs is None or not len(probs):
            continue
        mass = np.concatenate([probs[:, :1], probs[:, b_col] + probs[:, i_col]], axis=1)  # [chars, 1+K]
        text = line_texts[li] if line_texts else None
        best = _vote_alnum_runs(text, np.nan_to_num(mass, nan=-1.0).argmax(-1))
        visible = ~np.isnan(probs).any(-1)
        best, voted = _vote_segments(text, best, visible, vote, mass=mass,
                                     code_fits=(lambda k, t: fits(keys[k - 1], t)) if fits else None)
        cur: Span | None = None
        scores: list[float] = []
        for ci, t in enumerate(best):
            if np.isnan(probs[ci]).any():      # whitespace: no token; a value may run across it
                continue
            if t == 0:
                cur = None
                continue
            key = keys[t - 1]
            p = float(mass[ci, t])
            strong_b = probs[ci, b_col[t - 1]] > 0.5 and probs[ci, b_col[t - 1]] > 2 * probs[ci, i_col[t - 1]]
            if cur is not None and key == cur.key and (voted[ci] or not strong_b):
                cur.end = ci + 1
                scores.append(p)
                cur.score = float(np.mean(scores))
                continue
            cur = Span(key, li, ci, ci + 1, p)
            scores = [p]
            out.append(cur)
        for sp in out:
            if sp.line == li:
                _extend_left(sp, text, probs, mass, keys, best if vote[keys.index(sp.key) + 1] else None)
                seen = [ci for ci in range(sp.start, sp.end) if visible[ci]]
                if seen:
                    sp.alts = {k: float(m) for k, m in zip(keys, mass[seen, 1:].mean(0))}
    return out


def _extend_left(sp: Span, text: str | None, probs: np.ndarray, mass: np.ndarray, keys: list[str],
                 best: np.ndarray | None = None, floor: float = 0.1) -> None:
    """Grow a span leftwards over characters that still give its field some mass, up to a colon or
    the line start: a small model often loses the first character or two of a value after "：",
    but rarely gives them to another field. A free-text field (`best` given: the per-character
    keys) grows over every character no other field claims: 小 of 收款人：小明 read as O is still
    part of the name; a key phrase it takes in is cut off later by the schema (`_strip_key_phrase`)."""
    if not text:
        return
    t = keys.index(sp.key) + 1
    i = sp.start - 1
    while i >= 0 and text[i] not in COLONS and (np.isnan(probs[i]).any() or (
            best[i] in (0, t) if best is not None else mass[i, t] >= floor and mass[i].argmax() in (0, t))):
        i -= 1
    first = i + 1
    while first < sp.start and text[first].isspace():
        first += 1
    sp.start = first


# What a value of each parsed type looks like inside OCR text that may carry junk around it
# ("V358.98", "2024-08-3012:30" where OCR lost the space before the time).
TYPE_SHAPES = {
    "date": r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?",
    "amount": r"(?<![0-9A-Za-z.])-?\d[\d,]*(?:\.\d{1,2})?(?![0-9A-Za-z])",   # not a piece of a code
    "tax_id": r"[0-9A-Z]{20}|[0-9A-Z]{18}|[0-9A-Z]{15}",
    "credit_code": r"[0-9A-Z]{18}",
    "id_number": r"\d{17}[\dXx]",
}
TAX_ID = re.compile(r"[0-9A-Z]{15}|[0-9A-Z]{18}|[0-9A-Z]{20}")


def _plausible(spec, raw: str) -> bool:
    """Whether a candidate's text reads as the field's type (and pattern, when the schema has one)."""
    raw = _clean(raw)
    if not raw:
        return False
    value = normalize_value(spec.type, raw)
    if value is None:
        return False
    if spec.type == "tax_id" and not TAX_ID.fullmatch(value):
        return False
    if spec.type == "id_number" and len(value) != 18:
        return False
    if spec.pattern and spec.type in ("code", "id_number", "tax_id", "credit_code"):
        return re.fullmatch(spec.pattern, value) is not None
    return True


CODE_TYPES = ("code", "tax_id", "id_number", "credit_code")
# What a whole value of a type looks like around a fragment the model found ("08" of 2023年07月08日,
# "306531" of 031012306531): the fragment grows to the surrounding match when that reads as the type.
_WORDS = "零壹贰叁肆伍陆柒捌玖拾佰仟万亿圆元角分整正参參貳陸圓"    # with the variants data/normalize.py reads
# 大写: also across one stray character, where OCR read 圆 as 回/国 (data/normalize.py reads it back)
GROW_SHAPES = {"date": TYPE_SHAPES["date"], "amount_words": rf"[{_WORDS}]+(?:[^\s:：{_WORDS}][{_WORDS}]+)?",
               **{t: r"[0-9A-Za-z]+" for t in CODE_TYPES}}


def _trim_to_type(sp: Span, spec, text: str) -> Span:
    """Fit a span that does not read as its type: grow it to the whole value around it in its
    colon segment (a long number OCR cut with a space, a date the model found only part of), else
    shrink it to the part that reads as the type (the first match of the type's shape or pattern)."""
    raw = _clean(text[sp.start:sp.end])
    # a date cut inside its day (2025-05-2|113:05:18, a time glued on) reads as a date too: dates grow
    if _plausible(spec, raw) and spec.type not in ("amount_words", "date"):
        return sp
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    after = next((i for i in range(sp.end, len(text)) if text[i] in COLONS), len(text))
    seg = text[before + 1:after]
    if spec.type in CODE_TYPES and seg.strip() and _plausible(spec, re.sub(r"\s+", "", seg)):
        lead = len(seg) - len(seg.lstrip())      # 校验码：1001432002 3319800000
        return Span(sp.key, sp.line, before + 1 + lead, before + 1 + len(seg.rstrip()), sp.score, sp.alts)
    grow = GROW_SHAPES.get(spec.type)
    for m in re.finditer(grow, seg) if grow else ():
        s0, e0 = before + 1 + m.start(), before + 1 + m.end()
        if s0 < sp.end and sp.start < e0 and _plausible(spec, m.group()) and len(m.group()) >= len(raw):
            return Span(sp.key, sp.line, s0, e0, sp.score, sp.alts)
    if _plausible(spec, raw):        # 大写 that reads as it is and has no longer reading around it
        return sp
    if spec.type in CODE_TYPES and raw.isalnum():
        return sp      # a clean run of letters and digits is the value as read, even off-pattern
    shape = spec.pattern if spec.pattern and spec.type == "code" else TYPE_SHAPES.get(spec.type)
    if not shape:
        return sp
    for m in re.finditer(shape, text[sp.start:sp.end]):
        if _plausible(spec, m.group()):
            return Span(sp.key, sp.line, sp.start + m.start(), sp.start + m.end(), sp.score, sp.alts)
    return sp


def _rekey_by_phrase(sp: Span, text: str, phrases: dict[str, list[str]]) -> Span:
    """When the text before the value's colon is a key phrase of some fields and the model named
    another, the value takes the one of those fields the model gave most mass (纳税人识别号：… read
    as the seller's address becomes the seller's tax ID, not the buyer's)."""
    colon = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    if colon < 0:
        return sp
    key_text = re.sub(r"\s+", "", text[:colon])
    owners = [k for k, phs in phrases.items() if any(ph and key_text.endswith(ph) for ph in phs)] or \
        [k for k, phs in phrases.items()       # a long key misread in one character (纳税人只别号)
         if any(len(ph) >= 5 and _near(key_text[-len(ph):], ph) for ph in phs)]
    return _rekey_to(sp, owners)


def _rekey_to(sp: Span, owners: list[str]) -> Span:
    """The span under the one of `owners` (the fields a key names) it gave most mass, unless it already
    is one of them or no key named any."""
    if not owners or sp.key in owners:
        return sp
    best = max(owners, key=lambda k: sp.alts.get(k, 0.0))
    return Span(best, sp.line, sp.start, sp.end, sp.score, sp.alts)


def _rekey_by_row(sp: Span, page: Page, phrases: dict[str, list[str]]) -> Span:
    """A value alone on its OCR line, whose key stands as a separate line to its left on the same row
    (实收： ... 280.00 on a receipt), belongs to a field that key names: when the model named another
    field, the value takes the one of the key's fields it gave most mass."""
    line = page.lines[sp.line]
    if line.text[:sp.start].strip() or line.text[sp.end:].strip():
        return sp
    x0, y0, _, y1 = line.box
    h, cy = max(1.0, y1 - y0), (y0 + y1) / 2
    left = [m for m in page.lines if m is not line and abs((m.box[1] + m.box[3]) / 2 - cy) < 0.5 * h
            and m.box[2] <= x0 + 0.3 * h]
    if not left:
        return sp
    key_line = max(left, key=lambda m: m.box[2])
    # a key that waits for its value ends with a colon, or stands close: a label without a colon far to
    # the left is another column's (an e-invoice prints its labels above the values)
    if not key_line.text.rstrip().endswith(tuple(COLONS)) and x0 - key_line.box[2] > 2 * h:
        return sp
    key_text = re.sub(r"[\s:：]+", "", key_line.text)
    owners = [k for k, phs in phrases.items() if key_text and any(ph and key_text.endswith(ph) for ph in phs)]
    return _rekey_to(sp, owners)


def _is_key_text(sp: Span, text: str, phrases: list[str]) -> bool:
    """Whether the span lies inside the key of a "key：value" (the text from the line start or the
    previous colon up to the next colon is some field's key phrase), or is itself a piece of a
    longer key phrase OCR cut off (统一社会信 of 统一社会信用代码): key text is never a value."""
    body = re.sub(r"\s+", "", _clean(text[sp.start:sp.end]))
    if len(body) >= 3 and any(len(ph) > len(body) and body in ph for ph in phrases):
        return True
    # a long key OCR misread in one character (纳税人识刷) is still key text
    if len(body) >= 6 and any(_near(body, ph[j:j + len(body)]) for ph in phrases
                              for j in range(len(ph) - len(body) + 1)):
        return True
    # ... and a line that is a long key (8+ characters) misread in several: two thirds of the key's
    # characters in order, the line no more than two longer (核一北会信期代码/的税人职别号)
    whole = re.sub(r"[\s:：]+", "", to_halfwidth(text))
    if body and body in whole and any(len(ph) >= 8 and abs(len(whole) - len(ph)) <= 2 and
                                      _title_evidence([ph], [whole]) >= 2 / 3 for ph in phrases):
        return True
    after = next((i for i in range(sp.end, len(text)) if text[i] in COLONS), None)
    if after is None:
        return False
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    key_text = re.sub(r"\s+", "", text[before + 1:after])
    return any(key_text.endswith(ph) or (len(ph) >= 6 and _near(key_text[-len(ph):], ph)) for ph in phrases)


def _near(a: str, b: str) -> bool:
    """Same length and at most one character different: one OCR misreading apart."""
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) <= 1


def _title_evidence(phrases: list[str], lines: list[str]) -> float:
    """How much of one of the titles a page prints: the best share, over titles and lines, of a title's
    characters found in order in one OCR line (longest common subsequence), so 增值税专用发 read for
    增值税专用发票 still counts. 0 when the page prints nothing like any of them."""
    best = 0.0
    for ph in (to_halfwidth(t) for t in phrases):
        for ln in lines:
            prev = [0] * (len(ln) + 1)
            for ch in ph:
                cur = [0]
                for j, c in enumerate(ln):
                    cur.append(prev[j] + 1 if ch == c else max(prev[j + 1], cur[j]))
                prev = cur
            best = max(best, prev[-1] / len(ph))
    return best


TITLE_EVIDENCE = 0.5   # share of a required title a page must show for its type to be kept


def _title_line(phrases: list[str], lines: list[str]) -> int:
    """Length of the longest title a page prints as a title: a line holding the title exactly, with at
    most four characters more (a province: 湖南增值税电子普通发票). 0 when there is none."""
    best = 0
    lines = [re.sub(r"[()]", "", ln) for ln in lines]        # OCR drops a bracket now and then
    for ph in (re.sub(r"[\s()]+", "", to_halfwidth(t)) for t in phrases):
        if any(ph in ln and len(ln) <= len(ph) + 4 for ln in lines):
            best = max(best, len(ph))
    return best


def _pick_type(probs: np.ndarray, types: list[str], schemas: dict, lines: list[str]) -> int:
    """The document type from the classifier and the page's printed title.

    A page that prints a type's title as its own line, read exactly (电子发票（增值税专用发票）), is that
    type even when the classifier leaned elsewhere (a small, noisy photo taken for a generic form); with
    several such types the longest title wins (an e-invoice's title holds a VAT invoice's). Otherwise
    the classifier's most likely type whose title the page shows: a type whose schema says every page
    prints one of its titles (title_required) is passed over when the page shows less than half of every
    such title, and the next most likely type is taken (a form with 姓名 and 日期 is not a VAT invoice
    because the classifier leaned that way), unless the page prints the keys of that type's fields
    (发票代码, 纳税人识别号 ... on an invoice whose title a seal hides). When no type passes, the most
    likely one stays."""
    lines = [re.sub(r"\s+", "", to_halfwidth(t)) for t in lines]
    # a title OCR cut in two (电子发票 | （增值税专用发票）) is whole again in a line joined to the next
    joined = lines + [a + b for a, b in zip(lines, lines[1:])]
    titled = {i: _title_line(schemas[t].title_phrases, joined) for i, t in enumerate(types)
              if schemas.get(t) is not None and schemas[t].title_required}
    longest = max(titled.values(), default=0)
    if longest:
        return max((i for i, n in titled.items() if n == longest), key=lambda i: probs[i])
    text = "".join(lines)
    for i in np.argsort(-probs, kind="stable"):
        schema = schemas.get(types[i])
        if schema is None or not schema.title_required or \
                _title_evidence(schema.title_phrases, lines) >= TITLE_EVIDENCE or \
                _key_coverage(schema, text) >= KEY_COVERAGE:
            return int(i)
    return int(probs.argmax())


KEY_COVERAGE = 0.3   # share of a type's keyed fields whose key phrase a page prints, to keep the type
                     # without its title (a seal over the title): invoices 0.6-0.95 when read well, forms
                     # <= 0.25 for the invoice types on generated held-out pages


def _key_coverage(schema, text: str) -> float:
    """Share of the schema's fields with key phrases whose phrase stands in the page text."""
    keyed = [f for f in schema.fields if f.key_phrases]
    hits = sum(any(re.sub(r"\s+", "", to_halfwidth(p)) in text for p in f.key_phrases) for f in keyed)
    return hits / len(keyed) if keyed else 0.0


def _snap_title(value: str, phrases: list[str]) -> str:
    """A title OCR cut short (电子发票(增值 / 福建增值税电子普通) completed from the schema's titles: the
    longest tail of the value (at least 4 characters) that begins exactly one known title is replaced by
    that title; what stands before it (a province) stays. A complete or unknown title is kept."""
    titles = {to_halfwidth(t) for t in phrases}
    if not value or any(value.endswith(t) for t in titles):
        return value
    v = value[:-1] if value.endswith(")") and value.count("(") == value.count(")") else value
    for i in range(len(v) - 3):
        tail = v[i:]
        fits = {t for t in titles if t.startswith(tail) and t != tail}
        if len(fits) == 1:
            return v[:i] + fits.pop()
        if fits:
            return value
    return value


def _complete_title(f: Field, page: Page, phrases: list[str]) -> None:
    """A title the model tagged only in part (电子发 of 电子发票 | （增值税专用发票）, OCR's two lines on one
    row or stacked) is the printed title it belongs to: its line, alone or joined to the line before or
    after it, holds a known title exactly, with at most four characters more before it (a province)."""
    if f.span is None:
        return
    titles = sorted({re.sub(r"\s+", "", to_halfwidth(t)) for t in phrases}, key=len, reverse=True)
    cur = re.sub(r"\s+", "", to_halfwidth(f.value or ""))
    if not cur or any(cur.endswith(t) for t in titles):
        return
    offsets = _line_starts(page)
    li = _line_of(offsets, f.span[0])

    def near(a: Line, b: Line) -> bool:         # on one row, or b stacked right under a
        h = max(1.0, a.box[3] - a.box[1], b.box[3] - b.box[1])
        return abs((a.box[1] + a.box[3]) - (b.box[1] + b.box[3])) < h or -0.3 * h <= b.box[1] - a.box[3] < 1.5 * h
    for lo, hi in ((li, li), (li, li + 1), (li - 1, li)):
        if lo < 0 or hi >= len(page.lines) or (hi > lo and not near(page.lines[lo], page.lines[hi])):
            continue
        joined = "".join(re.sub(r"\s+", "", to_halfwidth(page.lines[k].text)) for k in range(lo, hi + 1))
        for t in titles:
            k = joined.find(t)
            if 0 <= k <= 4 and cur in joined[:k + len(t)]:
                f.value = f.raw = joined[:k + len(t)]
                boxes = [page.lines[i].box for i in range(lo, hi + 1)]
                f.box = [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                         max(b[3] for b in boxes)]
                f.span = [int(offsets[lo]), int(offsets[hi] + len(page.lines[hi].text))]
                return


def _strip_key_phrase(sp: Span, text: str, phrases: list[str]) -> Span:
    """A value that begins with its own key phrase (a span grown left over 开票人 on a line without a
    colon) starts after the phrase and any spaces or colon that follow it."""
    body = text[sp.start:sp.end]
    for ph in sorted(phrases, key=len, reverse=True):
        i, j = 0, 0      # match the phrase against the text, skipping spaces in the text
        while i < len(body) and j < len(ph) and (body[i] == ph[j] or body[i].isspace()):
            j += body[i] == ph[j]
            i += 1
        if ph and j == len(ph) and i < len(body):
            while i < len(body) and (body[i].isspace() or body[i] in COLONS):
                i += 1
            if i < len(body):
                return Span(sp.key, sp.line, sp.start + i, sp.end, sp.score, sp.alts)
    return sp


def _whole_cells(spans: list[Span], page: Page) -> list[Span]:
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


def _to_segment_end(sp: Span, text: str, phrases: list[str]) -> Span:
    """Free text after its own key phrase (支付方式：微信支付) runs to the end of that colon segment:
    the model often stops a character or two early. Only when the text before the colon ends with one
    of the field's key phrases and nothing after the span looks like another cell (a wide gap, a colon)."""
    before = max((i for i in range(sp.start) if text[i] in COLONS), default=-1)
    if before < 0 or not phrases:
        return sp
    key = re.sub(r"\s+", "", text[:before])
    rest = text[sp.end:]
    if not any(key.endswith(ph) for ph in phrases) or not rest.strip() or any(c in COLONS for c in rest) \
            or re.search(r"\s{2,}", rest.rstrip()):
        return sp
    return Span(sp.key, sp.line, sp.start, len(text.rstrip()), sp.score, sp.alts)


def _whole_line(sp: Span, text: str, others: list[Span], phrases: list[str]) -> Span:
    """A free-text value alone on its OCR line (a name under its stacked label: 白兰华) of which the
    model tagged at least half but not all is the whole line, when the line has no colon, no other
    field's value and no key phrase beside the value."""
    body = text.strip()
    lead = len(text) - len(text.lstrip())
    if not body or any(c in COLONS for c in text) or (sp.start, sp.end) == (lead, lead + len(body)) or \
            any(o.line == sp.line and o.key != sp.key for o in others):
        return sp
    rest = re.sub(r"\s+", "", text[:sp.start] + text[sp.end:])
    if 2 * len(re.sub(r"\s+", "", text[sp.start:sp.end])) < len(re.sub(r"\s+", "", body)) or \
            any(ph and ph in rest for ph in phrases):
        return sp
    return Span(sp.key, sp.line, lead, lead + len(body), sp.score, sp.alts)


def _through_colon(f: Field, page: Page, taken: list[list[int]]) -> None:
    """Free text that is itself "label：content" (备注 项目：餐饮管理服务) of which the label was taken and
    the content was not (the model gave 餐饮管理 to a company name that lost elsewhere): a value that
    starts its line and ends at a colon runs to the end of the line, when the rest has no colon and no
    chosen value. (A label that is some field's key phrase never gets here: key text is dropped.)"""
    if f.span is None:
        return
    offsets = _line_starts(page)
    li = _line_of(offsets, f.span[0])
    line, base = page.lines[li], int(offsets[li])
    a, b = f.span[0] - base, f.span[1] - base
    text = line.text
    colon = b - 1 if text[b - 1:b] in tuple(COLONS) else b if text[b:b + 1] in tuple(COLONS) else None
    if colon is None or text[:a].strip():
        return
    end = len(text.rstrip())
    rest = text[colon + 1:end]
    if not rest.strip() or any(c in COLONS for c in rest) or \
            any(t != f.span and t[0] < base + end and base + colon < t[1] for t in taken):
        return
    f.raw = _clean(text[a:end])
    f.value = normalize_value("text", f.raw) or f.raw
    f.box = _char_box(line, a, end)
    f.span = [base + a, base + end]


def _drop_total_rows(doc: Document) -> None:
    """A nameless row whose amount is the sum of the other rows' amounts is the 合计 line under the
    table (a receipt prints it without ¥), not goods: drop it so the totals can claim it."""
    def amount(row: dict[str, Field]):
        return parse_amount(row["amount"].value) if "amount" in row else None
    for row in list(doc.items):
        others = [amount(r) for r in doc.items if r is not row]
        if "name" not in row and amount(row) is not None and others and None not in others \
                and sum(others) == amount(row):
            doc.items.remove(row)


def _is_item_row(row: dict[str, Field], page_text: str) -> bool:
    """Whether clustered cells make a goods row: it has a figure, and it is not the 合计 row (only
    ¥-marked figures, no name). A lone name fragment is text the model half-tagged elsewhere."""
    figures = [f for k, f in row.items() if k != "name" and re.search(r"\d", f.raw or "")]
    if not figures:
        return False

    def yen(f: Field) -> bool:
        before = page_text[:f.span[0]].rstrip(" ")[-1:] if f.span else ""
        return (f.raw or "").lstrip()[:1] in ("¥", "￥") or before in ("¥", "￥")
    return "name" in row or not all(yen(f) for f in figures)


def _char_box(line: Line, start: int, end: int) -> list[float]:
    """The part of a line's box under characters [start, end), by proportion of characters."""
    x0, y0, x1, y1 = line.box
    n = max(1, len(line.text))
    w = x1 - x0
    return [round(x0 + w * start / n, 1), y0, round(x0 + w * end / n, 1), y1]


def _clean(text: str) -> str:
    return text.strip().strip(":：").strip()


def _line_starts(page: Page) -> np.ndarray:
    """Offset of each line's first character in the page text (lines joined by newlines), plus the end."""
    return np.cumsum([0] + [len(ln.text) + 1 for ln in page.lines])


def _line_of(offsets: np.ndarray, pos: int) -> int:
    """Index of the line that holds page-text offset `pos`."""
    return int(np.searchsorted(offsets, pos, side="right") - 1)


class Extractor:
    """A loaded model with its vocabulary and schemas. Build with `Extractor.load` / `get_extractor`."""

    def __init__(self, model: Encoder, cfg: ExtractorConfig, vocab: Tokenizer, model_dir: Path | None = None):
        self.model = model
        self.model.eval()
        self.cfg = cfg
        self.vocab = vocab
        self.model_dir = model_dir
        self.tag_labels = cfg.tag_labels
        from data.schemas import load_schema, load_schema_file
        self.schemas = {}
        for name in cfg.doc_types:
            path = model_dir / "schemas" / f"{name}.yaml" if model_dir else None
            self.schemas[name] = load_schema_file(path) if path and path.is_file() else load_schema(name)

    @classmethod
    def load(cls, model_dir: str | Path = DEFAULT_MODEL_DIR) -> "Extractor":
        d = Path(model_dir)
        if not is_model_dir(d):
            raise ModelDirError(f"{d} is not a model directory (needs config.json, model_state.pdparams, "
                                f"vocab.txt); train one with `python -m training train --config "
                                f"configs/default.yaml --out DIR` or run scripts/train_default.sh")
        cfg = ExtractorConfig.load(d)
        model = cfg.build()
        state = paddle.load(str(d / "model_state.pdparams"))
        model.set_state_dict({k: v.astype("float32") if v.dtype == paddle.float16 else v for k, v in state.items()})
        return cls(model, cfg, Tokenizer.from_dir(d), d)

    # --- model ----------------------------------------------------------------------------------
    @paddle.no_grad()
    def _forward(self, ids: np.ndarray, bbox: np.ndarray, mask: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(tag probabilities, doc-type probabilities averaged over windows, link scores or None). Runs on
        the model thread (models/runtime.py): dygraph mode and Paddle's oneDNN state are per thread."""
        res = self.model(paddle.to_tensor(ids), paddle.to_tensor(bbox), None, paddle.to_tensor(mask))
        tags = paddle.nn.functional.softmax(res[0], -1).numpy()
        doc = paddle.nn.functional.softmax(res[1], -1).numpy().mean(0)
        return tags, doc, (res[2].numpy() if len(res) > 2 else None)

    def predict_page(self, page: Page) -> dict:
        """Raw predictions for one page: doc-type probabilities, per-character tag probabilities
        (NaN on whitespace) and a `link(a, b)` scorer between two (line, char) positions."""
        enc = self.vocab.encode_page(page.lines, page.width, page.height, self.cfg.max_len)
        n_tags = len(self.tag_labels)
        probs = [np.full((len(ln.text), n_tags), np.nan) for ln in page.lines]
        if not enc.ids:
            return {"doc": np.full(len(self.cfg.doc_types), 1 / max(1, len(self.cfg.doc_types))),
                    "probs": probs, "link": lambda a, b: None}
        arr = enc.arrays()
        used = int(arr["attention_mask"].sum(1).max())     # drop padding every window shares
        tags, doc, links = on_model_thread(self._forward, *(arr[k][:, :used]
                                                             for k in ("input_ids", "bbox", "attention_mask")))
        for t, row in enumerate(enc.merge(tags)):
            probs[enc.line[t]][enc.start[t]] = row
        token_of = {(enc.line[t], enc.start[t]): t for t in range(len(enc.ids))}

        def link(a: tuple[int, int], b: tuple[int, int]) -> float | None:
            ta, tb = token_of.get(a), token_of.get(b)
            if links is None or ta is None or tb is None:
                return None
            scores = [links[wi, w.position(ta), w.position(tb)] for wi, w in enumerate(enc.windows)
                      if w.start <= ta < w.end and w.start <= tb < w.end]
            return float(max(scores)) if scores else None
        return {"doc": doc, "probs": probs, "link": link}

    # --- decoding -------------------------------------------------------------------------------
    def _allowed(self, doc_type: str) -> np.ndarray:
        schema = self.schemas.get(doc_type)
        keys = set()
        if schema is not None:
            keys |= {f.key for f in schema.fields} | {f"items.{f.key}" for f in schema.item_fields}
        if doc_type == GENERIC:
            keys |= set(FORM_LABELS)
        return np.array([lab == "O" or lab[2:] in keys for lab in self.tag_labels])

    def extract(self, doc: Document, doc_type: str | None = None) -> Document:
        """Fill doc_type (+score), fields, items, pairs and warnings of `doc` (in place; also returned)."""
        t0 = time.perf_counter()
        preds = [self.predict_page(p) for p in doc.pages]
        if doc_type is None:
            total = sum((p["doc"] for p in preds), np.zeros(len(self.cfg.doc_types)))
            total = total / max(1e-9, total.sum())
            texts = [ln.text for p in doc.pages for ln in p.lines]
            best = _pick_type(total, self.cfg.doc_types, self.schemas, texts) if len(total) else 0
            doc.doc_type = self.cfg.doc_types[best] if self.cfg.doc_types else None
            doc.doc_type_score = round(float(total[best]), 4) if len(total) else None
        else:
            if doc_type not in self.schemas:
                raise ValueError(f"document type {doc_type!r} is not one this model knows; "
                                 f"choose from {', '.join(self.cfg.doc_types)}")
            doc.doc_type, doc.doc_type_score = doc_type, 1.0
        allowed = self._allowed(doc.doc_type)
        doc.fields, doc.items, doc.pairs = {}, [], []
        for page, pred in zip(doc.pages, preds):
            if doc.doc_type == GENERIC:
                doc.pairs += decode_form(page, pred, self.tag_labels, allowed)
            else:
                schema = self.schemas[doc.doc_type]
                free_text = {f.key for f in schema.fields if f.type == "text"}
                specs = {f.key: f for f in schema.fields}
                self._fields(doc, page, _spans(pred["probs"], self.tag_labels, allowed,
                                               [ln.text for ln in page.lines], free_text,
                                               lambda k, t: k in specs and _plausible(specs[k], t)))
        self._validate(doc)
        doc.timings["extract"] = doc.timings.get("extract", 0.0) + time.perf_counter() - t0
        return doc

    def _make_field(self, key: str, spec, page: Page, s: Span) -> Field:
        line = page.lines[s.line]
        raw = _clean(line.text[s.start:s.end])
        value = normalize_value(spec.type if spec else "text", raw)
        offset = sum(len(ln.text) + 1 for ln in page.lines[:s.line])
        return Field(key=key, value=value if value is not None else raw, raw=raw, score=round(s.score, 4),
                     box=_char_box(line, s.start, s.end), page=page.index, label=spec.label if spec else key,
                     span=[offset + s.start, offset + s.end])

    def _fields(self, doc: Document, page: Page, spans: list[Span]) -> None:
        schema = self.schemas[doc.doc_type]
        specs = {f.key: f for f in schema.fields}
        item_specs = {f.key: f for f in schema.item_fields}
        phrases = {k: [re.sub(r"\s+", "", ph) for ph in f.key_phrases] for k, f in specs.items()}
        used: set[tuple[int, int]] = set()
        header = [_rekey_by_row(_rekey_by_phrase(s, page.lines[s.line].text, phrases), page, phrases)
                  for s in spans if s.key in specs]
        every_phrase = [ph for phs in phrases.values() for ph in phs if ph]
        header = [_trim_to_type(_strip_key_phrase(s, page.lines[s.line].text, phrases.get(s.key, [])),
                                specs[s.key], page.lines[s.line].text) for s in header
                  if not _is_key_text(s, page.lines[s.line].text, every_phrase)]
        header = [_to_segment_end(s, page.lines[s.line].text, phrases.get(s.key, []))
                  if specs[s.key].type == "text" else s for s in header]
        header = [_whole_line(s, page.lines[s.line].text, header, every_phrase) if specs[s.key].type == "text"
                  else s for s in header]
        # a value that reads as its type (a date that parses, an 18-character tax ID) beats a more
        # confident one that does not; among equals the most confident wins
        for s in sorted(header, key=lambda s: (not _plausible(specs[s.key], page.lines[s.line].text[s.start:s.end]),
                                               -s.score)):
            if s.key not in doc.fields and _clean(page.lines[s.line].text[s.start:s.end]):
                doc.fields[s.key] = self._make_field(s.key, specs[s.key], page, s)
                used.add((s.line, s.start))
        self._complete_sums(doc, page, [s for s in header if (s.line, s.start) not in used], specs, schema)
        # line indices and text offsets (span) of a field refer to the page it was read on: a field of an
        # earlier page is never completed from this page's lines (that mixed two invoices of one PDF and
        # ran past the end of a shorter page: IndexError)
        here = {key: f for key, f in doc.fields.items() if f.page == page.index}
        for key, f in here.items():
            if specs[key].type == "text":
                self._join_bracket_tail(f, page, {ln for ln, _ in used})
                _through_colon(f, page, [g.span for g in here.values() if g is not f and g.span])
        if "title" in here and getattr(schema, "title_phrases", None):
            _complete_title(doc.fields["title"], page, schema.title_phrases)
            doc.fields["title"].value = _snap_title(doc.fields["title"].value, schema.title_phrases)
        # item rows: one per printed table row - cell centres clustered after taking out the page tilt
        item_spans = _whole_cells([s for s in spans if s.key.startswith("items.") and s.key[6:] in item_specs],
                                  page)
        cells = [(s.key[6:], self._make_field(s.key[6:], item_specs[s.key[6:]], page, s)) for s in item_spans]
        cells = [(k, f) for k, f in cells if f.raw and f.box]
        for k, f in cells:      # 货物名称 is printed *类别*名称; OCR often drops the first star, or reads
            if k != "name":     # the second as a quotation mark (会议服务“会议费)
                continue
            value = re.sub(r"(?<=[\u4e00-\u9fff])[“”\"＊※](?=[\u4e00-\u9fff])", "*", f.value or "", count=1)
            if re.fullmatch(r"[^*\s][^*]*\*[^*]+", value):
                value = "*" + value
            f.value = value
        if cells:
            quads = [ln.quad for ln in page.lines]
            height = float(np.median([np.hypot(*(np.subtract(q[3], q[0]))) for q in quads]))
            page_text = "\n".join(ln.text for ln in page.lines)
            for idx in cluster_rows([(k, f.box) for k, f in cells], height, page_slope(quads)):
                row: dict[str, Field] = {}
                for k, f in (cells[j] for j in idx):      # same key twice in a row: longer text, then score
                    if k not in row or (len(f.raw), f.score) > (len(row[k].raw), row[k].score):
                        row[k] = f
                if _is_item_row(row, page_text):
                    doc.items.append(row)
            _drop_total_rows(doc)
            self._complete_item_rows(doc, page, item_specs, height)
        self._fill_by_rules(doc, page, specs, schema)

    def _complete_item_rows(self, doc: Document, page: Page, item_specs: dict, height: float) -> None:
        """A row's quantity or tax the model missed (a lone "1" is easy to miss) is the untaken figure
        in the row's band that makes 数量 x 单价 = 金额 (or 金额 x 税率 = 税额) hold."""
        here = [f for row in doc.items for f in row.values()] + list(doc.fields.values())
        taken = {tuple(f.span) for f in here if f.span and f.page == page.index}
        starts = _line_starts(page)
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
                want["quantity"] = lambda v: abs(v * price - amount) <= Decimal("0.01") * max(1, v)
            rate = row["tax_rate"].value if "tax_rate" in row else None
            if "tax" not in row and "tax" in item_specs and rate and rate.endswith("%"):
                r = parse_amount(rate[:-1])
                if r is not None:
                    want["tax"] = lambda v: "." in str(v) and abs(v - amount * r / 100) <= Decimal("0.011")
            for key, ok in want.items():
                fits = []
                for li, ln in enumerate(page.lines):
                    text = ln.text.strip()
                    cy = (ln.box[1] + ln.box[3]) / 2
                    v = parse_amount(text)
                    span = (int(starts[li]) + ln.text.index(text[0]), int(starts[li]) + ln.text.index(text[0]) + len(text)) \
                        if text else None
                    if v is not None and v > 0 and span not in taken and any(abs(cy - y) < 0.6 * height for y in ys) \
                            and ok(v):
                        fits.append((li, span))
                if len(fits) == 1:
                    li, span = fits[0]
                    a = span[0] - int(starts[li])
                    row[key] = self._make_field(key, item_specs[key], page, Span("items." + key, li, a,
                                                                                 a + span[1] - span[0], 0.5))
                    taken.add(span)

    def _fill_by_rules(self, doc: Document, page: Page, specs: dict, schema) -> None:
        """A total the model did not tag at all, found by the arithmetic the invoice prints: the figure
        of 价税合计 equals its 大写 words; a missing term of 合计金额 + 合计税额 = 价税合计 is their
        difference; a missing 合计金额/税额 is the sum of the item rows. The page's figures are searched
        for that exact value, and a field is filled only when exactly one figure not already taken fits."""
        taken = [f.span for f in doc.fields.values() if f.span and f.page == page.index] + \
                [f.span for row in doc.items for f in row.values() if f.span and f.page == page.index]
        starts = _line_starts(page)
        figures = []            # (value, line, start, end) of every money figure on the page
        for li, ln in enumerate(page.lines):
            for m in re.finditer(r"[¥￥VYNX]?" + TYPE_SHAPES["amount"], ln.text):
                value = parse_amount(m.group())
                a, b = int(starts[li]) + m.start(), int(starts[li]) + m.end()
                if value is not None and "." in m.group() and not any(t[0] < b and a < t[1] for t in taken):
                    figures.append((value, li, m.start(), m.end()))

        def value_of(key: str):
            f = doc.fields.get(key)
            if f is None:
                return None
            # both types hold a decimal string once normalised (大写 words included)
            return parse_amount(f.value) if specs[key].type in ("amount", "amount_words") else None

        def fill(key: str, want) -> bool:
            if key in doc.fields or key not in specs or specs[key].type != "amount" or want is None:
                return False
            fits = [(li, a, b) for v, li, a, b in figures if v == want]
            if len(fits) != 1:
                return False
            li, a, b = fits[0]
            doc.fields[key] = self._make_field(key, specs[key], page, Span(key, li, a, b, 0.5))
            figures[:] = [fg for fg in figures if fg[1:] != fits[0]]
            return True

        # the 小写 figure given to a term of the sum: when it equals the 大写 words and the figure they
        # match is missing, it is that figure (the term is then found by the sum below)
        for rule in getattr(schema, "rules", []):
            if rule.check == "words_match" and rule.figure and rule.figure not in doc.fields and rule.words:
                words = value_of(rule.words)
                sums = [r for r in schema.rules if r.check == "sum" and r.equals == rule.figure]
                for term in (k for r in sums for k in r.fields):
                    if words is not None and value_of(term) == words and specs.get(term) and \
                            specs[term].type == "amount":
                        f = doc.fields.pop(term)
                        doc.fields[rule.figure] = Field(**{**f.__dict__, "key": rule.figure,
                                                           "label": specs[rule.figure].label})
                        break
        # a total the sum contradicts (价税合计 read as 2.00 beside ￥10493960.17): when the terms add up to
        # exactly one free figure on the page and the 大写 words do not stand by the value taken, that
        # figure is the total
        for rule in getattr(schema, "rules", []):
            if rule.check != "sum" or not rule.equals or rule.equals not in doc.fields or \
                    specs.get(rule.equals) is None or specs[rule.equals].type != "amount":
                continue
            parts = [value_of(k) if k in doc.fields else None for k in rule.fields]
            total = value_of(rule.equals)
            if not parts or None in parts or total is None or sum(parts) == total:
                continue
            words = [value_of(r.words) for r in schema.rules if r.check == "words_match" and r.figure == rule.equals
                     and r.words in doc.fields]
            if total in words:
                continue
            old = doc.fields.pop(rule.equals)
            if not fill(rule.equals, sum(parts)):
                doc.fields[rule.equals] = old
        for _ in range(3):       # one fill can make the next rule computable
            changed = False
            for rule in getattr(schema, "rules", []):
                if rule.check == "words_match" and rule.words and rule.figure:
                    changed |= fill(rule.figure, value_of(rule.words))
                elif rule.check == "sum" and rule.equals:
                    terms = list(rule.fields) + [rule.equals]
                    missing = [k for k in terms if k not in doc.fields]
                    known = {k: value_of(k) for k in terms if k in doc.fields}
                    if len(missing) != 1 or None in known.values():
                        continue
                    parts = sum(v for k, v in known.items() if k != rule.equals)
                    changed |= fill(missing[0], parts if missing[0] == rule.equals else known[rule.equals] - parts)
                elif rule.check == "items_sum" and rule.equals and rule.item_field and doc.items:
                    vals = [parse_amount(row[rule.item_field].value) for row in doc.items if rule.item_field in row]
                    if vals and None not in vals and len(vals) == len(doc.items):
                        changed |= fill(rule.equals, sum(vals))
            if not changed:
                break
        # 大写 words OCR misread (贰拾贰万壹仟叁佰参拾壹圆柒角攻分): when they are within one character in
        # eight of the words for the 小写 figure printed beside them, they say that figure
        for rule in getattr(schema, "rules", []):
            if rule.check != "words_match" or rule.words not in doc.fields or rule.figure not in doc.fields:
                continue
            words, figure = doc.fields[rule.words], value_of(rule.figure)
            if figure is None or figure < 0:
                continue
            said = parse_amount(words.value)
            # words that read as another amount are taken for a misreading only when the figure is
            # borne out by the invoice's sum (合计金额 + 合计税额 = 价税合计): then OCR, not the invoice, erred
            terms = [[value_of(k) if k in doc.fields else None for k in r.fields]
                     for r in schema.rules if r.check == "sum" and r.equals == rule.figure]
            summed = [t for t in terms if t and None not in t and sum(t) == figure]
            if said is not None and (said == figure or not summed):
                continue
            read = re.sub(r"[\s⊗ⓧ×Ⓧ⨂()（）]|人民币", "", words.raw)
            expected = format_amount_words(figure)
            off = edit_distance(read, expected) if read else len(expected)
            if off <= max(1, len(expected) // 8):
                words.value = normalize_value("amount", str(figure)) or str(figure)
                doc.warnings.append(f"{words.label} ({rule.words}) read as {words.raw}: taken as the words for "
                                    f"{rule.figure} {figure}, which differ from it in {off} character(s)")
        # an ID card's sex or birth date that OCR missed (a lone 男 is easy to miss) is printed inside a
        # valid ID number too: taken from there, with no box of its own, and said in a warning
        for rule in getattr(schema, "rules", []):
            if rule.check not in ("id_sex", "id_birth") or len(rule.fields) != 2:
                continue
            id_key, key = rule.fields
            if key in doc.fields or key not in specs or id_key not in doc.fields:
                continue
            number = normalize_code(doc.fields[id_key].value)
            if not is_valid_id_number(number):
                continue
            value = ("男" if int(number[16]) % 2 else "女") if rule.check == "id_sex" else \
                f"{number[6:10]}-{number[10:12]}-{number[12:14]}"
            doc.fields[key] = Field(key=key, value=value, raw="", score=round(0.5 * doc.fields[id_key].score, 4),
                                    box=None, page=page.index, label=specs[key].label)
            doc.warnings.append(f"{specs[key].label} ({key}) was not read on the page; {value} is taken "
                                f"from {specs[id_key].label} ({id_key})")

    @staticmethod
    def _join_bracket_below(f: Field, page: Page, used_lines: set[int]) -> None:
        """The other half of a split name: 智融生活超市 then （朝阳区店） as a separate OCR line just right of
        it, or stacked below it, the model tagging only the head. Such a line (one bracketed group, no
        other field) right of the head on its row, or right below and centred on it, is appended."""
        offsets = _line_starts(page)
        li = _line_of(offsets, f.span[0])
        line = page.lines[li]
        if f.span[1] - offsets[li] < len(line.text.rstrip()):
            return        # the value does not end its line
        x0, y0, x1, y1 = line.box
        h, cx = max(1.0, y1 - y0), (x0 + x1) / 2
        for mi, m in enumerate(page.lines):
            body = m.text.strip()
            below = -0.3 * h <= m.box[1] - y1 < 0.8 * h and \
                abs((m.box[0] + m.box[2]) / 2 - cx) < 0.3 * max(x1 - x0, m.box[2] - m.box[0])
            right = -0.8 * h <= m.box[0] - x1 < 1.5 * h and abs((m.box[1] + m.box[3]) - (y0 + y1)) < h
            if mi != li and mi not in used_lines and (below or right) and \
                    re.fullmatch(r"[（(][^（()）:：]{1,12}[）)]?", body):
                f.raw = f.raw + body
                f.value = normalize_value("text", f.raw) or f.raw
                f.box = [min(f.box[0], m.box[0]), f.box[1], max(f.box[2], m.box[2]), max(f.box[3], m.box[3])]
                if mi == li + 1:
                    f.span = [f.span[0], int(offsets[mi]) + len(m.text.rstrip())]
                return

    @staticmethod
    def _join_bracket_tail(f: Field, page: Page, used_lines: set[int]) -> None:
        """A free-text value that starts with an opening bracket (（朝阳区店）, （增值税专用发票）) lost its
        head to a separate OCR line just left of it on the same row, or, for a title printed in two
        stacked lines (电子发票 over （普通发票）), just above it and centred on it: prepend that line's
        text when it holds no key (no colon) and no other field."""
        # OCR may also cut a line just before the bracket and read the head's last character twice,
        # once on each side (博锦面包房 | 房（玄武区店）, or misread the second time when the two boxes
        # overlap: 云睿烘焙坊 | 市（西城区店）): then that character is dropped from the tail
        dup = len(f.raw) > 2 and f.raw[0] not in "（(" and f.raw[1] in "（(" and f.span is not None
        if f.raw and f.raw[0] not in "（(" and f.span is not None and not dup:
            Extractor._join_bracket_below(f, page, used_lines)
        if not f.raw or (f.raw[0] not in "（(" and not dup) or f.span is None:
            return
        offsets = _line_starts(page)
        li = _line_of(offsets, f.span[0])
        if f.span[0] - offsets[li] != len(page.lines[li].text) - len(page.lines[li].text.lstrip()):
            return       # the bracket is not where its line starts
        x0, y0, _, y1 = page.lines[li].box
        h = max(1.0, y1 - y0)
        best, gap = None, 1.5 * h
        for mi, m in enumerate(page.lines):
            mx0, my0, mx1, my1 = m.box
            g = x0 - mx1
            if mi != li and mi not in used_lines and -0.8 * h <= g < gap and abs((my0 + my1) - (y0 + y1)) < h \
                    and m.text.strip() and not any(c in COLONS for c in m.text) \
                    and (not dup or (g < 0.3 * h and m.text.strip().endswith(f.raw[0])) or g < -0.3 * h):
                best, gap = mi, g
        if best is None and dup:
            return
        if best is None:       # stacked: the nearest free line above whose centre sits over this line
            cx, w, gap = (x0 + page.lines[li].box[2]) / 2, page.lines[li].box[2] - x0, 1.0 * h
            for mi, m in enumerate(page.lines):
                mx0, my0, mx1, my1 = m.box
                g = y0 - my1
                if mi != li and mi not in used_lines and -0.3 * h <= g < gap and abs((mx0 + mx1) / 2 - cx) < 0.3 * w \
                        and m.text.strip() and not any(c in COLONS for c in m.text):
                    best, gap = mi, g
        if best is None:
            return
        head = page.lines[best]
        f.raw = head.text.strip() + f.raw[1 if dup else 0:]
        f.value = normalize_value("text", f.raw) or f.raw
        f.box = [min(f.box[0], head.box[0]), min(f.box[1], head.box[1]), max(f.box[2], head.box[2]),
                 max(f.box[3], head.box[3])]
        if best == li - 1:       # the page text runs head line, newline, this line: one span covers both
            f.span = [int(offsets[best]), f.span[1]]

    def _complete_sums(self, doc: Document, page: Page, spare: list[Span], specs: dict, schema) -> None:
        """A sum rule (合计金额 + 合计税额 = 价税合计) with one term missing takes the one unused amount
        on the page that makes it hold: the model found the figure but gave it to a neighbouring
        field. Nothing is filled when no candidate, or more than one, fits."""
        for rule in getattr(schema, "rules", []):
            if rule.check != "sum" or not rule.equals:
                continue
            terms = list(rule.fields) + [rule.equals]
            missing = [k for k in terms if k not in doc.fields and k in specs]
            if len(missing) != 1 or specs[missing[0]].type != "amount":
                continue
            known = {k: parse_amount(doc.fields[k].value) for k in terms if k in doc.fields}
            if None in known.values():
                continue
            gap = sum(v for k, v in known.items() if k != rule.equals) - known[rule.equals] \
                if rule.equals in known else None
            fits = []
            for sp in spare:
                value = parse_amount(_clean(page.lines[sp.line].text[sp.start:sp.end]).lstrip("¥￥"))
                if value is None:
                    continue
                if (gap is not None and value == -gap) or \
                        (gap is None and value == sum(known.values())):
                    fits.append(sp)
            if len(fits) == 1:
                sp = fits[0]
                doc.fields[missing[0]] = self._make_field(missing[0], specs[missing[0]], page,
                                                          Span(missing[0], sp.line, sp.start, sp.end, sp.score))

    def _validate(self, doc: Document) -> None:
        schema = self.schemas.get(doc.doc_type)
        if schema is None or doc.doc_type == GENERIC:
            return
        from data.validate import validate_fields
        # Field objects: the validators read `raw` first (大写金额 must be checked as words, not as
        # the figure it normalises to)
        values: dict = dict(doc.fields)
        values["items"] = [dict(row) for row in doc.items]
        result, warnings = validate_fields(schema, values)
        for key, ok in result.items():
            if key in doc.fields:
                doc.fields[key].valid = ok
            elif key.startswith("items[") and "]." in key:
                i, k = key[6:].split("].", 1)
                if int(i) < len(doc.items) and k in doc.items[int(i)]:
                    doc.items[int(i)][k].valid = ok
        doc.warnings += warnings


@functools.lru_cache(maxsize=4)
def _cached(model_dir: str) -> Extractor:
    return Extractor.load(model_dir)


def get_extractor(model_dir: str | Path | None = None) -> Extractor:
    """The process-wide extractor for a model directory (loaded on first use only). Safe from any thread:
    loaded on the model thread (models/runtime.py), where its forward passes run too."""
    return on_model_thread(_cached, str(Path(model_dir or DEFAULT_MODEL_DIR).resolve()))
