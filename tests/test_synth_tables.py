"""Tables on generated forms (data/synth/form.py): member lists, résumés, education and work history,
approval blocks. Ground truth names each column by its header line(s) and lists a row of cells per
record; table lines are headers and "other", never part of a pair, and never overlap other text."""
from __future__ import annotations

import functools
import json

from data.synth.generator import generate, list_layouts

TABLE_LAYOUTS = ["form_sections", "form_cells", "form_cells3", "form_rows", "form_banded", "form_apply",
                 "form_stacked", "form_spaced", "form_thesis"]
SEEDS = range(16)


@functools.lru_cache(maxsize=None)
def _page(layout: str, seed: int, degrade: str = "none") -> dict:
    return generate("generic_form", seed, layout, degrade, decorations=False)[1]


def _span(lines: list[dict], first: int, text: str) -> list[int]:
    """The ids of the lines that print `text` from line `first` on (a name or cell wrapped over
    consecutive lines); fails when they do not join to `text` exactly."""
    ids, joined = [first], lines[first]["text"]
    while len(joined) < len(text):
        ids.append(ids[-1] + 1)
        joined += lines[ids[-1]]["text"]
    assert joined == text, (text, [lines[i]["text"] for i in ids])
    return ids


def _table_lines(gt: dict) -> set[int]:
    out: set[int] = set()
    for t in gt["tables"]:
        for name, first in zip(t["columns"], t["column_lines"]):
            out.update(_span(gt["lines"], first, name))
        for row, firsts in zip(t["rows"], t["cell_lines"]):
            for text, first in zip(row, firsts):
                if first is not None:
                    out.update(_span(gt["lines"], first, text))
    return out


def _overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


def test_every_table_is_a_header_row_over_records_of_one_cell_per_column():
    tables = blank = single = 0
    for layout in TABLE_LAYOUTS:
        for seed in SEEDS:
            gt = _page(layout, seed)
            lines = gt["lines"]
            for t in gt["tables"]:
                tables += 1
                cols = t["columns"]
                assert len(cols) >= 3 and len(t["column_lines"]) == len(cols), t
                assert len(t["rows"]) == len(t["cell_lines"]), t
                blank += not t["rows"]                  # a blank table printed to be filled in by hand
                single += len(t["rows"]) == 1
                for name, first in zip(cols, t["column_lines"]):
                    assert first is not None and name
                    assert all(lines[i]["label"] == "header" for i in _span(lines, first, name)), (layout, name)
                for row, firsts in zip(t["rows"], t["cell_lines"]):
                    assert len(row) == len(cols) == len(firsts), (layout, seed, row)
                    assert any(row), (layout, seed, t)               # an all-blank row is no record
                    for text, first in zip(row, firsts):
                        assert (text == "") == (first is None), (layout, row)
                        if first is not None:
                            assert all(lines[i]["label"] == "other" for i in _span(lines, first, text)), (layout, text)
    assert tables >= 50 and blank >= 3 and single >= 3


def test_table_lines_are_in_no_pair_and_overlap_no_other_text():
    for layout in TABLE_LAYOUTS:
        for seed in SEEDS:
            gt = _page(layout, seed)
            inside = _table_lines(gt)
            for p in gt["pairs"]:
                assert not inside & set(p["key_lines"] + p["value_lines"]), (layout, seed, p)
            assert all(not gt["lines"][i]["linking"] for i in inside)
            others = [ln for ln in gt["lines"] if ln["id"] not in inside]
            for i in inside:
                box = gt["lines"][i]["box"]
                assert box[3] <= gt["height"] and box[2] <= gt["width"], (layout, seed)
                hit = [ln["text"] for ln in others if _overlap(box, ln["box"])]
                assert not hit, (layout, seed, gt["lines"][i]["text"], hit)


def test_tables_on_a_fair_share_of_pages_of_each_layout_and_in_many_kinds():
    for layout in TABLE_LAYOUTS:
        share = sum(bool(_page(layout, s)["tables"]) for s in SEEDS) / len(SEEDS)
        assert (share == 1.0) if layout == "form_sections" else 0.15 <= share <= 0.8, (layout, share)
    for layout in set(list_layouts("generic_form")) - set(TABLE_LAYOUTS):
        assert not any(_page(layout, s)["tables"] for s in range(4)), layout
    tables = [t for lay in TABLE_LAYOUTS for s in SEEDS for t in _page(lay, s)["tables"]]
    names = {name for t in tables for name in t["columns"]}
    # member lists, 项目组成员, résumés, education history, signature blocks, a defence committee
    assert {"本人签字", "分工", "起始年月", "学校或工作单位", "起止时间", "签字", "委员会职务"} <= names
    assert sum(t["columns"][0] == "序号" for t in tables) >= 5
    assert all([r[0] for r in t["rows"]] == [str(i + 1) for i in range(len(t["rows"]))]
               for t in tables if t["columns"][0] == "序号")
    assert {len([r for r in t["rows"] if sum(map(bool, r)) > 1]) for t in tables} >= {2, 3, 4, 5}
    blank = [cell for t in tables for r in t["rows"] for cell in r if cell == ""]
    assert len(blank) >= 30
    signed = [r[t["columns"].index("本人签字")] for t in tables if "本人签字" in t["columns"] for r in t["rows"]]
    assert "" in signed and any(signed)                     # the signature column often blank


def test_records_run_down_the_page_under_their_column_names():
    """Column names left to right; each record below the one above; each cell between its neighbours'
    column names, so a reader (or a decoder) can tell the columns by position alone, ruled or not."""
    for layout in TABLE_LAYOUTS:
        for seed in SEEDS[:6]:
            gt = _page(layout, seed)
            lines = gt["lines"]
            for t in gt["tables"]:
                heads = [lines[i]["box"] for i in t["column_lines"]]
                assert all(a[2] <= b[0] for a, b in zip(heads, heads[1:])), (layout, seed)   # left to right
                top = max(h[3] for h in heads)
                prev = top
                for firsts in t["cell_lines"]:
                    boxes = [lines[i]["box"] for i in firsts if i is not None]
                    assert min(b[1] for b in boxes) >= prev - 1, (layout, seed)            # below the row above
                    prev = max(b[3] for b in boxes)
                    for j, i in enumerate(firsts):
                        if i is None:
                            continue
                        lo = heads[j - 1][2] if j else 0
                        hi = heads[j + 1][0] if j + 1 < len(heads) else gt["width"]
                        box = lines[i]["box"]
                        assert lo - 1 <= box[0] and box[2] <= hi + 1, (layout, seed, lines[i]["text"])


def test_tables_survive_every_degradation_level_and_pages_stay_pure():
    for layout in ("form_apply", "form_cells", "form_sections"):
        seed = next(s for s in SEEDS if _page(layout, s)["tables"])
        clean = _page(layout, seed)
        for level in ("light", "photo", "heavy", "mix"):
            assert _page(layout, seed, level)["tables"] == clean["tables"], (layout, level)
        img_a, a = generate("generic_form", seed, layout, "heavy")
        img_b, b = generate("generic_form", seed, layout, "heavy")
        assert json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)
        assert img_a.tobytes() == img_b.tobytes()
