"""Which decoding rule earns its place: each rule of models/extraction switched off in turn.

    python -m bench.decode_ablation --list                 # the rules, in the order they run
    python -m bench.decode_ablation                        # the ablation table (field F1, pair F1)
    python -m bench.decode_ablation --freeze runs/decode_dev/frozen.jsonl   # every prediction as JSON
    python -m bench.decode_ablation --check runs/decode_dev/frozen.jsonl    # byte-identical to it?

The development set: N generated pages per document type and level (none, light, photo) of the layouts
the bundled model never saw in training (its provenance.json, as bench/extract_levels_bench.py), plus
the real pages of ../shared/samples. Every page is read once by the OCR engine and the reading cached
in DIR/ocr.jsonl whatever the OCR settings are later: a rerun scores the decoding alone, so two runs
compare rule sets on the very same readings. Field F1 and pair F1 are training/evaluate.py's scores.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from data.corpus import corpus_from_synth_dir, read_corpus, write_corpus
from data.document import Document, Page

LEVELS = ("none", "light", "photo")
SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"


def heldout_layouts(model_dir: Path) -> dict[str, list[str]]:
    from bench.extract_levels_bench import heldout_layouts as held
    return held(model_dir)


def build_records(out: Path, model_dir: Path, seed: int, n: int, levels: tuple[str, ...]) -> list[dict]:
    """The generated pages (made once; the same seed gives the same pages) as corpus records."""
    corpus = out / "corpus.jsonl"
    records = []
    for doc_type, layouts in heldout_layouts(model_dir).items():
        for level in levels:
            d = out / doc_type / level
            if len(list(d.glob("*.json"))) < n:      # page i depends on the seed alone: a larger n adds pages
                subprocess.run([sys.executable, "-m", "data.synth", "--type", doc_type, "--layouts",
                                ",".join(layouts), "--n", str(n), "--seed", str(seed), "--degrade", level,
                                "--out", str(d)], check=True, capture_output=True)
            recs = sorted(corpus_from_synth_dir(d), key=lambda r: str(r["id"]))[:n]
            for r in recs:
                r["id"] = f"{r['id']}_{level}"
                r["degrade"] = level
            records += recs
    write_corpus(records, corpus)
    return read_corpus(corpus)


def sample_images() -> list[Path]:
    """The real pages of ../shared/samples (no ground truth used: they take part in the identity check)."""
    d = SAMPLES / "img"
    return sorted(p for p in d.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")) if d.is_dir() else []


def read_pages(items: list[tuple[str, str]], cache: Path) -> dict[str, list[Page]]:
    """id -> the pages of each (id, image path), read once through the reading route and cached in
    `cache` (reading/cache.py) under any OCR settings (`key=None`): a rerun scores the decoding alone.
    predict_all extracts from these pages with each rule set."""
    from reading.cache import read_pages_cached
    return read_pages_cached(items, cache, key=None, desc="OCR (reading route)")


def dev_set(out: Path, model_dir: Path, seed: int, n: int, levels: tuple[str, ...]
            ) -> tuple[list[dict], dict[str, list[Page]]]:
    out.mkdir(parents=True, exist_ok=True)
    records = build_records(out, model_dir, seed, n, levels)
    items = [(str(r["id"]), str(r["image"])) for r in records]
    items += [(f"sample/{p.name}", str(p)) for p in sample_images()]
    return records, read_pages(items, out / "ocr.jsonl")


def predict_all(extractor: Any, records: list[dict], pages: dict[str, list[Page]],
                off: frozenset[str] = frozenset()) -> dict[str, Document]:
    """id -> the extracted Document (one page at a time, as reading/route.py calls the extractor)."""
    out = {}
    ids = [str(r["id"]) for r in records] + sorted(k for k in pages if k.startswith("sample/"))
    for rid in ids:
        for pg in pages.get(rid, []):
            key = f"{rid}#{pg.index}"
            page = Page.__new__(Page)
            page.__dict__.update(pg.__dict__)
            page.lines = list(pg.lines)
            out[key] = extractor.extract(Document(source=rid, pages=[page]), **({"off": off} if off else {}))
    return out


def score(records: list[dict], docs: dict[str, Document]) -> Any:
    """training/evaluate.py's report over the generated pages (field F1; generic forms: pair F1)."""
    from data.schemas import list_schemas, load_schema
    from training.evaluate import PageScore, Report, gold_of, pred_of, score_fields, score_pairs
    report = Report()
    for rec in records:
        doc = docs.get(f"{rec['id']}#0")
        if doc is None:
            continue
        dt = str(rec.get("doc_type"))
        schema = load_schema(dt) if dt in list_schemas() else None
        gf, gi, gp = gold_of(rec, schema)
        pf, pi, pp = pred_of(doc, schema)
        report.add(PageScore(dt, score_fields(gf, pf, gi, pi), score_pairs(gp, pp) if dt == "generic_form" else None),
                   doc.doc_type, rec.get("degrade"))
    return report


