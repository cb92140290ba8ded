"""Edit distance and longest common subsequence of short strings: one implementation for OCR scoring
(models/ocr/eval.py), item repair (models/extraction/items.py), title evidence and 大写 words
(models/extraction/doctype.py, arithmetic.py)."""
from __future__ import annotations


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insert, delete, substitute all cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of two strings (characters of `a` found in order in `b`)."""
    prev = [0] * (len(b) + 1)
    for ch in a:
        cur = [0]
        for j, c in enumerate(b):
            cur.append(prev[j] + 1 if ch == c else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]
