"""Line crops, the 0/180 angle classifier and CTC text recognition.

Recognition is batched over lines sorted by aspect ratio, so a batch pads to a similar width and a
wide line does not make every short line in its batch pay for its padding. `slack` bounds that padding:
a batch holds only lines at most that share wider than its narrowest (0 = one width per batch). The
recogniser's cost is its convolutions, proportional to the columns it is given, padding included, and
a batch per width costs no more per column than a mixed one (bench/README.md, "Recognition padding").
A predictor that may run several calls at once (`parallel` > 1, models/ocr/onnx.py) gets that many
batches side by side, widest first, so the cores finish together.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np

REC_HEIGHT = 48
REC_MIN_WIDTH = 320          # PP-OCRv4 rec was trained on 48 x 320 inputs; narrower pads up to this
REC_WIDTH_STEP = 32          # widths rounded up to this, so oneDNN sees few distinct shapes (v4's default)
CLS_SHAPE = (48, 192)


def crop_line(image: np.ndarray, quad: np.ndarray, min_height: int = 0) -> np.ndarray:
    """Perspective-rectify the quad to an upright crop; tall crops (vertical text) are turned 90 degrees.
    A line thinner than `min_height` is warped straight to that height (one cubic resampling from the
    page instead of a native-size warp followed by a second resize)."""
    wf = float(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[3] - quad[2])))
    hf = float(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    zoom = max(1.0, min_height / max(1.0, min(wf, hf))) if min_height else 1.0
    w, h = max(int(wf * zoom), 1), max(int(hf * zoom), 1)
    target = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(quad.astype(np.float32), target)
    crop = cv2.warpPerspective(image, matrix, (w, h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
    if h / w >= 1.5:
        crop = np.rot90(crop)
    return crop


def _normalise(resized: np.ndarray) -> np.ndarray:
    """HWC uint8 -> CHW float32 in [-1, 1]."""
    return (resized.astype(np.float32).transpose(2, 0, 1) * (2.0 / 255.0)) - 1.0


INTERPOLATIONS = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "lanczos": cv2.INTER_LANCZOS4,
                  "area": cv2.INTER_AREA}


def _unsharp(crop: np.ndarray) -> np.ndarray:
    blurred = cv2.GaussianBlur(crop, (0, 0), max(0.8, crop.shape[0] / 24))
    return cv2.addWeighted(crop, 1.6, blurred, -0.6, 0)


def _clahe(crop: np.ndarray) -> np.ndarray:
    lab = cv2.cvtColor(crop, cv2.COLOR_BGR2LAB)
    lab[:, :, 0] = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(1, 8)).apply(lab[:, :, 0])
    return cv2.cvtColor(lab, cv2.COLOR_LAB2BGR)


def _stretch(crop: np.ndarray) -> np.ndarray:
    """Contrast stretch: the 2nd..98th percentile of grey becomes 0..255 (faded, low-contrast photos)."""
    lo, hi = np.percentile(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY), (2, 98))
    if hi - lo < 8:
        return crop
    return cv2.convertScaleAbs(crop, alpha=255.0 / (hi - lo), beta=-lo * 255.0 / (hi - lo))


def _blur(crop: np.ndarray) -> np.ndarray:
    """Gaussian sigma 1 px: on noisy, JPEG-blocked low-resolution lines the recogniser reads the smoothed
    crop better (heavy synthetic pages CER 0.208 -> 0.187) but clean and real print slightly worse
    (bench/README.md), so it is an option, not the default."""
    return cv2.GaussianBlur(crop, (0, 0), 1.0)


def _denoise(crop: np.ndarray) -> np.ndarray:
    return cv2.fastNlMeansDenoisingColored(crop, None, 5, 5, 5, 15)


# Per-crop filters applied after cropping, before the resize to the recogniser's height. Only "blur"
# helped on heavily degraded pages; the others are kept so the measurements in bench/README.md can be rerun.
CROP_FILTERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "blur": _blur, "unsharp": _unsharp, "clahe": _clahe, "stretch": _stretch, "denoise": _denoise}


def filter_crop(crop: np.ndarray, names: str) -> np.ndarray:
    """Apply the comma-separated CROP_FILTERS in order ("" = none)."""
    for name in filter(None, names.split(",")):
        if name not in CROP_FILTERS:
            raise ValueError(f"unknown crop filter {name!r}; choose from {', '.join(CROP_FILTERS)}")
        crop = CROP_FILTERS[name](crop)
    return crop


def _resize_into(out: np.ndarray, crop: np.ndarray, interp: int = cv2.INTER_LINEAR) -> None:
    """Resize the crop to out's height (aspect kept, at most out's width) and normalise it into the left of
    `out` (3 x H x W float32, zeros beyond: the padding), without an intermediate padded copy."""
    height, width = out.shape[1:]
    h, w = crop.shape[:2]
    new_w = min(width, max(1, int(math.ceil(height * w / h))))
    resized = cv2.resize(crop, (new_w, height), interpolation=interp)
    view = out[:, :, :new_w]
    np.multiply(resized.transpose(2, 0, 1), np.float32(2.0 / 255.0), out=view, casting="unsafe")
    view -= 1.0


def _resize_pad(crop: np.ndarray, height: int, width: int, interp: int = cv2.INTER_LINEAR) -> np.ndarray:
    out = np.zeros((3, height, width), dtype=np.float32)
    _resize_into(out, crop, interp)
    return out


def classify_angles(crops: list[np.ndarray], predictor: Callable[[np.ndarray], np.ndarray],
                    batch: int) -> list[tuple[int, float]]:
    """[(0 or 180, probability)] per crop."""
    out: list[tuple[int, float]] = []
    for start in range(0, len(crops), batch):
        chunk = crops[start:start + batch]
        x = np.stack([_resize_pad(c, *CLS_SHAPE) for c in chunk])
        probs = predictor(x)
        for row in probs:
            k = int(row.argmax())
            out.append((180 if k == 1 else 0, float(row[k])))
    return out


def ctc_decode(probs: np.ndarray, charset: list[str]) -> list[tuple[str, float]]:
    """Greedy CTC: best class per step, merge repeats, drop blanks; score = mean of kept probabilities."""
    best = probs.argmax(axis=2)
    best_p = np.take_along_axis(probs, best[:, :, None], axis=2)[:, :, 0]   # one pass over the classes, not two
    results = []
    for ids, ps in zip(best, best_p):
        keep = np.ones(len(ids), dtype=bool)
        keep[1:] = ids[1:] != ids[:-1]
        keep &= ids != 0
        text = "".join(charset[i] for i in ids[keep] if i < len(charset))
        score = float(ps[keep].mean()) if keep.any() else 0.0
        results.append((text, score))
    return results


def _batches(widths: list[int], order: np.ndarray, max_lines: int, max_columns: int,
             slack: float = -1.0) -> list[list[int]]:
    """Consecutive runs of `order` (sorted narrow to wide) holding at most `max_lines` crops and at most
    `max_columns` padded columns in all: short lines batch many at a time, long lines few, so a batch's
    memory (and oneDNN's buffers for its shape) stays bounded whatever the page holds. With `slack` >= 0,
    a run also ends before a line more than that share wider than the run's first (padding bounded)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (len(current) >= max_lines or (len(current) + 1) * widths[i] > max_columns
                        or (slack >= 0 and widths[i] > widths[current[0]] * (1.0 + slack))):
            batches.append(current)
            current = []
        current.append(int(i))
    if current:
        batches.append(current)
    return batches


