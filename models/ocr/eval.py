"""How well OCR lines match ground-truth lines: character error rate, and exactness of long numbers.

Matching is by geometry: an OCR line belongs to the ground-truth line (or block) whose box holds most
of its area, the ground-truth box being widened by half its smaller side (at most `MATCH_MARGIN_PX`)
because annotated boxes are often tight glyph boxes or a few pixels off, while detector quads are
grown around the text; the OCR lines of a block are joined (v1: in page reading order). Ground-truth lines
without a box are compared with the OCR lines that matched no box (v1: all of them, as one string). Both
sides are NFKC-normalised and stripped of whitespace first, so ':' and '：' or a space the annotator typed
are not errors.

Scorer "v2" (the default; "v1" is the scorer before 2026-12-03, kept so old figures can be rerun) corrects
four artefacts of v1 that are the annotation's, not the reader's, and hit every engine alike:
- inline formula markup in the ground truth (`$\\textcircled{1}$`, `$km^{2}$`, `$^{1}$`) is compared as the
  plain text it renders to (1, km2, 1), since an OCR engine outputs text, not LaTeX;
- the OCR lines of one ground-truth box are joined in the order in which they best match it, not in page
  reading order: a block annotated as one string (a table, a two-column list) has one order of its cells
  that the annotator chose, and CER should count misread characters, not a different but valid order of
  whole lines (reading order is judged by the extraction benches, which read fields from it);
- an OCR line that two widened ground-truth boxes hold alike (blocks closer than the margin) goes to the
  one whose own box holds more of it, not to the first in the file;
- ground-truth lines without a box are not a transcription of the whole page (XFUND-style key/value lists
  name the entities only): each is compared with its closest stretch of the OCR text that no box claimed,
  used once, and the rest of that text is ignored, as OCR text outside every ground-truth box always was.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from data.text_distance import edit_distance

LONG_DIGITS = re.compile(r"\d{8,}")
MATCH_MARGIN_PX = 15.0
MIN_OVERLAP = 0.3          # share of an OCR line's area that must fall in the (widened) GT box
SCORERS = ("v2", "v1")
SEPARATOR = "\x00"         # between OCR lines of the unmatched text: never equal to a ground-truth character
# inline formulas of annotations: a short $...$ holding LaTeX (a backslash, ^, _ or a brace) or one token
# without spaces ($1$); "$5 and $10" is no formula
_MATH = re.compile(r"\$([^$\n]{1,80}?)\$")
_LATEX_SIGN = re.compile(r"[\\^_{]")
_COMMAND_ARG = re.compile(r"\\[A-Za-z]+\s*\{([^{}]*)\}")   # \textcircled{1}, \mathrm{kg} -> the argument
_SCRIPT = re.compile(r"[\^_]\{([^{}]*)\}|[\^_](\S)")        # ^{2}, _{i}, ^2 -> 2, i, 2
_COMMAND = re.compile(r"\\[A-Za-z]+|\\.")


def normalise(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def _plain_math(match: re.Match[str]) -> str:
    body = match.group(1)
    if not _LATEX_SIGN.search(body) and (not body.strip() or len(body.split()) != 1 or body != body.strip()):
        return match.group(0)
    for _ in range(3):                                    # nested \textcircled{\mathrm{1}} and the like
        body = _COMMAND_ARG.sub(r"\1", body)
    body = _SCRIPT.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), body)
    return _COMMAND.sub("", body).replace("{", "").replace("}", "")


def plain_text(text: str) -> str:
    """Ground truth with inline formula markup rendered as the plain text OCR can read: `$\\textcircled{1}$`
    -> 1, `$km^{2}$` -> km2, `$^{1}$` -> 1. Text outside `$...$` is left alone."""
    return _MATH.sub(_plain_math, text)


def _free_end_row(needle: str, hay: str) -> list[int]:
    """Last row of the alignment of `needle` against `hay` with a free start in hay: entry j is the fewest
    edits that turn `needle` into some substring of hay ending at j."""
    prev = [0] * (len(hay) + 1)
    for i, cn in enumerate(needle, 1):
        cur = [i]
        for j, ch in enumerate(hay, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (cn != ch)))
        prev = cur
    return prev


def substring_distance(needle: str, hay: str) -> int:
    """Smallest edit distance between `needle` and any substring of `hay` (free start and end in hay)."""
    return min(_free_end_row(needle, hay))


def best_span(needle: str, hay: str) -> tuple[int, int, int]:
    """(distance, start, end) of the substring hay[start:end] closest to `needle` (free start and end in
    hay); among equally close substrings the one ending last, then the longest (a misread last character
    is shown as read, not as dropped)."""
    if not needle:
        return 0, 0, 0
    prev = _free_end_row(needle, hay)
    dist = min(prev)
    end = len(prev) - 1 - prev[::-1].index(dist)
    # the start: the same alignment run backwards from `end` (free end in the reversed hay)
    rh = hay[:end][::-1]
    prev = _free_end_row(needle[::-1], rh)
    back = max(j for j, v in enumerate(prev) if v == dist) if dist in prev else len(rh)
    return dist, end - back, end


def _in_gt_order(gt: str, parts: list[str]) -> str:
    """The OCR lines of one ground-truth box joined in reading order or in the order of where each best
    matches the ground truth, whichever is closer to it (see the module docstring); where a short or
    misread line's best match is ambiguous the second order can be the worse, so both are tried."""
    joined = "".join(parts)
    if len(parts) < 2:
        return joined
    keyed = []
    for k, part in enumerate(parts):
        _, start, end = best_span(part, gt)
        keyed.append((start, end, k, part))
    reordered = "".join(part for *_, part in sorted(keyed))
    if reordered == joined or edit_distance(gt, joined) <= edit_distance(gt, reordered):
        return joined
    return reordered


