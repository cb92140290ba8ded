"""Weak labels on real OCR: align each generated page's true field values to PP-OCR's output of the
rendered image (the csv importer's path, data/importers/weak.py) and check the span found holds the
true value. Prints a table per doc type and writes JSON.

    python -m bench.weak_label_bench --pages 10 [--types vat_invoice e_invoice] [--out runs/weak_label_bench.json]

"Recovered" = the aligned span, normalised like the evaluator does for the field's type, equals the
true value normalised the same way, or is within the OCR read of it (the fuzzy score cleared
MIN_SCORE on the line whose box overlaps the true box).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from data.importers.weak import MIN_SCORE, label_page


def overlaps(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def run(types: list[str], pages: int, seed: int) -> dict:
    from data.synth.generator import generate
    from models.ocr import get_engine
    engine = get_engine()
    rows: dict[str, dict] = {}
    for dt in types:
        stat = rows.setdefault(dt, {"pages": 0, "fields": 0, "placed": 0, "recovered": 0, "seconds": 0.0})
        for i in tqdm(range(pages), desc=f"OCR + align {dt}", unit="page"):
            image, gt = generate(dt, seed + i)
            t0 = time.perf_counter()
            page = engine.read(cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR))
            values = {k: f["value"] for k, f in gt["fields"].items() if f.get("value") and f.get("box")}
            lines, fields, _ = label_page(page, values, MIN_SCORE)
            stat["seconds"] += time.perf_counter() - t0
            stat["pages"] += 1
            stat["fields"] += len(values)
            stat["placed"] += len(fields)
            for key, f in fields.items():
                # the right place: the line found overlaps where the generator drew the value
                stat["recovered"] += overlaps(lines[f["line"]]["box"], gt["fields"][key]["box"])
    for s in rows.values():
        s["recovery"] = round(s["recovered"] / max(1, s["fields"]), 4)
    total = {k: sum(r[k] for r in rows.values()) for k in ("pages", "fields", "placed", "recovered")}
    total["recovery"] = round(total["recovered"] / max(1, total["fields"]), 4)
    return {"types": rows, "total": total, "min_score": MIN_SCORE, "seed": seed}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--types", nargs="+", default=["vat_invoice", "e_invoice"])
    p.add_argument("--pages", type=int, default=10, help="generated pages per type")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--out", type=Path, default=Path("runs/weak_label_bench.json"))
    a = p.parse_args()
    res = run(a.types, a.pages, a.seed)
    print(f"{'doc type':16s} {'pages':>5s} {'fields':>6s} {'placed':>6s} {'right':>6s} {'recovery':>8s}")
    for dt, s in {**res["types"], "ALL": res["total"]}.items():
        print(f"{dt:16s} {s['pages']:5d} {s['fields']:6d} {s['placed']:6d} {s['recovered']:6d} {s['recovery']:8.3f}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(f"written to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
