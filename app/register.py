"""Duplicate invoices: within a batch, within a UI session, and across runs through a local invoice register.

Claiming the same invoice twice (the PDF, a photo of it, page 1 of a merged PDF) is the first thing an
expense check looks for, so every invoice-like document gets an identity:

- the strong key: the 20-digit number of a 数电票 (fully digital invoice, railway e-ticket included), or
  发票代码 + 发票号码 of a VAT invoice, or a railway ticket's long ticket number;
- the weak key: seller (tax ID, else name; a receipt's store) + total + date, for a document whose
  number was not read.

Two documents are duplicates when their strong keys are equal, or when one of them has no strong key and
their weak keys are equal. Two documents with the same weak key but different numbers are near-duplicates:
a warning (a misread digit, or two real invoices of one shop on one day for the same amount).

`mark_duplicates(rows, register)` writes into each result row (the batch's JSONL dicts, or a UI
document's `to_dict()` with its "file"):

- `duplicate_of`: the other occurrences of the same invoice ("file p.N", earlier runs first, "; " between);
- `near_duplicate_of`: the near-duplicates, the same way.

The register (`InvoiceRegister`) is one SQLite file (stdlib sqlite3, WAL, no server) holding every
invoice-like document a batch or the UI has seen: its file, content hash, part, page and keys. A document
is one entry however often it is read again (file + content hash + part), so a rerun never calls a file a
duplicate of itself. Checking and recording a batch's documents is one `BEGIN IMMEDIATE` transaction, so
two batches writing the same register at the same time are serialised by SQLite's lock: the later one sees
the earlier one's invoices, and neither can corrupt the file.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

REGISTER_ENV = "PIAOJU_REGISTER"      # the UI's register file (the batch takes --register FILE)

SELLER_KEYS = ("seller_tax_id", "seller_name", "store_name")
TOTAL_KEYS = ("total_with_tax", "price", "total_amount")
DATE_KEYS = ("issue_date", "departure_date", "date")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    part INTEGER NOT NULL,
    page TEXT NOT NULL,
    doc_type TEXT,
    strong_key TEXT,
    weak_key TEXT,
    invoice_code TEXT,
    invoice_number TEXT,
    seller TEXT,
    total TEXT,
    date TEXT,
    recorded_at TEXT NOT NULL,
    UNIQUE (file, sha256, part)
);
CREATE INDEX IF NOT EXISTS documents_strong ON documents (strong_key);
CREATE INDEX IF NOT EXISTS documents_weak ON documents (weak_key);
"""


def _value(row: dict[str, Any], key: str) -> str:
    f = (row.get("fields") or {}).get(key)
    value = f.get("value", "") if isinstance(f, dict) else getattr(f, "value", "")
    return re.sub(r"\s+", "", str(value or ""))


def _first(row: dict[str, Any], keys: Iterable[str]) -> str:
    return next((v for v in (_value(row, k) for k in keys) if v), "")


def _amount(text: str) -> str:
    try:
        return str(Decimal(text.replace(",", "")).quantize(Decimal("0.01")))
    except (InvalidOperation, ValueError):
        return ""


def _page(row: dict[str, Any]) -> str:
    from app.batch.csv_out import page_label
    return page_label([int(p.get("index", 0)) + 1 for p in row.get("pages") or [] if isinstance(p, dict)]) or "1"


@dataclass(frozen=True)
class Identity:
    """What makes an invoice the same invoice (see the module's docstring); empty strings where unknown."""
    strong: str
    weak: str
    code: str = ""
    number: str = ""
    seller: str = ""
    total: str = ""
    date: str = ""

    @property
    def known(self) -> bool:
        return bool(self.strong or self.weak)


def identity(row: dict[str, Any]) -> Identity:
    """The keys of one result row (an error row or a form has none)."""
    if row.get("error"):
        return Identity("", "")
    code = re.sub(r"\D", "", _value(row, "invoice_code"))
    number = _value(row, "invoice_number").upper()
    ticket = re.sub(r"\D", "", _value(row, "ticket_number"))
    digits = re.sub(r"\D", "", number)
    if len(digits) == 20:
        strong = "n:" + digits
    elif code and digits:
        strong = f"c:{code}-{digits}"
    elif len(ticket) >= 20:
        strong = "t:" + ticket
    else:
        strong = ""
    seller = _first(row, SELLER_KEYS).upper()
    total = _amount(_first(row, TOTAL_KEYS))
    date = _first(row, DATE_KEYS)
    weak = f"w:{seller}|{total}|{date}" if seller and total and date else ""
    return Identity(strong, weak, code, digits or number, seller, total, date)


def same_invoice(a: Identity, b: Identity) -> bool:
    if a.strong and b.strong:
        return a.strong == b.strong
    return bool(a.weak) and a.weak == b.weak


