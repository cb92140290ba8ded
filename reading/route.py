"""The reading route (see reading/__init__.py): a file (or uploaded bytes) in, one `Document` per
document in it out (DESIGN section 2).

    decode (data/io: limits, every page of a PDF / OFD / multi-page TIFF, one page at a time)
      -> per page: its text from the file where it holds one that can be trusted (a PDF's text layer,
         an OFD's text objects: data/textlayer.py, data/ofd.py), else OCR (models/ocr: PP-OCR det,
         angle, rec); `Page.reader` says which
      -> extraction per document (models/extractor: doc type, fields, items, pairs, validation warnings)

A file may hold several documents (two invoices scanned into one PDF); which pages make one document
is decided here (see "documents in a file" below) and each is extracted from its own pages only.
Pages are processed one at a time and dropped, so memory does not grow with the page count.

Error policy, the same for every entry point: these functions do not raise for anything that is
wrong with a document (corrupt, empty, unsupported, too large, unreadable, or a failure while reading
it). They return a `Document` whose `error` is {"type", "message"}, with whatever pages were read, so
the UI can show the message and the batch CLI can write an error row and go on. They do raise for
problems with the installation that no document can fix (a model directory that does not exist).

Models are loaded once per process: the OCR engine by `models.ocr.get_engine`, the extractor by
`load_extractor` below (both cached). `Document.timings` holds seconds per stage: decode, ocr (and
its det/cls/rec parts) or text_layer (text read from the file, ruled lines found), extract, total.
"""
from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from data.document import Document, Page, display_name
from reading.continuation import InvoiceKey, continues, invoice_key, invoice_titles, join

PageCallback = Callable[[int, int], None]   # (pages done, pages in the document)
StageCallback = Callable[[str, int, int], None]
# (stage starting: "decode" | "ocr" | "detect" | "recognise" | "extract", its page 1..N, pages in the file):
# the UI's progress; "detect" and "recognise" come from the OCR engine when its `read` takes `on_stage`


def _ocr_stage(on_stage: StageCallback, page: int, total: int, stage: str) -> None:
    on_stage(stage, page, total)


def _takes_stages(engine: Any) -> bool:
    import inspect
    try:
        return "on_stage" in inspect.signature(engine.read).parameters
    except (TypeError, ValueError):
        return False


PREVIEW_SIDE = 1600   # longest side, in pixels, of the page previews the UI keeps (a 200-dpi A4 page is 2339)
PREVIEW_QUALITY = 90  # previews are kept JPEG-encoded: ~0.1-0.4 MB a page instead of 5.4 MB decoded, so 500
                      # pages of previews stay far below the memory of one full-size page being read


@dataclass
class Analysis:
    """A processed file.

    `document` is the file: every OCR page, notes about the file (pages skipped as blank, pages read
    poorly) and the error when the file failed as a whole. `results` holds one Document per document
    found in the file (see `split_pages`), each with only its own pages (`Page.index` stays the page's
    0-based index in the file), its own fields, items, pairs and warnings, `part`/`parts` and
    `source` = the file name; it is empty when the file failed. When the file holds exactly one
    document, `document` also carries that document's type, fields, items and pairs, so callers that
    read one document per file keep working. `images` holds, per page of the file, the upright page
    image shrunk to a preview (JPEG bytes; `image(i)` decodes one) when one was asked for (`preview`),
    else nothing: full-size pages are handed to `on_image` one at a time and dropped. (Analyses made
    elsewhere, e.g. by tests, may hold arrays there; `image` returns those as they are.)"""
    document: Document
    images: list[np.ndarray | bytes] = field(default_factory=list)
    results: list[Document] = field(default_factory=list)

    def image(self, index: int) -> np.ndarray:
        """The kept image of page `index` (0-based, in the file) as BGR."""
        kept = self.images[index]
        if isinstance(kept, np.ndarray):
            return kept
        import cv2
        image = cv2.imdecode(np.frombuffer(kept, np.uint8), cv2.IMREAD_COLOR)
        if image is None:       # the preview was encoded here, so this means memory or library trouble
            raise ValueError(f"the kept preview of page {index + 1} cannot be decoded")
        return image

    def parts(self) -> list[Document]:
        """The documents to report: `results`, or the file document alone when there are none (the
        file failed, or an Analysis built without results by a test or a custom processor)."""
        return self.results or [self.document]


