"""Every threshold of the decoding rules in one place, each with the reason for its value.

Defaults are the values the rules were tuned with on generated held-out layouts and the real samples
(bench/decode_ablation.py scores them); a rule reads its thresholds from the page context's settings.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecodeSettings:
    # --- spans -----------------------------------------------------------------------------------------
    strong_b: float = 0.5              # a B- tag this sure (and `strong_b_ratio` x its I-) starts a new span inside
    strong_b_ratio: float = 2.0        # a run of one key: two values of one field printed side by side
    segment_share: float = 0.5         # a colon segment votes for the field holding half its tagged characters ...
    segment_mass_share: float = 0.4    # ... else for the field with this share of their probability mass
    segment_tagged_share: float = 0.4  # ... when at least this share of the segment is tagged at all
    extend_floor: float = 0.1          # a span grows left over characters giving its field this much mass
    # --- document type -----------------------------------------------------------------------------------
    title_evidence: float = 0.5        # share of a required title a page must show for its type to be kept
    title_extra: int = 4               # characters a title line may hold besides the title (a province)
    # --- items --------------------------------------------------------------------------------------------
    row_tolerance: float = 0.5         # item cells whose deskewed centres are within this x line height: one row
    row_lower: float = 0.35            # a second cell of a key this much lower starts the next row
    item_band: float = 0.6             # a missing quantity/tax is searched within this x line height of its row
    # --- forms -------------------------------------------------------------------------------------------
    form_trust: float = 0.4            # the model knows the page when this share of its lines is tagged q/a ...
    form_other: float = 0.7            # ... and then a line it tags "other" with this mass holds no key or value
    form_ocr_min: float = 0.7          # a pair from a line OCR read less surely than this is more often wrong
    form_row_tol: float = 0.5          # same row: deskewed centres within this x line height
    form_right_gap: float = 8.0        # a value right of its key starts within this many line heights
    form_below_gap: float = 1.0        # a value below its key starts within this many line heights of its bottom
    form_long_key: int = 10            # keys longer than this take no value from the line below
    form_key_min: float = 0.0          # a colon-less line needs at least this key score (with its row's) ...
    form_key_margin: float = 0.8       # ... and this much more than the text it takes as its value


DEFAULT_SETTINGS = DecodeSettings()
