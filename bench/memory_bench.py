"""Peak memory (RSS) of every entry point on files that test the page limits: the UI's path, `extract`, `batch`.

    python -m bench.memory_bench [--quick] [--huge 500] [--a4 100] [--under-cap 8] [--entry ui extract batch]
                                 [--json bench/results/memory_bench.json]

Files, written here (PDFs as minimal bytes, no renderer needed to make them):
- `huge`: 500 pages of 200 x 200 inches, 64 KB on disk. Each page would render to 64 MP (data.io.MAX_PIXELS),
  32 G pixels in all: refused by data.io.MAX_DOC_PIXELS from the page sizes, before any page is rendered.
- `a4`: 100 blank A4 pages (3.9 MP each at 200 dpi): processed page by page.
- `under_cap`: pages of 200 x 200 inches (64 MP each) just under the document cap: processed page by page,
  the largest single page the pipeline accepts, several times over.
- `square_pdf`: one page of 1,000,000 x 1,000,000 pt, rendered at the scale that fits data.io.MAX_PIXELS (64 MP).
- `photo48`: a 48 MP (8000 x 6000) JPEG "phone photo": a generated VAT invoice (data.synth, seed 5) scaled up
  5.5x onto a noisy background; processed (the seal and ruling finders work on a 12 MP copy).
- `thin_png`: a 20,000,000 x 3 PNG (60 MP, under the pixel cap; padded it was 1.34 G pixels, ~20 GB in all):
  refused from its header by data.io.MAX_ASPECT.
- `thin_pdf`: a 332-byte PDF whose MediaBox is 10,000,000 x 1 pt: refused from the MediaBox before rendering.

Each entry point runs in a fresh process and its peak RSS is the kernel's (os.wait4 ru_maxrss), so
model loading is included, as a user sees it:
- ui: `reading.route.analyse_bytes(data, name)` with the UI's defaults (the upload held in memory, a
  preview per page), the call app/ui/main.py makes;
- extract: `python -m app extract FILE --json OUT`;
- batch: `python -m app batch FILE --out OUT.jsonl --workers 1`.
Every row has the same target, TARGET_GB (1.5 GB), and an expected outcome: processed (exit 0 and no error) or
refused with the expected message. Children run under an address-space cap (--cap-gb, 8 GB), so a regression
fails its row instead of taking the machine down. Prints a table, writes JSON, and exits 1 when any row misses
its target or its outcome. `--quick` (CI): extract only, on huge (50 pages), square_pdf, photo48, thin_png and
thin_pdf.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_GB = 1.5       # peak RSS of every row, models included (issue 34's bar)
CAP_GB = 8.0          # address-space limit of each child (RLIMIT_AS): a blow-up fails its row, not the machine
REFUSED_THIN = "thinner than any document"
REFUSED_DOC = "per document"


def _pdf_number(value: float) -> bytes:
    return (b"%d" % value) if float(value).is_integer() else (b"%.4f" % value).rstrip(b"0").rstrip(b".")


def blank_pdf_bytes(pages: int, width_pt: float, height_pt: float) -> bytes:
    """A valid PDF of `pages` empty pages of the given size (points), with a correct xref table."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
               + b"] /Count %d >>" % pages]
    # plain decimals: PDF has no exponent notation, and pdfium reads "1e+07" (what %g writes) as no MediaBox
    box = b"%s %s" % (_pdf_number(width_pt), _pdf_number(height_pt))
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " + box + b"] >>"] * pages
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
from reading import route
data = open(sys.argv[1], "rb").read()
a = route.analyse_bytes(data, sys.argv[1].rsplit("/", 1)[-1])
print(json.dumps({"pages": len(a.document.pages), "results": len(a.results), "previews": len(a.images),
                  "error": (a.document.error or {}).get("message")}))