# --- models, loaded once per process ------------------------------------------------------------------

def ocr_engine() -> Any:
    from models.ocr import get_engine
    return get_engine()


def extractor_available(model_dir: str | None = None) -> bool:
    """True when extraction can run: models/extractor.py is installed and, for the default model,
    models/default holds a model. Until then the route returns the OCR Document only."""
    try:
        from models.extractor import DEFAULT_MODEL_DIR, is_model_dir
    except ImportError:
        return False
    return model_dir is not None or is_model_dir(DEFAULT_MODEL_DIR)


@functools.lru_cache(maxsize=4)
def load_extractor(model_dir: str | None = None) -> Any:
    """The extractor for `model_dir` (None: the bundled default). Raises FileNotFoundError with the
    fix when the directory does not hold a model."""
    from models.extractor import DEFAULT_MODEL_DIR, get_extractor
    from models.model_dir import model_dir_problem
    path = str(model_dir or DEFAULT_MODEL_DIR)
    problem = model_dir_problem(path)
    if problem is not None:
        raise FileNotFoundError(f"{path} is not a model directory ({problem}); pass a directory exported by "
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


def upright(image: np.ndarray, rotation: int) -> np.ndarray:
    """The page image turned the way OCR turned it (`Page.rotation`), so boxes line up when drawn."""
    import cv2
    turns = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
    return cv2.rotate(image, turns[rotation]) if rotation in turns else image


def _as_bgr(image: Any) -> np.ndarray:
    """data.io hands pages over as BGR uint8 arrays; accept a PIL image too (converted from RGB)."""
    if isinstance(image, np.ndarray):
        return image
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


def _preview(image: np.ndarray, side: int) -> bytes:
    """`image` with its longest side at most `side` pixels, JPEG-encoded (a preview for the UI)."""
    import cv2
    h, w = image.shape[:2]
    if max(h, w) > side:
        k = side / max(h, w)
        image = cv2.resize(image, (max(1, round(w * k)), max(1, round(h * k))), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, PREVIEW_QUALITY])
    if not ok:
        raise ValueError("the page preview could not be encoded")
    return encoded.tobytes()


Pages = tuple[Iterator[Any], int]   # (data.textlayer.SourcePage or page images, decoded one at a time; page count)
ImageSink = Callable[[np.ndarray, Page, "Document | None"], None]
# (the upright full-size page image, its page, the result it belongs to or None for a page skipped as
# blank): called once per page as soon as the page is processed; the image is dropped right after


def _open_file(path: str) -> Pages:
    """Check the file and count its pages; pages are decoded one at a time as OCR asks for them,
    so a long PDF is never all in memory (raises data.io.InputError for bad files). A PDF page with a
    usable text layer and an OFD page come with their lines read from the file (data.textlayer)."""
    from data.io import iter_source_pages, page_count
    return iter_source_pages(path), page_count(path)


def _open_bytes(data: bytes, filename: str) -> Pages:
    """As `_open_file` for an upload: decoded lazily too (a small upload can hold 500 huge pages)."""
    from data.io import iter_source_bytes, page_count_bytes
    return iter_source_bytes(data, filename), page_count_bytes(data, filename)


def page_image(data: bytes, filename: str, index: int, rotation: int = 0) -> np.ndarray:
    """Page `index` (0-based) of an upload decoded again at full size and turned upright the way OCR
    turned it (`Page.rotation`): the UI keeps only previews and asks for a page when it needs one."""
    from data.io import iter_image_bytes
    image = next(iter_image_bytes(data, filename, page_range=(index, index + 1)))
    return upright(_as_bgr(image), rotation)


