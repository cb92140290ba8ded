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
import io
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

MAX_FILE_BYTES = 256 * 1024 * 1024   # larger files are refused before reading (a 600-page scan is ~200 MB)
MAX_PIXELS = 64_000_000              # per page; 8000 x 8000. A 48 MP phone photo passes, a pixel bomb does not
MAX_PAGES = 500                      # per document; pass page_range to read part of a longer one
MAX_DOC_PIXELS = 2_000_000_000       # all pages of one file together: 500 A4 pages at 200 dpi (3.9 MP each)
                                     # pass, a file of many pixel-bomb pages (500 x 64 MP) is refused before
                                     # any page is rendered: it would take hours and gigabytes
DEFAULT_DPI = 200                    # PDF render resolution: PP-OCR reads 8-pt print reliably from here up
MAX_DPI = 600

SUPPORTED = "JPEG, PNG, BMP, WebP, TIFF or PDF"


class InputError(ValueError):
    """A file (or upload) that cannot be turned into pages. `path` names it, `reason` says why and what to do."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def sniff(head: bytes) -> str | None:
    """'jpeg' | 'png' | 'bmp' | 'webp' | 'tiff' | 'pdf' from a file's first bytes, or None."""
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
    return None


def _describe_unknown(head: bytes) -> str:
    if not head.strip(b"\x00"):
        return "content is all zero bytes"
    try:
        head[:256].decode("utf-8")
        return "content looks like text, not an image or PDF"
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


def _check_path(path: Path) -> int:
    """Size in bytes of a readable regular file, else InputError."""
    if not path.exists():
        raise InputError(path, _missing_reason(path))
    if path.is_dir():
        raise InputError(path, "is a directory; pass the files inside it (the batch command walks folders)")
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
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

def _to_bgr(img) -> np.ndarray:
    """A decoded PIL frame of any mode -> contiguous BGR uint8."""
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(img, dtype=np.float64)
        hi = arr.max() or 1.0
        grey = np.clip(arr * (255.0 / hi), 0, 255).astype(np.uint8)
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        from PIL import Image
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))   # transparent reads as paper, not black
        img = Image.alpha_composite(white, rgba)
    rgb = np.asarray(img.convert("RGB"))
    return np.ascontiguousarray(rgb[:, :, ::-1])


def _check_doc_pixels(name: str, total: int, pages: int, max_doc_pixels: int | None) -> None:
    max_doc_pixels = MAX_DOC_PIXELS if max_doc_pixels is None else max_doc_pixels
    if total > max_doc_pixels:
        raise InputError(name, f"its {pages} page(s) add up to {total:,} pixels, above the limit of "
                               f"{max_doc_pixels:,} per document (data.io.MAX_DOC_PIXELS); pass a page range, "
                               "split the file or lower the resolution (dpi)")


def _decode_frame(img, i: int, kind: str, name: str, max_pixels: int) -> np.ndarray:
    """Frame `i` of an open PIL image as BGR. A function of its own so that no local of the page
    generator still holds a page after it was yielded."""
    from PIL import ImageOps
    img.seek(i)
    fw, fh = img.size
    if fw * fh > max_pixels:
        raise InputError(name, f"page {i + 1} is {fw} x {fh} pixels, above the limit of {max_pixels:,}")
    img.load()
    frame = ImageOps.exif_transpose(img) if kind in ("jpeg", "webp", "tiff", "png") else img
    return _to_bgr(frame)


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
                    yield _decode_frame(img, i, kind, name, max_pixels)
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
              max_doc_pixels: int | None = None) -> Iterator[np.ndarray]:
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
            scale = _pdf_scale(w_pt, h_pt, dpi, max_pixels)
            total += int(w_pt * scale) * int(h_pt * scale)
        _check_doc_pixels(name, total, len(pages), max_doc_pixels)
    except InputError:
        pdf.close()
        raise

    def gen() -> Iterator[np.ndarray]:
        try:
            for i in pages:
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
    (default `MAX_DOC_PIXELS`) caps the pixels of all chosen pages together.
    """
    p = Path(path)
    size = _check_path(p)
    head = _read_head(p)
    _check_size(str(p), size, head)
    kind = sniff(head)
    if kind is None:
        raise InputError(p, f"not a {SUPPORTED} file: {_describe_unknown(head)}")
    if kind == "pdf":
        return _iter_pdf(str(p), str(p), dpi, max_pages, max_pixels, page_range, password, max_doc_pixels)
    try:
        fp = open(p, "rb")
    except OSError as exc:
        raise InputError(p, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return _iter_image(str(p), fp, kind, max_pages, max_pixels, page_range, max_doc_pixels)
    except InputError:
        fp.close()
        raise


def load_pages(path: str | os.PathLike, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
               max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
               password: str | None = None) -> list[np.ndarray]:
    """All pages of a file (see `iter_pages`); prefer `iter_pages` for long PDFs."""
    return list(iter_pages(path, dpi, max_pages, max_pixels, page_range, password))


def iter_image_bytes(data: bytes, filename: str, dpi: int = DEFAULT_DPI, max_pages: int = MAX_PAGES,
                     max_pixels: int = MAX_PIXELS, page_range: tuple[int, int] | None = None,
                     password: str | None = None, max_doc_pixels: int | None = None) -> Iterator[np.ndarray]:
    """`iter_pages` for an upload held in memory; `filename` only names it in errors."""
    _check_size(filename, len(data), data[:1024])
    kind = sniff(data[:1024])
    if kind is None:
        raise InputError(filename, f"not a {SUPPORTED} file: {_describe_unknown(data[:1024])}")
    if kind == "pdf":
        return _iter_pdf(filename, data, dpi, max_pages, max_pixels, page_range, password, max_doc_pixels)
    return _iter_image(filename, io.BytesIO(data), kind, max_pages, max_pixels, page_range, max_doc_pixels)


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
    frames, 1 for any other image."""
    if kind == "pdf":
        pdf = _open_pdf(name, source, password)
        try:
            return len(pdf)
        finally:
            pdf.close()
    if kind != "tiff":
        return 1
    from PIL import Image
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as img:
            return getattr(img, "n_frames", 1)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(name, f"corrupt TIFF ({exc})") from None
