"""Invoices as XML: a standalone 数电票 XML file, and XML/XBRL invoices attached to a PDF or an OFD.

Read by local element names (namespaces and nesting vary between producers), with the vocabularies of
data.embedded.FIELD_NAMES / ITEM_NAMES:
- the e-invoice schema of 2019 (namespace http://www.edrm.org.cn/schema/e-invoice/2019: eInvoice with
  InvoiceCode, InvoiceNo, IssueDate, Buyer/BuyerName, Seller/SellerTaxID, TaxInclusiveTotalAmount,
  GoodsInfos/GoodsInfo ...), which OFD e-invoices attach as original_invoice.xml (a real one is in
  tests/data/born_digital/ofdrw_999.ofd);
- the 数电票 XML as published (EInvoice: Header/EIid and InherentLabel/EInvoiceType/LabelName,
  EInvoiceData/SellerInformation/SellerIdNum, SellerName, BuyerInformation/..., BasicInformation/
  TotalAmWithoutTax, TotalTaxAm, TotalTax-includedAmount, TotalTax-includedAmountInChinese, Drawer,
  IssuItemInformation rows (ItemName, SpecMod, MeaUnits, Quantity, UnPrice, Amount, TaxRate, ComTaxAm),
  AdditionalInformation/Remark, TaxSupervisionInfo/InvoiceNumber, IssueTime). No real sample was at hand:
  the structure is written from the published description and is read tolerantly (any nesting, any
  namespace, empty elements ignored);
- the railway e-ticket's XBRL, loosely: the same local names where it uses them (InvoiceNumber,
  IssueDate/DateOfIssue, BuyerName, the fare as TicketPrice/Fare ...); its doc type is e_invoice
  (电子发票（铁路电子客票）), as the schema says.

Values inside an item row (GoodsInfo, IssuItemInformation) become item cells, never document fields (an
item's Amount is not the total). The doc type: vat_invoice when the file has an invoice code (the older
增值税电子发票), else e_invoice.

Safe: at most `MAX_XML_BYTES`, parsed by data.ofd.parse_xml, which refuses any DOCTYPE or ENTITY
declaration before parsing (no entity is expanded, no external file or URL is fetched).
"""
from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

import numpy as np

from data.embedded import FIELD_NAMES, ITEM_NAMES, ITEM_ROWS, EmbeddedRecord
from data.safe_xml import MAX_XML_BYTES, looks_like_xml, parse_xml  # noqa: F401 - looks_like_xml: data.io

TITLES = {"普通发票": "电子发票（普通发票）", "增值税专用发票": "电子发票（增值税专用发票）",
          "专用发票": "电子发票（增值税专用发票）", "铁路电子客票": "电子发票（铁路电子客票）"}


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _text(el: ET.Element) -> str:
    return (el.text or "").strip()


def record_from_xml(data: bytes, name: str, source: str) -> EmbeddedRecord:
    """The invoice fields of an XML document (module docstring); an empty record when it holds none of
    the names we know. Raises data.input_error.InputError for XML that is too big, not well-formed or
    declares a DOCTYPE/entities."""
    from data.input_error import InputError
    if len(data) > MAX_XML_BYTES:
        raise InputError(name, f"XML of {len(data):,} bytes is above the limit of {MAX_XML_BYTES:,} for an "
                               "invoice file")
    root = parse_xml(data, name, kind="XML")
    rec = EmbeddedRecord(source)
    stations = False
    label_name = ""

    def walk(el: ET.Element, depth: int) -> None:
        nonlocal stations, label_name
        if depth > 64:
            return
        for child in el:
            tag = _local(child.tag)
            if tag in ITEM_ROWS:
                row: dict[str, str] = {}
                for cell in child.iter():
                    key = ITEM_NAMES.get(_local(cell.tag))
                    if key and _text(cell):
                        row.setdefault(key, _text(cell))
                if row:
                    rec.items.append(row)
                continue
            if "station" in tag:
                stations = True
            if tag == "einvoicetype":
                label_name = next((_text(c) for c in child if _local(c.tag) == "labelname" and _text(c)), "")
            key = FIELD_NAMES.get(tag)
            if key and _text(child) and len(child) == 0:
                rec.fields.setdefault(key, _text(child))
            walk(child, depth + 1)

    walk(root, 0)
    if "invoice_code" in rec.fields:
        rec.doc_type = "vat_invoice"
    elif rec.fields:
        rec.doc_type = "e_invoice"
        title = "电子发票（铁路电子客票）" if stations else TITLES.get(label_name)
        if title:
            rec.fields.setdefault("title", title)
    return rec


# --- a standalone XML file as a page --------------------------------------------------------------------------

PAGE_WIDTH_MM, MARGIN_MM, LINE_MM, FONT_MM = 210.0, 12.0, 7.0, 3.5


def xml_page(rec: EmbeddedRecord, dpi: int) -> Any:
    """A standalone XML invoice as a page for the pipeline: a drawn sheet listing its fields
    ("label：value" a line, then one line per item row) with those lines (`Page.reader`
    "embedded_xml"), and `rec` as the page's embedded record. The values come from the XML, not from
    reading this sheet; it is what the UI shows and what fields' boxes point at."""
    from PIL import Image, ImageDraw

    from data.document import Line, Page, box_to_quad
    from data.fonts import pil_font
    from data.schemas import load_schema
    from data.source_page import SourcePage
    k = dpi / 25.4
    schema = load_schema(rec.doc_type or "e_invoice")
    texts = [rec.fields["title"]] if "title" in rec.fields else []
    texts += [f"{s.label}：{rec.fields[s.key]}" for s in schema.fields if s.key in rec.fields and s.key != "title"]
    if rec.items:
        heads = [s for s in schema.item_fields if any(s.key in row for row in rec.items)]
        texts.append("  ".join(s.label for s in heads))
        texts += ["  ".join(row.get(s.key, "-") for s in heads) for row in rec.items]
    size = max(8, round(FONT_MM * k))
    font = pil_font("song", size)
    width = round(PAGE_WIDTH_MM * k)
    height = round((2 * MARGIN_MM + LINE_MM * max(1, len(texts))) * k)
    img = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    lines: list[Line] = []
    for i, text in enumerate(texts):
        x, y = MARGIN_MM * k, (MARGIN_MM + LINE_MM * i) * k
        draw.text((x, y), text, font=font, fill=(0, 0, 0), anchor="la")
        x0, y0, x1, y1 = draw.textbbox((x, y), text, font=font, anchor="la")
        lines.append(Line(text=text, quad=box_to_quad([float(x0), float(y0), float(x1), float(y1)]), score=1.0))
    page = Page(index=0, width=width, height=height, lines=lines, reader="embedded_xml")
    return SourcePage(np.ascontiguousarray(np.asarray(img)[:, :, ::-1]), page, embedded=[rec])
