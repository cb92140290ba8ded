"""Retraining: versioned registry, heads grown from a corpus' schema, a new document type from a
schema file + 50 labelled examples, resume after a kill, and the `latest` pointer rule."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from PIL import Image

from data.document import box_to_quad
from training.model_registry import ModelRegistry, RegistryError

SCHEMA = """name: parking_ticket
label: 停车票
title_phrases: [停车收费票据, 停车票]
fields:
  - {key: lot_name, label: 停车场, type: text, key_phrases: [停车场]}
  - {key: plate, label: 车牌号, type: code, key_phrases: [车牌号, 车牌]}
  - {key: entry_date, label: 入场日期, type: date, key_phrases: [入场日期]}
  - {key: fee, label: 金额, type: amount, key_phrases: [金额, 收费]}
"""
PLACES = ["星河", "明远", "国贸", "西湖", "滨江", "望京", "南山", "东湖", "中山", "金桥"]


def parking_page(i: int, rng: random.Random, out: Path) -> dict:
    """One labelled page of a document type the project has never seen (4 layouts)."""
    vals = {"lot_name": rng.choice(PLACES) + rng.choice(["广场", "大厦", "中心"]) + "停车场",
            "plate": rng.choice("京沪浙粤苏川") + rng.choice("ABCDE")
                     + "".join(rng.choice("0123456789ABCDEFGHJK") for _ in range(5)),
            "entry_date": f"2024年{rng.randint(1, 12):02d}月{rng.randint(1, 28):02d}日",
            "fee": f"{rng.randint(2, 200)}.{rng.choice(['00', '50'])}"}
    keys = {"lot_name": rng.choice(["停车场：", "停车场名称："]), "plate": rng.choice(["车牌号：", "车牌："]),
            "entry_date": "入场日期：", "fee": rng.choice(["金额：¥", "收费：¥"])}
    layout = f"L{i % 4}"
    order = list(vals)[::-1] if layout in ("L1", "L3") else list(vals)
    lines = [{"id": 0, "text": rng.choice(["停车收费票据", "停车票"]), "box": [100, 20, 300, 44]}]
    fields, y = {}, 20
    for k in order:
        y += 36
        text, x0 = keys[k] + vals[k], 20 + 10 * (i % 3)
        box = [x0, y, x0 + 16 * len(text), y + 22]
        lines.append({"id": len(lines), "text": text, "box": box})
        s = len(keys[k])
        fields[k] = {"value": vals[k], "text": vals[k], "line": len(lines) - 1, "span": [s, s + len(vals[k])],
                     "box": [box[0] + 16 * s, y, box[2], y + 22]}
    for ln in lines:
        ln.update(quad=box_to_quad(ln["box"]), label=None, linking=[])
    Image.new("RGB", (420, 260), "white").save(out / "images" / f"p{i:03d}.png")
    return {"image": f"images/p{i:03d}.png", "doc_type": "parking_ticket", "layout": layout, "width": 420,
            "height": 260, "lines": lines, "fields": fields, "items": [], "pairs": []}


def make_corpus(out: Path, n: int, seed: int = 0) -> Path:
    (out / "images").mkdir(parents=True)
    (out / "schemas").mkdir()
    (out / "schemas" / "parking_ticket.yaml").write_text(SCHEMA, encoding="utf-8")
    rng = random.Random(seed)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(parking_page(i, rng, out), ensure_ascii=False) + "\n")
    return out


def make_base(out: Path, hidden: int = 64, layers: int = 2) -> Path:
    """A small untrained base that knows only the generic form's labels."""
    import paddle

    from models.heads import tag_labels
    from models.model_dir import ExtractorConfig, write_model_dir
    from models.tokenizer import Tokenizer
    paddle.seed(0)
    vocab = Tokenizer.from_dir(None)          # the from-scratch vocabulary (PP-OCR's characters + specials)
    cfg = ExtractorConfig(encoder=dict(vocab_size=vocab.vocab_size, hidden_size=hidden, num_layers=layers, num_heads=4,
                                       intermediate_size=4 * hidden, max_position=256),
                          tag_labels=tag_labels(["header", "question", "answer"]), doc_types=["generic_form"],
                          max_len=256)
    write_model_dir(cfg.build(), cfg, vocab, out, half=False)
    return out


