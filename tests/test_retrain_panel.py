"""The UI's retrain panel (app/ui/retrain_panel.py) under AppTest: the checked-page count against what a
retrain needs, the start button starting `python -m training retrain` on the corrections folder (the
subprocess replaced by a fake that writes what a real run prints), its progress while it runs, only one
at a time, and the result when it ends: promoted, kept out (and why), refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.ui import retrain_panel
from tests.ui_harness import start_ui
from training.retrain import MIN_CORPUS_PAGES


class FakeProc:
    """A retrain process: running until the test sets `status`."""

    def __init__(self) -> None:
        self.status: int | None = None

    def poll(self) -> int | None:
        return self.status


@pytest.fixture()
def launched(monkeypatch, tmp_path):
    """Every (argv, log) the panel starts, with its FakeProc; the panel's state fresh, logs under tmp."""
    calls: list[tuple[list[str], Path, FakeProc]] = []

    def launch(argv, log):
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("work directory x\nprogress: import (1 of 8)\nprogress: split (2 of 8)\n"
                       "progress: replay (3 of 8)\nprogress: finetune (4 of 8)\n"
                       "fine-tune [pipeline engine]:  25%|##   | 15/60 [00:05<00:15]\r"
                       "fine-tune [pipeline engine]:  50%|###  | 30/60 [00:10<00:10]\r", encoding="utf-8")
        calls.append((argv, log, FakeProc()))
        return calls[-1][2]

    monkeypatch.setattr(retrain_panel, "launch", launch)
    monkeypatch.setattr(retrain_panel, "LOG_DIR", tmp_path / "logs")
    monkeypatch.setitem(retrain_panel.RUN, "current", None)
    return calls


def corrections(tmp_path: Path, pages: int) -> Path:
    folder = tmp_path / "corrections"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"image": f"images/p{i}.png"}) + "\n"
                                                 for i in range(pages)), encoding="utf-8")
    return folder


def start_button(at):
    return next((b for b in at.button if b.label.startswith("开始重新训练")), None)


def progress_texts(at) -> list[str]:
    return [e.proto.text for e in at.get("progress")]


def no_analysis(*a, **kw):
    raise AssertionError("nothing is uploaded in these tests")


def test_too_few_checked_pages_say_how_many_more_and_offer_no_button(monkeypatch, tmp_path, launched):
    folder = corrections(tmp_path, 3)
    at = start_ui(monkeypatch, tmp_path, no_analysis)
    assert any(f"已核对 3 页 checked pages saved / 至少 {MIN_CORPUS_PAGES} 页 needed" in m.value for m in at.markdown)
    assert any(f"Retraining needs at least {MIN_CORPUS_PAGES} checked pages, {MIN_CORPUS_PAGES - 3} more"
               in i.value for i in at.info)
    assert start_button(at) is None and launched == []
    assert any(c.value == f"python -m training retrain --corpus {folder} --base models/default" for c in at.code)


def test_start_shows_progress_runs_one_at_a_time_and_reports_the_promotion(monkeypatch, tmp_path, launched):
    folder = corrections(tmp_path, MIN_CORPUS_PAGES)
    at = start_ui(monkeypatch, tmp_path, no_analysis)
    assert not start_button(at).disabled
    start_button(at).click().run()
    assert not at.exception, at.exception
    (argv, log, proc), = launched
    assert argv[1:] == ["-m", "training", "retrain", "--corpus", str(folder), "--base", "models/default"]
    (text,) = progress_texts(at)
    assert "fine-tuning 30/60" in text and "stage 4 of 8" in text
    assert start_button(at).disabled, "one retrain at a time"
    assert retrain_panel.start(folder) is None and len(launched) == 1      # another session cannot start a second

    version = tmp_path / "models" / "registry" / "extractor-v0001"
    version.mkdir(parents=True)
    (version / "report.json").write_text(json.dumps({"version": version.name, "promoted": True, "base_f1": 0.612,
                                                     "new_f1": 0.874, "promotion": "moved to extractor-v0001"}))
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"progress: export (8 of 8)\nlatest moved to extractor-v0001\n"
                 f"model exported to {version} (report: {version / 'report.md'})\n")
    proc.status = 0
    at.run()
    assert not at.exception, at.exception
    assert progress_texts(at) == []
    assert any("extractor-v0001 is now `latest`" in s.value and "0.612 → 0.874" in s.value for s in at.success)
    assert not start_button(at).disabled, "a new retrain can start once it ended"


def test_a_model_kept_out_by_the_rule_says_why(monkeypatch, tmp_path, launched):
    corrections(tmp_path, MIN_CORPUS_PAGES + 5)
    at = start_ui(monkeypatch, tmp_path, no_analysis)
    start_button(at).click().run()
    (_, log, proc), = launched
    version = tmp_path / "extractor-v0002"
    version.mkdir()
    why = "kept at extractor-v0001: held-out corpus F1 is no better: base 0.800 -> new 0.800"
    (version / "report.json").write_text(json.dumps({"version": version.name, "promoted": False, "promotion": why}))
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"model exported to {version} (report: x)\nerror: extractor-v0002 not promoted: latest {why}\n")
    proc.status = 1
    at.run()
    assert any("was exported but is not used" in w.value and why in w.value for w in at.warning)


def test_a_refused_or_failed_retrain_is_said_in_a_sentence():
    kind, message = retrain_panel.outcome(2, "progress: import (1 of 8)\nerror: --base models/default is not a "
                                             "model directory (no config.json)\n")
    assert kind == "error" and "refused" in message and "no config.json" in message
    kind, message = retrain_panel.outcome(137, "progress: finetune (4 of 8)\n")
    assert kind == "error" and "exit status 137" in message and "Traceback" not in message


def test_progress_is_read_from_stage_lines_and_the_step_counter():
    assert retrain_panel.read_progress("")[0] == 0.0
    share, words = retrain_panel.read_progress("progress: finetune (4 of 8)\nfine-tune: 10/40 [00:01<00:03]\r")
    assert share == pytest.approx((3 + 0.25) / 8) and "10/40" in words
    share, _ = retrain_panel.read_progress("progress: evaluate (6 of 8)\n")
    assert share == pytest.approx(5 / 8)
