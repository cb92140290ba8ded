"""The PP-OCRv6 reader: models/ocr/onnx.py (onnxruntime sessions on the ONNX files inside the pinned
rapidocr wheel) behind models/ocr/engine.py's one code path, chosen by OCRSettings(model="v6")."""
from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

import models.ocr.onnx as ocr_onnx
from data.fonts import pil_font
from models.ocr import TUNED, OCREngine, OCRSettings, get_engine
from models.ocr.eval import edit_distance
from models.ocr.runtime import ModelPaths


@pytest.fixture(scope="module")
def v6():
    return get_engine(OCRSettings(model="v6", runtime="onnxruntime"))   # openvino: test_ocr_openvino.py


def _text_page(lines: list[str], size: int = 40, width: int = 900) -> np.ndarray:
    img = Image.new("RGB", (width, 60 + len(lines) * size * 2), "white")
    draw = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        draw.text((40, 40 + i * size * 2), text, fill="black", font=pil_font("song", size))
    return np.ascontiguousarray(np.asarray(img)[:, :, ::-1])


# --- settings (no model) -----------------------------------------------------------------------------------

def test_settings_tag_differs_per_model_and_tuned_values_are_filled_in():
    v4, v6 = OCRSettings(model="v4"), OCRSettings(model="v6")
    assert v4.tag() != v6.tag()
    # same model, same values: same tag; a changed knob changes it
    assert OCRSettings(model="v6").tag() == v6.tag()
    assert OCRSettings(model="v6", det_limit_side_len=v6.det_limit_side_len).tag() == v6.tag()
    assert OCRSettings(model="v6", det_limit_side_len=640).tag() != v6.tag()
    for name, value in TUNED["v6"].items():
        assert getattr(v6, name) == value       # None fields hold the model's tuned value, so the tag sees it
    assert OCRSettings(model="v6", drop_score=0.2).drop_score == 0.2
    with pytest.raises(ValueError, match="v4, v6"):
        OCRSettings(model="v5")


def test_bundled_v6_paths_are_the_onnx_files_inside_the_rapidocr_wheel():
    paths = ModelPaths.bundled("v6")
    wheel = Path(list(importlib.util.find_spec("rapidocr").submodule_search_locations)[0])
    assert paths.onnx and paths.keys is None
    assert [p.name for p in (paths.det, paths.rec, paths.cls)] == [
        "PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx", "ch_ppocr_mobile_v2.0_cls_mobile.onnx"]
    for p in (paths.det, paths.rec, paths.cls):
        assert p.is_file() and p.parent == wheel / "models"
    assert not ModelPaths.bundled("v4").onnx


