"""Ruled lines of a page (models/ocr/rulings.py): a form's cell borders found in the image, text blanked first."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from data.document import Document, Line, Page, box_to_quad
from models.ocr.rulings import find_rulings, is_vertical


def _grid(tilt: float = 0.0) -> tuple[np.ndarray, list, list[int], list[int]]:
    """A white page with a 3-row, 3-column ruled grid, a stroke-heavy "text" block in each cell (long
    horizontal and vertical strokes, as 一 and 丨 of large characters are) and its text quads."""
    img = np.full((500, 800, 3), 255, np.uint8)
    xs, ys = [100, 260, 520, 700], [100, 160, 220, 280]
    for x in xs:
        cv2.line(img, (x, ys[0]), (x, ys[-1]), (0, 0, 0), 2)
    for y in ys:
        cv2.line(img, (xs[0], y), (xs[-1], y), (0, 0, 0), 2)
    quads = []
    for r in range(3):
        for c in range(3):
            x0, y0 = xs[c] + 15, ys[r] + 18
            box = [x0, y0, x0 + 90, y0 + 26]
            cv2.line(img, (x0 + 2, y0 + 13), (x0 + 88, y0 + 13), (0, 0, 0), 2)     # a long 一
            cv2.line(img, (x0 + 40, y0 + 1), (x0 + 40, y0 + 25), (0, 0, 0), 2)     # a tall 丨
            quads.append(box_to_quad(box))
    if tilt:
        m = cv2.getRotationMatrix2D((400, 250), tilt, 1.0)
        img = cv2.warpAffine(img, m, (800, 500), borderValue=(255, 255, 255))
        quads = [cv2.transform(np.asarray([q], np.float32), m)[0].tolist() for q in quads]
    return img, quads, xs, ys


def test_the_grid_lines_are_found_and_no_stroke_of_the_text():
    img, quads, xs, ys = _grid()
    rules = find_rulings(img, quads)
    vertical = sorted(r for r in rules if is_vertical(r))
    across = sorted((r for r in rules if not is_vertical(r)), key=lambda r: r[1])
    assert len(vertical) == len(xs) and len(across) == len(ys)
    for r, x in zip(vertical, xs):
        assert abs(r[0] - x) <= 2 and abs(r[2] - x) <= 2 and r[1] <= ys[0] + 3 and r[3] >= ys[-1] - 3
    for r, y in zip(across, ys):
        assert abs(r[1] - y) <= 2 and r[0] <= xs[0] + 3 and r[2] >= xs[-1] - 3
    # the same strokes with the text left in place: the tall strokes of the text pass for short borders
    assert len(find_rulings(img, [])) > len(rules)


def test_a_tilted_grid_gives_tilted_segments():
    img, quads, xs, ys = _grid(tilt=2.0)
    rules = find_rulings(img, quads)
    vertical = [r for r in rules if is_vertical(r)]
    across = [r for r in rules if not is_vertical(r)]
    assert len(vertical) == len(xs) and len(across) == len(ys)
    slope = np.median([(r[3] - r[1]) / (r[2] - r[0]) for r in across])
    assert abs(slope - (-np.tan(np.radians(2.0)))) < 0.01          # the fitted lines follow the tilt


def test_a_page_of_text_only_has_no_ruled_lines():
    from data.synth.generator import generate
    image, gt = generate("generic_form", 5, "form_cells", "none", decorations=False)
    quads = [ln.get("quad") or box_to_quad(ln["box"]) for ln in gt["lines"]]
    assert find_rulings(cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR), quads) == []
    image, gt = generate("generic_form", 5, "form_cells", "none")
    assert sum(map(is_vertical, find_rulings(cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR), quads))) >= 3


def test_ruled_lines_travel_with_the_page_json():
    page = Page(index=0, width=100, height=80, lines=[Line(text="姓名", quad=box_to_quad([1, 2, 30, 12]))],
                rules=[[10.0, 5.0, 10.5, 70.0]])
    back = Document.from_json(Document(pages=[page]).to_json()).pages[0]
    assert back.rules == [[10.0, 5.0, 10.5, 70.0]]
    assert Document.from_dict({"pages": [{"index": 0, "width": 1, "height": 1}]}).pages[0].rules == []


@pytest.mark.heavy
def test_the_ocr_engine_gives_a_ruled_form_its_lines():
    from data.synth.generator import generate
    from models.ocr import get_engine
    image, _ = generate("generic_form", 7, "form_cells", "light")
    page = get_engine().read(cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR))
    assert sum(map(is_vertical, page.rules)) >= 3 and sum(not is_vertical(r) for r in page.rules) >= 3
    for r in page.rules:                                    # in page pixels
        assert -5 <= min(r[0], r[2]) and max(r[0], r[2]) <= page.width + 5


@pytest.mark.parametrize("across", [True, False])
def test_closing_only_the_rows_that_hold_a_run_is_closing_the_whole_page(across):
    """_close_lines closes only the rows (columns) holding a run: the same pixels as cv2's closing of the
    whole page, gaps, page edges and empty pages included."""
    from models.ocr.rulings import _close_lines
    rng = np.random.default_rng(7)
    for trial in range(6):
        runs = np.zeros((int(rng.integers(40, 300)), int(rng.integers(40, 300))), np.uint8)
        for _ in range(trial * 4):      # trial 0: an empty page
            y, x, n = int(rng.integers(0, runs.shape[0])), int(rng.integers(0, runs.shape[1])), int(rng.integers(2, 60))
            if across:
                runs[y:y + 3, x:x + n] = 255
                runs[y:y + 3, x + n + int(rng.integers(1, 20)):x + 2 * n] = 255     # a gap, closed or not
            else:
                runs[y:y + n, x:x + 3] = 255
                runs[y + n + int(rng.integers(1, 20)):y + 2 * n, x:x + 3] = 255
        kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (25, 1) if across else (1, 25))
        whole = cv2.morphologyEx(runs, cv2.MORPH_CLOSE, kernel)
        _close_lines(runs, 25, across)
        assert np.array_equal(runs, whole)