def _publish(reg: ModelRegistry, version: Path) -> Path:
    stage = reg.staging(version)
    (stage / "config.json").write_text("{}", encoding="utf-8")
    return reg.publish(stage, version)


def test_registry_reserves_new_versions_and_moves_latest_only_when_told(tmp_path):
    reg = ModelRegistry(tmp_path)
    v1, v2 = reg.reserve("inv"), reg.reserve("inv")
    assert [v1.name, v2.name] == ["inv-v0001", "inv-v0002"]
    (tmp_path / "registry" / "inv-v0004").mkdir()            # a version made by someone else
    v5 = reg.reserve("inv")
    assert v5.name == "inv-v0005"
    assert reg.latest("inv") is None
    assert reg.versions("inv") == [] and reg.names() == []   # reserved, not yet published: invisible
    with pytest.raises(RegistryError, match="not a complete"):
        reg.promote("inv", v2)
    for v in (v1, v2, tmp_path / "registry" / "inv-v0004", v5):
        _publish(reg, v)
    reg.promote("inv", v2)
    assert reg.latest("inv") == v2
    assert [p.name for p in reg.versions("inv")] == ["inv-v0001", "inv-v0002", "inv-v0004", "inv-v0005"]
    with pytest.raises(RegistryError, match="not empty"):
        _publish(reg, v2)
    with pytest.raises(RegistryError):
        reg.promote("inv", tmp_path)
    with pytest.raises(RegistryError):
        reg.reserve("../evil")


def test_label_map_keeps_base_labels_first_and_adds_the_schema_fields(tmp_path):
    from training.retrain import corpus_schemas, label_map
    corpus = make_corpus(tmp_path / "c", 2)
    base_tags = ["O", "B-question", "I-question"]
    tags, types, _ = label_map([json.loads(ln) for ln in (corpus / "corpus.jsonl").read_text().splitlines()],
                               corpus_schemas(corpus), base_tags, ["generic_form"])
    assert tags[:3] == base_tags and types == ["generic_form", "parking_ticket"]
    assert {"B-lot_name", "I-plate", "B-entry_date", "B-fee"} <= set(tags)
    from training.retrain import RetrainError
    with pytest.raises(RetrainError, match="no schema"):
        label_map([{"doc_type": "mystery", "lines": []}], {}, base_tags, [])


