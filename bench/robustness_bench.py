"""Bad, awkward and hostile input through every entry point: exit code, message, seconds, peak memory,
and whether each run met its target.

    python -m bench.robustness_bench [--quick] [--entry extract batch ui] [--blank-pages 100]
                                     [--only LABEL ...] [--json bench/results/robustness.json]

Two kinds of rows:
- **inputs x entries**: a set of files a user or an attacker might hand over (empty, truncated and
  mislabelled files, a zero-page PDF, a pixel-bomb PNG, a 500-page PDF of huge pages, 100 blank A4 pages,
  an invoice with a blank back page, two invoices in one PDF, a 3-page TIFF, a GBK-encoded file name,
  symbolic-link loops and dangling links, a directory, a PNG of 20,000,000 x 3 pixels, a 332-byte PDF
  whose page is 10,000,000 x 1 pt, a PDF page of 1,000,000 x 1,000,000 pt, a 48 MP phone photo), each
  run in a fresh process of its own through
  - `extract`: `python -m app extract FILE --json OUT`,
  - `batch`:   `python -m app batch FILE --out OUT.jsonl`,
  - `ui`:      the UI's analysis function (`reading.route.analyse_bytes` on the file's bytes, as an upload);
- **probes**: one run each of a hostile situation, with a check of its own:
  a FIFO and a link to /dev/zero in an input folder (batch must finish and give each a row),
  `extract` on a FIFO, a model folder whose weights are a pickle that runs code (refused, nothing run),
  `batch --out` given a user's file that is not a results file (refused, the file untouched),
  `batch --workers 2` onto a 24 KB filesystem (exit non-zero naming the lost documents; a rerun with
  space completes every file, none doubled), file names that are spreadsheet formulas (escaped in the
  CSV) or that hold terminal escape sequences (printed escaped).

Every row's target: the process ends by itself within its time limit (no hang, no kill by the kernel),
prints no Python traceback, and its peak RSS (the child's, from wait4) stays under 1.5 GB; a probe adds
its own check. The table says "ok" or why a row missed; the exit status is 1 when any row missed.
`--quick` runs a small form of every probe and the thin-page inputs (a minute or two; the test suite
runs it), the default runs everything. Each run loads the models afresh, so seconds include model
loading (a few seconds). The full-disk probe mounts a tmpfs in a mount namespace of its own
(`unshare -m`): it needs root or unprivileged user namespaces.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MB = 1536.0          # every row: peak RSS of the child process
QUICK_TIMEOUT = 300.0      # seconds a run may take before it counts as a hang
HARD_CAP_MB = 4096.0       # a run whose process tree passes this is killed (a miss) before it takes the machine

UI_RUNNER = r"""
import json, sys
from reading.route import analyse_bytes
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

# a pickle whose loading runs `open(MARKER, "w")` (through os.system, as an attacker would)
EVIL_PICKLE = r"""
import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with open(sys.argv[1], "wb") as fh:
    pickle.dump({"encoder.word_emb.weight": Evil()}, fh, protocol=2)
"""


# --- inputs -------------------------------------------------------------------------------------------

