"""models/ocr/engine.py, models/ocr/eval.py and `python -m app ocr`.

The engine is loaded once per test session (get_engine caches it per process); tests that run real
OCR are marked heavy and kept to small images.
"""
from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from data.document import Document, Line, box_to_quad
from data.fonts import pil_font
from data.io import load_pages
from models.ocr import OCRSettings, get_engine, reading_order
from models.ocr.eval import edit_distance, page_counts, substring_distance


@pytest.fixture(scope="session")
def engine():
    return get_engine(OCRSettings())


def _text_page(lines: list[str], size: int = 40, width: int = 900) -> np.ndarray:
    """A white BGR page with one Chinese line per row, drawn with a CJK font."""
    img = Image.new("RGB", (width, 60 + len(lines) * size * 2), "white")
    draw = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        draw.text((40, 40 + i * size * 2), text, fill="black", font=pil_font("song", size))
    return np.ascontiguousarray(np.asarray(img)[:, :, ::-1])


PAGE_LINES = ["增值税专用发票", "发票号码：12345678", "价税合计：壹仟贰佰元整"]


# --- pure functions (no model) -------------------------------------------------------------------------

def test_reading_order_rows_then_columns():
    def ln(text, x0, y0, x1, y1):
        return Line(text=text, quad=box_to_quad([x0, y0, x1, y1]))
    # row 1 has a taller title and a slightly higher small label to its right; row 2 is two cells
    lines = [ln("c", 400, 110, 500, 130), ln("b", 300, 8, 400, 28), ln("a", 10, 0, 200, 40),
             ln("d", 10, 112, 100, 128)]
    assert [x.text for x in reading_order(lines)] == ["a", "b", "d", "c"]


def test_edit_distances():
    assert edit_distance("发票号码", "发票号吗") == 1
    assert edit_distance("", "abc") == 3 and edit_distance("abc", "") == 3
    assert substring_distance("12345678", "号码：12345678 日期") == 0
    assert substring_distance("12345678", "号码：1234567") == 1


def test_page_counts_match_by_box_and_flag_long_numbers():
    gt = [("发票号码：12345678", [0, 0, 200, 20]), ("合计", [0, 50, 50, 70]), ("备注", None)]
    ocr = [("发票号码:", [0, 0, 80, 20]), ("12345679", [90, 0, 200, 20]), ("合计", [0, 50, 50, 70]),
           ("备注", [300, 300, 340, 320])]
    c = page_counts(ocr, gt)
    assert c.chars == len("发票号码:12345678") + 2 + 2      # NFKC turns '：' into ':'
    assert c.errors == 1 and c.numbers == 1 and c.numbers_exact == 0 and c.missed_numbers == ["12345678"]


# --- the engine --------------------------------------------------------------------------------------------

@pytest.mark.heavy
def test_rendered_page_reads_exactly_in_order(engine):
    page = engine.read(_text_page(PAGE_LINES), page_index=3)
    assert [ln.text for ln in page.lines] == PAGE_LINES
    assert page.index == 3 and page.rotation == 0
    for ln in page.lines:
        assert len(ln.quad) == 4 and 0.5 < ln.score <= 1.0
        x0, y0, x1, y1 = ln.box
        assert 0 <= x0 < x1 <= page.width and 0 <= y0 < y1 <= page.height


@pytest.mark.heavy
@pytest.mark.parametrize("turn,expected", [(cv2.ROTATE_90_CLOCKWISE, 270), (cv2.ROTATE_180, 180),
                                           (cv2.ROTATE_90_COUNTERCLOCKWISE, 90)])
def test_rotated_page_comes_out_upright(engine, turn, expected):
    upright = _text_page(PAGE_LINES)
    page = engine.read(cv2.rotate(upright, turn))
    assert page.rotation == expected
    assert (page.height, page.width) == upright.shape[:2]
    assert [ln.text for ln in page.lines] == PAGE_LINES
    # quads are in the upright page's frame: the first line sits near the top-left, as drawn
    x0, y0, _, _ = page.lines[0].box
    assert x0 < 80 and y0 < 80


@pytest.mark.heavy
def test_pdf_page_with_chinese_text(engine, tmp_path):
    path = tmp_path / "doc.pdf"
    Image.fromarray(_text_page(PAGE_LINES)[:, :, ::-1]).save(path, "PDF", resolution=150)
    [image] = load_pages(path, dpi=200)
    assert image.shape[1] == round(900 / 150 * 200)
    # NFKC: whether the colon comes out full- or half-width depends on the model and the render (v6 reads
    # this 200-dpi page's '：' as ':'); everything downstream normalises it (data/normalize.py)
    assert [unicodedata.normalize("NFKC", ln.text) for ln in engine.read(image).lines] == [
        unicodedata.normalize("NFKC", t) for t in PAGE_LINES]


@pytest.mark.heavy
def test_real_line_crops(engine, samples_dir):
    """The six real single-line samples, one upside down: total CER under 5%."""
    errors = chars = 0
    for gt_path in sorted((samples_dir / "gt").glob("rec_*.json")):
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        page = engine.read(cv2.imread(str(samples_dir / gt["image"])))
        want = gt["lines"][0]["text"]
        errors += edit_distance(want, "".join(ln.text for ln in page.lines))
        chars += len(want)
        if "rot180" in gt_path.name:
            assert page.rotation == 180 and page.text == want
    assert errors / chars < 0.05, f"CER {errors / chars:.3f}"


