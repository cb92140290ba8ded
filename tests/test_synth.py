"""Synthetic generator: determinism, ground truth that agrees with itself and with the pixels,
values that pass the validators, the CLI."""
from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest

from data.normalize import normalize_value
from data.schemas import load_schema
from data.synth import generate, generate_dir, list_doc_types, list_layouts
from data.synth.__main__ import main as synth_main
from data.validate import validate_fields

SCHEMA_TYPES = ["vat_invoice", "e_invoice", "id_card_front", "id_card_back", "receipt", "business_licence",
                "train_ticket"]
ALL_TYPES = SCHEMA_TYPES + ["generic_form"]
GT_KEYS = {"image", "doc_type", "layout", "seed", "degrade", "width", "height", "lines", "fields", "items",
           "pairs", "tables", "signatures"}


def _png_bytes(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _all_fields(gt):
    yield from gt["fields"].items()
    for row in gt["items"]:
        yield from row.items()


def _inside(inner, outer, tol=0.11):
    return (inner[0] >= outer[0] - tol and inner[1] >= outer[1] - tol and inner[2] <= outer[2] + tol
            and inner[3] <= outer[3] + tol)


def test_types_and_layouts():
    assert set(list_doc_types()) == set(ALL_TYPES)
    for t in ("vat_invoice", "e_invoice", "generic_form", "business_licence", "train_ticket"):
        assert len(list_layouts(t)) >= 3
    with pytest.raises(ValueError, match="choose from"):
        generate("vat_invoice", 1, layout="no_such_layout")


def test_same_seed_same_bytes_different_seed_differs():
    a_img, a_gt = generate("vat_invoice", 42, degrade="heavy")
    b_img, b_gt = generate("vat_invoice", 42, degrade="heavy")
    c_img, c_gt = generate("vat_invoice", 43, degrade="heavy")
    assert _png_bytes(a_img) == _png_bytes(b_img)
    assert json.dumps(a_gt, ensure_ascii=False) == json.dumps(b_gt, ensure_ascii=False)
    assert _png_bytes(a_img) != _png_bytes(c_img)
    assert a_gt["fields"]["invoice_number"]["value"] != c_gt["fields"]["invoice_number"]["value"]


@pytest.mark.parametrize("doc_type", ["business_licence", "train_ticket", "receipt", "id_card_back", "generic_form"])
def test_every_type_is_deterministic_per_seed(doc_type):
    a_img, a_gt = generate(doc_type, 5, degrade="light")
    b_img, b_gt = generate(doc_type, 5, degrade="light")
    c_img, _ = generate(doc_type, 6, degrade="light")
    assert _png_bytes(a_img) == _png_bytes(b_img) and a_gt == b_gt
    assert _png_bytes(a_img) != _png_bytes(c_img)


def test_text_only_pages_hold_the_same_ground_truth_text():
    """decorations=False must not change the values: tests compare ink on text-only pages."""
    for doc_type in ("business_licence", "train_ticket"):
        for layout in list_layouts(doc_type):
            _, a = generate(doc_type, 3, layout)
            _, b = generate(doc_type, 3, layout, decorations=False)
            assert [ln["text"] for ln in a["lines"]] == [ln["text"] for ln in b["lines"]], layout
            assert a["fields"] == b["fields"], layout


def test_business_licence_scope_is_first_line_and_code_is_valid():
    from data.validate import is_valid_credit_code
    multi = 0
    for seed in range(6):
        for layout in list_layouts("business_licence"):
            _, gt = generate("business_licence", seed, layout, decorations=False)
            assert is_valid_credit_code(gt["fields"]["credit_code"]["value"])
            scope = gt["fields"]["business_scope"]
            first = gt["lines"][scope["line"]]
            # the field is the whole first scope line (after the key in the inline layout)
            assert first["text"].endswith(scope["text"]) and len(scope["text"]) >= 5
            if layout != "bl_copy":
                # the key 经营范围 links to every printed scope line; the field line is the first of them
                key = next(a for a, b in first["linking"] if b == scope["line"])
                scope_lines = [b for a, b in gt["lines"][key]["linking"] if a == key]
                assert scope_lines[0] == scope["line"]
                multi += len(scope_lines) >= 2
            assert "2" not in gt["fields"]["registered_capital"]["text"]       # printed in 大写
            assert float(gt["fields"]["registered_capital"]["value"]) >= 10000
    assert multi >= 6                   # most of the 12 split-form scopes run onto a second line


def test_train_ticket_values_look_like_a_ticket():
    import re
    for seed in range(8):
        for layout in list_layouts("train_ticket"):
            _, gt = generate("train_ticket", seed, layout, decorations=False)
            f = gt["fields"]
            assert re.fullmatch(r"[A-Z]\d{6}", f["ticket_number"]["value"])
            assert re.fullmatch(r"[0-9]{4}[0-9*]{10}[0-9]{3}[0-9X]", f["passenger_id"]["value"])
            assert "****" in f["passenger_id"]["value"]
            assert f["departure_date"]["line"] == f["departure_time"]["line"]      # "...日 08:30开"
            assert f["from_station"]["value"] != f["to_station"]["value"]
            assert not f["from_station"]["value"].endswith("站")
            assert f["price"]["value"].endswith(("0", "5")) and float(f["price"]["value"]) > 0


def _value_gaps(doc_type, layout, key, seeds):
    """x gap between a key line's ink and its linked value's ink, per seed."""
    gaps = []
    for seed in seeds:
        _, gt = generate(doc_type, seed, layout, decorations=False)
        v = gt["fields"][key]["line"]
        k = next(a for a, b in gt["lines"][v]["linking"] if b == v)
        gaps.append(gt["lines"][v]["box"][0] - gt["lines"][k]["box"][2])
    return gaps


def test_paper_invoice_values_are_printed_off_the_form():
    """Dot-matrix invoices: the value column moves against its key by up to ~20 px from page to page;
    electronic invoices keep it within the small per-line jitter."""
    paper = _value_gaps("vat_invoice", "vat_paper_split", "machine_number", range(24))
    electronic = _value_gaps("e_invoice", "einv_split", "invoice_number", range(24))
    assert max(paper) - min(paper) > 30, paper
    assert max(electronic) - min(electronic) < 20, electronic


@pytest.mark.parametrize("doc_type", ALL_TYPES)
def test_ground_truth_is_self_consistent(doc_type):
    schema = load_schema(doc_type)
    pages = [(lay, "none") for lay in list_layouts(doc_type)] + [(list_layouts(doc_type)[0], "heavy"),
                                                                 (list_layouts(doc_type)[-1], "photo")]
    for seed, (layout, level) in enumerate(pages):
        image, gt = generate(doc_type, seed, layout, level)
        assert set(gt) == GT_KEYS
        assert (gt["width"], gt["height"]) == image.size and gt["layout"] == layout
        page = [0, 0, gt["width"], gt["height"]]
        for i, ln in enumerate(gt["lines"]):
            assert ln["id"] == i and ln["text"].strip() and len(ln["quad"]) == 4
            assert _inside(ln["box"], page), (layout, ln)
            assert ln["label"] in (None, "header", "question", "answer", "other")
            for a, b in ln["linking"]:
                assert i in (a, b) and gt["lines"][a]["label"] == "question" and gt["lines"][b]["label"] == "answer"
        for key, f in _all_fields(gt):
            line = gt["lines"][f["line"]]
            start, end = f["span"]
            assert 0 <= start < end <= len(line["text"])
            assert line["text"][start:end] == f["text"], (layout, key)
            assert _inside(f["box"], line["box"]) and _inside(f["box"], page), (layout, key)
            assert f["box"][2] > f["box"][0] and f["box"][3] > f["box"][1]
            spec = schema.field(key) if schema.fields or schema.item_fields else None
            if spec is not None:
                assert normalize_value(spec.type, f["text"]) == f["value"], (layout, key)
        assert schema.fields == [] or all(s.key in gt["fields"] for s in schema.fields if s.required), layout


@pytest.mark.parametrize("doc_type", SCHEMA_TYPES)
def test_generated_values_pass_validation(doc_type):
    schema = load_schema(doc_type)
    for seed in range(12):
        _, gt = generate(doc_type, 1000 + seed, decorations=False)
        values = {k: f["text"] for k, f in gt["fields"].items()}
        values["items"] = [{k: f["text"] for k, f in row.items()} for row in gt["items"]]
        valid, warnings = validate_fields(schema, values)
        assert warnings == [], (gt["layout"], warnings)
        assert False not in valid.values()
        checked = [k for k, v in valid.items() if v is True]
        expected = {"vat_invoice": {"seller_tax_id", "total_with_tax", "total_with_tax_in_words", "issue_date"},
                    "e_invoice": {"seller_tax_id", "total_with_tax", "total_with_tax_in_words"},
                    "id_card_front": {"id_number", "birth_date", "sex"},
                    "id_card_back": {"valid_period"},
                    "receipt": {"total_amount", "paid_amount", "date"},
                    "business_licence": {"credit_code", "registered_capital", "established_date", "business_term",
                                         "registration_date"},
                    "train_ticket": {"ticket_number", "train_number", "departure_date", "departure_time", "seat",
                                     "price", "passenger_id"}}[doc_type]
        if gt["layout"] == "einv_railway":          # no seller, no 大写: the fare, the buyer's code
            expected = {"invoice_number", "issue_date", "buyer_tax_id", "total_with_tax"}
        assert expected <= set(checked), (gt["layout"], valid)


def test_generic_form_pairs_point_at_question_and_answer_lines():
    for layout in list_layouts("generic_form"):
        _, gt = generate("generic_form", 5, layout)
        assert gt["pairs"], layout
        for p in gt["pairs"]:
            # a key or value may run over several lines (data/synth/form.py): the pair joins them
            keys, vals = p["key_lines"], p["value_lines"]
            assert keys[0] == p["key_line"] and vals[0] == p["value_line"]
            assert "".join(gt["lines"][i]["text"] for i in keys).rstrip("：") == p["key"]
            value = "".join(gt["lines"][i]["text"] for i in vals)
            assert value == p["value"] or ("options" in p and value[1:] == p["value"])   # ☑女 -> 女
            for k in keys:
                for v in vals:
                    assert [k, v] in gt["lines"][k]["linking"] and [k, v] in gt["lines"][v]["linking"]
        assert any(ln["label"] == "header" for ln in gt["lines"])


def _ink(image) -> np.ndarray:
    return np.asarray(image.convert("L")) < 200


@pytest.mark.parametrize("doc_type", ["vat_invoice", "e_invoice", "id_card_front", "receipt", "generic_form",
                                      "business_licence", "train_ticket"])
def test_boxes_sit_tightly_on_the_ink(doc_type):
    """Text-only pages: all ink is inside line boxes, and each field box is the ink of its characters."""
    for layout in list_layouts(doc_type):
        image, gt = generate(doc_type, 7, layout, decorations=False)
        ink = _ink(image)
        covered = np.zeros_like(ink)
        for ln in gt["lines"]:
            x0, y0, x1, y1 = ln["box"]
            covered[max(0, int(y0) - 2):int(y1) + 3, max(0, int(x0) - 2):int(x1) + 3] = True
        assert (ink & ~covered).sum() <= 0.002 * ink.sum(), layout
        for key, f in _all_fields(gt):
            x0, y0, x1, y1 = (round(v) for v in f["box"])
            ys, xs = np.nonzero(ink[y0:y1, x0:x1])
            assert len(xs), (layout, key)
            # the value's own ink reaches each side of its box (within 4 px of anti-aliasing): the box
            # is tight, not the whole line's
            assert xs.min() <= 4 and xs.max() >= (x1 - x0) - 5, (layout, key, f)
            assert ys.min() <= 4 and ys.max() >= (y1 - y0) - 5, (layout, key, f)
            # and nothing of the line's other characters: the column just outside the box is blank
            # within the line (the key or neighbouring text is a few pixels away at most)
            line_box = gt["lines"][f["line"]]["box"]
            if f["span"][0] > 0:
                assert x0 - line_box[0] > 3, (layout, key)


def test_decorated_and_degraded_field_boxes_hold_dark_pixels():
    for doc_type in ("vat_invoice", "id_card_front", "business_licence", "train_ticket"):
        image, gt = generate(doc_type, 11, degrade="light")
        gray = np.asarray(image.convert("L")).astype(np.int16)
        for key, f in _all_fields(gt):
            x0, y0, x1, y1 = (round(v) for v in f["box"])
            crop = gray[y0:y1 + 1, x0:x1 + 1]
            assert crop.min() < np.median(crop) - 50, (doc_type, key)


@pytest.mark.heavy
def test_cli_writes_pages_and_manifest_identically_with_workers(tmp_path):
    out2, out1 = tmp_path / "w2", tmp_path / "w1"
    rc = synth_main(["--type", "vat_invoice,receipt", "--n", "4", "--seed", "2", "--out", str(out2),
                     "--workers", "2", "--degrade", "mix"])
    assert rc == 0
    rows = [json.loads(x) for x in (out2 / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4 and [r["doc_type"] for r in rows] == ["vat_invoice", "receipt"] * 2
    assert len(list(out2.glob("*.jpg"))) == 4 and len(list(out2.glob("*.json"))) == 4
    from PIL import Image
    for r in rows:
        gt = json.loads((out2 / r["json"]).read_text(encoding="utf-8"))
        assert gt["image"] == r["image"] and Image.open(out2 / r["image"]).size == (gt["width"], gt["height"])
    generate_dir(["vat_invoice", "receipt"], 4, 2, out1, degrade="mix", workers=1, progress=False)
    digest = lambda d: {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}
    assert digest(out1) == digest(out2)


def _dies_on_page_three(job):
    """A page writer whose worker is killed (as the kernel's OOM killer would) on page 3."""
    import os
    import signal
    if job[2] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    from data.synth.generator import _write_page
    return _write_page(job)


def test_a_killed_worker_is_an_error_not_a_wait_forever(tmp_path, monkeypatch):
    """multiprocessing.Pool had waited for a killed worker's pages for ever; the executor says so."""
    from concurrent.futures.process import BrokenProcessPool

    from data.synth import generator
    monkeypatch.setattr(generator, "_write_page", _dies_on_page_three)
    with pytest.raises(BrokenProcessPool):
        generate_dir("receipt", 6, 1, tmp_path / "out", workers=2, progress=False)


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    assert synth_main(["--type", "passport", "--n", "1", "--out", str(tmp_path)]) == 2
    assert "choose from" in capsys.readouterr().err
    assert synth_main(["--type", "vat_invoice", "--n", "1"]) == 2


def test_photo_level_is_a_hand_held_photo_at_full_resolution_and_mix_never_draws_it():
    """photo: the heavy level's tilt, shadow, blur, noise and JPEG without its shrinking, so text keeps
    ~0.85-1.0 of its rendered height; heavy shrinks it to 0.5-0.85. mix draws none/light/heavy only."""
    import numpy as np
    clean, clean_gt = generate("vat_invoice", 8, "vat_electronic", "none")

    def text_height(gt):
        return float(np.median([np.hypot(*np.subtract(ln["quad"][3], ln["quad"][0]))     # tilt-free height
                                for ln in gt["lines"] if len(ln["text"]) > 3]))
    photo_ratio, heavy_ratio = [], []
    for seed in range(8, 14):
        _, ref = generate("vat_invoice", seed, "vat_electronic", "none")
        _, ph = generate("vat_invoice", seed, "vat_electronic", "photo")
        _, hv = generate("vat_invoice", seed, "vat_electronic", "heavy")
        assert ph["degrade"] == "photo" and hv["degrade"] == "heavy"
        photo_ratio.append(text_height(ph) / text_height(ref))
        heavy_ratio.append(text_height(hv) / text_height(ref))
    assert min(photo_ratio) > 0.8 and max(heavy_ratio) < 0.95 and np.mean(heavy_ratio) < np.mean(photo_ratio) - 0.15
    a, a_gt = generate("vat_invoice", 8, "vat_electronic", "photo")
    b, b_gt = generate("vat_invoice", 8, "vat_electronic", "photo")
    assert _png_bytes(a) == _png_bytes(b) and a_gt == b_gt and _png_bytes(a) != _png_bytes(clean)
    assert {generate("receipt", s, degrade="mix")[1]["degrade"] for s in range(30)} == {"none", "light", "heavy"}