# --- documents in a file ----------------------------------------------------------------------------------
#
# Which pages make one document (the rule the README states): every page with text is a document of its
# own, extracted from that page alone, unless it continues the invoice before it (below); pages with no or
# almost no text (`is_blank`: the back of a sheet, a separator, an empty scan) start no document and are
# skipped with a note in the result before them (in the first result when they come first). Two invoices
# scanned into one PDF give two results; a 3-page TIFF of three receipts gives three. A file with no page
# of text at all gives one result holding all its pages, with the "almost no text" warnings, so an upload
# never comes back with nothing to show.
# Continuation, on evidence only (reading/continuation.py): after a result of an invoice-like type with an
# invoice number, a following page that prints that number (and the invoice's code, where it has one) and no
# invoice title, 价税合计 or other invoice's number of its own (a goods list, 销货清单) joins that result: it
# is decided on the page's raw text before extraction, the page is extracted once with the invoice's type for
# its item rows, which follow the invoice's rows in page order and replace its (详见销货清单) row, and the
# joined document is validated again (its rows against its 合计). Blank pages between keep the invoice open.
# Any other multi-page document (a two-page form, an invoice list that does not print the number) still
# comes out as one result per page: guessing wrong mixes two documents' values, which is worse than a
# split the user can see.

def is_blank(page: Page) -> bool:
    """No or almost no text: fewer than three lines of two or more characters (where
    models.ocr.read_quality gives no score)."""
    from models.ocr import read_quality
    return read_quality(page) is None


def _page_warnings(page: Page) -> list[str]:
    from models.ocr import POOR_READ, read_quality
    quality = read_quality(page)
    if quality is None:
        return [f"page {page.index + 1}: almost no text was found ({len(page.lines)} line(s)); "
                f"if the page has text, it is too small or blurred to read: scan it again at a "
                f"higher resolution"]
    if quality < POOR_READ:
        return [f"page {page.index + 1} reads poorly (mean OCR confidence {quality:.2f}): the "
                f"image is too blurred, noisy or low-resolution for reliable values; check them "
                f"against the page or scan it again at a higher resolution"]
    return []


def _skipped_note(page: Page, total: int) -> str:
    return (f"page {page.index + 1} of {total} was skipped as blank: no or almost no text was found on it "
            f"({len(page.lines)} line(s)); if it has text, scan it again at a higher resolution")


def _add_timings(into: dict[str, float], more: dict[str, float]) -> None:
    for key, secs in more.items():
        into[key] = into.get(key, 0.0) + secs


def _total(timings: dict[str, float]) -> float:
    """A document's total seconds: its pages' decoding, reading (OCR or text layer) and its extraction."""
    return sum(timings.get(k, 0.0) for k in ("decode", "ocr", "text_layer", "extract"))


def _extract(pages: list[Page], page_timings: list[dict[str, float]], source: str, extractor: Any,
             doc_type: str | None, embedded: list[Any] | None = None) -> Document:
    """One result: a Document of `pages` only, extracted from them alone. `embedded`: what the file states
    about the fields (data.embedded: OFD tags, custom data, an XML invoice), met with the extraction after
    it: fills what it left empty, a disagreement is a warning. A standalone XML invoice's sheet
    (reader "embedded_xml") is not extracted: its fields are the XML's."""
    timings: dict[str, float] = {}
    for t in page_timings:
        _add_timings(timings, t)
    result = Document(source=source, pages=list(pages), timings=timings)
    for page in pages:
        result.warnings += _page_warnings(page)
    t0 = time.perf_counter()
    from_xml = bool(embedded) and all(p.reader == "embedded_xml" for p in pages)
    if from_xml:
        from data.embedded import apply_embedded
        result.doc_type = doc_type
        apply_embedded(result, embedded or [])
        timings["extract"] = time.perf_counter() - t0
    elif extractor is not None:
        try:
            extractor.extract(result, doc_type=doc_type)
            if embedded:
                from data.embedded import apply_embedded
                apply_embedded(result, embedded)
        except Exception as exc:   # this document fails, not the file's other documents
            result.error = {"type": _error_type(exc), "message": f"field extraction failed: {exc}"}
        result.timings = timings
        timings["extract"] = time.perf_counter() - t0
    else:
        result.doc_type = doc_type
        result.warnings.append("no extraction model is installed (models/extractor.py with a model in "
                               "models/default), so only the OCR text is shown")
    timings["total"] = _total(timings)
    return result


