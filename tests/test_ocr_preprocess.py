"""The OCR engine's preprocessing knobs (models/ocr/det.resize_for_det, models/ocr/rec crop filters,
crop height and resize interpolation) and that OCRSettings wires them through the engine."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

import models.ocr.rec as ocr_rec
from data.fonts import pil_font
from models.ocr import OCRSettings, get_engine
from models.ocr.det import resize_for_det
from models.ocr.rec import crop_line, filter_crop, recognise


def test_small_pages_are_scaled_up_to_the_given_side():
    page = np.full((400, 600, 3), 255, np.uint8)
    up, sy, sx = resize_for_det(page, 960, upscale_below=1600)
    assert up.shape[1] == 1600 and up.shape[0] % 32 == 0 and abs(up.shape[0] - 1067) <= 16
    assert sx == pytest.approx(1600 / 600) and sy == pytest.approx(up.shape[0] / 400)
    same, _, _ = resize_for_det(page, 960, upscale_below=0)      # no upscaling: only rounding to 32
    assert same.shape[:2] == (384, 608)


def test_thin_line_is_warped_straight_to_min_height():
    page = np.full((100, 300, 3), 255, np.uint8)
    quad = np.array([[10, 20], [210, 20], [210, 30], [10, 30]], np.float32)   # 200 x 10 px line
    assert crop_line(page, quad).shape[:2] == (10, 200)
    assert crop_line(page, quad, min_height=48).shape[:2] == (48, 960)       # aspect ratio kept
    tall = np.array([[10, 10], [30, 10], [30, 90], [10, 90]], np.float32)    # vertical text: turned
    assert crop_line(page, tall, min_height=48).shape[:2] == (48, 192)


def test_crop_filters():
    rng = np.random.default_rng(0)
    noisy = rng.integers(0, 256, size=(12, 80, 3), dtype=np.uint8)
    blurred = filter_crop(noisy, "blur")
    assert blurred.shape == noisy.shape and blurred.std() < 0.6 * noisy.std()
    assert filter_crop(noisy, "") is noisy
    faded = np.full((12, 80, 3), 120, np.uint8)
    faded[:, ::4] = 150
    stretched = filter_crop(faded, "stretch")
    assert stretched.min() == 0 and stretched.max() == 255
    with pytest.raises(ValueError, match="choose from blur"):
        filter_crop(noisy, "blur,sharpen")


def test_recognise_resizes_with_the_named_interpolation():
    crop = np.zeros((12, 40, 3), np.uint8)
    crop[:, ::2] = 255                                             # fine stripes: kernels differ most here
    seen = []

    def predictor(x):
        seen.append(x.copy())
        return np.zeros((x.shape[0], 4, 3), np.float32)
    for name in ("linear", "cubic"):
        recognise([crop], predictor, ["<blank>", "a", " "], batch=4, interpolation=name)
    assert seen[0].shape == seen[1].shape == (1, 3, 48, 320)
    assert not np.allclose(seen[0], seen[1])
    with pytest.raises(KeyError):
        recognise([crop], predictor, ["<blank>", "a", " "], batch=4, interpolation="nearest-ish")


@pytest.mark.heavy
def test_degraded_photo_settings_read_a_page_through_the_filter(monkeypatch):
    """The settings bench/README.md suggests for heavily degraded photos (fp32 + blurred crops) run the
    filter on every line and still read a clean page exactly."""
    lines = ["增值税专用发票", "发票号码：12345678"]
    img = Image.new("RGB", (700, 220), "white")
    draw = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        draw.text((40, 40 + i * 80), text, fill="black", font=pil_font("hei", 40))
    calls = []
    blur = ocr_rec.CROP_FILTERS["blur"]
    monkeypatch.setitem(ocr_rec.CROP_FILTERS, "blur", lambda c: calls.append(c.shape) or blur(c))
    page = get_engine(OCRSettings(rec_bf16=False, rec_crop_filter="blur")).read(np.asarray(img)[:, :, ::-1].copy())
    assert [ln.text for ln in page.lines] == lines
    assert len(calls) == len(page.lines)


def test_show_through_is_the_faint_and_unsure_lines_only():
    from models.ocr.engine import faint_lines
    dark = np.full((32, 200), 255, np.uint8)
    dark[10:20, 20:180] = 20                                  # print: the grey range of the page's boldest lines
    faint = np.full((32, 200), 255, np.uint8)
    faint[10:20, 20:180] = 233                               # mirrored print from the back, ~9% of that range
    crops = [dark] * 6 + [faint]
    unsure = [("姓名", 1.0)] * 6 + [("学大业工", 0.8)]
    assert faint_lines(crops, unsure, 0.15) == {6}
    assert faint_lines(crops, unsure[:6] + [("证券研究报告", 0.999)], 0.15) == set()   # faint but read surely
    assert faint_lines(crops, unsure, 0.0) == set()                                  # switched off
    assert faint_lines(crops[-3:], unsure[-3:], 0.15) == set()                       # too few lines to judge


@pytest.mark.heavy
def test_mirrored_text_showing_through_the_paper_is_dropped_and_the_print_kept():
    from PIL import ImageOps
    page = Image.new("L", (900, 700), 255)
    draw = ImageDraw.Draw(page)
    font = pil_font("song", 26)
    printed = ["研究方向：计算机视觉", "学位类别：工学硕士", "所在学院：机械工程学院", "论文答辩日期：2023-07-07",
               "学科专业名称：法学", "指导教师：程强燕"]
    for i, t in enumerate(printed):
        draw.text((120, 60 + 100 * i), t, font=font, fill=0)
    back = Image.new("L", page.size, 0)
    bd = ImageDraw.Draw(back)
    for i, t in enumerate(["河北工业大学硕士学位论文", "乡村振兴背景下农村电商发展", "二〇二四年六月"]):
        bd.text((150, 110 + 200 * i), t, font=font, fill=255)
    alpha = np.asarray(ImageOps.mirror(back), np.float32) / 255 * 0.08
    img = (np.asarray(page, np.float32) * (1 - alpha)).astype(np.uint8)
    bgr = np.repeat(img[..., None], 3, axis=2)
    kept = [ln.text for ln in get_engine(OCRSettings(model="v6")).read(bgr).lines]
    every = [ln.text for ln in get_engine(OCRSettings(model="v6", faint_below=0.0)).read(bgr).lines]
    assert all(any(p.split("：")[0] in t for t in kept) for p in printed)
    assert len(every) > len(kept) and len(kept) <= len(printed) + 1


def test_dropping_show_through_is_in_the_fingerprint():
    on, off = OCRSettings(model="v6"), OCRSettings(model="v6", faint_below=0.0)
    assert on.tag() != off.tag()
    assert off.tag() == OCRSettings(model="v6", faint_below=0).tag()
