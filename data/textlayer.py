"""Born-digital pages: lines read from the characters a PDF holds, instead of OCR of its rendered image.

A PDF written by a program (an e-invoice, an exported form) carries every character with its Unicode
value and its box; OCR of the rendered page can only get some of them back, and takes seconds where
this takes milliseconds. Such a page is rendered only when someone looks at it (the UI, --draw): its
text comes from the file and its ruled lines from the strokes the file draws (data.pdf_paths).

A text layer is used only when it can be trusted (`layer_problem`):
- its characters map to real Unicode: a CID font without a ToUnicode map gives codes pdfium cannot
  map (HasUnicodeMapError), private-use code points (U+E000-F8FF) or U+FFFD; more than `BAD_SHARE`
  of such characters and the page is read by OCR;
- its text is visible: a scanner's OCR layer is invisible text (render mode 3) or text drawn under the
  page-sized scan, and the scan, not that guess, is the document; such a page is read by OCR;
- it has text at all (a PDF of scans has none).

Characters become lines as OCR's detector would cut them (`group_lines`): glyphs on one printed row
(vertical centres within `READ_ROW` of the row's height) are one line until a blank wider than
`LINE_GAP` x the glyph height splits it, so a label and a value printed apart come out as two lines, as
they do from OCR. Each character is normalised first (`normalise_char`): NFKC for compatibility code
points that fonts map glyphs to (Kangxi radicals such as ⼦ U+2F26 -> 子, CJK compatibility ideographs),
full-width ASCII forms (：（）１) kept as printed, which is what OCR reads and the extractor learnt on.

`SourcePage` is what a page source hands the pipeline: the rendered page image and, when the file's own
text was read, the `Page` holding its lines (`Page.reader` says how: "text_layer", "ofd", "embedded_xml");
`page` None means the image is to be OCR'd. `SourcePage.embedded` holds what the file states about the
page's fields (data.embedded: OFD tags and custom data, an attached or standalone XML invoice), met with
the extraction by the pipeline. `PIAOJU_READER=ocr` (or `reader="ocr"`) forces OCR for every page, so
the old route can still be measured.
"""
from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from data.document import Line, Page, box_to_quad
from data.source_page import SourcePage  # noqa: F401 - the page sources import it from here too

READERS = ("auto", "ocr")
READER_ENV = "PIAOJU_READER"
BAD_SHARE = 0.02     # a page whose characters are more than this share unmappable is read by OCR
READ_ROW = 0.5       # glyphs share a row when their centres are within this x the smaller height (geometry.READ_ROW)
LINE_GAP = 0.6      # a blank wider than this x the smaller glyph height splits a row into two lines: PP-OCR's
                     # detector joins a line's characters (0-0.3 em apart) and cuts at wider blanks (the
                     # born-digital invoice in tests/data: 0.75 em between a vertical label and a field, cut)
LOOSE_MAX = 2.0      # a loose character box more than this x the font's em is pdfium's scaling bug (_char_box)
DESCENT = 0.15       # share of the em below the baseline, for boxes built from a character's origin
SPACE_GAP = 0.25     # between two half-width glyphs (digits, Latin) a blank this x the height reads as a space
_KEEP_WIDTH = set(range(0xFF01, 0xFF5F)) | {0x3000, 0xFFE5}   # full-width forms: printed so, kept so


@dataclass
class Glyph:
    """One character and its box [x0, y0, x1, y1] in page-image pixels."""
    text: str
    box: list[float]

    @property
    def height(self) -> float:
        return max(self.box[3] - self.box[1], 1.0)

    @property
    def centre(self) -> float:
        return (self.box[1] + self.box[3]) / 2


def reader_setting(reader: str | None = None) -> str:
    """"auto" (text from the file where it can be trusted, OCR elsewhere) or "ocr" (every page OCR'd):
    `reader` if given, else the PIAOJU_READER environment variable, else "auto"."""
    value = (reader or os.environ.get(READER_ENV) or "auto").strip().lower()
    if value not in READERS:
        raise ValueError(f"reader {value!r} is not one of {', '.join(READERS)} (set {READER_ENV}=auto or ocr)")
    return value


