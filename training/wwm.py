"""Whole-word masking (WWM) for masked-language-model adaptation on per-character tokens.

Tokens are characters (models/tokenizer.py), but masking single characters of a Chinese word lets the
model fill them from the word's other half, which teaches little. Chinese-BERT-wwm's fix, used here:
segment the text into words (jieba-fast) and mask every character of a chosen word together. Runs of
digits and Latin letters (tax IDs, invoice numbers, amounts such as 1234.50) count as one word each,
whatever jieba makes of them, so a number is hidden whole and must be predicted from its context.

Rate: words are drawn in random order until 15% of the tokens are covered (a word that would overshoot
is passed over, as in BERT's reference code); each chosen word is then, as a whole, replaced by [MASK]
(80%), by random characters (10%) or kept (10%). Labels are the original ids at chosen positions and
-100 (ignored by the loss) everywhere else.
"""
from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass

import jieba_fast

from data.labels import IGNORE_INDEX as IGNORE
from models.tokenizer import Encoding, Tokenizer, Window

jieba_fast.setLogLevel(logging.WARNING)

MASK_RATE = 0.15
P_MASK, P_RANDOM = 0.8, 0.1      # the remaining 0.1 keeps the word as it is
# digits and Latin letters (half- or full-width), with inner decimal points: 1234.50, MA01ABCD2X
ALNUM_RUN = re.compile(r"[0-9A-Za-z０-９Ａ-Ｚａ-ｚ]+(?:\.[0-9０-９]+)*")


def word_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) character spans of the words of `text`, whitespace excluded, in order.

    Alphanumeric runs are cut out first so jieba never splits (or merges) them; the Chinese and
    punctuation between them go to jieba.
    """
    spans: list[tuple[int, int]] = []

    def chinese(start: int, piece: str) -> None:
        pos = start
        for word in jieba_fast.cut(piece, HMM=True):
            s, e = pos, pos + len(word)
            pos = e
            # jieba may hand back whitespace runs or words with inner spaces: split them off
            for m in re.finditer(r"\S+", text[s:e]):
                spans.append((s + m.start(), s + m.end()))

    last = 0
    for m in ALNUM_RUN.finditer(text):
        if m.start() > last:
            chinese(last, text[last:m.start()])
        spans.append((m.start(), m.end()))
        last = m.end()
    if last < len(text):
        chinese(last, text[last:])
    return spans


def window_words(enc: Encoding, window: Window) -> list[list[int]]:
    """Model positions of each whole word in a window (words cut by the window edge are left out,
    because masking half a word is what WWM avoids). Page token t sits at `window.position(t)`; its
    characters are `enc.texts[enc.line[t]][enc.start[t]:enc.end[t]]`."""
    pos_of = {(enc.line[t], enc.start[t]): window.position(t) for t in range(window.start, window.end)}
    words = []
    for li in sorted({enc.line[t] for t in range(window.start, window.end)}):
        text = enc.texts[li]
        for s, e in word_spans(text):
            positions = [pos_of.get((li, c)) for c in range(s, e) if not text[c].isspace()]
            if positions and all(p is not None for p in positions):
                words.append(positions)
    return words


@dataclass
class MaskedWindow:
    input_ids: list[int]
    labels: list[int]                 # original id where a token was chosen, IGNORE elsewhere
    words: list[list[int]]            # token positions of each chosen word (for tests and reports)


def mask_words(ids: list[int], words: list[list[int]], n_real: int, tok: Tokenizer, rng: random.Random,
               rate: float = MASK_RATE) -> MaskedWindow:
    """Choose whole words covering about `rate` of the `n_real` text tokens and corrupt them 80/10/10."""
    budget = max(1, round(rate * n_real)) if words else 0
    order = list(range(len(words)))
    rng.shuffle(order)
    chosen, covered = [], 0
    for wi in order:
        if covered >= budget:
            break
        if covered + len(words[wi]) > budget:
            continue
        chosen.append(words[wi])
        covered += len(words[wi])
    special = {tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id}
    out, labels = list(ids), [IGNORE] * len(ids)
    for word in chosen:
        r = rng.random()
        for p in word:
            labels[p] = ids[p]
            if r < P_MASK:
                out[p] = tok.mask_id
            elif r < P_MASK + P_RANDOM:
                while True:           # a random character, never a special token
                    out[p] = rng.randrange(tok.vocab_size)
                    if out[p] not in special:
                        break
    return MaskedWindow(out, labels, sorted(chosen))


def mask_window(enc: Encoding, window: Window, tok: Tokenizer, rng: random.Random,
                rate: float = MASK_RATE) -> MaskedWindow:
    """Whole-word masking of one window of `tok.encode_page(...)`; [CLS], [SEP] and padding are never chosen."""
    return mask_words(window.input_ids, window_words(enc, window), window.end - window.start, tok, rng, rate)
