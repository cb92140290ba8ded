"""The inference pipeline: a file (or uploaded bytes) in, one `Document` out (DESIGN section 2).

    decode (data/io: limits, every page of a PDF / multi-page TIFF)
      -> OCR per page (models/ocr: PP-OCR det, angle, rec)
      -> extraction (models/extractor: doc type, fields, items, pairs, validation warnings)

Error policy, the same for every entry point: these functions do not raise for anything that is
wrong with a document (corrupt, empty, unsupported, too large, unreadable, or a failure while reading
it). They return a `Document` whose `error` is {"type", "message"}, with whatever pages were read, so
the UI can show the message and the batch CLI can write an error row and go on. They do raise for
problems with the installation that no document can fix (a model directory that does not exist).

Models are loaded once per process: the OCR engine by `models.ocr.get_engine`, the extractor by
`load_extractor` below (both cached). `Document.timings` holds seconds per stage: decode, ocr (and
its det/cls/rec parts), extract, total.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator
from typing import Any, Callable

import numpy as np

from data.document import Document, Page

PageCallback = Callable[[int, int], None]   # (pages done, pages in the document)


@dataclass
class Analysis:
    """A processed document plus its upright page images (BGR), for drawing in the UI or --draw."""
    document: Document
    images: list[np.ndarray] = field(default_factory=list)


# --- models, loaded once per process ------------------------------------------------------------------

def ocr_engine() -> Any:
    from models.ocr import get_engine
    return get_engine()


def extractor_available(model_dir: str | None = None) -> bool:
    """True when extraction can run: models/extractor.py is installed and, for the default model,
    models/default holds a model. Until then the pipeline returns the OCR Document only."""
    try:
        from models.extractor import DEFAULT_MODEL_DIR, is_model_dir
    except ImportError:
        return False
    return model_dir is not None or is_model_dir(DEFAULT_MODEL_DIR)


@functools.lru_cache(maxsize=4)
def load_extractor(model_dir: str | None = None) -> Any:
    """The extractor for `model_dir` (None: the bundled default). Raises FileNotFoundError with the
    fix when the directory does not hold a model."""
    from models.extractor import DEFAULT_MODEL_DIR, get_extractor, is_model_dir
    path = str(model_dir or DEFAULT_MODEL_DIR)
    if not is_model_dir(path):
        raise FileNotFoundError(f"{path} is not a model directory (it needs config.json, "
                                "model_state.pdparams and vocab.txt); pass a directory exported by "
                                "`python -m training`, or leave the model choice at the bundled default")
    return get_extractor(path)


def warm_up(model_dir: str | None = None) -> None:
    """Load every model now (workers call this once so the first document is not slow)."""
    ocr_engine()
    if extractor_available(model_dir):
        load_extractor(model_dir)


# --- stages ---------------------------------------------------------------------------------------------

def _error_type(exc: BaseException) -> str:
    return type(exc).__name__


def _upright(image: np.ndarray, rotation: int) -> np.ndarray:
    """The page image turned the way OCR turned it, so boxes line up when drawn."""
    import cv2
    turns = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    return cv2.rotate(image, turns[rotation]) if rotation in turns else image


def _as_bgr(image: Any) -> np.ndarray:
    """data.io hands pages over as BGR uint8 arrays; accept a PIL image too (converted from RGB)."""
    if isinstance(image, np.ndarray):
        return image
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


Pages = tuple[Iterator[np.ndarray], int]   # (page images, decoded one at a time; page count)


def _open_file(path: str) -> Pages:
    """Check the file and count its pages; pages are decoded one at a time as OCR asks for them,
    so a long PDF is never all in memory (raises data.io.InputError for bad files)."""
    from data.io import iter_pages, page_count
    return iter_pages(path), page_count(path)


def _open_bytes(data: bytes, filename: str) -> Pages:
    from data.io import load_image_bytes
    pages = load_image_bytes(data, filename)   # uploads are small; the count drives the progress bar
    return iter(pages), len(pages)


def analyse_pages(pages: Iterable[np.ndarray], total: int, source: str, model_dir: str | None = None,
                  doc_type: str | None = None, on_page: PageCallback | None = None,
                  timings: dict[str, float] | None = None, keep_images: bool = True) -> Analysis:
    """OCR every page, then extract. Time spent pulling the next page from `pages` counts as decode
    (data.io decodes lazily); `keep_images=False` drops page images once read (batch without --draw)."""
    timings = dict(timings or {})
    timings.setdefault("decode", 0.0)
    timings.setdefault("ocr", 0.0)
    doc = Document(source=source, timings=timings)
    upright: list[np.ndarray] = []
    stage = "decode"
    try:
        engine = ocr_engine()
        page_iter = iter(pages)
        while True:
            stage, t0 = "decode", time.perf_counter()
            image = next(page_iter, None)
            timings["decode"] += time.perf_counter() - t0
            if image is None:
                break
            stage, t0 = "ocr", time.perf_counter()
            page: Page = engine.read(_as_bgr(image), page_index=len(doc.pages), timings=timings)
            timings["ocr"] += time.perf_counter() - t0
            doc.pages.append(page)
            if keep_images:
                upright.append(_upright(_as_bgr(image), page.rotation))
            if on_page:
                on_page(len(doc.pages), total)
    except Exception as exc:  # one bad page fails the document, not the batch or the UI
        what = "reading" if stage == "decode" else "OCR of"
        doc.error = {"type": _error_type(exc),
                     "message": f"{what} page {len(doc.pages) + 1} of {total} failed: {exc}"}
        return Analysis(doc, upright)

    from models.ocr import POOR_READ, read_quality
    for page in doc.pages:
        quality = read_quality(page)
        if quality is not None and quality < POOR_READ:
            doc.warnings.append(f"page {page.index + 1} reads poorly (mean OCR confidence {quality:.2f}): the "
                                f"image is too blurred, noisy or low-resolution for reliable values; check them "
                                f"against the page or scan it again at a higher resolution")
        elif quality is None:
            doc.warnings.append(f"page {page.index + 1}: almost no text was found ({len(page.lines)} line(s)); "
                                f"if the page has text, it is too small or blurred to read: scan it again at a "
                                f"higher resolution")
    if extractor_available(model_dir):
        t0 = time.perf_counter()
        extractor = load_extractor(model_dir)   # installation problems raise: no document fixes them
        try:
            doc = extractor.extract(doc, doc_type=doc_type)
        except Exception as exc:
            doc.error = {"type": _error_type(exc), "message": f"field extraction failed: {exc}"}
        doc.timings = timings
        timings["extract"] = time.perf_counter() - t0
    else:
        doc.doc_type = doc_type
        doc.warnings.append("no extraction model is installed (models/extractor.py with a model in "
                            "models/default), so only the OCR text is shown")
    return Analysis(doc, upright)


def _finish(analysis: Analysis, started: float) -> Analysis:
    analysis.document.timings["total"] = time.perf_counter() - started
    return analysis


def _input_failure(source: str, exc: Exception, timings: dict[str, float], started: float) -> Analysis:
    doc = Document(source=source, timings=timings, error={"type": _error_type(exc), "message": str(exc)})
    return _finish(Analysis(doc), started)


def analyse_file(path: str, model_dir: str | None = None, doc_type: str | None = None,
                 on_page: PageCallback | None = None, keep_images: bool = True) -> Analysis:
    """Decode, OCR and extract every page of the file at `path`."""
    started = time.perf_counter()
    try:
        pages, total = _open_file(path)
    except Exception as exc:  # InputError for bad or unreadable files
        return _input_failure(os.path.basename(path), exc, {"decode": time.perf_counter() - started},
                              started)
    timings = {"decode": time.perf_counter() - started}
    return _finish(analyse_pages(pages, total, os.path.basename(path), model_dir, doc_type, on_page,
                                 timings, keep_images), started)


def analyse_bytes(data: bytes, filename: str, model_dir: str | None = None, doc_type: str | None = None,
                  on_page: PageCallback | None = None) -> Analysis:
    """As `analyse_file`, for an upload held in memory (`filename` names it in messages)."""
    started = time.perf_counter()
    try:
        pages, total = _open_bytes(data, filename)
    except Exception as exc:
        return _input_failure(filename, exc, {"decode": time.perf_counter() - started}, started)
    timings = {"decode": time.perf_counter() - started}
    return _finish(analyse_pages(pages, total, filename, model_dir, doc_type, on_page, timings), started)


def process_file(path: str, model_dir: str | None = None, doc_type: str | None = None) -> Document:
    """The Document for one file; bad input gives `Document.error` instead of an exception."""
    return analyse_file(path, model_dir, doc_type).document


def process_bytes(data: bytes, filename: str, model_dir: str | None = None,
                  doc_type: str | None = None) -> Document:
    """The Document for uploaded bytes; bad input gives `Document.error` instead of an exception."""
    return analyse_bytes(data, filename, model_dir, doc_type).document
