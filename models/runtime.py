"""One long-lived thread per process that owns every model: callers on any thread submit work and wait.

Why: Paddle keeps dynamic-graph mode, the C++ tracer and oneDNN's primitive cache per thread. Streamlit
runs every rerun on a new thread, so a predictor or dygraph model built on one thread and run on the
next failed at random ("could not execute a primitive" from OCR; "embedding(): argument ... must be
Value, but got EagerParamBase" from the extractor when the new thread came up in static mode), and two
threads running the shared predictors at once could crash the process (segfault). Measured with
`reading.route.analyse_file` on the real sample pages, each from a fresh thread (2026-12-03): before, 7
of 8 failed one after another and 4 of 6 two at a time; with every model call on this thread, 0 of 8
and 0 of 16 two at a time (tests/test_threads.py: 7 of 16 failed before, 0 now).

Why one thread rather than per-thread instances (measured on the same 2-core machine): one more set of
models (OCR engine + extractor) took 4.6-5.7 s to build and warm up and +95-340 MB RSS, which a
per-thread design pays on every Streamlit rerun (each is a new thread) and keeps per live thread. The
hop to this thread costs 0.04 ms per call (a page makes ~5-20 model calls and takes seconds); CPU per
analysis on the main thread (the CLI path) was the same before and after within the machine's noise.
Two concurrent analyses are serialised at model-call granularity (decoding and pre-/post-processing
still run on the callers' threads), which suits 2 cores: the predictors are tuned for one thread each
(models/ocr.OCRSettings.cpu_threads). Processes (batch workers, Ray actors) each get their own thread.

Paddle settings on this thread: dygraph mode (with its tracer) is per thread, so every job first makes
sure it is on (`paddle.disable_static()`); the device (`paddle.set_device`, a process-global expected
place) and flags (`paddle.set_flags`, gflags) are process-wide, so what the main thread set applies
here too; the device the creating thread saw is set again before the first Paddle job, so they cannot differ.

Use: `on_model_thread(fn, *args)` runs fn there and returns its result (or raises its exception);
`@runs_on_model_thread` does the same for a function or method. A call made from the model thread itself
runs inline, so model code may nest calls freely. Nothing here is Paddle-specific except the per-job
check, which only runs once Paddle is imported; an onnxruntime model can use the same thread.
"""
from __future__ import annotations

import functools
import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[Future, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _paddle_device() -> str | None:
    """The device the calling thread would run Paddle on, when Paddle is loaded (None otherwise)."""
    paddle = sys.modules.get("paddle")
    if paddle is None or not hasattr(paddle, "get_device"):
        return None
    return str(paddle.get_device())


class ModelThread:
    """A daemon thread that runs submitted callables one at a time, in order of submission."""

    def __init__(self, name: str = "models") -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._ident: int | None = None
        self._device: str | None = None
        self._start_lock = threading.Lock()

    def owns_current_thread(self) -> bool:
        return self._ident is not None and threading.get_ident() == self._ident

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """fn(*args, **kwargs) on the model thread; its result, or its exception raised here."""
        if self.owns_current_thread():
            return fn(*args, **kwargs)
        self._ensure_started()
        done: Future = Future()
        self._jobs.put((done, fn, args, kwargs))
        return done.result()

    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._device = _paddle_device()
                ready = threading.Event()
                thread = threading.Thread(target=self._loop, args=(ready,), name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._thread = thread

    def _loop(self, ready: threading.Event) -> None:
        self._ident = threading.get_ident()
        ready.set()
        paddle_ready = False
        while True:
            done, fn, args, kwargs = self._jobs.get()
            if not done.set_running_or_notify_cancel():
                continue
            try:
                paddle_ready = self._prepare_paddle(paddle_ready)
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the caller, who re-raises it; the thread goes on
                done.set_exception(exc)
            else:
                done.set_result(result)
            del done, fn, args, kwargs   # drop references to inputs and outputs while idle

    def _prepare_paddle(self, configured: bool) -> bool:
        """Dygraph mode on this thread before every job (cheap: a flag check); the creator's device once.
        Returns whether the device has been applied."""
        paddle = sys.modules.get("paddle")
        if paddle is None or not hasattr(paddle, "in_dynamic_mode"):
            return configured     # the job itself may import Paddle; the next job checks again
        if not paddle.in_dynamic_mode():
            paddle.disable_static()
        if not configured:
            device = self._device or _paddle_device()
            if device and device != paddle.get_device():
                paddle.set_device(device)
        return True


_MODELS: ModelThread | None = None
_MODELS_LOCK = threading.Lock()


def model_thread() -> ModelThread:
    """The process-wide model thread (started on first use)."""
    global _MODELS
    if _MODELS is None:
        with _MODELS_LOCK:
            if _MODELS is None:
                _MODELS = ModelThread("models")
    return _MODELS


def on_model_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run fn(*args, **kwargs) on the process-wide model thread and return its result."""
    return model_thread().call(fn, *args, **kwargs)


def runs_on_model_thread(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: every call of fn runs on the model thread (inline when already there)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return model_thread().call(fn, *args, **kwargs)
    return wrapper


def _forget_after_fork() -> None:
    """A forked child has no model thread (threads do not survive fork), nor the parent's models' state:
    start afresh there instead of queueing work for a thread that does not exist."""
    global _MODELS, _MODELS_LOCK
    _MODELS, _MODELS_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
