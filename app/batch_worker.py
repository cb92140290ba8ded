"""What one batch worker does: load the models once, then turn (path, hash) tasks into result rows.

The same code runs in the parent when --workers 1, and in spawned processes otherwise. Workers never
write the results file; they return rows and the parent appends them (see app/batch_state.py).
"""
from __future__ import annotations

import functools
import importlib
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from app.pipeline import Analysis

DEFAULT_PROCESSOR = "app.pipeline:analyse_file"


@dataclass(frozen=True)
class WorkerOptions:
    model_dir: str | None = None
    doc_type: str | None = None
    draw_dir: str | None = None
    processor: str = DEFAULT_PROCESSOR   # "module:function" (path, model_dir, doc_type) -> Analysis
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
    if options.processor == DEFAULT_PROCESSOR:
        # page images are only needed for --draw; without it each page is dropped once read
        _processor = functools.partial(_processor, keep_images=bool(options.draw_dir))
    if options.warm_up and options.processor == DEFAULT_PROCESSOR:
        from app.pipeline import warm_up
        warm_up(options.model_dir)


def error_row(path: str, sha256: str, error_type: str, message: str) -> dict[str, Any]:
    return {"file": path, "sha256": sha256, "source": os.path.basename(path), "pages": [],
            "fields": {}, "error": {"type": error_type, "message": message}}


def overlay_name(path: str, sha256: str, page: int) -> str:
    """Unique per file content and page, readable: <stem>_<hash8>_p<N>.png."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return f"{stem}_{sha256[:8]}_p{page + 1}.png"


def save_overlays(analysis: Analysis, path: str, sha256: str, draw_dir: str) -> list[str]:
    import cv2

    from app.ui_view import page_overlay
    os.makedirs(draw_dir, exist_ok=True)
    written = []
    for page, image in zip(analysis.document.pages, analysis.images):
        out = os.path.join(draw_dir, overlay_name(path, sha256, page.index))
        drawn = page_overlay(image, page, analysis.document, legend=True)
        cv2.imwrite(out, np.ascontiguousarray(drawn))
        written.append(out)
    return written


def run_task(task: Task) -> dict[str, Any]:
    """Process one file; every failure becomes an error row so the batch goes on."""
    path, sha256 = task
    assert _options is not None and _processor is not None, "init_worker was not called"
    started = time.perf_counter()
    try:
        analysis = _processor(path, _options.model_dir, _options.doc_type)
        row = {"file": path, "sha256": sha256, **analysis.document.to_dict()}
        if _options.draw_dir and analysis.images:
            try:
                row["overlays"] = save_overlays(analysis, path, sha256, _options.draw_dir)
            except Exception as exc:  # a failed drawing must not lose the extracted result
                row["warnings"] = list(row.get("warnings") or []) + [f"overlay not drawn: {exc}"]
    except Exception as exc:
        row = error_row(path, sha256, type(exc).__name__,
                        f"{exc} (internal error; details: {traceback.format_exc(limit=3)!r})")
        row["timings"] = {"total": time.perf_counter() - started}
    row["worker_pid"] = os.getpid()
    return row
