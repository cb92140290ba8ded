"""Text detection: resize a page for the DB model, then turn its probability map into line quads.

DB (differentiable binarisation) predicts, per pixel, the chance that it lies inside a shrunk text
region. A line is a connected region above `thresh`; its minimum-area rectangle is grown back by the
shrink distance (area * unclip_ratio / perimeter, DB's own formula). For a rectangle, growing every
side by that distance is exact, so no polygon-offset library is needed.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# ImageNet statistics, applied to the BGR image exactly as PP-OCR's det models were trained.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

UPSCALE_BELOW = 1200          # pages whose longer side is under this are scaled up to it for the detector
SMALL_TEXT_MIN_LINES = 8      # fewer lines than this say too little about a page's type size to re-detect


@dataclass(frozen=True)
class DetParams:
    limit_side_len: int = 960     # the longer side is scaled down to this (never up)
    thresh: float = 0.3           # pixel probability that counts as text
    box_thresh: float = 0.6       # mean probability inside a box to keep it
    unclip_ratio: float = 1.5
    min_side: float = 3.0         # boxes thinner than this (in map pixels) are noise
    max_candidates: int = 1000
    upscale_below: int = UPSCALE_BELOW   # smaller pages are scaled up so their longer side is this
    dilate: bool = False          # grow the text mask by one map pixel (2x2) before finding regions
    small_text_px: float = 0.0    # median line height (detector input pixels) under which the page is detected
                                  # again, scaled up so that height becomes `small_text_target` (0 = off)
    small_text_target: float = 22.0
    small_text_max_side: int = 2880   # the longer side of that second, scaled-up detector input at most


def resize_for_det(image: np.ndarray, limit_side_len: int, upscale_below: int = UPSCALE_BELOW
                   ) -> tuple[np.ndarray, float, float]:
    """Scale so the longer side is at most `limit_side_len`, both sides multiples of 32 (the net's stride);
    a page whose longer side is under `upscale_below` is scaled up to that instead."""
    h, w = image.shape[:2]
    scale = min(1.0, limit_side_len / max(h, w))
    if max(h, w) < upscale_below:   # small, low-resolution pages: the detector misses text under ~10 px
        scale = upscale_below / max(h, w)
    nh = max(32, int(round(h * scale / 32)) * 32)
    nw = max(32, int(round(w * scale / 32)) * 32)
    resized = cv2.resize(image, (nw, nh)) if (nh, nw) != (h, w) else image
    return resized, nh / h, nw / w


def resize_by(image: np.ndarray, scale: float) -> tuple[np.ndarray, float, float]:
    """Scale by `scale`, both sides rounded to multiples of 32 (the net's stride); (image, sy, sx)."""
    h, w = image.shape[:2]
    nh = max(32, int(round(h * scale / 32)) * 32)
    nw = max(32, int(round(w * scale / 32)) * 32)
    return cv2.resize(image, (nw, nh), interpolation=cv2.INTER_CUBIC), nh / h, nw / w


def line_height(quads: list[np.ndarray]) -> float:
    """Median of the lines' shorter sides (the type size, for horizontal and vertical lines alike)."""
    return float(np.median([min(np.linalg.norm(q[0] - q[1]), np.linalg.norm(q[0] - q[3])) for q in quads]))


def small_text_zoom(quads: list[np.ndarray], scale: float, long_side: int, p: DetParams) -> float:
    """How much to scale up a detector input (`long_side` pixels, `scale` x the page) whose lines (`quads`,
    page pixels) are so small that the detector reads them poorly: DB finds lines on a shrunk text mask, and
    at a type size of ~10 px neighbouring columns merge and the crops come out a few pixels high. 1.0 = no
    second pass: few lines, type large enough, or no room left under `small_text_max_side`."""
    if not p.small_text_px or len(quads) < SMALL_TEXT_MIN_LINES:
        return 1.0
    height = line_height(quads) * scale
    if height >= p.small_text_px:
        return 1.0
    zoom = min(p.small_text_target / max(height, 1.0), p.small_text_max_side / max(1, long_side))
    return zoom if zoom >= 1.2 else 1.0


def det_input(image: np.ndarray, mean: tuple[float, float, float] = IMAGENET_MEAN,
              std: tuple[float, float, float] = IMAGENET_STD) -> np.ndarray:
    """HWC BGR uint8 -> 1x3xHxW float32, normalised per channel: (x / 255 - mean) / std, folded into one
    multiply-add per pixel."""
    scale = (1.0 / (255.0 * np.asarray(std, dtype=np.float32))).reshape(1, 1, 3)
    shift = (-np.asarray(mean, dtype=np.float32) / np.asarray(std, dtype=np.float32)).reshape(1, 1, 3)
    x = image.astype(np.float32) * scale + shift
    return np.ascontiguousarray(x.transpose(2, 0, 1))[None]


def order_quad(points: np.ndarray) -> np.ndarray:
    """Four points -> clockwise from top-left (smallest x+y first)."""
    pts = points[np.argsort(points[:, 0])]
    left, right = pts[:2], pts[2:]
    tl, bl = left[np.argsort(left[:, 1])]
    tr, br = right[np.argsort(right[:, 1])]
    return np.array([tl, tr, br, bl], dtype=np.float32)


def _box_score(prob: np.ndarray, quad: np.ndarray) -> float:
    """Mean probability inside the quad (computed on its bounding crop only, for speed)."""
    h, w = prob.shape
    x0 = int(np.clip(np.floor(quad[:, 0].min()), 0, w - 1))
    x1 = int(np.clip(np.ceil(quad[:, 0].max()), 0, w - 1))
    y0 = int(np.clip(np.floor(quad[:, 1].min()), 0, h - 1))
    y1 = int(np.clip(np.ceil(quad[:, 1].max()), 0, h - 1))
    mask = np.zeros((y1 - y0 + 1, x1 - x0 + 1), dtype=np.uint8)
    cv2.fillPoly(mask, [(quad - [x0, y0]).astype(np.int32)], 1)
    return float(cv2.mean(prob[y0:y1 + 1, x0:x1 + 1], mask)[0])


def boxes_from_prob(prob: np.ndarray, scale_y: float, scale_x: float, src_h: int, src_w: int,
                    p: DetParams) -> list[np.ndarray]:
    """Probability map (H x W) -> quads (4x2 float32) in source-image pixels."""
    mask = (prob > p.thresh).astype(np.uint8)
    bitmap = cv2.dilate(mask, np.ones((2, 2), np.uint8)) if p.dilate else mask
    contours, _ = cv2.findContours(bitmap, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    quads: list[np.ndarray] = []
    for contour in contours[: p.max_candidates]:
        rect = cv2.minAreaRect(contour)
        if min(rect[1]) < p.min_side:
            continue
        quad = cv2.boxPoints(rect)
        if _box_score(prob, quad) < p.box_thresh:
            continue
        (cx, cy), (rw, rh), angle = rect
        distance = rw * rh * p.unclip_ratio / (2 * (rw + rh))
        grown = ((cx, cy), (rw + 2 * distance, rh + 2 * distance), angle)
        if min(grown[1]) < p.min_side + 2:
            continue
        quad = order_quad(cv2.boxPoints(grown))
        quad[:, 0] = np.clip(quad[:, 0] / scale_x, 0, src_w - 1)
        quad[:, 1] = np.clip(quad[:, 1] / scale_y, 0, src_h - 1)
        if min(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[0] - quad[3])) <= 3:
            continue
        quads.append(quad)
    return quads