def normalise_char(ch: str) -> str:
    """NFKC of one character, except full-width ASCII forms and the ideographic space, kept as printed."""
    if len(ch) == 1 and ord(ch) in _KEEP_WIDTH:
        return ch
    return unicodedata.normalize("NFKC", ch)


def is_bad_code(code: int) -> bool:
    """A code point a character with no real Unicode mapping comes out as: NUL and other controls,
    private use (U+E000-F8FF, planes 15-16) or the replacement character."""
    return (code < 0x20 and chr(code) not in "\t\r\n") or 0xE000 <= code <= 0xF8FF or code == 0xFFFD \
        or code >= 0xF0000


def _half_width(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) not in ("W", "F")


def group_lines(glyphs: Sequence[Glyph], gap: float = LINE_GAP) -> list[Line]:
    """Glyphs (any order) -> lines in reading order, as OCR's detector would cut them (module docstring).
    A line's text gets a space between two glyphs where a blank glyph (a typed space) stands between
    them, or two half-width glyphs stand `SPACE_GAP` apart or more (10905 47488), but never between two
    Chinese characters (深 圳 蛋 糕 printed letter-spaced reads 深圳蛋糕, as OCR reads it)."""
    from data.geometry import reading_order
    ink = sorted((g for g in glyphs if g.text.strip()), key=lambda g: (g.centre, g.box[0]))
    blanks = [((g.box[0] + g.box[2]) / 2, g.centre) for g in glyphs if not g.text.strip()]
    rows: list[list[Glyph]] = []
    centres: list[float] = []
    heights: list[float] = []
    for g in ink:
        best = None
        for r in range(len(rows) - 1, max(-1, len(rows) - 4), -1):   # the last few rows: centres ascend
            if abs(g.centre - centres[r]) <= READ_ROW * min(g.height, heights[r]):
                best = r
                break
        if best is None:
            rows.append([g])
            centres.append(g.centre)
            heights.append(g.height)
        else:
            rows[best].append(g)
            n = len(rows[best])
            centres[best] += (g.centre - centres[best]) / n
            heights[best] += (g.height - heights[best]) / n
    lines: list[Line] = []
    for row in rows:
        row.sort(key=lambda g: g.box[0])
        run: list[Glyph] = [row[0]]
        for g in row[1:]:
            prev = run[-1]
            if g.box[0] - prev.box[2] > gap * min(prev.height, g.height):
                lines.append(_line(run, blanks))
                run = [g]
            else:
                run.append(g)
        lines.append(_line(run, blanks))
    return reading_order(lines)


def _line(run: list[Glyph], blanks: list[tuple[float, float]]) -> Line:
    parts = [run[0].text]
    for prev, g in zip(run, run[1:]):
        half = _half_width(prev.text[-1]), _half_width(g.text[0])
        h = max(prev.height, g.height)
        typed = any(prev.box[2] - 1 <= x <= g.box[0] + 1 and abs(y - prev.centre) <= h / 2 for x, y in blanks)
        if (any(half) and typed) or (all(half) and g.box[0] - prev.box[2] >= SPACE_GAP * h):
            parts.append(" ")
        parts.append(g.text)
    box = [min(g.box[0] for g in run), min(g.box[1] for g in run),
           max(g.box[2] for g in run), max(g.box[3] for g in run)]
    return Line(text="".join(parts), quad=box_to_quad([round(v, 1) for v in box]), score=1.0)


def layer_problem(codes: Sequence[int], map_errors: int, visible: int, hidden: int) -> str | None:
    """Why a page's text layer cannot be trusted (a sentence), or None when it can. `codes`: the code
    points of its non-blank characters; `map_errors`: how many of them pdfium could not map to Unicode;
    `visible` / `hidden`: its text objects drawn visibly / invisibly or under a page-sized image."""
    if not codes:
        return "the page has no text layer"
    if hidden and hidden >= visible:
        return "its text is invisible or hidden under a page-sized image (a scan with an OCR layer)"
    bad = max(map_errors, sum(is_bad_code(c) for c in codes))
    if bad > BAD_SHARE * len(codes):
        return (f"{bad} of its {len(codes)} characters have no Unicode mapping (a font without a ToUnicode "
                "map, private-use or replacement characters)")
    return None


