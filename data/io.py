"""Decode user input into page images (BGR uint8), with limits, and one error type for every bad input.

Accepted content (sniffed from the first bytes, never from the file name): JPEG, PNG, BMP, WebP, TIFF
(every frame of a multi-page TIFF is a page) and PDF (pages rendered with pdfium at `dpi`).
Anything else, and every broken input, raises `InputError(path, reason)`: zero-byte, truncated or
corrupt files, non-images, images whose header claims more than `max_pixels` (refused before any
pixel is decoded), encrypted or broken PDFs, documents with more than `max_pages` pages (unless a
`page_range` picks fewer) or whose pages add up to more than `MAX_DOC_PIXELS` (checked from the page
sizes before any page is rendered), missing or unreadable paths and directories.

`iter_pages` and `iter_image_bytes` yield one page at a time and keep no reference to a page once it is
handed over (a 300-page PDF is never all in memory, and a caller that drops each page holds one);
`load_pages` / `load_image_bytes` are the list forms, for short files and tests only.
"""
from __future__ import annotations

import errno
import functools
import io
import math
import os
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from data.input_error import InputError  # noqa: F401 - raised here, imported from here by callers

MAX_FILE_BYTES = 256 * 1024 * 1024   # larger files are refused before reading (a 600-page scan is ~200 MB)
MAX_PIXELS = 64_000_000              # per page; 8000 x 8000. A 48 MP phone photo passes, a pixel bomb does not
MAX_PAGES = 500                      # per document; pass page_range to read part of a longer one
MAX_DOC_PIXELS = 2_000_000_000       # all pages of one file together: 500 A4 pages at 200 dpi (3.9 MP each)
                                     # pass, a file of many pixel-bomb pages (500 x 64 MP) is refused before
                                     # any page is rendered: it would take hours and gigabytes
MAX_ASPECT = 100                     # a page's longer side at most this many times its shorter one: a 2 m till
                                     # roll is 25:1, a phone's full-length screenshot under MAX_PIXELS at most
                                     # 55:1; a 20,000,000 x 3 px "page" is refused before it is decoded
STRIP_PIXELS = 4_000_000             # a frame is converted to BGR this many pixels at a time (no second copy)
DEFAULT_DPI = 200                    # PDF render resolution: PP-OCR reads 8-pt print reliably from here up
MAX_DPI = 600

SUPPORTED = "JPEG, PNG, BMP, WebP, TIFF, PDF, OFD or invoice XML"




def sniff(head: bytes) -> str | None:
    """'jpeg' | 'png' | 'bmp' | 'webp' | 'tiff' | 'pdf' | 'ofd' from a file's first bytes, or None. Any zip
    archive sniffs as 'ofd' (GB/T 33190 is a zip of XML); one without OFD.xml is refused when opened."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"BM") and len(head) >= 26:
        return "bmp"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if b"%PDF-" in head[:1024]:      # the spec allows junk before the header
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "ofd"
    from data.invoice_xml import looks_like_xml
    if looks_like_xml(head):         # a 数电票 XML (data.invoice_xml); one without invoice fields is refused
        return "xml"
    return None


def _describe_unknown(head: bytes) -> str:
    if not head.strip(b"\x00"):
        return "content is all zero bytes"
    try:
        head[:256].decode("utf-8")
        return "content looks like text, not an image, PDF or OFD"
    except UnicodeDecodeError:
        return "unrecognised binary content"


# --- opening ------------------------------------------------------------------------------------------

def _missing_reason(path: Path) -> str:
    """Why `path` cannot be found: a symbolic-link loop and a dangling link are told apart from a typo,
    since "no such file" for a link the user can see in `ls` sends them looking in the wrong place."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop (the link leads back to itself); point it at the real file"
        if os.path.islink(path):
            return (f"dangling symbolic link: it points to {os.readlink(path)!r}, which does not exist; "
                    "fix the link or pass the real file")
        if exc.errno == errno.ENOTDIR:
            return "a part of the path is a file, not a directory; check the path"
    return "no such file; check the path"


