"""Red seals stamped over text: the seller's oval 发票专用章, the round company seal and the tax bureau's
supervision seal on invoice titles. Blended by multiplication, so the text under a seal stays
readable the way it does on paper. Seal text is decoration: it leaves no ground-truth lines.
"""
from __future__ import annotations

import math
import random

import numpy as np
from PIL import Image, ImageDraw

from data.fonts import pil_font


def _arc_text(mask: Image.Image, text: str, cx: float, cy: float, rx: float, ry: float,
              size: int, span_deg: float, style: str = "song_bold") -> None:
    """Characters along the top of an ellipse, each turned to face the centre."""
    font = pil_font(style, size)
    n = len(text)
    for i, ch in enumerate(text):
        # angle measured from the top, clockwise
        a = math.radians(-span_deg / 2 + span_deg * (i + 0.5) / n)
        x = cx + rx * math.sin(a)
        y = cy - ry * math.cos(a)
        glyph = Image.new("L", (size + 6, size + 6), 0)
        ImageDraw.Draw(glyph).text(((size + 6) / 2, (size + 6) / 2), ch, font=font, fill=255, anchor="mm")
        glyph = glyph.rotate(-math.degrees(a), resample=Image.Resampling.BILINEAR, expand=True)
        mask.paste(255, (round(x - glyph.width / 2), round(y - glyph.height / 2)), glyph)


def seal_mask(rng: random.Random, company: str, middle: str, bottom: str, width: int, height: int,
              star: bool = False) -> Image.Image:
    """An L mask (255 = ink) of an oval or round seal."""
    mask = Image.new("L", (width, height), 0)
    d = ImageDraw.Draw(mask)
    border = max(3, width // 45)
    d.ellipse([border, border, width - border - 1, height - border - 1], outline=255, width=border)
    cx, cy = width / 2, height / 2
    size = max(10, int(min(width, height) * 0.16))
    _arc_text(mask, company, cx, cy, width / 2 - border - size * 0.8, height / 2 - border - size * 0.8,
              size, 230 if star else 210)
    if star:
        r = min(width, height) * 0.16
        pts = [(cx + (r if k % 2 == 0 else r * 0.4) * math.sin(math.pi * k / 5),
                cy - (r if k % 2 == 0 else r * 0.4) * math.cos(math.pi * k / 5)) for k in range(10)]
        d.polygon(pts, fill=255)
    if middle:
        mfont = pil_font("hei", max(9, int(size * 0.75)))
        d.text((cx, cy), middle, font=mfont, fill=255, anchor="mm")
    if bottom:
        bfont = pil_font("song_bold", size)
        d.text((cx, cy + height * 0.27), bottom, font=bfont, fill=255, anchor="mm")
    # uneven ink: a stamp never prints solid
    arr = np.asarray(mask, dtype=np.float32)
    noise = np.random.default_rng(rng.randrange(2 ** 32)).uniform(0.55, 1.0, arr.shape)
    return Image.fromarray((arr * noise).astype(np.uint8))


def stamp(image: Image.Image, mask: Image.Image, center: tuple[float, float], rng: random.Random,
          color: tuple[int, int, int] = (215, 30, 35), angle: float | None = None,
          strength: float = 0.85) -> None:
    """Multiply a coloured seal onto `image` in place, rotated by `angle` degrees."""
    angle = rng.uniform(-25, 25) if angle is None else angle
    m = mask.rotate(angle, resample=Image.Resampling.BILINEAR, expand=True)
    x0, y0 = round(center[0] - m.width / 2), round(center[1] - m.height / 2)
    # clip to the image
    ix0, iy0 = max(0, x0), max(0, y0)
    ix1, iy1 = min(image.width, x0 + m.width), min(image.height, y0 + m.height)
    if ix1 <= ix0 or iy1 <= iy0:
        return
    alpha = np.asarray(m, dtype=np.float32)[iy0 - y0:iy1 - y0, ix0 - x0:ix1 - x0, None] / 255 * strength
    region = np.asarray(image.crop((ix0, iy0, ix1, iy1)), dtype=np.float32)
    tint = np.array(color, dtype=np.float32) / 255
    out = region * (1 - alpha * (1 - tint))
    image.paste(Image.fromarray(out.clip(0, 255).astype(np.uint8)), (ix0, iy0))


def seal_red(rng: random.Random) -> tuple[int, int, int]:
    """The ink of a stamped or digitally printed seal: a saturated red (high R, low G and B), unlike the
    brown, dark-red or black print of the forms it sits on."""
    return rng.randint(205, 235), rng.randint(10, 40), rng.randint(20, 50)


def tax_bureau_seal(image: Image.Image | None, rng: random.Random, province: str, center: tuple[float, float],
                    scale: float) -> None:
    """The tax bureau's oval 全国统一发票监制 seal of an e-invoice title, in saturated red, whole on the page
    (moved down if `center` would cut its top off). `image` None (a text-only page) draws nothing but takes
    the same random draws, so the values stay the same."""
    srng = random.Random(rng.getrandbits(32))
    if image is None:
        return
    width, height = int(180 * scale), int(118 * scale)
    mask = seal_mask(srng, "全国统一发票监制", "国家税务总局", f"{province}税务局", width, height)
    center = (center[0], max(center[1], height / 2 + 4 * scale))
    stamp(image, mask, center, srng, color=seal_red(srng), angle=srng.uniform(-3, 3),
          strength=srng.uniform(0.75, 0.95))
