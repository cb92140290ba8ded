"""A retrain on a corpus of an invoice layout the bundled model never trained on improves that layout's
held-out F1 over the base, and the registry gets a new version that `latest` points at."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.retrain_layout_bench import heldout_invoice_layouts, synth

BASE = Path(__file__).resolve().parents[1] / "models" / "default"


def test_base_provenance_names_a_heldout_invoice_layout():
    """The layout the retrain targets really was held out of the base's training."""
    from data.synth.generator import list_layouts
    held = heldout_invoice_layouts(BASE)
    assert held, "models/default/provenance.json lists no held-out invoice layout"
    doc_type, layout = held[0]
    assert layout in list_layouts(doc_type)
    prov = json.loads((BASE / "provenance.json").read_text(encoding="utf-8"))
    assert f"{doc_type}/{layout}" in prov["heldout_layouts"]


def retrain_on_heldout_layout(tmp: Path, seed: int, n: int = 30, steps: int = 20) -> tuple[dict, Path]:
    """Generate `n` pages of the base's first held-out invoice layout, retrain on them; (report, root)."""
    from training.retrain import retrain
    doc_type, layout = heldout_invoice_layouts(BASE)[0]
    synth(doc_type, layout, n, seed, "light", tmp / "corpus")
    version = retrain(tmp / "corpus", BASE, tmp / "models", "held", steps=steps, batch_size=4, lr=5e-4,
                      pipe={"stages": 2, "micro_batches": 2}, seed=seed)
    return json.loads((version / "report.json").read_text(encoding="utf-8")), tmp / "models"


@pytest.mark.heavy
def test_retrain_on_heldout_invoice_layout_beats_the_base(tmp_path):
    from training.model_registry import ModelRegistry
    report, root = retrain_on_heldout_layout(tmp_path, seed=11)
    assert report["split"]["heldout"] >= 4 and report["split"]["split_by"] == "pages"
    assert "pipeline engine" in report["finetune"]["step_function"]
    # both models scored on the same held-out pages of the layout, fields matched exactly
    assert report["base"]["overall_field"]["tp"] + report["base"]["overall_field"]["fn"] == \
        report["new"]["overall_field"]["tp"] + report["new"]["overall_field"]["fn"]
    assert report["new_f1"] > report["base_f1"], (report["base_f1"], report["new_f1"])
    reg = ModelRegistry(root)
    assert [v.name for v in reg.versions("held")] == ["held-v0001"]
    assert report["promoted"] and reg.latest("held") == root / "registry" / "held-v0001"
