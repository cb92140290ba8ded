"""Seal-aware reading (models/ocr/seal.py): red seals are found and their ink lightened, the print under
and around them is kept, red print that is not a seal is left alone, and the OCR option switches it."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from data.synth import generate
from models.ocr import OCRSettings
from models.ocr.seal import seal_boxes, unseal

# (doc type, seed, layout): generated pages whose tax bureau's seal sits over the title
SEALED_TITLE = [("e_invoice", 304, "einv_split"), ("e_invoice", 306, "einv_railway")]
# clean pages whose title's dark-red print touches the seal's ring: its light rims joined the ring's blob,
# which was then too wide and not ring-like, and the seal was missed (the first finder found neither)
TOUCHING_TITLE = [("e_invoice", 8005, "einv_standard"), ("e_invoice", 8022, "einv_split")]


def _bgr(image) -> np.ndarray:
    return cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR)


def _seal_red(bgr: np.ndarray) -> np.ndarray:
    f = bgr.astype(np.int16)
    b, g, r = f[..., 0], f[..., 1], f[..., 2]
    return (r > 180) & (r - g > 80) & (r - b > 70)


def _crop(a: np.ndarray, box: list[float]) -> np.ndarray:
    x0, y0, x1, y1 = (round(v) for v in box)
    return a[y0:y1 + 1, x0:x1 + 1]


def _overlaps(a: tuple[int, int, int, int], b: list[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


@pytest.mark.parametrize("doc_type,seed,layout", SEALED_TITLE)
def test_the_seal_over_a_title_is_found_and_lightened_and_the_print_kept(doc_type, seed, layout):
    image, gt = generate(doc_type, seed, layout, "none")
    bgr = _bgr(image)
    title = gt["fields"]["title"]["box"]
    assert _seal_red(_crop(bgr, title)).mean() > 0.02           # the page has its seal over the title
    out, boxes = unseal(bgr)
    assert any(_overlaps(b, title) for b in boxes), boxes
    # what stays red touches the print (kept so no stroke is thinned)
    assert _seal_red(_crop(out, title)).mean() < 0.5 * _seal_red(_crop(bgr, title)).mean()
    # the title's print (dark in the red channel too, where the seal ink is light) is untouched, under the
    # seal as well
    print_before = _crop(bgr, title)[..., 2] < 140
    assert print_before.sum() > 300 and np.array_equal(print_before, _crop(out, title)[..., 2] < 140)
    # and the seal is still found on a photo of the page
    photo, photo_gt = generate(doc_type, seed, layout, "photo")
    assert any(_overlaps(b, photo_gt["fields"]["title"]["box"]) for b in seal_boxes(_bgr(photo)))


@pytest.mark.parametrize("doc_type,seed,layout", TOUCHING_TITLE)
def test_a_seal_whose_ring_touches_the_title_print_is_found_and_the_print_kept(doc_type, seed, layout):
    image, gt = generate(doc_type, seed, layout, "none")
    bgr = _bgr(image)
    title = gt["fields"]["title"]["box"]
    assert _seal_red(_crop(bgr, title)).mean() > 0.02
    out, boxes = unseal(bgr)
    seal = [b for b in boxes if _overlaps(b, title)]
    assert len(seal) == 1, boxes
    # the box is the seal's, not the title's: narrower than the title line, about as tall as wide
    x0, y0, x1, y1 = seal[0]
    assert x1 - x0 < 0.8 * (title[2] - title[0]) and 0.5 < (y1 - y0) / (x1 - x0) < 1.0, seal
    assert _seal_red(_crop(out, title)).mean() < 0.5 * _seal_red(_crop(bgr, title)).mean()
    # this title is printed a lighter red: its strokes' cores have red below 0.62 of the paper's
    print_before = _crop(bgr, title)[..., 2] < 158
    assert print_before.sum() > 300 and np.array_equal(print_before, _crop(out, title)[..., 2] < 158)


def test_pages_without_seals_and_red_print_that_is_no_seal_are_left_alone():
    # an ID card's back: the national emblem is a red disc, not a seal (its rim alone looks like a ring)
    for doc_type, seed, level in (("e_invoice", 3, "none"), ("train_ticket", 1, "none"), ("train_ticket", 2, "photo"),
                                  ("id_card_back", 8000, "none"), ("id_card_back", 8002, "photo")):
        image, gt = generate(doc_type, seed, degrade=level, decorations=doc_type == "train_ticket")
        bgr = _bgr(image)
        out, boxes = unseal(bgr)
        assert boxes == [] and out is bgr, (doc_type, boxes)
    # the ticket number is printed red: it stays exactly as printed
    image, gt = generate("train_ticket", 1)
    assert _seal_red(_crop(_bgr(image), gt["fields"]["ticket_number"]["box"])).any()


def test_seal_aware_is_an_ocr_setting_with_its_own_fingerprint():
    off, det = OCRSettings(model="v6", seal_aware=""), OCRSettings(model="v6", seal_aware="det")
    assert OCRSettings().seal_aware == "page"                    # the default (bench/seal_bench.py)
    assert len({off.tag(), det.tag(), OCRSettings(model="v6").tag()}) == 3
    with pytest.raises(ValueError, match="seal_aware"):
        OCRSettings(seal_aware="red")


def test_the_seal_finders_version_is_in_the_fingerprint(monkeypatch):
    """A new seal finder finds seals where the old one found none, so readings cached with it are stale;
    settings with the reading off keep their fingerprint."""
    from models.ocr import engine
    on, off = OCRSettings(model="v6"), OCRSettings(model="v6", seal_aware="")
    before = on.tag(), off.tag()
    monkeypatch.setattr(engine, "SEAL_VERSION", engine.SEAL_VERSION + 1)
    assert on.tag() != before[0] and off.tag() == before[1]


@pytest.mark.heavy
def test_seal_aware_reading_reads_a_title_under_its_seal():
    from models.ocr import OCREngine
    from models.ocr.eval import edit_distance, line_pairs
    image, gt = generate("e_invoice", 304, "einv_split", "none")
    title = gt["fields"]["title"]["line"]
    gt_lines = [(ln["text"], ln["box"]) for ln in gt["lines"]]
    errors = {}
    for mode in ("", "page"):
        page = OCREngine(OCRSettings(model="v6", cpu_threads=1, seal_aware=mode)).read(_bgr(image))
        ref, hyp = line_pairs([(ln.text, ln.box) for ln in page.lines], gt_lines)[title]
        errors[mode] = edit_distance(ref, hyp)
    assert errors["page"] == 0 and errors[""] > 0, errors


@pytest.mark.heavy
def test_a_title_whose_print_touches_the_seal_is_read():
    """e_invoice 8005: the seal over 电子发票（普通发票） touches its strokes; found, its ink painted over, the
    title reads (it was read 电子发?票 or lost before the seal was found)."""
    from models.ocr import OCREngine
    from models.ocr.eval import edit_distance, line_pairs
    doc_type, seed, layout = TOUCHING_TITLE[0]
    image, gt = generate(doc_type, seed, layout, "none")
    title = gt["fields"]["title"]["line"]
    gt_lines = [(ln["text"], ln["box"]) for ln in gt["lines"]]
    page = OCREngine(OCRSettings(model="v6", cpu_threads=1)).read(_bgr(image))
    ref, hyp = line_pairs([(ln.text, ln.box) for ln in page.lines], gt_lines)[title]
    assert edit_distance(ref, hyp) <= 1, (ref, hyp)


@pytest.mark.heavy
def test_seal_reread_reads_print_under_a_seal_from_the_red_channel():
    """The seller's seal over its name and code (vat_invoice 7101, light): painting the seal over leaves its
    ink where it touches the print; the red channel of the original crop shows the print alone."""
    from models.ocr import OCREngine
    from models.ocr.eval import edit_distance, line_pairs
    image, gt = generate("vat_invoice", 7101, degrade="light")
    keys = [gt["fields"][k]["line"] for k in ("seller_name", "seller_tax_id")]
    gt_lines = [(ln["text"], ln["box"]) for ln in gt["lines"]]
    errors = {}
    for reread in (False, True):
        page = OCREngine(OCRSettings(model="v6", cpu_threads=1, seal_reread=reread)).read(_bgr(image))
        pairs = line_pairs([(ln.text, ln.box) for ln in page.lines], gt_lines)
        errors[reread] = sum(edit_distance(*pairs[i]) for i in keys)
    assert errors[True] < errors[False], errors
