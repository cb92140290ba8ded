"""Extraction cost against OCR cost per page on CPU, side by side in one run.

    python -m bench.extract_bench [--pages 6] [--model models/default] [--json runs/extract_bench.json]

Renders generated pages (invoices, ID cards, receipts, forms), runs OCR then extraction on each, and
prints per page and in total the seconds of each and extraction as a share of OCR. Target: extraction at most
TARGET_SHARE (10%) of OCR time over all pages; the run exits 1 when it is missed. Models are loaded and
warmed before timing. The share is a ratio of two timings on one machine, so a busy machine moves it less
than either; still, time on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TYPES = ["vat_invoice", "e_invoice", "id_card_front", "receipt", "generic_form"]
TARGET_SHARE = 0.10      # extraction seconds / OCR seconds over all pages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=6, help="pages to time (spread over doc types)")
    ap.add_argument("--model", default=None, help="model directory (default: models/default)")
    ap.add_argument("--json", default="runs/extract_bench.json", help="where to write the results")
    a = ap.parse_args(argv)
    import cv2

    from data.document import Document
    from models.extractor import get_extractor
    from models.ocr import get_engine
    tmp = Path(tempfile.mkdtemp(prefix="extract_bench_"))
    images = []
    for i in range(a.pages):
        t = TYPES[i % len(TYPES)]
        out = tmp / f"{i}"
        subprocess.run([sys.executable, "-m", "data.synth", "--type", t, "--n", "1", "--seed", str(900 + i),
                        "--out", str(out)], check=True, capture_output=True)
        images.append((t, next(p for p in out.iterdir() if p.suffix in (".jpg", ".png"))))
    engine, ex = get_engine(), get_extractor(a.model)
    warm = cv2.imread(str(images[0][1]))
    assert warm is not None, images[0][1]
    ex.extract(Document(pages=[engine.read(warm)]))
    rows: list[dict[str, Any]] = []
    print(f"{'page':28s} {'lines':>5s} {'ocr s':>7s} {'extract s':>9s} {'share':>6s}")
    for t, path in images:
        img = cv2.imread(str(path))
        assert img is not None, path
        t0 = time.perf_counter()
        page = engine.read(img)
        t1 = time.perf_counter()
        ex.extract(Document(pages=[page]))
        t2 = time.perf_counter()
        rows.append({"type": t, "lines": len(page.lines), "ocr_s": t1 - t0, "extract_s": t2 - t1})
        print(f"{t + ' ' + path.name:28s} {len(page.lines):5d} {t1 - t0:7.3f} {t2 - t1:9.3f} "
              f"{(t2 - t1) / (t1 - t0):6.1%}")
    ocr = sum(r["ocr_s"] for r in rows)
    ext = sum(r["extract_s"] for r in rows)
    met = ext / ocr <= TARGET_SHARE
    print(f"{'TOTAL':28s} {'':5s} {ocr:7.3f} {ext:9.3f} {ext / ocr:6.1%}   (target <= {TARGET_SHARE:.0%}: "
          f"{'met' if met else 'MISSED'}; {ext / len(rows):.3f} s extraction per page)")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps({"pages": rows, "ocr_s": ocr, "extract_s": ext, "share": ext / ocr,
                                        "target_share": TARGET_SHARE, "met": met}, indent=1), encoding="utf-8")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
