"""data/geometry.py: the page tilt, rows on a tilted page, right-of / below, reading order."""
from __future__ import annotations

import pytest

from data.document import Line, box_to_quad
from data.geometry import (
    below,
    char_box,
    cluster_rows,
    continues_right,
    gap_below,
    level_quads,
    level_reading_order,
    page_slope,
    reading_order,
    right_of,
    same_row,
    text_gap_below,
    text_height,
    under,
)


def test_item_cells_on_a_tilted_page_group_one_row_per_printed_row():
    # page tilted ~2 degrees: across 1000 px a printed row climbs 35 px, more than the 26 px row pitch,
    # so plain vertical overlap would cut rows apart; cells are given out of order
    slope, pitch = -0.035, 26.0

    def cell(key: str, x: float, row: int, dy: float = 0.0) -> tuple[str, list[float]]:
        y = 330 + row * pitch + slope * x + dy
        return key, [x, y - 9, x + 40, y + 9]

    cells = [cell("tax", 1120, 0), cell("name", 70, 0), cell("amount", 870, 0), cell("quantity", 620, 0, dy=2),
             cell("name", 72, 1), cell("tax", 1122, 1), cell("amount", 872, 1, dy=-3),
             cell("name", 74, 2), cell("tax", 1124, 2)]
    quads = [box_to_quad([0, 0, 1, 1])] + [[[0, 100], [800, 100 + 800 * slope], [800, 120 + 800 * slope], [0, 120]]] * 3
    assert page_slope(quads) == pytest.approx(slope)
    rows = cluster_rows(cells, 18.0, page_slope(quads))
    assert [[cells[i][0] for i in row] for row in rows] == [["name", "quantity", "amount", "tax"],
                                                            ["name", "amount", "tax"], ["name", "tax"]]
    assert len(cluster_rows(cells, 18.0)) != 3          # without the tilt taken out: not three rows


def test_same_key_clearly_lower_starts_a_new_row():
    # two names 0.6 line heights apart with nothing else: two rows; 0.1 apart: one row, left to right
    boxes = [("name", [0, 100, 50, 120]), ("name", [0, 112, 50, 132]), ("amount", [200, 101, 250, 121])]
    assert cluster_rows(boxes, 20.0) == [[0, 2], [1]]
    assert cluster_rows([("name", [0, 100, 50, 120]), ("name", [60, 102, 90, 122])], 20.0) == [[0, 1]]


def test_right_of_and_below_take_the_tilt_out():
    slope = 0.05                                   # the row falls 50 px over 1000 px
    key = [100, 100, 200, 120]
    far_right_same_row = [900, 100 + 0.05 * 800, 1000, 120 + 0.05 * 800]
    assert same_row(key, far_right_same_row, slope) and not same_row(key, far_right_same_row)
    assert right_of(key, [far_right_same_row], slope, max_gap=40) == 0
    assert right_of(key, [far_right_same_row], slope, max_gap=8) is None      # too far for a value
    under = [[120, 125, 300, 145], [120, 200, 300, 220], [400, 125, 500, 145]]
    assert below(key, under) == 0                   # the close, overlapping line; not the far or the offset one
    assert below(key, under[1:]) is None


def test_the_line_under_a_long_tilted_line_is_below_it_though_their_upright_boxes_overlap():
    # a 937 px line on a page tilted -0.015: its upright box is 14 px taller than its 29 px of text, so it
    # reaches more than 0.3 line heights into the box of the line under it (a photographed form's 经营范围)
    slope = -0.015
    first, second = [171, 485, 1108, 528.5], [171, 518.8, 615, 549]
    assert gap_below(first, second, slope) < -0.3 * 43.5 < text_gap_below(first, second, slope)
    assert below(first, [second], slope) == 0
    assert text_height(first, slope) == pytest.approx(43.5 - 0.015 * 937)
    assert text_height([0, 0, 100, 20], 0.0) == 20


def test_reading_order_is_rows_then_left_to_right():
    lines = [Line(t, box_to_quad(b)) for t, b in [("b", [300, 102, 400, 122]), ("a", [10, 100, 100, 120]),
                                                  ("c", [10, 140, 100, 160])]]
    assert [ln.text for ln in reading_order(lines)] == ["a", "b", "c"]
    assert reading_order([]) == []


