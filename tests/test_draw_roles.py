"""A generic form's line roles made visible (issue 36, item 2): app/draw.py outlines each line with a role in
its role's colour, under every box drawn today, and names the roles present in the legend; the UI says what
the colours mean and can switch them off. A page without roles (an invoice) looks exactly as before."""
from __future__ import annotations

import functools
import io
from dataclasses import replace

import numpy as np
from PIL import Image

import app.draw as draw
from app.draw import KEY_COLOUR, LINE_COLOUR, ROLE_COLOURS, draw_document_page, role_legend
from app.ui.view import legend_html, page_overlay
from data.document import Document, Line, Page, Pair, box_to_quad
from data.synth.generator import generate
from models.extraction.form_line_roles import ROLES
from models.extractor import get_extractor
from reading.route import Analysis
from tests.ui_harness import start_ui


def _bgr(rgb: tuple[int, int, int]) -> tuple[int, ...]:
    return tuple(rgb[::-1])


def _gt_page(gt: dict) -> Page:
    return Page(index=0, width=gt["width"], height=gt["height"],
                lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in gt["lines"]])


@functools.lru_cache(maxsize=None)
def _extracted(doc_type: str, seed: int, layout: str | None = None) -> tuple[np.ndarray, Document]:
    """A generated page (BGR) and the Document its ground-truth lines extract to (a form read as a form)."""
    image, gt = generate(doc_type, seed, layout, decorations=False)
    doc = get_extractor().extract(Document(source=f"{doc_type}.png", pages=[_gt_page(gt)]),
                                  doc_type="generic_form" if doc_type == "generic_form" else None)
    return np.asarray(image.convert("RGB"))[:, :, ::-1].copy(), doc


def _role_pixels(out: np.ndarray, image: np.ndarray) -> np.ndarray:
    """Where the overlay `out` (BGR) of `image` drew a role colour on the page (not where the page's own
    anti-aliased ink happens to have the hint's grey)."""
    page = out[:image.shape[0], :image.shape[1]]
    drawn = np.any(page != image, axis=2)
    return drawn & np.any([np.all(page == _bgr(c), axis=2) for c in set(ROLE_COLOURS.values())], axis=0)


def test_every_role_but_text_has_its_own_colour_apart_from_every_other_colour_drawn():
    assert set(ROLE_COLOURS) == set(ROLES) - {"text"}
    others = set(draw.PALETTE) | {draw.LINE_COLOUR, draw.KEY_COLOUR, draw.VALUE_COLOUR, draw.ITEM_COLOUR,
                                  draw.TABLE_COLOUR, draw.HIGHLIGHT_COLOUR}
    assert not set(ROLE_COLOURS.values()) & others
    # only header and heading share one (a table's column heading / a title): every other role has its own
    assert len(set(ROLE_COLOURS.values())) == len(ROLE_COLOURS) - 1
    assert role_legend(["heading", "label", None, "text", "header"]) == {
        "label": ROLE_COLOURS["label"], "header/heading": ROLE_COLOURS["header"]}
    assert role_legend([None, None]) == {}


def test_a_generated_forms_overlay_outlines_its_label_lines_and_its_legend_names_the_roles_present():
    image, doc = _extracted("generic_form", 5, "form_rows")
    page = doc.pages[0]
    present = {ln.role for ln in page.lines}
    assert {"label", "heading"} <= present
    out = page_overlay(image, page, doc, legend=True)
    h, w = image.shape[:2]
    assert out.shape[0] == h and out.shape[1] > w                      # the legend strip on the right
    blue = np.all(out[:, :w] == _bgr(ROLE_COLOURS["label"]), axis=2)
    for line in (ln for ln in page.lines if ln.role == "label"):
        x0, y0, x1, y1 = (round(v) for v in line.box)
        assert blue[max(0, y0 - 3):y1 + 4, max(0, x0 - 3):x1 + 4].sum() > 10, line.text
    # the legend strip: a swatch of each coloured role present, of no role absent, and what it says
    strip = out[:, w:]
    for role, colour in ROLE_COLOURS.items():
        has_swatch = bool(np.all(strip == _bgr(colour), axis=2).sum() > 50)
        shares = any(r in present for r, c in ROLE_COLOURS.items() if c == colour)
        assert has_swatch == shares, role
    words = legend_html(doc, 0)
    assert "行 line: label" in words
    assert all(f"行 line: {name}" in words for name in role_legend([ln.role for ln in page.lines]))
    assert "行 line" not in legend_html(doc, 0, roles=False)
    # switched off, the page is drawn as one without roles
    bare = replace(doc, pages=[replace(page, lines=[replace(ln, role=None) for ln in page.lines])])
    assert np.array_equal(page_overlay(image, page, doc, legend=True, roles=False),
                          page_overlay(image, bare.pages[0], bare, legend=True))
    assert _role_pixels(out, image).sum() > 1000
    assert not _role_pixels(page_overlay(image, page, doc, roles=False), image).any()