@pytest.mark.heavy
def test_new_doc_type_from_schema_and_50_examples(tmp_path, capsys):
    """Tiny corpus -> retrain -> a versioned model dir models.extractor loads, F1 >= 0.9 held out;
    resume after a kill; `latest` moves only for a model that is better (--force never moves it).

    The base is the bundled model (eight types). Trained on parking tickets alone, a new model takes every
    page for a parking ticket and loses what the base read: not promoted. With replay (the default half of
    each batch: generated pages of the base's types on the layouts it trained on) 150 steps at the product's
    learning rate (RETRAIN.lr) keep every type and learn the parking ticket (F1 1.0), so it is promoted
    (measured 2026-12-07: generic_form 0.923 -> 0.917, the rest unchanged; at 1e-3 or 5e-4 business_licence,
    receipt, train_ticket or generic_form lost 0.011-0.024, more than the tolerance, and it was kept out).
    (An untrained small base no longer serves here: its generic-form pairs came from the layout rules alone,
    and any training of its tags moved them, 0.80 -> 0.72.)"""
    from models.extractor import DEFAULT_MODEL_DIR, Extractor, ExtractorConfig, find_model_dirs
    from training.config import RETRAIN
    from training.retrain import PROMOTION_TOLERANCE, retrain
    corpus, base, root = make_corpus(tmp_path / "corpus", 50), DEFAULT_MODEL_DIR, tmp_path / "models"
    # the form scorer refitted on 60 generated form pages, not the product's 200 (the refit, ~1 CPU-second a page,
    # was the larger half of this test's time); generic_form must still hold within the tolerance to promote
    v1 = retrain(corpus, base, root, "parking", steps=150, batch_size=8, lr=RETRAIN.lr, keep_work=True,
                 form_scorer_pages=60)
    report = json.loads((v1 / "report.json").read_text(encoding="utf-8"))
    assert v1.name == "parking-v0001" and report["promoted"], report["promotion_rule"]
    assert report["new_f1"] >= 0.9 and report["base_f1"] == 0.0, report["new"]
    # the form scorer, piece roles and line cuts were fitted again for the new weights, and the new model reads them
    from models.model_dir import read_pair_scorer
    refit = read_pair_scorer(v1)
    assert refit is not None and refit.roles is not None and refit.cuts is not None
    kept = report["base_heldout"]
    base_types = set(ExtractorConfig.load(DEFAULT_MODEL_DIR).doc_types)
    assert set(kept["base_f1_by_type"]) == base_types and kept["base_f1_by_type"]["vat_invoice"] > 0.9
    for dt, before in kept["base_f1_by_type"].items():
        assert kept["new_f1_by_type"][dt] >= before - PROMOTION_TOLERANCE, (dt, kept)
    assert report["promotion_rule"]["refused_because"] == []
    assert report["replay"]["share"] == 0.5 and report["finetune"]["batch_rows"] == {"replay": 4, "corpus": 4}
    held = set(kept["layouts"]["generic_form"])
    assert held and not held & set(report["replay"]["layouts"]["generic_form"])
    assert report["split"]["heldout"] >= 10
    assert {"report.md", "loss.png", "f1.png", "metrics.json", "schemas"} <= {p.name for p in v1.iterdir()}
    assert "pipeline engine" in report["finetune"]["step_function"]
    ex = Extractor.load(v1)
    assert "parking_ticket" in ex.schemas and v1.resolve() in find_model_dirs(root)
    reg = ModelRegistry(root)
    assert reg.latest("parking") == v1

    # a kill after the fine-tune's last checkpoint: later stages redo, training does not
    work = next((root / "registry" / ".work").iterdir())
    for stage in ("finetune", "evaluate", "export"):
        (work / "stages" / f"{stage}.json").unlink()
    shutil.rmtree(work / "finetuned")
    capsys.readouterr()
    v2 = retrain(corpus, base, root, "parking", steps=150, batch_size=8, lr=RETRAIN.lr, form_scorer_pages=60)
    assert "resuming the fine-tune at step 150" in capsys.readouterr().out
    assert v2.name == "parking-v0002" and (v1 / "model_state.safetensors").is_file()

    # a model no better than the base's F1 on its held-out split never takes `latest`, forced or not
    worse = retrain(corpus, v2, root, "parking", steps=1, batch_size=8, lr=1e-9, seed=1)
    assert worse.name == "parking-v0003"
    rep = json.loads((worse / "report.json").read_text(encoding="utf-8"))
    assert rep["new_f1"] <= rep["base_f1"] + 1e-9
    assert rep["promoted"] == (not rep["promotion_rule"]["refused_because"])
    assert (reg.latest("parking") == worse) == rep["promoted"]
    assert set(rep["base_heldout"]["base_f1_by_type"]) == base_types     # parking_ticket: not drawable
    before = reg.latest("parking")
    forced = retrain(corpus, v2, root, "parking", steps=1, batch_size=8, lr=1e-9, seed=2, force=True)
    assert reg.latest("parking") == before and forced in reg.versions("parking")
    from training.retrain import promote_version
    promote_version(forced)                   # the second, explicit step
    assert reg.latest("parking") == forced


# --- the promotion rule ---------------------------------------------------------------------------

def test_promotion_refused_when_the_base_heldout_f1_of_a_type_drops():
    """The case that moved `latest` once: far better on the new corpus, much worse on an invoice type
    the base knew."""
    from training.retrain import PROMOTION_TOLERANCE, decide_promotion
    base_types = {"vat_invoice": 0.95, "receipt": 0.80}
    d = decide_promotion(0.0, 0.915, 12, base_types, {"vat_invoice": 0.68, "receipt": 0.81})
    assert not d.promote and len(d.reasons) == 1
    assert "vat_invoice" in d.reasons[0] and "0.950 -> 0.680" in d.reasons[0]
    # a type the new model no longer scores at all counts as F1 0
    assert not decide_promotion(0.5, 0.9, 12, base_types, {"receipt": 0.9}).promote
    # within the tolerance is no loss; just beyond it is
    ok = {"vat_invoice": 0.95 - PROMOTION_TOLERANCE / 2, "receipt": 0.80}
    assert decide_promotion(0.5, 0.9, 12, base_types, ok).promote
    assert not decide_promotion(0.5, 0.9, 12, base_types, {**ok, "receipt": 0.80 - 2 * PROMOTION_TOLERANCE}).promote