def non_regular_kind(mode: int) -> str | None:
    """What a file of `mode` (st_mode) is when it is neither a regular file nor a directory ("a FIFO
    (named pipe)", "a character device", ...), else None. Such a file is never read: a FIFO blocks until
    someone writes to it, /dev/zero or /dev/urandom never end."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "not a regular file"


def not_regular_reason(path: str | os.PathLike, kind: str) -> str:
    """The message for a path that is `kind` (non_regular_kind), naming the link target if it is a link."""
    link = f" (a symbolic link to {os.path.realpath(path)!r})" if os.path.islink(path) else ""
    return (f"is {kind}{link}, not a regular file; it is not read (it could block or never end); "
            "pass the document file itself")


def open_regular(path: str | os.PathLike) -> int:
    """A read-only descriptor of `path` if it is a regular file (links followed), else InputError saying
    what it is. Opened non-blocking and checked with fstat on the descriptor itself, so neither a FIFO
    (the open would wait for a writer) nor a file swapped for one after a stat can hang the caller; the
    descriptor is switched back to blocking reads before it is returned. OSError when it cannot be opened."""
    kind = non_regular_kind(os.stat(path).st_mode)
    if kind is not None:
        raise InputError(path, not_regular_reason(path, kind))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(path, not_regular_reason(path, non_regular_kind(mode) or "a directory"))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_path(path: Path) -> int:
    """Size in bytes of a readable regular file, else InputError."""
    if not path.exists():
        raise InputError(path, _missing_reason(path))
    if path.is_dir():
        raise InputError(path, "is a directory; pass the files inside it (the batch command walks folders)")
    try:
        fd = open_regular(path)
        with open(fd, "rb") as fh:
            size = os.fstat(fd).st_size
            fh.read(1)
    except PermissionError:
        raise InputError(path, "permission denied; make the file readable (chmod +r) and retry") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    return size


def check_file(path: str | os.PathLike) -> int:
    """Size in bytes of `path` when it is a readable regular file, else InputError saying why (missing,
    a symbolic link loop or dangling link, a directory, no permission). Reads no content: the commands
    check every FILE argument with it before processing the first one."""
    return _check_path(Path(path))


def _read_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(1024)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None


def size_advice(kind: str | None) -> str:
    """What to do with a file that is too large, for its content `kind` (see `sniff`): splitting is
    advice for a PDF or a multi-page TIFF, not for a photo."""
    if kind == "pdf":
        return "split the PDF into smaller ones (e.g. `qpdf --split-pages`)"
    if kind == "tiff":
        return "split the TIFF into smaller files or save its pages as JPEG"
    if kind == "xml":
        return "an invoice XML is a few kilobytes: check that this is the invoice file"
    if kind is not None:
        return f"downscale the {kind.upper()} image or save it as JPEG"
    return "use a smaller file"


def _check_size(name: str, size: int, head: bytes = b"") -> None:
    if size == 0:
        raise InputError(name, "file is empty (0 bytes); the upload or copy did not complete")
    if size > MAX_FILE_BYTES:
        raise InputError(name, f"file is {size / 2**20:.0f} MiB, above the {MAX_FILE_BYTES // 2**20} MiB limit "
                               f"(data.io.MAX_FILE_BYTES); {size_advice(sniff(head))}")


def _select_pages(name: str, total: int, max_pages: int, page_range: tuple[int, int] | None) -> range:
    if total == 0:
        raise InputError(name, "document has no pages")
    if page_range is None:
        if total > max_pages:
            raise InputError(name, f"has {total} pages, above the limit of {max_pages}; pass a page range "
                                   "(e.g. page_range=(0, 50)) or raise max_pages")
        return range(total)
    start, stop = page_range
    if not (0 <= start < stop) or start >= total:
        raise InputError(name, f"page range {start}..{stop} is outside the document's {total} pages "
                               "(0-based start, exclusive stop)")
    chosen = range(start, min(stop, total))
    if len(chosen) > max_pages:
        raise InputError(name, f"page range asks for {len(chosen)} pages, above the limit of {max_pages}")
    return chosen


# --- images -----------------------------------------------------------------------------------------

def aspect_reason(w: float, h: float, unit: str = "pixels") -> str | None:
    """Why a page of w x h (`unit`) is refused for its shape (longer side above MAX_ASPECT times the shorter,
    or a side of zero), else None. No document is that thin; such a page would only be decoded, padded and
    searched for text at the cost of gigabytes."""
    short, long = min(w, h), max(w, h)
    if short <= 0 or long > MAX_ASPECT * short:
        ratio = f"{long / short:,.0f}:1" if short > 0 else "a side of zero"
        return (f"page is {w:,.0f} x {h:,.0f} {unit} ({ratio}), thinner than any document (a page's longer side "
                f"may be at most {MAX_ASPECT} times its shorter one, data.io.MAX_ASPECT); crop or re-export it")
    return None


def _to_bgr(img) -> np.ndarray:
    """A decoded PIL frame of any mode -> contiguous BGR uint8, converted a strip of rows at a time into the
    one output array: whole-frame conversions (PIL's RGB copy, its bytes for numpy, the channel swap) held
    three more copies of a 48 MP photo at once, 0.6 GB. Every conversion here is per pixel, so a strip's
    pixels come out as the whole frame's would (16-bit and float frames use the frame's maximum)."""
    from PIL import Image
    w, h = img.size
    out = np.empty((h, w, 3), np.uint8)
    rows = max(1, STRIP_PIXELS // max(1, w))
    wide = img.mode in ("I;16", "I;16B", "I;16L", "I", "F")
    hi = float(img.getextrema()[1] or 1.0) if wide else 1.0
    alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    for y in range(0, h, rows):
        strip = img.crop((0, y, w, min(h, y + rows)))
        if wide:
            grey = np.clip(np.asarray(strip, dtype=np.float64) * (255.0 / hi), 0, 255).astype(np.uint8)
            out[y:y + rows] = grey[:, :, None]
            continue
        if alpha:
            rgba = strip.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))   # transparent reads as paper, not black
            strip = Image.alpha_composite(white, rgba)
        out[y:y + rows] = np.asarray(strip.convert("RGB"))[:, :, ::-1]
    return out


def _check_doc_pixels(name: str, total: int, pages: int, max_doc_pixels: int | None) -> None:
    max_doc_pixels = MAX_DOC_PIXELS if max_doc_pixels is None else max_doc_pixels
    if total > max_doc_pixels:
        raise InputError(name, f"its {pages} page(s) add up to {total:,} pixels, above the limit of "
                               f"{max_doc_pixels:,} per document (data.io.MAX_DOC_PIXELS); pass a page range, "
                               "split the file or lower the resolution (dpi)")


def _decode_frame(img, i: int, kind: str, name: str, max_pixels: int, last: bool = False) -> np.ndarray:
    """Frame `i` of an open PIL image as BGR. A function of its own so that no local of the page
    generator still holds a page after it was yielded. `last`: the file's last page, after which the
    PIL image is closed, so its decoded frame is not kept alive while the page is read."""
    from PIL import ImageOps
    img.seek(i)
    fw, fh = img.size
    if fw * fh > max_pixels:
        raise InputError(name, f"page {i + 1} is {fw} x {fh} pixels, above the limit of {max_pixels:,}")
    if (shape := aspect_reason(fw, fh)) is not None:
        raise InputError(name, f"page {i + 1}: {shape}")
    img.load()
    frame = img
    # exif_transpose copies a frame that needs no turn too: look at the orientation first
    if kind in ("jpeg", "webp", "tiff", "png") and img.getexif().get(0x0112, 1) not in (1, None):
        frame = ImageOps.exif_transpose(img)
    page = _to_bgr(frame)
    if last:
        img.close()
    return page


def _iter_image(name: str, fp: BinaryIO, kind: str, max_pages: int, max_pixels: int,
                page_range: tuple[int, int] | None,
                max_doc_pixels: int | None = None) -> Iterator[np.ndarray]:
    from PIL import Image
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(fp)     # reads the header only
    except Image.DecompressionBombError:
        raise InputError(name, f"image header claims more pixels than allowed (limit {max_pixels:,})") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputError(name, f"corrupt or unsupported {kind.upper()} ({exc})") from None
    frames = getattr(img, "n_frames", 1) if kind == "tiff" else 1
    pages = _select_pages(name, frames, max_pages, page_range)
    w, h = img.size
    if w * h > max_pixels:
        raise InputError(name, f"image is {w} x {h} = {w * h:,} pixels, above the limit of {max_pixels:,} "
                               "(data.io.MAX_PIXELS); downscale it first")
    if (shape := aspect_reason(w, h)) is not None:
        raise InputError(name, shape)
    if len(pages) > 1:     # a TIFF's frame sizes are in its directories: reading them decodes no pixels
        total = 0
        try:
            for i in pages:
                img.seek(i)
                total += img.size[0] * img.size[1]
            img.seek(pages[0])
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise InputError(name, f"corrupt or unsupported {kind.upper()} ({exc})") from None
        _check_doc_pixels(name, total, len(pages), max_doc_pixels)

    def gen() -> Iterator[np.ndarray]:
        try:
            for i in pages:
                try:
                    yield _decode_frame(img, i, kind, name, max_pixels, last=i == pages[-1])
                except InputError:
                    raise
                except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
                    hint = " (the file is cut short; copy or download it again)" if "truncated" in str(exc) else ""
                    raise InputError(name, f"cannot decode page {i + 1}: {exc}{hint}") from None
        finally:
            img.close()

    return gen()


# --- PDF --------------------------------------------------------------------------------------------

def _pdf_without_pages(source: str | bytes, password: str | None) -> bool:
    """Whether PDFium parses `source` but finds no page in it. pypdfium2 reports that as a failed load
    with PDFium's last error code, which only a failed parse sets: stale, or "PDFium: Success"."""
    import pypdfium2.raw as pdfium_c
    pw = None if password is None else (password + "\x00").encode("utf-8")
    if isinstance(source, bytes):
        doc = pdfium_c.FPDF_LoadMemDocument64(source, len(source), pw)
    else:
        doc = pdfium_c.FPDF_LoadDocument((source + "\x00").encode("utf-8", "surrogateescape"), pw)
    if not doc:
        return False
    try:
        return pdfium_c.FPDF_GetPageCount(doc) < 1
    finally:
        pdfium_c.FPDF_CloseDocument(doc)