def recognise(crops: list[np.ndarray], predictor: Callable[[np.ndarray], np.ndarray], charset: list[str],
              batch: int, max_columns: int = 16 * REC_MIN_WIDTH, min_width: int = REC_MIN_WIDTH,
              interpolation: str = "linear", width_step: int = REC_WIDTH_STEP,
              slack: float = -1.0) -> list[tuple[str, float]]:
    """Text and confidence per crop, in the order given; `interpolation` names the resize to 48 px
    (a key of INTERPOLATIONS); input widths are rounded up to `width_step` columns; `slack`: see
    `_batches` (negative = batches bounded only by lines and columns)."""
    interp = INTERPOLATIONS[interpolation]
    step = max(1, int(width_step))
    widths = []
    for c in crops:
        w = max(min_width, int(math.ceil(REC_HEIGHT * c.shape[1] / max(1, c.shape[0]))))
        widths.append(int(math.ceil(w / step) * step))
    order = np.argsort(widths, kind="stable")
    results: list[tuple[str, float]] = [("", 0.0)] * len(crops)

    def read_batch(idx: list[int]) -> None:
        x = np.zeros((len(idx), 3, REC_HEIGHT, widths[idx[-1]]), dtype=np.float32)
        for row, i in enumerate(idx):
            _resize_into(x[row], crops[i], interp)
        for i, res in zip(idx, ctc_decode(predictor(x), charset)):
            results[i] = res

    batches = _batches(widths, order, batch, max_columns, slack)
    parallel = int(getattr(predictor, "parallel", 1))
    if parallel > 1 and len(batches) > 1:
        # widest (costliest) batches first: the last ones to start are short, so the workers end together
        for done in [_pool(parallel).submit(read_batch, idx) for idx in reversed(batches)]:
            done.result()
    else:
        for idx in batches:
            read_batch(idx)
    return results


@functools.lru_cache(maxsize=4)
def _pool(workers: int) -> ThreadPoolExecutor:
    """A process-wide pool per worker count (threads are made once, not per page). Its threads only prepare,
    run and decode batches; the predictor bounds how many runs overlap, however many pages use the pool."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocr-rec")
