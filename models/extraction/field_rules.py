"""The rules over a page's schema-field candidates, in the order models/extraction/rules.py runs them.

Each takes the page context: `ctx.header` holds the candidates for the schema's fields until
`choose_fields` turns the best candidate per field into a Field; the rules after it complete chosen
fields from the page's layout.
"""
from __future__ import annotations

from models.extraction.base import PageContext, clean
from models.extraction.doctype import complete_title, snap_title
from models.extraction.fields import (
    is_key_text,
    rekey_by_phrase,
    rekey_by_row,
    strip_key_phrase,
    to_segment_end,
    trim_to_type,
    whole_line,
)
from models.extraction.text_fields import join_bracket_below, join_bracket_tail, through_colon


def field_candidates(ctx: PageContext) -> None:
    """The model's spans of fields the schema has."""
    ctx.header = [s for s in ctx.spans if s.key in ctx.specs]


def rekey_after_key_phrase(ctx: PageContext) -> None:
    """A value after a colon whose key text is some fields' key phrase takes one of those fields."""
    ctx.header = [rekey_by_phrase(s, ctx.text(s), ctx.phrases, ctx.settings) for s in ctx.header]


def rekey_by_row_key(ctx: PageContext) -> None:
    """A value alone on its line takes a field named by the key line left of it on its row."""
    ctx.header = [rekey_by_row(s, ctx.page, ctx.phrases, ctx.settings) for s in ctx.header]


def drop_key_text(ctx: PageContext) -> None:
    """A candidate that lies inside a key phrase (or is a piece of one OCR cut) is no value."""
    ctx.header = [s for s in ctx.header if not is_key_text(s, ctx.text(s), ctx.every_phrase, ctx.settings)]


def strip_own_key(ctx: PageContext) -> None:
    """A value that begins with its own key phrase starts after it."""
    ctx.header = [strip_key_phrase(s, ctx.text(s), ctx.phrases.get(s.key, [])) for s in ctx.header]


def fit_to_type(ctx: PageContext) -> None:
    """A value that does not read as its type grows to the whole value around it, or shrinks to it."""
    ctx.header = [trim_to_type(s, ctx.specs[s.key], ctx.text(s)) for s in ctx.header]


def text_to_segment_end(ctx: PageContext) -> None:
    """Free text after its own key phrase runs to the end of its colon segment."""
    ctx.header = [to_segment_end(s, ctx.text(s), ctx.phrases.get(s.key, []))
                  if ctx.specs[s.key].type == "text" else s for s in ctx.header]


def text_whole_line(ctx: PageContext) -> None:
    """Free text tagged over half of a colon-less line with no other field is the whole line."""
    header = ctx.header
    ctx.header = [whole_line(s, ctx.text(s), header, ctx.every_phrase) if ctx.specs[s.key].type == "text"
                  else s for s in header]


def choose_fields(ctx: PageContext) -> None:
    """Per field the most confident candidate that holds any text."""
    for s in sorted(ctx.header, key=lambda s: -s.score):
        if s.key not in ctx.doc.fields and clean(ctx.text(s)[s.start:s.end]):
            ctx.doc.fields[s.key] = ctx.make_field(s.key, ctx.specs[s.key], s)
            ctx.used.add((s.line, s.start))


def _text_fields(ctx: PageContext) -> list:
    # line indices and text offsets (span) of a field refer to the page it was read on: a field of an
    # earlier page is never completed from this page's lines
    return [f for key, f in ctx.here().items() if ctx.specs[key].type == "text"]


def bracket_below(ctx: PageContext) -> None:
    """A name's bracketed part (（朝阳区店）) OCR read as a line right of it or below it is appended."""
    lines = {ln for ln, _ in ctx.used}
    for f in _text_fields(ctx):
        join_bracket_below(f, ctx.page, lines, ctx.settings)


def bracket_head(ctx: PageContext) -> None:
    """A value that starts with a bracket takes the head OCR read as a line left of it or above it."""
    lines = {ln for ln, _ in ctx.used}
    for f in _text_fields(ctx):
        join_bracket_tail(f, ctx.page, lines, ctx.settings)


def text_through_colon(ctx: PageContext) -> None:
    """Free text that is itself "label：content" runs through its colon to the line's end."""
    here = ctx.here()
    for f in _text_fields(ctx):
        through_colon(f, ctx.page, [g.span for g in here.values() if g is not f and g.span])


def title_from_line(ctx: PageContext) -> None:
    """A title the model tagged only in part is the printed title its line (or two lines) holds."""
    if "title" in ctx.here() and getattr(ctx.schema, "title_phrases", None):
        complete_title(ctx.doc.fields["title"], ctx.page, ctx.schema.title_phrases, ctx.settings)


def title_snap(ctx: PageContext) -> None:
    """A title OCR cut short is completed from the schema's titles."""
    if "title" in ctx.here() and getattr(ctx.schema, "title_phrases", None):
        f = ctx.doc.fields["title"]
        f.value = snap_title(f.value, ctx.schema.title_phrases)
