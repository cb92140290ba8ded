"""Bad and awkward input through every entry point: exit code, message, seconds and peak memory.

    python -m bench.robustness_bench [--entry extract batch ui] [--blank-pages 100]
                                     [--json bench/results/robustness.json]

Builds a set of inputs a user or an attacker might hand over (empty, truncated and mislabelled files, a
zero-page PDF, a pixel-bomb PNG, a 500-page PDF of huge pages, 100 blank A4 pages, a PDF with an
invoice and a blank back page, two invoices in one PDF, a 3-page TIFF, a GBK-encoded file name, a
symbolic-link loop, a dangling link, a directory) and runs each, in a fresh process of its own, through
- `extract`: `python -m app extract FILE --json OUT`,
- `batch`:   `python -m app batch FILE --out OUT.jsonl`,
- `ui`:      the UI's analysis function (`app.pipeline.analyse_bytes` on the file's bytes, as an upload),
and records the exit code, the first line of the message (stderr for the CLIs, the document error or
the result count for the UI), wall seconds and the child's peak RSS (from wait4). Prints a table and
writes JSON. Each run loads the models afresh, so seconds include model loading (a few seconds).
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
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

UI_RUNNER = r"""
import json, sys
from app.pipeline import analyse_bytes
path = sys.argv[1].encode("utf-8", "surrogateescape")
try:
    data = open(path, "rb").read()
except OSError as exc:   # nothing to upload: a browser cannot pick such a path either
    print(json.dumps({"error": f"cannot be uploaded ({exc.strerror})"})); sys.exit(2)
a = analyse_bytes(data, path.decode("utf-8", "surrogateescape").rsplit("/", 1)[-1])
doc = a.document
results = getattr(a, "results", None) or [doc]
out = {"error": (doc.error or {}).get("message"), "results": len(results) if not doc.error else 0,
       "pages": len(doc.pages), "warnings": [w for r in results for w in r.warnings][:3]}