# --- PDF ------------------------------------------------------------------------------------------------

def _page_to_pixels(raw_page: Any, width: int, height: int) -> tuple[float, float, float, float, float, float]:
    """The affine map (a, b, c, d, e, f): px = a*x + b*y + e, py = c*x + d*y + f from PDF user space to
    the pixels of the page rendered `width` x `height` (y flipped, the page's /Rotate and crop box
    applied: pdfium's own mapping, sampled on a 64x finer device since it returns whole pixels)."""
    import ctypes

    import pypdfium2.raw as pdfium_c
    k = 64

    def dev(x: float, y: float) -> tuple[float, float]:
        dx, dy = ctypes.c_int(), ctypes.c_int()
        pdfium_c.FPDF_PageToDevice(raw_page, 0, 0, width * k, height * k, 0, x, y, dx, dy)
        return dx.value / k, dy.value / k

    (ox, oy), (xx, xy), (yx, yy) = dev(0.0, 0.0), dev(1000.0, 0.0), dev(0.0, 1000.0)
    return (xx - ox) / 1000, (yx - ox) / 1000, (xy - oy) / 1000, (yy - oy) / 1000, ox, oy


def _char_box(textpage: Any, i: int) -> tuple[float, float, float, float]:
    """Character `i`'s box (left, bottom, right, top) in PDF user space, as tall as the font (ascent to
    descent), so that all glyphs of a line are equally tall as OCR's line boxes are, and a hyphen or a
    dot sits on its line rather than forming one of its own. pdfium's loose box is that, except that it
    ignores a text matrix scaling the font (a 180-pt font drawn at 9 pt gets a box 20 times too big):
    then the box is built from the character's origin and its em (font size x the matrix's scale)."""
    import ctypes

    import pypdfium2.raw as pdfium_c
    raw = textpage.raw
    m = pdfium_c.FS_MATRIX()
    pdfium_c.FPDFText_GetMatrix(raw, i, m)
    em = pdfium_c.FPDFText_GetFontSize(raw, i) * abs(m.a * m.d - m.b * m.c) ** 0.5
    tight = textpage.get_charbox(i)
    loose = textpage.get_charbox(i, loose=True)
    if loose[3] - loose[1] <= LOOSE_MAX * em and loose[2] - loose[0] <= max(LOOSE_MAX * em, tight[2] - tight[0] + 1):
        return loose
    if abs(m.b) > 1e-6 or abs(m.c) > 1e-6 or em <= 0:     # rotated or sheared text: the ink box
        return tight
    x, y = ctypes.c_double(), ctypes.c_double()
    pdfium_c.FPDFText_GetCharOrigin(raw, i, x, y)
    return (min(tight[0], x.value), y.value - DESCENT * em, tight[2], y.value + (1 - DESCENT) * em)


def read_text_layer(page: Any, width: int, height: int, index: int, drawing: Any) -> tuple[Page | None, str | None]:
    """The lines of an open pypdfium2 page from its text layer, in the pixels of its image rendered
    `width` x `height`, or (None, why) when the layer cannot be trusted (`layer_problem`); `drawing` is
    the page's data.pdf_paths.Drawing (how many text objects it draws visibly)."""
    import pypdfium2.raw as pdfium_c
    visible, hidden = drawing.visible, drawing.hidden
    textpage = page.get_textpage()
    try:
        a, b, c, d, e, f = _page_to_pixels(page.raw, width, height)
        glyphs: list[Glyph] = []
        codes: list[int] = []
        map_errors = 0
        raw_tp = textpage.raw
        for i in range(textpage.count_chars()):
            if pdfium_c.FPDFText_IsGenerated(raw_tp, i) == 1:
                continue
            code = pdfium_c.FPDFText_GetUnicode(raw_tp, i)
            ch = chr(code) if code < 0x110000 else "\ufffd"
            if not ch.strip():      # a typed space: kept as a blank glyph (group_lines)
                left, bottom, right, top = textpage.get_charbox(i)
                xs = (a * left + b * bottom + e, a * right + b * top + e)
                ys = (c * left + d * bottom + f, c * right + d * top + f)
                glyphs.append(Glyph(" ", [min(xs), min(ys), max(xs), max(ys)]))
                continue
            codes.append(code)
            map_errors += pdfium_c.FPDFText_HasUnicodeMapError(raw_tp, i) == 1
            left, bottom, right, top = _char_box(textpage, i)
            xs = (a * left + b * bottom + e, a * right + b * top + e)
            ys = (c * left + d * bottom + f, c * right + d * top + f)
            glyphs.append(Glyph(normalise_char(ch), [min(xs), min(ys), max(xs), max(ys)]))
    finally:
        textpage.close()
    problem = layer_problem(codes, map_errors, visible, hidden)
    if problem is not None:
        return None, problem
    return Page(index=index, width=width, height=height, lines=group_lines(glyphs), reader="text_layer"), None