def test_promotion_refused_with_too_few_heldout_pages_and_when_the_corpus_f1_falls():
    from training.retrain import MIN_HELDOUT_PAGES, decide_promotion
    same = {"vat_invoice": 0.9}
    d = decide_promotion(0.0, 1.0, 1, same, same)
    assert not d.promote and f"at least {MIN_HELDOUT_PAGES}" in d.reasons[0]
    d = decide_promotion(0.8, 0.7, MIN_HELDOUT_PAGES, same, same)
    assert not d.promote and "base 0.800 -> new 0.700" in d.reasons[0]


def test_promoted_when_both_hold():
    from training.retrain import MIN_HELDOUT_PAGES, decide_promotion
    d = decide_promotion(0.6, 0.9, MIN_HELDOUT_PAGES, {"vat_invoice": 0.9, "generic_form": 0.5},
                         {"vat_invoice": 0.9, "generic_form": 0.55})
    assert d.promote and d.reasons == []


def test_small_corpus_is_refused_before_training_with_exit_2(tmp_path, capsys):
    """6 pages hold out 1-2: retrain refuses (an exception in the library, exit 2 + message from the
    CLI) before any fine-tuning, and no version is reserved."""
    from training.__main__ import main
    from training.retrain import RetrainError, retrain
    corpus, base, root = make_corpus(tmp_path / "corpus", 6), make_base(tmp_path / "base", 32, 1), tmp_path / "m"
    with pytest.raises(RetrainError, match="at least 8 are needed"):
        retrain(corpus, base, root, "tiny", steps=1)
    assert main(["retrain", "--corpus", str(corpus), "--base", str(base), "--out-root", str(root),
                 "--name", "tiny", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: only ") and "--force" in err and "Traceback" not in err
    assert ModelRegistry(root).versions("tiny") == []
    # the refused run's work folder is gone with it: the user adds pages and the next run imports them afresh
    assert not (root / "registry" / ".work").exists()


def test_small_imported_corpus_holds_out_at_least_the_minimum(tmp_path):
    """Pages split by hash (no layouts named): a 24-page corpus holds out 8, stably."""
    from data.corpus import read_corpus
    from training.retrain import MIN_HELDOUT_PAGES, stage_split
    corpus = make_corpus(tmp_path / "c", 3 * MIN_HELDOUT_PAGES)
    recs = read_corpus(corpus)
    for r in recs:
        r["layout"] = None
    write = tmp_path / "flat"
    from data.corpus import write_corpus
    write_corpus(recs, write)
    first = stage_split(write, tmp_path / "w1", 0)
    assert first == {"train": 2 * MIN_HELDOUT_PAGES, "heldout": MIN_HELDOUT_PAGES, "split_by": "pages"}
    assert stage_split(write, tmp_path / "w2", 0) == first
    assert read_corpus(tmp_path / "w1" / "heldout") == read_corpus(tmp_path / "w2" / "heldout")


def test_base_heldout_set_is_the_bundled_models_types_on_its_heldout_layouts():
    from models.extractor import DEFAULT_MODEL_DIR, ExtractorConfig
    from training.retrain import base_heldout_layouts, base_heldout_records
    layouts, notes = base_heldout_layouts(DEFAULT_MODEL_DIR)
    prov = json.loads((DEFAULT_MODEL_DIR / "provenance.json").read_text(encoding="utf-8"))
    assert set(layouts) == set(ExtractorConfig.load(DEFAULT_MODEL_DIR).doc_types) and notes == []
    assert {f"{dt}/{lay}" for dt, lays in layouts.items() for lay in lays} == set(prov["heldout_layouts"])
    n = max(len(lays) for lays in layouts.values())        # enough pages per type to draw every held-out layout
    a, summary = base_heldout_records(DEFAULT_MODEL_DIR, pages_per_type=n)
    b, _ = base_heldout_records(DEFAULT_MODEL_DIR, pages_per_type=n)
    assert a == b and summary["pages"] == n * len(layouts)          # fixed seed: the same pages every time
    assert {(r["doc_type"], r["layout"]) for r in a} == {(dt, lay) for dt, lays in layouts.items() for lay in lays}


@pytest.mark.heavy
def test_retrain_keeps_latest_when_the_base_heldout_drops(tmp_path, monkeypatch, capsys):
    """End to end with a tiny fine-tune: the new model is better on the corpus but (evaluation
    monkeypatched) loses generic_form on the base's own held-out set -> exported, `latest` not moved,
    the report names the reason and the CLI exits 1 (it ran; 2 is for a refusal before any work)."""
    from training import retrain as rt
    from training.__main__ import main
    real = rt.evaluate_model

    def scores(model_dir, records, schema_files, ocr="gt", cache=None):
        m = real(model_dir, records, schema_files, ocr, cache)
        new = Path(model_dir).name == "finetuned"
        if records and str(records[0].get("id", "")).startswith("base_heldout/"):
            m["f1_by_type"] = {"generic_form": 0.40 if new else 0.60}
        else:
            m["overall_field"]["f1"] = 0.9 if new else 0.1
        return m

    monkeypatch.setattr(rt, "evaluate_model", scores)
    corpus, base, root = make_corpus(tmp_path / "corpus", 32), make_base(tmp_path / "base", 32, 1), tmp_path / "m"
    args = ["retrain", "--corpus", str(corpus), "--base", str(base), "--out-root", str(root), "--name", "p",
            "--steps", "2", "--batch-size", "4"]
    assert main(args) == 1
    assert "generic_form on the base's own held-out pages fell: F1 0.600 -> 0.400" in capsys.readouterr().err
    reg = ModelRegistry(root)
    (version,) = reg.versions("p")
    rep = json.loads((version / "report.json").read_text(encoding="utf-8"))
    assert not rep["promoted"] and reg.latest("p") is None and rep["split"]["heldout"] >= 8
    assert rep["base_heldout"]["base_f1_by_type"] == {"generic_form": 0.60}
    assert "generic_form" in (version / "report.md").read_text(encoding="utf-8")
    assert not (root / "registry" / ".work").exists()       # the ~180 MB work folder went when the run ended


@pytest.mark.heavy
def test_an_export_killed_half_way_leaves_no_version_and_latest_unmoved(tmp_path, monkeypatch):
    """The export dies after the weights are copied and while the report is written (as kill -9 would):
    no version is listed by the registry or find_model_dirs, `latest` (--force: it would move) stays
    unset; the same command again (the interrupted run's work kept, so it resumes) completes a whole version
    with its report, which `promote` then makes `latest` (--force never does)."""
    from models.model_dir import find_model_dirs
    from training import retrain as rt
    from training.__main__ import main
    real = rt.write_report

    def dies(out, *a, **kw):
        real(out, *a, **kw)
        (out / "report.md").write_text("# half", encoding="utf-8")
        raise KeyboardInterrupt("killed while writing the report")

    monkeypatch.setattr(rt, "write_report", dies)
    corpus, base, root = make_corpus(tmp_path / "corpus", 32), make_base(tmp_path / "base", 32, 1), tmp_path / "m"
    args = ["retrain", "--corpus", str(corpus), "--base", str(base), "--out-root", str(root), "--name", "p",
            "--steps", "2", "--batch-size", "4", "--force"]
    with pytest.raises(KeyboardInterrupt):
        main(args)
    reg = ModelRegistry(root)
    assert reg.versions("p") == [] and reg.latest("p") is None and reg.names() == []
    assert not reg.pointer("p").exists()
    assert [d for d in find_model_dirs(root) if "registry" in d.parts] == []
    assert (root / "registry" / ".work").is_dir()          # interrupted: kept for the rerun to resume
    monkeypatch.setattr(rt, "write_report", real)
    assert main(args) == 0
    (version,) = reg.versions("p")
    assert reg.latest("p") is None and (version / "report.json").is_file()
    assert main(["promote", str(version)]) == 0 and reg.latest("p") == version
    assert version in [d for d in find_model_dirs(root) if "registry" in d.parts]
    assert "# half" not in (version / "report.md").read_text(encoding="utf-8")


# --- rehearsal (replay) -----------------------------------------------------------------------------

def test_replay_pages_are_the_base_types_on_its_training_layouts_never_the_gates(tmp_path):
    """Replay pages: every doc type the bundled model knew, only layouts its training used (the exact
    complement of what the promotion gate scores on), other seeds than the gate's; drawn once."""
    from data.synth.generator import list_layouts
    from models.extractor import DEFAULT_MODEL_DIR, ExtractorConfig
    from training.retrain import base_heldout_layouts, base_heldout_records, replay_layouts, replay_records
    held, _ = base_heldout_layouts(DEFAULT_MODEL_DIR)
    layouts, _ = replay_layouts(DEFAULT_MODEL_DIR)
    assert set(layouts) == set(ExtractorConfig.load(DEFAULT_MODEL_DIR).doc_types)
    for dt, lays in layouts.items():
        assert lays and not set(lays) & set(held[dt]) and set(lays) | set(held[dt]) == set(list_layouts(dt))
    recs, summary = replay_records(DEFAULT_MODEL_DIR, tmp_path / "replay", pages_per_type=3, seed=0)
    assert summary["pages"] == len(recs) == 3 * len(layouts)
    assert all(r["layout"] in layouts[r["doc_type"]] and r["layout"] not in held[r["doc_type"]] for r in recs)
    assert {r["doc_type"] for r in recs} == set(layouts)
    gate, _ = base_heldout_records(DEFAULT_MODEL_DIR, pages_per_type=3)
    assert not {(r["doc_type"], r["seed"]) for r in recs} & {(r["doc_type"], r["seed"]) for r in gate}
    assert all(Path(r["image"]).is_file() for r in recs)
    # generated once: a second call reads the same pages back and writes nothing
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "replay").rglob("*.json")}
    again, _ = replay_records(DEFAULT_MODEL_DIR, tmp_path / "replay", pages_per_type=3, seed=0)
    assert again == recs and stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "replay").rglob("*.json")}