"""


def measure(cmd: list[str], env: dict[str, str], cap_gb: float = CAP_GB) -> tuple[float, float, int, str, str]:
    """(peak RSS in GB, seconds, exit status, last output line, whole output) of one child process, run with
    its address space capped at `cap_gb`."""
    cap = int(cap_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=limit)
    assert proc.stdout is not None
    output = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [ln for ln in output.splitlines() if ln.strip() and not ln.startswith("\x1b")]
    return (usage.ru_maxrss / 2**20, time.perf_counter() - t0, proc.returncode, (lines[-1] if lines else ""),
            output)


def photo_jpeg(path: Path, width: int = 8000, height: int = 6000) -> None:
    """A `width` x `height` JPEG like a phone photo of an invoice: a generated VAT invoice (seed 5) scaled up
    onto a noisy, unevenly lit background."""
    import cv2
    import numpy as np

    from data.synth import generate
    page, _ = generate("vat_invoice", seed=5)
    bgr = cv2.cvtColor(np.asarray(page), cv2.COLOR_RGB2BGR)
    rng = np.random.default_rng(0)
    photo = cv2.resize(np.clip(rng.normal(120, 25, (height // 8, width // 8, 3)), 0, 255).astype(np.uint8),
                       (width, height), interpolation=cv2.INTER_LINEAR)
    k = min(0.93 * height / bgr.shape[0], 0.93 * width / bgr.shape[1])
    up = cv2.resize(bgr, (int(bgr.shape[1] * k), int(bgr.shape[0] * k)), interpolation=cv2.INTER_CUBIC)
    y, x = (height - up.shape[0]) // 2, (width - up.shape[1]) // 2
    photo[y:y + up.shape[0], x:x + up.shape[1]] = up
    del up
    for top in range(0, height, 500):          # sensor noise, a strip at a time
        band = photo[top:top + 500]
        band[:] = np.clip(band.astype(np.int16) + rng.normal(0, 6, band.shape).astype(np.int16), 0, 255)
    cv2.imwrite(str(path), photo, [cv2.IMWRITE_JPEG_QUALITY, 90])


def thin_png(path: Path) -> None:
    """A 20,000,000 x 3 black PNG (58 KB)."""
    from PIL import Image
    Image.new("L", (20_000_000, 3)).save(path)


# name -> (pages, what the row expects: "processed" or the phrase of its refusal)
CASES: dict[str, tuple[int, str]] = {
    "huge": (500, REFUSED_DOC), "a4": (100, "processed"), "under_cap": (8, "processed"),
    "square_pdf": (1, "processed"), "photo48": (1, "processed"), "thin_png": (1, REFUSED_THIN),
    "thin_pdf": (1, REFUSED_THIN)}
QUICK = {"huge": 50, "square_pdf": 1, "photo48": 1, "thin_png": 1, "thin_pdf": 1}


def write_case(name: str, pages: int, folder: Path) -> Path:
    if name == "photo48":
        path = folder / "photo48.jpg"
        photo_jpeg(path)
    elif name == "thin_png":
        path = folder / "thin.png"
        thin_png(path)
    else:
        w, h = {"huge": (14400.0, 14400.0), "a4": (595.0, 842.0), "under_cap": (14400.0, 14400.0),
                "square_pdf": (1_000_000.0, 1_000_000.0), "thin_pdf": (10_000_000.0, 1.0)}[name]
        path = folder / f"{name}.pdf"
        path.write_bytes(blank_pdf_bytes(pages, w, h))
    return path


def outcome(expect: str, entry: str, code: int, output: str, results: Path | None) -> bool:
    """Did the run end as expected: processed (exit 0, no error reported) or refused with the expected phrase
    in what the user sees (the message printed, or for batch the results file's row)?"""
    if expect == "processed":
        return code == 0 and '"error": null' in output if entry == "ui" else code == 0
    seen = output + (results.read_text(encoding="utf-8", errors="replace") if results and results.exists() else "")
    return code >= 0 and expect in seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="extract only, on the small cases (CI)")
    ap.add_argument("--huge", type=int, default=None, help="pages of the 200 x 200 inch file refused by the cap")
    ap.add_argument("--a4", type=int, default=None, help="blank A4 pages (0: skip)")
    ap.add_argument("--under-cap", type=int, default=None, help="64 MP pages under the document cap (0: skip)")
    ap.add_argument("--only", nargs="+", choices=list(CASES), help="these cases only")
    ap.add_argument("--entry", nargs="+", default=None, choices=["ui", "extract", "batch"])
    ap.add_argument("--cap-gb", type=float, default=CAP_GB, help="address-space cap of each child process")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "memory_bench.json"))
    args = ap.parse_args()
    pages = dict(QUICK) if args.quick else {name: n for name, (n, _) in CASES.items()}
    for name, given in (("huge", args.huge), ("a4", args.a4), ("under_cap", args.under_cap)):
        if given is not None:
            pages[name] = given
    if args.only:
        pages = {name: n for name, n in pages.items() if name in args.only}
    entries = args.entry or (["extract"] if args.quick else ["ui", "extract", "batch"])

    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONPATH=str(ROOT))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, count in pages.items():
            if count <= 0:
                continue
            expect = CASES[name][1]
            path = write_case(name, count, Path(tmp))
            for entry in entries:
                results = None
                if entry == "ui":
                    cmd = [sys.executable, "-c", UI_SNIPPET, str(path)]
                elif entry == "extract":
                    cmd = [sys.executable, "-m", "app", "extract", str(path), "--json", str(Path(tmp) / "out.json")]
                else:
                    results = Path(tmp) / f"{name}-{entry}.jsonl"
                    cmd = [sys.executable, "-m", "app", "batch", str(path), "--out", str(results), "--workers", "1",
                           "--no-progress"]
                rss, secs, code, last, output = measure(cmd, env, args.cap_gb)
                as_expected = outcome(expect, entry, code, output, results)
                ok = as_expected and rss < TARGET_GB
                row = {"file": name, "pages": count, "bytes": path.stat().st_size, "entry": entry,
                       "expect": "processed" if expect == "processed" else "refused",
                       "peak_rss_gb": round(rss, 3), "target_gb": TARGET_GB, "seconds": round(secs, 1), "exit": code,
                       "as_expected": as_expected, "ok": ok, "last_line": last[:160]}
                rows.append(row)
                print(f"{name:<10} {count:>4} pages {row['bytes'] / 1024:>8.1f} KB  {entry:<8} {row['expect']:<9} "
                      f"peak RSS {rss:5.2f} GB  {secs:6.1f} s  exit {code:>3}  {'ok  ' if ok else 'MISS'}  {last[:80]}",
                      flush=True)
    missed = [r for r in rows if not r["ok"]]
    worst = max((r["peak_rss_gb"] for r in rows), default=0.0)
    print(f"\nworst peak RSS {worst:.2f} GB (target {TARGET_GB} GB per row); "
          + (f"{len(missed)} row(s) MISSED: " + ", ".join(f"{r['file']}/{r['entry']}" for r in missed)
             if missed else "every row met its target and outcome"))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "target_gb": TARGET_GB, "quick": args.quick, "rows": rows}, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"JSON written to {args.json}")
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
