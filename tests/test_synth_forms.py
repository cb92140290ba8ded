"""Generated generic forms (data/synth/form.py): layouts like real forms, and ground truth that says
which lines form a key or a value, what a check-box group's answer is, and which fields are empty."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from data.corpus import split_by_layout
from data.synth.form import CLASSIC_LAYOUTS
from data.synth.generator import generate, list_layouts
from training.dataset import _form_entries

ROOT = Path(__file__).resolve().parents[1]
NEW = [lay for lay in list_layouts("generic_form") if lay not in CLASSIC_LAYOUTS]
TICKS = "☑■√"


@functools.lru_cache(maxsize=None)
def _page(layout: str, seed: int) -> dict:
    return generate("generic_form", seed, layout, decorations=False)[1]


def _pages(layouts: list[str], seeds: range) -> list[dict]:
    return [_page(lay, s) for lay in layouts for s in seeds]


def test_at_least_twelve_layouts_each_renders_pairs_between_questions_and_answers():
    assert len(list_layouts("generic_form")) >= 12 and len(NEW) >= 8
    for layout in list_layouts("generic_form"):
        image, gt = generate("generic_form", 3, layout, degrade="light")
        assert image.size == (gt["width"], gt["height"]) and gt["layout"] == layout
        assert {ln["label"] for ln in gt["lines"]} <= {"header", "question", "answer", "other"}, layout
        assert any(ln["label"] == "header" for ln in gt["lines"]), layout
        assert len(gt["pairs"]) >= 3, layout
        lines = gt["lines"]
        for ln in lines:
            for a, b in ln["linking"]:
                assert lines[a]["label"] == "question" and lines[b]["label"] == "answer", (layout, ln)
        for p in gt["pairs"]:
            assert all(lines[i]["label"] == "question" for i in p["key_lines"])
            assert all(lines[i]["label"] == "answer" for i in p["value_lines"])


def test_check_box_truth_is_the_ticked_option():
    seen = 0
    for gt in _pages(NEW, range(4)):
        lines = gt["lines"]
        for p in gt["pairs"]:
            if "options" not in p:
                continue
            seen += 1
            (v,) = p["value_lines"]
            text = lines[v]["text"]
            assert text[0] in TICKS and text[1:] == p["value"] and p["value"] in p["options"], p
            # the other options are printed unticked around it, in order, and belong to no pair
            first = v - p["options"].index(p["value"])
            group = lines[first:first + len(p["options"])]
            others = [ln for ln in group if ln["id"] != v]
            assert [ln["text"][1:] for ln in group] == p["options"], p
            assert all(ln["text"][0] == "□" and ln["label"] == "other" and not ln["linking"] for ln in others)
            assert p["key"] == "".join(lines[k]["text"] for k in p["key_lines"]).rstrip("：")
    assert seen >= 20


def test_wrapped_labels_are_one_key_of_several_lines():
    multi = [(gt, p) for gt in _pages(["form_cells", "form_cells3", "form_rows"], range(4))
             for p in gt["pairs"] if len(p["key_lines"]) > 1]
    assert len(multi) >= 10
    for gt, p in multi:
        lines = gt["lines"]
        parts = [lines[i] for i in p["key_lines"]]
        assert "".join(ln["text"] for ln in parts) == p["key"] and all(len(ln["text"]) < len(p["key"]) for ln in parts)
        for upper, lower in zip(parts, parts[1:]):              # stacked in one cell, top to bottom
            assert lower["box"][1] > upper["box"][3] - 2
            assert abs((lower["box"][0] + lower["box"][2]) - (upper["box"][0] + upper["box"][2])) < 2 * 30
        for k in p["key_lines"]:                                 # every key line links to every value line
            for v in p["value_lines"]:
                assert [k, v] in lines[k]["linking"]
    # 政治 / 面貌 style: the training links come out for each key line
    gt, p = multi[0]
    _, links = _form_entries(gt)
    assert {(k, v) for k in p["key_lines"] for v in p["value_lines"]} <= links


def test_wrapped_values_are_one_value_of_several_lines():
    multi = [(gt, p) for gt in _pages(NEW, range(4)) for p in gt["pairs"] if len(p["value_lines"]) > 1]
    assert len({gt["layout"] for gt, _ in multi}) >= 5
    for gt, p in multi:
        parts = [gt["lines"][i] for i in p["value_lines"]]
        assert "".join(ln["text"] for ln in parts) == p["value"]
        assert all(b["box"][1] > a["box"][3] - 2 for a, b in zip(parts, parts[1:]))


def test_a_label_with_several_values_in_its_row_gives_a_pair_per_value():
    found = 0
    for gt in _pages(["form_rows"], range(4)):
        by_key: dict[tuple, list[dict]] = {}
        for p in gt["pairs"]:
            by_key.setdefault(tuple(p["key_lines"]), []).append(p)
        for ps in by_key.values():
            if len(ps) > 1:
                found += 1
                tops = [gt["lines"][p["value_line"]]["box"][1] for p in ps]
                assert max(tops) - min(tops) < 5                 # side by side in one row
                assert len({p["value_line"] for p in ps}) == len(ps)
    assert found >= 4


def test_empty_fields_and_hints_get_no_link():
    empty = hints = 0
    for gt in _pages(NEW, range(4)):
        for ln in gt["lines"]:
            if ln["label"] == "question" and not ln["linking"]:
                empty += 1
            if ln["text"].startswith("（") and ln["text"].endswith("）") and ln["label"] != "question":
                hints += 1
                assert ln["label"] == "other" and not ln["linking"], ln
    assert empty >= 20 and hints >= 10


def test_thesis_cover_labels_have_no_colon_and_values_sit_on_their_row():
    colonless = 0
    for gt in _pages(["form_cover", "form_thesis"], range(6)):
        for p in gt["pairs"]:
            k, v = gt["lines"][p["key_line"]], gt["lines"][p["value_line"]]
            colonless += not k["text"].endswith("：")
            assert v["box"][0] > k["box"][2] and abs(v["box"][1] - k["box"][1]) < 12
    assert colonless >= 10


def test_decorations_change_the_image_not_the_ground_truth():
    for layout in NEW:
        img_a, a = generate("generic_form", 8, layout)
        img_b, b = generate("generic_form", 8, layout, decorations=False)
        assert a["lines"] == b["lines"] and a["pairs"] == b["pairs"], layout
        assert img_a.tobytes() != img_b.tobytes()
    again, _ = generate("generic_form", 8, NEW[0])
    assert again.tobytes() == generate("generic_form", 8, NEW[0])[0].tobytes()


def test_held_out_layouts_are_whole_and_include_new_ones_in_both_sets():
    recs = [{**gt, "id": f"{gt['layout']}/{i}"} for i, gt in enumerate(_pages(list_layouts("generic_form"), range(2)))]
    for share in (0.25, 0.4):
        train, test = split_by_layout(recs, share, seed=3)
        held = {r["layout"] for r in test}
        assert held and held.isdisjoint({r["layout"] for r in train})
        assert all(sum(r["layout"] == lay for r in test) == 2 for lay in held)      # every page of a held layout
    # the split the bundled model's training makes (configs/default.yaml): some new layouts are
    # held out, others trained on
    cfg = yaml.safe_load((ROOT / "configs" / "default.yaml").read_text(encoding="utf-8"))
    types = cfg["data"]["types"]
    every = [{"doc_type": t, "layout": lay} for t in types for lay in list_layouts(t)]
    train, test = split_by_layout(every, cfg["data"]["heldout_layouts"], int(cfg["seed"]))
    held = {r["layout"] for r in test if r["doc_type"] == "generic_form"}
    trained = {r["layout"] for r in train if r["doc_type"] == "generic_form"}
    assert held & set(NEW) and trained & set(NEW) and not held & trained


def test_signature_and_date_lines_link_only_when_signed_and_are_a_signature_block():
    signed = unsigned = 0
    for gt in _pages(NEW, range(4)):
        lines = gt["lines"]
        # every layout but the thesis covers ends in a signature and a blank date
        assert gt["layout"] in ("form_cover", "form_thesis") or any(ln["text"].replace(" ", "") == "年月日"
                                                                     for ln in lines)
        for ln in lines:
            if ln["text"].replace(" ", "") == "年月日":
                assert ln["label"] == "other" and not ln["linking"]
        assert not [p for p in gt["pairs"] if p["key"].endswith(("签名", "签字"))]   # no key-value pair
        for p in gt["signatures"]:
            if p["key"].endswith(("签名", "签字")):
                signed += 1
                assert lines[p["value_line"]]["text"] == p["value"] and 2 <= len(p["value"]) <= 4
        unsigned += sum(ln["label"] == "question" and ln["text"].rstrip("：").endswith(("签名", "签字"))
                        and not ln["linking"] for ln in lines)
    assert signed >= 5 and unsigned >= 5
