"""Decoding: the model's per-character tags and the page layout -> doc type, fields, items, pairs.

The rules are data: `RULES` (models/extraction/rules.py) lists them in the order they run, each a
named function over a typed `PageContext` and its candidate `Span`s; their thresholds live in one
`DecodeSettings`. `python -m bench.decode_ablation --list` prints them, and the same bench measures
what each contributes.

    base.py        PagePrediction, Span, PageContext, text and box helpers
    settings.py    DecodeSettings
    spans.py       candidate spans from tag probabilities
    doctype.py     the document type and its title
    fields.py      span-level field rules (rekeying, trimming, key text)
    text_fields.py free text over several lines or through a colon
    field_rules.py the field rules over a page context
    items.py       item rows
    arithmetic.py  sums, 大写 words, ID numbers
    forms.py       generic forms: key-value pairs, layout proposes, link head and tags decide; its
                   docstring lists the form_*.py files it builds on, in their one order of imports
    form_text.py   generic forms: what a text says (known labels, hints, options)
    form_pieces.py generic forms: OCR lines -> key and text pieces
    form_layout.py generic forms: rows, stacked lines, option groups (form_grid.py: ruled lines and cells)
    rules.py       RULES and the runner
"""
from models.extraction.base import PageContext, PagePrediction, Span
from models.extraction.rules import RULES, Rule, check_names, decode_page
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

__all__ = ["DEFAULT_SETTINGS", "RULES", "DecodeSettings", "PageContext", "PagePrediction", "Rule", "Span",
           "check_names", "decode_page"]
