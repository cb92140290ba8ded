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

SCHEMA_TYPES = ["vat_invoice", "e_invoice", "id_card_front", "id_card_back", "receipt"]
GT_KEYS = {"image", "doc_type", "layout", "seed", "degrade", "width", "height", "lines", "fields", "items",
           "pairs"}


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
    assert set(list_doc_types()) >= {"vat_invoice", "e_invoice", "id_card_front", "id_card_back", "receipt",
                                     "generic_form"}
    for t in ("vat_invoice", "e_invoice", "generic_form"):
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


@pytest.mark.parametrize("doc_type", ["vat_invoice", "e_invoice", "id_card_front", "id_card_back", "receipt",
                                      "generic_form"])
def test_ground_truth_is_self_consistent(doc_type):
    schema = load_schema(doc_type)
    pages = [(lay, "none") for lay in list_layouts(doc_type)] + [(list_layouts(doc_type)[0], "heavy")]
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
                    "receipt": {"total_amount", "paid_amount", "date"}}[doc_type]
        assert expected <= set(checked), (gt["layout"], valid)


def test_generic_form_pairs_point_at_question_and_answer_lines():
    for layout in list_layouts("generic_form"):
        _, gt = generate("generic_form", 5, layout)
        assert gt["pairs"], layout
        for p in gt["pairs"]:
            k, v = gt["lines"][p["key_line"]], gt["lines"][p["value_line"]]
            assert k["text"].rstrip("：") == p["key"] and v["text"] == p["value"]
            assert [p["key_line"], p["value_line"]] in k["linking"] and [p["key_line"], p["value_line"]] in v["linking"]
        assert any(ln["label"] == "header" for ln in gt["lines"])


def _ink(image) -> np.ndarray:
    return np.asarray(image.convert("L")) < 200


@pytest.mark.parametrize("doc_type", ["vat_invoice", "e_invoice", "id_card_front", "receipt", "generic_form"])
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
    for doc_type in ("vat_invoice", "id_card_front"):
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


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    assert synth_main(["--type", "passport", "--n", "1", "--out", str(tmp_path)]) == 2
    assert "choose from" in capsys.readouterr().err
    assert synth_main(["--type", "vat_invoice", "--n", "1"]) == 2