print(json.dumps(out, ensure_ascii=False))
sys.exit(1 if doc.error else 0)
"""


# --- inputs -------------------------------------------------------------------------------------------

def _minimal_pdf(pages: int, width_pt: float, height_pt: float) -> bytes:
    """A valid PDF of `pages` empty pages of one size, written by hand (a few bytes per page)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    for _ in range(pages):
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width_pt} {height_pt}] >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _png_bomb(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height pixels (a few hundred bytes on disk)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    idat = zlib.compress(b"\x00" * 1024)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def make_inputs(folder: Path, blank_pages: int) -> list[tuple[str, bytes]]:
    """Writes the input set into `folder`; returns (label, path as bytes) in table order."""
    from PIL import Image

    from data.synth import generate
    folder.mkdir(parents=True, exist_ok=True)
    inv1, _ = generate("vat_invoice", seed=5)
    inv2, _ = generate("e_invoice", seed=6)
    inv1, inv2 = (im.convert("RGB").resize((im.width * 3 // 4, im.height * 3 // 4)) for im in (inv1, inv2))
    blank = Image.new("RGB", inv1.size, "white")
    f = folder
    # each save on a copy: Pillow keeps a format's encoder settings on the image it saved
    inv1.copy().save(f / "invoice.png")
    inv1.copy().save(f / "three_pages.tif", save_all=True, append_images=[inv2.copy(), blank.copy()])
    inv1.copy().save(f / "invoice_blank_back.pdf", save_all=True, append_images=[blank.copy()], resolution=150)
    inv1.copy().save(f / "two_invoices.pdf", save_all=True, append_images=[inv2.copy()], resolution=150)
    (f / "empty.png").write_bytes(b"")
    png = (f / "invoice.png").read_bytes()
    (f / "truncated.png").write_bytes(png[: len(png) // 3])
    (f / "notes.png").write_text("this is a text file with a .png name\n", encoding="utf-8")
    (f / "zero_pages.pdf").write_bytes(_minimal_pdf(0, 595, 842))
    (f / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(4096))
    (f / "pixel_bomb.png").write_bytes(_png_bomb(100_000, 100_000))
    (f / "huge_500_pages.pdf").write_bytes(_minimal_pdf(500, 2384, 3370))       # 500 x A0
    (f / f"blank_{blank_pages}_a4.pdf").write_bytes(_minimal_pdf(blank_pages, 595, 842))
    gbk = os.fsencode(str(f)) + b"/" + "发票_gbk.png".encode("gbk")
    with open(gbk, "wb") as fh:
        fh.write(png)
    os.symlink("loop_b.png", f / "loop_a.png")
    os.symlink("loop_a.png", f / "loop_b.png")
    os.symlink("missing.png", f / "dangling.png")
    (f / "folder.png").mkdir()
    names = ["invoice.png", "invoice_blank_back.pdf", "two_invoices.pdf", "three_pages.tif", "empty.png",
             "truncated.png", "notes.png", "zero_pages.pdf", "garbage.pdf", "pixel_bomb.png",
             "huge_500_pages.pdf", f"blank_{blank_pages}_a4.pdf"]
    out = [(n, os.fsencode(str(f / n))) for n in names]
    out.append(("发票_gbk.png (GBK bytes)", gbk))
    out += [(n, os.fsencode(str(f / n))) for n in ("loop_a.png", "dangling.png", "folder.png")]
    return out


# --- runs ---------------------------------------------------------------------------------------------

def run_child(cmd: list[bytes | str], timeout: float) -> dict:
    """Runs `cmd`; exit code, stdout, stderr, seconds and the child's peak RSS (MiB, from wait4)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        status, usage = 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"rc": proc.returncode, "stdout": out.read().decode("utf-8", "replace"),
                "stderr": err.read().decode("utf-8", "replace"), "seconds": time.perf_counter() - t0,
                "peak_rss_mb": usage.ru_maxrss / 1024 if usage else None}


def _message(res: dict, entry: str) -> str:
    if entry == "ui":
        try:
            info = json.loads(res["stdout"].strip().splitlines()[-1])
        except (ValueError, IndexError):
            return (res["stderr"].strip().splitlines() or ["(no output)"])[-1]
        if info.get("error"):
            return info["error"]
        note = f"; {info['warnings'][0]}" if info.get("warnings") else ""
        return f"{info['results']} result(s) from {info['pages']} page(s){note}"
    lines = [ln for ln in res["stderr"].splitlines() if ln.strip() and "Warning" not in ln
             and not ln.startswith(" ")]
    if entry == "batch" and res.get("rows"):          # what the results file says of the input
        errors = [r["error"]["message"] for r in res["rows"] if r.get("error")]
        return errors[0] if errors else f"{len(res['rows'])} row(s), no error"
    return (lines[-1] if lines else (res["stdout"].strip().splitlines() or [""])[0]).strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entry", nargs="+", default=["extract", "batch", "ui"], choices=["extract", "batch", "ui"])
    ap.add_argument("--blank-pages", type=int, default=100, help="pages of the blank A4 PDF (default 100)")
    ap.add_argument("--only", nargs="*", help="run only inputs whose label contains one of these")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run before it is killed")
    ap.add_argument("--json", default="bench/results/robustness.json", help="where to write the results")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="robust_") as tmp:
        inputs = make_inputs(Path(tmp) / "in", args.blank_pages)
        if args.only:
            inputs = [(lab, p) for lab, p in inputs if any(o in lab for o in args.only)]
        print(f"{'input':<26} {'entry':<8} {'exit':>4} {'seconds':>8} {'peak MB':>8}  message")
        for label, path in inputs:
            for entry in args.entry:
                work = Path(tmp) / "out" / f"{len(rows)}"
                work.mkdir(parents=True)
                if entry == "extract":
                    cmd: list[bytes | str] = [sys.executable, "-m", "app", "extract", path,
                                              "--json", str(work / "out.json")]
                elif entry == "batch":
                    cmd = [sys.executable, "-m", "app", "batch", path, "--out", str(work / "out.jsonl")]
                else:
                    cmd = [sys.executable, "-c", UI_RUNNER, path]
                res = run_child(cmd, args.timeout)
                if entry == "batch" and (work / "out.jsonl").exists():
                    with open(work / "out.jsonl", "rb") as fh:
                        res["rows"] = [json.loads(raw) for raw in fh if raw.strip()]
                row = {"input": label, "entry": entry, "exit": res["rc"], "seconds": round(res["seconds"], 2),
                       "peak_rss_mb": round(res["peak_rss_mb"] or 0, 1), "message": _message(res, entry)[:300]}
                if entry == "batch":
                    row["rows"] = len(res.get("rows") or [])
                rows.append(row)
                print(f"{label[:26]:<26} {entry:<8} {row['exit']:>4} {row['seconds']:>8.1f} "
                      f"{row['peak_rss_mb']:>8.0f}  {row['message'][:110]}", flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    result = {"machine": f"{platform.machine()} {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"),
              "blank_pages": args.blank_pages, "rows": rows}
    tmp_json = Path(args.json).with_suffix(".json.tmp")
    tmp_json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp_json, args.json)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