def real_scores(extractor: Any, pages: dict[str, list[Page]], off: frozenset[str] = frozenset()) -> dict[str, float]:
    """The real samples with ground truth, as training/evaluate.py's evaluate_samples scores them (the mock
    VAT invoice's fields right, with and without its type given; the XFUND form's pair F1, type given), and
    the schema fields found on the OmniDoc pages (none expected)."""
    from data.schemas import load_schema
    from training.evaluate import SAMPLE_FIELD_KEYS, compare_value, score_pairs
    out: dict[str, float] = {}
    kw: dict[str, Any] = {"off": off} if off else {}
    inv = json.loads((SAMPLES / "gt" / "metagpt_invoice_1.json").read_text(encoding="utf-8"))
    schema = load_schema("vat_invoice")
    for name, dt in (("real/invoice fields right", None), ("real/invoice fields right, type given", "vat_invoice")):
        doc = extractor.extract(Document(pages=list(pages["sample/metagpt_invoice_1.png"])), doc_type=dt, **kw)
        right = 0
        for zh, want in inv["fields"].items():
            key = SAMPLE_FIELD_KEYS.get(zh)
            got = doc.fields.get(key) if key else None
            ftype = schema.field(key).type if key else None
            right += got is not None and compare_value(ftype, got.value) == compare_value(ftype, want)
        out[name] = float(right)
    form = json.loads((SAMPLES / "gt" / "xfund_zh_val_0.json").read_text(encoding="utf-8"))
    doc = extractor.extract(Document(pages=list(pages["sample/xfund_zh_val_0.jpg"])), doc_type="generic_form", **kw)
    out["real/xfund pair F1"] = round(score_pairs([(p["key"], p["value"]) for p in form["kv_pairs"]],
                                                  [(p.key, p.value) for p in doc.pairs]).f1, 4)
    junk = 0
    for key in (k for k in pages if k.startswith("sample/omnidoc_")):
        junk += len(extractor.extract(Document(pages=list(pages[key])), **kw).fields)
    out["real/omnidoc schema fields (lower is better)"] = -float(junk)
    return out


def cells(report: Any) -> dict[str, float]:
    """Every score the bar holds: per level, each type's headline F1 and all fields; overall field and pair F1."""
    out = {f"{lv}/{t}": f for lv, r in report.by_level.items() for t, f in r.headline().items()}
    out.update({f"{lv}/all fields": round(r.overall().f1, 4) for lv, r in report.by_level.items()})
    out["field F1"] = round(report.overall().f1, 4)
    pairs = report.pairs.get("generic_form")
    out["pair F1"] = round(pairs.f1, 4) if pairs else 0.0
    return out


def frozen_lines(docs: dict[str, Document]) -> list[str]:
    """One JSON line per page: the prediction with timings left out (they differ run to run)."""
    lines = []
    for key, doc in docs.items():
        d = doc.to_dict()
        d.pop("timings", None)
        d.pop("pages", None)
        lines.append(json.dumps({"id": key, "doc": d}, ensure_ascii=False, sort_keys=True))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="models/default", help="model directory (default: models/default)")
    p.add_argument("--seed", type=int, default=5150, help="generator seed of the development set (default 5150)")
    p.add_argument("--n", type=int, default=10, help="pages per document type and level (default 10)")
    p.add_argument("--levels", default=",".join(LEVELS), help=f"degradation levels (default {','.join(LEVELS)})")
    p.add_argument("--out", default="runs/decode_dev", help="development set and OCR cache folder")
    p.add_argument("--list", action="store_true", help="print the decoding rules in the order they run and stop")
    p.add_argument("--rules", help="comma-separated rules to ablate (default: every rule that is not core)")
    p.add_argument("--json", default="bench/results/decode_ablation.json", help="where the table goes as JSON")
    p.add_argument("--freeze", help="write every prediction (JSON lines) to this file and stop")
    p.add_argument("--check", help="compare every prediction with this frozen file and stop (exit 1 if any differs)")
    a = p.parse_args(argv)
    if a.list:
        from models.extraction.rules import table
        print(table())
        return 0
    records, pages = dev_set(Path(a.out), Path(a.model), a.seed, a.n, tuple(a.levels.split(",")))
    from models.extractor import Extractor
    ex = Extractor.load(a.model)
    memo_forward(ex)
    base_docs = predict_all(ex, records, pages)
    lines = frozen_lines(base_docs)
    if a.freeze:
        Path(a.freeze).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(lines)} predictions -> {a.freeze}")
        return 0
    if a.check:
        want = Path(a.check).read_text(encoding="utf-8").splitlines()
        diff = [i for i, (x, y) in enumerate(zip(lines, want)) if x != y]
        if len(want) != len(lines) or diff:
            for i in diff[:10]:
                print("DIFF", json.loads(want[i])["id"])
            print(f"{len(diff)} of {len(want)} predictions differ (got {len(lines)})")
            return 1
        print(f"identical: {len(lines)} predictions")
        return 0
    return ablate(ex, records, pages, base_docs, a.rules, Path(a.json))


