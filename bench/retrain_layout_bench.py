"""Does a retrain on a held-out invoice layout improve that layout over the base model?

    python -m bench.retrain_layout_bench --out bench/results/retrain_layout.json
    python -m bench.retrain_layout_bench --layout vat_electronic --n 64 --steps 60 --eval-ocr real --variants lines,ocr
        --out bench/results/retrain_layout_real.json

Picks an invoice layout the base never trained on (its provenance.json lists the held-out layouts;
where none is an invoice layout, the generator layout the base scores worst on), generates a small
corpus of that one layout with a fixed seed and light degradation, runs `python -m training retrain`
into a temporary registry once per variant, and prints per-field and overall F1 on the retrain's
held-out pages, base vs new:
- variant `lines`: the fine-tune sees the corpus pages' own (generator) lines;
- variant `ocr`: also the training pages as real PP-OCR reads them, labelled by alignment
  (`retrain --ocr-train`).
Scores are on the held-out pages' own lines and, with `--eval-ocr real`, through real PP-OCR of their
images (what a user gets; the promotion then uses it). Every variant shares one OCR cache, so each
page image is read once. Writes everything to --out as JSON.
Target (issue 5's bar): each variant's retrain improves the layout's held-out field F1 over the base (through real
OCR where --eval-ocr real, else on the pages' own lines); the run exits 1 when a variant does not.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.targets import Target, judge

INVOICE_TYPES = ("vat_invoice", "e_invoice")


def heldout_invoice_layouts(base: Path) -> list[tuple[str, str]]:
    """(doc type, layout) pairs of invoice layouts the base's training held out whole."""
    from models.model_dir import read_provenance
    held = (read_provenance(base) or {}).get("heldout_layouts") or []
    pairs = [tuple(s.split("/", 1)) for s in held if "/" in s]
    return sorted((dt, lay) for dt, lay in pairs if dt in INVOICE_TYPES)


def synth(doc_type: str, layout: str, n: int, seed: int, degrade: str, out: Path) -> None:
    """Generate `n` pages of one layout with the project's generator CLI (ground truth in our format)."""
    subprocess.run([sys.executable, "-m", "data.synth", "--type", doc_type, "--layouts", layout, "--n", str(n),
                    "--seed", str(seed), "--degrade", degrade, "--out", str(out)], check=True)


def worst_layout_for(base: Path, work: Path, seed: int, n: int = 6) -> tuple[str, str]:
    """The generator invoice layout with the lowest base F1 (ground-truth lines, `n` pages each); used
    when the base trained on every invoice layout."""
    from data.corpus import corpus_from_synth_dir
    from data.synth.generator import list_layouts
    from models.extractor import Extractor
    from training.evaluate import evaluate_corpus
    ex = Extractor.load(base)
    scores = {}
    for dt in INVOICE_TYPES:
        for lay in list_layouts(dt):
            out = work / "probe" / lay
            synth(dt, lay, n, seed, "light", out)
            report, _ = evaluate_corpus(ex, corpus_from_synth_dir(out), "gt")
            scores[(dt, lay)] = report.overall().f1
            print(f"base F1 on {dt}/{lay}: {scores[(dt, lay)]:.3f}")
    return min(scores, key=scores.get)


def field_f1(metrics: dict) -> dict[str, float]:
    return {k: v["f1"] for d in metrics["doc_types"].values() for k, v in d["fields"].items()}


def table(base_m: dict, new_m: dict, title: str) -> str:
    bf, nf = field_f1(base_m), field_f1(new_m)
    rows = [title, f"{'field':32s} {'base F1':>8s} {'new F1':>8s} {'delta':>7s}"]
    for key in sorted(set(bf) | set(nf)):
        b, n = bf.get(key, 0.0), nf.get(key, 0.0)
        rows.append(f"{key:32s} {b:8.3f} {n:8.3f} {n - b:+7.3f}")
    b, n = base_m["overall_field"]["f1"], new_m["overall_field"]["f1"]
    rows.append(f"{'ALL FIELDS':32s} {b:8.3f} {n:8.3f} {n - b:+7.3f}")
    return "\n".join(rows)


def run_variant(a: argparse.Namespace, variant: str, doc_type: str, layout: str, corpus: Path) -> dict[str, Any]:
    """One `python -m training retrain` run; its base vs new scores from the exported report."""
    from training.model_registry import ModelRegistry
    root, name = a.work / "models", f"layout-{layout}-{variant}"
    cmd = [sys.executable, "-m", "training", "retrain", "--corpus", str(corpus), "--base", str(a.base),
           "--out-root", str(root), "--name", name, "--steps", str(a.steps), "--batch-size", str(a.batch_size),
           "--lr", str(a.lr), "--seed", str(a.seed), "--eval-ocr", a.eval_ocr,
           "--ocr-cache", str(a.work / "ocr_cache.jsonl")]
    if variant == "ocr":
        cmd += ["--ocr-train", "--ocr-repeat", str(a.ocr_repeat)]
    print("$ " + " ".join(cmd[1:]))
    t1 = time.time()
    subprocess.run(cmd, check=True)
    seconds = round(time.time() - t1, 1)
    reg = ModelRegistry(root)
    version = reg.versions(name)[-1]
    rep = json.loads((version / "report.json").read_text(encoding="utf-8"))
    real = "base_gt_lines" in rep
    lines_base, lines_new = (rep["base_gt_lines"], rep["new_gt_lines"]) if real else (rep["base"], rep["new"])
    print()
    print(table(lines_base, lines_new, f"[{variant}] {doc_type}/{layout}: held-out split ({rep['split']['heldout']} "
                f"pages; {rep['split']['train']} trained on), the pages' own lines"))
    out: dict[str, Any] = {
        "split": rep["split"], "step_function": rep["finetune"]["step_function"], "version": version.name,
        "promoted": rep["promoted"], "judged_on": rep.get("judged_on"), "ocr_labels": rep.get("ocr_labels"),
        "lines": {"base_f1": lines_base["overall_field"]["f1"], "new_f1": lines_new["overall_field"]["f1"],
                  "base_fields": field_f1(lines_base), "new_fields": field_f1(lines_new)},
        "seconds": seconds}
    if real:
        print()
        print(table(rep["base"], rep["new"], f"[{variant}] same pages through real PP-OCR of their images"))
        out["real_ocr"] = {"base_f1": rep["base"]["overall_field"]["f1"], "new_f1": rep["new"]["overall_field"]["f1"],
                           "base_fields": field_f1(rep["base"]), "new_fields": field_f1(rep["new"])}
    return out


