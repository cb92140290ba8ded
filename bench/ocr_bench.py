"""OCR accuracy and speed: our engine (models/ocr.py) against PaddleOCR 2.10's default call on the
same PP-OCRv4 model files, side by side in one run, each engine in its own process.

    python -m bench.ocr_bench [--clean 3] [--degraded 3] [--real all|N|none] [--engines ours,paddleocr,ours_dense]
                              [--out bench/results/ocr_bench.json] [--settings '{"det_limit_side_len": 960}']

Pages: generated VAT invoices (`python -m data.synth`, clean and heavily degraded, fixed seeds) and
the real pages in ../shared/samples (never copied). Scores (models/ocr_eval.py): CER = edit distance /
ground-truth characters, lines matched by box; long-number CER over digit runs of 8 or more; the share
of such numbers read exactly. Speed: pages/s over the timed pages (one untimed warm-up page first,
so oneDNN kernel compilation is not counted), CPU seconds per page (less disturbed than wall time when
other work shares the cores), peak RSS of the engine's process and model-load time.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("SAMPLES_DIR", ROOT.parent / "shared" / "samples"))


# --- worker side: one engine, one process --------------------------------------------------------------

def _paddleocr_default():
    """PaddleOCR's documented call with only the model dirs pointed at the same local files."""
    from paddleocr import PaddleOCR

    from models.ocr_runtime import ModelPaths
    paths = ModelPaths.bundled()
    ocr = PaddleOCR(det_model_dir=str(paths.det), rec_model_dir=str(paths.rec), cls_model_dir=str(paths.cls),
                    use_angle_cls=True, show_log=False)

    def read(image):
        result = ocr.ocr(image, cls=True)[0] or []
        lines = []
        for quad, (text, score) in result:
            xs, ys = [p[0] for p in quad], [p[1] for p in quad]
            lines.append((text, [min(xs), min(ys), max(xs), max(ys)]))
        return lines
    return read


def _ours(settings_json: str):
    from models.ocr import OCRSettings, get_engine
    engine = get_engine(OCRSettings(**json.loads(settings_json or "{}")))

    def read(image):
        return [(ln.text, ln.box) for ln in engine.read(image).lines]
    return read


def worker(engine_name: str, pages_file: str, out_file: str, settings_json: str) -> None:
    import cv2
    pages = json.loads(Path(pages_file).read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if engine_name == "ours":
        read = _ours(settings_json)
    elif engine_name == "ours_dense":        # our engine with the detector given 1280 px (dense small print)
        read = _ours(json.dumps({**json.loads(settings_json or "{}"), "det_limit_side_len": 1280}))
    elif engine_name == "paddleocr":
        read = _paddleocr_default()
    else:
        raise SystemExit(f"unknown engine {engine_name!r}; use ours, ours_dense or paddleocr")
    load_s = time.perf_counter() - t0
    read(cv2.imread(pages[0]["image"]))                       # warm-up, untimed
    results, wall, cpu = [], 0.0, 0.0
    for page in pages:
        image = cv2.imread(page["image"])
        c0, w0 = time.process_time(), time.perf_counter()
        lines = read(image)
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        results.append({"image": page["image"], "lines": lines})
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out_file).write_text(json.dumps({"engine": engine_name, "load_s": load_s, "wall_s": wall, "cpu_s": cpu,
                                          "peak_rss_mb": rss_mb, "pages": results}, ensure_ascii=False),
                              encoding="utf-8")


# --- parent side ---------------------------------------------------------------------------------------------

def _generate(kind: str, n: int, seed: int, out: Path) -> list[dict]:
    if n <= 0:
        return []
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "vat_invoice", "--n", str(n), "--seed", str(seed),
                    "--degrade", kind, "--out", str(out)], check=True, capture_output=True, cwd=ROOT)
    pages = []
    for gt_path in sorted(out.glob("*.json")):
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        pages.append({"set": "clean" if kind == "none" else "degraded", "image": str(gt_path.with_suffix(".jpg")),
                      "gt": [(g["text"], g.get("box")) for g in gt["lines"]]})
    return pages


