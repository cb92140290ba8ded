"""Text under red seals: our OCR with the seal-aware reading off and on, on generated invoices whose
tax-bureau seal covers the title or whose 发票专用章 covers the seller's name, at every degradation level.

    OMP_NUM_THREADS=1 python -m bench.seal_bench [--n 8] [--levels none,light,photo,heavy] [--seed 300]
                                                 [--modes det,page] [--out bench/results/seal_bench.json]

Pages: e-invoices (einv_standard, einv_split, einv_stacked, einv_railway) and VAT invoices in turn, the
first seeds from --seed whose clean render puts seal ink over the title or the seller's name; the same
pages at every level. A ground-truth line is "under a seal" when at least 2% of its box on the clean
render is saturated seal red (the test tests/test_synth_variants.py uses). Scores (models/ocr/eval.py,
lines matched by box, NFKC, no spaces): CER of the titles under a seal, of the seller names under a seal,
of every line under a seal, and of every line of these pages (what the reading must not hurt elsewhere);
CPU seconds per page. Every setting reads the same pages in the same process, one thread each.
Real sample pages: where no seal is found the reading is the same pixel for pixel, so only pages with a
found seal are read (both ways) and scored. bench/ocr_bench.py --variants compares on its own sets.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = [("e_invoice", "einv_standard"), ("vat_invoice", None), ("e_invoice", "einv_split"),
           ("e_invoice", "einv_railway"), ("e_invoice", "einv_stacked")]
UNDER = 0.02          # share of a line's clean box that is seal red for the line to count as under a seal


def seal_red(rgb: np.ndarray) -> np.ndarray:
    """Saturated seal red on a clean render (the generator's seal ink, never its print)."""
    a = rgb.astype(np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return (r > 180) & (r - g > 80) & (r - b > 70)


def _share(mask: np.ndarray, box: list[float]) -> float:
    x0, y0, x1, y1 = (round(v) for v in box)
    crop = mask[max(0, y0):y1 + 1, max(0, x0):x1 + 1]
    return float(crop.mean()) if crop.size else 0.0


def pick_pages(n: int, seed: int) -> list[dict]:
    """The first n (type, layout, seed) whose clean render has a seal over the title or the seller name,
    with the ids of the lines under a seal."""
    from data.synth import generate
    pages: list[dict] = []
    s = seed
    while len(pages) < n:
        doc_type, layout = LAYOUTS[len(pages) % len(LAYOUTS)]
        image, gt = generate(doc_type, s, layout, "none")
        s += 1
        red = seal_red(np.asarray(image))
        under = [ln["id"] for ln in gt["lines"] if _share(red, ln["box"]) >= UNDER]
        f = gt["fields"]
        title = f["title"]["line"] if "title" in f and f["title"]["line"] in under else None
        seller = f["seller_name"]["line"] if "seller_name" in f and f["seller_name"]["line"] in under else None
        if title is None and seller is None:
            continue
        pages.append({"doc_type": doc_type, "layout": gt["layout"], "seed": gt["seed"], "under": under,
                      "title": title, "seller": seller})
    return pages


def real_pages(engines: dict) -> dict:
    """Seals found on the real samples, and CER off/on over the pages that have one."""
    import cv2

    from models.ocr.eval import CERCounts, page_counts
    from models.ocr.seal import unseal
    samples = Path(os.environ.get("SAMPLES_DIR", ROOT.parent / "shared" / "samples"))
    paths = sorted((samples / "gt").glob("*.json"))
    found, counts = [], {m: CERCounts() for m in engines}
    for gt_path in paths:
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        image = cv2.imread(str(samples / gt["image"]))
        if image is None or not unseal(image)[1]:
            continue
        found.append(gt_path.stem)
        gt_lines = [(g["text"], g.get("box")) for g in gt["lines"]]
        for m, eng in engines.items():
            counts[m].add(page_counts([(ln.text, ln.box) for ln in eng.read(image).lines], gt_lines))
    result = {"pages": len(paths), "with_seal": found,
              **{f"cer_{m or 'off'}": round(c.cer, 4) for m, c in counts.items() if found}}
    print(f"real samples: a seal found on {len(found)} of {len(paths)} pages {found}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=8, help="pages per level (default 8)")
    p.add_argument("--levels", default="none,light,photo,heavy")
    p.add_argument("--seed", type=int, default=300, help="first generator seed tried (default 300)")
    p.add_argument("--modes", default="det,page",
                   help="OCRSettings.seal_aware values read beside off; 'page+reread' adds seal_reread")
    p.add_argument("--model", default="", help="OCR model (default: the engine's)")
    p.add_argument("--real", action=argparse.BooleanOptionalAction, default=True,
                   help="also the real sample pages (../shared/samples or SAMPLES_DIR): on a page where no seal is "
                        "found every setting reads the same pixels; pages with one are read and scored both ways")
    p.add_argument("--out", default="bench/results/seal_bench.json")
    args = p.parse_args(argv)

    import cv2

    from data.atomic import write_text_atomic
    from data.synth import generate
    from models.ocr import OCREngine, OCRSettings
    from models.ocr.eval import edit_distance, line_pairs

    # a mode is an OCRSettings.seal_aware value, "+reread" adding seal_reread
    modes = [""] + [m for m in args.modes.split(",") if m]
    engines = {m: OCREngine(OCRSettings(model=args.model, cpu_threads=1, seal_aware=m.split("+")[0],
                                        seal_reread=m.endswith("+reread"))) for m in modes}
    pages = pick_pages(args.n, args.seed)
    rows = []
    for level in args.levels.split(","):
        sums = {m: {k: [0, 0] for k in ("title", "seller", "under", "page")} for m in modes}
        cpu = {m: 0.0 for m in modes}
        examples: dict[str, list] = {m: [] for m in modes}
        for pg in pages:
            image, gt = generate(pg["doc_type"], pg["seed"], pg["layout"], level)
            bgr = cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR)
            gt_lines = [(ln["text"], ln["box"]) for ln in gt["lines"]]
            for m, eng in engines.items():
                c0 = time.process_time()
                read = eng.read(bgr)
                cpu[m] += time.process_time() - c0
                pairs = line_pairs([(ln.text, ln.box) for ln in read.lines], gt_lines)
                for i, (ref, hyp) in enumerate(pairs[:len(gt_lines)]):
                    keys = ["page"] + ["under"] * (i in pg["under"]) + ["title"] * (i == pg["title"]) + \
                        ["seller"] * (i == pg["seller"])
                    for k in keys:
                        sums[m][k][0] += edit_distance(ref, hyp)
                        sums[m][k][1] += len(ref)
                    if i in (pg["title"], pg["seller"]) and len(examples[m]) < 6:
                        examples[m].append([ref, hyp])
        for m in modes:
            row = {"level": level, "seal_aware": m or "off", "pages": len(pages),
                   **{f"cer_{k}": round(e / max(1, c), 4) for k, (e, c) in sums[m].items()},
                   "chars_title": sums[m]["title"][1], "chars_seller": sums[m]["seller"][1],
                   "cpu_s_per_page": round(cpu[m] / max(1, len(pages)), 2), "examples": examples[m]}
            rows.append(row)
            print(f"{level:6s} {row['seal_aware']:5s} title {row['cer_title']:.4f} seller {row['cer_seller']:.4f} "
                  f"under {row['cer_under']:.4f} page {row['cer_page']:.4f} cpu/page {row['cpu_s_per_page']}",
                  flush=True)
    real = real_pages(engines) if args.real else {}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps({"args": vars(args), "pages": pages, "rows": rows, "real": real,
                                       "load_avg_1min": round(os.getloadavg()[0], 2)},
                                      ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