def _open_pdf(name: str, source: str | bytes, password: str | None):
    import pypdfium2 as pdfium
    try:
        return pdfium.PdfDocument(source, password=password)
    except pdfium.PdfiumError as exc:
        msg = str(exc)
        if _pdf_without_pages(source, password):
            raise InputError(name, "PDF has no pages; export or save the document again") from None
        if "password" in msg.lower():
            raise InputError(name, "PDF is encrypted (password-protected); remove the password "
                                   "(e.g. `qpdf --decrypt`) or pass password=...") from None
        raise InputError(name, f"broken or unsupported PDF ({msg}); re-export or repair it (e.g. `qpdf`)") from None


def _pdf_scale(w_pt: float, h_pt: float, dpi: int, max_pixels: int) -> float:
    """Render scale of a page: `dpi`, unless the page box is so large that it would render into a pixel
    bomb; then scaled down to `max_pixels`."""
    scale = dpi / 72.0
    if w_pt * h_pt * scale * scale > max_pixels:
        scale = (max_pixels / max(1.0, w_pt * h_pt)) ** 0.5
    return scale


def _render_size(pdf, i: int, dpi: int, max_pixels: int) -> tuple[int, int]:
    """(width, height) in pixels of page `i` as `_render_pdf_page` renders it (pypdfium2 rounds up)."""
    w_pt, h_pt = pdf.get_page_size(i)
    scale = _pdf_scale(w_pt, h_pt, dpi, max_pixels)
    return math.ceil(w_pt * scale), math.ceil(h_pt * scale)


