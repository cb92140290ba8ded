"""Does a retrain on one new doc type keep what the base knew? With and without replay (rehearsal).

    python -m bench.retrain_replay_bench --steps 60,120 --replay 0,0.5 --out bench/results/retrain_replay.json

Generates a corpus of one doc type the base never saw (default: 30 train tickets, fixed seed, light
degradation), runs `python -m training retrain` on it once per (steps, replay share) into a registry
under --work, and prints, per run, F1 on the base's own held-out set per doc type (the promotion
gate's pages: generated, held-out layouts, fixed seed) base -> new, the corpus held-out F1 base -> new,
whether `latest` moved, and the run's wall time. `--replay 0` is the fine-tune on the corpus alone
(the forgetting the gate refuses); anything above 0 mixes that share of every batch from generated
pages of the base's types on the layouts it trained on (training/retrain.py `ReplayStream`).
Never touches the base model directory.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def synth(doc_type: str, n: int, seed: int, degrade: str, out: Path) -> None:
    """The corpus, with the project's generator CLI (ground truth in our format)."""
    subprocess.run([sys.executable, "-m", "data.synth", "--type", doc_type, "--n", str(n), "--seed", str(seed),
                    "--degrade", degrade, "--out", str(out)], check=True)


def run(a: argparse.Namespace, corpus: Path, steps: int, replay: float) -> dict[str, Any]:
    """One retrain; its scores from the exported report (exit 1 = exported but not promoted is fine)."""
    from bench.retrain_run import run_retrain
    root, name = a.work / "models", f"{a.type.replace('_', '')}-s{steps}-r{int(round(replay * 100))}"
    rc, seconds, version, rep = run_retrain(["--corpus", str(corpus), "--base", str(a.base), "--steps", str(steps),
                                             "--batch-size", str(a.batch_size), "--lr", str(a.lr),
                                             "--seed", str(a.seed), "--replay", str(replay)], root, name)
    kept = rep["base_heldout"]
    return {"steps": steps, "replay": replay, "version": version.name, "promoted": rep["promoted"],
            "refused_because": rep["promotion_rule"]["refused_because"],
            "corpus": {"base_f1": rep["base_f1"], "new_f1": rep["new_f1"], "split": rep["split"]},
            "base_heldout": {dt: {"base": b, "new": kept["new_f1_by_type"].get(dt, 0.0)}
                             for dt, b in sorted(kept["base_f1_by_type"].items())},
            "type_accuracy": kept.get("type_accuracy"), "replay_set": rep.get("replay"),
            "batch_rows": rep["finetune"].get("batch_rows"), "seconds": seconds,
            "seconds_in_run": rep.get("seconds")}


def table(runs: list[dict[str, Any]]) -> str:
    """Markdown: one row per run; base held-out F1 per type as base -> new."""
    types = sorted({dt for r in runs for dt in r["base_heldout"]})
    head = ["steps", "replay", *types, "corpus held-out F1", "promoted", "wall s"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        cells = [str(r["steps"]), f"{r['replay']:g}"]
        for dt in types:
            s = r["base_heldout"].get(dt)
            cells.append(f"{s['base']:.3f} -> {s['new']:.3f}" if s else "-")
        c = r["corpus"]
        cells += [f"{c['base_f1']:.3f} -> {c['new_f1']:.3f}", "yes" if r["promoted"] else "no",
                  f"{r['seconds']:.0f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.retrain_replay_bench", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--base", type=Path, default=Path("models/default"), help="base model directory (read only)")
    p.add_argument("--type", default="train_ticket", help="the new doc type the corpus is made of")
    p.add_argument("--n", type=int, default=30, help="pages in the generated corpus")
    p.add_argument("--corpus-seed", type=int, default=5, help="generator seed of the corpus")
    p.add_argument("--degrade", default="light", choices=["none", "light", "photo", "heavy", "mix"])
    p.add_argument("--steps", default="60", help="comma list of fine-tune step counts")
    p.add_argument("--replay", default="0,0.5", help="comma list of replay shares (0 = the corpus alone)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0, help="retrain seed")
    p.add_argument("--work", type=Path, default=Path("runs/retrain_replay"), help="corpus and registry go here")
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    a = p.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    corpus = a.work / f"corpus_{a.type}_{a.n}_{a.corpus_seed}"
    if not (corpus / "manifest.jsonl").is_file():
        synth(a.type, a.n, a.corpus_seed, a.degrade, corpus)
    runs = []
    for steps in [int(x) for x in a.steps.split(",") if x.strip()]:
        for replay in [float(x) for x in a.replay.split(",") if x.strip()]:
            runs.append(run(a, corpus, steps, replay))
            print(table(runs[-1:]), flush=True)
    result = {"base": str(a.base), "corpus": {"type": a.type, "pages": a.n, "seed": a.corpus_seed,
                                              "degrade": a.degrade},
              "batch_size": a.batch_size, "lr": a.lr, "seed": a.seed, "runs": runs}
    print()
    print(table(runs))
    if a.out:
        from data.atomic import write_text_atomic
        a.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(a.out, json.dumps(result, ensure_ascii=False, indent=1))
        print(f"results written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
