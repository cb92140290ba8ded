"""Page lines -> model input windows: character tokens, each with its line's box (0..1000) and offsets.

This is the one encoding both training and inference use, so a model sees at run time exactly what it
was trained on. Characters are the tokens: OCR emits characters, tags are per character, and a tax ID
stays recoverable digit by digit. Whitespace is skipped (OCR rarely emits it and it carries no value).

Pages longer than a window are cut into overlapping windows on line boundaries; inference averages
the tag probabilities of a character over every window that holds it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)


class CharVocab:
    """Character -> id, BERT's special tokens first. Unknown characters map to [UNK]."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.index = {t: i for i, t in enumerate(tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, ch: str) -> int:
        return self.index.get(ch, UNK)

    @classmethod
    def from_charset(cls, chars: list[str]) -> "CharVocab":
        seen = dict.fromkeys(SPECIALS)
        for ch in chars:
            if len(ch) == 1 and not ch.isspace():
                seen.setdefault(ch)
        # full-width forms map to half-width before lookup, but keep common CJK punctuation
        return cls(list(seen))

    @classmethod
    def load(cls, path: str | Path) -> "CharVocab":
        tokens = Path(path).read_text(encoding="utf-8").split("\n")
        while tokens and tokens[-1] == "":
            tokens.pop()
        return cls(tokens)

    def save(self, path: str | Path) -> None:
        Path(path).write_text("\n".join(self.tokens) + "\n", encoding="utf-8")


def ocr_vocab() -> CharVocab:
    """Everything PP-OCR's recogniser can emit, plus the specials (the from-scratch vocabulary)."""
    from models.ocr_runtime import ModelPaths, load_charset
    chars = load_charset(ModelPaths.bundled().keys)[1:]
    extra = list("０１２３４５６７８９：（）￥，。；、") + [chr(c) for c in range(0x21, 0x7F)]
    return CharVocab.from_charset(chars + extra)


@dataclass
class Window:
    """One model input: ids and boxes with [CLS] first; `where[i]` = (line, char) of token i or None."""
    ids: list[int]
    boxes: list[list[int]]
    where: list[tuple[int, int] | None]
    first_line: int
    last_line: int          # exclusive


def norm_box(box: list[float], width: float, height: float) -> list[int]:
    w, h = max(1.0, float(width)), max(1.0, float(height))
    x0, y0, x1, y1 = box
    clip = lambda v: int(min(1000, max(0, round(v))))
    return [clip(x0 * 1000 / w), clip(y0 * 1000 / h), clip(x1 * 1000 / w), clip(y1 * 1000 / h)]


def line_tokens(text: str) -> list[int]:
    """Offsets of the characters of a line that become tokens (all but whitespace)."""
    return [i for i, ch in enumerate(text) if not ch.isspace()]


def make_windows(lines: list[tuple[str, list[float]]], width: float, height: float, vocab: CharVocab,
                 max_len: int = 512, overlap: float = 0.5) -> list[Window]:
    """Windows of at most `max_len` tokens ([CLS] included) over lines in reading order.

    Each window starts on a line boundary; the next starts about `overlap` of the way into the
    previous, so every character appears at least once with some context on both sides. A single
    line longer than a window is cut.
    """
    from data.normalize import to_halfwidth
    per_line = []
    for li, (text, box) in enumerate(lines):
        b = norm_box(box, width, height)
        toks = [(vocab.id(to_halfwidth(text[ci]).upper() if vocab.id(text[ci]) == UNK else text[ci]), b, (li, ci))
                for ci in line_tokens(text)]
        per_line.append(toks)
    room = max_len - 1
    windows: list[Window] = []
    start = 0
    n = len(lines)
    while start < n or (not windows):
        ids, boxes, where = [CLS], [[0, 0, 0, 0]], [None]
        li = start
        cut_at = None
        while li < n:
            toks = per_line[li]
            if len(ids) - 1 + len(toks) > room:
                if len(ids) == 1:          # one huge line: take what fits
                    toks = toks[:room]
                    ids += [t[0] for t in toks]; boxes += [t[1] for t in toks]; where += [t[2] for t in toks]
                    li += 1
                break
            if cut_at is None and len(ids) - 1 >= overlap * room:
                cut_at = li
            ids += [t[0] for t in toks]; boxes += [t[1] for t in toks]; where += [t[2] for t in toks]
            li += 1
        windows.append(Window(ids, boxes, where, start, li))
        if li >= n:
            break
        start = cut_at if cut_at is not None and cut_at > start else li
    return windows