def read_pdf_page(pdf: Any, i: int, name: str, size: tuple[int, int],
                  render: Callable[[], np.ndarray]) -> SourcePage:
    """Page `i` of an open PDF, read from its text layer where that can be trusted, with the strokes it
    draws (data.pdf_paths, for its ruled lines) and the large pictures on it (whose text OCR reads);
    `size` (width, height) is the pixel size of its rendering and `render` draws it (data.io), called
    here only when the page is to be OCR'd: a page read from its text is drawn only if someone looks at
    it (SourcePage.picture). `index` of the Page is set by the caller."""
    import pypdfium2 as pdfium

    from data.input_error import InputError
    from data.pdf_paths import page_drawing
    t0 = time.perf_counter()
    try:
        page = pdf[i]
        try:       # one walk over the page's objects: strokes, pictures, visible text
            drawing = page_drawing(page, _page_to_pixels(page.raw, size[0], size[1]), pdf, i)
            read, _ = read_text_layer(page, size[0], size[1], 0, drawing)
        finally:
            page.close()
    except pdfium.PdfiumError as exc:
        raise InputError(name, f"cannot read the text of page {i + 1} ({exc})") from None
    seconds = time.perf_counter() - t0
    if read is None:
        return SourcePage(render(), None, seconds)
    return SourcePage(None, read, seconds, render=render, segments=drawing.segments, pictures=drawing.pictures)


def pdf_attachments(pdf: Any, name: str) -> list[Any]:
    """The XML invoices attached to an open PDF (embedded files whose name ends .xml/.xbrl or whose bytes
    start an XML document), each as a data.embedded.EmbeddedRecord with the fields it gives. An attachment
    too big, not well-formed, with a DOCTYPE/entities (refused, never expanded), or holding no invoice
    field is passed over: it is optional data, the printed page is still read."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    from data.input_error import InputError
    from data.invoice_xml import record_from_xml
    from data.safe_xml import MAX_XML_BYTES, looks_like_xml
    out = []
    for i in range(min(pdfium_c.FPDFDoc_GetAttachmentCount(pdf.raw), 64)):
        att = pdfium_c.FPDFDoc_GetAttachment(pdf.raw, i)
        if not att:
            continue
        n = pdfium_c.FPDFAttachment_GetName(att, None, 0)
        buf = ctypes.create_string_buffer(max(2, n))
        pdfium_c.FPDFAttachment_GetName(att, ctypes.cast(buf, ctypes.POINTER(pdfium_c.FPDF_WCHAR)), n)
        att_name = buf.raw[:max(0, n - 2)].decode("utf-16-le", "replace")
        size = ctypes.c_ulong()
        if not pdfium_c.FPDFAttachment_GetFile(att, None, 0, ctypes.byref(size)) or not 0 < size.value <= MAX_XML_BYTES:
            continue
        data = ctypes.create_string_buffer(size.value)
        if not pdfium_c.FPDFAttachment_GetFile(att, data, size.value, ctypes.byref(size)):
            continue
        body = data.raw[:size.value]
        if not (att_name.lower().endswith((".xml", ".xbrl")) or looks_like_xml(body[:256])):
            continue
        try:
            rec = record_from_xml(body, name, f"XML attachment {att_name}")
        except InputError:
            continue
        if rec:
            out.append(rec)
    return out
