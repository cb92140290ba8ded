"""Corpus records -> tagged lines (ground truth or real OCR) -> noisy model windows -> padded batches.

Two sources of tagged lines per generated page:
- `gt_lines`: the generator's own lines, tags from each field's line and span. Noise
  (training/noise.py) then imitates OCR on them, a fresh draw every epoch.
- `ocr_lines`: what PP-OCR really read from the rendered image, tags placed by aligning each
  ground-truth value to the OCR lines that overlap its box (data/align.py). No extra noise: this
  is the real thing, with its real splits, merges and misreads.

Generic-form entities carry their line id in the tag ("B-question#7") through the noise so links
can be set on the first token of each entity; the id is stripped when tags become label ids.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from data.align import align_value
from data.corpus import Record, doc_type_of
from data.document import Line, Page, box_to_quad, quad_to_box
from data.labels import FORM_KEYS, item_tag_key
from data.labels import IGNORE_INDEX as IGNORE
from models.tokenizer import Tokenizer
from training.noise import NoiseConfig, TaggedLine, add_noise


@dataclass
class TaggedPage:
    doc_type: str
    width: float
    height: float
    lines: list[TaggedLine]
    links: set[tuple[int, int]] = field(default_factory=set)   # (question id, answer id)
    source: str = "gt"                                          # gt | ocr


def _box(line: dict) -> list[float]:
    if line.get("box"):
        return [float(v) for v in line["box"]]
    return quad_to_box(line["quad"])


def _set_span(tags: list[str], start: int, end: int, key: str) -> None:
    start, end = max(0, start), min(len(tags), end)
    for i in range(start, end):
        tags[i] = ("B-" if i == start else "I-") + key


def _field_entries(rec: Record) -> list[tuple[str, dict]]:
    """(tag key, field dict) for the page's fields and item-row fields."""
    out = [(k, f) for k, f in (rec.get("fields") or {}).items() if isinstance(f, dict)]
    for row in rec.get("items") or []:
        out += [(item_tag_key(k), f) for k, f in row.items() if isinstance(f, dict)]
    return out


def _form_entries(rec: Record) -> tuple[list[tuple[int, str, dict]], set[tuple[int, int]]]:
    """(line index, label, line) for header/question/answer lines, and links as (question id, answer id)."""
    ents, links = [], set()
    for i, ln in enumerate(rec.get("lines") or []):
        if ln.get("label") in FORM_KEYS:
            ents.append((i, ln["label"], ln))
        for pair in ln.get("linking") or []:
            if len(pair) == 2:
                links.add((int(pair[0]), int(pair[1])))
    return ents, links


def gt_lines(rec: Record) -> TaggedPage:
    """The generator's lines with their tags."""
    lines = rec.get("lines") or []
    tagged = [TaggedLine(text=ln["text"], box=_box(ln), tags=["O"] * len(ln["text"]),
                         id=int(ln.get("id", i))) for i, ln in enumerate(lines)]
    index_of = {int(ln.get("id", i)): i for i, ln in enumerate(lines)}   # fields name lines by id
    for key, f in _field_entries(rec):
        li = index_of.get(f.get("line"), f.get("line")) if f.get("line") is not None else None
        if li is None or not (0 <= li < len(tagged)):
            continue
        text = tagged[li].text
        span = f.get("span")
        if not span:
            m = align_value(str(f.get("text") or f.get("value") or ""), [text])
            if m is None:
                continue
            span = [m.start, m.end]
        _set_span(tagged[li].tags, span[0], span[1], key)
    ents, links = _form_entries(rec) if doc_type_of(rec) == "generic_form" else ([], set())
    for i, label, _ln in ents:
        t = tagged[i]
        nz = [j for j, ch in enumerate(t.text) if not ch.isspace()]
        if nz:
            _set_span(t.tags, nz[0], nz[-1] + 1, f"{label}#{t.id}")
        t.label = label
    return TaggedPage(doc_type_of(rec), float(rec.get("width") or 1000), float(rec.get("height") or 1000),
                      tagged, links, "gt")


def _overlaps(a: list[float], b: list[float], pad: float) -> bool:
    return a[0] - pad < b[2] and b[0] - pad < a[2] and a[1] - pad < b[3] and b[1] - pad < a[3]