def _minimal_pdf(pages: int, width_pt: float, height_pt: float) -> bytes:
    """A valid PDF of `pages` empty pages of one size, written by hand (a few bytes per page)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    for _ in range(pages):
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width_pt:g} {height_pt:g}] >>".encode())
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


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


def _png_bomb(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height pixels (a few hundred bytes on disk)."""
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    idat = zlib.compress(b"\x00" * 1024)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def _png_white(width: int, height: int) -> bytes:
    """A complete, valid 8-bit grey PNG of width x height white pixels, compressed row by row (a 20,000,000
    x 3 page is ~60 KB on disk and 60 MB decoded)."""
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    comp = zlib.compressobj(9)
    row = b"\x00" + b"\xff" * width
    idat = b"".join(comp.compress(row) for _ in range(height)) + comp.flush()
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def _invoices(count: int) -> list:
    from data.synth import generate
    kinds = ["vat_invoice", "e_invoice", "receipt"]
    out = []
    for i in range(count):
        im, _ = generate(kinds[i % len(kinds)], seed=5 + i)
        out.append(im.convert("RGB").resize((im.width * 3 // 4, im.height * 3 // 4)))
    return out


def _photo_48mp(invoice: "Image.Image") -> "Image.Image":
    """An 8000 x 6000 phone-style photo: the invoice enlarged on a noisy grey desk."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(7)
    desk = rng.normal(150, 12, (6000, 8000, 3)).clip(0, 255).astype(np.uint8)
    photo = Image.fromarray(desk)
    scale = 5400 / invoice.height
    photo.paste(invoice.resize((int(invoice.width * scale), 5400)), (400, 300))
    return photo


def make_inputs(folder: Path, blank_pages: int, quick: bool) -> list[tuple[str, bytes]]:
    """Writes the input set into `folder`; returns (label, path as bytes) in table order."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    f = folder
    # the thin and huge pages of issue 34: a few hundred bytes that must not become gigabytes
    (f / "thin_20M_x_3.png").write_bytes(_png_white(20_000_000, 3))
    (f / "thin_332_bytes.pdf").write_bytes(_minimal_pdf(1, 10_000_000, 1))
    (f / "page_1e6_pt.pdf").write_bytes(_minimal_pdf(1, 1_000_000, 1_000_000))
    names = ["thin_20M_x_3.png", "thin_332_bytes.pdf", "page_1e6_pt.pdf"]
    if not quick:
        inv1, inv2 = _invoices(2)
        blank = Image.new("RGB", inv1.size, "white")
        # each save on a copy: Pillow keeps a format's encoder settings on the image it saved
        inv1.copy().save(f / "invoice.png")
        inv1.copy().save(f / "three_pages.tif", save_all=True, append_images=[inv2.copy(), blank.copy()])
        inv1.copy().save(f / "invoice_blank_back.pdf", save_all=True, append_images=[blank.copy()], resolution=150)
        inv1.copy().save(f / "two_invoices.pdf", save_all=True, append_images=[inv2.copy()], resolution=150)
        _photo_48mp(inv1).save(f / "photo_48mp.jpg", quality=90)
        (f / "empty.png").write_bytes(b"")
        png = (f / "invoice.png").read_bytes()
        (f / "truncated.png").write_bytes(png[: len(png) // 3])
        (f / "notes.png").write_text("this is a text file with a .png name\n", encoding="utf-8")
        (f / "zero_pages.pdf").write_bytes(_minimal_pdf(0, 595, 842))
        (f / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(4096))
        (f / "pixel_bomb.png").write_bytes(_png_bomb(100_000, 100_000))
        (f / "huge_500_pages.pdf").write_bytes(_minimal_pdf(500, 2384, 3370))       # 500 x A0
        (f / f"blank_{blank_pages}_a4.pdf").write_bytes(_minimal_pdf(blank_pages, 595, 842))
        names = ["invoice.png", "invoice_blank_back.pdf", "two_invoices.pdf", "three_pages.tif", "photo_48mp.jpg",
                 "empty.png", "truncated.png", "notes.png", "zero_pages.pdf", "garbage.pdf", "pixel_bomb.png",
                 "huge_500_pages.pdf", f"blank_{blank_pages}_a4.pdf", *names]
    out = [(n, os.fsencode(str(f / n))) for n in names]
    if not quick:
        gbk = os.fsencode(str(f)) + b"/" + "发票_gbk.png".encode("gbk")
        with open(gbk, "wb") as fh:
            fh.write((f / "invoice.png").read_bytes())
        os.symlink("loop_b.png", f / "loop_a.png")
        os.symlink("loop_a.png", f / "loop_b.png")
        os.symlink("missing.png", f / "dangling.png")
        (f / "folder.png").mkdir()
        out.append(("发票_gbk.png (GBK bytes)", gbk))
        out += [(n, os.fsencode(str(f / n))) for n in ("loop_a.png", "dangling.png", "folder.png")]
    return out


# --- runs ---------------------------------------------------------------------------------------------

def run_child(cmd: list[bytes | str], timeout: float, env: dict | None = None) -> dict:
    """Runs `cmd`; exit code, stdout, stderr, seconds, whether it was killed at `timeout`, and the
    child's peak RSS (MiB, from wait4: the largest of the process and its waited-for descendants; Linux
    starts a forked child's figure at this process's resident size, so run the bench as its own process,
    not from a large one such as a test session). A run
whose process tree passes HARD_CAP_MB is killed there, so a memory bomb cannot take the machine."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore", **(env or {}))
    t0 = time.perf_counter()
    timed_out = False
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = t0 + timeout
        status, usage, over = 0, None, 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            over = _tree_rss_mb(proc.pid)
            if time.perf_counter() > deadline or over > HARD_CAP_MB:
                timed_out = over <= HARD_CAP_MB
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"rc": proc.returncode, "stdout": out.read().decode("utf-8", "replace"),
                "stderr": err.read().decode("utf-8", "replace"), "seconds": time.perf_counter() - t0,
                "timed_out": timed_out, "peak_rss_mb": max(usage.ru_maxrss / 1024 if usage else 0.0, over)}


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its descendants, MiB (0 when it has just ended)."""
    import psutil
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


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


def general_miss(res: dict) -> str | None:
    """Why a run missed the target every row shares, or None."""
    if res["timed_out"]:
        return f"hung: killed after {res['seconds']:.0f} s"
    if (res["peak_rss_mb"] or 0) > HARD_CAP_MB:
        return f"killed above {HARD_CAP_MB:.0f} MB of memory"
    if res["rc"] < 0:
        return f"killed by signal {-res['rc']}"
    if "Traceback (most recent call last)" in res["stderr"] + res["stdout"]:
        return "printed a traceback"
    if (res["peak_rss_mb"] or 0) > LIMIT_MB:
        return f"peak RSS {res['peak_rss_mb']:.0f} MB > {LIMIT_MB:.0f} MB"
    return None


def _rows_of(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, "rb") as fh:
        return [json.loads(raw) for raw in fh if raw.strip()]


# --- probes -------------------------------------------------------------------------------------------

@dataclass
class Probe:
    """One hostile situation: `run(work)` does it (one or more child runs) and returns the last run's
    result with a "miss" entry (None when its own check held) and a "message"."""
    label: str
    entry: str
    run: Callable[[Path, float], dict]
    quick: bool = True
    notes: list[str] = field(default_factory=list)


def _py(*args: str | bytes) -> list[str | bytes]:
    return [sys.executable, "-m", "app", *args]


def probe_special_files(work: Path, timeout: float) -> dict:
    """A FIFO and a link to /dev/zero beside an empty file in an input folder: the batch ends and each
    gets a row saying why it was not read."""
    folder = work / "in"
    folder.mkdir()
    os.mkfifo(folder / "pipe.png")
    os.symlink("/dev/zero", folder / "zero.pdf")
    (folder / "empty.png").write_bytes(b"")
    out = work / "out.jsonl"
    res = run_child(_py("batch", str(folder), "--out", str(out), "--no-progress"), timeout)
    rows = _rows_of(out)
    named = {Path(r.get("file", "")).name: r for r in rows}
    lacking = [n for n in ("pipe.png", "zero.pdf", "empty.png") if not (named.get(n) or {}).get("error")]
    res["rows"] = rows
    res["miss"] = f"no error row for {', '.join(lacking)}" if lacking else None
    return res


def probe_extract_fifo(work: Path, timeout: float) -> dict:
    os.mkfifo(work / "pipe.png")
    res = run_child(_py("extract", str(work / "pipe.png"), "--json", str(work / "out.json")), timeout)
    res["miss"] = None if res["rc"] in (1, 2) and res["stderr"].strip() else "no clear error"
    return res


def probe_extract_dev_zero(work: Path, timeout: float) -> dict:
    os.symlink("/dev/zero", work / "zero.png")
    res = run_child(_py("extract", str(work / "zero.png"), "--json", str(work / "out.json")), timeout)
    res["miss"] = None if res["rc"] in (1, 2) and res["stderr"].strip() else "no clear error"
    return res


def _evil_model(work: Path) -> tuple[Path, Path]:
    """A copy of the bundled model whose weights are replaced by a pickle that runs a command."""
    model, marker = work / "evil_model", work / "EXECUTED"
    shutil.copytree(ROOT / "models" / "default", model,
                    ignore=shutil.ignore_patterns("*.pdparams", "*.safetensors", "README.md", "loss.png"))
    subprocess.run([sys.executable, "-c", EVIL_PICKLE, str(model / "model_state.pdparams"), str(marker)],
                   check=True)
    return model, marker


def probe_evil_model_extract(work: Path, timeout: float) -> dict:
    model, marker = _evil_model(work)
    (work / "page.png").write_bytes(_png_white(400, 300))
    res = run_child(_py("extract", str(work / "page.png"), "--model", str(model), "--json",
                        str(work / "out.json")), timeout)
    res["miss"] = ("the pickle ran a command" if marker.exists()
                   else None if res["rc"] != 0 and res["stderr"].strip() else "accepted the model folder")
    return res


def probe_evil_model_ui(work: Path, timeout: float) -> dict:
    """The UI's model list and description of a folder holding the pickle (what the sidebar shows)."""
    model, marker = _evil_model(work)
    code = ("import sys\n"
            "from models.model_dir import describe_model_dir, find_model_dirs, read_model_dir\n"
            "d = sys.argv[1]\n"
            "print('listed:', [str(p) for p in find_model_dirs(d)])\n"
            "for step in (describe_model_dir, read_model_dir):\n"
            "    try:\n        step(d); print(step.__name__, 'accepted it')\n"
            "    except Exception as exc:\n        print(step.__name__, 'refused:', exc)\n")
    res = run_child([sys.executable, "-c", code, str(model)], timeout)
    res["miss"] = ("the pickle ran a command" if marker.exists()
                   else None if "read_model_dir refused" in res["stdout"] else "the weights were loaded")
    res["message"] = " | ".join(ln for ln in res["stdout"].splitlines() if "refused" in ln or "accepted" in ln)
    return res


def probe_out_not_results(work: Path, timeout: float) -> dict:
    """`batch --out` naming a user's own JSON file: refused, the file byte for byte as it was."""
    user = work / "settings.json"
    user.write_bytes(b'{"name": "my settings", "keep": true, "n": 42}\n'[:47])
    before = user.read_bytes()
    res = run_child(_py("batch", str(ROOT / "tests" / "data"), "--out", str(user), "--no-progress"), timeout)
    res["miss"] = ("the file was changed" if user.read_bytes() != before
                   else None if res["rc"] == 2 else f"exit {res['rc']}, not a refusal (2)")
    return res


def probe_full_disk(work: Path, timeout: float) -> dict:
    """`batch --workers 2` with --out on a 24 KB filesystem: exit non-zero, the lost documents named;
    then a rerun onto a roomy disk from what the full one kept completes every file, none twice."""
    from PIL import Image
    folder = work / "in"
    folder.mkdir()
    for i, im in enumerate(_invoices(5)):          # rows of 5-16 KB each: more than the disk holds
        im.save(folder / f"doc{i}.png")
    Image.new("RGB", (300, 200), "white").save(folder / "blank.png")
    mnt, kept = work / "small", work / "kept.jsonl"
    mnt.mkdir()
    script = (f'mount -t tmpfs -o size=24k none "{mnt}" || exit 97; '
              f'"{sys.executable}" -m app batch "{folder}" --out "{mnt}/out.jsonl" --workers 2 --no-progress; '
              f'rc=$?; cp "{mnt}/out.jsonl" "{kept}" 2>/dev/null; exit $rc')
    res = run_child(["unshare", "-m", "sh", "-c", script], timeout)
    if res["rc"] == 97:
        res["miss"] = "could not mount a small tmpfs (needs root or user namespaces)"
        return res
    names = [f"doc{i}.png" for i in range(5)] + ["blank.png"]
    done = {Path(r["file"]).name for r in _rows_of(kept)} if kept.exists() else set()
    lost = [n for n in names if n not in done]
    said = res["stderr"] + res["stdout"]
    if res["rc"] == 0:
        res["miss"] = f"exit 0 with {len(lost)} of {len(names)} documents lost"
        return res
    unnamed = [n for n in lost if n not in said]
    if unnamed:
        res["miss"] = f"lost documents not named: {', '.join(unnamed)}"
        return res
    # the rerun, with space: appends to what the full disk kept
    if not kept.exists():
        kept.write_bytes(b"")
    again = run_child(_py("batch", str(folder), "--out", str(kept), "--workers", "2", "--no-progress"), timeout)
    rows = [Path(r["file"]).name for r in _rows_of(kept)]
    again["first_run"] = {k: res[k] for k in ("rc", "seconds", "peak_rss_mb")}
    again["first_message"] = [ln for ln in said.splitlines() if ln.strip()][-1:] or [""]
    doubled = sorted({n for n in rows if rows.count(n) > 1})
    missing = [n for n in names if n not in rows]
    again["miss"] = (f"rerun exit {again['rc']}" if again["rc"] not in (0, 1)
                     else f"rerun left {missing} out" if missing
                     else f"rerun doubled {doubled}" if doubled else None)
    again["rows"] = [{"file": n} for n in rows]
    again["message"] = (f"full disk: exit {res['rc']}, {len(lost)} of {len(names)} lost and named; "
                        f"rerun: exit {again['rc']}, {len(set(rows))} of {len(names)} files, {len(rows)} rows")
    return again


def probe_formula_names(work: Path, timeout: float) -> dict:
    """File names that are spreadsheet formulas reach the batch CSV as text (a leading ')."""
    folder = work / "in"
    folder.mkdir()
    names = ['=HYPERLINK("x")', "+cmd", "@SUM(A1)", "-1+1"]
    for n in names:
        (folder / f"{n}.png").write_bytes(b"")           # empty: an error row, read in no time
    out, table = work / "out.jsonl", work / "out.csv"
    res = run_child(_py("batch", str(folder), "--out", str(out), "--csv", str(table), "--no-progress"), timeout)
    cells = [c for row in csv.reader(io.StringIO(table.read_text(encoding="utf-8-sig"))) for c in row] \
        if table.exists() else []
    live = [c for c in cells if c[:1] in ("=", "+", "-", "@") and not _is_number(c)]
    res["miss"] = ("no CSV written" if not cells else f"live formula cells: {live[:3]}" if live else None)
    return res


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def probe_escape_names(work: Path, timeout: float) -> dict:
    """A file name holding a terminal escape sequence is printed escaped, never raw."""
    name = "bad\x1b[2J\x1b]0;owned\x07name.png"
    (work / name).write_bytes(b"")
    res = run_child(_py("extract", str(work / name), "--json", str(work / "out.json")), timeout)
    raw = "\x1b" in res["stdout"] + res["stderr"] or "\x07" in res["stdout"] + res["stderr"]
    res["miss"] = "printed the escape sequence raw" if raw else None
    return res


PROBES = [
    Probe("FIFO + /dev/zero in folder", "batch", probe_special_files),
    Probe("FIFO", "extract", probe_extract_fifo),
    Probe("link to /dev/zero", "extract", probe_extract_dev_zero),
    Probe("pickle model folder", "extract", probe_evil_model_extract),
    Probe("pickle model folder", "ui", probe_evil_model_ui),
    Probe("--out a user's file", "batch", probe_out_not_results),
    Probe("full disk, 2 workers", "batch", probe_full_disk),
    Probe("formula file names", "batch", probe_formula_names),
    Probe("escape in file name", "extract", probe_escape_names),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="every probe, small; the thin-page inputs only")
    ap.add_argument("--entry", nargs="+", default=["extract", "batch", "ui"], choices=["extract", "batch", "ui"])
    ap.add_argument("--blank-pages", type=int, default=100, help="pages of the blank A4 PDF (default 100)")
    ap.add_argument("--only", nargs="*", help="run only inputs and probes whose label contains one of these")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run before it is killed (a hang)")
    ap.add_argument("--json", default="bench/results/robustness.json", help="where to write the results")
    args = ap.parse_args(argv)
    timeout = min(args.timeout, QUICK_TIMEOUT) if args.quick else args.timeout
    rows = []
    print(f"{'input':<28} {'entry':<8} {'exit':>4} {'seconds':>8} {'peak MB':>8}  {'target':<6} message")

    def report(label: str, entry: str, res: dict, extra_miss: str | None) -> None:
        miss = general_miss(res) or extra_miss
        row = {"input": label, "entry": entry, "exit": res["rc"], "seconds": round(res["seconds"], 2),
               "peak_rss_mb": round(res["peak_rss_mb"] or 0, 1),
               "message": (res.get("message") or _message(res, entry))[:300],
               "target": "ok" if miss is None else "missed", "miss": miss}
        if entry == "batch":
            row["rows"] = len(res.get("rows") or [])
        rows.append(row)
        shown = row["message"].encode("unicode_escape").decode("ascii", "replace") if any(
            ord(ch) < 32 for ch in row["message"]) else row["message"]
        print(f"{label[:28]:<28} {entry:<8} {row['exit']:>4} {row['seconds']:>8.1f} {row['peak_rss_mb']:>8.0f}  "
              f"{row['target']:<6} {(miss + ' | ' if miss else '') + shown[:100]}", flush=True)

    with tempfile.TemporaryDirectory(prefix="robust_") as tmp:
        inputs = make_inputs(Path(tmp) / "in", 3 if args.quick else args.blank_pages, args.quick)
        if args.only:
            inputs = [(lab, p) for lab, p in inputs if any(o in lab for o in args.only)]
        for label, path in inputs:
            for entry in args.entry:
                work = Path(tmp) / "out" / f"{len(rows)}"
                work.mkdir(parents=True)
                if entry == "extract":
                    cmd: list[bytes | str] = _py("extract", path, "--json", str(work / "out.json"))
                elif entry == "batch":
                    cmd = _py("batch", path, "--out", str(work / "out.jsonl"), "--no-progress")
                else:
                    cmd = [sys.executable, "-c", UI_RUNNER, path]
                res = run_child(cmd, timeout)
                if entry == "batch":
                    res["rows"] = _rows_of(work / "out.jsonl")
                report(label, entry, res, None)
        for probe in PROBES:
            if args.only and not any(o in probe.label for o in args.only):
                continue
            work = Path(tmp) / "probe" / f"{len(rows)}"
            work.mkdir(parents=True)
            res = probe.run(work, timeout)
            report(probe.label, probe.entry, res, res.get("miss"))
    missed = [r for r in rows if r["target"] != "ok"]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} rows met their target (ends by itself, no traceback, "
          f"peak RSS under {LIMIT_MB:.0f} MB, and each probe's own check)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    result = {"machine": f"{platform.machine()} {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"),
              "quick": args.quick, "limit_mb": LIMIT_MB, "blank_pages": 3 if args.quick else args.blank_pages,
              "rows": rows}
    tmp_json = Path(args.json).with_suffix(".json.tmp")
    tmp_json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp_json, args.json)
    print(f"wrote {args.json}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
