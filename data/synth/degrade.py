"""Photo and scan degradations, with the geometry carried through.

All geometric effects (down-scaling, rotation, perspective, the table the page lies on) are folded
into one homography, applied once to the image and to every ground-truth point, so boxes stay exact
in the final image's pixels. Photometric effects (shadow, blur, noise, JPEG) come after and move
nothing.

Levels: none (clean page), light (a careful scan or phone photo), photo (a quick phone photo of a
page on a desk: tilt, perspective, shadow, blur, noise, strong JPEG, at the resolution a phone or a
forwarded chat image keeps, 0.85-1.0 of the render), heavy (the same photo shrunk to 0.5-0.85 of the
render: on the invoice layouts characters of 6-9 px that people cannot read either), mix (per page:
30% none, 40% light, 30% heavy; photo is not drawn by mix, so corpora generated before it existed
stay byte-identical).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

LEVELS = ("none", "light", "photo", "heavy", "mix")


@dataclass
class Degradation:
    """What was done to a page; `matrix` maps clean-page pixels to final-image pixels."""
    level: str
    matrix: np.ndarray
    width: int
    height: int

    def points(self, pts: list[list[float]]) -> list[list[float]]:
        arr = np.asarray(pts, dtype=np.float64).reshape(-1, 1, 2)
        out = cv2.perspectiveTransform(arr, self.matrix).reshape(-1, 2)
        return [[float(x), float(y)] for x, y in out]


def _geometry(rng: random.Random, w: int, h: int, level: str) -> tuple[np.ndarray, int, int]:
    """Homography and output size for the level."""
    if level == "light":
        scale = rng.uniform(0.8, 1.0)
        angle = rng.uniform(-2.0, 2.0)
        jitter = rng.uniform(0.0, 0.012)
        margin = rng.uniform(0.0, 0.03)
    else:  # heavy, photo: the same hand-held geometry; photo keeps the page's resolution
        scale = rng.uniform(0.5, 0.85) if level == "heavy" else rng.uniform(0.85, 1.0)
        angle = rng.uniform(-8.0, 8.0)
        jitter = rng.uniform(0.01, 0.05)
        margin = rng.uniform(0.02, 0.1)
    sw, sh = w * scale, h * scale
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    corners = np.array([[0, 0], [sw, 0], [sw, sh], [0, sh]], dtype=np.float64) - [sw / 2, sh / 2]
    t = np.radians(angle)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    corners = corners @ rot.T
    d = jitter * min(sw, sh)
    corners += np.array([[rng.uniform(-d, d), rng.uniform(-d, d)] for _ in range(4)])
    pad = margin * max(sw, sh)
    corners -= corners.min(axis=0) - pad
    out_w = int(np.ceil(corners[:, 0].max() + pad))
    out_h = int(np.ceil(corners[:, 1].max() + pad))
    return cv2.getPerspectiveTransform(src, corners.astype(np.float32)), out_w, out_h


def _shadow(rng: random.Random, img: np.ndarray, strength: float) -> np.ndarray:
    """A soft shadow across the page, as from a hand or a phone over it."""
    h, w = img.shape[:2]
    # the shade is smooth: compute it on a grid 8x coarser and scale it up
    ch, cw = max(2, h // 8), max(2, w // 8)
    yy, xx = np.mgrid[0:ch, 0:cw].astype(np.float32)
    xx *= w / cw
    yy *= h / ch
    a = rng.uniform(0, 2 * np.pi)
    proj = (xx - w / 2) * np.cos(a) + (yy - h / 2) * np.sin(a)
    edge = rng.uniform(-0.3, 0.3) * max(w, h)
    soft = rng.uniform(0.05, 0.2) * max(w, h)
    shade = 1 - strength / (1 + np.exp(-(proj - edge) / soft))
    shade = cv2.resize((shade * 255).astype(np.uint8), (w, h), interpolation=cv2.INTER_LINEAR)
    return cv2.multiply(img, cv2.merge([shade, shade, shade]), scale=1 / 255)


def degrade(image: Image.Image, rng: random.Random, level: str) -> tuple[Image.Image, Degradation]:
    """Apply a degradation level; returns the new image and the geometry to move points with."""
    if level not in LEVELS:
        raise ValueError(f"degrade level {level!r} is not one of {', '.join(LEVELS)}")
    if level == "mix":
        level = rng.choices(("none", "light", "heavy"), weights=(3, 4, 3))[0]
    w, h = image.size
    if level == "none":
        return image, Degradation("none", np.eye(3), w, h)

    matrix, out_w, out_h = _geometry(rng, w, h, level)
    desk = tuple(int(v) for v in (rng.randint(60, 200), rng.randint(60, 190), rng.randint(50, 180)))
    arr = cv2.warpPerspective(np.asarray(image), matrix, (out_w, out_h), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_CONSTANT, borderValue=desk)
    # photometric effects on uint8 with OpenCV's saturating arithmetic: a float copy of a
    # 1.5-megapixel page costs more than all the effects together
    np_rng = np.random.default_rng(rng.randrange(2 ** 32))
    hard = level in ("heavy", "photo")
    if hard or rng.random() < 0.5:
        tint = (rng.uniform(0.85, 1.05), rng.uniform(0.85, 1.03), rng.uniform(0.8, 1.0), 0)
        arr = cv2.multiply(arr, tint)
    if rng.random() < (0.6 if hard else 0.2):
        arr = _shadow(rng, arr, rng.uniform(0.15, 0.45 if hard else 0.25))
    if rng.random() < (0.7 if hard else 0.3):
        k = rng.choice((3, 5) if hard else (3,))
        arr = cv2.GaussianBlur(arr, (k, k), rng.uniform(0.5, 1.4 if hard else 0.8))
    sigma = rng.uniform(2, 12) if hard else rng.uniform(0, 4)
    if sigma > 0.5:
        # a 256x256 tile of sensor noise repeated over the page: looks the same, costs far less
        tile = (np_rng.standard_normal((256, 256, 3), dtype=np.float32) * sigma).astype(np.int16)
        reps = (-(-arr.shape[0] // 256), -(-arr.shape[1] // 256), 1)
        noise = np.tile(tile, reps)[:arr.shape[0], :arr.shape[1]]
        arr = cv2.add(arr, noise, dtype=cv2.CV_16S).clip(0, 255).astype(np.uint8)
    quality = rng.randint(35, 75) if hard else rng.randint(70, 95)
    # RGB goes through as if it were BGR and comes back the same way: the artefacts are JPEG's
    # either way, and two channel flips of the whole page are saved
    ok, buf = cv2.imencode(".jpg", arr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("OpenCV could not JPEG-encode a page; check the opencv install")
    decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if decoded is None:
        raise RuntimeError("OpenCV could not decode the JPEG it just encoded; check the opencv install")
    return Image.fromarray(decoded), Degradation(level, matrix, out_w, out_h)