def test_missing_model_file_is_a_clear_error_naming_the_package(tmp_path, monkeypatch):
    (tmp_path / ocr_onnx.DET_FILE).write_bytes(b"")
    (tmp_path / ocr_onnx.CLS_FILE).write_bytes(b"")      # the rec file is missing
    monkeypatch.setattr(ocr_onnx, "package_models_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        OCREngine(OCRSettings(model="v6"))
    message = str(err.value)
    assert ocr_onnx.REC_FILE in message and "pip install" in message and "rapidocr==3.10.0" in message


def test_package_not_installed_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rapidocr" else real(name, *a))
    with pytest.raises(FileNotFoundError, match=r"rapidocr is not installed.*pip install rapidocr==3\.10\.0"):
        ModelPaths.bundled("v6")


def test_charset_is_read_from_the_model_and_split_on_newlines_only():
    class Meta:
        metadata = {"character": "a\n\u2028\nb\n"}     # U+2028 is a line break to str.splitlines
    assert ocr_onnx.embedded_charset(Meta()) == ["<blank>", "a", "\u2028", "b", " "]  # type: ignore[arg-type]
    Meta.metadata = {}
    with pytest.raises(FileNotFoundError, match="character dictionary"):
        ocr_onnx.embedded_charset(Meta())  # type: ignore[arg-type]


def test_concurrent_recognition_returns_each_crops_reading_widest_batches_first():
    """A predictor that may run two calls at once gets batches from two threads, widest first, and every
    crop still gets its own reading (a fake recogniser that 'reads' each crop's width as digits)."""
    from models.ocr import rec as rec_mod
    charset = ["<blank>"] + list("0123456789") + [" "]

    class Fake:
        parallel = 2

        def __init__(self) -> None:
            self.widths: list[int] = []
            self.running = self.most = 0
            self.lock = threading.Lock()
            self.first_two = threading.Barrier(2, timeout=10)   # the first two calls must overlap

        def __call__(self, x: np.ndarray) -> np.ndarray:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.widths.append(x.shape[3])
                first = len(self.widths) <= 2
            try:
                if first:
                    self.first_two.wait()
                probs = np.zeros((x.shape[0], 8, len(charset)), dtype=np.float32)
                probs[:, :, 0] = 1.0
                for row in range(x.shape[0]):
                    used = int((np.abs(x[row, 0, 0]) > 0).sum())      # columns the crop filled
                    for t, digit in enumerate(str(used)):
                        probs[row, 2 * t, 0], probs[row, 2 * t, 1 + int(digit)] = 0.0, 1.0
                return probs
            finally:
                with self.lock:
                    self.running -= 1
    crops = [np.full((48, w, 3), 200, dtype=np.uint8) for w in (500, 96, 1000, 130, 700, 96, 300)]
    fake = Fake()
    got = rec_mod.recognise(crops, fake, charset, batch=2, max_columns=4000, min_width=96)
    assert [text for text, _ in got] == [str(c.shape[1]) for c in crops]
    # two workers take the two widest batches first (in either order), then the narrower ones
    assert sorted(fake.widths[:2]) == sorted(fake.widths)[2:] and len(fake.widths) == 4
    assert fake.most == 2


def test_recognition_batches_hold_one_width_when_slack_is_zero(monkeypatch):
    """slack 0: a batch never pads a line (every line in it has the batch's width); unbounded slack packs
    lines of different widths together as before; each crop still gets its own reading."""
    from models.ocr import rec as rec_mod
    charset = ["<blank>"] + list("0123456789") + [" "]
    calls: list[tuple[int, list[int]]] = []

    def fake(x: np.ndarray) -> np.ndarray:
        used = [int((np.abs(x[row, 0, 0]) > 0).sum()) for row in range(x.shape[0])]   # columns each crop filled
        calls.append((x.shape[3], used))
        probs = np.zeros((x.shape[0], 8, len(charset)), dtype=np.float32)
        probs[:, :, 0] = 1.0
        for row, u in enumerate(used):
            for t, digit in enumerate(str(u)):
                probs[row, 2 * t, 0], probs[row, 2 * t, 1 + int(digit)] = 0.0, 1.0
        return probs

    crops = [np.full((48, w, 3), 200, dtype=np.uint8) for w in (200, 96, 208, 400, 96, 203)]
    got = rec_mod.recognise(crops, fake, charset, batch=16, min_width=96, width_step=8, slack=0.0)
    assert [text for text, _ in got] == [str(c.shape[1]) for c in crops]
    assert sorted(width for width, _ in calls) == [96, 200, 208, 400]            # 203 rounds up to 208
    assert all(width - u < 8 for width, used in calls for u in used)              # padding only to the step
    calls.clear()
    got = rec_mod.recognise(crops, fake, charset, batch=16, min_width=96, width_step=32)
    assert [text for text, _ in got] == [str(c.shape[1]) for c in crops]
    assert [(width, sorted(used)) for width, used in calls] == [(416, [96, 96, 200, 203, 208, 400])]  # one batch
    # v6 batches by width, v4 as before; v4's fingerprint (and its OCR caches) is unchanged by the new fields
    v6, v4 = OCRSettings(model="v6"), OCRSettings(model="v4")
    assert (v6.rec_width_step, v6.rec_batch_slack, v4.rec_width_step, v4.rec_batch_slack) == (8, 0.25, 32, -1)
    import models.ocr.engine as engine_mod
    monkeypatch.setattr(engine_mod, "READ_ORDER_VERSION", 1)
    assert v4.tag() == "b49b59831d48"            # v4's fingerprint before these two fields existed
    monkeypatch.setattr(engine_mod, "READ_ORDER_VERSION", 2)
    assert v4.tag() == "34be51432335"            # ... and after lines came out in tilt-free reading order
    assert v6.tag() != OCRSettings(model="v6", rec_width_step=32, rec_batch_slack=-1).tag()
    assert OCRSettings(model="v6", rec_batch_slack=0).tag() == OCRSettings(model="v6", rec_batch_slack=0.0).tag()


# --- the engine --------------------------------------------------------------------------------------------

@pytest.mark.heavy
def test_v6_loads_from_the_wheel_and_its_charset_matches_the_recogniser(v6):
    assert v6.paths == ModelPaths.bundled("v6") and v6.settings.model == "v6"
    x = np.zeros((1, 3, 48, 320), dtype=np.float32)
    assert v6.rec(x).shape[-1] == len(v6.charset) == 18710      # blank + 18708 characters + space


@pytest.mark.heavy
def test_v6_reads_the_real_line_crops(v6, samples_dir):
    """The six real single-line samples (one upside down) through detection, orientation and recognition."""
    errors = chars = 0
    for gt_path in sorted((samples_dir / "gt").glob("rec_*.json")):
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        page = v6.read(cv2.imread(str(samples_dir / gt["image"])))
        want = gt["lines"][0]["text"]
        errors += edit_distance(want, "".join(ln.text for ln in page.lines))
        chars += len(want)
        if "rot180" in gt_path.name:
            assert page.rotation == 180 and page.text == want
    assert errors / chars < 0.03, f"CER {errors / chars:.3f}"


@pytest.mark.heavy
def test_v6_rendered_page_turned_a_quarter_reads_in_order(v6):
    lines = ["增值税专用发票", "发票号码：12345678", "价税合计：壹仟贰佰元整"]
    upright = _text_page(lines)
    page = v6.read(cv2.rotate(upright, cv2.ROTATE_90_COUNTERCLOCKWISE), page_index=2)
    assert page.rotation == 90 and page.index == 2
    assert (page.height, page.width) == upright.shape[:2]
    assert [ln.text for ln in page.lines] == lines


@pytest.mark.heavy
def test_v6_photo_tilted_two_degrees_reads_row_by_row(v6):
    """Three rows of a key at the left and a figure at the far right, photographed 2.5 degrees off: the
    figure stands a row lower (or higher) than its key as upright boxes go; the lines still come out a
    printed row at a time, each key before its own figure."""
    rows = [("发票号码", "12345678"), ("开票日期", "20240105"), ("价税合计", "39820.50")]
    img = Image.new("RGB", (1600, 420), "white")
    draw = ImageDraw.Draw(img)
    for r, (key, figure) in enumerate(rows):
        draw.text((60, 120 + 56 * r), key, fill="black", font=pil_font("song", 30))
        draw.text((1300, 120 + 56 * r), figure, fill="black", font=pil_font("song", 30))
    upright = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    for turn in (2.5, -2.5):
        m = cv2.getRotationMatrix2D((800, 210), turn, 1.0)
        page = v6.read(cv2.warpAffine(upright, m, (1600, 420), borderValue=(255, 255, 255)))
        assert [ln.text for ln in page.lines] == [t for row in rows for t in row], turn


@pytest.mark.heavy
def test_v6_concurrent_recognition_reads_exactly_like_one_batch_at_a_time(v6):
    """rec_parallel is speed only (it is left out of the settings tag): the same lines, texts and scores."""
    lines = [f"第{i}行：发票号码{12345678 + i}" + "价税合计" * (i % 5) for i in range(30)]
    page = _text_page(lines, size=18, width=800)
    one_at_a_time = OCREngine(OCRSettings(model="v6", runtime="onnxruntime", rec_parallel=False))
    assert one_at_a_time.rec.parallel == 1
    assert OCRSettings(model="v6", rec_parallel=False).tag() == v6.settings.tag()
    assert [(ln.text, ln.score) for ln in one_at_a_time.read(page).lines] == \
        [(ln.text, ln.score) for ln in v6.read(page).lines]


def test_the_environment_picks_the_model_when_settings_name_none(monkeypatch):
    from models.ocr import DEFAULT_MODEL, MODEL_ENV
    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert OCRSettings().model == DEFAULT_MODEL == "v6"
    monkeypatch.setenv(MODEL_ENV, "v4")
    assert OCRSettings().model == "v4" and OCRSettings().rec_min_width == TUNED["v4"]["rec_min_width"]
    assert OCRSettings(model="v6").model == "v6"          # an explicit model wins over the environment
    monkeypatch.setenv(MODEL_ENV, "v5")
    with pytest.raises(ValueError, match="OCR_MODEL"):
        OCRSettings()