@pytest.mark.heavy
def test_real_invoice_cer_and_numbers(engine, samples_dir):
    gt = json.loads((samples_dir / "gt" / "metagpt_invoice_1.json").read_text(encoding="utf-8"))
    page = engine.read(cv2.imread(str(samples_dir / gt["image"])))
    c = page_counts([(ln.text, ln.box) for ln in page.lines], [(g["text"], g.get("box")) for g in gt["lines"]])
    assert c.cer < 0.06, f"CER {c.cer:.3f}"
    assert "07099363" in page.text and "00100210001" in page.text


@pytest.mark.heavy
def test_generated_vat_invoice(engine, tmp_path):
    """A clean generated VAT invoice: CER < 2%, invoice number and both tax IDs exact."""
    out = tmp_path / "vat"
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "vat_invoice", "--n", "1", "--seed", "3",
                    "--degrade", "none", "--out", str(out)], check=True, capture_output=True)
    [gt_path] = sorted(out.glob("*.json"))
    gt = json.loads(gt_path.read_text(encoding="utf-8"))
    page = engine.read(cv2.imread(str(gt_path.with_suffix(".jpg"))))
    c = page_counts([(ln.text, ln.box) for ln in page.lines], [(g["text"], g.get("box")) for g in gt["lines"]])
    assert c.cer < 0.02, f"CER {c.cer:.4f}"
    text = "".join(page.text.split())
    for key in ("invoice_number", "buyer_tax_id", "seller_tax_id"):
        value = gt["fields"][key]["value"] if isinstance(gt["fields"][key], dict) else gt["fields"][key]
        assert value in text, f"{key} {value} not read exactly"


@pytest.mark.heavy
def test_default_precision_reads_like_fp32():
    """The v4 engine's default (bf16 recognition where the CPU has it) reads a page exactly like fp32 does,
    with nearly the same confidences, so the speed-up costs no accuracy."""
    fp32 = get_engine(OCRSettings(model="v4", rec_bf16=False))
    image = _text_page(PAGE_LINES + ["统一社会信用代码：91110108MA01234567"])
    fast, exact = get_engine(OCRSettings(model="v4")).read(image), fp32.read(image)
    assert [ln.text for ln in fast.lines] == [ln.text for ln in exact.lines] == PAGE_LINES + [
        "统一社会信用代码：91110108MA01234567"]
    for a, b in zip(fast.lines, exact.lines):
        assert abs(a.score - b.score) < 0.03 and a.quad == b.quad


# --- the CLI -------------------------------------------------------------------------------------------------

@pytest.mark.heavy
def test_cli_ocr_writes_json_and_overlay(tmp_path, capsys, engine):
    from app.cli import main
    img = tmp_path / "page.png"
    cv2.imwrite(str(img), _text_page(PAGE_LINES[:2]))
    out, draw = tmp_path / "out.json", tmp_path / "draw"
    assert main(["ocr", str(img), "--json", str(out), "--draw", str(draw)]) == 0
    printed = capsys.readouterr().out
    assert "发票号码：12345678" in printed
    doc = Document.from_json(out.read_text(encoding="utf-8"))
    assert doc.source == str(img) and [ln.text for ln in doc.pages[0].lines] == PAGE_LINES[:2]
    assert {"decode", "det", "rec", "total"} <= set(doc.timings)
    overlay = cv2.imread(str(draw / "page_p1.png"))
    assert overlay is not None and overlay.shape[:2] == cv2.imread(str(img)).shape[:2]


def test_cli_bad_input_is_one_line_and_nonzero(tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not an image", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "app", "ocr", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1         # a document that failed (app/cli.py EXIT_STATUS); 2 is for usage errors
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "notes.jpg" in errors[0] and "looks like text" in errors[0]


def test_cli_help_lists_subcommands():
    proc = subprocess.run([sys.executable, "-m", "app", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "ocr" in proc.stdout


def test_weak_lines_are_read_again_through_the_retry_filter_keeping_the_surer_reading(engine, monkeypatch):
    """Lines under rec_retry_below go through recognition a second time on filtered crops; each keeps
    whichever reading is more confident, and confident lines are not read again."""
    import models.ocr.engine as ocr_mod
    first = {"增值税专用发票": ("增值税专用发票", 0.99), "发票号码：12345678": ("发票号码：1234S678", 0.62),
             "价税合计：壹仟贰佰元整": ("价税合计：壹仟贰佰元整", 0.80)}
    calls = []
    real = ocr_mod.recognise

    def fake(crops, *args, **kw):
        truth = real(crops, *args, **kw)       # what the line really says (the real model on the crop)
        calls.append(len(crops))
        if len(calls) == 1:
            return [first[t] for t, _ in truth]
        return [("发票号码：12345678", 0.70) if t.startswith("发票号码") else (t, 0.75) for t, _ in truth]
    monkeypatch.setattr(ocr_mod, "recognise", fake)
    page = engine.read(_text_page(PAGE_LINES))
    assert calls == [3, 2]                      # the 0.99 line is not read again
    assert [(ln.text, ln.score) for ln in page.lines] == [
        ("增值税专用发票", 0.99), ("发票号码：12345678", 0.7), ("价税合计：壹仟贰佰元整", 0.8)]
    off = ocr_mod.OCREngine(OCRSettings(rec_retry_below=0.0))
    calls.clear()
    off.read(_text_page(PAGE_LINES))
    assert calls == [3]
