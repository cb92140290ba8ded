"""The review queue: which document of an upload (and which upload) a clerk should look at first.

A file of many invoices, or many uploads, is checked in the order the UI lists them; listed as read, the one
with a failed sum may be tenth. Here documents are ordered by what most needs a look: a document whose
reading failed, then the most fields and item cells whose check failed, then the most check warnings on
the document as a whole (a missing required field), then the most fields under review (low calibrated
confidence, data/validate.py `needs_review`); straight-through documents (nothing to look at,
`Document.straight_through`) come last, each group in reading order. An upload that could not be read at
all comes after every other: there is nothing in it to check. The ordering is computed from the documents
as corrected so far, so a fixed document moves down.
"""
from __future__ import annotations

from data.document import Document, Field
from data.validate import needs_review


def _cells(doc: Document) -> list[Field]:
    return list(doc.fields.values()) + [f for row in doc.items for f in row.values()]


def look_counts(doc: Document) -> tuple[int, int]:
    """(fields and item cells whose check failed, fields and item cells a person should look at)."""
    cells = _cells(doc)
    return sum(f.valid is False for f in cells), sum(needs_review(f) for f in cells)


def need_key(doc: Document, position: int) -> tuple:
    """Sort key: the document most in need of a look first; `position` (its place as read) breaks ties."""
    failed, review = look_counts(doc)
    return (doc.error is None, -failed, -len(doc.checks), -review, doc.straight_through, position)


def queue_order(docs: list[Document]) -> list[int]:
    """The positions of `docs`, the one that most needs a look first."""
    return sorted(range(len(docs)), key=lambda i: need_key(docs[i], i))


def files_order(files: list[list[Document]]) -> list[int]:
    """The positions of uploads (each given as its documents), ordered by the document of each that most
    needs a look. A file that could not be read at all (no documents: [], its error listed above the
    picker) comes last: there is nothing in it to check or correct."""
    def key(i: int) -> tuple:
        docs = files[i]
        if not docs:
            return (True, True) + (0,) * 4 + (i,)
        return (False,) + min(need_key(d, 0) for d in docs)[:-1] + (i,)
    return sorted(range(len(files)), key=key)


def queue_label(doc: Document) -> str:
    """What the document's entry in a list says about it: failed, to check, or straight through; "" when
    none applies (a document never validated, e.g. one read without a schema)."""
    if doc.error is not None:
        return "✗ 读取失败 failed"
    if doc.straight_through:
        return "✓ 直通 straight-through"
    failed, review = look_counts(doc)
    parts = []
    if failed:
        parts.append(f"✗ {failed} 未通过 failed")
    if review - failed > 0:
        parts.append(f"⚠ {review - failed} 待核对 to check")
    if doc.checks and not failed:
        parts.append(f"⚠ {len(doc.checks)} 警告 warnings")
    return " · ".join(parts)
