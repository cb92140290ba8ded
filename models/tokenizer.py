"""Characters -> token ids, where every token remembers which characters and which box it came from.

One token per visible character (CJK, digits, Latin letters, punctuation); whitespace gives no token
but keeps its place in the offsets. So a 20-digit invoice number is 20 tokens, and decoding a span
returns the ORIGINAL characters of the line (`Encoding.text(i, j)`), never the vocabulary strings:
a character missing from a BERT vocabulary becomes [UNK] yet still decodes to itself.

`Tokenizer.encode_page(lines, page_width, page_height, max_len, stride) -> Encoding` lays the page's
lines out in the given (reading) order, estimates each character's box by splitting its line quad in
proportion to character widths (CJK = 1, half-width = 1/2), and cuts the token sequence into windows
of `max_len` ([CLS] tokens [SEP] + padding) that overlap by `stride` tokens, so no character is dropped.
The box the model sees (`bbox`, 0..1000) is the line box by default (each token's line is the layout
cue that separates lines) or the character box with `box="char"`.

Vocabulary: the checkpoint's vocab.txt when given, else models/vocab/vocab.txt (built by
`python3 -m models.vocab.build` from the PP-OCR dictionary).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from data.document import Box, Line, quad_to_box
from data.geometry import char_width
from data.labels import IGNORE_INDEX

DEFAULT_VOCAB = Path(__file__).resolve().parent / "vocab" / "vocab.txt"
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CLS_BOX = [0, 0, 0, 0]
SEP_BOX = [1000, 1000, 1000, 1000]     # LayoutLM's convention for [SEP]


@dataclass
class Window:
    """One model input: page tokens [start, end) placed at positions 1..end-start (0 is [CLS])."""
    start: int
    end: int
    input_ids: list[int]
    bbox: list[list[int]]
    attention_mask: list[int]
    token_type_ids: list[int]

    def position(self, token: int) -> int:
        return token - self.start + 1


@dataclass
class Encoding:
    """A page's tokens (without specials) and its windows.

    Per page token t: `ids[t]`, `line[t]` (line index), `start[t]`/`end[t]` (character offsets in that
    line's text), `char_box[t]` (page pixels), `bbox[t]` (0..1000, what the model sees).
    """
    texts: list[str]
    ids: list[int] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    char_box: list[Box] = field(default_factory=list)
    bbox: list[list[int]] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def line_offsets(self) -> list[int]:
        """Start of each line in the page text `"\\n".join(texts)` (Field.span's coordinates)."""
        offsets, pos = [], 0
        for t in self.texts:
            offsets.append(pos)
            pos += len(t) + 1
        return offsets

    def text(self, first: int, last: int) -> str:
        """Original characters covered by page tokens first..last (inclusive), lines joined by ''."""
        pieces = []
        t = first
        while t <= last:
            ln, s = self.line[t], self.start[t]
            while t + 1 <= last and self.line[t + 1] == ln:
                t += 1
            pieces.append(self.texts[ln][s:self.end[t]])
            t += 1
        return "".join(pieces)

    def page_span(self, first: int, last: int) -> list[int]:
        """[start, end) offsets of tokens first..last in the page text."""
        off = self.line_offsets
        return [off[self.line[first]] + self.start[first], off[self.line[last]] + self.end[last]]

    def arrays(self) -> dict[str, np.ndarray]:
        """Model inputs for all windows: input_ids/token_type_ids/attention_mask [W, T], bbox [W, T, 4]."""
        return {
            "input_ids": np.array([w.input_ids for w in self.windows], dtype=np.int64),
            "bbox": np.array([w.bbox for w in self.windows], dtype=np.int64).reshape(len(self.windows), -1, 4),
            "token_type_ids": np.array([w.token_type_ids for w in self.windows], dtype=np.int64),
            "attention_mask": np.array([w.attention_mask for w in self.windows], dtype=np.int64),
        }

    def owners(self) -> list[tuple[int, int]]:
        """For each page token, (window, position) of the window where it sits farthest from an
        edge: the copy whose context is widest, used when merging window predictions."""
        best: list[tuple[int, int, int]] = [(-1, -1, -1)] * len(self.ids)
        for wi, w in enumerate(self.windows):
            for t in range(w.start, w.end):
                margin = min(t - w.start, w.end - 1 - t)
                if margin > best[t][0]:
                    best[t] = (margin, wi, w.position(t))
        return [(wi, pos) for _, wi, pos in best]

    def merge(self, per_window: np.ndarray) -> np.ndarray:
        """[W, T, ...] window outputs -> [N, ...] one row per page token (see `owners`)."""
        per_window = np.asarray(per_window)
        if not self.ids:
            return per_window[:0, 0] if per_window.ndim >= 2 else per_window[:0]
        wi, pos = map(np.array, zip(*self.owners()))
        return per_window[wi, pos]

    def scatter(self, page_values: Sequence[int], fill: int = IGNORE_INDEX) -> np.ndarray:
        """[N] page-token values (e.g. tag labels) -> [W, T] for every window; specials get `fill`."""
        length = len(self.windows[0].input_ids)
        out = np.full((len(self.windows), length), fill, dtype=np.int64)
        for wi, w in enumerate(self.windows):
            out[wi, 1:1 + w.end - w.start] = page_values[w.start:w.end]
        return out


def char_quads(text: str, quad: Sequence[Sequence[float]]) -> list[list[list[float]]]:
    """Split a line quad along its reading direction in proportion to character widths."""
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = [tuple(map(float, p)) for p in quad]
    widths = [char_width(c) for c in text]
    total = sum(widths) or 1.0
    quads, acc = [], 0.0
    for w in widths:
        a, b = acc / total, (acc + w) / total
        acc += w
        top_a = (x0 + (x1 - x0) * a, y0 + (y1 - y0) * a)
        top_b = (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)
        bot_b = (x3 + (x2 - x3) * b, y3 + (y2 - y3) * b)
        bot_a = (x3 + (x2 - x3) * a, y3 + (y2 - y3) * a)
        quads.append([list(top_a), list(top_b), list(bot_b), list(bot_a)])
    return quads


def normalise_box(box: Box, width: float, height: float) -> list[int]:
    """Page pixels -> integers 0..1000 (LayoutLM's coordinate buckets)."""
    sx, sy = 1000.0 / max(width, 1), 1000.0 / max(height, 1)
    x0, y0, x1, y1 = box
    return [int(min(1000, max(0, round(v)))) for v in (x0 * sx, y0 * sy, x1 * sx, y1 * sy)]


class Tokenizer:
    """Character-level tokenizer over a BERT-style vocab.txt (see module doc)."""

    def __init__(self, vocab: list[str]):
        missing = [s for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]") if s not in vocab]
        if missing:
            raise ValueError(f"vocabulary lacks special tokens {missing}; use a BERT/ERNIE vocab.txt "
                             "or models/vocab/vocab.txt")
        self.vocab = list(vocab)
        self.index = {tok: i for i, tok in enumerate(self.vocab)}
        self.pad_id, self.unk_id = self.index["[PAD]"], self.index["[UNK]"]
        self.cls_id, self.sep_id = self.index["[CLS]"], self.index["[SEP]"]
        self.mask_id = self.index.get("[MASK]", self.unk_id)
        self._cache: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> "Tokenizer":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"vocabulary {path} not found")
        # keep exact lines: a vocab line may be a symbol, and ids are line numbers
        lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
        return cls([ln[:-1] if ln.endswith("\r") else ln for ln in lines])

    @classmethod
    def from_dir(cls, model_dir: str | Path | None = None) -> "Tokenizer":
        """The checkpoint's vocab.txt when `model_dir` has one, else the bundled default vocab."""
        if model_dir is not None and (Path(model_dir) / "vocab.txt").is_file():
            return cls.from_file(Path(model_dir) / "vocab.txt")
        if model_dir is not None:
            raise FileNotFoundError(f"{model_dir} has no vocab.txt; the token ids of its weights "
                                    "depend on it, so copy the checkpoint's vocab.txt there")
        return cls.from_file(DEFAULT_VOCAB)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def char_id(self, ch: str) -> int:
        """Id of one character: exact, else its NFKC form (full-width -> half-width), else lower
        case (uncased BERT vocabs), else [UNK]."""
        hit = self._cache.get(ch)
        if hit is None:
            hit = self.index.get(ch)
            if hit is None:
                norm = unicodedata.normalize("NFKC", ch)
                hit = self.index.get(norm, self.index.get(norm.lower(), self.index.get(ch.lower(), self.unk_id)))
            self._cache[ch] = hit
        return hit

    def tokenize(self, text: str) -> list[tuple[int, int, int]]:
        """(id, char start, char end) for every non-whitespace character of `text`."""
        return [(self.char_id(ch), i, i + 1) for i, ch in enumerate(text) if not ch.isspace()]

    def encode_page(self, lines: Sequence[Line], page_width: float, page_height: float,
                    max_len: int = 512, stride: int | None = None, box: str = "line") -> Encoding:
        """Tokens of all lines in order, cut into overlapping windows (see module doc).

        `stride` (tokens shared by consecutive windows) defaults to a quarter of a window.
        """
        if box not in ("line", "char"):
            raise ValueError(f"box must be 'line' or 'char', not {box!r}")
        if max_len < 3:
            raise ValueError(f"max_len {max_len} leaves no room for text between [CLS] and [SEP]")
        room = max_len - 2
        stride = room // 4 if stride is None else stride
        if not 0 <= stride < room:
            raise ValueError(f"stride {stride} must be >= 0 and below max_len - 2 = {room}")
        enc = Encoding(texts=[ln.text for ln in lines])
        for li, ln in enumerate(lines):
            quads = char_quads(ln.text, ln.quad)
            line_norm = normalise_box(quad_to_box(ln.quad), page_width, page_height)
            for tid, s, e in self.tokenize(ln.text):
                cbox = quad_to_box(quads[s])
                enc.ids.append(tid)
                enc.line.append(li)
                enc.start.append(s)
                enc.end.append(e)
                enc.char_box.append(cbox)
                enc.bbox.append(line_norm if box == "line" else normalise_box(cbox, page_width, page_height))
        n, step = len(enc.ids), room - stride
        starts = [0] if n <= room else list(range(0, n - room, step)) + [n - room]
        for s in starts:
            e = min(n, s + room)
            ids = [self.cls_id] + enc.ids[s:e] + [self.sep_id]
            boxes = [CLS_BOX] + enc.bbox[s:e] + [SEP_BOX]
            pad = max_len - len(ids)
            enc.windows.append(Window(start=s, end=e, input_ids=ids + [self.pad_id] * pad,
                                      bbox=boxes + [CLS_BOX] * pad,
                                      attention_mask=[1] * len(ids) + [0] * pad,
                                      token_type_ids=[0] * max_len))
        return enc