def test_an_invoice_page_looks_as_before_with_no_role_colour_anywhere():
    image, doc = _extracted("vat_invoice", 3)
    page = doc.pages[0]
    assert doc.doc_type == "vat_invoice" and all(ln.role is None for ln in page.lines)
    out = page_overlay(image, page, doc, legend=True)
    assert not _role_pixels(out, image).any()
    assert np.array_equal(out, page_overlay(image, page, doc, legend=True, roles=False))
    assert "行 line" not in legend_html(doc, 0)


def test_role_outlines_are_drawn_under_the_pairs_boxes():
    """A key box that lies on its label line's quad is drawn over it as today; the line's role outline runs
    just outside the quad, so it is still seen beside the key's box."""
    image = np.full((200, 300, 3), 255, np.uint8)
    page = Page(index=0, width=300, height=200, lines=[
        Line("姓名", box_to_quad([20, 20, 80, 40]), role="label"),
        Line("张三", box_to_quad([100, 20, 200, 40]), role="value"),
        Line("一、基本信息", box_to_quad([20, 80, 200, 100]), role="heading")])
    pairs = [Pair(key="姓名", value="张三", key_box=[20, 20, 80, 40], value_box=[100, 20, 200, 40], score=0.9)]
    out = draw_document_page(image, page, pairs=pairs, legend=False)
    assert out[20, 50].tolist() == list(_bgr(KEY_COLOUR))                       # the key box, as today
    assert out[19, 50].tolist() == list(_bgr(ROLE_COLOURS["label"]))            # its line's role just outside
    assert out[79, 100].tolist() == list(_bgr(ROLE_COLOURS["heading"]))         # a line in no pair: its role
    grey = draw_document_page(image, page, pairs=pairs, legend=False, roles=False)
    assert grey[80, 100].tolist() == list(_bgr(LINE_COLOUR)) and grey[79, 100].tolist() == [255, 255, 255]
    assert grey[20, 50].tolist() == list(_bgr(KEY_COLOUR)) and grey[19, 50].tolist() == [255, 255, 255]


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (300, 200), "white").save(buf, format="PNG")
    return buf.getvalue()


def _form_with_roles(filename: str) -> Document:
    lines = [Line("员工入职登记表", box_to_quad([60, 10, 240, 30]), role="heading"),
             Line("姓名：", box_to_quad([20, 50, 80, 70]), role="label"),
             Line("张三", box_to_quad([100, 50, 200, 70]), role="value")]
    return Document(source=filename, doc_type="generic_form", doc_type_score=0.9,
                    pages=[Page(index=0, width=300, height=200, lines=lines)],
                    pairs=[Pair(key="姓名", value="张三", key_box=[20, 50, 80, 70], value_box=[100, 50, 200, 70],
                                score=0.9)])


def test_the_ui_explains_the_role_colours_of_a_form_and_can_switch_them_off(monkeypatch, tmp_path):
    def analyse(data, filename, *a, **kw):
        doc = _form_with_roles(filename)
        if "invoice" in filename:
            doc.pages[0].lines = [replace(ln, role=None) for ln in doc.pages[0].lines]
        return Analysis(doc, [np.full((200, 300, 3), 255, np.uint8)])
    at = start_ui(monkeypatch, tmp_path, analyse)
    at.file_uploader[0].set_value([("form.png", _png(), "image/png")]).run()
    assert not at.exception and not at.error
    legend = "\n".join(str(m.value) for m in at.markdown)
    assert "行 line: label" in legend and "行 line: value" in legend and "行 line: heading" in legend
    toggle = next(t for t in at.toggle if t.label == "行角色 Line roles")
    assert toggle.value is True
    toggle.set_value(False).run()
    assert not at.exception and "行 line:" not in "\n".join(str(m.value) for m in at.markdown)

    plain = start_ui(monkeypatch, tmp_path, analyse)
    plain.file_uploader[0].set_value([("invoice.png", _png(), "image/png")]).run()
    assert not plain.exception and not [t for t in plain.toggle if t.label == "行角色 Line roles"]
    assert "行 line:" not in "\n".join(str(m.value) for m in plain.markdown)
