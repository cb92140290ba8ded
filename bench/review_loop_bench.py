"""The review loop end to end: a clerk's corrections, saved through the UI's own code, retrain a better model.

    python -m bench.review_loop_bench --n 36 --heldout 16 --steps 80 --lr 1e-4 \
        --out bench/results/review_loop.json

The systematic error: on railway e-ticket invoices (doc type e_invoice, layout einv_railway,
data/synth/railway.py) the bundled model never reads five journey fields its schema has (from_station,
to_station, train_number, departure_date, passenger_name: F1 0 through real OCR), while the generator's
ground truth marks them. The bench

1. generates `--n` railway pages (`--degrade`, seed `--corpus-seed`) and `--heldout` more of another seed;
2. reads each training page as the UI does (reading/route.py `analyse_bytes` -> `Analysis.parts()`, the
   document the UI shows and edits), types the generator's value into every field that is wrong or missing
   and clears every field read that the page does not hold, through the UI's own table code
   (app/ui/fields.py `fields_frame` -> edited value column -> `apply_edits`), and saves the page as "Save
   checked pages" does (app/ui/corrections.py `save_correction` on `route.page_image`, which places
   each value on the page's OCR lines): the corpus a clerk would write;
3. retrains: `python -m training retrain --corpus <that folder> --base <base> --out-root <work>/models`
   (the product's defaults: replay 0.5, the promotion rule of training/retrain.py);
4. reads the held-out railway pages through the same route with the base and the new model, and scores
   each field against the generator's truth (training/evaluate.py comparison forms);
5. unless `--no-control`, also retrains on the same pages saved as the model read them (no
   correction): the retrain's replay pages include railway pages whose ground truth marks the journey,
   so this says how much of the gain the corrections made and how much replay alone would have.

Targets (exit 1 when one is missed): journey-field F1 on the held-out railway pages above the base's; on
the retrain's own base held-out set (report.json `base_heldout`) no doc type loses more than 0.01 F1;
the version was promoted (`latest` moved) and its report.json / report.md are in its folder.
The retrained version stays under --work (runs/, not tracked); its path is in the JSON.

Run 2026-12-07 (2 shared cores; --n 36 --heldout 16 --steps 80 --lr 1e-4, replay 0.5 of 32 pages per type,
seed 0): the clerk typed 183 values (the five journey fields on every page but one to_station, 4 others), all
180 journey values placed `exact` on the OCR lines; held-out railway journey F1 0.000 -> 0.931 (control, the
same retrain on the uncorrected pages: 0.025), all fields 0.788 -> 0.977. With the gate's base held-out set at
8 pages per type `latest` did not move: one ticket's passenger_name lost moved train_ticket by 0.0104, past the
0.01 tolerance (every setting tried lost one field of ~100 somewhere: review_loop_s40.json). At 24 pages per
type (training/retrain.py BASE_HELDOUT_PAGES, bench/results/review_loop.json, run with --no-control) the same
retrain is promoted: every base type within 0.01 (train_ticket -0.005, e_invoice -0.001, generic_form +0.002).
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

DOC_TYPE, LAYOUT = "e_invoice", "einv_railway"
JOURNEY = ("from_station", "to_station", "train_number", "departure_date", "passenger_name")
TOLERANCE = 0.01          # training/retrain.py PROMOTION_TOLERANCE: what a base type may lose


def page_bytes(seed: int, degrade: str) -> tuple[bytes, dict[str, Any]]:
    """One generated railway page as an upload's bytes (JPEG, as a scan arrives) and its ground truth."""
    from data.synth.generator import generate
    image, gt = generate(DOC_TYPE, seed, LAYOUT, degrade, image_name=f"railway_{seed}.jpg")
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=92)
    return buf.getvalue(), gt


def pages(n: int, base_seed: int, degrade: str) -> list[tuple[str, bytes, dict[str, Any]]]:
    from data.synth.generator import page_seed
    out = []
    for i in range(n):
        seed = page_seed(base_seed, i)
        data, gt = page_bytes(seed, degrade)
        out.append((f"railway_{base_seed}_{i:03d}.jpg", data, gt))
    return out