def _real(limit: str) -> list[dict]:
    if limit == "none":
        return []
    if not (SAMPLES / "gt").is_dir():
        raise SystemExit(f"real samples not found at {SAMPLES}; set SAMPLES_DIR or pass --real none")
    paths = sorted((SAMPLES / "gt").glob("*.json"))
    if limit != "all":
        paths = paths[: int(limit)]
    pages = []
    for gt_path in paths:
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        pages.append({"set": "real", "image": str(SAMPLES / gt["image"]),
                      "gt": [(g["text"], g.get("box")) for g in gt["lines"]]})
    return pages


def _score(pages: list[dict], result: dict) -> dict:
    from models.ocr_eval import CERCounts, page_counts
    per_set: dict[str, CERCounts] = {}
    digits = CERCounts()
    for page, got in zip(pages, result["pages"]):
        c = page_counts([(t, b) for t, b in got["lines"]], page["gt"])
        per_set.setdefault(page["set"], CERCounts()).add(c)
        digits.add(c)
    n = len(pages)
    row = {"engine": result["engine"], "pages": n,
           **{f"cer_{k}": round(v.cer, 4) for k, v in per_set.items()},
           "long_digit_cer": round(digits.digit_cer, 4),
           "long_numbers_exact": f"{digits.numbers_exact}/{digits.numbers}",
           "pages_per_s": round(n / result["wall_s"], 3), "cpu_s_per_page": round(result["cpu_s"] / n, 2),
           "peak_rss_mb": round(result["peak_rss_mb"]), "load_s": round(result["load_s"], 2)}
    return row


def _table(rows: list[dict]) -> str:
    cols = ["engine", "pages", "cer_clean", "cer_degraded", "cer_real", "long_digit_cer", "long_numbers_exact",
            "pages_per_s", "cpu_s_per_page", "peak_rss_mb", "load_s"]
    cols = [c for c in cols if any(c in r for r in rows)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clean", type=int, default=3, help="generated clean VAT invoices (default 3)")
    p.add_argument("--degraded", type=int, default=3, help="generated heavily degraded VAT invoices (default 3)")
    p.add_argument("--real", default="all", help="real sample pages: all, none or the first N (default all)")
    p.add_argument("--seed", type=int, default=11, help="generator seed (default 11)")
    p.add_argument("--engines", default="ours,paddleocr", help="comma-separated: ours, paddleocr, ours_dense (ours at det 1280)")
    p.add_argument("--settings", default="{}", help="JSON of OCRSettings overrides for our engine")
    p.add_argument("--out", default="bench/results/ocr_bench.json", help="where to write the JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--pages-file", help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.pages_file, args.result_file, args.settings)
        return 0

    with tempfile.TemporaryDirectory(prefix="ocr_bench_") as tmp:
        tmpd = Path(tmp)
        pages = (_generate("none", args.clean, args.seed, tmpd / "clean")
                 + _generate("heavy", args.degraded, args.seed + 1, tmpd / "degraded") + _real(args.real))
        if not pages:
            raise SystemExit("no pages to run; give --clean, --degraded or --real")
        pages_file = tmpd / "pages.json"
        pages_file.write_text(json.dumps([{"image": pg["image"]} for pg in pages]), encoding="utf-8")
        rows = []
        for name in args.engines.split(","):
            result_file = tmpd / f"{name}.json"
            print(f"running {name} on {len(pages)} pages in its own process ...", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, "-m", "bench.ocr_bench", "--worker", name, "--pages-file", str(pages_file),
                            "--result-file", str(result_file), "--settings", args.settings],
                           check=True, cwd=ROOT)
            rows.append(_score(pages, json.loads(result_file.read_text(encoding="utf-8"))))
    table = _table(rows)
    print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if v is not None},
                               "threads_available": len(os.sched_getaffinity(0)), "rows": rows,
                               "table": table}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