def _invoice_titles(extractor: Any) -> list[str]:
    """The invoice titles a continuation page must not print: of the model's schemas, or of data/schemas
    for a stand-in extractor that has none."""
    schemas = getattr(extractor, "schemas", None)
    if not isinstance(schemas, dict):
        from data.schemas import list_schemas, load_schema
        schemas = {name: load_schema(name) for name in list_schemas()}
    return invoice_titles(schemas.values())


def _continue(result: Document, page: Page, page_timings: dict[str, float], source: str, extractor: Any
              ) -> float:
    """Join `page`, which continues the invoice `result` (reading/continuation.py), to it: the page extracted
    alone with the invoice's type for its item rows, then the joined document validated again (the
    extractor's own validation and calibration; a stand-in extractor without `revalidate` is not). Returns
    the seconds extraction took."""
    part = _extract([page], [page_timings], source, extractor, result.doc_type)
    join(result, part)
    t0 = time.perf_counter()
    revalidate = getattr(extractor, "revalidate", None)
    if revalidate is not None and result.error is None:
        revalidate(result)
    seconds = part.timings.get("extract", 0.0) + time.perf_counter() - t0
    _add_timings(result.timings, {k: v for k, v in part.timings.items() if k not in ("extract", "total")})
    _add_timings(result.timings, {"extract": seconds})
    result.timings["total"] = _total(result.timings)
    return seconds


def extract_pages(pages: list[Page], source: str, model_dir: str | None = None,
                  doc_type: str | None = None) -> Document:
    """One document of pages already read, extracted as the route extracts each document of a file (the
    same extractor, page warnings and error policy): for callers that read a page once and extract it
    again with other settings, e.g. evaluation telling the extractor the document type."""
    extractor = load_extractor(model_dir) if extractor_available(model_dir) else None
    return _extract(list(pages), [], source, extractor, doc_type)


class ReadPage:
    """One page as the route read it: `page` its lines (OCR or the file's own text, with ruled lines),
    `timings` seconds per stage for this page (decode, ocr and its parts, or text_layer and rules),
    `embedded` what the file states about its fields, and `image` the upright full-size page. A page read
    from the file's own text is drawn only when `image` is first asked for (its time counts as decode),
    and only while the page source is on this page: before the reader is asked for the next one."""

    def __init__(self, source: Any, page: Page, timings: dict[str, float]) -> None:
        self.page, self.timings, self.embedded = page, timings, source.embedded
        self._source: Any = source
        self._image: np.ndarray | None = None

    @property
    def image(self) -> np.ndarray:
        if self._image is None:
            t0 = time.perf_counter()
            self._image = upright(_as_bgr(self._source.picture()), self.page.rotation)
            self._source = None
            self.timings["decode"] = self.timings.get("decode", 0.0) + time.perf_counter() - t0
        return self._image