def test_a_photo_tilted_two_degrees_is_read_row_by_row():
    """Three printed rows of a label, a name and a figure, 1,400 px across, photographed 2 degrees off:
    the upright boxes put the right end of a row nearer the next row's left end than its own, so the
    plain order interleaves rows; with the tilt turned out every row is read whole, left to right."""
    import math
    texts, quads = [], []
    for r in range(3):
        for c, x in enumerate((50, 500, 1250)):
            texts.append(f"{r}{c}")
            quads.append(box_to_quad([x, 100 + 34 * r, x + 200, 124 + 34 * r]))
    for turn in (2, -2):
        tilted = level_quads(quads, math.tan(math.radians(turn)), 1500, 400)
        lines = [Line(t, q) for t, q in zip(texts, tilted)]
        plain = [ln.text for ln in reading_order(lines)]
        assert plain != texts                                            # rows interleave as boxes stand
        slope, level, order = level_reading_order([ln.quad for ln in lines], 1500, 400)
        assert slope == pytest.approx(math.tan(math.radians(-turn)))
        assert [texts[i] for i in order] == texts                         # row by row, left to right
        assert abs(page_slope(level)) < 1e-9
    # a level page (or one tilted no more than LEVEL_MIN_SLOPE) keeps the plain order and its own quads
    lines = [Line(t, q) for t, q in zip(texts, quads)]
    slope, level, order = level_reading_order(quads, 1500, 400)
    assert (slope, level) == (0.0, quads) and [texts[i] for i in order] == [ln.text for ln in reading_order(lines)]
    assert level_reading_order([], 100, 100) == (0.0, [], [])


def test_level_quads_turns_a_tilted_page_back_level_about_its_centre():
    import math
    quads = [box_to_quad([100, 100 + 40 * i, 700, 130 + 40 * i]) for i in range(5)]
    tilted = level_quads(quads, math.tan(math.radians(-6)), 800, 400)      # turned 6 degrees
    slope = page_slope(tilted)
    assert slope == pytest.approx(math.tan(math.radians(6)))
    back = level_quads(tilted, slope, 800, 400)
    for q, b in zip(quads, back):
        assert [v for p in b for v in p] == pytest.approx([v for p in q for v in p], abs=1e-6)
    assert level_quads(quads, 0.0, 800, 400) == quads


def test_a_line_ocr_cut_in_two_continues_right_on_a_tilted_page_too():
    a, b = [100, 200, 300, 220], [310, 186, 400, 206]      # b climbs 14 px: the page's -0.05 tilt
    assert not continues_right(a, b) and continues_right(a, b, slope=-0.05)
    assert not continues_right(a, [420, 200, 500, 220])     # 6 line heights away: another cell
    assert not continues_right(a, [310, 215, 400, 235])     # three quarters of a line lower: the next row


def test_under_is_in_the_key_column_and_not_above_it():
    key = [100, 100, 200, 120]
    assert under(key, [120, 300, 180, 320]) and under(key, [150, 110, 260, 130])
    assert not under(key, [210, 300, 260, 320]) and not under(key, [120, 60, 180, 80])


def test_character_boxes_and_token_quads_share_one_printed_width():
    from models.tokenizer import char_quads
    text, box = "金额：12.50", [100, 0, 200, 20]               # 3 ems of key, 2.5 ems of figure
    x0, _, x1, _ = char_box(box, text, 3, 8)
    assert abs(x0 - (100 + 100 * 3 / 5.5)) < 0.1 and x1 == 200
    quads = char_quads(text, box_to_quad(box))
    assert abs(quads[3][0][0] - x0) < 0.1 and abs(quads[0][1][0] - quads[0][0][0] - 2 * (quads[3][1][0] - x0)) < 0.1


def test_right_of_and_below_test_every_box_as_the_scalar_definitions_do():
    """The vectorised searches answer what same_row / text_gap_below say box by box, ties included (the
    first of equally near boxes wins), on tilted pages too."""
    import random

    from data.geometry import BELOW_OVERLAP, INDENT, RIGHT_OVERLAP, height, overlaps_x

    def right_ref(key, boxes, slope, max_gap=8.0):
        h = height(key)
        row = [i for i, b in enumerate(boxes) if same_row(b, key, slope) and b[0] >= key[2] - RIGHT_OVERLAP * h]
        if not row:
            return None
        i = min(row, key=lambda i: boxes[i][0])
        return i if boxes[i][0] - key[2] <= max_gap * h else None

    def below_ref(key, boxes, slope, max_gap=1.0):
        best, best_gap = None, float("inf")
        for i, b in enumerate(boxes):
            h = max(height(key), height(b))
            gap = text_gap_below(key, b, slope)
            if gap >= -BELOW_OVERLAP * h and overlaps_x(key, b) and b[0] >= key[0] - INDENT * h and gap < best_gap:
                best, best_gap = i, gap
        if best is None or best_gap > max_gap * max(height(key), height(boxes[best])):
            return None
        return best

    rng = random.Random(7)
    found = 0
    for _ in range(300):
        slope = rng.choice([0.0, 0.02, -0.03])
        boxes = []
        for _ in range(rng.randint(0, 30)):
            x, y = rng.randrange(0, 400, 10), rng.randrange(0, 400, 10)      # a grid: ties happen
            boxes.append([float(x), float(y), float(x + rng.randrange(10, 120, 10)), float(y + rng.choice([20, 24]))])
        key = rng.choice(boxes) if boxes and rng.random() < 0.5 else [100.0, 100.0, 160.0, 120.0]
        assert right_of(key, boxes, slope) == right_ref(key, boxes, slope)
        assert below(key, boxes, slope) == below_ref(key, boxes, slope)
        found += right_of(key, boxes, slope) is not None
    assert found > 30          # the comparison saw real answers, not only "none"
