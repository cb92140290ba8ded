"""`python -m training evaluate` never writes into the tracked models/default/: its default report
goes to runs/eval/default_<data>_<ocr>.json; any other model keeps MODEL/eval_<data>_<ocr>.json."""
from __future__ import annotations

import json
from pathlib import Path

from models.extractor import DEFAULT_MODEL_DIR
from tests.test_retrain import make_corpus
from training.__main__ import default_report_path, main


def test_default_report_path_keeps_the_bundled_model_clean(tmp_path):
    assert default_report_path(DEFAULT_MODEL_DIR, "heldout_real") == Path("runs/eval/default_heldout_real.json")
    assert default_report_path("models/../models/default", "samples") == Path("runs/eval/default_samples.json")
    other = tmp_path / "mine-v0001"
    assert default_report_path(other, "c_gt") == other / "eval_c_gt.json"


def test_evaluate_the_bundled_model_writes_under_runs_eval(tmp_path, monkeypatch, capsys):
    corpus = make_corpus(tmp_path / "tiny", 2)
    before = sorted(p.name for p in DEFAULT_MODEL_DIR.iterdir())
    monkeypatch.chdir(tmp_path)          # runs/ is relative to where the command runs
    assert main(["evaluate", "--model", str(DEFAULT_MODEL_DIR), "--data", str(corpus), "--ocr", "gt"]) == 0
    report = tmp_path / "runs" / "eval" / "default_tiny_gt.json"
    assert json.loads(report.read_text(encoding="utf-8"))["ocr"] == "gt"
    assert f"report written to {Path('runs/eval/default_tiny_gt.json')}" in capsys.readouterr().out
    assert sorted(p.name for p in DEFAULT_MODEL_DIR.iterdir()) == before