def memo_forward(ex: Any) -> None:
    """Run the model once per page: every ablation decodes the same tag probabilities again."""
    seen: dict[Any, Any] = {}
    predict = ex.predict_page

    def cached(page: Page, off: frozenset[str] = frozenset()) -> Any:
        key = (page.width, page.height, tuple((ln.text, str(ln.quad)) for ln in page.lines),
               "level_lines" in off)     # the one rule that changes what the encoder reads
        if key not in seen:
            seen[key] = predict(page, off)
        return seen[key]
    ex.predict_page = cached


def ablate(ex: Any, records: list[dict], pages: dict[str, list[Page]], base_docs: dict[str, Document],
           names: str | None, out: Path) -> int:
    """Each rule off in turn: its contribution (all on minus it off) per score, and how many pages
    (generated and real) its absence changes."""
    from models.extraction.rules import RULES
    base = {**cells(score(records, base_docs)), **real_scores(ex, pages)}
    base_lines = frozen_lines(base_docs)
    todo = [r.name for r in RULES if not r.core] if not names else names.split(",")
    rows = []
    real = [k for k in base if k.startswith("real/")]
    gen = [k for k in base if "/" in k and not k.startswith("real/")]
    levels = sorted({str(r.get("degrade")) for r in records})
    n_real = sum(k.startswith("sample/") for k in pages)
    print(f"{len(records)} generated pages (held-out layouts, {', '.join(levels)}) + {n_real} real; "
          f"contribution = score with every rule on minus score with the rule off (> 0: the rule helps)")
    print(f"all rules on: field F1 {base['field F1']:.4f}, pair F1 {base['pair F1']:.4f}, "
          + ", ".join(f"{k[5:]} {base[k]:g}" for k in real))
    print(f"{'rule':<24} {'field F1':>9} {'pair F1':>8} {'invoice':>7} {'xfund':>7} {'omnidoc':>7} "
          f"{'helps most (generated)':>30} {'hurts most (generated)':>30} {'changed':>7}")
    for name in todo:
        docs = predict_all(ex, records, pages, frozenset([name]))
        got = {**cells(score(records, docs)), **real_scores(ex, pages, frozenset([name]))}
        changed = sum(x != y for x, y in zip(base_lines, frozen_lines(docs)))
        delta = {k: round(base[k] - got.get(k, 0.0), 4) for k in base}
        best, worst = max(gen, key=lambda k: delta[k]), min(gen, key=lambda k: delta[k])
        row = {"rule": name, "field_f1": delta["field F1"], "pair_f1": delta["pair F1"],
               "invoice_fields": delta["real/invoice fields right"], "xfund_pair_f1": delta["real/xfund pair F1"],
               "omnidoc_fields": delta["real/omnidoc schema fields (lower is better)"],
               "helps_most": [best, delta[best]], "hurts_most": [worst, delta[worst]], "pages_changed": changed,
               "delta": delta}
        rows.append(row)
        print(f"{name:<24} {row['field_f1']:+9.4f} {row['pair_f1']:+8.4f} {row['invoice_fields']:+7g} "
              f"{row['xfund_pair_f1']:+7.4f} {row['omnidoc_fields']:+7g} "
              f"{best:>21} {delta[best]:+.4f} {worst:>21} {delta[worst]:+.4f} {changed:7d}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"base": base, "pages": len(base_lines), "ablations": rows}, ensure_ascii=False,
                              indent=1), encoding="utf-8")
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