def test_replay_stream_mixes_the_stated_share_into_every_batch(tmp_path):
    """Every batch holds round(share * batch) replay windows (base types) and the rest corpus windows
    (the new type), whichever source runs out first; the base's labels keep their indices."""
    from data.corpus import read_corpus
    from models.extractor import DEFAULT_MODEL_DIR, ExtractorConfig
    from models.tokenizer import Tokenizer
    from training.dataset import TrainingSet, gt_lines
    from training.noise import NoiseConfig
    from training.retrain import (
        ReplayStream,
        RetrainError,
        corpus_schemas,
        label_map,
        replay_pages,
        replay_records,
        replay_rows,
    )
    corpus = make_corpus(tmp_path / "c", 5)
    base = ExtractorConfig.load(DEFAULT_MODEL_DIR)
    tags, types, _ = label_map(read_corpus(corpus), corpus_schemas(corpus), base.tag_labels, base.doc_types)
    assert tags[:len(base.tag_labels)] == base.tag_labels and types[:len(base.doc_types)] == base.doc_types
    assert types[len(base.doc_types):] == ["parking_ticket"]
    recs, _ = replay_records(DEFAULT_MODEL_DIR, tmp_path / "replay", pages_per_type=2, seed=0)
    vocab, tag_index = Tokenizer.from_dir(DEFAULT_MODEL_DIR), {t: i for i, t in enumerate(tags)}
    type_index = {t: i for i, t in enumerate(types)}
    new_type = type_index["parking_ticket"]

    def sets() -> tuple[TrainingSet, TrainingSet]:
        return (TrainingSet([gt_lines(r) for r in read_corpus(corpus)], vocab, tag_index, type_index, 256,
                            NoiseConfig(), 0),
                TrainingSet(replay_pages(recs), vocab, tag_index, type_index, 256, NoiseConfig(), 1))

    for share, batch_size, want in ((0.5, 8, 4), (0.25, 8, 2), (0.5, 4, 2), (0.1, 8, 1), (0.0, 8, 0)):
        stream = ReplayStream(*sets(), batch_size, share)
        assert replay_rows(share, batch_size) == want == stream.rows["replay"]
        seen = set()
        for _ in range(30):        # several epochs of the 5-page corpus and the 12 replay pages
            batch = stream.next()
            assert len(batch) == batch_size
            assert [s.doc_type == new_type for s in batch] == [False] * want + [True] * (batch_size - want)
            seen |= {types[s.doc_type] for s in batch[:want]}
        assert seen == (set(base.doc_types) if want else set())
    for bad in (1.0, -0.1):
        with pytest.raises(RetrainError, match="--replay"):
            replay_rows(bad, 8)


