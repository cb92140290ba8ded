"""Models are safe to call from any thread (models/runtime.py), and the UI never keeps a failed analysis.

Streamlit runs every rerun on a new thread. Before the model thread, Paddle predictors and the dygraph
extractor shared across threads failed at random (7 of 8 analyses from fresh threads; two at once
could segfault), and the UI kept the failure for the file's content for the whole session."""
from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from data.document import Document, Field, Line, Page, box_to_quad
from models.runtime import ModelThread, model_thread, on_model_thread, runs_on_model_thread
from reading import route
from reading.route import Analysis
from tests.threads import in_thread

UI = str(Path(__file__).resolve().parents[1] / "app" / "ui" / "main.py")


def in_fresh_thread(fn: Any, *args: Any) -> Any:
    """fn(*args) on a new thread, as Streamlit runs a rerun; its result or its exception."""
    return in_thread(lambda: fn(*args), 60, "the call never returned (deadlock on the model thread?)")


# --- the model thread -----------------------------------------------------------------------------

def test_calls_from_any_thread_run_on_one_model_thread_and_errors_come_back():
    mt = ModelThread("test-models")
    callers = [in_fresh_thread(lambda: (threading.get_ident(), mt.call(threading.get_ident)))
               for _ in range(4)]
    model_ids = {model for _, model in callers}
    assert len(model_ids) == 1, "every call ran on the same thread"
    assert model_ids.isdisjoint(caller for caller, _ in callers), "and not on the callers' threads"

    def fails() -> None:
        raise ValueError("bad page")
    with pytest.raises(ValueError, match="bad page"):
        in_fresh_thread(mt.call, fails)
    assert mt.call(lambda x: x * 2, 21) == 42, "the thread goes on after a failed job"
    # a model call made from the model thread runs inline instead of waiting on itself
    assert in_fresh_thread(mt.call, lambda: mt.call(threading.get_ident)) in model_ids


def test_a_decorated_function_runs_on_the_process_model_thread():
    @runs_on_model_thread
    def where() -> int:
        return threading.get_ident()
    assert in_fresh_thread(where) == on_model_thread(threading.get_ident) != threading.get_ident()
    assert model_thread().owns_current_thread() is False


def test_the_model_thread_runs_paddle_in_dygraph_mode_whatever_the_caller_is_in():
    import paddle

    mt = ModelThread("test-paddle")

    def caller_in_static_mode() -> tuple[bool, bool, bool]:
        # a thread that came up in static mode (what made the extractor fail: "must be Value, but got
        # EagerParamBase") starts the model thread and calls a model on it
        paddle.enable_static()
        try:
            first = mt.call(paddle.in_dynamic_mode)
            mt.call(paddle.enable_static)              # a job that flips the mode ...
            after_flip = mt.call(paddle.in_dynamic_mode)  # ... does not leak into the next job
            embedded = mt.call(lambda: paddle.nn.Embedding(4, 2)(paddle.to_tensor([[1, 2]])).numpy().shape)
            return first, after_flip, embedded == (1, 2, 2)
        finally:
            paddle.disable_static()
    assert in_fresh_thread(caller_in_static_mode) == (True, True, True)
    assert paddle.in_dynamic_mode()


# --- real analyses from fresh threads --------------------------------------------------------------

def comparable(doc: Document) -> dict:
    out = json.loads(doc.to_json())
    out.pop("timings", None)
    return out


@pytest.mark.heavy
def test_sixteen_analyses_from_fresh_threads_two_at_a_time_all_succeed(tmp_path):
    """Two small generated pages, analysed 16 times from fresh threads, two threads at a time (as two
    Streamlit sessions would): no failure, and each reading equals the one made on the main thread."""
    from data.synth import generate
    files = []
    for doc_type in ("id_card_front", "id_card_back"):
        image, _ = generate(doc_type, seed=3)
        path = tmp_path / f"{doc_type}.png"
        image.save(path)
        files.append(str(path))
    reference = {f: comparable(route.analyse_file(f).document) for f in files}
    assert all(not r.get("error") and r["pages"][0]["lines"] for r in reference.values())

    results: list[tuple[str, Document]] = []

    def analyse(path: str) -> None:
        results.append((path, route.analyse_file(path).document))
    for round_ in range(8):
        pair = [threading.Thread(target=analyse, args=(f,), daemon=True) for f in files]
        for t in pair:
            t.start()
        for t in pair:
            t.join(120)
        assert not any(t.is_alive() for t in pair), f"round {round_}: an analysis never returned"
    assert len(results) == 16
    errors = [(Path(f).name, doc.error) for f, doc in results if doc.error]
    assert errors == []
    for f, doc in results:
        assert comparable(doc) == reference[f], f"{Path(f).name}: a threaded reading differs from the main thread's"


@pytest.mark.heavy
def test_get_engine_gives_one_instance_to_every_thread():
    """Built on the model thread, so threads asking at once share one engine (no second set of models)."""
    from models.ocr import get_engine
    engines = [None, None]

    def ask(i: int) -> None:
        engines[i] = get_engine()
    pair = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in pair:
        t.start()
    for t in pair:
        t.join(120)
    assert engines[0] is not None and engines[0] is engines[1] is on_model_thread(get_engine)


# --- the UI keeps no failed result -----------------------------------------------------------------

CALLS: list[str] = []


def flaky_analyse_bytes(data: bytes, filename: str, model_dir=None, doc_type=None, on_page=None,
                        on_stage=None) -> Analysis:
    """Fails the first time (as a model error did), reads a one-field invoice afterwards."""
    CALLS.append(filename)
    if len(CALLS) == 1:
        return Analysis(Document(source=filename, error={
            "type": "RuntimeError", "message": "OCR of page 1 of 1 failed: could not execute a primitive"}))
    line = Line("发票号码：12345678", box_to_quad([20, 20, 200, 40]))
    doc = Document(source=filename, doc_type="vat_invoice", doc_type_score=0.9,
                   pages=[Page(index=0, width=300, height=200, lines=[line])])
    doc.fields["invoice_number"] = Field("invoice_number", "12345678", raw="12345678", score=0.97,
                                         box=[95, 20, 200, 40], label="发票号码", valid=True, span=[5, 13])
    return Analysis(doc, [np.full((200, 300, 3), 255, np.uint8)])


def png_bytes() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (300, 200), "white").save(buf, format="PNG")
    return buf.getvalue()


def test_ui_retries_a_failed_upload_instead_of_keeping_the_failure(monkeypatch, tmp_path):
    CALLS.clear()
    monkeypatch.setattr(route, "analyse_bytes", flaky_analyse_bytes)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    monkeypatch.setenv("PIAOJU_CORRECTIONS_DIR", str(tmp_path / "corrections"))
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    upload = [("inv.png", png_bytes(), "image/png")]
    at.file_uploader[0].set_value(upload)
    at.run()
    assert not at.exception
    assert any("could not execute a primitive" in e.value for e in at.error)
    assert at.session_state["analyses"] == {}, "the failure is not kept"
    # the user removes the file and adds it again: it is read again, and this time it works
    at.file_uploader[0].set_value([])
    at.run()
    at.file_uploader[0].set_value(upload)
    at.run()
    assert not at.exception and not at.error
    assert CALLS == ["inv.png", "inv.png"]
    assert at.data_editor[0].value.shape[0] >= 1
    # a good result is kept: another rerun reads nothing again
    at.run()
    assert CALLS == ["inv.png", "inv.png"] and len(at.session_state["analyses"]) == 1