def ocr_lines(rec: Record, page: Page, min_score: float = 0.7) -> TaggedPage:
    """Real OCR lines of a generated page, tagged by aligning each ground-truth value to the OCR lines
    near its box. Values that cannot be found stay untagged (O), as OCR lost them."""
    texts = [ln.text for ln in page.lines]
    boxes = [ln.box for ln in page.lines]
    tagged = [TaggedLine(text=t, box=list(b), tags=["O"] * len(t)) for t, b in zip(texts, boxes)]
    taken: list[tuple[int, int, int]] = []

    def place(value: str, box: list[float] | None, key: str) -> None:
        if not value or not value.strip():
            return
        h = (box[3] - box[1]) if box else 0
        cand = [i for i in range(len(texts)) if box is None or _overlaps(boxes[i], box, 0.5 * h)]
        if not cand:
            return
        masked = []
        for i in cand:
            chars = list(texts[i])
            for li, s, e in taken:
                if li == i:
                    for j in range(s, e):
                        chars[j] = "\u0000"
            masked.append("".join(chars))
        m = align_value(value, masked, min_score)
        if m is None:
            return
        li = cand[m.line]
        taken.append((li, m.start, m.end))
        _set_span(tagged[li].tags, m.start, m.end, key)

    entries = sorted(_field_entries(rec), key=lambda kf: -len(str(kf[1].get("text") or kf[1].get("value") or "")))
    for key, f in entries:
        place(str(f.get("text") or f.get("value") or ""), f.get("box"), key)
    ents, links = _form_entries(rec) if doc_type_of(rec) == "generic_form" else ([], set())
    for i, label, ln in ents:
        place(ln["text"], _box(ln) if (ln.get("box") or ln.get("quad")) else None,
              f"{label}#{int(ln.get('id', i))}")
    return TaggedPage(doc_type_of(rec), float(page.width), float(page.height), tagged, links, "ocr")


@dataclass
class Sample:
    ids: list[int]
    boxes: list[list[int]]
    tags: list[int]
    doc_type: int
    links: list[tuple[int, int]]         # (question token, answer token)
    link_rows: list[int]                 # tokens whose link row counts in the loss
    link_cols: list[int]


def encode_page(page: TaggedPage, tok: Tokenizer, tag_index: dict[str, int], type_index: dict[str, int],
                max_len: int) -> list[Sample]:
    """Model windows of one tagged page (models/tokenizer.py) with token labels, doc type, form links."""
    lines = [Line(text=ln.text, quad=box_to_quad(ln.box)) for ln in page.lines]
    enc = tok.encode_page(lines, page.width, page.height, max_len)
    doc = type_index.get(page.doc_type, IGNORE)
    page_tags, firsts = [], {}
    for t in range(len(enc.ids)):
        name, _, ent = page.lines[enc.line[t]].tags[enc.start[t]].partition("#")
        page_tags.append(tag_index.get(name, 0))
        if ent and name.startswith("B-"):
            firsts.setdefault(int(ent), (name[2:], t))
    out = []
    for w in enc.windows:
        n = sum(w.attention_mask)
        tags = [IGNORE] + page_tags[w.start:w.end] + [IGNORE]
        inside = {e: (lab, w.position(t)) for e, (lab, t) in firsts.items() if w.start <= t < w.end}
        rows = [pos for lab, pos in inside.values() if lab == "question"]
        cols = [pos for lab, pos in inside.values()]
        links = [(inside[q][1], inside[a][1]) for q, a in page.links
                 if q in inside and a in inside and inside[q][0] == "question"]
        out.append(Sample(w.input_ids[:n], w.bbox[:n], tags, doc, links, rows, cols))
    return out


def collate(samples: list[Sample]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(inputs, labels) as numpy arrays padded to the longest sample."""
    n, t = len(samples), max(len(s.ids) for s in samples)
    ids = np.zeros((n, t), "int64")
    boxes = np.zeros((n, t, 4), "int64")
    mask = np.zeros((n, t), "int64")
    tags = np.full((n, t), IGNORE, "int64")
    doc = np.array([s.doc_type for s in samples], "int64")
    links = np.zeros((n, t, t), "float32")
    link_mask = np.zeros((n, t, t), "float32")
    for i, s in enumerate(samples):
        k = len(s.ids)
        ids[i, :k], boxes[i, :k], mask[i, :k], tags[i, :k] = s.ids, s.boxes, 1, s.tags
        for r in s.link_rows:
            link_mask[i, r, s.link_cols] = 1.0
        for q, a in s.links:
            links[i, q, a] = 1.0
    return ({"input_ids": ids, "bbox": boxes, "attention_mask": mask},
            {"tags": tags, "doc_type": doc, "links": links, "link_mask": link_mask})


class TrainingSet:
    """Base pages (ground truth and OCR-labelled) that yield freshly noised windows each epoch."""

    def __init__(self, pages: list[TaggedPage], vocab: Tokenizer, tag_index: dict[str, int],
                 type_index: dict[str, int], max_len: int, noise: NoiseConfig, seed: int = 0):
        self.pages, self.vocab, self.tag_index, self.type_index = pages, vocab, tag_index, type_index
        self.max_len, self.noise = max_len, noise
        self.rng = random.Random(seed)

    def epoch(self) -> list[Sample]:
        out: list[Sample] = []
        for page in self.pages:
            if page.source == "gt":
                noisy = add_noise(page.lines, self.noise, self.rng)
                page = TaggedPage(page.doc_type, page.width, page.height, noisy, page.links, "gt")
            out += encode_page(page, self.vocab, self.tag_index, self.type_index, self.max_len)
        self.rng.shuffle(out)
        return out

    def batches(self, batch_size: int, samples: list[Sample]) -> list[list[Sample]]:
        """Batches of similar length (less padding), in random order."""
        order = sorted(samples, key=lambda s: len(s.ids))
        groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        self.rng.shuffle(groups)
        return groups
