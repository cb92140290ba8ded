"""File documents by their fields: `batch --rename TEMPLATE --to DIR` copies each file to a name built from
what was read in it, e.g. 2025-02-24-广州寿司郎餐饮有限公司-336.00-25442000000123456789.pdf.

The template is Python format text over the document's fields (`{invoice_number}`, `{seller_name}`, any
schema key) and a few shorthands that work for every type: `{date}` (issue, departure or receipt date),
`{total}` (价税合计, a ticket's price, a receipt's total), `{seller}` (seller or store name), `{number}`
(invoice or ticket number), `{doc_type}`, `{stem}` (the file's own name without suffix) and `{part}`. A field
that was not read is empty, and the separators around it are dropped; a name that comes out empty is the
file's own stem.

- The file is copied, never moved, and nothing is overwritten: a taken name gets " (2)", " (3)" ...; a file
  whose copy with the same content is already there (a rerun) is not copied again.
- Names are safe on every OS: no / \\ : * ? " < > |, no control characters, no leading dot or space, no
  trailing dot or space, no Windows device name (CON, NUL, COM1 ...), at most NAME_BYTES bytes of UTF-8
  (cut at a character), the original suffix kept.
- A file holding several documents (a PDF of three invoices) is copied once, named by its first document;
  the others are named in the row's `renamed_to` as the same copy. Failed files are not copied.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import string
from typing import Any

DEFAULT_TEMPLATE = "{date}-{seller}-{total}-{number}"
NAME_BYTES = 200            # the stem's limit; most filesystems allow 255 bytes for the whole name
SHORTHANDS = {"date": ("issue_date", "departure_date", "date"),
              "total": ("total_with_tax", "price", "total_amount"),
              "seller": ("seller_name", "store_name", "name"),
              "number": ("invoice_number", "ticket_number", "receipt_number", "id_number", "credit_code")}
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?")
_SEPARATORS = "-_ ."


class TemplateError(ValueError):
    """A --rename template that cannot be used; the message says why and what works."""


def check_template(template: str) -> None:
    """Refuse a template with a bad brace or a conversion/format spec before any work."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"--rename {template!r}: {exc}; write fields in braces, e.g. {DEFAULT_TEMPLATE}") from None
    names = [name for _, name, _, _ in parsed if name is not None]
    if not names:
        raise TemplateError(f"--rename {template!r} names no field; e.g. {DEFAULT_TEMPLATE}")
    for _, name, spec, conv in parsed:
        if name is not None and (not re.fullmatch(r"[a-z][a-z0-9_]*", name) or spec or conv):
            raise TemplateError(f"--rename {template!r}: {{{name}}} is not a plain field name; use keys such as "
                                "{invoice_number} or the shorthands {date} {total} {seller} {number} {doc_type}")


def field_values(row: dict[str, Any]) -> dict[str, str]:
    """What a template can name: every field's normalised value, the shorthands, doc_type, stem, part."""
    values = {k: str((f or {}).get("value", "") if isinstance(f, dict) else f)
              for k, f in (row.get("fields") or {}).items()}
    for short, keys in SHORTHANDS.items():
        values.setdefault(short, next((values[k] for k in keys if values.get(k)), ""))
    source = str(row.get("file") or row.get("source") or "")
    values.update(doc_type=str(row.get("doc_type") or ""), part=str(row.get("part", 1)),
                  stem=os.path.splitext(os.path.basename(source))[0])
    return values


def fill(template: str, row: dict[str, Any]) -> str:
    """The template filled from the row; a missing field is empty and takes the separator before it along."""
    values = field_values(row)
    out = ""
    for literal, name, _, _ in string.Formatter().parse(template):
        out += literal
        if name is not None:
            value = values.get(name, "").strip()
            if value:
                out += value
            else:
                out = out.rstrip(_SEPARATORS) if out.strip(_SEPARATORS) else ""
    return out.strip(_SEPARATORS)


def safe_stem(stem: str, limit: int = NAME_BYTES) -> str:
    """A file name stem that every OS accepts (see the module's docstring); "" when nothing is left."""
    stem = _UNSAFE.sub("_", stem)
    stem = re.sub(r"\s+", " ", stem).strip().lstrip(".").strip()
    raw = stem.encode("utf-8", "surrogateescape")
    if len(raw) > limit:
        stem = raw[:limit].decode("utf-8", "ignore")
    stem = stem.rstrip(". ")
    if _RESERVED.fullmatch(stem):
        stem = "_" + stem
    return stem


def _same_content(path: str, sha256: str) -> bool:
    if not sha256:
        return False
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest() == sha256


def copy_new(src: str, folder: str, stem: str, suffix: str, sha256: str = "") -> str:
    """Copy `src` into `folder` as stem+suffix, or stem (2)+suffix ... : the first name not taken (claimed
    with O_EXCL, so two runs never write one file). A name that already holds this content is the answer."""
    n = 1
    while True:
        name = f"{stem}{suffix}" if n == 1 else f"{stem} ({n}){suffix}"
        target = os.path.join(folder, name)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            if os.path.isfile(target) and _same_content(target, sha256):
                return target
            n += 1
            continue
        try:
            with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
                shutil.copyfileobj(fin, fout)
            shutil.copystat(src, target)
        except BaseException:
            os.unlink(target)
            raise
        return target


def file_by_fields(rows: list[dict[str, Any]], template: str, folder: str) -> tuple[int, list[str]]:
    """Copy every file of `rows` that was read into `folder` under its template name; sets `renamed_to` on
    each row of it. Returns (files copied or already there, problems as sentences)."""
    os.makedirs(folder, exist_ok=True)
    done: dict[str, str] = {}
    problems = []
    for row in sorted(rows, key=lambda r: (str(r.get("file", "")), int(r.get("part", 1) or 1))):
        src = str(row.get("file") or "")
        if not src or row.get("error"):
            continue
        if src not in done:
            ext = re.sub(r"[^0-9a-z]", "", os.path.splitext(src)[1].lower())[:10]
            stem = safe_stem(fill(template, row)) or safe_stem(field_values(row)["stem"]) or "document"
            try:
                done[src] = copy_new(src, folder, stem, "." + ext if ext else "", str(row.get("sha256") or ""))
            except OSError as exc:
                problems.append(f"{src} was not copied to {folder}: {exc.strerror or exc}")
                done[src] = ""
        if done[src]:
            row["renamed_to"] = done[src]
    return sum(1 for v in done.values() if v), problems
