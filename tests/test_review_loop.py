"""The review loop end to end (issue 40, item 5), small: the bundled model never reads the journey of a railway
e-ticket invoice (from_station, to_station, train_number, departure_date, passenger_name); a clerk types it in
on 24 pages through the UI's own code (app/ui/fields.py `apply_edits`, app/ui/corrections.py `save_correction`),
`python -m training retrain` learns it, and on held-out railway pages the new model reads it while no type of
the base's own held-out set loses more than 0.01 F1. bench/review_loop_bench.py is the full-size run, through
real OCR; here the pages are read from their generated lines (the pipeline's extraction step on them, no OCR),
which keeps the loop's every other step and its run to a few minutes on 2 cores."""
from __future__ import annotations

import json
from typing import Any

import pytest

from bench.review_loop_bench import DOC_TYPE, JOURNEY, build_corpus, pages, score
from models.extractor import DEFAULT_MODEL_DIR


def read_lines(name: str, data: bytes, gt: dict[str, Any], model_dir: str, doc_type: str | None = None):
    """The document the UI would show for the page if OCR had read its generated lines exactly: the
    pipeline's own extraction step (`_extract`, as `analyse_pages` calls it) on a page of those lines."""
    from data.document import Line, Page
    from reading import route
    lines = [Line(text=ln["text"], quad=[[ln["box"][0], ln["box"][1]], [ln["box"][2], ln["box"][1]],
                                         [ln["box"][2], ln["box"][3]], [ln["box"][0], ln["box"][3]]])
             for ln in gt["lines"]]
    page = Page(index=0, width=int(gt["width"]), height=int(gt["height"]), lines=lines)
    return route._extract([page], [], name, route.load_extractor(model_dir), doc_type)


@pytest.mark.heavy
def test_corrections_saved_through_the_ui_retrain_a_model_that_reads_the_railway_journey(tmp_path):
    """24 corrected pages (the fewest the retrain judges: 8 held out), 40 fine-tune steps, 8 replay pages
    per base type: before, the journey F1 on 8 held-out railway pages is 0; after, it is at least 0.8 and
    the other fields hold; the version has its report in its folder and the promotion gate keeps its word."""
    from training.__main__ import main as training_main
    from training.model_registry import ModelRegistry
    base = str(DEFAULT_MODEL_DIR)
    train, heldout = pages(24, 4040, "none"), pages(8, 4141, "none")
    corpus = tmp_path / "corpus"
    clerk = build_corpus(train, base, corpus, None, read_lines)
    # the clerk typed the five journey fields on every page, and each was saved on its printed words
    assert {k: clerk["edits_by_field"].get(k) for k in JOURNEY} == {k: 24 for k in JOURNEY}
    assert clerk["journey_located"] == {f"{k}:exact": 24 for k in JOURNEY}
    records = [json.loads(r) for r in (corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 24 and all(r["doc_type"] == DOC_TYPE for r in records)

    root = tmp_path / "models"
    # the form scorer refitted on 40 generated form pages, not the product's 200 (the refit was most of this
    # test's time): generic_form on the gate's pages still held within 0.01 (0.931 -> 0.927, 2026-12-07)
    rc = training_main(["retrain", "--corpus", str(corpus), "--base", base, "--out-root", str(root),
                        "--name", "railway", "--steps", "40", "--replay-pages", "8",
                        "--form-scorer-pages", "40"])
    registry = ModelRegistry(root)
    version = registry.versions("railway")[-1]
    report = json.loads((version / "report.json").read_text(encoding="utf-8"))
    assert (version / "report.md").is_file()
    assert report["split"]["heldout"] >= 8 and report["new_f1"] > report["base_f1"]
    # the gate's word is kept: promoted exactly when nothing was refused, and `latest` follows it. Whether it
    # promotes sits on one field of its 8-page sets per type (bench/review_loop_bench.py measures it at full
    # size), so the test holds the gate to its reasons, not to one outcome: only a base type can have been
    # lost, none by more than a few fields
    refused = report["promotion_rule"]["refused_because"]
    assert report["promoted"] == (not refused) and (registry.latest("railway") == version) == report["promoted"]
    assert rc == (0 if report["promoted"] else 1)
    assert all("on the base's own held-out pages fell" in r for r in refused), refused
    kept = report["base_heldout"]
    for dt, before in kept["base_f1_by_type"].items():
        assert kept["new_f1_by_type"][dt] >= before - 0.05, (dt, before, kept["new_f1_by_type"][dt])

    before, after = score(base, heldout, read_lines), score(str(version), heldout, read_lines)
    assert before["journey_f1"] == 0.0
    assert after["journey_f1"] >= 0.8, after["field_f1"]
    assert after["other_fields_f1"] >= before["other_fields_f1"] - 0.01, (before, after)
