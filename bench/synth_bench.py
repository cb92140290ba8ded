"""Synthetic generator throughput: seconds per page by document type and degradation, and the
projected time for 10,000 pages on 2 worker processes. Target: under an hour (the design's bar, "well under
an hour"; --target-min); the run exits 1 when the projection misses it.

    python -m bench.synth_bench [--n 12] [--dir-n 40] [--target-min 60] [--out bench/results/synth_bench.json]

Per-type rows time `generate()` plus writing the JPEG and JSON in one process; the last rows run
`generate_dir` on the same pages with 1 and with 2 workers side by side, which is what the
projection uses. Other processes on the machine slow every row alike; quote ratios, not seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.targets import Target, judge
from data.synth.generator import generate, generate_dir, list_doc_types


def time_type(doc_type: str, degrade: str, n: int, out: Path) -> float:
    """Mean seconds per page to render, degrade and write one page of a type."""
    generate(doc_type, 0, degrade=degrade)                    # fonts and modules loaded
    start = time.perf_counter()
    for i in range(n):
        image, gt = generate(doc_type, 1000 + i, degrade=degrade)
        image.save(out / f"{doc_type}_{i}.jpg", quality=92)
        (out / f"{doc_type}_{i}.json").write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")
    return (time.perf_counter() - start) / n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=12, help="pages per type and degradation (default 12)")
    p.add_argument("--dir-n", type=int, default=40, help="pages for the generate_dir worker rows (default 40)")
    p.add_argument("--target-min", type=float, default=60.0,
                   help="minutes 10,000 mixed pages on 2 workers may take (default 60: the design's bar)")
    p.add_argument("--out", default="bench/results/synth_bench.json", help="where to write the JSON")
    args = p.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for doc_type in list_doc_types():
            for degrade in ("none", "mix"):
                s = time_type(doc_type, degrade, args.n, tmp_path)
                rows.append({"what": doc_type, "degrade": degrade, "workers": 1, "pages": args.n, "s_per_page": s})
                print(f"{doc_type:14s} {degrade:5s} {s:.3f} s/page", flush=True)
        mixed = list_doc_types()
        for workers in (1, 2):
            out = tmp_path / f"dir_w{workers}"
            start = time.perf_counter()
            generate_dir(mixed, args.dir_n, 7, out, degrade="mix", workers=workers, progress=False)
            s = (time.perf_counter() - start) / args.dir_n
            rows.append({"what": "generate_dir all types", "degrade": "mix", "workers": workers,
                         "pages": args.dir_n, "s_per_page": s})
    w1 = next(r for r in rows if r["what"] == "generate_dir all types" and r["workers"] == 1)["s_per_page"]
    w2 = next(r for r in rows if r["what"] == "generate_dir all types" and r["workers"] == 2)["s_per_page"]
    inv = [r["s_per_page"] for r in rows if r["what"] in ("vat_invoice", "e_invoice") and r["degrade"] == "mix"]

    print()
    print(f"| {'what':24s} | degrade | workers | pages | s/page (wall) |")
    print(f"| {'-' * 24} | ------- | ------- | ----- | ------------- |")
    for r in rows:
        print(f"| {r['what']:24s} | {r['degrade']:7s} | {r['workers']:7d} | {r['pages']:5d} "
              f"| {r['s_per_page']:13.3f} |")
    summary = {
        "speedup_2_workers": w1 / w2,
        "projected_10k_pages_2_workers_min": 10_000 * w2 / 60,
        "projected_10k_invoices_2_workers_min": 10_000 * max(inv) / 2 / 60,
        "cpu_count": os.cpu_count(),
    }
    print()
    print(f"2 workers vs 1 (same pages, same run): {summary['speedup_2_workers']:.2f}x")
    print(f"projected 10,000 mixed pages on 2 workers: {summary['projected_10k_pages_2_workers_min']:.1f} min")
    print(f"projected 10,000 invoices (slowest invoice type, mix) on 2 cores: "
          f"{summary['projected_10k_invoices_2_workers_min']:.1f} min")
    verdict = judge([Target("10,000 mixed pages on 2 workers, minutes", summary["projected_10k_pages_2_workers_min"],
                            args.target_min, at_least=False, source="design bar: well under an hour")])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "summary": summary, **verdict}, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if verdict["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
