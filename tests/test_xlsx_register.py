"""The invoice register workbook (app/batch/xlsx_out.py, batch --xlsx and the UI's Excel) and the batch CSV's
stable columns (app/batch/csv_out.py)."""
from __future__ import annotations

import csv
import datetime as dt
import io
import random

from openpyxl import load_workbook

from app.batch.csv_out import csv_table
from app.batch.xlsx_out import INVOICE_SHEET, ITEM_SHEET, OTHER_SHEET, PAIR_SHEET, register_bytes, write_xlsx

E_NUMBERS = ["25442000000123456789", "25442000000987654321"]


def field(value: str) -> dict:
    return {"value": value, "raw": value}


def rows() -> list[dict]:
    e = [{"file": f"/in/e{i}.pdf", "sha256": f"s{i}", "part": 1, "parts": 1, "source": f"e{i}.pdf",
          "doc_type": "e_invoice", "pages": [{"index": 0}],
          "fields": {"invoice_number": field(n), "issue_date": field("2025-02-24"),
                     "seller_name": field(f"广州寿司郎餐饮有限公司{i}"), "seller_tax_id": field("91440101MA5D00000X"),
                     "total_amount": field("297.35"), "total_tax": field("38.65"),
                     "total_with_tax": field(total), "total_with_tax_in_words": field(total),
                     "remarks": field('=HYPERLINK("http://evil.example/x","OPEN")')},
          "items": [{"name": {"value": "餐饮服务"}, "amount": {"value": "297.35"}, "tax_rate": {"value": "13%"}}]}
         for i, (n, total) in enumerate(zip(E_NUMBERS, ["336.00", "1204.50"]))]
    vat = {"file": "/in/vat.jpg", "sha256": "v", "part": 1, "parts": 1, "source": "vat.jpg",
           "doc_type": "vat_invoice", "pages": [{"index": 0}],
           "fields": {"invoice_code": field("044001900111"), "invoice_number": field("00123456"),
                      "machine_number": field("661616175210"), "total_with_tax": field("10.10"),
                      "issue_date": field("2024-01-05")}}
    ticket = {"file": "/in/t.pdf", "sha256": "t", "part": 1, "parts": 1, "source": "t.pdf", "doc_type": "train_ticket",
              "pages": [{"index": 0}], "fields": {"train_number": field("G1234"), "price": field("88.50")}}
    form = {"file": "/in/f.png", "sha256": "f", "part": 1, "parts": 1, "source": "f.png", "doc_type": "generic_form",
            "pages": [{"index": 0}], "fields": {}, "pairs": [{"key": "姓名", "value": "李明", "score": 0.9, "page": 0}]}
    paper = {"file": "/in/news.jpg", "sha256": "n", "part": 1, "parts": 1, "source": "news.jpg", "doc_type": "other",
             "pages": [{"index": 0}], "fields": {}}
    return e + [vat, ticket, form, paper]


def test_invoice_sheet_numbers_text_dates_and_a_total_that_adds_up(tmp_path):
    path = tmp_path / "台账.xlsx"
    write_xlsx(str(path), rows())
    book = load_workbook(path)
    assert book.sheetnames == [INVOICE_SHEET, ITEM_SHEET, "火车票 train_ticket", PAIR_SHEET, OTHER_SHEET]
    ws = book[INVOICE_SHEET]
    labels, keys = [c.value for c in ws[1]], [c.value for c in ws[2]]
    assert labels[keys.index("invoice_number")] == "发票号码"
    assert labels[keys.index("total_with_tax")] == "价税合计（小写）"
    # schema order: the VAT invoice's printed order, the e-invoice's fields within it
    order = ["invoice_code", "invoice_number", "issue_date", "machine_number", "seller_name", "total_with_tax"]
    assert [keys.index(k) for k in order] == sorted(keys.index(k) for k in order)
    col = {k: i for i, k in enumerate(keys)}
    body = list(ws.iter_rows(min_row=3))
    invoices, total_row = body[:-1], body[-1]
    assert [r[col["file"]].value for r in invoices] == ["/in/e0.pdf", "/in/e1.pdf", "/in/vat.jpg"], "file order"
    numbers = [r[col["invoice_number"]] for r in invoices]
    assert [c.value for c in numbers] == E_NUMBERS + ["00123456"], "every digit, leading zeros too"
    assert all(c.data_type == "s" and c.number_format == "@" for c in numbers)
    amounts = [r[col["total_with_tax"]] for r in invoices]
    assert [c.value for c in amounts] == [336.0, 1204.5, 10.1]
    assert all(c.data_type == "n" and c.number_format == "0.00" for c in amounts)
    assert invoices[0][col["issue_date"]].value == dt.datetime(2025, 2, 24), "a real date"
    assert invoices[0][col["total_with_tax_in_words"]].value == "叁佰叁拾陆圆整"
    remark = invoices[0][col["remarks"]]
    assert remark.data_type == "s" and remark.quotePrefix, "a printed formula stays text"
    assert total_row[0].value == "合计 Total"
    letter = amounts[0].column_letter
    assert total_row[col["total_with_tax"]].value == f"=SUM({letter}3:{letter}5)"
    assert total_row[col["total_with_tax"]].number_format == "0.00"
    assert sum(c.value for c in amounts) == 1550.6
    assert not any(c.hyperlink for r in invoices for c in r), "no links"
    items = list(book[ITEM_SHEET].iter_rows(min_row=3, values_only=True))
    item_keys = [c.value for c in book[ITEM_SHEET][2]]
    assert [r[item_keys.index("invoice_number")] for r in items[:2]] == E_NUMBERS, "items keyed by the number"
    assert [r[0] for r in book[PAIR_SHEET].iter_rows(min_row=3, max_row=3, values_only=True)] == ["/in/f.png"]
    assert [r[0] for r in book[OTHER_SHEET].iter_rows(min_row=3, values_only=True)] == ["/in/news.jpg"]


def test_same_rows_in_any_order_give_the_same_workbook_and_csv():
    """Workers finish in any order, and a document's fields come in any order: the columns and rows do not
    change (the batch CSV's header used to follow first-seen field order)."""
    def shuffled(seed: int) -> list[dict]:
        rng = random.Random(seed)
        out = rows()
        rng.shuffle(out)
        for row in out:
            items = list(row["fields"].items())
            rng.shuffle(items)
            row["fields"] = dict(items)
        return out

    def sheets(data: bytes) -> list:
        book = load_workbook(io.BytesIO(data))
        return [[list(r) for r in book[name].iter_rows(values_only=True)] for name in book.sheetnames]

    assert len({str(sheets(register_bytes(shuffled(s)))) for s in range(4)}) == 1
    tables = {str(csv_table(shuffled(s))) for s in range(4)}
    assert len(tables) == 1
    header = csv_table(shuffled(0))[0]
    assert header.index("invoice_code") < header.index("invoice_number") < header.index("total_with_tax") \
        < header.index("train_number"), "schema order, invoices first"
    labelled = csv_table(rows(), labels=True)
    assert labelled[0][labelled[1].index("invoice_number")] == "发票号码", "--csv-labels: Chinese above the keys"
    text = io.StringIO()
    csv.writer(text).writerows(csv_table(rows()))
    assert E_NUMBERS[0] in text.getvalue()
