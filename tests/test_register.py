"""Duplicate invoices (app/register.py): within a batch, across runs through the SQLite register, and two
batches writing one register at the same time."""
from __future__ import annotations

import csv
import multiprocessing
import os
import sqlite3
from pathlib import Path

import numpy as np
from PIL import Image

from app.batch.command import run_batch
from app.batch.worker import WorkerOptions
from app.register import InvoiceRegister, identity, mark_duplicates
from data.document import Document, Field, Page
from reading.route import Analysis

E_NUMBER = "25442000000123456789"


def invoice_row(file: str, part: int = 1, page: int = 0, **fields: str) -> dict:
    return {"file": file, "sha256": "h-" + file, "part": part, "parts": 1, "doc_type": "e_invoice",
            "pages": [{"index": page}], "fields": {k: {"value": v} for k, v in fields.items()}}


SAME = dict(invoice_number=E_NUMBER, seller_tax_id="91440101MA5D000000", total_with_tax="336.00",
            issue_date="2025-02-24")


def test_identity_keys():
    assert identity(invoice_row("a", **SAME)).strong == "n:" + E_NUMBER
    vat = invoice_row("b", invoice_code="044001900111", invoice_number="12345678")
    assert identity(vat).strong == "c:044001900111-12345678"
    no_number = invoice_row("c", seller_tax_id="91440101MA5D000000", total_with_tax="336", issue_date="2025-02-24")
    assert identity(no_number).strong == "" and identity(no_number).weak == identity(invoice_row("a", **SAME)).weak
    assert not identity({**invoice_row("d", **SAME), "error": {"type": "X"}}).known


def test_the_same_invoice_three_times_is_flagged_in_every_row():
    """The PDF, a photo (number not read: the seller + total + date key) and page 2 of a merged PDF."""
    rows = [invoice_row("inv.pdf", **SAME),
            invoice_row("photo.jpg", seller_tax_id=SAME["seller_tax_id"], total_with_tax="336.0",
                        issue_date=SAME["issue_date"]),
            invoice_row("merged.pdf", part=2, page=1, **SAME),
            invoice_row("other.pdf", invoice_number="25442000000999999999", seller_tax_id="X1", total_with_tax="1.00",
                        issue_date="2025-01-01")]
    assert mark_duplicates(rows) == 3
    assert rows[0]["duplicate_of"] == "photo.jpg p.1; merged.pdf p.2"
    assert rows[1]["duplicate_of"] == "inv.pdf p.1; merged.pdf p.2"
    assert rows[2]["duplicate_of"] == "inv.pdf p.1; photo.jpg p.1"
    assert rows[3]["duplicate_of"] == "" and all(r["near_duplicate_of"] == "" for r in rows)


def test_same_seller_total_and_date_with_another_number_is_a_near_duplicate():
    rows = [invoice_row("a.pdf", **SAME), invoice_row("b.pdf", **{**SAME, "invoice_number": "25442000000123456780"})]
    assert mark_duplicates(rows) == 0
    assert rows[0]["near_duplicate_of"] == "b.pdf p.1" and rows[1]["near_duplicate_of"] == "a.pdf p.1"


def test_register_finds_earlier_runs_and_never_the_document_itself(tmp_path):
    path = str(tmp_path / "register.sqlite")
    with InvoiceRegister(path) as reg:
        first = [invoice_row("january/inv.pdf", **SAME)]
        assert mark_duplicates(first, reg) == 0
    with InvoiceRegister(path) as reg:                 # the same file read again (a rerun): no duplicate
        again = [invoice_row("january/inv.pdf", **SAME)]
        assert mark_duplicates(again, reg) == 0 and again[0]["duplicate_of"] == ""
        later = [invoice_row("march/claim.jpg", **SAME)]    # the same invoice claimed again two months later
        assert mark_duplicates(later, reg) == 1 and later[0]["duplicate_of"] == "january/inv.pdf p.1"
        assert reg.entries() == 2
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def _record_many(path: str, tag: str, n: int, start, out) -> None:
    start.wait()
    found = 0
    with InvoiceRegister(path) as reg:
        for i in range(n):
            rows = [invoice_row(f"{tag}/{i}.pdf", invoice_number=f"{i:020d}")]
            found += mark_duplicates(rows, reg)
    out.put(found)


def test_two_batches_writing_one_register_at_once(tmp_path):
    """Two processes record the same 150 invoices (each under its own file names) at the same time, one
    transaction per invoice: the file stays a sound SQLite database with every entry, and each invoice is
    found as a duplicate exactly once (by whichever process came second): the check and the insert are
    one transaction, so neither can miss the other."""
    path = str(tmp_path / "register.sqlite")
    InvoiceRegister(path).close()
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_record_many, args=(path, tag, 150, start, out)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    start.set()
    found = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sum(found) == 150, found
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 300
    db.close()


def invoice_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """A batch processor: every file reads as the same e-invoice (its name says nothing)."""
    doc = Document(source=os.path.basename(path), doc_type="e_invoice", pages=[Page(index=0, width=40, height=30)])
    for key, value in SAME.items():
        doc.fields[key] = Field(key, value, raw=value)
    return Analysis(doc, [np.zeros((30, 40, 3), np.uint8)])


def test_batch_flags_duplicates_in_csv_and_across_runs(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        Image.new("RGB", (40, 30), "white").save(folder / name)
    options = WorkerOptions(processor="tests.test_register:invoice_analyse", warm_up=False)
    register, table = str(tmp_path / "reg.sqlite"), tmp_path / "t.csv"
    summary = run_batch([str(folder)], str(tmp_path / "r1.jsonl"), csv_path=str(table), options=options,
                        progress=False, register_path=register)
    with open(table, encoding="utf-8-sig", newline="") as fh:
        records = {Path(r["file"]).name: r for r in csv.DictReader(fh)}
    assert records["a.png"]["duplicate_of"] == f"{folder / 'b.png'} p.1"
    assert records["b.png"]["duplicate_of"] == f"{folder / 'a.png'} p.1"
    assert len(summary.duplicates) == 2 and "DUPLICATES: 2 documents" in summary.report()
    # a new folder next month with the same invoice: found through the register alone
    later = tmp_path / "later"
    later.mkdir()
    Image.new("RGB", (41, 30), "white").save(later / "c.png")
    run_batch([str(later)], str(tmp_path / "r2.jsonl"), csv_path=str(table), options=options, progress=False,
              register_path=register)
    with open(table, encoding="utf-8-sig", newline="") as fh:
        (record,) = list(csv.DictReader(fh))
    assert record["duplicate_of"] == f"{folder / 'a.png'} p.1; {folder / 'b.png'} p.1"
