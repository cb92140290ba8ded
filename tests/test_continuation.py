"""A page that continues an invoice joins it, on evidence (reading/continuation.py, reading/route.py "documents in a
file"): a goods list (销货清单) printing the invoice's code and number and no title of its own joins the invoice
before it, extracted once with the invoice's type for its rows, which replace the invoice's (详见销货清单) row;
any other page stays a document of its own, as before.

The mechanism tests stand a text-reading OCR and a stand-in extractor in for the models, so what they check does
not move with the bundled model; the real-file tests (ofdrw_999.ofd: an e-invoice and its four list pages, two
generated invoices in one file) check behaviour only: how many documents, which pages, rows from every page."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from data.document import Document, Field, Line, Page, box_to_quad
from reading import continuation, route
from reading.continuation import InvoiceKey, continues, invoice_key, is_placeholder
from tests.test_multipage import tiff_bytes, white

CODE, NUMBER, OTHER_NUMBER = "050001700111", "12235358", "87654321"


def page_of(texts: list[str], index: int = 0) -> Page:
    return Page(index=index, width=1000, height=1400,
                lines=[Line(t, box_to_quad([20, 30 + 40 * i, 600, 60 + 40 * i]), 0.99) for i, t in enumerate(texts)])


def invoice(number: str = NUMBER, code: str = CODE, rows: list[str] | None = None, total: str = "300.00") -> list[str]:
    return ["重庆增值税电子普通发票", f"发票代码：{code}", f"发票号码：{number}", "开票日期：2020年08月05日",
            *(rows if rows is not None else ["item:(详见销货清单)|300.00"]), f"合计：{total}",
            "价税合计（小写）¥318.00"]


def goods_list(rows: list[str], number: str = NUMBER, code: str = CODE, page: int = 1) -> list[str]:
    """A 销货清单 page as ofdrw_999.ofd prints it: 号码 and its number on lines of their own."""
    return ["销售货物或者提供应税劳务、服务清单", "购买方名称：个人", f"所属增值税电子普通发票代码：{code}", "号码：",
            number, f"共 2 页 第 {page} 页", "序号 项目名称 金额", *rows, "小计"]


# --- the evidence, on a page's raw text ---------------------------------------------------------------------

KEY = InvoiceKey(NUMBER, CODE)


def vat_titles() -> list[str]:
    """The invoice titles of data/schemas (what the route uses for an extractor without schemas)."""
    titles = route._invoice_titles(None)
    assert "增值税电子普通发票" in titles and continuation.invoice_titles([]) == []
    return titles


def test_a_goods_list_printing_the_invoices_code_and_number_continues_it():
    assert continues(page_of(goods_list(["item:餐费|100.00"])), KEY, vat_titles())
    # full-width digits and the number on the 号码 line itself read the same (NFKC)
    fullwidth = ["销售货物清单", "所属增值税电子普通发票代码：０５０００１７００１１１", "号码：１２２３５３５８"]
    assert continues(page_of(fullwidth), KEY, vat_titles())


@pytest.mark.parametrize("texts, why", [
    (goods_list([], number=OTHER_NUMBER), "another invoice's number"),
    (goods_list([], code="050001700999"), "another invoice's code"),
    (["销售货物清单", f"号码：{NUMBER}"], "the number without the invoice's code"),
    (["销售货物清单", f"所属发票代码：{CODE}", f"号码：{NUMBER}", f"发票号码：{OTHER_NUMBER}"], "a second number"),
    (invoice(), "an invoice title of its own: the same invoice again"),
    ([f"发票代码：{CODE}", f"发票号码：{NUMBER}", "价税合计（小写）¥318.00"], "an invoice's face, title unread"),
    ([f"发票代码：{CODE}", f"发票号码：{NUMBER}1"], "the number only inside a longer run of digits"),
])
def test_a_page_without_the_evidence_does_not_continue(texts, why):
    assert not continues(page_of(texts), KEY, vat_titles()), why


def test_an_invoice_without_a_code_is_continued_on_its_number_alone():
    number = "24442000000012345678"          # a 数电票: 20 digits, no code
    doc = Document(fields={"invoice_number": Field("invoice_number", number)})
    key = invoice_key(doc)
    assert key == InvoiceKey(number, None)
    assert continues(page_of(["货物清单", f"发票号码：{number}", "item:a|1.00"]), key, vat_titles())
    assert invoice_key(Document(fields={"invoice_number": Field("invoice_number", "12")})) is None, "too short"
    assert invoice_key(Document(fields={"seller_name": Field("seller_name", "某公司")})) is None


def test_only_the_list_placeholder_row_is_a_placeholder():
    assert is_placeholder({"name": Field("name", "(详见销货清单)")})
    assert is_placeholder({"name": Field("name", "（详见清单）")})
    assert not is_placeholder({"name": Field("name", "*餐饮服务*餐费")})
    assert not is_placeholder({"amount": Field("amount", "1.00")})


# --- the route, with a text-reading OCR and a stand-in extractor ----------------------------------------------

class TextEngine:
    """Reads pages[i]'s lines on page i."""

    def __init__(self, pages: list[list[str]]) -> None:
        self.pages = pages

    def read(self, image, page_index=0, timings=None):
        page = page_of(self.pages[page_index], page_index)
        page.width, page.height = image.shape[1], image.shape[0]
        return page


