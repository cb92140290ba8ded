"""What one batch worker does: load the models once, then turn (path, hash) tasks into result rows.

A file gives one row per document found in it (reading/route.py decides which pages make one: a PDF
of three invoices gives three rows, part 1..3 of parts 3); a file that fails as a whole gives one
error row (part 1 of 1). The same code runs in the parent when --workers 1, and in spawned processes
otherwise. Workers never write the results file; they return a file's rows together and the parent
appends them (see app/batch/state.py). With --draw each page is drawn as soon as it is processed and
its image dropped, so a worker holds one page image at a time.
"""
from __future__ import annotations

import importlib
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from data.document import Document, Page
from reading.route import Analysis

DEFAULT_PROCESSOR = "reading.route:analyse_file"


@dataclass(frozen=True)
class WorkerOptions:
    model_dir: str | None = None
    doc_type: str | None = None
    draw_dir: str | None = None
    processor: str = DEFAULT_PROCESSOR   # "module:function" (path, model_dir, doc_type[, on_image=]) -> Analysis
    warm_up: bool = True                 # load models in the initializer, before the first task


Task = tuple[str, str]                   # (absolute path, sha256 of its bytes)

_options: WorkerOptions | None = None
_processor: Callable[..., Analysis] | None = None


def resolve(spec: str) -> Callable[..., Any]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def share_cores(slot: int, workers: int) -> None:
    """Pin worker `slot` of `workers` to its own share of this process's cores. The OCR engine sizes
    its thread pool from the affinity mask, so N workers use the cores once instead of N times over
    (oversubscribed threads made 2 workers slower than 1 on a 2-core machine)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: leave scheduling to the OS
        return
    if workers <= 1 or len(cores) <= 1:
        return
    if workers >= len(cores):
        mine = [cores[slot % len(cores)]]
    else:
        per = len(cores) // workers
        mine = cores[slot * per:(slot + 1) * per] if slot < workers - 1 else cores[slot * per:]
    os.sched_setaffinity(0, mine)


def init_worker(options: WorkerOptions, counter: Any = None, workers: int = 1) -> None:
    """Process initializer: take a share of the cores, remember the options and load the models once."""
    global _options, _processor
    if counter is not None:
        with counter.get_lock():
            slot = counter.value
            counter.value += 1
        share_cores(slot, workers)
    _options = options
    _processor = resolve(options.processor)
    if options.warm_up and options.processor == DEFAULT_PROCESSOR:
        from reading.route import warm_up
        warm_up(options.model_dir)


def error_row(path: str, sha256: str, error_type: str, message: str) -> dict[str, Any]:
    """The one row of a file that failed as a whole."""
    return {"file": path, "sha256": sha256, "part": 1, "parts": 1, "source": os.path.basename(path),
            "pages": [], "fields": {}, "error": {"type": error_type, "message": message}}


def overlay_name(path: str, sha256: str, page: int) -> str:
    """Unique per file content and page, readable: <stem>_<hash8>_p<N>.png."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return f"{stem}_{sha256[:8]}_p{page + 1}.png"


def draw_page(image: np.ndarray, page: Page, result: Document | None, path: str, sha256: str,
              draw_dir: str) -> str:
    """Write the overlay of one page (its result's fields; OCR lines only for a page skipped as blank)."""
    from app.cli import write_png
    from app.ui.view import page_overlay
    os.makedirs(draw_dir, exist_ok=True)
    out = os.path.join(draw_dir, overlay_name(path, sha256, page.index))
    # write_png, not cv2.imwrite: that segfaults on a name with undecodable bytes (GBK from a zip)
    write_png(out, page_overlay(image, page, result or Document(pages=[page]), legend=True))
    return out


class _Drawer:
    """The `on_image` sink of --draw: draws each page as the pipeline hands it over (nothing is kept
    but the paths) and remembers failures instead of failing the file."""

    def __init__(self, path: str, sha256: str, draw_dir: str) -> None:
        self.path, self.sha256, self.draw_dir = path, sha256, draw_dir
        self.written: dict[int, str] = {}          # page index -> overlay path
        self.failed: list[str] = []

    def __call__(self, image: np.ndarray, page: Page, result: Document | None) -> None:
        try:
            self.written[page.index] = draw_page(image, page, result, self.path, self.sha256, self.draw_dir)
        except Exception as exc:  # a failed drawing must not lose the extracted result
            self.failed.append(f"overlay of page {page.index + 1} not drawn: {exc}")


def _analyse(path: str, drawer: _Drawer | None) -> Analysis:
    assert _options is not None and _processor is not None, "init_worker was not called"
    if drawer is not None and _options.processor == DEFAULT_PROCESSOR:
        return _processor(path, _options.model_dir, _options.doc_type, on_image=drawer)
    analysis = _processor(path, _options.model_dir, _options.doc_type)
    if drawer is not None:      # a processor without on_image: draw the images it kept
        for n, page in enumerate(analysis.document.pages[:len(analysis.images)]):
            results = [r for r in analysis.parts() if any(p.index == page.index for p in r.pages)]
            drawer(analysis.image(n), page, results[0] if results else None)     # decodes a JPEG preview
    return analysis


def result_rows(analysis: Analysis, path: str, sha256: str, drawer: _Drawer | None = None) -> list[dict[str, Any]]:
    """One row per document of the file: {"file", "sha256", "part", "parts", **Document.to_dict()}."""
    rows = []
    parts = analysis.parts()
    owner = {p.index: i for i, r in enumerate(parts) for p in r.pages}
    for index in sorted(drawer.written if drawer is not None else []):
        if index not in owner:      # a page skipped as blank: its overlay goes with the result noting it
            before = [i for i, r in enumerate(parts) if r.pages and r.pages[0].index < index]
            owner[index] = before[-1] if before else 0
    for i, result in enumerate(parts):
        row = {"file": path, "sha256": sha256, "part": result.part, "parts": result.parts, **result.to_dict()}
        if drawer is not None:
            overlays = [drawer.written[k] for k in sorted(drawer.written) if owner.get(k) == i]
            if overlays:
                row["overlays"] = overlays
            if drawer.failed:
                row["warnings"] = list(row.get("warnings") or []) + drawer.failed
        rows.append(row)
    return rows


def run_task(task: Task) -> list[dict[str, Any]]:
    """Process one file into its rows (one per document in it); every failure becomes an error row
    so the batch goes on."""
    path, sha256 = task
    assert _options is not None and _processor is not None, "init_worker was not called"
    started = time.perf_counter()
    drawer = _Drawer(path, sha256, _options.draw_dir) if _options.draw_dir else None
    try:
        rows = result_rows(_analyse(path, drawer), path, sha256, drawer)
    except Exception as exc:
        row = error_row(path, sha256, type(exc).__name__,
                        f"{exc} (internal error; details: {traceback.format_exc(limit=3)!r})")
        row["timings"] = {"total": time.perf_counter() - started}
        rows = [row]
    for row in rows:
        row["worker_pid"] = os.getpid()
    return rows