def _render_later(pdf, source: str | bytes, password: str | None, i: int, name: str, dpi: int,
                  max_pixels: int) -> np.ndarray:
    """Page `i` rendered when someone asks for the picture of a page read from its text
    (SourcePage.render): from the open `pdf` while the page source is on it, else (the source was run to
    its end and closed the file) from the file opened again."""
    if pdf.raw is not None:
        return _render_pdf_page(pdf, i, name, dpi, max_pixels)
    again = _open_pdf(name, source, password)
    try:
        return _render_pdf_page(again, i, name, dpi, max_pixels)
    finally:
        again.close()


def _render_pdf_page(pdf, i: int, name: str, dpi: int, max_pixels: int) -> np.ndarray:
    """Page `i` rendered as BGR. A function of its own so that no local of the page generator (the
    pdfium bitmap, the array) still holds a page after it was yielded."""
    import pypdfium2 as pdfium
    try:
        page = pdf[i]
        w_pt, h_pt = page.get_size()
        bitmap = page.render(scale=_pdf_scale(w_pt, h_pt, dpi, max_pixels), rotation=0,
                             fill_color=(255, 255, 255, 255))
        arr = bitmap.to_numpy()
        mode = bitmap.mode
        page.close()
    except pdfium.PdfiumError as exc:
        raise InputError(name, f"cannot render page {i + 1} ({exc})") from None
    if mode in ("BGRA", "BGRX"):
        arr = arr[:, :, :3]
    elif mode == "BGR":
        pass
    elif mode == "L":
        arr = np.repeat(arr[:, :, None], 3, axis=2)
    else:   # RGB-ordered modes
        arr = arr[:, :, 2::-1] if arr.shape[2] >= 3 else arr
    return np.ascontiguousarray(arr)