def summary_table(result: dict[str, Any]) -> str:
    rows = [f"{result['doc_type']}/{result['layout']}, {result['pages']} pages, seed {result['seed']}, "
            f"{result['steps']} steps: held-out field F1",
            f"{'variant':8s} {'scored on':14s} {'base':>7s} {'new':>7s} {'delta':>7s}"]
    for variant, v in result["variants"].items():
        for what in ("lines", "real_ocr"):
            if what in v:
                b, n = v[what]["base_f1"], v[what]["new_f1"]
                rows.append(f"{variant:8s} {what.replace('_', ' '):14s} {b:7.3f} {n:7.3f} {n - b:+7.3f}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.retrain_layout_bench",
                                description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--base", type=Path, default=Path("models/default"), help="base model directory")
    p.add_argument("--layout", help="DOC_TYPE/LAYOUT or LAYOUT to retrain on (default: the first invoice "
                                    "layout the base held out, else the one it scores worst on)")
    p.add_argument("--n", type=int, default=48, help="pages in the generated corpus (about 20%% are held out)")
    p.add_argument("--seed", type=int, default=11, help="generator and retrain seed")
    p.add_argument("--degrade", default="light", choices=["none", "light", "photo", "heavy", "mix"])
    p.add_argument("--steps", type=int, default=60, help="fine-tune steps")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--eval-ocr", choices=["gt", "real"], default="gt",
                   help="real: also score base and new through real PP-OCR of the held-out images (~3 s/page)")
    p.add_argument("--variants", default="lines",
                   help="comma list of fine-tune variants: lines (own lines), ocr (+ real-OCR-labelled pages)")
    p.add_argument("--ocr-repeat", type=int, default=2, help="variant ocr: times each OCR page joins the mix")
    p.add_argument("--work", type=Path, help="work folder (corpus, registry); default: a temporary folder")
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    a = p.parse_args(argv)

    tmp = None
    if a.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="retrain_layout_")
        a.work = Path(tmp.name)
    a.work.mkdir(parents=True, exist_ok=True)
    if a.layout:
        from data.synth.generator import list_layouts
        if "/" in a.layout:
            doc_type, layout = a.layout.split("/", 1)
        else:
            found = [dt for dt in INVOICE_TYPES if a.layout in list_layouts(dt)]
            if not found:
                p.error(f"{a.layout!r} is not an invoice layout; see `python -m data.synth --list`")
            doc_type, layout = found[0], a.layout
        why = "given"
    else:
        held = heldout_invoice_layouts(a.base)
        if held:
            (doc_type, layout), why = held[0], "held out of the base's training (provenance.json)"
        else:
            (doc_type, layout), why = worst_layout_for(a.base, a.work, a.seed), "the base's worst invoice layout"
    print(f"layout {doc_type}/{layout}: {why}")

    t0 = time.time()
    corpus = a.work / "corpus"
    if not corpus.is_dir():
        synth(doc_type, layout, a.n, a.seed, a.degrade, corpus)
    result: dict[str, Any] = {
        "doc_type": doc_type, "layout": layout, "why": why, "pages": a.n, "seed": a.seed, "degrade": a.degrade,
        "steps": a.steps, "batch_size": a.batch_size, "lr": a.lr, "eval_ocr": a.eval_ocr,
        "seconds": {"synth": round(time.time() - t0, 1)}, "variants": {}}
    for variant in [v.strip() for v in a.variants.split(",") if v.strip()]:
        if variant not in ("lines", "ocr"):
            p.error(f"unknown variant {variant!r}; use lines and/or ocr")
        result["variants"][variant] = run_variant(a, variant, doc_type, layout, corpus)
        result["seconds"][variant] = result["variants"][variant].pop("seconds")
    first = next(iter(result["variants"].values()))
    result.update({k: first[k] for k in ("split", "step_function")})
    print()
    print(summary_table(result))
    gains = []
    for variant, v in result["variants"].items():
        scored = v.get("real_ocr", v["lines"])
        gains.append(Target(f"{variant}: new - base held-out field F1 on {doc_type}/{layout}",
                            scored["new_f1"] - scored["base_f1"], 0.0, strict=True, source="issue 5: improves"))
    result.update(judge(gains))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"results written to {a.out}")
    if tmp is not None:
        tmp.cleanup()
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
