"""OpenVINO as the v6 reader's runtime (models/ocr/openvino.py, OCRSettings.runtime, issue 38): how the runtime
is chosen, that it infers in f32 unless asked otherwise (OpenVINO's default is bf16 on this CPU), that its
compiled-model cache never makes it fail, and that it reads a page exactly as onnxruntime does."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import models.ocr.engine as engine_mod
from models.ocr import OCREngine, OCRSettings
from models.ocr.onnx import OnnxOptions, OnnxPredictor, bundled_onnx_files, embedded_charset
from models.ocr.openvino import OpenVinoPredictor, cache_dir
from tests.test_ocr_v6 import _text_page  # the same drawn test page


@pytest.fixture(autouse=True)
def _no_runtime_env(monkeypatch, tmp_path):
    monkeypatch.delenv(engine_mod.RUNTIME_ENV, raising=False)
    monkeypatch.delenv(engine_mod.MODEL_ENV, raising=False)
    monkeypatch.setenv("PIAOJU_CACHE", str(tmp_path / "cache"))   # never the user's cache


# --- choosing the runtime (no model) ----------------------------------------------------------------------

def test_runtime_comes_from_the_settings_then_ocr_runtime_then_the_machine(monkeypatch):
    assert OCRSettings(model="v6").runtime == engine_mod.default_runtime()
    monkeypatch.setenv("OCR_RUNTIME", "onnxruntime")
    assert OCRSettings(model="v6").runtime == "onnxruntime"
    assert OCRSettings(model="v6", runtime="openvino").runtime == "openvino"     # the settings win
    monkeypatch.setenv("OCR_RUNTIME", " OpenVINO ")
    assert OCRSettings(model="v6").runtime == "openvino"
    assert OCRSettings(model="v4").runtime == ""          # Paddle Inference: the runtime is ignored
    assert OCRSettings(model="v4", runtime="openvino").runtime == ""


def test_unknown_runtime_is_refused_with_the_choices_and_where_it_came_from(monkeypatch):
    with pytest.raises(ValueError, match=r"unknown OCR runtime 'tensorrt'; choose from openvino, onnxruntime"):
        OCRSettings(model="v6", runtime="tensorrt")
    monkeypatch.setenv("OCR_RUNTIME", "ort")
    with pytest.raises(ValueError, match=r"'ort'.*\$OCR_RUNTIME"):
        OCRSettings(model="v6")


def test_automatic_runtime_is_onnxruntime_even_where_openvino_is_installed(monkeypatch):
    """OpenVINO at f32 was measured no faster (default_runtime): it is chosen, never picked by itself."""
    import importlib.util
    assert importlib.util.find_spec("openvino") is not None      # installed here (requirements.txt)
    monkeypatch.delenv("OCR_RUNTIME", raising=False)
    assert engine_mod.default_runtime() == "onnxruntime"
    assert OCRSettings(model="v6").runtime == "onnxruntime"


def test_runtime_is_in_the_fingerprint_and_onnxruntime_keeps_the_old_one():
    ov, ort = OCRSettings(model="v6", runtime="openvino"), OCRSettings(model="v6", runtime="onnxruntime")
    assert ov.tag() != ort.tag()
    # the fingerprints from before the field existed (models/ocr/engine.py at the commit before it): caches
    # read on onnxruntime and by v4 stay valid
    assert ort.tag() == "748544bffbb7"
    assert OCRSettings(model="v4").tag() == "34be51432335"


def test_openvino_missing_is_a_clear_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)      # what an environment without it imports
    _, cls, _ = bundled_onnx_files()
    with pytest.raises(FileNotFoundError, match=r"runtime 'openvino'.*not installed.*OCR_RUNTIME=onnxruntime"):
        OpenVinoPredictor(cls, OnnxOptions())


# --- the cache folder and the compiled precision (the small classifier model) -------------------------------

def test_cache_folder_is_private_and_an_unusable_one_is_skipped(tmp_path, monkeypatch):
    folder = cache_dir()
    assert folder == tmp_path / "cache" / "openvino" and folder.is_dir() and folder.stat().st_mode & 0o077 == 0
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("PIAOJU_CACHE", str(blocked))        # a file where the folder would be
    assert cache_dir() is None
    shared = tmp_path / "shared"
    (shared / "openvino").mkdir(parents=True)
    os.chmod(shared / "openvino", 0o777)                      # others could plant a compiled model
    monkeypatch.setenv("PIAOJU_CACHE", str(shared))
    assert cache_dir() is None
    target = tmp_path / "elsewhere"
    (target / "openvino").mkdir(parents=True, mode=0o700)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "openvino").symlink_to(target / "openvino")
    monkeypatch.setenv("PIAOJU_CACHE", str(tmp_path / "linked"))
    assert cache_dir() is None


def test_compiles_in_f32_by_default_caches_it_and_runs_without_a_cache(tmp_path, monkeypatch):
    _, cls, _ = bundled_onnx_files()
    p = OpenVinoPredictor(cls, OnnxOptions(threads=1))
    # OpenVINO's own default on a CPU with AVX-512 bf16 / AMX (this one) would be bf16
    assert p.precision() == "f32"
    assert p.compiled.get_property("NUM_STREAMS") == 1 and p.compiled.get_property("ENABLE_CPU_PINNING") is False
    assert list((tmp_path / "cache" / "openvino").glob("*.blob"))     # compiled once, loaded from disk next time
    x = np.random.default_rng(0).random((2, 3, 48, 192), dtype=np.float32)
    expected = OnnxPredictor(cls, OnnxOptions(threads=1))(x)
    assert np.abs(p(x) - expected).max() < 1e-4
    monkeypatch.setenv("PIAOJU_CACHE", str(tmp_path / "cache" / "openvino" / next(
        (tmp_path / "cache" / "openvino").glob("*.blob")).name))     # under a file: no cache, still runs
    uncached = OpenVinoPredictor(cls, OnnxOptions(threads=1))
    assert "CACHE_DIR" not in uncached.config and np.abs(uncached(x) - expected).max() < 1e-4


# --- the reader (real models) -------------------------------------------------------------------------------

@pytest.mark.heavy
def test_openvino_f32_reads_the_same_lines_as_onnxruntime():
    ov = OCREngine(OCRSettings(model="v6", runtime="openvino"))
    ort = OCREngine(OCRSettings(model="v6", runtime="onnxruntime"))
    assert isinstance(ov.rec, OpenVinoPredictor) and isinstance(ort.rec, OnnxPredictor)
    assert ov.rec.precision() == ov.det.precision() == "f32"
    assert ov.charset == ort.charset == embedded_charset(ort.rec) and len(ov.charset) == 18710
    lines = ["电子发票（普通发票）", "发票号码：24312000000012345678", "开票日期：2026年12月07日",
             "购买方名称：上海某某科技有限公司", "统一社会信用代码：91310115MA1K4XYZ2B",
             "价税合计（大写）壹仟贰佰叁拾肆圆伍角陆分", "（小写）¥1234.56", "备注：项目编号 A-0098"]
    page = _text_page(lines, size=22, width=760)
    got_ov, got_ort = ov.read(page), ort.read(page)
    assert len(got_ort.lines) >= len(lines) - 1
    assert [ln.text for ln in got_ov.lines] == [ln.text for ln in got_ort.lines]
    assert [ln.quad for ln in got_ov.lines] == [ln.quad for ln in got_ort.lines]


@pytest.mark.heavy
@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_det_and_cls_run_on_the_model_thread_and_rec_batches_side_by_side(runtime, monkeypatch):
    """Whoever calls, on either runtime, detection and the angle classifier run on the model thread (one
    mechanism for every backend); the recogniser runs its batches from the callers' threads, never more at
    once than `parallel` (its cores)."""
    import threading

    import models.ocr.onnx as ocr_onnx
    import models.ocr.openvino as ocr_ov
    predictor = ocr_ov.OpenVinoPredictor if runtime == "openvino" else ocr_onnx.OnnxPredictor
    engine = OCREngine(OCRSettings(model="v6", runtime=runtime))
    assert isinstance(engine.rec, predictor)
    seen: dict[str, set[str]] = {}
    running, most = [0], [0]
    lock = threading.Lock()
    real = predictor._run
    names = {id(engine.det): "det", id(engine.cls): "cls", id(engine.rec): "rec"}

    def spy(self, batch):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        seen.setdefault(names[id(self)], set()).add(threading.current_thread().name)
        try:
            return real(self, batch)
        finally:
            with lock:
                running[0] -= 1
    monkeypatch.setattr(predictor, "_run", spy)
    lines = [f"第{i}行：发票号码{12345678 + i}" + "金额" * (i % 7) for i in range(30)]
    worker = threading.Thread(target=lambda: engine.read(_text_page(lines, size=16, width=700)), name="caller")
    worker.start()
    worker.join()
    assert seen["det"] == seen["cls"] == {"models"}
    assert seen["rec"] and not seen["rec"] & {"models"}
    assert engine.rec.parallel == ocr_onnx.allowed_cores() and most[0] <= engine.rec.parallel
    if runtime == "openvino":
        assert engine.rec.compiled.get_property("NUM_STREAMS") == engine.rec.parallel
    elif engine.rec.parallel > 1:
        assert any(name.startswith("ocr-rec") for name in seen["rec"])


@pytest.mark.heavy
def test_reduced_precision_is_asked_for_per_model_and_changes_the_fingerprint():
    """det_bf16 / rec_bf16 compile that model alone in bfloat16 (OpenVINO only), and readings made so are
    cached apart from f32 ones."""
    det_only = OCREngine(OCRSettings(model="v6", runtime="openvino", det_bf16=True, rec_bf16=False))
    assert det_only.det.precision() == "bf16" and det_only.rec.precision() == "f32"
    rec_only = OCREngine(OCRSettings(model="v6", runtime="openvino", rec_bf16=True))
    assert rec_only.det.precision() == "f32" and rec_only.rec.precision() == "bf16"
    f32 = OCRSettings(model="v6", runtime="openvino")
    assert len({f32.tag(), det_only.settings.tag(), rec_only.settings.tag()}) == 3
