"""Evaluation arithmetic on hand-made predictions, noise that keeps tags aligned, and (heavy) a tiny
model trained for a minute on generated pages beating an untrained one on held-out layouts."""
import random
import subprocess
import sys

import pytest

from training.evaluate import Counts, PageScore, Report, compare_value, score_fields, score_pairs
from training.noise import NoiseConfig, TaggedLine, add_noise


def test_field_counts_on_hand_made_predictions():
    gold = {"invoice_number": "07099363", "issue_date": "2023-02-03", "buyer_name": "北京AI科技有限公司"}
    pred = {"invoice_number": "07099363", "issue_date": "2023-02-04", "seller_name": "X公司"}
    c = score_fields(gold, pred)
    assert (c["invoice_number"].tp, c["invoice_number"].fp, c["invoice_number"].fn) == (1, 0, 0)
    assert (c["issue_date"].tp, c["issue_date"].fp, c["issue_date"].fn) == (0, 1, 1)   # wrong value counts twice
    assert (c["buyer_name"].fn, c["seller_name"].fp) == (1, 1)
    total = Counts()
    for v in c.values():
        total.add(v)
    assert (total.tp, total.fp, total.fn) == (1, 2, 2)
    assert total.precision == pytest.approx(1 / 3) and total.recall == pytest.approx(1 / 3)
    assert total.f1 == pytest.approx(1 / 3)


def test_values_compare_after_normalisation():
    assert compare_value("date", "2023年02月03日") == compare_value("date", "2023-02-03")
    assert compare_value("amount", "¥388.1") == compare_value("amount", "388.10")
    assert compare_value("code", "10014 32002") == "1001432002"


def test_items_are_a_multiset_and_pairs_fold_colons():
    c = score_fields({}, {}, [{"amount": "1.00"}, {"amount": "2.00"}], [{"amount": "2.00"}, {"amount": "3.00"}])
    assert (c["items.amount"].tp, c["items.amount"].fp, c["items.amount"].fn) == (1, 1, 1)
    p = score_pairs([("姓名:", "夏艳辰"), ("手机:", "15845878995")], [("姓名", "夏艳辰"), ("手机", "158")])
    assert (p.tp, p.fp, p.fn) == (1, 1, 1)


def test_report_aggregates_by_type():
    r = Report()
    r.add(PageScore("vat_invoice", score_fields({"a": "1"}, {"a": "1"})), "vat_invoice")
    r.add(PageScore("vat_invoice", score_fields({"a": "2"}, {})), "receipt")
    d = r.as_dict()["doc_types"]["vat_invoice"]
    assert d["field"]["recall"] == 0.5 and d["field"]["precision"] == 1.0 and d["doc_type_accuracy"] == 0.5


def test_report_splits_by_degradation_level_with_pair_f1_for_forms():
    r = Report()
    r.add(PageScore("vat_invoice", score_fields({"a": "1"}, {"a": "1"})), "vat_invoice", "none")
    r.add(PageScore("vat_invoice", score_fields({"a": "2"}, {"a": "3"})), "vat_invoice", "heavy")
    r.add(PageScore("generic_form", {}, score_pairs([("姓名", "张三")], [("姓名：", "张三")])), "generic_form", "none")
    d = r.as_dict()
    assert d["by_degradation"]["none"]["f1_by_type"] == {"generic_form": 1.0, "vat_invoice": 1.0}
    assert d["by_degradation"]["heavy"]["f1_by_type"] == {"vat_invoice": 0.0}
    assert d["f1_by_type"]["vat_invoice"] == 0.5
    table = r.table()
    assert "F1 by degradation level" in table and "heavy" in table


def test_form_taken_for_an_invoice_is_still_scored_by_pairs():
    """Fields predicted on a form the classifier mistyped are false positives; the form's level
    figure stays its pair F1 (it read 0.0 when those false positives switched it to field F1)."""
    r = Report()
    good = score_pairs([("姓名", "张三"), ("日期", "2024-01-02")], [("姓名", "张三"), ("日期", "2024-01-02")])
    r.add(PageScore("generic_form", {}, good), "generic_form", "light")
    r.add(PageScore("generic_form", score_fields({}, {"buyer_name": "联"}),
                    score_pairs([("电话", "123"), ("地址", "北京")], [])), "vat_invoice", "light")
    f1 = r.as_dict()["by_degradation"]["light"]["f1_by_type"]["generic_form"]
    assert f1 == round(2 * 1.0 * 0.5 / 1.5, 4)


def test_noise_keeps_one_tag_per_character_and_values_whole():
    rng = random.Random(0)
    key, val = "发票号码：  ", "07099363"
    line = TaggedLine(key + val, [0, 0, 200, 20], ["O"] * len(key) + ["B-invoice_number"] + ["I-invoice_number"] * 7)
    seen_split = False
    for _ in range(200):
        out = add_noise([line], NoiseConfig(confuse=0.0, drop=0.0, extra=0.0), rng)
        seen_split |= len(out) > 1
        tagged = [(ln.text[i], t) for ln in out for i, t in enumerate(ln.tags) if t != "O"]
        assert "".join(ch for ch, _ in tagged) == val               # the value survives whole
        assert tagged[0][1] == "B-invoice_number"
        for ln in out:
            assert len(ln.tags) == len(ln.text)
    assert seen_split                                                # and OCR-like splits happen