def _iter_pdf(name: str, source: str | bytes, dpi: int, max_pages: int, max_pixels: int,
              page_range: tuple[int, int] | None, password: str | None,
              max_doc_pixels: int | None = None, text: bool = False) -> Iterator[Any]:
    """Rendered pages (BGR arrays), or with `text` data.textlayer.SourcePage: rendered and, where the
    page's text layer can be trusted, read from it."""
    if not 36 <= dpi <= MAX_DPI:
        raise InputError(name, f"dpi {dpi} is outside 36..{MAX_DPI}")
    import pypdfium2 as pdfium
    pdf = _open_pdf(name, source, password)
    try:
        pages = _select_pages(name, len(pdf), max_pages, page_range)
        total = 0
        for i in pages:        # page boxes only: nothing is rendered before the whole file is known to fit
            try:
                w_pt, h_pt = pdf.get_page_size(i)
            except pdfium.PdfiumError as exc:
                raise InputError(name, f"cannot read the size of page {i + 1} ({exc})") from None
            if (shape := aspect_reason(w_pt, h_pt, "pt")) is not None:    # from the MediaBox, before rendering
                raise InputError(name, f"page {i + 1}: {shape}")
            scale = _pdf_scale(w_pt, h_pt, dpi, max_pixels)
            total += int(w_pt * scale) * int(h_pt * scale)
        _check_doc_pixels(name, total, len(pages), max_doc_pixels)
    except InputError:
        pdf.close()
        raise

    def gen() -> Iterator[Any]:
        from data.textlayer import pdf_attachments, read_pdf_page
        try:
            attached = pdf_attachments(pdf, name) if text else []   # an XML invoice inside: its first page's
            for i in pages:
                if text:
                    page = read_pdf_page(pdf, i, name, _render_size(pdf, i, dpi, max_pixels),
                                         functools.partial(_render_later, pdf, source, password, i, name, dpi,
                                                           max_pixels))
                    if i == 0:
                        page.embedded = attached
                    yield page
                    del page
                else:
                    yield _render_pdf_page(pdf, i, name, dpi, max_pixels)
        finally:
            pdf.close()

    return gen()


# --- public -----------------------------------------------------------------------------------------

def iter_pages(path: str | os.PathLike, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
               max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
               password: str | None = None, max_doc_pixels: int | None = None) -> Iterator[np.ndarray]:
    """Pages of a file as BGR uint8 arrays, decoded one at a time.

    The file is checked (exists, readable, non-empty, known content, page count, pixel count) before
    this returns, so most bad inputs raise `InputError` here; damage inside a later page raises it
    while iterating. `page_range=(start, stop)` is 0-based with `stop` exclusive; `max_doc_pixels`
    (default `MAX_DOC_PIXELS`) caps the pixels of all chosen pages together. An OFD's pages are drawn
    from its XML (data.ofd.draw_page); `iter_source_pages` also hands over the text read from the file.
    """
    return _open_path(path, dpi, max_pages, max_pixels, page_range, password, max_doc_pixels, "image")


def iter_source_pages(path: str | os.PathLike, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
                      max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
                      password: str | None = None, max_doc_pixels: int | None = None,
                      reader: str | None = None) -> Iterator[Any]:
    """`iter_pages` as data.textlayer.SourcePage: each page's image and, for a PDF page whose text layer
    can be trusted or an OFD page, its lines read from the file (`page`; None: OCR the image).
    `reader="ocr"` (or PIAOJU_READER=ocr) reads nothing from the file: every page is for OCR."""
    from data.textlayer import reader_setting
    return _open_path(path, dpi, max_pages, max_pixels, page_range, password, max_doc_pixels,
                      reader_setting(reader))


