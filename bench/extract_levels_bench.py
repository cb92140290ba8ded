"""Extraction F1 on held-out layouts through real OCR, by degradation level, on a freshly generated set.

    python -m bench.extract_levels_bench --seed 8484 --n 8 --out runs/final3 \
        --json bench/results/extract_heldout_final.json

Generates N pages per document type and level (none, light, photo, heavy) of the layouts the bundled
model never saw in training (its provenance.json; generic forms also get form_sections, added after
it was trained), writes them as one corpus with ids made unique per level, and scores the model with
`python -m training evaluate --ocr real` (OCR read once, cached in runs/eval_ocr_cache.jsonl). Use a
seed no earlier run looked at for a figure that was not tuned on.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from data.corpus import corpus_from_synth_dir, write_corpus

LEVELS = ("none", "light", "photo", "heavy")


def heldout_layouts(model_dir: Path) -> dict[str, list[str]]:
    """doc type -> layouts held out of the model's training (generic forms: + form_sections)."""
    prov = json.loads((model_dir / "provenance.json").read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for name in prov.get("heldout_layouts", []):
        doc_type, layout = name.split("/", 1)
        out.setdefault(doc_type, []).append(layout)
    if "generic_form" in out and "form_sections" not in out["generic_form"]:
        out["generic_form"].append("form_sections")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="models/default", help="model directory (default: models/default)")
    p.add_argument("--seed", type=int, default=8484, help="generator seed (default 8484)")
    p.add_argument("--n", type=int, default=8, help="pages per document type and level (default 8)")
    p.add_argument("--levels", default=",".join(LEVELS), help="comma-separated degradation levels")
    p.add_argument("--out", default="runs/extract_levels", help="where the generated pages and corpus go")
    p.add_argument("--json", default="runs/extract_levels.json", help="the evaluation report")
    a = p.parse_args(argv)
    out = Path(a.out)
    records = []
    for doc_type, layouts in heldout_layouts(Path(a.model)).items():
        for level in a.levels.split(","):
            d = out / doc_type / level
            if not any(d.glob("*.json")):
                subprocess.run([sys.executable, "-m", "data.synth", "--type", doc_type, "--layouts", ",".join(layouts),
                                "--n", str(a.n), "--seed", str(a.seed), "--degrade", level, "--out", str(d)],
                               check=True, capture_output=True)
            recs = corpus_from_synth_dir(d)
            for r in recs:              # one page id per level: the OCR cache is keyed by id
                r["id"] = f"{r['id']}_{level}"
            records += recs
    write_corpus(records, out)
    print(f"{len(records)} pages in {out / 'corpus.jsonl'}", flush=True)
    return subprocess.run([sys.executable, "-m", "training", "evaluate", "--model", a.model, "--data",
                           str(out / "corpus.jsonl"), "--ocr", "real", "--json", a.json]).returncode


if __name__ == "__main__":
    raise SystemExit(main())