class KeyReader:
    """A stand-in extractor: a page with a VAT title is a vat_invoice (else `doc_type`, else other); fields from
    发票代码/发票号码/合计 lines, one item row per "item:name|amount" line. Records each extraction (page indexes,
    doc_type) and each revalidation, which runs data/validate.py with the VAT schema."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], str | None]] = []
        self.revalidated = 0

    def extract(self, doc: Document, doc_type: str | None = None) -> Document:
        self.calls.append(([p.index for p in doc.pages], doc_type))
        texts = [(p, ln) for p in doc.pages for ln in p.lines]
        titled = any(ln.text.endswith("增值税电子普通发票") for _, ln in texts)
        doc.doc_type = "vat_invoice" if titled else doc_type or "other"
        doc.fields, doc.items = {}, []
        if doc.doc_type == "other":
            return doc
        for page, ln in texts:
            m = re.match(r"(发票代码|发票号码|合计)：(.+)", ln.text)
            if m:
                key = {"发票代码": "invoice_code", "发票号码": "invoice_number", "合计": "total_amount"}[m[1]]
                doc.fields[key] = Field(key, m[2], page=page.index)
            if ln.text.startswith("item:"):
                name, amount = ln.text[5:].split("|")
                doc.items.append({"name": Field("name", name, page=page.index),
                                  "amount": Field("amount", amount, page=page.index)})
        self.revalidate(doc)
        self.revalidated -= 1       # extraction's own validation is not a revalidation
        return doc

    def revalidate(self, doc: Document) -> Document:
        from data.schemas import load_schema
        from data.validate import validate
        self.revalidated += 1
        validate(doc, load_schema("vat_invoice"))
        return doc


@pytest.fixture()
def stand_ins(monkeypatch):
    """`use(pages)`: the route reads `pages` (lists of lines; [] a blank page) with the stand-in extractor,
    which it returns."""
    reader = KeyReader()

    def use(pages: list[list[str]]) -> route.Analysis:
        monkeypatch.setattr(route, "ocr_engine", lambda: TextEngine(pages))
        monkeypatch.setattr(route, "extractor_available", lambda model_dir=None: True)
        monkeypatch.setattr(route, "load_extractor", lambda model_dir=None: reader)
        return route.analyse_bytes(tiff_bytes([white() for _ in pages]), "file.tif", preview=None)
    use.reader = reader
    return use


def names(doc: Document) -> list[str]:
    return [row["name"].value for row in doc.items]


def test_list_pages_join_their_invoice_once_extracted_with_its_type_and_rows_in_page_order(stand_ins):
    a = stand_ins([invoice(), goods_list(["item:甲|100.00", "item:乙|100.00"]), [],
                   goods_list(["item:丙|100.00"], page=2)])
    assert [r.page_numbers() for r in a.results] == [[1, 2, 4]], "the blank page is skipped, as before"
    only = a.results[0]
    assert (only.part, only.parts, only.doc_type) == (1, 1, "vat_invoice")
    assert names(only) == ["甲", "乙", "丙"], "the placeholder row goes; the list's rows follow in page order"
    assert [row["name"].page for row in only.items] == [1, 1, 3]
    # each list page extracted once, alone, with the invoice's type; the blank page not at all
    assert stand_ins.reader.calls == [([0], None), ([1], "vat_invoice"), ([3], "vat_invoice")]
    assert stand_ins.reader.revalidated == 2, "the joined document is validated again after each join"
    assert only.fields["total_amount"].valid is True and not any("明细" in w for w in only.warnings), \
        "the list's rows add up to the invoice's 合计"
    assert any("page 3 of 4 was skipped as blank" in w for w in only.warnings)
    assert a.document.items == only.items, "one document: the file document carries it"
    assert only.timings["extract"] > 0 and set(only.timings) >= {"decode", "ocr", "total"}


def test_rows_that_do_not_add_up_are_flagged_after_the_join(stand_ins):
    a = stand_ins([invoice(total="500.00"), goods_list(["item:甲|100.00"])])
    assert len(a.results) == 1
    assert any("明细金额之和不等于合计金额" in w for w in a.results[0].warnings)


def test_the_placeholder_row_stays_when_the_list_gives_no_rows(stand_ins):
    a = stand_ins([invoice(), goods_list([])])
    assert [r.page_numbers() for r in a.results] == [[1, 2]]
    assert names(a.results[0]) == ["(详见销货清单)"]


def test_two_invoices_in_one_file_stay_two_documents_each_with_its_own_list(stand_ins):
    a = stand_ins([invoice(), goods_list(["item:甲|300.00"]),
                   invoice(OTHER_NUMBER), goods_list(["item:乙|300.00"], number=OTHER_NUMBER)])
    assert [r.page_numbers() for r in a.results] == [[1, 2], [3, 4]]
    assert [names(r) for r in a.results] == [["甲"], ["乙"]]
    assert "2 documents" in a.document.warnings[0]


def test_a_page_printing_another_invoices_number_does_not_join(stand_ins):
    # the second invoice is open when a list of the first comes: it is no continuation of the second
    a = stand_ins([invoice(), invoice(OTHER_NUMBER), goods_list(["item:甲|300.00"])])
    assert [r.page_numbers() for r in a.results] == [[1], [2], [3]]
    assert [r.doc_type for r in a.results] == ["vat_invoice", "vat_invoice", "other"]
    assert stand_ins.reader.calls[-1] == ([2], None), "extracted as a document of its own, as before"
    assert names(a.results[1]) == ["(详见销货清单)"]


def test_a_page_after_a_non_invoice_stays_its_own_document(stand_ins):
    a = stand_ins([["一份说明", "这一页不是发票", f"只提到号码 {NUMBER}"], goods_list(["item:甲|1.00"])])
    assert [r.page_numbers() for r in a.results] == [[1], [2]]


# --- the real file: an e-invoice and its four goods-list pages (tests/data/born_digital/ofdrw_999.ofd) -----

@pytest.fixture(scope="module")
def ofdrw_999() -> Path:
    return Path(__file__).parent / "data" / "born_digital" / "ofdrw_999.ofd"


def test_ofdrw_999_is_one_invoice_of_five_pages_with_the_lists_rows(ofdrw_999):
    a = route.analyse_file(str(ofdrw_999))
    assert a.document.error is None
    assert [r.page_numbers() for r in a.results] == [[1, 2, 3, 4, 5]]
    doc = a.results[0]
    assert doc.doc_type not in (None, "other") and "invoice_number" in doc.fields
    assert len(doc.items) >= 60, "the lists print 100 rows"
    assert {row["name"].page for row in doc.items if "name" in row} == {1, 2, 3, 4}, "rows from every list page"
    assert not any(is_placeholder(row) for row in doc.items)


def test_extract_and_batch_give_one_document_for_ofdrw_999(ofdrw_999, tmp_path):
    from app.cli import main
    out = tmp_path / "one.json"
    assert main(["extract", str(ofdrw_999), "--json", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))           # one document: one JSON object
    assert [p["index"] for p in doc["pages"]] == [0, 1, 2, 3, 4] and len(doc["items"]) >= 60
    rows = tmp_path / "rows.jsonl"
    assert main(["batch", str(ofdrw_999), "--out", str(rows), "--no-progress"]) == 0
    lines = rows.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and len(json.loads(lines[0])["items"]) >= 60


def test_two_generated_invoices_in_one_file_stay_two_documents(monkeypatch):
    """Two VAT invoices read by the real extractor (their ground-truth lines stand in for OCR): each prints
    its own title and number, so neither continues the other."""
    from data.synth.generator import generate
    truths = [generate("vat_invoice", seed=seed)[1] for seed in (11, 12)]
    assert truths[0]["fields"]["invoice_number"]["value"] != truths[1]["fields"]["invoice_number"]["value"]

    class Engine:
        def read(self, image, page_index=0, timings=None):
            gt = truths[page_index]
            return Page(index=page_index, width=gt["width"], height=gt["height"],
                        lines=[Line(ln["text"], ln.get("quad") or box_to_quad(ln["box"]), 0.99) for ln in gt["lines"]])
    monkeypatch.setattr(route, "ocr_engine", lambda: Engine())
    a = route.analyse_bytes(tiff_bytes([white(), white()]), "two.tif", preview=None)
    assert [r.page_numbers() for r in a.results] == [[1], [2]]
