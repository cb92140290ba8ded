"""Generated pages written as born-digital PDFs: every ground-truth line drawn as real PDF text.

A born-digital invoice PDF holds text objects (a font, a position, the characters), not a picture of its
text; measuring the text-layer reader (data.textlayer) on generated pages needs such files. `write_pdf`
takes a generated page's ground truth (data.synth.generate: lines with their text and ink boxes in the
pixels of a page at `dpi`) and draws each line as one text object in a CJK TrueType font of data.fonts,
embedded in the file with its Unicode map (pdfium's FPDFText_LoadFont writes a ToUnicode CMap), sized so
that the line's ink fills its box: the font size from the ink height of the line's text in that font, a
horizontal scale so that its ink is as wide as the box (the generator's fonts and letter spacing differ
from the embedded font's). Rendered at `dpi`, the PDF's page has the generated page's pixel size, so the
ground truth's boxes hold for both the text layer and OCR of the rendering. The generator's decorations
(stamps, backgrounds) are not drawn; its straight rules are when given (`strokes`, from
data.synth.generator.generate_ruled): each one a stroked path, a box one closed path, in its colour and
width, as a form-filling program writes its table borders, so the ruled-line reading from a file's
vector strokes (data.pdf_paths) is measured on them. Without `strokes` the page is text only.
"""
from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from data.synth.canvas import Stroke

DEFAULT_DPI = 200
_REF = 100    # pixel size at which the font's ink is measured


@functools.lru_cache(maxsize=1)
def truetype_font() -> str:
    """A CJK TrueType font of data.fonts whose first face is the Chinese one (pdfium embeds a font file and
    uses its first face): a hei font first (WenQuanYi has ¥ and the full-width forms; the Arphic GB fonts
    lack ¥ U+00A5, which would come back from the text layer as an unmapped code)."""
    from data.fonts import FontNotFoundError, available_fonts
    fonts = available_fonts()
    for style in ("hei", *fonts):
        for path, index in fonts.get(style, []):
            if index == 0:
                return path
    raise FontNotFoundError("no CJK TrueType font whose first face is Chinese (fonts-wqy-microhei has one)")


def _ink(font: Any, text: str) -> tuple[float, float, float, float]:
    """Ink box (left, top, right, bottom) of `text` at `_REF` px, relative to the pen on the baseline."""
    bb = font.getbbox(text, anchor="ls")
    return float(bb[0]), float(bb[1]), float(bb[2]), float(bb[3])


def _draw_strokes(page: Any, strokes: Sequence[Stroke], k: float, height_pt: float) -> None:
    """Each stroke as a stroked path object (pixels -> pt, y up), under the text inserted after it."""
    import pypdfium2.raw as pdfium_c
    for st in strokes:
        (x, y), rest = st.points[0], st.points[1:]
        obj = pdfium_c.FPDFPageObj_CreateNewPath(x * k, height_pt - y * k)
        for x, y in rest:
            pdfium_c.FPDFPath_LineTo(obj, x * k, height_pt - y * k)
        if st.closed:
            pdfium_c.FPDFPath_Close(obj)
        pdfium_c.FPDFPageObj_SetStrokeWidth(obj, st.width * k)
        pdfium_c.FPDFPageObj_SetStrokeColor(obj, *st.color, 255)
        pdfium_c.FPDFPageObj_SetLineCap(obj, pdfium_c.FPDF_LINECAP_BUTT)
        pdfium_c.FPDFPageObj_SetLineJoin(obj, pdfium_c.FPDF_LINEJOIN_MITER)
        pdfium_c.FPDFPath_SetDrawMode(obj, pdfium_c.FPDF_FILLMODE_NONE, True)
        pdfium_c.FPDFPage_InsertObject(page.raw, obj)


def write_pdf(gt: dict[str, Any], dpi: int = DEFAULT_DPI, strokes: Sequence[Stroke] = ()) -> bytes:
    """A one-page PDF whose text layer is the ground truth's lines at their boxes, over the given straight
    rules drawn as vector paths (module docstring)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c
    from PIL import ImageFont
    path = truetype_font()
    with open(path, "rb") as fh:
        data = fh.read()
    font_px = ImageFont.truetype(path, _REF)
    k = 72.0 / dpi
    width_pt, height_pt = float(gt["width"]) * k, float(gt["height"]) * k
    pdf = pdfium.PdfDocument.new()
    try:
        page = pdf.new_page(width_pt, height_pt)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        font = pdfium_c.FPDFText_LoadFont(pdf.raw, buf, len(data), pdfium_c.FPDF_FONT_TRUETYPE, 1)
        if not font:
            raise RuntimeError(f"pdfium could not load the font {path}")
        try:
            _draw_strokes(page, strokes, k, height_pt)
            for line in gt["lines"]:
                text = line["text"]
                x0, y0, x1, y1 = (float(v) for v in line["box"])
                left, top, right, bottom = _ink(font_px, text)
                if not text.strip() or right <= left or bottom <= top or x1 <= x0 or y1 <= y0:
                    continue
                size_px = (y1 - y0) * _REF / (bottom - top)
                scale = (x1 - x0) / ((right - left) * size_px / _REF)
                pen_x = x0 - left * size_px / _REF * scale
                baseline = y1 - bottom * size_px / _REF
                obj = pdfium_c.FPDFPageObj_CreateTextObj(pdf.raw, font, size_px * k)
                wide = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
                pdfium_c.FPDFText_SetText(obj, ctypes.cast(wide, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
                pdfium_c.FPDFPageObj_Transform(obj, scale, 0, 0, 1, pen_x * k, height_pt - baseline * k)
                pdfium_c.FPDFPage_InsertObject(page.raw, obj)
            if not pdfium_c.FPDFPage_GenerateContent(page.raw):
                raise RuntimeError("pdfium could not write the page content")
        finally:
            pdfium_c.FPDFFont_Close(font)
        import io
        out = io.BytesIO()
        page.close()
        pdf.save(out)
        return out.getvalue()
    finally:
        pdf.close()