def _unboxed_pairs(gts: list[str], leftover: list[str]) -> list[tuple[str, str]]:
    """Each unboxed ground-truth line (longest first) with its closest stretch of the unclaimed OCR text;
    a stretch, once used, is not available to another line."""
    hay = SEPARATOR.join(leftover)
    found: dict[int, str] = {}
    for k in sorted(range(len(gts)), key=lambda k: -len(gts[k])):
        _, start, end = best_span(gts[k], hay)
        found[k] = hay[start:end].replace(SEPARATOR, "")
        hay = hay[:start] + SEPARATOR * (end - start) + hay[end:]
    return [(gt, found[k]) for k, gt in enumerate(gts)]


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


def line_pairs(ocr_lines: list[tuple[str, list[float]]], gt_lines: list[tuple[str, list[float] | None]],
               scorer: str = "v2") -> list[tuple[str, str]]:
    """(ground truth, what OCR read there) per boxed ground-truth line, in `gt_lines` order (both
    normalised); then, scorer "v2", one pair per unboxed line with its closest stretch of the OCR lines that
    matched no box, or, scorer "v1", one pair of all unboxed lines and all those OCR lines, if any."""
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; choose from {', '.join(SCORERS)}")
    gt_text = plain_text if scorer == "v2" else (lambda t: t)
    boxed = [(normalise(gt_text(t)), _widen(b), b) for t, b in gt_lines if b]
    unboxed = [normalise(gt_text(t)) for t, b in gt_lines if not b]
    assigned: list[list[str]] = [[] for _ in boxed]
    leftover: list[str] = []
    for text, box in ocr_lines:
        best, best_key = -1, (MIN_OVERLAP, 0.0)
        for i, (_, gbox, raw) in enumerate(boxed):
            frac = _overlap_fraction(box, gbox)
            # v2: where widened boxes hold a line alike (a newspaper's blocks lie closer than the margin),
            # the box that holds it unwidened wins; v1 took the first
            key = (frac, _overlap_fraction(box, raw) if scorer == "v2" else 0.0)
            if frac > MIN_OVERLAP and key > best_key:
                best, best_key = i, key
        (assigned[best] if best >= 0 else leftover).append(normalise(text))
    if scorer == "v1":
        pairs = [(gt, "".join(parts)) for (gt, _, _), parts in zip(boxed, assigned)]
        if "".join(unboxed):
            pairs.append(("".join(unboxed), "".join(leftover)))
        return pairs
    pairs = [(gt, _in_gt_order(gt, parts)) for (gt, _, _), parts in zip(boxed, assigned)]
    return pairs + _unboxed_pairs([u for u in unboxed if u], [t for t in leftover if t])


def page_counts(ocr_lines: list[tuple[str, list[float]]], gt_lines: list[tuple[str, list[float] | None]],
                scorer: str = "v2") -> CERCounts:
    """Counts for one page. `ocr_lines`: (text, box) in reading order; `gt_lines`: (text, box or None);
    `scorer`: "v2" or the older "v1" (module docstring)."""
    counts = CERCounts()
    for gt, hyp in line_pairs(ocr_lines, gt_lines, scorer):
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