class PageReader:
    """The route's page reading, one page at a time: each page of a page source (`_open_file`,
    `_open_bytes`) decoded, then read from the file's own text where it holds one that can be trusted
    (with its ruled lines from the strokes the file draws, or found in the image where those are not the
    whole picture), else OCR'd; pages come out as `ReadPage`s. `analyse_pages` extracts from them;
    `read_file_pages` (and the read cache, reading/cache.py) keeps the pages only, so a cached reading is
    the route's reading. `stage` is what it was doing last ("decode", "ocr", "text_layer"): the caller's
    error message names it when iterating raises. The OCR engine is loaded at the first page that needs
    OCR: a born-digital file needs none, and none of its pages is drawn unless someone looks at it."""

    def __init__(self, pages: Iterable[Any], total: int, on_stage: StageCallback | None = None) -> None:
        self.pages, self.total, self.on_stage = pages, total, on_stage
        self.stage = "decode"
        self.done = 0               # pages handed out
        self._engine: Any = None

    def _ocr(self) -> Any:
        """The OCR engine, loaded the first time a page needs it."""
        if self._engine is None:
            self._engine = ocr_engine()
        return self._engine

    def __iter__(self) -> Iterator[ReadPage]:
        from data.source_page import as_source_page
        from models.ocr.rulings import add_rulings, rulings_from_segments
        from reading.pictures import read_pictures
        total, on_stage = self.total, self.on_stage
        page_iter = iter(self.pages)
        while True:
            if on_stage and self.done < total:
                on_stage("decode", self.done + 1, total)
            self.stage, t0 = "decode", time.perf_counter()
            source = as_source_page(next(page_iter, None))
            if source is None:
                return
            read_s = source.seconds
            page_timings = {"decode": time.perf_counter() - t0 - read_s}
            number = self.done + 1
            if source.page is not None:     # read from the file itself (a PDF's text layer, an OFD): no OCR
                self.stage, t0 = "text_layer", time.perf_counter()
                page = source.page
                page.index = self.done
                if source.pictures:         # text only a picture holds (reading/pictures.py)
                    if on_stage:
                        on_stage("ocr", number, total)
                    self.stage, t1 = "ocr", time.perf_counter()
                    read_pictures(page, source.pictures, self._ocr(), page_timings)
                    page_timings["ocr"] = time.perf_counter() - t1
                    self.stage = "text_layer"
                if source.segments is not None:
                    page.rules = rulings_from_segments(source.segments, [ln.quad for ln in page.lines])
                else:
                    add_rulings(page, _as_bgr(source.picture()))
                page_timings["rules"] = time.perf_counter() - t0 - page_timings.get("ocr", 0.0)
                page_timings["text_layer"] = read_s + page_timings["rules"]
            else:
                if on_stage:
                    on_stage("ocr", number, total)
                self.stage, t0 = "ocr", time.perf_counter()
                engine = self._ocr()
                ocr_stages = ({"on_stage": functools.partial(_ocr_stage, on_stage, number, total)}
                              if on_stage and _takes_stages(engine) else {})
                page = engine.read(_as_bgr(source.picture()), page_index=self.done, timings=page_timings,
                                   **ocr_stages)
                page_timings["ocr"] = time.perf_counter() - t0
            item = ReadPage(source, page, page_timings)
            self.done += 1
            del source              # only `item` holds the page, and the caller drops it before the next decode
            yield item
            del item


def read_file_pages(path: str, *, reader: str | None = None) -> list[Page]:
    """Every page of the file at `path` read exactly as `analyse_file` reads it (decode, the file's own
    text or OCR, ruled lines, rotation), without extraction: what training, evaluation and the benchmarks
    keep and extract from again (reading/cache.py). `reader`: "auto" / "ocr" (data.textlayer.reader_setting;
    None: PIAOJU_READER). Raises data.io.InputError for a file (or a page of it) that cannot be decoded, and
    RuntimeError naming the page when reading one fails otherwise (the route's message: "OCR of page 2 of 3
    failed: ...", an OCR model that cannot be loaded included)."""
    from data.io import InputError, iter_source_pages, page_count
    total = page_count(path)
    pages = PageReader(iter_source_pages(path, reader=reader), total)
    out: list[Page] = []
    try:
        for item in pages:
            out.append(item.page)
            del item                # the page image goes before the next page is decoded
    except InputError:
        raise
    except Exception as exc:
        raise RuntimeError(_page_failure(pages.stage, pages.done, total, exc)) from exc
    return out


