"""What a born-digital file states about its fields (data.embedded, data.invoice_xml): OFD tags and an XML
invoice fill what extraction left empty, tied to the printed value's box, and a disagreement with the print
is a warning naming both; a standalone 数电票 XML and an XML attached to a PDF give their fields, validated;
DOCTYPE/entities are refused; a generated page written as a text-layer PDF (data.born_pdf) reads back as its
ground truth."""
from __future__ import annotations

import ctypes
import io
from pathlib import Path

import pytest

from app.batch.inputs import is_document
from data.document import Document, Field, Line, Page, box_to_quad
from data.embedded import EmbeddedRecord, apply_embedded, from_names, locate
from data.io import InputError, iter_source_bytes, page_count_bytes, sniff
from data.ofd import read_ofd
from reading import route

BORN = Path(__file__).parent / "data" / "born_digital"

# a 数电票 XML as published (EInvoice / Header / EInvoiceData / TaxSupervisionInfo), hand-written: the
# seller's tax ID is a valid credit code, the totals add up, the words match
SHUDIAN = """<?xml version="1.0" encoding="UTF-8"?>
<EInvoice>
  <Header>
    <EIid>24442000000123456789</EIid>
    <EInvoiceTag>SWEI4400</EInvoiceTag>
    <Version>0.1</Version>
    <InherentLabel><EInvoiceType><LabelCode>02</LabelCode><LabelName>普通发票</LabelName></EInvoiceType></InherentLabel>
  </Header>
  <EInvoiceData>
    <SellerInformation>
      <SellerIdNum>91350100M000100Y43</SellerIdNum>
      <SellerName>深圳市蛋糕科技有限公司</SellerName>
      <SellerBankName>招商银行深圳分行</SellerBankName>
    </SellerInformation>
    <BuyerInformation>
      <BuyerIdNum>91110108MA01ABCD1X</BuyerIdNum>
      <BuyerName>北京示例有限公司</BuyerName>
    </BuyerInformation>
    <BasicInformation>
      <TotalAmWithoutTax>100.00</TotalAmWithoutTax>
      <TotalTaxAm>6.00</TotalTaxAm>
      <TotalTax-includedAmount>106.00</TotalTax-includedAmount>
      <TotalTax-includedAmountInChinese>壹佰零陆圆整</TotalTax-includedAmountInChinese>
      <Drawer>张三</Drawer>
    </BasicInformation>
    <IssuItemInformation>
      <ItemName>*餐饮服务*餐费</ItemName>
      <SpecMod/>
      <Quantity>1</Quantity>
      <UnPrice>100</UnPrice>
      <Amount>100.00</Amount>
      <TaxRate>0.06</TaxRate>
      <ComTaxAm>6.00</ComTaxAm>
    </IssuItemInformation>
  </EInvoiceData>
  <TaxSupervisionInfo>
    <InvoiceNumber>24442000000123456789</InvoiceNumber>
    <IssueTime>2024-03-05 10:11:12</IssueTime>
  </TaxSupervisionInfo>
</EInvoice>
"""
XXE = ('<?xml version="1.0"?><!DOCTYPE EInvoice [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
       '<EInvoice><Header><EIid>&e;</EIid></Header></EInvoice>')


def _line(text: str, box: list[float]) -> Line:
    return Line(text=text, quad=box_to_quad(box))


def _printed_invoice() -> Document:
    """A vat_invoice page as a reader gives it, with what an extractor made of it: the seller taken from
    the wrong line, the invoice number missed, the date read."""
    page = Page(index=0, width=1000, height=600, reader="ofd", lines=[
        _line("发票号码：12235358", [600, 40, 800, 60]),
        _line("开票日期：2020年08月05日", [600, 70, 860, 90]),
        _line("名称：财天下科技有限公司", [100, 400, 400, 420]),
        _line("开户行及账号：建设银行625555888900998711", [100, 450, 560, 470]),
    ])
    doc = Document(source="t.ofd", pages=[page], doc_type="vat_invoice")
    doc.fields["seller_name"] = Field("seller_name", "建设银行", raw="建设银行", box=[240, 450, 320, 470])
    doc.fields["issue_date"] = Field("issue_date", "2020-08-05", raw="2020年08月05日", box=[700, 70, 860, 90])
    return doc


# --- the cross-check ---------------------------------------------------------------------------------------

