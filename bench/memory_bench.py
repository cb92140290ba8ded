"""Peak memory (RSS) of every entry point on long blank PDFs: the UI's path, `extract`, `batch`.

    python -m bench.memory_bench [--huge 500] [--a4 100] [--under-cap 8] [--json bench/results/memory_bench.json]

Files, written here as minimal PDF bytes (no renderer needed to make them):
- `huge`: 500 pages of 200 x 200 inches, 64 KB on disk. Each page would render to 64 MP (data.io.MAX_PIXELS),
  32 G pixels in all: refused by data.io.MAX_DOC_PIXELS from the page sizes, before any page is rendered.
- `a4`: 100 blank A4 pages (3.9 MP each at 200 dpi): processed page by page.
- `under_cap`: pages of 200 x 200 inches (64 MP each) just under the document cap: processed page by page,
  the largest single page the pipeline accepts, several times over.

Each entry point runs in a fresh process and its peak RSS is the kernel's (os.wait4 ru_maxrss), so
model loading is included, as a user sees it:
- ui: `app.pipeline.analyse_bytes(data, name)` with the UI's defaults (the upload held in memory, a
  preview per page), the call app/ui/main.py makes;
- extract: `python -m app extract FILE --json OUT`;
- batch: `python -m app batch FILE --out OUT.jsonl --workers 1`.
Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_GB = 2.0


def blank_pdf_bytes(pages: int, width_pt: float, height_pt: float) -> bytes:
    """A valid PDF of `pages` empty pages of the given size (points), with a correct xref table."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
               + b"] /Count %d >>" % pages]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] >>" % (width_pt, height_pt)] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


UI_SNIPPET = """
import sys, json
from app import pipeline
data = open(sys.argv[1], "rb").read()
a = pipeline.analyse_bytes(data, sys.argv[1].rsplit("/", 1)[-1])
print(json.dumps({"pages": len(a.document.pages), "results": len(a.results), "previews": len(a.images),
                  "error": (a.document.error or {}).get("message")}))
"""


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(peak RSS in GB, seconds, exit status, last output line) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [ln for ln in output.splitlines() if ln.strip() and not ln.startswith("\x1b")]
    return usage.ru_maxrss / 2**20, time.perf_counter() - t0, proc.returncode, (lines[-1] if lines else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--huge", type=int, default=500, help="pages of the 200 x 200 inch file refused by the cap")
    ap.add_argument("--a4", type=int, default=100, help="blank A4 pages")
    ap.add_argument("--under-cap", type=int, default=8, help="64 MP pages under the document cap (0: skip)")
    ap.add_argument("--entry", nargs="+", default=["ui", "extract", "batch"], choices=["ui", "extract", "batch"])
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "memory_bench.json"))
    args = ap.parse_args()

    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONPATH=str(ROOT))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {"huge": (args.huge, 14400.0, 14400.0), "a4": (args.a4, 595.0, 842.0),
                 "under_cap": (args.under_cap, 14400.0, 14400.0)}
        for name, (pages, w, h) in files.items():
            if pages <= 0:
                continue
            path = Path(tmp) / f"{name}.pdf"
            path.write_bytes(blank_pdf_bytes(pages, w, h))
            for entry in args.entry:
                if entry == "ui":
                    cmd = [sys.executable, "-c", UI_SNIPPET, str(path)]
                elif entry == "extract":
                    cmd = [sys.executable, "-m", "app", "extract", str(path), "--json", str(Path(tmp) / "out.json")]
                else:
                    out = Path(tmp) / f"{name}-{entry}.jsonl"
                    cmd = [sys.executable, "-m", "app", "batch", str(path), "--out", str(out), "--workers", "1",
                           "--no-progress"]
                rss, secs, code, last = measure(cmd, env)
                row = {"file": name, "pages": pages, "bytes": path.stat().st_size, "entry": entry,
                       "peak_rss_gb": round(rss, 3), "seconds": round(secs, 1), "exit": code, "last_line": last[:160]}
                rows.append(row)
                print(f"{name:<10} {pages:>4} pages {row['bytes'] / 1024:>6.0f} KB  {entry:<8} "
                      f"peak RSS {rss:5.2f} GB  {secs:6.1f} s  exit {code}  {last[:90]}", flush=True)
    worst = max((r["peak_rss_gb"] for r in rows), default=0.0)
    print(f"\nworst peak RSS {worst:.2f} GB (limit {LIMIT_GB} GB): {'ok' if worst < LIMIT_GB else 'OVER'}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "limit_gb": LIMIT_GB, "rows": rows}, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"JSON written to {args.json}")


if __name__ == "__main__":
    main()