def _page_failure(stage: str, done: int, total: int, exc: BaseException) -> str:
    """The route's message for a failure at `stage` after `done` pages: names the page it happened on."""
    what = {"decode": "reading", "ocr": "OCR of", "text_layer": "reading the text of",
            "extract": "extraction of", "draw": "drawing"}[stage]
    number = done + (stage in ("decode", "ocr", "text_layer"))
    return f"{what} page {number} of {total} failed: {exc}"


def analyse_pages(pages: Iterable[Any], total: int, source: str, model_dir: str | None = None,
                  doc_type: str | None = None, on_page: PageCallback | None = None,
                  timings: dict[str, float] | None = None, *, preview: int | None = None,
                  on_image: ImageSink | None = None, on_stage: StageCallback | None = None) -> Analysis:
    """Read each page (`PageReader`) and extract the documents of the file, one page at a time: a page is
    decoded, read, extracted (when it starts a document) and handed to `on_image` before the next page is
    decoded, so one full-size page image is alive at a time whatever the page count. Time spent
    pulling the next page from `pages` counts as decode (data.io decodes lazily). `preview`: keep a
    copy of each upright page with its longest side at most that many pixels in `Analysis.images`."""
    timings = dict(timings or {})
    timings.setdefault("decode", 0.0)
    timings.setdefault("ocr", 0.0)
    doc = Document(source=source, timings=timings)
    analysis = Analysis(doc)
    # installation problems raise here, before any page: no document fixes them
    extractor = load_extractor(model_dir) if extractor_available(model_dir) else None
    per_page: list[dict[str, float]] = []
    leading: list[str] = []         # notes about blank pages before the first document
    reader = PageReader(pages, total, on_stage)
    stage: str | None = None        # this loop's own stage; None: the reader's (`reader.stage`)
    open_invoice: InvoiceKey | None = None      # the last result's, while the pages after it may continue it
    titles = functools.cache(functools.partial(_invoice_titles, extractor))
    try:
        for item in reader:
            page, page_timings, embedded = item.page, item.timings, item.embedded
            doc.pages.append(page)
            per_page.append(page_timings)
            if preview:
                analysis.images.append(_preview(item.image, preview))
            stage = "extract"
            result = None
            if is_blank(page):
                note = _skipped_note(page, total)
                (analysis.results[-1].warnings if analysis.results else leading).append(note)
            else:
                if on_stage:
                    on_stage("extract", len(doc.pages), total)
                if open_invoice is not None and continues(page, open_invoice, titles()):
                    result = analysis.results[-1]
                    seconds = _continue(result, page, page_timings, source, extractor)
                else:
                    result = _extract([page], [page_timings], source, extractor, doc_type, embedded)
                    result.warnings[:0] = leading
                    leading = []
                    analysis.results.append(result)
                    open_invoice = invoice_key(result)
                    seconds = result.timings.get("extract", 0.0)
                _add_timings(timings, {"extract": seconds})
            if on_image is not None:
                stage = "draw"
                on_image(item.image, page, result)
            del item                # drop the page (and its image, if drawn) before the next one is decoded
            _add_timings(timings, {k: v for k, v in page_timings.items()})
            if on_page:
                on_page(len(doc.pages), total)
            stage = None
    except Exception as exc:  # one bad page fails the file, not the batch or the UI
        doc.error = {"type": _error_type(exc),
                     "message": _page_failure(stage or reader.stage, len(doc.pages), total, exc)}
        analysis.results = []
        return analysis

    if not analysis.results and doc.pages:      # no page with text: one result shows them all
        result = _extract(doc.pages, per_page, source, extractor, doc_type)
        _add_timings(timings, {"extract": result.timings.get("extract", 0.0)})
        analysis.results.append(result)
    for i, result in enumerate(analysis.results, 1):
        result.part, result.parts = i, len(analysis.results)
    for page in doc.pages:
        doc.warnings += _page_warnings(page) if not is_blank(page) else [_skipped_note(page, total)]
    if len(analysis.results) == 1:              # one document: the file document carries it too
        only = analysis.results[0]
        doc.doc_type, doc.doc_type_score = only.doc_type, only.doc_type_score
        doc.fields, doc.items, doc.pairs = only.fields, only.items, only.pairs
        doc.warnings, doc.error = list(only.warnings), only.error
    elif analysis.results:
        listed = ", ".join(f"{r.part}: page {', '.join(map(str, r.page_numbers()))}" for r in analysis.results)
        doc.warnings.insert(0, f"the file holds {len(analysis.results)} documents, each extracted from its own "
                               f"page(s) ({listed})")
    return analysis


