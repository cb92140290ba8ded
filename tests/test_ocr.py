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
from models.ocr.eval import best_span, edit_distance, line_pairs, page_counts, plain_text, substring_distance


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


def test_scorer_v2_reads_formula_markup_as_text_and_keeps_prices():
    assert plain_text("4. $ \\textcircled{1}\\textcircled{2} $") == "4.  12 "
    assert plain_text("面积3.05万$km^{2}$;") == "面积3.05万km2;"
    assert plain_text("词。$^{1}$因此") == "词。1因此"
    assert plain_text("costs $5 and $10") == "costs $5 and $10"
    gt = [("面积3.05万$km^{2}$", [0, 0, 200, 20])]
    assert page_counts([("面积3.05万km²", [0, 0, 200, 20])], gt).errors == 0          # NFKC: ² -> 2
    assert page_counts([("面积3.05万km²", [0, 0, 200, 20])], gt, "v1").errors > 0


def test_scorer_v2_joins_a_blocks_lines_in_the_order_that_matches_it_but_counts_misreads():
    gt = [("评级说明推荐涨幅15%以上谨慎推荐涨幅5%~15%", [0, 0, 400, 40])]
    # a two-column block read row by row: the cells come in another order than the annotator's
    ocr = [("评级说明", [0, 0, 100, 20]), ("谨慎推荐涨幅5%~15%", [200, 20, 400, 40]),
           ("推荐涨幅15%以上", [200, 0, 400, 20])]
    assert page_counts(ocr, gt).errors == 0 and page_counts(ocr, gt, "v1").errors > 0
    ocr[1] = ("谨慎推存涨幅5%~15%", [200, 20, 400, 40])                                  # one misread
    assert page_counts(ocr, gt).errors == 1
    assert best_span("abc", "xxabcyy") == (0, 2, 5) and best_span("abc", "xxabd") == (1, 2, 5)


def test_scorer_v2_matches_unboxed_lines_to_their_own_text_once():
    gt = [("姓名:", None), ("张三", None), ("出生日期:1983/6/8", None)]
    ocr = [("姓名：张三", [0, 0, 100, 20]), ("出生日期：1983/6/9", [0, 30, 200, 50]),
           ("市政府收集的个人信息都将保密", [0, 60, 400, 80])]        # text the key/value list does not name
    pairs = line_pairs(ocr, gt)
    assert pairs == [("姓名:", "姓名:"), ("张三", "张三"), ("出生日期:1983/6/8", "出生日期:1983/6/9")]
    assert page_counts(ocr, gt).errors == 1
    assert page_counts(ocr, gt, "v1").errors > 10
    assert page_counts([], gt).errors == len("姓名:张三出生日期:1983/6/8")     # nothing read: all missed
    with pytest.raises(ValueError, match="scorer"):
        page_counts(ocr, gt, "v3")


def test_bench_keeps_only_traditional_script_e_invoices(tmp_path):
    from bench.ocr_bench import _traditional, is_traditional
    pages = _traditional(1, 11, tmp_path)
    assert len(pages) == 1 and pages[0]["set"] == "traditional" and cv2.imread(pages[0]["image"]) is not None
    texts = "".join(t for t, _ in pages[0]["gt"])
    assert "發票" in texts and "发票" not in texts
    assert not is_traditional({"lines": [{"text": "电子发票（普通发票）"}, {"text": "购买方信息"}]})


def test_small_print_is_detected_again_scaled_up_and_the_v6_fingerprint_says_so():
    from models.ocr.det import DetParams, small_text_zoom

    def lines(height: float, n: int = 10) -> list[np.ndarray]:
        return [np.array([[0, 30 * i], [300, 30 * i], [300, 30 * i + height], [0, 30 * i + height]], np.float32)
                for i in range(n)]

    p = DetParams(limit_side_len=1280, small_text_px=14, small_text_target=22, small_text_max_side=2880)
    assert small_text_zoom(lines(10), 1.0, 1280, p) == pytest.approx(2.2)           # 10 px lines -> 22 px
    assert small_text_zoom(lines(10), 0.5, 1280, p) == pytest.approx(2880 / 1280)   # capped by the longer side
    assert small_text_zoom(lines(20), 1.0, 1280, p) == 1.0                           # print large enough
    assert small_text_zoom(lines(10, n=3), 1.0, 1280, p) == 1.0                      # too few lines to judge
    assert small_text_zoom(lines(10), 1.0, 1280, DetParams(small_text_px=0)) == 1.0  # off
    v6, v4 = OCRSettings(model="v6"), OCRSettings(model="v4")
    assert (v6.det_small_text_px, v6.det_dilate, v6.det_unclip_ratio, v6.det_box_thresh) == (14, False, 1.5, 0.6)
    assert (v4.det_small_text_px, v4.det_dilate, v4.det_unclip_ratio, v4.det_box_thresh) == (0, False, 1.5, 0.6)
    before = OCRSettings(model="v6", det_small_text_px=0, det_dilate=False, det_unclip_ratio=1.5, det_box_thresh=0.6)
    assert v6.tag() != before.tag()                  # cached v6 readings made with the old detector are stale
    assert "det_small_text_px" not in repr(v4).replace("det_small_text_px=0", "") and v4.tag() == OCRSettings(
        model="v4", det_small_text_px=0).tag()


@pytest.mark.heavy
def test_small_print_page_is_detected_twice_and_read_no_worse():
    """A page of 9 px print: the detector runs a second time on the page scaled up."""
    from models.ocr import OCREngine
    text = ["财政资金的杠杆作用促进了茶园生态和茶叶品种更加优化" + str(i) for i in range(12)]
    page = _text_page(text, size=9, width=1500)
    page = cv2.copyMakeBorder(page, 0, 1000 - page.shape[0], 0, 0, cv2.BORDER_CONSTANT, value=(255, 255, 255))
    read, calls = {}, {}
    for small in (14, 0):
        eng = OCREngine(OCRSettings(model="v6", cpu_threads=1, det_small_text_px=small))
        det, calls[small] = eng.det, []
        eng.det = lambda x, det=det, seen=calls[small]: seen.append(x.shape) or det(x)   # type: ignore[misc]
        read[small] = "".join(ln.text for ln in eng.read(page).lines)
    assert len(calls[14]) == 2 and len(calls[0]) == 1 and max(calls[14][1]) > max(calls[14][0])
    truth = "".join(text)
    assert edit_distance(truth, read[14]) <= edit_distance(truth, read[0]) and edit_distance(truth, read[14]) < 20


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
