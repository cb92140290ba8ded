"""Page limits that bound memory (issue 34, item 1): a page too thin to be a document is refused from its header
or MediaBox before anything is decoded or rendered, the engine never pads a page past the pixel budget, and the
seal and ruling finders work on a copy of bounded size. The subprocess tests run under an address-space cap
(RLIMIT_AS) so that a regression fails with MemoryError instead of taking the machine down."""
from __future__ import annotations

import io
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

import data.io as dio
from bench.memory_bench import blank_pdf_bytes
from models.ocr import rulings, seal
from models.ocr.engine import MAX_PAGE_PIXELS, PageTooLarge, check_page, padding

ROOT = Path(__file__).resolve().parents[1]
THIN_PNG = (20_000_000, 3)          # 60 MP: under data.io.MAX_PIXELS, padded by the engine to 1.34 G pixels


def _run_capped(code: str, cap_mb: int, *args: str) -> subprocess.CompletedProcess:
    cap = cap_mb * 2**20

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


def _thin_png(path: Path) -> Path:
    Image.new("L", THIN_PNG).save(path)
    return path


# --- files: refused from the header / MediaBox --------------------------------------------------------

def test_a_thin_image_is_refused_from_its_header_with_a_clear_reason(tmp_path):
    path = _thin_png(tmp_path / "thin.png")
    assert path.stat().st_size < 100_000
    with pytest.raises(dio.InputError) as err:
        dio.iter_pages(path)                  # raised before the generator decodes anything
    assert "20,000,000 x 3 pixels" in err.value.reason and "thinner than any document" in err.value.reason


def test_a_thin_pdf_page_is_refused_from_its_mediabox():
    data = blank_pdf_bytes(1, 10_000_000, 1)
    assert len(data) == 332 and b"/MediaBox [0 0 10000000 1]" in data     # plain numbers pdfium reads
    with pytest.raises(dio.InputError) as err:
        dio.iter_image_bytes(data, "thin.pdf")
    assert "page 1" in err.value.reason and "10,000,000 x 1 pt" in err.value.reason
    assert "thinner than any document" in err.value.reason


def test_documents_in_the_usual_shapes_pass_the_shape_check():
    for w, h in ((595, 842), (842, 595), (80, 2000), (1080, 50_000), (1, 1), (100, 1)):
        assert dio.aspect_reason(w, h) is None, (w, h)
    assert dio.aspect_reason(101, 1) is not None and dio.aspect_reason(0, 50) is not None


def test_a_page_of_a_tiff_that_is_too_thin_is_refused_when_reached():
    buf = io.BytesIO()
    first, thin = Image.new("RGB", (60, 80), "white"), Image.new("L", (5000, 4))
    first.save(buf, format="TIFF", save_all=True, append_images=[thin])
    pages = dio.iter_image_bytes(buf.getvalue(), "two.tiff")
    assert next(pages).shape == (80, 60, 3)
    with pytest.raises(dio.InputError, match="page 2: page is 5,000 x 4 pixels"):
        next(pages)


@pytest.mark.heavy
def test_thin_files_are_refused_without_allocating_their_pixels(tmp_path):
    """Under a 512 MB address-space cap: decoding the PNG (a 180 MB BGR array and PIL's copies) or rendering the
    PDF page (64 MP) would raise MemoryError; the refusal needs neither."""
    png = _thin_png(tmp_path / "thin.png")
    pdf = tmp_path / "thin.pdf"
    pdf.write_bytes(blank_pdf_bytes(1, 10_000_000, 1))
    proc = _run_capped("""
        import sys
        import data.io as dio
        for path in sys.argv[1:]:
            try:
                print(sum(p.size for p in dio.iter_pages(path)))
            except dio.InputError as exc:
                print("refused:", exc.reason)
        """, 512, str(png), str(pdf))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(ln.startswith("refused:") and "thinner than any document" in ln for ln in lines)