def test_replay_pages_read_by_ocr_join_as_the_trainer_takes_them(tmp_path):
    """With --ocr-train, a seeded few replay pages per type are read by OCR and join the replay set
    `ocr_repeat` times, labelled by alignment (no synthetic noise: source "ocr"); the rest as own lines."""
    from data.document import Line, Page
    from models.extractor import DEFAULT_MODEL_DIR
    from training.retrain import replay_ocr_choice, replay_pages, replay_records
    recs, summary = replay_records(DEFAULT_MODEL_DIR, tmp_path / "replay", pages_per_type=3, seed=0)
    chosen = replay_ocr_choice(recs, 1, summary["seed"])
    assert sorted(r["doc_type"] for r in chosen) == sorted(summary["layouts"])
    assert chosen == replay_ocr_choice(recs, 1, summary["seed"])
    # an "OCR" that reads each chosen page exactly as drawn: every value is found again
    read = {r["id"]: Page(0, r["width"], r["height"], [Line(ln["text"], ln["quad"]) for ln in r["lines"]])
            for r in chosen}
    pages = replay_pages(recs, read, ocr_repeat=2)
    assert len(pages) == len(recs) + 2 * len(chosen)
    ocr = [pg for pg in pages if pg.source == "ocr"]
    assert len(ocr) == 2 * len(chosen) and {pg.doc_type for pg in ocr} == set(summary["layouts"])
    tagged = [t for pg in ocr if pg.doc_type == "vat_invoice" for ln in pg.lines for t in ln.tags]
    assert any(t.startswith("B-") for t in tagged)