def _open_path(path: str | os.PathLike, dpi: int, max_pages: int, max_pixels: int,
               page_range: tuple[int, int] | None, password: str | None, max_doc_pixels: int | None,
               mode: str) -> Iterator[Any]:
    """Pages of the file at `path`: images (`mode` "image") or SourcePages ("auto": text from the file
    where it can be trusted, "ocr": none)."""
    p = Path(path)
    size = _check_path(p)
    head = _read_head(p)
    _check_size(str(p), size, head)
    kind = sniff(head)
    if kind is None:
        raise InputError(p, f"not a {SUPPORTED} file: {_describe_unknown(head)}")
    if kind == "pdf":
        return _as_source(_iter_pdf(str(p), str(p), dpi, max_pages, max_pixels, page_range, password,
                                    max_doc_pixels, text=mode == "auto"), mode)
    if kind == "ofd":
        return _iter_ofd(str(p), _read_all(p), dpi, max_pages, max_pixels, page_range, max_doc_pixels, mode)
    if kind == "xml":
        return _iter_xml(str(p), _read_all(p), dpi, max_pages, page_range, mode)
    try:
        fp = open(p, "rb")
    except OSError as exc:
        raise InputError(p, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return _as_source(_iter_image(str(p), fp, kind, max_pages, max_pixels, page_range, max_doc_pixels), mode)
    except InputError:
        fp.close()
        raise


def _read_all(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None


def _iter_ofd(name: str, data: bytes, dpi: int, max_pages: int, max_pixels: int,
              page_range: tuple[int, int] | None, max_doc_pixels: int | None, mode: str) -> Iterator[Any]:
    """The pages of an OFD, drawn (data.ofd.draw_page): as BGR arrays (`mode` "image"), or as
    data.textlayer.SourcePage with the lines read from the file ("auto") or none ("ocr": the drawn image
    is OCR'd, to measure the OCR route). The file is read and checked before this returns."""
    if not 36 <= dpi <= MAX_DPI:
        raise InputError(name, f"dpi {dpi} is outside 36..{MAX_DPI}")
    import time

    from data.ofd import MM_PER_INCH, ofd_page, read_ofd
    t0 = time.perf_counter()
    doc = read_ofd(data, name, dpi, lambda count: _select_pages(name, count, max_pages, page_range))
    read_s = (time.perf_counter() - t0) / max(1, len(doc.pages))
    k = dpi / MM_PER_INCH
    total = 0
    for p in doc.pages:          # page boxes only: nothing is drawn before the whole file is known to fit
        w, h = round(p.width_mm * k), round(p.height_mm * k)
        if (shape := aspect_reason(w, h)) is not None:
            raise InputError(name, f"page {p.index + 1}: {shape}")
        if w * h > max_pixels:
            raise InputError(name, f"page {p.index + 1} is {w} x {h} pixels at {dpi} dpi, above the limit of "
                                   f"{max_pixels:,}")
        total += w * h
    _check_doc_pixels(name, total, len(doc.pages), max_doc_pixels)

    def gen() -> Iterator[Any]:
        for p in doc.pages:
            yield ofd_page(p, k, mode, read_s, doc.embedded(p.index) if mode == "auto" else None)

    return gen()


def _iter_xml(name: str, data: bytes, dpi: int, max_pages: int, page_range: tuple[int, int] | None,
              mode: str) -> Iterator[Any]:
    """A standalone invoice XML (data.invoice_xml) as one page: a sheet listing its fields, drawn, with
    its lines and the XML's record ("auto"); the sheet alone ("image"), or for OCR ("ocr"). XML that is
    not well-formed, declares a DOCTYPE/entities, or holds no invoice field is refused here."""
    if not 36 <= dpi <= MAX_DPI:
        raise InputError(name, f"dpi {dpi} is outside 36..{MAX_DPI}")
    from data.invoice_xml import record_from_xml, xml_page
    from data.textlayer import SourcePage
    _select_pages(name, 1, max_pages, page_range)
    rec = record_from_xml(data, name, "XML file")
    if not rec:
        raise InputError(name, "is XML but holds no invoice field we know (a 数电票 XML has EInvoice/Header/EIid, "
                               "SellerInformation, BasicInformation ...); export the invoice as PDF, OFD or its XML")
    source = xml_page(rec, dpi)
    item: Any = source.image if mode == "image" else source if mode == "auto" else SourcePage(source.image)
    return iter([item])


def _as_source(pages: Iterator[Any], mode: str) -> Iterator[Any]:
    """`pages` as they are for `mode` "image", else as SourcePages (an image is wrapped in one, for OCR).
    The wrapper holds no page while the next one is decoded."""
    if mode == "image":
        return pages

    def gen() -> Iterator[Any]:
        while True:
            page = _next_source(pages)
            if page is None:
                return
            yield page
            del page

    return gen()


def _next_source(pages: Iterator[Any]) -> Any:
    from data.source_page import as_source_page
    return as_source_page(next(pages, None))


def load_pages(path: str | os.PathLike, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
               max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
               password: str | None = None) -> list[np.ndarray]:
    """All pages of a file (see `iter_pages`); prefer `iter_pages` for long PDFs."""
    return list(iter_pages(path, dpi, max_pages, max_pixels, page_range, password))


def iter_image_bytes(data: bytes, filename: str, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
                     max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
                     password: str | None = None, max_doc_pixels: int | None = None) -> Iterator[np.ndarray]:
    """`iter_pages` for an upload held in memory; `filename` only names it in errors."""
    return _open_bytes(data, filename, dpi, max_pages, max_pixels, page_range, password, max_doc_pixels, "image")


def iter_source_bytes(data: bytes, filename: str, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
                      max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
                      password: str | None = None, max_doc_pixels: int | None = None,
                      reader: str | None = None) -> Iterator[Any]:
    """`iter_source_pages` for an upload held in memory; `filename` only names it in errors."""
    from data.textlayer import reader_setting
    return _open_bytes(data, filename, dpi, max_pages, max_pixels, page_range, password, max_doc_pixels,
                       reader_setting(reader))


def _open_bytes(data: bytes, filename: str, dpi: int, max_pages: int, max_pixels: int,
                page_range: tuple[int, int] | None, password: str | None, max_doc_pixels: int | None,
                mode: str) -> Iterator[Any]:
    _check_size(filename, len(data), data[:1024])
    kind = sniff(data[:1024])
    if kind is None:
        raise InputError(filename, f"not a {SUPPORTED} file: {_describe_unknown(data[:1024])}")
    if kind == "pdf":
        return _as_source(_iter_pdf(filename, data, dpi, max_pages, max_pixels, page_range, password,
                                    max_doc_pixels, text=mode == "auto"), mode)
    if kind == "ofd":
        return _iter_ofd(filename, data, dpi, max_pages, max_pixels, page_range, max_doc_pixels, mode)
    if kind == "xml":
        return _iter_xml(filename, data, dpi, max_pages, page_range, mode)
    return _as_source(_iter_image(filename, io.BytesIO(data), kind, max_pages, max_pixels, page_range,
                                  max_doc_pixels), mode)


def load_image_bytes(data: bytes, filename: str, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
                     max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
                     password: str | None = None) -> list[np.ndarray]:
    """All pages of an upload (bytes + its file name, used in messages)."""
    return list(iter_image_bytes(data, filename, dpi, max_pages, max_pixels, page_range, password))


def page_count(path: str | os.PathLike, password: str | None = None) -> int:
    """Number of pages without decoding any (for progress bars); raises InputError like iter_pages."""
    p = Path(path)
    size = _check_path(p)
    head = _read_head(p)
    _check_size(str(p), size, head)
    kind = sniff(head)
    if kind is None:
        raise InputError(p, f"not a {SUPPORTED} file: {_describe_unknown(head)}")
    return _count_pages(str(p), kind, str(p), password)


def page_count_bytes(data: bytes, filename: str, password: str | None = None) -> int:
    """`page_count` for an upload held in memory (`filename` only names it in errors)."""
    _check_size(filename, len(data))
    kind = sniff(data[:1024])
    if kind is None:
        raise InputError(filename, f"not a {SUPPORTED} file: {_describe_unknown(data[:1024])}")
    return _count_pages(filename, kind, data, password)


def _count_pages(name: str, kind: str, source: str | bytes, password: str | None) -> int:
    """Pages of a sniffed file (`source`: its path, or its bytes): a PDF's page count, a TIFF's
    frames, an OFD's pages, 1 for any other image."""
    if kind == "ofd":
        from data.ofd import count_pages
        return count_pages(source if isinstance(source, bytes) else _read_all(Path(source)), name)
    if kind == "pdf":
        pdf = _open_pdf(name, source, password)
        try:
            return len(pdf)
        finally:
            pdf.close()
    if kind != "tiff":
        return 1    # an image, or an invoice XML (one page: data.invoice_xml.xml_page)
    from PIL import Image
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as img:
            return getattr(img, "n_frames", 1)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(name, f"corrupt TIFF ({exc})") from None
