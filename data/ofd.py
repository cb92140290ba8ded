"""OFD (GB/T 33190) documents: pages read from the file's own text objects, and a drawn page image.

An OFD is a zip of XML: OFD.xml names the document root (DocBody/DocRoot, e.g. Doc_0/Document.xml),
which lists the pages (Pages/Page@BaseLoc), the page size (CommonData/PageArea/PhysicalBox, in mm),
template pages drawn under a page (TemplatePage; the form's printed labels live there) and resources
(fonts). A page's Content holds layers of TextObject (Boundary "x y w h" in mm, Size in mm, optional
CTM; TextCode with X/Y and DeltaX/DeltaY, "g N d" repeating d N times), PathObject (AbbreviatedData
"M x y L x y ...") and ImageObject. Every character gets a box in the pixels of the page at `dpi`
(px = mm / 25.4 * dpi) and the characters become lines as a PDF's text layer does
(data.textlayer.group_lines), so the extractor sees one kind of line whatever the reader.

The page image is an approximation drawn here, for the overlay and the ruled-line finder: a white page,
the path objects' straight segments (curves as chords), every character in a CJK font of data.fonts at
its position and colour; images (QR code, seal) are not drawn.

`custom_data` (OFD.xml DocInfo/CustomDatas: 发票号码, 价税合计 ...) and `tags` (the CustomTags file's
semantic names such as InvoiceNo, SellerName, TaxInclusiveTotalAmount -> the text of the objects they
point to) are kept for cross-checking fields; a tag file that is not well-formed XML (some producers
write `<:eInvoice xmlns:="">`) is skipped, since it is optional.

Safe by construction: the zip is read from memory with limits (member count, each member's and the
total uncompressed size, compression ratio: a zip bomb is refused before it is inflated, and a member
whose header lies about its size is cut off at the declared size); member names are only looked up in
the archive's own name list, never used as file paths, so a name like ../../etc/passwd reaches nothing;
XML with a DOCTYPE or an ENTITY declaration is refused before parsing, so no entity is ever expanded or
fetched. Every failure is a data.io.InputError that says what is wrong.
"""
from __future__ import annotations

import functools
import io
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np

from data.safe_xml import MAX_XML_BYTES, parse_xml
from data.textlayer import Glyph, normalise_char

MAX_MEMBERS = 5000                   # an invoice OFD has 15-30 members
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one member, uncompressed
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # all members together, uncompressed
MAX_RATIO = 200                      # uncompressed / compressed, for members above RATIO_FLOOR (invoice XML: 5-30)
RATIO_FLOOR = 1024 * 1024
DESCENT = 0.15                       # share of the font size below the baseline
MM_PER_INCH = 25.4
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _error(name: str, reason: str) -> Exception:
    from data.input_error import InputError
    return InputError(name, reason)


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _kids(el: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in el if _local(c.tag) == name]


def _kid(el: ET.Element | None, *path: str) -> ET.Element | None:
    for name in path:
        if el is None:
            return None
        found = _kids(el, name)
        el = found[0] if found else None
    return el


def _kids_at(el: ET.Element | None, path: tuple[str, ...], name: str) -> list[ET.Element]:
    parent = _kid(el, *path)
    return _kids(parent, name) if parent is not None else []


def _text_at(el: ET.Element | None, *path: str) -> str | None:
    found = _kid(el, *path)
    return found.text if found is not None else None


def _floats(text: str | None) -> list[float]:
    return [float(v) for v in _NUM.findall(text or "")]


def expand_deltas(text: str | None) -> list[float]:
    """A DeltaX/DeltaY list: numbers, with "g N d" meaning d repeated N times."""
    out: list[float] = []
    tokens = (text or "").split()
    i = 0
    while i < len(tokens):
        if tokens[i] == "g" and i + 2 < len(tokens):
            out += [float(tokens[i + 2])] * min(int(float(tokens[i + 1])), 100_000)
            i += 3
        else:
            out.append(float(tokens[i]))
            i += 1
    return out


