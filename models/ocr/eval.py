"""How well OCR lines match ground-truth lines: character error rate, and exactness of long numbers.

Matching is by geometry: an OCR line belongs to the ground-truth line (or block) whose box holds most
of its area, the ground-truth box being widened by half its smaller side (at most `MATCH_MARGIN_PX`)
because annotated boxes are often tight glyph boxes or a few pixels off, while detector quads are
grown around the text; the OCR lines of a block are joined in reading order. Ground-truth lines without a box
are compared, as one string, with the OCR lines that matched no box. Both sides are NFKC-normalised
and stripped of whitespace first, so ':' and '：' or a space the annotator typed are not errors.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

LONG_DIGITS = re.compile(r"\d{8,}")
MATCH_MARGIN_PX = 15.0
MIN_OVERLAP = 0.3          # share of an OCR line's area that must fall in the (widened) GT box


def normalise(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


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


def substring_distance(needle: str, hay: str) -> int:
    """Smallest edit distance between `needle` and any substring of `hay` (free start and end in hay)."""
    prev = [0] * (len(hay) + 1)
    for i, cn in enumerate(needle, 1):
        cur = [i]
        for j, ch in enumerate(hay, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (cn != ch)))
        prev = cur
    return min(prev)


def _overlap_fraction(inner: list[float], outer: list[float]) -> float:
    """Share of `inner`'s area that lies inside `outer`."""
    ix = max(0.0, min(inner[2], outer[2]) - max(inner[0], outer[0]))
    iy = max(0.0, min(inner[3], outer[3]) - max(inner[1], outer[1]))
    area = max(1e-6, (inner[2] - inner[0]) * (inner[3] - inner[1]))
    return ix * iy / area


def _widen(box: list[float]) -> list[float]:
    m = min(MATCH_MARGIN_PX, 0.5 * min(box[2] - box[0], box[3] - box[1]))
    return [box[0] - m, box[1] - m, box[2] + m, box[3] + m]


@dataclass
class CERCounts:
    """Summable counts; rates are computed at the end so pages weigh by their characters."""
    errors: int = 0
    chars: int = 0
    digit_errors: int = 0
    digit_chars: int = 0
    numbers: int = 0
    numbers_exact: int = 0
    missed_numbers: list[str] = field(default_factory=list)

    def add(self, other: "CERCounts") -> "CERCounts":
        self.errors += other.errors
        self.chars += other.chars
        self.digit_errors += other.digit_errors
        self.digit_chars += other.digit_chars
        self.numbers += other.numbers
        self.numbers_exact += other.numbers_exact
        self.missed_numbers += other.missed_numbers
        return self

    @property
    def cer(self) -> float:
        return self.errors / max(1, self.chars)

    @property
    def digit_cer(self) -> float:
        return self.digit_errors / max(1, self.digit_chars)


def line_pairs(ocr_lines: list[tuple[str, list[float]]], gt_lines: list[tuple[str, list[float] | None]]
               ) -> list[tuple[str, str]]:
    """(ground truth, what OCR read there) per boxed ground-truth line, in `gt_lines` order (both
    normalised), then one pair of the unboxed lines and the OCR lines that matched no box, if any."""
    boxed = [(normalise(t), _widen(b)) for t, b in gt_lines if b]
    unboxed = "".join(normalise(t) for t, b in gt_lines if not b)
    assigned: list[list[str]] = [[] for _ in boxed]
    leftover: list[str] = []
    for text, box in ocr_lines:
        best, best_frac = -1, MIN_OVERLAP
        for i, (_, gbox) in enumerate(boxed):
            frac = _overlap_fraction(box, gbox)
            if frac > best_frac:
                best, best_frac = i, frac
        (assigned[best] if best >= 0 else leftover).append(normalise(text))
    pairs = [(gt, "".join(parts)) for (gt, _), parts in zip(boxed, assigned)]
    if unboxed:
        pairs.append((unboxed, "".join(leftover)))
    return pairs


def page_counts(ocr_lines: list[tuple[str, list[float]]], gt_lines: list[tuple[str, list[float] | None]]
                ) -> CERCounts:
    """Counts for one page. `ocr_lines`: (text, box) in reading order; `gt_lines`: (text, box or None)."""
    counts = CERCounts()
    for gt, hyp in line_pairs(ocr_lines, gt_lines):
        counts.errors += edit_distance(gt, hyp)
        counts.chars += len(gt)
        for number in LONG_DIGITS.findall(gt):
            dist = substring_distance(number, hyp)
            counts.digit_errors += dist
            counts.digit_chars += len(number)
            counts.numbers += 1
            counts.numbers_exact += dist == 0
            if dist:
                counts.missed_numbers.append(number)
    return counts