def read_upload(name: str, data: bytes, gt: dict[str, Any], model_dir: str, doc_type: str | None = None):
    """The document the UI shows for an upload of one page (`analyse_upload` -> `document_views`): real
    OCR of the bytes (`gt` is not looked at; a reader that takes the generated lines instead does)."""
    from reading import route
    analysis = route.analyse_bytes(data, name, model_dir, doc_type)
    parts = analysis.parts()
    if len(parts) != 1:
        raise SystemExit(f"{name}: read as {len(parts)} documents, expected one")
    return parts[0]


def field_types() -> dict[str, str]:
    from data.schemas import load_schema
    return {f.key: f.type for f in load_schema(DOC_TYPE).fields}


def compare_form(types: dict[str, str], key: str, value: str | None) -> str:
    from training.evaluate import compare_value
    return compare_value(types.get(key), str(value or "")) if value else ""


def clerk_corrects(doc, gt: dict[str, Any], model_dir: str) -> tuple[Any, list[str]]:
    """What a clerk does in the fields table of the document's page: the printed text of every field the
    page holds typed over a wrong or missing value, and every value the page does not hold cleared,
    then `apply_edits` as show_fields_tab calls it. Returns (corrected document, changed keys)."""
    from app.ui.fields import COL_KEY, COL_VALUE, apply_edits, fields_frame
    types = field_types()
    truth = {k: f for k, f in (gt.get("fields") or {}).items()}
    page = doc.pages[0]
    frame = fields_frame(doc, page.index)
    edited = frame.copy()
    for i, row in frame.iterrows():
        key = str(row[COL_KEY])
        got = doc.fields.get(key)
        want = truth.get(key)
        if want is None:
            if got is not None:
                edited.at[i, COL_VALUE] = ""          # read where the page holds nothing: cleared
            continue
        if got is None or compare_form(types, key, got.value) != compare_form(types, key, want["value"]):
            edited.at[i, COL_VALUE] = str(want.get("text") or want["value"])    # typed as printed
    return apply_edits(doc, edited, model_dir, page.index)


Reader = Callable[..., Any]     # (name, bytes, ground truth, model dir, doc type or None) -> the UI's Document


def build_corpus(train: list[tuple[str, bytes, dict]], base: str, corpus: Path, control: Path | None,
                 reader: Reader = read_upload) -> dict[str, Any]:
    """Read, correct and save every training page (`clerk_corrects`, `save_correction`); with `control`
    also save each page uncorrected there. Returns what the clerk did and how the saved values were placed."""
    from app.ui.corrections import save_correction
    from reading import route
    for folder in (corpus, control):
        if folder is not None and folder.exists():
            shutil.rmtree(folder)
    edits: Counter[str] = Counter()
    located: Counter[str] = Counter()
    retyped = 0
    t0 = time.time()
    for name, data, gt in train:
        doc = reader(name, data, gt, base)
        if doc.doc_type != DOC_TYPE:     # the clerk picks the type in the sidebar and the page is read again
            retyped += 1
            doc = reader(name, data, gt, base, DOC_TYPE)
        page = doc.pages[0]
        image = route.page_image(data, name, page.index, page.rotation)
        if control is not None:
            save_correction(doc, 0, image, control, base)
        fixed, changed = clerk_corrects(doc, gt, base)
        edits.update(changed)
        save_correction(fixed, 0, image, corpus, base)
    for raw in (corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(raw)
        for key in JOURNEY:
            f = (rec.get("fields") or {}).get(key)
            located[f"{key}:{f.get('located') if f else 'missing'}"] += 1
    return {"pages": len(train), "retyped": retyped, "edits_by_field": dict(sorted(edits.items())),
            "edits": sum(edits.values()), "journey_located": dict(sorted(located.items())),
            "seconds": round(time.time() - t0, 1)}


def retrain(corpus: Path, base: str, root: Path, name: str, a: argparse.Namespace) -> dict[str, Any]:
    """`python -m training retrain` on the corpus, as the UI's command runs it; its version and report."""
    from bench.retrain_run import run_retrain
    from training.model_registry import ModelRegistry
    rc, seconds, version, rep = run_retrain(["--corpus", str(corpus), "--base", base, "--steps", str(a.steps),
                                             "--lr", str(a.lr), "--seed", str(a.seed),
                                             "--replay-pages", str(a.replay_pages)], root, name)
    kept = rep["base_heldout"]
    latest = ModelRegistry(root).latest(name)
    return {"exit": rc, "version": str(version), "promoted": bool(rep["promoted"]) and latest == version,
            "report_in_model_dir": (version / "report.json").is_file() and (version / "report.md").is_file(),
            "refused_because": rep["promotion_rule"]["refused_because"], "split": rep["split"],
            "corpus_heldout_f1": {"base": rep["base_f1"], "new": rep["new_f1"]},
            "base_heldout": {dt: {"base": b, "new": kept["new_f1_by_type"].get(dt, 0.0)}
                             for dt, b in sorted(kept["base_f1_by_type"].items())},
            "seconds": seconds}


def f1(c: Counter) -> float:
    return 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]) if c["tp"] else 0.0