class OfdArchive:
    """The members of an OFD zip, read from memory with the limits of the module docstring."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise _error(name, f"damaged OFD (not a readable zip archive: {exc}); export or download it "
                               "again") from None
        if len(infos) > MAX_MEMBERS:
            raise _error(name, f"OFD holds {len(infos)} files, above the limit of {MAX_MEMBERS}; it is not "
                               "an ordinary document (a zip bomb?)")
        total = 0
        for info in infos:
            total += info.file_size
            ratio = info.file_size / max(1, info.compress_size)
            if info.file_size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES or (
                    info.file_size > RATIO_FLOOR and ratio > MAX_RATIO):
                raise _error(name, f"OFD member {info.filename!r} would inflate to {info.file_size:,} bytes "
                                   f"(compressed {info.compress_size:,}); refused as a zip bomb (limits: "
                                   f"{MAX_MEMBER_BYTES:,} bytes a member, {MAX_TOTAL_BYTES:,} in all, ratio "
                                   f"{MAX_RATIO})")
        self.infos = {info.filename.lstrip("/"): info for info in infos if not info.is_dir()}
        self.folded = {n.lower(): n for n in self.infos}   # producers write Tpls and TPLS for one folder
        if any(info.flag_bits & 0x1 for info in self.infos.values()):
            raise _error(name, "OFD is encrypted (password-protected); save it again without a password")
        if "OFD.xml" not in self.infos:
            raise _error(name, "is a zip archive but not an OFD document (no OFD.xml in it)")

    def resolve(self, base: str, loc: str) -> str:
        """The archive name of `loc` as written in the member `base` (relative to base's folder, or to
        the root when it starts with /). Only ever looked up in the archive's names."""
        loc = loc.strip().replace("\\", "/")
        joined = loc.lstrip("/") if loc.startswith("/") else posixpath.join(posixpath.dirname(base), loc)
        norm = posixpath.normpath(joined)
        if norm.startswith("../") or norm == "..":
            raise _error(self.name, f"OFD refers to {loc!r}, outside the document; the file is damaged "
                                    "or crafted")
        return norm

    def read(self, member: str) -> bytes:
        info = self.infos.get(member) or self.infos.get(self.folded.get(member.lower(), ""))
        if info is None:
            raise _error(self.name, f"damaged OFD: {member!r} is missing from it")
        try:
            with self.zip.open(info) as fh:
                data = fh.read(info.file_size + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
            raise _error(self.name, f"damaged OFD: {member!r} cannot be read ({exc})") from None
        if len(data) > info.file_size:
            raise _error(self.name, f"OFD member {member!r} inflates beyond the size it declares; refused "
                                    "as a zip bomb")
        return data

    def xml(self, member: str) -> ET.Element:
        return parse_xml(self.read(member), self.name, member)


@dataclass
class OfdText:
    """One TextObject: its characters' glyphs (pixels), colour and font size in pixels."""
    id: str
    glyphs: list[Glyph]
    size_px: float
    colour: tuple[int, int, int] = (0, 0, 0)


@dataclass
class OfdPage:
    index: int
    width_mm: float
    height_mm: float
    texts: list[OfdText] = field(default_factory=list)
    segments: list[tuple[float, float, float, float, float]] = field(default_factory=list)  # x0 y0 x1 y1 width (px)


@dataclass
class OfdDocument:
    name: str
    pages: list[OfdPage]
    custom_data: dict[str, str] = field(default_factory=dict)   # OFD.xml DocInfo/CustomDatas
    tags: dict[str, str] = field(default_factory=dict)          # semantic tag -> text of the objects it names
    tag_pages: dict[str, int] = field(default_factory=dict)     # semantic tag -> 0-based page its objects are on
    attachments: dict[str, bytes] = field(default_factory=dict)  # XML attachments (Attachments.xml): name -> bytes

    def embedded(self, index: int) -> list[Any]:
        """What the file states about page `index`'s fields (data.embedded.EmbeddedRecord): the semantic
        tags whose objects are on it; for the first page also the custom data and the XML attachments
        (they describe the document, whose header is on its first page). Attachments that are not an
        invoice's XML, or are refused (DOCTYPE, too big), are passed over: optional data."""
        from data.embedded import CUSTOM_NAMES, from_names
        from data.input_error import InputError
        from data.invoice_xml import record_from_xml
        out = [from_names({k: v for k, v in self.tags.items() if self.tag_pages.get(k, 0) == index},
                          "OFD semantic tags")]
        if index == 0:
            out.append(from_names(self.custom_data, "OFD custom data", CUSTOM_NAMES))
            for att, data in self.attachments.items():
                try:
                    out.append(record_from_xml(data, self.name, f"XML attachment {att}"))
                except InputError:
                    continue
        return [r for r in out if r]


def _colour(obj: ET.Element) -> tuple[int, int, int]:
    fill = _kid(obj, "FillColor")
    vals = [int(v) for v in _floats(fill.get("Value") if fill is not None else None)[:3]]
    return (vals[0], vals[1], vals[2]) if len(vals) == 3 else (0, 0, 0)


def _ctm(obj: ET.Element) -> tuple[float, ...]:
    vals = _floats(obj.get("CTM"))
    return tuple(vals) if len(vals) == 6 else (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _text_object(obj: ET.Element, k: float) -> OfdText:
    """A TextObject's glyphs: each character at its X/Y + deltas (mm, in the object's box), through the
    object's CTM, as a box from the baseline up (1 - DESCENT) and down DESCENT font sizes, as wide as
    the advance to the next character or, for the last one, its printed width (data.geometry.char_width)."""
    from data.geometry import char_width
    bx, by = (_floats(obj.get("Boundary")) + [0.0, 0.0])[:2]
    a, b, c, d, e, f = _ctm(obj)
    scale = abs(a * d - b * c) ** 0.5 or 1.0
    size = (_floats(obj.get("Size")) or [3.5])[0]
    glyphs: list[Glyph] = []
    x = y = 0.0
    for code in _kids(obj, "TextCode"):
        text = code.text or ""
        x = (_floats(code.get("X")) or [x])[0]
        y = (_floats(code.get("Y")) or [y])[0]
        dxs, dys = expand_deltas(code.get("DeltaX")), expand_deltas(code.get("DeltaY"))
        for i, ch in enumerate(text):
            advance = dxs[i] if i < len(dxs) else size * char_width(ch)
            width = advance if 0 < advance < 2 * size else size * char_width(ch)
            if ch.strip():
                x0, x1 = x, x + width
                y0, y1 = y - (1 - DESCENT) * size, y + DESCENT * size
                corners = [(a * px + c * py + e, b * px + d * py + f) for px, py in ((x0, y0), (x1, y1))]
                (ux0, uy0), (ux1, uy1) = corners
                box = [(bx + min(ux0, ux1)) * k, (by + min(uy0, uy1)) * k,
                       (bx + max(ux0, ux1)) * k, (by + max(uy0, uy1)) * k]
                glyphs.append(Glyph(normalise_char(ch), [round(v, 1) for v in box]))
            x += advance
            y += dys[i] if i < len(dys) else 0.0
    return OfdText(obj.get("ID", ""), glyphs, size * scale * k, _colour(obj))


def _path_segments(obj: ET.Element, k: float) -> list[tuple[float, float, float, float, float]]:
    """A PathObject's straight segments in pixels (curves drawn as the chord to their end point)."""
    bx, by = (_floats(obj.get("Boundary")) + [0.0, 0.0])[:2]
    a, b, c, d, e, f = _ctm(obj)
    width = max(1.0, (_floats(obj.get("LineWidth")) or [0.25])[0] * k)
    data = _kid(obj, "AbbreviatedData")
    tokens = re.findall(r"[A-Za-z]|" + _NUM.pattern, (data.text or "") if data is not None else "")
    out = []
    start = cur = None
    i = 0
    takes = {"M": 2, "L": 2, "Q": 4, "B": 6, "A": 7, "S": 2, "C": 0}
    while i < len(tokens):
        op = tokens[i]
        n = takes.get(op)
        if n is None:
            i += 1
            continue
        args = [float(v) for v in tokens[i + 1:i + 1 + n]] if n else []
        i += 1 + n
        if op == "C":
            if cur is not None and start is not None:
                out.append((*cur, *start))
                cur = start
            continue
        if len(args) < 2:
            break
        px, py = args[-2], args[-1]
        pt = ((bx + a * px + c * py + e) * k, (by + b * px + d * py + f) * k)
        if op in ("M", "S"):
            start = cur = pt
        else:
            if cur is not None:
                out.append((*cur, *pt))
            cur = pt
    return [(x0, y0, x1, y1, width) for x0, y0, x1, y1 in out]


class _Reader:
    def __init__(self, archive: OfdArchive, dpi: int) -> None:
        self.ar = archive
        self.k = dpi / MM_PER_INCH
        self.templates: dict[str, str] = {}
        self.objects: dict[str, str] = {}   # TextObject ID -> its text, for the semantic tags
        self.object_pages: dict[str, int] = {}   # TextObject ID -> the page it was drawn on

    def collect(self, root: ET.Element, page: OfdPage, depth: int = 0) -> None:
        if depth > 32:
            return
        for el in root:
            tag = _local(el.tag)
            if tag == "TextObject":
                text = _text_object(el, self.k)
                page.texts.append(text)
                if text.id:
                    self.objects[text.id] = "".join(g.text for g in text.glyphs)
                    self.object_pages.setdefault(text.id, page.index)
            elif tag == "PathObject":
                page.segments += _path_segments(el, self.k)
            elif tag in ("Content", "Layer", "PageBlock"):
                self.collect(el, page, depth + 1)

    def page(self, index: int, member: str, default_box: list[float]) -> OfdPage:
        root = self.ar.xml(member)
        box = _floats(_text_at(root, "Area", "PhysicalBox")) or default_box
        page = OfdPage(index, box[2], box[3])
        for tpl in _kids(root, "Template"):
            loc = self.templates.get(tpl.get("TemplateID", ""))
            if loc and tpl.get("ZOrder", "Background") == "Background":
                self.collect(self.ar.xml(loc), page)
        content = _kid(root, "Content")
        if content is not None:
            self.collect(content, page)
        for tpl in _kids(root, "Template"):
            loc = self.templates.get(tpl.get("TemplateID", ""))
            if loc and tpl.get("ZOrder", "Background") != "Background":
                self.collect(self.ar.xml(loc), page)
        return page


def read_ofd(data: bytes, name: str, dpi: int = 200,
             select: Callable[[int], Iterable[int]] | None = None) -> OfdDocument:
    """The first document of an OFD file: every page, or the 0-based pages `select(page count)` chooses
    (data.io passes its page-range and page-count limits)."""
    ar = OfdArchive(name, data)
    root = ar.xml("OFD.xml")
    body = _kid(root, "DocBody")
    doc_root = _kid(body, "DocRoot")
    if doc_root is None or not (doc_root.text or "").strip():
        raise _error(name, "damaged OFD: OFD.xml names no document (DocBody/DocRoot)")
    custom = {c.get("Name", ""): (c.text or "").strip()
              for c in _kids_at(body, ("DocInfo", "CustomDatas"), "CustomData")}
    doc_member = ar.resolve("", doc_root.text or "")
    doc = ar.xml(doc_member)
    reader = _Reader(ar, dpi)
    common = _kid(doc, "CommonData")
    default_box = _floats(_text_at(common, "PageArea", "PhysicalBox")) or [0, 0, 210, 297]
    for tpl in _kids(common, "TemplatePage") if common is not None else []:
        reader.templates[tpl.get("ID", "")] = ar.resolve(doc_member, tpl.get("BaseLoc", ""))
    page_els = _kids_at(doc, ("Pages",), "Page")
    chosen = select(len(page_els)) if select is not None else range(len(page_els))
    pages = [reader.page(i, ar.resolve(doc_member, page_els[i].get("BaseLoc", "")), default_box) for i in chosen]
    tags, tag_pages = _tags(ar, doc, doc_member, reader.objects, reader.object_pages)
    return OfdDocument(name, pages, custom, tags, tag_pages, _attachments(ar, doc, doc_member))


def _attachments(ar: OfdArchive, doc: ET.Element, doc_member: str) -> dict[str, bytes]:
    """The XML attachments the document lists (Document.xml Attachments -> Attachment/FileLoc, Format
    xml or a .xml/.xbrl name), read through the archive's limits. A missing or broken list loses the
    attachments, not the pages."""
    from data.input_error import InputError
    loc = _kid(doc, "Attachments")
    out: dict[str, bytes] = {}
    if loc is None or not (loc.text or "").strip():
        return out
    try:
        index = ar.resolve(doc_member, loc.text or "")
        for att in _kids(ar.xml(index), "Attachment"):
            file_loc = (_text_at(att, "FileLoc") or "").strip()
            fmt = (att.get("Format") or "").lower()
            if not file_loc or not (fmt in ("xml", "xbrl") or file_loc.lower().endswith((".xml", ".xbrl"))):
                continue
            member = ar.resolve(index, file_loc)
            info = ar.infos.get(member) or ar.infos.get(ar.folded.get(member.lower(), ""))
            if info is not None and info.file_size <= MAX_XML_BYTES:
                out[att.get("Name") or file_loc] = ar.read(member)
    except InputError:
        return out
    return out


def _tags(ar: OfdArchive, doc: ET.Element, doc_member: str, objects: dict[str, str],
          object_pages: dict[str, int]) -> tuple[dict[str, str], dict[str, int]]:
    """Semantic tags (CustomTags -> CustomTag files): tag name -> text of the objects it refers to, and
    tag name -> the page those objects are on."""
    loc = _kid(doc, "CustomTags")
    out: dict[str, str] = {}
    pages: dict[str, int] = {}
    if loc is None or not (loc.text or "").strip():
        return out, pages
    try:
        index_member = ar.resolve(doc_member, loc.text or "")
        for tag in _kids(ar.xml(index_member), "CustomTag"):
            file_loc = _kid(tag, "FileLoc")
            if file_loc is None:
                continue
            tree = ar.xml(ar.resolve(index_member, file_loc.text or ""))
            for el in tree.iter():
                refs = [r for r in el if _local(r.tag) == "ObjectRef"]
                if refs:
                    text = "".join(objects.get((r.text or "").strip(), "") for r in refs)
                    if text and _local(el.tag) not in out:
                        out[_local(el.tag)] = text
                        page = object_pages.get((refs[0].text or "").strip())
                        if page is not None:
                            pages[_local(el.tag)] = page
    except Exception as exc:   # noqa: BLE001 - optional data: a broken tag file loses the tags, not the page
        from data.input_error import InputError
        if not isinstance(exc, InputError):
            raise
    return out, pages


_GLYPHS: dict[tuple[int, str], tuple[Any, int, int]] = {}   # (size, character) -> (mask, left, top), all pages
GLYPH_CACHE = 4096      # masks kept between pages and files (a few MB): e-invoices repeat the same few hundred


def _glyph(size: int, ch: str) -> tuple[Any, int, int]:
    """Character `ch` in the song font at `size` px as an "L" mask, with its offset from the baseline origin:
    drawn once and stamped wherever it stands, on this page and the next (a list page of 3,000 glyphs holds
    a few hundred distinct ones, and a batch of invoices the same ones again)."""
    from PIL import Image, ImageDraw

    from data.fonts import pil_font
    drawn = _GLYPHS.get((size, ch))
    if drawn is None:
        font = pil_font("song", size)
        left, top, right, bottom = font.getbbox(ch, anchor="ls")
        mask = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
        ImageDraw.Draw(mask).text((-left, -top), ch, font=font, fill=255, anchor="ls")
        if len(_GLYPHS) >= GLYPH_CACHE:
            _GLYPHS.clear()
        drawn = _GLYPHS[(size, ch)] = (mask, left, top)
    return drawn


def draw_page(page: OfdPage, k: float) -> np.ndarray:
    """The approximate page image (module docstring), BGR uint8. PIL draws straight into the array handed
    back (an RGBX image over a 4-channel buffer, the 4th channel dropped at the end): converting a drawn
    RGB image to an array cost as much as the drawing."""
    import cv2
    from PIL import Image, ImageDraw
    w, h = max(1, round(page.width_mm * k)), max(1, round(page.height_mm * k))
    buf = np.full((h, w, 4), 255, np.uint8)
    img = Image.frombuffer("RGBX", (w, h), buf, "raw", "RGBX", 0, 1)
    img.readonly = 0        # draw into `buf` itself (frombuffer shares it but marks the image read-only)
    draw = ImageDraw.Draw(img)
    for x0, y0, x1, y1, width in page.segments:
        draw.line([(x0, y0), (x1, y1)], fill=(60, 60, 60), width=max(1, round(width)))
    for text in page.texts:
        size = max(6, round(text.size_px))
        bgr = tuple(text.colour[::-1])
        for g in text.glyphs:
            mask, left, top = _glyph(size, g.text)
            baseline = g.box[3] - DESCENT * (g.box[3] - g.box[1])
            img.paste(bgr, (round(g.box[0]) + left, round(baseline) + top), mask)
    return cv2.cvtColor(buf, cv2.COLOR_BGRA2BGR)   # drawn in BGR order already: the channels stay where they are


def ofd_page(p: OfdPage, k: float, mode: str, read_s: float, embedded: list[Any] | None = None) -> Any:
    """One page for data.io's OFD page source (a function of its own: no local of the generator holds it after
    it is handed over); `embedded`: what the file states about its fields (OfdDocument.embedded), kept
    only when the page is read from the file."""
    import time

    from data.document import Page
    from data.source_page import SourcePage
    from data.textlayer import group_lines
    if mode == "image":
        return draw_page(p, k)
    if mode == "ocr":
        return SourcePage(draw_page(p, k))
    t0 = time.perf_counter()
    page = Page(index=0, width=max(1, round(p.width_mm * k)), height=max(1, round(p.height_mm * k)), reader="ofd",
                lines=group_lines([g for t in p.texts for g in t.glyphs]))
    return SourcePage(None, page, read_s + time.perf_counter() - t0, list(embedded or []),
                      render=functools.partial(draw_page, p, k), segments=p.segments)


def count_pages(data: bytes, name: str) -> int:
    ar = OfdArchive(name, data)
    body = _kid(ar.xml("OFD.xml"), "DocBody")
    doc_root = _kid(body, "DocRoot")
    if doc_root is None:
        raise _error(name, "damaged OFD: OFD.xml names no document (DocBody/DocRoot)")
    doc = ar.xml(ar.resolve("", doc_root.text or ""))
    return len(_kids_at(doc, ("Pages",), "Page"))