def _finish(analysis: Analysis, started: float) -> Analysis:
    analysis.document.timings["total"] = time.perf_counter() - started
    return analysis


def _input_failure(source: str, exc: Exception, timings: dict[str, float], started: float) -> Analysis:
    doc = Document(source=source, timings=timings, error={"type": _error_type(exc), "message": str(exc)})
    return _finish(Analysis(doc), started)


def analyse_file(path: str, model_dir: str | None = None, doc_type: str | None = None,
                 on_page: PageCallback | None = None, *, preview: int | None = None,
                 on_image: ImageSink | None = None) -> Analysis:
    """Decode, OCR and extract every page of the file at `path`, one page at a time (`analyse_pages`).
    No page image is kept unless `preview` asks for previews; `on_image` sees each full-size page
    (for --draw) as soon as it is processed."""
    started = time.perf_counter()
    try:
        pages, total = _open_file(path)
    except Exception as exc:  # InputError for bad or unreadable files
        return _input_failure(display_name(os.path.basename(path)), exc,
                              {"decode": time.perf_counter() - started},
                              started)
    timings = {"decode": time.perf_counter() - started}
    return _finish(analyse_pages(pages, total, display_name(os.path.basename(path)), model_dir, doc_type, on_page,
                                 timings, preview=preview, on_image=on_image), started)


def analyse_bytes(data: bytes, filename: str, model_dir: str | None = None, doc_type: str | None = None,
                  on_page: PageCallback | None = None, *, preview: int | None = PREVIEW_SIDE,
                  on_image: ImageSink | None = None, on_stage: StageCallback | None = None) -> Analysis:
    """As `analyse_file`, for an upload held in memory (`filename` names it in messages); keeps a
    preview of each page (longest side `PREVIEW_SIDE`) for the UI by default. Pages are decoded one
    at a time from the bytes, never all at once."""
    started = time.perf_counter()
    try:
        pages, total = _open_bytes(data, filename)
    except Exception as exc:
        return _input_failure(filename, exc, {"decode": time.perf_counter() - started}, started)
    timings = {"decode": time.perf_counter() - started}
    return _finish(analyse_pages(pages, total, filename, model_dir, doc_type, on_page, timings,
                                 preview=preview, on_image=on_image, on_stage=on_stage), started)


def process_file(path: str, model_dir: str | None = None, doc_type: str | None = None) -> Document:
    """The file Document of one file (`Analysis.document`; `analyse_file(...).results` holds each
    document of a multi-document file); bad input gives `Document.error` instead of an exception."""
    return analyse_file(path, model_dir, doc_type).document


def process_bytes(data: bytes, filename: str, model_dir: str | None = None,
                  doc_type: str | None = None) -> Document:
    """The file Document for uploaded bytes (see `process_file`)."""
    return analyse_bytes(data, filename, model_dir, doc_type, preview=None).document