def near_invoice(a: Identity, b: Identity) -> bool:
    """Same seller, total and date, different numbers: a warning, not a duplicate."""
    return bool(a.weak) and a.weak == b.weak and bool(a.strong) and bool(b.strong) and a.strong != b.strong


@dataclass(frozen=True)
class Occurrence:
    file: str
    sha256: str
    part: int
    page: str
    ident: Identity

    @property
    def place(self) -> tuple[str, str, int]:
        return (self.file, self.sha256, self.part)

    def label(self) -> str:
        return f"{self.file} p.{self.page}"


def occurrence(row: dict[str, Any]) -> Occurrence:
    return Occurrence(str(row.get("file") or row.get("source") or ""), str(row.get("sha256") or ""),
                      int(row.get("part") or 1), _page(row), identity(row))


class RegisterError(RuntimeError):
    """The register file cannot be opened or written (not a register, a read-only folder); the message says
    which file and what to do."""


class InvoiceRegister:
    """The local register of invoices seen (one SQLite file). Use as a context manager, or call close()."""

    def __init__(self, path: str, timeout: float = 120.0) -> None:
        self.path = path
        try:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            # isolation_level None: transactions are ours (BEGIN IMMEDIATE below), not sqlite3's implicit ones
            self._db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise RegisterError(f"the invoice register {path} cannot be opened ({exc}); pass a new file name or "
                                "the register file an earlier run wrote") from None

    def __enter__(self) -> "InvoiceRegister":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def record(self, rows: list[dict[str, Any]]) -> dict[tuple[str, str, int], list[tuple[Occurrence, bool]]]:
        """Check `rows` against the register and add those not yet in it, in one transaction. Returns, per
        row place (file, sha256, part), the earlier entries it matches: (occurrence, True) for a duplicate,
        (occurrence, False) for a near-duplicate, oldest first; entries of the same place are never matches."""
        found: dict[tuple[str, str, int], list[tuple[Occurrence, bool]]] = {}
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for row in rows:
                    occ = occurrence(row)
                    if not occ.ident.known:
                        continue
                    found[occ.place] = self._matches(occ)
                    i = occ.ident
                    self._db.execute(
                        "INSERT OR IGNORE INTO documents (file, sha256, part, page, doc_type, strong_key, weak_key, "
                        "invoice_code, invoice_number, seller, total, date, recorded_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (occ.file, occ.sha256, occ.part, occ.page, row.get("doc_type"), i.strong or None,
                         i.weak or None, i.code, i.number, i.seller, i.total, i.date, now))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise RegisterError(f"the invoice register {self.path} cannot be written ({exc}); the results are "
                                "complete, check the file and run the same command again") from None
        return found

    def _matches(self, occ: Occurrence) -> list[tuple[Occurrence, bool]]:
        i = occ.ident
        query = ("SELECT file, sha256, part, page, strong_key, weak_key FROM documents "
                 "WHERE (strong_key = ? OR weak_key = ?) AND NOT (file = ? AND sha256 = ? AND part = ?) ORDER BY id")
        out = []
        for file, sha, part, page, strong, weak in self._db.execute(
                query, (i.strong or "\0", i.weak or "\0", occ.file, occ.sha256, occ.part)):
            other = Occurrence(file, sha, part, page, Identity(strong or "", weak or ""))
            if same_invoice(i, other.ident):
                out.append((other, True))
            elif near_invoice(i, other.ident):
                out.append((other, False))
        return out

    def entries(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])


def mark_duplicates(rows: list[dict[str, Any]], register: InvoiceRegister | None = None) -> int:
    """Set `duplicate_of` and `near_duplicate_of` on every row (empty strings when there is none), from the
    other rows and, with `register`, from earlier runs (which records these rows too). Returns the number of
    rows that are duplicates."""
    occs = [occurrence(row) for row in rows]
    earlier = register.record(rows) if register is not None else {}
    flagged = 0
    for i, (row, occ) in enumerate(zip(rows, occs)):
        dup: list[str] = []
        near: list[str] = []
        if occ.ident.known:
            for other, same in earlier.get(occ.place, []):
                (dup if same else near).append(other.label())
            for j, other in enumerate(occs):
                if j == i:      # (the same content uploaded twice in the UI is two rows: a duplicate)
                    continue
                if same_invoice(occ.ident, other.ident):
                    dup.append(other.label())
                elif near_invoice(occ.ident, other.ident):
                    near.append(other.label())
        row["duplicate_of"] = "; ".join(dict.fromkeys(dup))
        row["near_duplicate_of"] = "; ".join(dict.fromkeys(near))
        flagged += bool(dup)
    return flagged
