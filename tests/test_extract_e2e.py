"""End to end with the bundled model: render a generated VAT invoice, run `python -m app extract`
(real OCR + extraction) and check the JSON it writes against the generator's ground truth."""
import json
import subprocess
import sys

import pytest

from models.extractor import DEFAULT_MODEL_DIR


@pytest.mark.heavy
def test_extract_generated_invoice_with_bundled_model(tmp_path):
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "vat_invoice", "--n", "1", "--seed", "424242",
                    "--degrade", "none", "--out", str(tmp_path / "syn")], check=True, capture_output=True)
    gt_file = next(p for p in (tmp_path / "syn").glob("*.json") if p.name != "manifest.json")
    gt = json.loads(gt_file.read_text(encoding="utf-8"))
    image = tmp_path / "syn" / gt["image"]
    res = subprocess.run([sys.executable, "-m", "app", "extract", str(image), "--json", str(tmp_path / "out.json"),
                          "--model", str(DEFAULT_MODEL_DIR)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "发票" in res.stdout                        # the table was printed
    doc = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert doc["doc_type"] in ("vat_invoice", "e_invoice")
    got = {k: f["value"] for k, f in doc["fields"].items()}
    want = {k: f["value"] for k, f in gt["fields"].items()}
    keys = [k for k in ("invoice_number", "buyer_tax_id", "seller_tax_id", "total_with_tax") if k in want]
    right = [k for k in keys if got.get(k) == want[k]]
    assert len(right) >= len(keys) - 1, (got, want)
    for f in doc["fields"].values():                   # every field is tied to a box on the page
        assert f["box"] and f["box"][2] > f["box"][0]
