"""Field values a born-digital file states outright, and how they meet the values read from the page.

An invoice file may say what its fields are besides printing them: an OFD's semantic tags (InvoiceNo,
SellerName, TaxInclusiveTotalAmount ... naming the text objects that print them) and custom data
(DocInfo/CustomDatas: 发票号码, 价税合计 ...), an XML invoice attached to a PDF or an OFD (the older
e-invoice's original_invoice.xml, the railway e-ticket's XBRL), or a standalone 数电票 XML file.
Each source becomes an `EmbeddedRecord`: schema keys -> the values as the file gives them.

`apply_embedded` meets them with what extraction read from the page (DESIGN: never a silent choice):
- a field the extractor left empty is filled from the record, its box the printed value's where the
  same value is found on the page's lines (`locate`), and checked by data.validate like any other;
- a field the record and the page agree on (after the schema type's normalisation) is left as read;
- a field they disagree on keeps the printed reading and gets a warning naming both values, so the
  user (or the review loop) decides; the file's data is not trusted over the print, nor the reverse.
Item rows are filled only when the extractor found none; when both have rows and the page holds an amount
the file's rows do not, a warning says so (a page of a longer invoice holds only some of the file's rows).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from data.document import Document, Field, Line, Page
from data.normalize import normalize_value, to_halfwidth

# local XML element / OFD tag names (lower case) -> schema field keys. Three vocabularies: the e-invoice
# schema of 2019 (edrm.org.cn e-invoice, used by OFD tags and original_invoice.xml), the 数电票 XML
# (EInvoice: Header/EIid, EInvoiceData/SellerInformation ..., TaxSupervisionInfo), and names seen in
# railway e-ticket XBRL (read loosely: by local name, any nesting).
FIELD_NAMES: dict[str, str] = {
    "invoicecode": "invoice_code",
    "invoiceno": "invoice_number", "invoicenumber": "invoice_number", "eiid": "invoice_number",
    "einvoicenumber": "invoice_number", "electronicinvoicenumber": "invoice_number",
    "issuedate": "issue_date", "issuetime": "issue_date", "dateofissue": "issue_date",
    "invoicingdate": "issue_date", "requesttime": "issue_date",
    "invoicecheckcode": "check_code", "checkcode": "check_code",
    "machineno": "machine_number", "machinenumber": "machine_number",
    "buyername": "buyer_name", "purchasername": "buyer_name",
    "buyertaxid": "buyer_tax_id", "buyeridnum": "buyer_tax_id", "buyertaxpayerid": "buyer_tax_id",
    "buyerunifiedsocialcreditcode": "buyer_tax_id", "buyeridentificationnumber": "buyer_tax_id",
    "buyeraddrtel": "buyer_address_phone", "buyerfinancialaccount": "buyer_bank_account",
    "sellername": "seller_name", "sellertaxid": "seller_tax_id", "selleridnum": "seller_tax_id",
    "sellertaxpayerid": "seller_tax_id", "sellerunifiedsocialcreditcode": "seller_tax_id",
    "selleraddrtel": "seller_address_phone", "sellerfinancialaccount": "seller_bank_account",
    "taxexclusivetotalamount": "total_amount", "totalamwithouttax": "total_amount",
    "totalamountexcludingtax": "total_amount",
    "taxtotalamount": "total_tax", "totaltaxam": "total_tax", "totaltaxamount": "total_tax",
    "taxinclusivetotalamount": "total_with_tax", "totaltax-includedamount": "total_with_tax",
    "totaltaxincludedamount": "total_with_tax", "totalamountincludingtax": "total_with_tax",
    "ticketprice": "total_with_tax", "fare": "total_with_tax",
    "totaltax-includedamountinchinese": "total_with_tax_in_words",
    "taxinclusivetotalamountinwords": "total_with_tax_in_words",
    "invoiceclerk": "drawer", "drawer": "drawer", "payee": "payee", "checker": "reviewer",
    "note": "remarks", "remark": "remarks", "remarks": "remarks",
}
# one item row's element (GoodsInfo in 2019, IssuItemInformation in the 数电票 XML) and its children
ITEM_ROWS = {"goodsinfo", "issuiteminformation"}
ITEM_NAMES: dict[str, str] = {
    "item": "name", "itemname": "name", "specification": "spec", "specmod": "spec",
    "measurementdimension": "unit", "meaunits": "unit", "quantity": "quantity",
    "price": "unit_price", "unprice": "unit_price", "amount": "amount", "taxscheme": "tax_rate",
    "taxrate": "tax_rate", "taxamount": "tax", "comtaxam": "tax",
}
# OFD custom data names (the schema labels, as producers write them) -> keys
CUSTOM_NAMES: dict[str, str] = {
    "发票代码": "invoice_code", "发票号码": "invoice_number", "开票日期": "issue_date", "校验码": "check_code",
    "机器编号": "machine_number", "购买方名称": "buyer_name", "购买方纳税人识别号": "buyer_tax_id",
    "销售方名称": "seller_name", "销售方纳税人识别号": "seller_tax_id", "合计金额": "total_amount",
    "合计税额": "total_tax", "价税合计": "total_with_tax", "开票人": "drawer",
}
_DATE = re.compile(r"\d{4}\s*[年\-/.]\s*\d{1,2}\s*[月\-/.]\s*\d{1,2}\s*日?")
_AMOUNT = re.compile(r"[¥￥]?\s*-?\d[\d,]*(?:\.\d+)?")
_WORDS = re.compile(r"[零壹贰叁肆伍陆柒捌玖拾佰仟万亿圆元角分整正]{2,}")


@dataclass
class EmbeddedRecord:
    """Field values one source in a file states: `fields` schema key -> value as the file writes it,
    `items` rows of item keys -> values, `doc_type` the schema they belong to when the source says
    (an XML invoice does; OFD tags do not), `source` how the warnings name it."""
    source: str
    fields: dict[str, str] = field(default_factory=dict)
    items: list[dict[str, str]] = field(default_factory=list)
    doc_type: str | None = None

    def __bool__(self) -> bool:
        return bool(self.fields or self.items)


def from_names(values: dict[str, str], source: str, names: dict[str, str] | None = None) -> EmbeddedRecord:
    """A record from name -> value pairs (OFD tags: `FIELD_NAMES`; custom data: `CUSTOM_NAMES`); names
    not known and empty values are left out; the first value of a key wins."""
    table = names if names is not None else FIELD_NAMES
    out: dict[str, str] = {}
    for name, value in values.items():
        key = table.get(name.strip().lower() if table is FIELD_NAMES else name.strip())
        if key and value and value.strip():
            out.setdefault(key, value.strip())
    return EmbeddedRecord(source, out)


# --- comparing and locating -------------------------------------------------------------------------------

def _fold(text: str) -> str:
    return re.sub(r"\s+", "", to_halfwidth(text or "")).strip(":").upper()


def comparable(field_type: str, text: str) -> str:
    """`text` as it is compared: the type's normal form (a date as ISO, an amount as 0.00, a code
    without spaces), half-width, no whitespace."""
    if field_type == "date" and (m := _DATE.search(text or "")):
        text = m.group(0)
    norm = normalize_value(field_type, text) if text else None
    return _fold(norm if norm is not None else text)


def _span_box(line: Line, start: int, end: int) -> list[float]:
    """The box of characters [start, end) of a line: its box cut in proportion to the characters
    (lines carry no per-character boxes)."""
    x0, y0, x1, y1 = line.box
    n = max(1, len(line.text))
    w = x1 - x0
    return [round(x0 + w * start / n, 1), y0, round(x0 + w * end / n, 1), y1]


def _candidates(field_type: str, text: str) -> list[tuple[int, int]]:
    """Spans of a line that could print a value of `field_type`: for a date, an amount or amount words
    the matches of their shapes, else the whole line and what follows its first colon."""
    pattern = {"date": _DATE, "amount": _AMOUNT, "decimal": _AMOUNT, "quantity": _AMOUNT,
               "amount_words": _WORDS}.get(field_type)
    if pattern is not None:
        return [m.span() for m in pattern.finditer(text)]
    spans = [(0, len(text))]
    colon = re.search(r"[:：]", text)
    if colon:
        spans.append((colon.end(), len(text)))
    return spans


def locate(pages: Sequence[Page], field_type: str, value: str,
           phrases: Sequence[str] = ()) -> tuple[int, list[float], str] | None:
    """Where `value` is printed: (page index, box, the printed text) of the first line holding it (as
    text, or by its type's normal form: 2020年08月05日 for 2020-08-05, ¥10600.00 for 10600.00), a line
    that also holds one of `phrases` (the field's labels) preferred when several do; None if nowhere."""
    want_text, want = _fold(value), comparable(field_type, value)
    if not want:
        return None
    found: list[tuple[bool, int, list[float], str]] = []
    for page in pages:
        for line in page.lines:
            text = line.text
            index = [i for i, ch in enumerate(text) if not ch.isspace()]
            joined = "".join(to_halfwidth(text[i]).upper()[:1] or text[i] for i in index)
            hit = None
            at = joined.find(want_text) if want_text else -1
            if at >= 0:
                hit = (index[at], index[at + len(want_text) - 1] + 1)
            if hit is None:
                for start, end in _candidates(field_type, text):
                    if comparable(field_type, text[start:end]) == want:
                        while start < end and text[start].isspace():
                            start += 1
                        hit = (start, end)
                        break
            if hit is not None:
                labelled = any(_fold(p) and _fold(p) in joined for p in phrases)
                found.append((labelled, page.index, _span_box(line, *hit), text[hit[0]:hit[1]].strip()))
    if not found:
        return None
    best = next((f for f in found if f[0]), found[0])
    return best[1], best[2], best[3]


# --- meeting the extraction ---------------------------------------------------------------------------------

def _new_field(key: str, spec_type: str, label: str, value: str, pages: Sequence[Page],
               phrases: Sequence[str]) -> Field:
    date = _DATE.search(value) if spec_type == "date" else None
    normal = normalize_value(spec_type, date.group(0) if date else value)
    spot = locate(pages, spec_type, value, phrases)
    page, box, printed = spot if spot is not None else (pages[0].index if pages else 0, None, value.strip())
    return Field(key=key, value=normal if normal is not None else value.strip(), raw=printed, score=1.0,
                 box=box, page=page, label=label)


def apply_embedded(document: Document, records: Sequence[EmbeddedRecord]) -> list[str]:
    """Fill, confirm or question `document`'s fields with `records` (module docstring); returns the
    warnings added. The document's own doc type decides the schema; a document the extractor could not
    type takes the first record's. Fields are validated again when any was filled."""
    from data.schemas import list_schemas, load_schema
    from data.validate import validate
    records = [r for r in records if r]
    if not records or document.error:
        return []
    known = set(list_schemas())
    if document.doc_type not in known:
        typed = next((r.doc_type for r in records if r.doc_type in known), None)
        if typed is None:
            return []
        document.doc_type = typed
    schema = load_schema(str(document.doc_type))
    specs = {s.key: s for s in schema.fields}
    item_specs = {s.key: s for s in schema.item_fields}
    added: list[str] = []
    filled_unprinted: list[str] = []
    filled = False
    for rec in records:
        for key, value in rec.fields.items():
            spec = specs.get(key)
            if spec is None or not value.strip():
                continue
            have = document.fields.get(key)
            if have is None or not (have.value or "").strip():
                new = _new_field(key, spec.type, spec.label, value, document.pages, spec.key_phrases + [spec.label])
                document.fields[key] = new
                filled = True
                if new.box is None:
                    filled_unprinted.append(spec.label)
            elif comparable(spec.type, have.raw or have.value) != comparable(spec.type, value) and \
                    comparable(spec.type, have.value) != comparable(spec.type, value):
                added.append(f"{spec.label}与文件内嵌数据不一致 / {key}: the page reads {have.raw or have.value!r}, "
                             f"the file's {rec.source} says {value!r}; the printed value is kept, check which "
                             "is right")
        if rec.items and not document.items:
            for row in rec.items:
                cells = {k: _new_field(k, item_specs[k].type, item_specs[k].label, v, document.pages,
                                       [item_specs[k].label])
                         for k, v in row.items() if k in item_specs and v.strip()}
                if cells:
                    document.items.append(cells)
                    filled = True
        elif rec.items and document.items and "amount" in item_specs:
            theirs = Counter(comparable("amount", r["amount"]) for r in rec.items if r.get("amount"))
            ours = Counter(comparable("amount", r["amount"].value) for r in document.items if "amount" in r)
            if ours - theirs:    # a row the file does not have (a page of a longer invoice holds only some)
                odd = ", ".join(sorted((ours - theirs).elements()))
                added.append(f"明细与文件内嵌数据不一致 / items: the page's item amounts {odd} are not among the "
                             f"{len(rec.items)} row(s) of the file's {rec.source}; the printed rows are kept, "
                             "check them")
    if filled_unprinted:
        added.append(f"{'、'.join(filled_unprinted)}: taken from the file's embedded data; the value was not found "
                     "printed on the page / 取自文件内嵌数据，页面上未找到")
    document.warnings += added
    if filled:
        validate(document, schema)
    return added