def test_tags_fill_an_empty_field_at_its_printed_box_and_a_disagreement_is_a_warning():
    doc = _printed_invoice()
    tags = from_names({"InvoiceNo": "12235358", "SellerName": "财天下科技有限公司", "IssueDate": "2020年08月05日",
                       "ItemIndex": "1"}, "OFD semantic tags")
    assert tags.fields == {"invoice_number": "12235358", "seller_name": "财天下科技有限公司",
                           "issue_date": "2020年08月05日"}
    added = apply_embedded(doc, [tags])
    number = doc.fields["invoice_number"]
    assert number.value == "12235358" and number.raw == "12235358"
    assert number.box is not None and 600 < number.box[0] < number.box[2] <= 800 and number.box[1] == 40
    assert number.valid is True, "filled values are validated like any other (8 digits)"
    assert doc.fields["seller_name"].value == "建设银行", "the printed reading is kept"
    [warning] = added
    assert "seller_name" in warning and "建设银行" in warning and "财天下科技有限公司" in warning
    assert warning in doc.warnings
    assert not any("issue_date" in w for w in doc.warnings), "2020-08-05 and 2020年08月05日 agree"


def test_a_filled_value_that_fails_its_check_is_flagged():
    doc = _printed_invoice()
    apply_embedded(doc, [EmbeddedRecord("XML attachment", {"check_code": "1234"})])
    assert doc.fields["check_code"].valid is False
    assert any("check_code" in w and "1234" in w for w in doc.warnings)
    assert any("校验码" in w and "not found printed" in w for w in doc.warnings), "said where it came from"


def test_values_are_located_by_their_normal_form():
    page = Page(index=0, width=800, height=200, lines=[_line("合计 ¥600.00 ¥10600.00", [0, 0, 400, 20]),
                                                      _line("价税合计（小写）¥10600.00", [0, 40, 340, 60]),
                                                      _line("开票日期：2020年08月05日", [0, 80, 170, 100])])
    # the same amount on two lines: the one with the field's label wins; its box is the value's characters
    assert locate([page], "amount", "10600.00", ["小写"]) == (0, [180.0, 40, 340.0, 60], "10600.00")
    assert locate([page], "amount", "10600.00") == (0, [round(400 * 12 / 20, 1), 0, 400.0, 20], "10600.00")
    assert locate([page], "date", "2020-08-05") == (0, [round(170 * 5 / 16, 1), 80, 170.0, 100], "2020年08月05日")
    assert locate([page], "date", "2020-01-01") is None


def test_the_pipeline_meets_the_extraction_with_the_files_data():
    class Extractor:          # what a model gives: the bank as the seller, no invoice number
        def extract(self, doc, doc_type=None):
            doc.doc_type = "vat_invoice"
            doc.fields["seller_name"] = Field("seller_name", "建设银行", raw="建设银行")
            return doc

    page = _printed_invoice().pages[0]
    tags = from_names({"InvoiceNo": "12235358", "SellerName": "财天下科技有限公司"}, "OFD semantic tags")
    result = route._extract([page], [{}], "t.ofd", Extractor(), None, [tags])
    assert result.fields["invoice_number"].value == "12235358"
    assert result.fields["seller_name"].value == "建设银行"
    assert any("财天下科技有限公司" in w and "建设银行" in w for w in result.warnings)
    without = route._extract([page], [{}], "t.ofd", Extractor(), None, [])
    assert "invoice_number" not in without.fields and not any("财天下" in w for w in without.warnings)


def test_a_real_ofd_gives_tags_custom_data_and_its_xml_attachment_for_its_first_page():
    doc = read_ofd((BORN / "ofdrw_999.ofd").read_bytes(), "999.ofd")
    first = doc.embedded(0)
    assert [r.source for r in first] == ["OFD semantic tags", "OFD custom data", "XML attachment original_invoice"]
    tags, custom, xml = first
    assert tags.fields["seller_name"] == custom.fields["seller_name"] == xml.fields["seller_name"] \
        == "财天下科技有限公司"
    assert xml.doc_type == "vat_invoice" and xml.fields["invoice_code"] == "050001700111"
    assert xml.fields["total_with_tax"] == "10600.00" and xml.fields["drawer"] == "任盈盈"
    assert len(xml.items) == 100 and xml.items[0] == {"name": "*餐饮服务*餐费", "amount": "100.00", "tax_rate": "6%",
                                                     "tax": "6.00"}
    assert "total_amount" not in {k for r in doc.embedded(1) for k in r.fields}, "item tags are no totals"


# --- XML invoices --------------------------------------------------------------------------------------------

