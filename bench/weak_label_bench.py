"""Weak labels on real OCR: align each generated page's true field values to PP-OCR's output of the
rendered image (the csv importer's path, data/importers/weak.py) and check the span found is where
the generator drew the value. Prints a table per doc type and degradation level and writes JSON.

    python -m bench.weak_label_bench --pages 4 [--types vat_invoice receipt] [--degrade none light]
        [--cache /tmp/weak_ocr] [--misses runs/weak_misses.txt] [--out runs/weak_label_bench.json]

"Right" = the labelled span's own box (its share of the OCR line's width, as the importer writes it)
overlaps the true field box. Earlier versions tested the whole OCR line's box instead; that is too
lenient where OCR reads a key and its value as one line (开票日期：2019年12月12日: any span on that
line "overlapped") and we want the label itself to be in the right place. A value OCR cut across two
lines counts by the joined line the importer writes. Values are the normalised ground truth (ISO
dates, two-place amounts, the figure for 大写) exactly as a user's CSV would hold them, so the
bench also checks that printed forms are found. Target: at least 98% of fields recovered over all pages
(issue 5's bar; --target); the run exits 1 when it is missed.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from bench.targets import Target, judge
from data.document import Line, Page
from data.importers.weak import MIN_SCORE, label_page

DEFAULT_TYPES = ["vat_invoice", "e_invoice", "id_card_front", "receipt"]
TARGET_RECOVERY = 0.98      # issue 5: weak labels recover the true span for >= 98% of fields


def overlaps(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def ocr_page(doc_type: str, seed: int, degrade: str, cache: Path | None) -> tuple[Page, dict]:
    """(OCR page, ground truth) of one generated page; OCR output is cached by (type, seed, level)
    so reruns while tuning the aligner take seconds."""
    from data.synth.generator import generate
    image, gt = generate(doc_type, seed, degrade=degrade)
    hit = cache / f"{doc_type}_{seed}_{degrade}.json" if cache else None
    if hit is not None and hit.exists():
        d = json.loads(hit.read_text(encoding="utf-8"))
        return Page(index=0, width=d["width"], height=d["height"],
                    lines=[Line(**ln) for ln in d["lines"]]), gt
    import cv2
    import numpy as np

    from models.ocr import get_engine
    page = get_engine().read(cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR))
    if hit is not None:
        hit.parent.mkdir(parents=True, exist_ok=True)
        hit.write_text(json.dumps(asdict(page), ensure_ascii=False), encoding="utf-8")
    return page, gt


def score_page(page: Page, gt: dict, doc_type: str) -> tuple[int, int, int, list[str]]:
    """(fields, placed, right, miss descriptions) of one page."""
    values = {k: f["value"] for k, f in gt["fields"].items() if f.get("value") and f.get("box")}
    lines, fields, dropped = label_page(page, values, MIN_SCORE, doc_type=doc_type)
    right, misses = 0, []
    for key, value in values.items():
        f, true_box = fields.get(key), gt["fields"][key]["box"]
        if f is not None and overlaps(f["box"], true_box):
            right += 1
            continue
        near = [ln["text"] for ln in lines if overlaps(ln["box"], true_box)]
        got = (f"{lines[f['line']]['text']!r} span {f['text']!r} score {f['score']}" if f
               else f"dropped (best {dropped.get(key, 0.0):.2f})")
        misses.append(f"{key}={value!r} printed {gt['fields'][key]['text']!r}; OCR there {near}; got {got}")
    return len(values), len(fields), right, misses


def run(types: list[str], pages: int, seed: int, levels: list[str], cache: Path | None) -> dict:
    rows: dict[str, dict] = {}
    misses: list[str] = []
    for dt in types:
        for level in levels:
            stat = rows.setdefault(f"{dt}/{level}", {"pages": 0, "fields": 0, "placed": 0, "recovered": 0,
                                                      "align_seconds": 0.0})
            for i in tqdm(range(pages), desc=f"OCR + align {dt}/{level}", unit="page"):
                page, gt = ocr_page(dt, seed + i, level, cache)
                t0 = time.perf_counter()
                n, placed, right, miss = score_page(page, gt, dt)
                stat["align_seconds"] += time.perf_counter() - t0
                stat["pages"] += 1
                stat["fields"] += n
                stat["placed"] += placed
                stat["recovered"] += right
                misses += [f"{dt}/{level}/seed {seed + i}: {m}" for m in miss]
    for s in rows.values():
        s["recovery"] = round(s["recovered"] / max(1, s["fields"]), 4)
        s["align_seconds"] = round(s["align_seconds"], 2)
    total = {k: sum(r[k] for r in rows.values()) for k in ("pages", "fields", "placed", "recovered")}
    total["recovery"] = round(total["recovered"] / max(1, total["fields"]), 4)
    return {"rows": rows, "total": total, "min_score": MIN_SCORE, "seed": seed, "misses": misses}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--types", nargs="+", default=DEFAULT_TYPES)
    p.add_argument("--degrade", nargs="+", default=["none", "light"], help="degradation levels to test")
    p.add_argument("--pages", type=int, default=4, help="generated pages per type and level")
    p.add_argument("--seed", type=int, default=1000, help="seed of the first page of each type")
    p.add_argument("--cache", type=Path, default=None, help="folder to keep OCR output in between runs")
    p.add_argument("--misses", type=Path, default=None, help="write every miss (value, OCR, label) here")
    p.add_argument("--target", type=float, default=TARGET_RECOVERY,
                   help=f"share of fields to recover (default {TARGET_RECOVERY}: issue 5's bar)")
    p.add_argument("--out", type=Path, default=Path("runs/weak_label_bench.json"))
    a = p.parse_args(argv)
    res = run(a.types, a.pages, a.seed, a.degrade, a.cache)
    print(f"{'doc type/level':22s} {'pages':>5s} {'fields':>6s} {'placed':>6s} {'right':>6s} {'recovery':>8s}")
    for name, s in {**res["rows"], "ALL": res["total"]}.items():
        print(f"{name:22s} {s['pages']:5d} {s['fields']:6d} {s['placed']:6d} {s['recovered']:6d} {s['recovery']:8.3f}")
    res.update(judge([Target("fields recovered (share)", res["total"]["recovery"], a.target, source="issue 5")]))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
    if a.misses:
        a.misses.parent.mkdir(parents=True, exist_ok=True)
        a.misses.write_text("\n".join(res["misses"]) + "\n", encoding="utf-8")
    print(f"{len(res['misses'])} misses; written to {a.out}" + (f" and {a.misses}" if a.misses else ""))
    return 0 if res["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
