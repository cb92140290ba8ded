"""Pages that continue an invoice: a goods list (销售货物或者提供应税劳务、服务清单) printed after a VAT invoice
whose one item row reads (详见销货清单). Such a page prints the invoice's own code and number (所属增值税电子普通
发票代码：050001700111 号码：12235358) and item rows, but no invoice title: read alone it is no document of any
type, and its rows are the invoice's. The route (reading/route.py, "documents in a file") asks `continues` about
each page with text that follows an invoice, on the page's raw text and before extracting it, so a list page is
extracted once, with the invoice's type, and `join` adds its rows to the invoice.

Evidence, not layout: a page joins only when it prints the invoice's number, and its code where the invoice has
one (digits compared after NFKC, so full-width digits and a number on a line of its own after 号码 count), and
prints no invoice title of its own and no other invoice's number or code. A page without that evidence stays a
document of its own: joining two documents mixes their values, which is worse than a split the user can see.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from data.document import Document, Field, Page

NUMBER_KEY, CODE_KEY = "invoice_number", "invoice_code"   # the schema keys an invoice-like type has
MIN_NUMBER_DIGITS = 8     # a shorter "number" (a misread, a row's 序号) is no evidence: 8 is the VAT number's length
# a label that introduces an invoice number or code; 号码 alone only at a line's start (the goods list's
# "号码：12235358" after its 发票代码 line), never 电话号码 / 身份证号码
NUMBER_LABEL = re.compile(r"发票号码|^号码")
CODE_LABEL = re.compile(r"发票代码")
LABEL_TAIL = re.compile(r"^[:：]?(\d+)")
# an invoice's face prints its total with tax; a goods list prints 小计 / 总计 instead: a page with 价税合计 and
# the same number is another copy of the invoice (a title under a seal), never its list
FACE_MARK = "价税合计"
# the invoice's own item row that stands for the goods list: (详见销货清单), 详见清单, （详见销售货物清单）
PLACEHOLDER = re.compile(r"详见.{0,6}清单")


@dataclass(frozen=True)
class InvoiceKey:
    """What a continuation page must print: the invoice's number and, where it has one, its code (digits)."""
    number: str
    code: str | None


def _digits(text: str) -> str:
    return re.sub(r"\D", "", unicodedata.normalize("NFKC", text))


def _flat(text: str) -> str:
    """A line as compared here: NFKC (full-width digits and colons half-width), without whitespace."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def invoice_key(doc: Document) -> InvoiceKey | None:
    """The key of an extracted invoice-like document (a type whose schema has invoice_number, found with at
    least MIN_NUMBER_DIGITS digits), else None: only such a document can be continued."""
    if doc.error is not None or NUMBER_KEY not in doc.fields:
        return None
    number = _digits(doc.fields[NUMBER_KEY].value or doc.fields[NUMBER_KEY].raw)
    if len(number) < MIN_NUMBER_DIGITS:
        return None
    code = _digits(doc.fields[CODE_KEY].value) if CODE_KEY in doc.fields else ""
    return InvoiceKey(number, code or None)


def invoice_titles(schemas: Iterable[object]) -> list[str]:
    """The title phrases of every invoice-like schema (one with an invoice_number field): a page printing one of
    them as its title starts an invoice of its own."""
    return [t for s in schemas if any(f.key == NUMBER_KEY for f in getattr(s, "fields", []))
            for t in getattr(s, "title_phrases", [])]


def _labelled(lines: list[str], label: re.Pattern[str]) -> list[str]:
    """Digits printed after `label`: on its line, or leading the next line when the label ends its line."""
    found = []
    for i, line in enumerate(lines):
        for m in label.finditer(line):
            rest = line[m.end():]
            if rest.strip(":：") == "" and i + 1 < len(lines):
                rest = lines[i + 1]
            tail = LABEL_TAIL.match(rest)
            if tail:
                found.append(tail.group(1))
    return found


def continues(page: Page, key: InvoiceKey, titles: list[str]) -> bool:
    """True when `page` continues the invoice of `key`: it prints that number (and code, when the invoice has
    one) as a run of digits of its own, no invoice title (`titles`, as a title line: models.extraction.doctype
    `title_line`, the test the type decision makes), no 价税合计 (an invoice's face) and no number or code
    labelled as another invoice's."""
    from models.extraction.doctype import title_line
    from models.extraction.settings import DEFAULT_SETTINGS as ST
    lines = [_flat(ln.text) for ln in page.lines]
    runs = {run for line in lines for run in re.findall(r"\d+", line)}
    if key.number not in runs or (key.code is not None and key.code not in runs):
        return False
    if any(FACE_MARK in line for line in lines) or any(n != key.number for n in _labelled(lines, NUMBER_LABEL)):
        return False
    if key.code is not None and any(c != key.code for c in _labelled(lines, CODE_LABEL)):
        return False
    joined = lines + [a + b for a, b in zip(lines, lines[1:])]     # a title OCR cut in two
    return not (titles and title_line(titles, joined, ST.title_extra, ST.title_line_edits))


def is_placeholder(row: dict[str, Field]) -> bool:
    """The invoice's row that points to the goods list instead of listing the goods: its name says 详见...清单."""
    name = row.get("name")
    return name is not None and bool(PLACEHOLDER.search(_flat(name.value or name.raw)))


def join(doc: Document, part: Document) -> None:
    """Add the continuation page(s) of `part` (extracted alone, with `doc`'s type) to `doc`, in place: its pages,
    its item rows after `doc`'s (pages come in file order, so rows stay in page order), the placeholder row
    (详见销货清单) dropped once the list gave rows, its decoding warnings. `part`'s fields are not taken (a list
    page repeats the invoice's names and code, and its 小计 is no invoice total), nor its validation warnings,
    which judged the page alone: the caller validates the joined document again."""
    doc.pages += part.pages
    if part.items:
        doc.items = [row for row in doc.items if not is_placeholder(row)] + part.items
    stale = list(part.checks)
    for w in part.warnings:
        if w in stale:
            stale.remove(w)
        elif w not in doc.warnings:
            doc.warnings.append(w)
    if part.error is not None:
        pages = ", ".join(map(str, part.page_numbers()))
        doc.warnings.append(f"page {pages} continues this invoice, but its items could not be read: "
                            f"{part.error.get('message', '')}")
