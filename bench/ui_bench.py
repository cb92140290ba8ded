"""The UI's analysis of one page against `python -m app extract` on the same page.

    python -m bench.ui_bench [--repeats 3] [--json bench/results/ui_bench.json]

One process, models loaded once and warmed by a discarded run of each path, then the two paths
alternate `--repeats` times on a generated invoice page (data.synth vat_invoice, seed 7,
vat_paper_split; 1 page, 4 line items), so machine load affects both alike:
- extract: `app.cli.main(["extract", FILE, "--json", OUT])`, the command's own code in-process (its
  table printed to a discarded stream);
- ui: the app script itself (app/ui/main.py under Streamlit's AppTest), timed from the upload to the
  finished page: reading the upload, the pipeline with previews and progress callbacks, then drawing
  the page, the tables, the legend and the buttons;
- ui rerun: the next rerun with nothing changed (what every click costs): no analysis, only the page.
The bar (issue 12): the UI's median within 10% of extract's. Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.targets import Target, judge  # noqa: E402  (after the path line: the script also runs by its file name)

BAR = 0.10


def time_extract(path: Path, out: Path) -> float:
    from app.cli import main
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["extract", str(path), "--json", str(out)])
    took = time.perf_counter() - t0
    if code != 0:
        raise RuntimeError(f"extract exited {code}")
    return took


def time_ui(path: Path) -> tuple[float, float]:
    """(seconds from the upload to the finished page, seconds of the next unchanged rerun)."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app" / "ui" / "main.py"), default_timeout=600)
    at.run()
    at.file_uploader[0].set_value([(path.name, path.read_bytes(), "image/png")])
    t0 = time.perf_counter()
    at.run()
    analysed = time.perf_counter() - t0
    if at.exception or at.error or not at.data_editor:
        raise RuntimeError(f"the UI did not show the fields: {at.exception or [e.value for e in at.error]}")
    t0 = time.perf_counter()
    at.run()
    return analysed, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "ui_bench.json")
    args = p.parse_args(argv)

    from data.synth import generate
    from reading import route
    with tempfile.TemporaryDirectory() as tmp:
        image, _ = generate("vat_invoice", seed=7, layout="vat_paper_split")
        page = Path(tmp) / "invoice_7.png"
        image.save(page)
        out = Path(tmp) / "out.json"
        t0 = time.perf_counter()
        route.warm_up(None)
        load = time.perf_counter() - t0
        time_extract(page, out)         # warm-up runs, discarded (first inference builds kernels)
        time_ui(page)
        extract, ui, rerun = [], [], []
        for _ in range(args.repeats):
            extract.append(time_extract(page, out))
            a, r = time_ui(page)
            ui.append(a)
            rerun.append(r)
    med = {"extract": statistics.median(extract), "ui": statistics.median(ui), "ui_rerun": statistics.median(rerun)}
    ratio = med["ui"] / med["extract"]
    print(f"one invoice page, {args.repeats} alternating runs after a warm-up (models loaded in {load:.1f} s)")
    print(f"{'path':<12} {'median s':>9} {'runs s':>30}")
    for name, runs in (("extract", extract), ("ui", ui), ("ui rerun", rerun)):
        print(f"{name:<12} {statistics.median(runs):>9.2f} {' '.join(f'{x:.2f}' for x in runs):>30}")
    verdict = judge([Target("UI median / extract median", ratio, 1 + BAR, at_least=False, source="issue 12")])
    result = {"page": "data.synth vat_invoice seed 7 vat_paper_split (1 page)", "repeats": args.repeats,
              "seconds": {"extract": extract, "ui": ui, "ui_rerun": rerun}, "median": med,
              "ui_over_extract": ratio, "bar": 1 + BAR, **verdict, "model_load_s": load,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "omp_threads": os.environ.get("OMP_NUM_THREADS")}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"JSON written to {args.json}")
    return 0 if verdict["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
