"""app/draw.py: line quads, field boxes in their key's colour, a legend, CJK text."""
from __future__ import annotations

import numpy as np

from app.draw import (
    LINE_COLOUR,
    PALETTE,
    TABLE_COLOUR,
    draw_document,
    draw_document_page,
    field_colour,
    field_colours,
)
from data.document import Cell, Document, Field, Line, Page, Pair, Table, box_to_quad


def _page() -> tuple[np.ndarray, Page]:
    image = np.full((400, 600, 3), 255, np.uint8)
    page = Page(index=0, width=600, height=400,
                lines=[Line(text="发票号码：12345678", quad=box_to_quad([50, 50, 300, 80]))])
    return image, page


def _bgr(rgb):
    return tuple(int(v) for v in rgb[::-1])


def test_field_colour_is_stable_and_from_the_palette():
    assert field_colour("invoice_number") == field_colour("invoice_number")
    assert field_colour("invoice_number") in PALETTE
    assert len({field_colour(k) for k in ("a", "b", "c", "d", "e", "f", "g", "h")}) > 3


def test_fields_drawn_together_get_distinct_colours():
    keys = [f"k{i}" for i in range(len(PALETTE))]
    assert len(set(field_colours(keys).values())) == len(PALETTE)
    assert LINE_COLOUR not in PALETTE


def test_lines_only_keeps_size_and_draws_grey_quads():
    image, page = _page()
    out = draw_document_page(image, page)
    assert out.shape == image.shape and out.dtype == np.uint8
    assert tuple(out[50, 150]) == _bgr(LINE_COLOUR)            # top edge of the quad
    assert tuple(out[200, 400]) == (255, 255, 255)             # untouched paper
    assert image.min() == 255                                  # input not modified


def test_fields_are_boxed_in_their_colour_with_a_legend():
    image, page = _page()
    other = next(k for k in ("total", "amount", "date", "tax") if field_colour(k) != field_colour("invoice_number"))
    fields = {"invoice_number": Field(key="invoice_number", value="12345678", box=[180, 50, 300, 80],
                                      label="发票号码"),
              "other_page": Field(key=other, value="1", box=[10, 300, 60, 320], page=1)}
    out = draw_document_page(image, page, fields)
    assert out.shape[0] == image.shape[0] and out.shape[1] > image.shape[1]      # legend strip on the right
    colour = _bgr(field_colours(["invoice_number"])["invoice_number"])     # the first field on the page
    ys, xs = np.nonzero(np.all(out[:, :600] == colour, axis=2))
    assert len(xs) > 100 and xs.min() < 180 and xs.max() > 300                  # box around the value
    legend = out[:, 600:]
    assert np.all(legend == colour, axis=2).sum() > 50                           # colour chip
    assert (legend.min(axis=2) < 100).sum() > 50                                 # label text drawn (CJK font)
    assert not np.all(out[:, :600] == _bgr(PALETTE[1]), axis=2).any()   # other page's field not drawn


def test_show_text_writes_chinese_and_pairs_are_linked():
    image, page = _page()
    pair = Pair(key="名称", value="北京AI科技", key_box=[50, 150, 120, 180], value_box=[200, 150, 400, 180])
    out = draw_document_page(image, page, pairs=[pair], show_text=True, legend=False)
    assert out.shape == image.shape
    assert (out[20:50, 50:300].min(axis=2) < 150).sum() > 50                     # OCR text above the quad
    assert tuple(out[165, 160]) != (255, 255, 255)                               # key-to-value link


def test_draw_document_picks_the_page():
    image, page = _page()
    doc = Document(pages=[page], fields={"x": Field(key="x", value="1", box=[10, 10, 40, 40])})
    assert draw_document(image, doc, page=0).shape[1] > 600


def _table(page: int = 0) -> Table:
    """Two columns over one record with a blank second cell, in the page's lower half."""
    return Table(columns=["姓名", "电话"], column_boxes=[[100, 250, 250, 280], [250, 250, 400, 280]],
                 rows=[[Cell("张三", [100, 280, 250, 310]), Cell("", [250, 280, 400, 310])]],
                 box=[100, 250, 400, 310], page=page)


def test_tables_are_drawn_on_their_page_only():
    """The table's box, column headings and non-blank cells in the table colour, "表格 n" above its
    top-left; nothing of it on another page or without tables."""
    image, page = _page()
    green = _bgr(TABLE_COLOUR)
    assert TABLE_COLOUR not in PALETTE
    out = draw_document(image, Document(pages=[page], tables=[_table(page=1), _table()]), page=0, legend=False)
    ys, xs = np.nonzero(np.all(out == green, axis=2))
    assert len(xs) > 500 and xs.min() >= 90 and xs.max() <= 410 and ys.max() <= 320
    assert np.all(out[265, 245:256] == green, axis=1).any()              # the line between the headings
    assert np.all(out[295, 245:256] == green, axis=1).any()              # the edge of the cell 张三
    assert not np.all(out[285:305, 260:390] == green, axis=2).any()      # the blank cell has no box of its own
    above = out[200:248, 90:200].astype(int)                             # BGR; the text is anti-aliased
    greenish = (above[:, :, 1] - above[:, :, 0] > 60) & (above[:, :, 1] - above[:, :, 2] > 60)
    assert greenish.sum() > 50                                           # "表格 2" above the table's top-left
    for other in (Document(pages=[page], tables=[_table(page=1)]), Document(pages=[page])):
        assert not np.all(draw_document(image, other, page=0, legend=False) == green, axis=2).any()