@pytest.mark.heavy
def test_tiny_model_beats_untrained_on_heldout_layouts(tmp_path):
    import yaml

    from data.corpus import corpus_from_synth_dir, split_by_layout, write_corpus
    from models.extractor import Extractor
    from training.evaluate import evaluate_corpus
    from training.trainer import train
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "vat_invoice", "--n", "28", "--seed", "5",
                    "--degrade", "none", "--out", str(tmp_path / "syn")], check=True, capture_output=True)
    recs = corpus_from_synth_dir(tmp_path / "syn")
    train_recs, test_recs = split_by_layout(recs, 0.3, seed=1)
    assert train_recs and test_recs
    write_corpus(train_recs + test_recs, tmp_path / "all")
    cfg = {"seed": 1, "data": {"corpus": str(tmp_path / "all"), "heldout_layouts": 0.3, "real_ocr_pages": 0},
           "model": {"max_len": 128, "encoder": {"num_layers": 2, "hidden_size": 64, "num_heads": 2,
                                                 "intermediate_size": 128}},
           "train": {"steps": 160, "batch_size": 8, "lr": 0.003, "warmup": 10, "checkpoint_every": 80}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    out = train(cfg, tmp_path / "model", tmp_path / "work")
    heldout = [r for r in recs if r["layout"] in {t["layout"] for t in test_recs}][:6]
    trained, _ = evaluate_corpus(Extractor.load(out), heldout, "gt", use_type=True)
    # the same architecture, untrained: the trivial baseline
    cfg["train"]["steps"] = 1
    base, _ = evaluate_corpus(Extractor.load(train(cfg, tmp_path / "base", tmp_path / "work_b")), heldout, "gt",
                              use_type=True)
    assert trained.overall().f1 > 0.3
    assert trained.overall().f1 > base.overall().f1 + 0.25
    assert (out / "loss.png").is_file() and (out / "provenance.json").is_file()


def test_moving_the_page_keeps_relative_layout():
    from training.noise import move_page
    lines = [TaggedLine("发票号码", [100, 50, 200, 70], ["O"] * 4),
             TaggedLine("07099363", [210, 50, 300, 70], ["O"] * 8),
             TaggedLine("合计", [100, 400, 150, 420], ["O"] * 2)]
    moved = move_page(lines, 0.25, 0.2, random.Random(3))
    assert [ln.box for ln in moved] != [ln.box for ln in lines]
    a, b, c = (ln.box for ln in moved)
    assert a[2] < b[0] and a[1] == b[1] and c[1] > a[3]           # left of, same row, below: kept
    assert [ln.text for ln in moved] == [ln.text for ln in lines]


def test_background_ocr_shards_fold_into_the_cache_once(tmp_path):
    import json

    from training.trainer import fold_ocr_shards
    row = lambda i: json.dumps({"id": f"p{i}", "page": {"index": 0, "width": 10, "height": 10, "lines": []}})
    (tmp_path / "ocr_train.jsonl").write_text(row(0) + "\n", encoding="utf-8")
    (tmp_path / "ocr_train.shard0.jsonl").write_text(row(0) + "\n" + row(1) + "\n", encoding="utf-8")
    (tmp_path / "ocr_train.shard1.jsonl").write_text(row(2) + "\n" + row(3)[:20], encoding="utf-8")  # killed mid-line
    fold_ocr_shards(tmp_path)
    fold_ocr_shards(tmp_path)          # a second run adds nothing
    ids = [json.loads(r)["id"] for r in (tmp_path / "ocr_train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ids == ["p0", "p1", "p2"]


def test_ocr_cache_rows_read_with_other_settings_are_read_again(tmp_path, monkeypatch):
    import json

    import cv2
    import numpy as np

    import models.ocr as ocr_mod
    from data.document import Document, Line, Page, box_to_quad
    from training.trainer import ocr_records
    tag = ocr_mod.OCRSettings().tag()
    assert tag != ocr_mod.OCRSettings(det_limit_side_len=960).tag()
    recs = []
    for i in range(2):
        cv2.imwrite(str(tmp_path / f"p{i}.png"), np.full((20, 20, 3), 255, np.uint8))
        recs.append({"id": f"p{i}", "image": str(tmp_path / f"p{i}.png")})

    def page(text):
        return Document(pages=[Page(0, 20, 20, [Line(text, box_to_quad([0, 0, 9, 9]))])]).to_dict()["pages"][0]
    cache = tmp_path / "cache.jsonl"
    cache.write_text(json.dumps({"id": "p0", "ocr": tag, "page": page("kept")}) + "\n" +
                     json.dumps({"id": "p1", "page": page("stale, no settings tag")}) + "\n", encoding="utf-8")
    read = []

    class Engine:           # read through the reading route, which passes page_index and timings
        def read(self, image, **kw):
            read.append(image.shape)
            return Page(0, 20, 20, [Line("fresh", box_to_quad([0, 0, 9, 9]))])
    monkeypatch.setattr(ocr_mod, "get_engine", lambda: Engine())
    pages = ocr_records(recs, cache)
    assert len(read) == 1 and pages["p0"].lines[0].text == "kept" and pages["p1"].lines[0].text == "fresh"
    assert ocr_records(recs, cache)["p1"].lines[0].text == "fresh" and len(read) == 1


def test_extract_levels_bench_uses_the_layouts_the_bundled_model_never_saw():
    import json
    from pathlib import Path

    from bench.extract_levels_bench import heldout_layouts
    model = Path(__file__).resolve().parents[1] / "models" / "default"
    prov = json.loads((model / "provenance.json").read_text(encoding="utf-8"))
    got = sorted(f"{t}/{lay}" for t, lays in heldout_layouts(model).items() for lay in lays)
    # its held-out layouts, plus those newer than it (in neither its held-out nor its training layouts)
    assert set(prov["heldout_layouts"]) <= set(got) and not set(got) & set(prov["train_layouts"])
    assert "generic_form/form_thesis" in got and "generic_form/form_sections" not in got   # newer / trained on