def score(model_dir: str, heldout: list[tuple[str, bytes, dict]], reader: Reader = read_upload) -> dict[str, Any]:
    """Per-field F1 of a model on the held-out railway pages, read as the UI reads an upload (real OCR)."""
    types = field_types()
    counts: dict[str, Counter] = {}
    typed, t0 = 0, time.time()
    for name, data, gt in heldout:
        doc = reader(name, data, gt, model_dir)
        typed += doc.doc_type == DOC_TYPE
        gold = {k: compare_form(types, k, f["value"]) for k, f in (gt.get("fields") or {}).items()}
        pred = {k: compare_form(types, k, f.value) for k, f in doc.fields.items()}
        for key in set(gold) | set(pred):
            g, p = gold.get(key, ""), pred.get(key, "")
            c = counts.setdefault(key, Counter())
            if g and p and g == p:
                c["tp"] += 1
            else:
                c["fp"] += bool(p)
                c["fn"] += bool(g)
    journey = sum((counts.get(k, Counter()) for k in JOURNEY), Counter())
    other = sum((c for k, c in counts.items() if k not in JOURNEY), Counter())
    return {"pages": len(heldout), "typed_e_invoice": typed, "journey_f1": round(f1(journey), 4),
            "other_fields_f1": round(f1(other), 4), "all_fields_f1": round(f1(journey + other), 4),
            "field_f1": {k: round(f1(c), 4) for k, c in sorted(counts.items())},
            "seconds": round(time.time() - t0, 1)}


def judge(result: dict[str, Any]) -> dict[str, Any]:
    """The issue's bar (issue 40, item 5) as targets (bench/targets.py): the held-out railway journey F1 up,
    no base type down more than TOLERANCE on the retrain's base held-out set, promoted with its report."""
    from bench.targets import Target
    from bench.targets import judge as verdict
    run, held, bar = result["retrain"], result["heldout"], "issue 40 item 5"
    targets = [Target("held-out railway journey F1, new - base", held["new"]["journey_f1"] - held["base"]["journey_f1"],
                      0.0, strict=True, source=bar)]
    targets += [Target(f"base held-out {dt} F1, new - base", s["new"] - s["base"], -TOLERANCE, source=bar)
                for dt, s in run["base_heldout"].items()]
    targets += [Target("promoted (latest moved)", float(run["promoted"]), 1.0, source=bar),
                Target("report.json and report.md in the version folder", float(run["report_in_model_dir"]), 1.0,
                       source=bar)]
    return verdict(targets)