@pytest.mark.heavy
def test_extract_refuses_a_thin_png_with_a_message_under_a_memory_cap(tmp_path):
    png = _thin_png(tmp_path / "thin.png")
    proc = _run_capped("import sys, runpy; sys.argv = ['app', *sys.argv[1:]]; runpy.run_module('app', "
                       "run_name='__main__')", 3000, "extract", str(png), "--json", str(tmp_path / "out.json"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "thinner than any document" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr


# --- the engine's pixel budget, padding included ------------------------------------------------------

def test_padding_never_takes_a_page_past_the_budget():
    pad = 64
    for h in (1, 3, 10, 40, 63, 64, 500):
        for w in (1, 64, 10_000, 500_000, 940_000, 1_000_000, 20_000_000):
            border = padding(h, w, pad)
            padded = (h + 2 * border) * (w + 2 * border)
            try:
                check_page(h, w, pad)
            except PageTooLarge as exc:
                assert padded > MAX_PAGE_PIXELS and f"{w:,} x {h:,} pixels" in str(exc)
            else:
                assert padded <= MAX_PAGE_PIXELS, (h, w)
    assert padding(3, 100, pad) == 32 and padding(64, 100, pad) == 0
    with pytest.raises(PageTooLarge, match="with its white border"):
        check_page(3, 20_000_000, pad)       # 60 MP, but 1.34 G pixels once padded


@pytest.mark.heavy
def test_the_engine_refuses_a_thin_page_before_padding_it():
    """A 20,000,000 x 3 array (a zero-copy view) handed to `read` is refused before the 4 GB padded copy is made:
    under a 1 GB address-space cap that copy would raise MemoryError."""
    proc = _run_capped("""
        import numpy as np
        from models.ocr.engine import OCREngine, OCRSettings, PageTooLarge
        engine = object.__new__(OCREngine)        # no models: the refusal comes before any of them is used
        engine.settings = OCRSettings()
        try:
            engine.read(np.broadcast_to(np.uint8(255), (3, 20_000_000, 3)))
        except PageTooLarge as exc:
            print("refused:", exc)
        """, 1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("refused: page is 20,000,000 x 3 pixels"), proc.stdout


# --- the finders' working resolution ------------------------------------------------------------------

def _sealed_page(scale: float) -> tuple[np.ndarray, list[float]]:
    from data.synth import generate
    image, gt = generate("e_invoice", 304, "einv_split", "none")
    bgr = cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR)
    big = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    return big, [v * scale for v in gt["fields"]["title"]["box"]]


def test_the_seal_finder_works_on_a_bounded_copy_and_paints_at_full_resolution(monkeypatch):
    """With the working size lowered to 1 MP, a 7 MP page's seals are found on a 1 MP copy (the only
    whole-page pass), painted around each seal at the page's resolution, and the title under the seal is
    cleared as at full resolution."""
    big, title = _sealed_page(2.0)
    full, full_boxes = seal.unseal(big)           # under WORK_PIXELS: the page itself
    monkeypatch.setattr(seal, "WORK_PIXELS", 1_000_000)
    seen: list[tuple[int, int]] = []
    redness = seal._redness
    monkeypatch.setattr(seal, "_redness", lambda image, *a: (seen.append(image.shape[:2]), redness(image, *a))[1])
    out, boxes = seal.unseal(big)
    assert out.shape == big.shape and len(boxes) == len(full_boxes) == 2
    assert seen[0][0] * seen[0][1] <= 1_000_000                     # the finder's pass
    assert all(h * w < 0.15 * big.shape[0] * big.shape[1] for h, w in seen[1:])   # windows around the seals
    for a in full_boxes:       # the same seals, in the page's pixels
        assert any(min(a[2], b[2]) - max(a[0], b[0]) > 0.8 * (a[2] - a[0]) and
                   min(a[3], b[3]) - max(a[1], b[1]) > 0.8 * (a[3] - a[1]) for b in boxes), (a, boxes)
    x0, y0, x1, y1 = (round(v) for v in title)
    painted_full = (full[y0:y1, x0:x1] != big[y0:y1, x0:x1]).any(axis=2)
    painted = (out[y0:y1, x0:x1] != big[y0:y1, x0:x1]).any(axis=2)
    assert painted_full.sum() > 500 and (painted & painted_full).sum() > 0.8 * painted_full.sum()
    assert seal.seal_boxes(big) == boxes


def test_the_ruling_finder_works_on_a_bounded_copy(monkeypatch):
    """A 24 MP form: its grid found on a copy of at most WORK_PIXELS, in the page's pixels, as at full size."""
    h, w = 4000, 6000
    page = np.full((h, w, 3), 255, np.uint8)
    for y in (500, 1500, 2500, 3500):
        cv2.line(page, (400, y), (5600, y), (0, 0, 0), 4)
    for x in (400, 3000, 5600):
        cv2.line(page, (x, 500), (x, 3500), (0, 0, 0), 4)
    quads = [np.float32([[600, 800], [1400, 800], [1400, 880], [600, 880]])]
    seen: list[tuple[int, int]] = []
    inner = rulings._find_rulings
    monkeypatch.setattr(rulings, "_find_rulings", lambda image, q: (seen.append(image.shape[:2]), inner(image, q))[1])
    found = rulings.find_rulings(page, quads)
    assert len(seen) == 1 and seen[0][0] * seen[0][1] <= rulings.WORK_PIXELS
    across = sorted(round(s[1]) for s in found if not rulings.is_vertical(s))
    down = sorted(round(s[0]) for s in found if rulings.is_vertical(s))
    assert len(across) == 4 and all(abs(a - b) <= 4 for a, b in zip(across, (500, 1500, 2500, 3500))), found
    assert len(down) == 3 and all(abs(a - b) <= 4 for a, b in zip(down, (400, 3000, 5600))), found
    assert all(s[2] - s[0] > 5000 for s in found if not rulings.is_vertical(s))


def test_frames_are_converted_a_strip_at_a_time_with_the_same_pixels(monkeypatch):
    """`_to_bgr` fills one array strip by strip (no whole-frame copies); every mode comes out as converting
    the whole frame at once does."""
    monkeypatch.setattr(dio, "STRIP_PIXELS", 500)
    rng = np.random.default_rng(3)
    rgb = Image.fromarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8))
    rgba = Image.fromarray(rng.integers(0, 256, (37, 53, 4), dtype=np.uint8), "RGBA")
    pal = rgb.convert("P")
    pal.info["transparency"] = 7
    wide = Image.fromarray(rng.integers(0, 60000, (37, 53), dtype=np.uint16))
    floats = Image.fromarray(rng.normal(0, 1, (37, 53)).astype(np.float32))
    for img in (rgb, rgb.convert("L"), rgb.convert("CMYK"), rgba, pal, wide, floats):
        got = dio._to_bgr(img)
        if img.mode in ("I;16", "F"):
            arr = np.asarray(img, dtype=np.float64)
            grey = np.clip(arr * (255.0 / (arr.max() or 1.0)), 0, 255).astype(np.uint8)
            want = np.repeat(grey[:, :, None], 3, axis=2)
        else:
            if img.mode == "RGBA" or "transparency" in img.info:
                img = Image.alpha_composite(Image.new("RGBA", img.size, (255, 255, 255, 255)), img.convert("RGBA"))
            want = np.asarray(img.convert("RGB"))[:, :, ::-1]
        assert got.flags.c_contiguous and got.flags.writeable and np.array_equal(got, want), img.mode
