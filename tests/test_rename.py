"""batch --rename TEMPLATE --to DIR (app/batch/rename.py): copies named from fields, safe on every OS, never
moving or overwriting anything."""
from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
from PIL import Image

from app.batch.command import BatchSetupError, run_batch
from app.batch.rename import DEFAULT_TEMPLATE, NAME_BYTES, fill, safe_stem
from app.batch.worker import WorkerOptions
from data.document import Document, Field, Page
from reading.route import Analysis

FIELDS = {"issue_date": "2025-02-24", "seller_name": "广州寿司郎餐饮有限公司", "total_with_tax": "336.00",
          "invoice_number": "25442000000123456789"}


def row(**fields: str) -> dict:
    return {"file": "/in/x.pdf", "doc_type": "e_invoice", "fields": {k: {"value": v} for k, v in fields.items()}}


def test_template_is_filled_and_missing_fields_take_their_separator_along():
    assert fill(DEFAULT_TEMPLATE, row(**FIELDS)) == "2025-02-24-广州寿司郎餐饮有限公司-336.00-25442000000123456789"
    no_seller = {k: v for k, v in FIELDS.items() if k != "seller_name"}
    assert fill(DEFAULT_TEMPLATE, row(**no_seller)) == "2025-02-24-336.00-25442000000123456789"
    assert fill(DEFAULT_TEMPLATE, row()) == ""
    assert fill("{stem}_{invoice_number}", row(invoice_number="1")) == "x_1"


@pytest.mark.parametrize("raw, safe", [
    ('a/b\\c:d*e?f"g<h>i|j', "a_b_c_d_e_f_g_h_i_j"),
    ("..hidden", "hidden"),
    ("tab\there\x00nul\x1b[31m", "tab_here_nul_[31m"),
    ("CON", "_CON"), ("nul.txt", "_nul.txt"), ("com1", "_com1"), ("Console", "Console"),
    ("trailing. . ", "trailing"),
])
def test_names_are_safe_on_every_os(raw, safe):
    assert safe_stem(raw) == safe


def test_long_names_are_cut_at_a_character_within_the_byte_limit():
    stem = safe_stem("发票" * 200)
    assert len(stem.encode()) <= NAME_BYTES and stem == "发票" * (NAME_BYTES // 6) + "发" * (NAME_BYTES % 6 // 3)


def named_analyse(path: str, model_dir: str | None, doc_type: str | None) -> Analysis:
    """A batch processor: every file is the same e-invoice, except b.png, which is a newspaper page."""
    doc = Document(source=os.path.basename(path), doc_type="e_invoice", pages=[Page(index=0, width=40, height=30)])
    if os.path.basename(path) == "b.png":
        doc.doc_type = "other"
    else:
        for key, value in FIELDS.items():
            doc.fields[key] = Field(key, value, raw=value)
    return Analysis(doc, [np.zeros((30, 40, 3), np.uint8)])


def test_batch_copies_never_move_never_overwrite_and_a_rerun_adds_nothing(tmp_path):
    folder, target = tmp_path / "in", tmp_path / "filed"
    folder.mkdir()
    target.mkdir()
    for name, width in (("a.png", 40), ("b.png", 41), ("c.png", 42)):
        Image.new("RGB", (width, 30), "white").save(folder / name)
    name = "2025-02-24-广州寿司郎餐饮有限公司-336.00-25442000000123456789"
    (target / f"{name}.png").write_bytes(b"someone else's file")
    options = WorkerOptions(processor="tests.test_rename:named_analyse", warm_up=False)
    summary = run_batch([str(folder)], str(tmp_path / "r.jsonl"), options=options, progress=False,
                        rename=DEFAULT_TEMPLATE, rename_to=str(target))
    assert sorted(os.listdir(folder)) == ["a.png", "b.png", "c.png"], "copied, not moved"
    assert (target / f"{name}.png").read_bytes() == b"someone else's file", "not overwritten"

    def digest(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest(target / f"{name} (2).png") == digest(folder / "a.png")
    assert digest(target / f"{name} (3).png") == digest(folder / "c.png")
    assert digest(target / "b.png") == digest(folder / "b.png"), "no fields: the file's own name"
    assert summary.renamed == 3
    before = sorted(os.listdir(target))
    run_batch([str(folder)], str(tmp_path / "r.jsonl"), options=options, progress=False,
              rename=DEFAULT_TEMPLATE, rename_to=str(target))
    assert sorted(os.listdir(target)) == before, "a rerun finds its copies and adds none"


def test_rename_needs_to_and_a_good_template(tmp_path):
    with pytest.raises(BatchSetupError, match="go together"):
        run_batch([str(tmp_path)], str(tmp_path / "r.jsonl"), progress=False, rename=DEFAULT_TEMPLATE)
    with pytest.raises(BatchSetupError, match="not a plain field name"):
        run_batch([str(tmp_path)], str(tmp_path / "r.jsonl"), progress=False, rename="{date!r}",
                  rename_to=str(tmp_path / "to"))