def table(result: dict[str, Any]) -> str:
    """Markdown: held-out railway fields base -> new (-> control), then the base held-out set per type."""
    held = result["heldout"]
    models = [m for m in ("base", "new", "control") if m in held]
    keys = [*JOURNEY, *sorted(k for k in held["base"]["field_f1"] if k not in JOURNEY)]
    rows = ["| held-out railway field | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for label, get in ([(k, lambda m, k=k: held[m]["field_f1"].get(k, 0.0)) for k in keys]
                       + [("**journey (5 fields)**", lambda m: held[m]["journey_f1"]),
                          ("**other fields**", lambda m: held[m]["other_fields_f1"]),
                          ("**all fields**", lambda m: held[m]["all_fields_f1"])]):
        rows.append(f"| {label} | " + " | ".join(f"{get(m):.3f}" for m in models) + " |")
    rows += ["", "| base held-out doc type | base | new | change |", "|---|---:|---:|---:|"]
    for dt, s in result["retrain"]["base_heldout"].items():
        rows.append(f"| {dt} | {s['base']:.3f} | {s['new']:.3f} | {s['new'] - s['base']:+.3f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.review_loop_bench", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--base", default="models/default", help="the bundled model the clerk reads with (read only)")
    p.add_argument("--n", type=int, default=36, help="railway pages the clerk corrects (at least 24: the retrain's "
                                                     "minimum to hold out 8)")
    p.add_argument("--heldout", type=int, default=16, help="held-out railway pages (another seed) scored after")
    p.add_argument("--corpus-seed", type=int, default=4040)
    p.add_argument("--heldout-seed", type=int, default=4141)
    p.add_argument("--degrade", default="light", choices=["none", "light", "photo", "heavy", "mix"])
    p.add_argument("--steps", type=int, default=80, help="fine-tune steps of the retrain")
    p.add_argument("--lr", type=float, default=1e-4,
                   help="fine-tune learning rate (the retrain's default 3e-4 lost a field of another base type at "
                        "60 and at 120 steps: see the module's notes)")
    p.add_argument("--replay-pages", type=int, default=32,
                   help="replay pages per base type (the retrain's default; 64 did not keep the train ticket's "
                        "passenger name either: see the module's notes)")
    p.add_argument("--seed", type=int, default=0, help="retrain seed")
    p.add_argument("--no-control", dest="control", action="store_false",
                   help="skip the control retrain on the uncorrected pages")
    p.add_argument("--work", type=Path, default=Path("runs/review_loop"), help="corpus and registry go here")
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    a = p.parse_args(argv)
    if a.n < 24:
        p.error("--n must be at least 24: the retrain holds out 8 pages from 24 on and refuses fewer")
    started = time.time()
    a.work.mkdir(parents=True, exist_ok=True)
    root = a.work / "models"
    if root.exists():
        shutil.rmtree(root)          # a fresh registry: the version and `latest` are this run's
    train = pages(a.n, a.corpus_seed, a.degrade)
    heldout = pages(a.heldout, a.heldout_seed, a.degrade)
    corpus, control = a.work / "corpus", (a.work / "corpus_uncorrected" if a.control else None)
    print(f"reading and correcting {a.n} railway pages through the UI's code ...", flush=True)
    clerk = build_corpus(train, a.base, corpus, control)
    print(json.dumps(clerk, ensure_ascii=False), flush=True)
    result: dict[str, Any] = {"base": a.base, "doc_type": DOC_TYPE, "layout": LAYOUT, "journey_fields": list(JOURNEY),
                              "n": a.n, "heldout_pages": a.heldout, "degrade": a.degrade,
                              "seeds": {"corpus": a.corpus_seed, "heldout": a.heldout_seed, "retrain": a.seed},
                              "steps": a.steps, "lr": a.lr, "replay_pages": a.replay_pages, "clerk": clerk,
                              "corpus": str(corpus)}
    result["retrain"] = retrain(corpus, a.base, root, "railway", a)
    held = {"base": score(a.base, heldout), "new": score(result["retrain"]["version"], heldout)}
    if control is not None:
        result["control_retrain"] = retrain(control, a.base, root, "railway-uncorrected", a)
        held["control"] = score(result["control_retrain"]["version"], heldout)
    result["heldout"] = held
    result["seconds"] = round(time.time() - started, 1)
    print()
    print(table(result))
    result.update(judge(result))
    print(f"retrained version: {result['retrain']['version']}")
    if a.out:
        from data.atomic import write_text_atomic
        a.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(a.out, json.dumps(result, ensure_ascii=False, indent=1))
        print(f"results written to {a.out}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
