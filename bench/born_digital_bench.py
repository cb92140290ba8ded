"""Born-digital documents: seconds per document through the file's own text vs through render + OCR, side by
side in one run, and the fields each route finds.

    python -m bench.born_digital_bench [--repeat 3] [--json bench/results/born_digital.json] [FILES...]
    python -m bench.born_digital_bench --generated 10 [--json bench/results/born_digital_generated.json]
    python -m bench.born_digital_bench --batch 10 [--workers 1 2] [--json bench/results/born_digital_batch.json]

FILES default to the born-digital PDF and the three OFD e-invoices in tests/data/born_digital. Each file goes
through the product's route (reading.route.analyse_file) twice per repeat: once as shipped (a PDF page with a
usable text layer and an OFD page read from the file) and once with PIAOJU_READER=ocr (every page rendered or
drawn and OCR'd, the route before born-digital input). Models are loaded and warmed before timing; the median
of the repeats is reported. "read" is the page source alone (decode + text layer, or decode + OCR), "document"
adds extraction. Target: the text route >= 20x faster per document than the OCR route over all files
(TARGET_SPEEDUP); the run exits 1 when it is missed.

`--batch K` measures the route the bar names, `python -m app batch` (app.batch.command.run_batch, a fresh
results file, models loaded before the clock starts): a folder holding K copies of each FILE (each copy's
bytes made unique, so none is skipped as done) read as shipped, and a folder of max(1, K // 5) copies read with
PIAOJU_READER=ocr, for each --workers count (1: the default; more: the machine's cores used by more worker
processes, as a user with a folder of thousands would run it), side by side in one run; documents/s and
pages/s of each route. Worker processes (--workers 2 and up) load their models first, a few seconds that a
folder of thousands pays once: the rates are of the documents after every worker was ready (`batch`'s
Summary.startup), with the start-up included beside them. Target: the text route >= TARGET_SPEEDUP x the OCR
route's documents/s at the best worker count of each (exit 1 when missed).

`--generated N` measures the extractor on the two readers instead: N generated pages (born-digital kinds:
GENERATED_TYPES in turn, no degradation) written as PDFs with a real text layer and their rules drawn as
vector strokes (data.born_pdf), each read
through the text layer and through render + OCR (PIAOJU_READER=ocr) by the product's route, and the
ground-truth lines themselves as the reference; field F1 of each, scored as training.evaluate scores the
development set (its gold_of / pred_of / score_fields). Target: the text layer's F1 no lower than OCR's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = sorted((ROOT / "tests" / "data" / "born_digital").glob("*.*"))
TARGET_SPEEDUP = 20.0
GENERATED_TYPES = ("e_invoice", "vat_invoice", "train_ticket", "receipt", "business_licence")
GENERATED_SEED = 4100



def restore_reader(saved: str | None) -> None:
    """PIAOJU_READER back to what it was (`saved`: its value before, None when unset)."""
    if saved is None:
        os.environ.pop("PIAOJU_READER", None)
    else:
        os.environ["PIAOJU_READER"] = saved


def _run(path: Path, reader: str) -> tuple[float, float, list[str], dict[str, str], str | None]:
    """(seconds for the document, seconds reading its pages, readers per page, fields, error)."""
    from reading.route import analyse_file
    os.environ["PIAOJU_READER"] = reader
    t0 = time.perf_counter()
    a = analyse_file(str(path))
    total = time.perf_counter() - t0
    doc = a.document
    t = doc.timings
    read = t.get("decode", 0.0) + t.get("ocr", 0.0) + t.get("text_layer", 0.0)
    fields: dict[str, str] = {}
    for part in a.parts():
        for k, v in part.values().items():
            fields.setdefault(k, v)
    return total, read, [p.reader for p in doc.pages], fields, (doc.error or {}).get("message")


def generated(n: int, out_json: Path, types: tuple[str, ...] = GENERATED_TYPES) -> int:
    """Field F1 of the bundled model on `n` generated pages written as text-layer PDFs: through the text
    layer, through render + OCR, and on the ground-truth lines (module docstring). Exit status 1 when the
    text layer scores below OCR."""
    import tempfile

    from data.born_pdf import write_pdf
    from data.document import Document, Line, Page
    from data.schemas import load_schema
    from data.synth.generator import generate_ruled, page_seed
    from reading.route import analyse_file, load_extractor, warm_up
    from training.evaluate import PageScore, Report, gold_of, pred_of, score_fields
    warm_up()
    extractor = load_extractor()
    reports = {"text_layer": Report(), "ocr": Report(), "gt_lines": Report()}
    rows = []
    saved = os.environ.get("PIAOJU_READER")
    tmp = Path(tempfile.mkdtemp(prefix="born_generated_"))
    try:
        for i in range(n):
            doc_type = types[i % len(types)]
            _, gt, strokes = generate_ruled(doc_type, page_seed(GENERATED_SEED, i))
            path = tmp / f"{doc_type}_{i}.pdf"
            path.write_bytes(write_pdf(gt, strokes=strokes))     # its rules drawn as vector strokes
            schema = load_schema(doc_type)
            gold, gold_items, _ = gold_of(gt, schema)
            docs: dict[str, Document] = {}
            for reader in ("auto", "ocr"):
                os.environ["PIAOJU_READER"] = reader
                a = analyse_file(str(path))
                docs["text_layer" if reader == "auto" else "ocr"] = a.parts()[0]
            page = Page(index=0, width=gt["width"], height=gt["height"],
                        lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in gt["lines"]])
            docs["gt_lines"] = extractor.extract(Document(source=path.name, pages=[page]))
            row: dict[str, Any] = {"page": path.name, "readers": [p.reader for p in docs["text_layer"].pages]}
            for route, doc in docs.items():
                pred, pred_items, _ = pred_of(doc, schema)
                reports[route].add(PageScore(doc_type, score_fields(gold, pred, gold_items, pred_items)),
                                   doc.doc_type)
                row[route] = {k: [gold.get(k), pred.get(k)] for k in sorted(set(gold) | set(pred))
                              if gold.get(k) != pred.get(k)}
                if sorted(map(sorted, (r.items() for r in gold_items))) != \
                        sorted(map(sorted, (r.items() for r in pred_items))):
                    row[route]["items"] = [gold_items, pred_items]
            rows.append(row)
            print(f"{path.name:26s} wrong: text layer {len(row['text_layer']):2d}  ocr {len(row['ocr']):2d}  "
                  f"gt lines {len(row['gt_lines']):2d}", flush=True)
    finally:
        restore_reader(saved)
    summary: dict[str, Any] = {route: {"field_f1": round(r.overall().f1, 4), "f1_by_type": r.headline()}
                               for route, r in reports.items()}
    summary["pages"] = n
    summary["met"] = summary["text_layer"]["field_f1"] >= summary["ocr"]["field_f1"]
    for route in reports:
        print(f"{route:11s} field F1 {summary[route]['field_f1']:.4f}  {summary[route]['f1_by_type']}")
    print(f"text layer >= OCR: {'met' if summary['met'] else 'MISSED'}")
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps({"summary": summary, "pages": rows}, ensure_ascii=False, indent=1) + "\n")
    return 0 if summary["met"] else 1


def _batch_folder(root: Path, files: list[Path], copies: int) -> tuple[Path, int]:
    """A folder of `copies` copies of each file, every copy's bytes unique (a trailing comment line, which
    PDF and zip readers ignore), and the number of pages in it."""
    from data.io import page_count
    root.mkdir(parents=True)
    pages = 0
    for path in files:
        data = path.read_bytes()
        n = page_count(str(path))
        for i in range(copies):
            (root / f"{path.stem}_{i:04d}{path.suffix}").write_bytes(data + f"\n%copy {i}\n".encode())
            pages += n
    return root, pages


def batch(files: list[Path], copies: int, workers: list[int], out_json: Path) -> int:
    """Documents and pages per second through `batch`, text route vs OCR route (module docstring)."""
    import shutil
    import tempfile

    from app.batch.command import run_batch
    from reading.route import warm_up
    warm_up()
    saved = os.environ.get("PIAOJU_READER")
    tmp = Path(tempfile.mkdtemp(prefix="born_batch_"))
    rows: list[dict[str, Any]] = []
    try:
        folders = {"auto": _batch_folder(tmp / "text", files, copies),
                   "ocr": _batch_folder(tmp / "ocr", files, max(1, copies // 5))}
        for w in workers:
            for reader in ("auto", "ocr"):
                folder, pages = folders[reader]
                docs = len(list(folder.iterdir()))
                os.environ["PIAOJU_READER"] = reader
                out = tmp / f"{reader}_{w}.jsonl"
                t0 = time.perf_counter()
                counts = run_batch([str(folder)], str(out), workers=w, progress=False)
                seconds = time.perf_counter() - t0
                working = seconds - counts.startup      # a folder of thousands: the workers start once
                rows.append({"route": "text" if reader == "auto" else "ocr", "workers": w, "files": docs,
                             "pages": pages, "seconds": round(seconds, 2), "startup_s": round(counts.startup, 2),
                             "files_per_s": round(docs / working, 3), "pages_per_s": round(pages / working, 3),
                             "files_per_s_with_startup": round(docs / seconds, 3), "failed": counts.failed})
                r = rows[-1]
                print(f"{r['route']:4s} workers {w}: {docs:4d} files {pages:4d} pages in {seconds:7.2f} s "
                      f"({counts.startup:5.2f} s starting workers)  {r['files_per_s']:7.2f} files/s  "
                      f"{r['pages_per_s']:7.2f} pages/s once started ({r['files_per_s_with_startup']:.2f} files/s "
                      "with the start)", flush=True)
    finally:
        restore_reader(saved)
        shutil.rmtree(tmp, ignore_errors=True)
    best = {route: max((r for r in rows if r["route"] == route), key=lambda r: r["files_per_s"])
            for route in ("text", "ocr")}
    per_workers = {w: round(next(r["files_per_s"] for r in rows if r["route"] == "text" and r["workers"] == w) /
                            next(r["files_per_s"] for r in rows if r["route"] == "ocr" and r["workers"] == w), 1)
                   for w in workers}
    speedup = best["text"]["files_per_s"] / best["ocr"]["files_per_s"]
    summary: dict[str, Any] = {"speedup_best": round(speedup, 1), "speedup_by_workers": per_workers,
               "best_workers": {k: v["workers"] for k, v in best.items()},
               "target_speedup": TARGET_SPEEDUP, "met": speedup >= TARGET_SPEEDUP, "cpu_count": os.cpu_count(),
               "files": [p.name for p in files], "copies": copies}
    print(f"batch, files/s text vs OCR: x{speedup:.1f} at the best worker count of each "
          f"({', '.join(f'{w} worker(s) x{x}' for w, x in per_workers.items())}); target x{TARGET_SPEEDUP:.0f}: "
          f"{'met' if summary['met'] else 'MISSED'}")
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps({"summary": summary, "runs": rows}, ensure_ascii=False, indent=1) + "\n")
    return 0 if summary["met"] else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="where to write the results (default bench/results/"
                                                "born_digital.json, or born_digital_generated.json)")
    ap.add_argument("--generated", type=int, default=0, metavar="N",
                    help="instead: field F1 on N generated pages as text-layer PDFs, text layer vs OCR")
    ap.add_argument("--batch", type=int, default=0, metavar="K",
                    help="instead: files/s through `batch` over K copies of each file, text route vs OCR route")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="with --batch: worker counts")
    a = ap.parse_args(argv)
    results = ROOT / "bench" / "results"
    if a.batch:
        return batch(list(a.files), a.batch, a.workers, Path(a.json or results / "born_digital_batch.json"))
    if a.generated:
        return generated(a.generated, Path(a.json or results / "born_digital_generated.json"))
    a.json = a.json or str(results / "born_digital.json")
    from reading.route import warm_up
    saved = os.environ.get("PIAOJU_READER")
    warm_up()
    for path in a.files[:1]:                 # warm both routes once (first-call costs are not the document's)
        _run(path, "auto")
        _run(path, "ocr")
    rows = []
    try:
        for path in a.files:
            runs: dict[str, list[tuple[float, float, list[str], dict[str, str], str | None]]] = {
                "auto": [], "ocr": []}
            for _ in range(a.repeat):
                for reader in ("auto", "ocr"):
                    runs[reader].append(_run(path, reader))
            text, ocr = runs["auto"], runs["ocr"]
            t_doc, o_doc = statistics.median(r[0] for r in text), statistics.median(r[0] for r in ocr)
            t_read, o_read = statistics.median(r[1] for r in text), statistics.median(r[1] for r in ocr)
            tf, of = text[0][3], ocr[0][3]
            differ = {k: {"text": tf.get(k), "ocr": of.get(k)}
                      for k in sorted(set(tf) | set(of)) if tf.get(k) != of.get(k)}
            rows.append({"file": path.name, "pages": len(text[0][2]), "readers": text[0][2],
                         "text_s": round(t_doc, 4), "ocr_s": round(o_doc, 4),
                         "text_read_s": round(t_read, 4), "ocr_read_s": round(o_read, 4),
                         "speedup": round(o_doc / max(t_doc, 1e-9), 1),
                         "read_speedup": round(o_read / max(t_read, 1e-9), 1),
                         "fields_text": len(tf), "fields_ocr": len(of),
                         "fields_same": len(set(tf) | set(of)) - len(differ),
                         "differ": differ, "error": text[0][4] or ocr[0][4]})
            r = rows[-1]
            print(f"{path.name:28s} pages {r['pages']}  text {t_doc:6.3f} s  ocr {o_doc:6.3f} s  x{r['speedup']:5.1f}  "
                  f"(reading x{r['read_speedup']:.0f})  fields text {len(tf)} ocr {len(of)}, {len(differ)} differ",
                  flush=True)
    finally:
        restore_reader(saved)
    text_total = sum(r["text_s"] for r in rows)
    ocr_total = sum(r["ocr_s"] for r in rows)
    pages = sum(r["pages"] for r in rows)
    speedup = ocr_total / max(text_total, 1e-9)
    read_speedup = sum(r["ocr_read_s"] for r in rows) / max(sum(r["text_read_s"] for r in rows), 1e-9)
    summary = {"documents": len(rows), "pages": pages,
               "text_s_per_doc": round(text_total / max(1, len(rows)), 4),
               "ocr_s_per_doc": round(ocr_total / max(1, len(rows)), 4),
               "text_pages_per_s": round(pages / max(text_total, 1e-9), 2),
               "ocr_pages_per_s": round(pages / max(ocr_total, 1e-9), 2),
               "speedup": round(speedup, 1), "read_speedup": round(read_speedup, 1),
               "target_speedup": TARGET_SPEEDUP, "met": speedup >= TARGET_SPEEDUP,
               "cpu_count": os.cpu_count(), "repeat": a.repeat}
    print(f"per document: text {summary['text_s_per_doc']:.3f} s, OCR {summary['ocr_s_per_doc']:.3f} s -> "
          f"x{speedup:.1f} (reading alone x{read_speedup:.0f}); target x{TARGET_SPEEDUP:.0f}: "
          f"{'met' if summary['met'] else 'MISSED'}")
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "files": rows}, ensure_ascii=False, indent=1) + "\n")
    return 0 if summary["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
