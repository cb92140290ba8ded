"""Generated forms written as born-digital PDFs with their ruled lines as vector strokes
(data.synth.generator.generate_ruled -> data.born_pdf.write_pdf): the route reads the rulings from the file's
strokes (data.pdf_paths -> models/ocr/rulings.py `rulings_from_segments`), not from a rendered picture."""
from __future__ import annotations

import numpy as np

import data.io
from data.synth.generator import generate, generate_ruled
from models.ocr.rulings import ACROSS_MIN, DOWN_MIN, is_vertical
from reading.route import read_file_pages

FORM = ("generic_form", 3, "form_cells")       # a ruled grid of label cells: boxes and rules


def _pieces(strokes) -> list[tuple[bool, float, float, float]]:
    """(down, position, start, end) of each straight piece of the strokes (a box's four sides)."""
    out = []
    for st in strokes:
        pts = list(st.points) + ([st.points[0]] if st.closed else [])
        for (ax, ay), (bx, by) in zip(pts, pts[1:]):
            down = ax == bx
            out.append((down, ax if down else ay, *sorted((ay, by) if down else (ax, bx))))
    return out


def test_the_ruled_strokes_come_beside_the_ground_truth_which_is_unchanged():
    doc_type, seed, layout = FORM
    image, gt, strokes = generate_ruled(doc_type, seed, layout)
    plain_image, plain_gt = generate(doc_type, seed, layout)
    assert gt == plain_gt and np.array_equal(np.asarray(image), np.asarray(plain_image)), "same page, same JSON"
    assert len(strokes) >= 10 and any(st.closed for st in strokes), "the grid's cell boxes are drawn"
    for down, _, lo, hi in _pieces(strokes):
        assert 0 <= lo < hi <= (gt["height"] if down else gt["width"]), "straight, on the page"
    # each piece lies on ink the generator drew (the stroke's centre row or column is dark there)
    grey = np.asarray(image.convert("L"))
    for down, pos, lo, hi in _pieces(strokes):
        line = grey[int(lo):int(hi), int(pos)] if down else grey[int(pos), int(lo):int(hi)]
        assert (line < 200).mean() > 0.9, (down, pos, lo, hi)


def test_a_form_with_drawn_rules_has_its_rulings_read_from_the_file_not_a_picture(tmp_path, monkeypatch):
    from data.born_pdf import write_pdf

    def no_picture(*args, **kwargs):
        raise AssertionError("the page was rendered")

    monkeypatch.setattr(data.io, "_render_pdf_page", no_picture)
    doc_type, seed, layout = FORM
    _, gt, strokes = generate_ruled(doc_type, seed, layout)
    ruled, plain = tmp_path / "ruled.pdf", tmp_path / "plain.pdf"
    ruled.write_bytes(write_pdf(gt, strokes=strokes))
    plain.write_bytes(write_pdf(gt))
    [page] = read_file_pages(str(ruled), reader="auto")
    assert page.reader == "text_layer" and page.rules, "rulings from the strokes, no page drawn"
    assert read_file_pages(str(plain), reader="auto")[0].rules == [], "a text-only page has none: they are the strokes"

    th = float(np.median([ln.box[3] - ln.box[1] for ln in page.lines]))
    tol = 2.0        # px: the page as rendered may be 1 px larger than the generated one (pdfium rounds up)
    pieces = _pieces(strokes)
    for r in page.rules:          # every ruling lies along drawn strokes ...
        down = is_vertical(r)
        pos, lo, hi = (r[0], r[1], r[3]) if down else (r[1], r[0], r[2])
        along = [p for p in pieces if p[0] == down and abs(p[1] - pos) <= tol]
        assert along and min(p[2] for p in along) <= lo + tol and max(p[3] for p in along) >= hi - tol, r
    for down, pos, lo, hi in pieces:     # ... and every drawn piece long enough to be one is in a ruling
        if hi - lo < (DOWN_MIN if down else ACROSS_MIN) * th + tol:
            continue
        assert any(is_vertical(r) == down
                   and abs((r[0] if down else r[1]) - pos) <= tol
                   and min(r[1::2] if down else r[0::2]) <= lo + tol
                   and max(r[1::2] if down else r[0::2]) >= hi - tol for r in page.rules), (down, pos, lo, hi)
    assert sum(is_vertical(r) for r in page.rules) >= 3, "the grid's walls between label and value cells"