def test_a_standalone_shudianpiao_xml_gives_validated_fields_tied_to_its_sheet():
    data = SHUDIAN.encode()
    assert sniff(data[:1024]) == "xml" and page_count_bytes(data, "inv.xml") == 1 and is_document("INV.XML")
    [source] = list(iter_source_bytes(data, "inv.xml"))
    assert source.page is not None and source.page.reader == "embedded_xml"
    [rec] = source.embedded
    assert rec.doc_type == "e_invoice" and rec.fields["invoice_number"] == "24442000000123456789"
    assert rec.items == [{"name": "*餐饮服务*餐费", "quantity": "1", "unit_price": "100", "amount": "100.00",
                          "tax_rate": "0.06", "tax": "6.00"}]
    result = route._extract([source.page], [{}], "inv.xml", None, None, source.embedded)
    values = result.values()
    assert result.doc_type == "e_invoice"
    assert values == {"title": "电子发票(普通发票)", "invoice_number": "24442000000123456789",
                      "issue_date": "2024-03-05", "buyer_name": "北京示例有限公司",
                      "buyer_tax_id": "91110108MA01ABCD1X", "seller_name": "深圳市蛋糕科技有限公司",
                      "seller_tax_id": "91350100M000100Y43", "total_amount": "100.00", "total_tax": "6.00",
                      "total_with_tax": "106.00", "total_with_tax_in_words": "106.00", "drawer": "张三"}
    assert result.items[0]["tax_rate"].value == "6%"
    number = result.fields["invoice_number"]
    assert number.box is not None and number.valid is True, "on the sheet's line, checked by the schema"
    assert result.fields["total_with_tax"].valid is True, "100.00 + 6.00 = 106.00, and the words match"
    assert not any("missing" in w for w in result.warnings)
    # the same XML with a wrong total: validation says so
    bad = SHUDIAN.replace("<TotalTax-includedAmount>106.00", "<TotalTax-includedAmount>160.00").encode()
    [source] = list(iter_source_bytes(bad, "bad.xml"))
    result = route._extract([source.page], [{}], "bad.xml", None, None, source.embedded)
    assert result.fields["total_with_tax"].valid is False and any("价税合计" in w for w in result.warnings)


@pytest.mark.parametrize("data, words", [
    (XXE.encode(), "DOCTYPE"),
    (b'<?xml version="1.0"?><!ENTITY a "b"><x/>', "DOCTYPE or entities"),
    (b"<?xml version='1.0'?><note><to>x</to></note>", "no invoice field"),
    (b"<?xml version='1.0'?><EInvoice><Header>", "not well-formed"),
])
def test_bad_xml_gives_a_clear_input_error_and_no_entity_is_resolved(data, words):
    with pytest.raises(InputError, match=words):
        list(iter_source_bytes(data, "x.xml"))
    doc = route.analyse_bytes(data, "x.xml", preview=None).document
    assert doc.error is not None and doc.error["type"] == "InputError" and "passwd" not in str(doc.fields)


def _pdf_with_attachments(files: dict[str, bytes]) -> bytes:
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c
    pdf = pdfium.PdfDocument.new()
    pdf.new_page(400, 300).close()
    for name, data in files.items():
        wide = ctypes.create_string_buffer((name + "\0").encode("utf-16-le"))
        att = pdfium_c.FPDFDoc_AddAttachment(pdf.raw, ctypes.cast(wide, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        buf = ctypes.create_string_buffer(data, len(data))
        assert pdfium_c.FPDFAttachment_SetFile(att, pdf.raw, buf, len(data))
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue()


def test_an_xml_invoice_attached_to_a_pdf_gives_its_fields_and_a_doctype_one_is_passed_over():
    blob = _pdf_with_attachments({"invoice.xml": SHUDIAN.encode(), "evil.xml": XXE.encode(),
                                  "notes.txt": b"hello"})
    [source] = list(iter_source_bytes(blob, "a.pdf"))
    [rec] = source.embedded
    assert rec.source == "XML attachment invoice.xml" and rec.fields["total_with_tax"] == "106.00"
    assert list(iter_source_bytes(blob, "a.pdf", reader="ocr"))[0].embedded == [], "the OCR route reads no file data"


# --- generated pages as born-digital PDFs --------------------------------------------------------------------

def test_a_generated_page_written_as_a_text_layer_pdf_reads_back_as_its_ground_truth():
    from data.born_pdf import write_pdf
    from data.synth.generator import generate
    _, gt = generate("vat_invoice", 7, degrade="none")
    [source] = list(iter_source_bytes(write_pdf(gt), "g.pdf"))
    assert source.page is not None and source.page.reader == "text_layer", "a real, trusted text layer"
    picture = source.picture()
    assert abs(picture.shape[1] - gt["width"]) <= 1 and abs(picture.shape[0] - gt["height"]) <= 1
    read = source.page.lines

    assert sorted("".join("".join(t.split()) for t in (ln["text"] for ln in gt["lines"]))) == \
        sorted("".join("".join(ln.text.split()) for ln in read)), "every character, nothing else"
    def iou(a, b):
        inter = max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))
        return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)

    same = [(ln, max(iou(ln["box"], r.box) for r in read if r.text == ln["text"]))
            for ln in gt["lines"] if any(r.text == ln["text"] for r in read)]
    assert len(same) >= 0.8 * len(gt["lines"]), "lines cut as the generator drew them"
    assert all(overlap > 0.5 for _, overlap in same), [(ln["text"], o) for ln, o in same if o <= 0.5]