@pytest.mark.heavy
def test_retrain_with_ocr_train_reads_a_few_replay_pages_into_the_shared_cache(tmp_path, monkeypatch):
    """--ocr-train with replay: besides the corpus' training pages, REPLAY_OCR_PAGES_PER_TYPE replay pages
    per base type go through OCR (one read each, into the run's OCR cache) and join the replay set twice
    (--ocr-repeat). The OCR engine is a stand-in: what is tested is the path, not PP-OCR."""
    import models.ocr
    from data.document import Line, Page, box_to_quad
    from training.retrain import REPLAY_OCR_PAGES_PER_TYPE, REPLAY_PAGES_PER_TYPE, retrain

    class Reader:           # read through the reading route, which passes page_index and timings
        def read(self, image, **kw):
            h, w = image.shape[:2]
            return Page(0, w, h, [Line("停车票", box_to_quad([10, 10, 100, 30]))])

    monkeypatch.setattr(models.ocr, "get_engine", lambda *a, **k: Reader())
    corpus, base, root = make_corpus(tmp_path / "corpus", 32), make_base(tmp_path / "base", 32, 1), tmp_path / "m"
    version = retrain(corpus, base, root, "p", steps=2, batch_size=4, ocr_train=True, force=True, keep_work=True)
    rep = json.loads((version / "report.json").read_text(encoding="utf-8"))
    assert rep["replay"]["ocr_pages"] == REPLAY_OCR_PAGES_PER_TYPE          # the base knew generic_form only
    assert rep["finetune"]["pages"]["replay"] == REPLAY_PAGES_PER_TYPE + 2 * REPLAY_OCR_PAGES_PER_TYPE
    assert rep["finetune"]["batch_rows"] == {"replay": 2, "corpus": 2}
    work = next((root / "registry" / ".work").iterdir())
    ids = [json.loads(r)["id"] for r in (work / "ocr_cache.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(ids) == len(set(ids)) == rep["split"]["train"] + REPLAY_OCR_PAGES_PER_TYPE
    assert sum(i.startswith("replay/generic_form/") for i in ids) == REPLAY_OCR_PAGES_PER_TYPE
