"""Run the quick benchmarks, each in its own process, and say which met its targets.

    python -m bench                 # every quick bench, a summary table; exit 1 when any missed or failed
    python -m bench --list          # the quick benches with their fixed arguments, and the slow ones
    python -m bench synth ui        # only these (a name with or without its _bench suffix)

A quick bench is a bench's small form: a fixed argument set that runs in seconds to a minute or two on 2 cores and
still judges the bench's targets (each bench exits 1 when the run misses one; bench/targets.py). Their JSON goes to
runs/bench/, never over bench/results/, which holds each bench's full run. The slow benches (OCR of hundreds of
generated pages, retrains, Ray) are listed, not run: give their commands by hand (bench/README.md).

Status per bench: met (exit 0, targets judged), ran (exit 0, but its JSON judges no target), missed (exit 1 and its
JSON holds a missed target), failed (any other ending: an error, not a measurement).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = Path("runs/bench")

# name -> arguments of its quick form (the JSON path is added by run_one)
QUICK: dict[str, list[str]] = {
    "synth_bench": ["--n", "1", "--dir-n", "40", "--out"],
    "weak_label_bench": ["--pages", "1", "--types", "vat_invoice", "e_invoice", "--degrade", "none", "--out"],
    "ocr_bench": ["--clean", "1", "--degraded", "1", "--real", "none", "--engines", "ours_v6,rapidocr", "--out"],
    "ui_bench": ["--repeats", "1", "--json"],
    "extract_bench": ["--pages", "2", "--json"],
    "born_digital_bench": ["--repeat", "1", "--json"],
    "memory_bench": ["--quick", "--json"],
    "robustness_bench": ["--quick", "--json"],
    "serve_bench": ["--clients", "2", "--docs", "2", "--files", "2", "--json"],
}
SLOW: dict[str, str] = {
    "extract_levels_bench": "held-out layouts through real OCR, every type and level (OCR of ~250 pages)",
    "form_pairs_bench": "form pair F1 per layout and level, XFUND and its variants (needs ../shared/samples)",
    "decode_ablation": "each decoding rule off in turn on a development set (--check: same predictions)",
    "seal_bench": "text under red seals, seal-aware reading off and on",
    "batch_bench": "batch throughput, local workers and Ray actors side by side",
    "retrain_layout_bench": "a retrain on a held-out invoice layout improves it (minutes of training)",
    "retrain_replay_bench": "a retrain on a new type keeps the base's types (minutes of training per run)",
    "train_step_bench": "the pipeline engine's cost per training step against a plain step",
    "review_bench": "which fields are flagged for review against which are wrong, per threshold (OCR of ~30 pages)",
    "review_loop_bench": "a clerk's corrections, saved through the UI's code, retrain a better model (OCR + retrains)",
}


def resolve(name: str) -> str:
    """`synth`, `synth_bench` and `bench.synth_bench` all name bench/synth_bench.py."""
    name = name.removeprefix("bench.")
    for candidate in (name, f"{name}_bench"):
        if candidate in QUICK or candidate in SLOW:
            return candidate
    raise SystemExit(f"no bench named {name!r}; `python -m bench --list` lists them")


def _judged(obj: Any) -> list[bool]:
    """Every verdict a bench's JSON holds: `met` (bench/targets.py), a row's `ok` (memory_bench) or its `target`
    "ok" / "missed" (robustness_bench)."""
    found: list[bool] = []
    if isinstance(obj, dict):
        for key in ("met", "ok"):
            if isinstance(obj.get(key), bool):
                found.append(obj[key])
        if obj.get("target") in ("ok", "missed"):
            found.append(obj["target"] == "ok")
        for value in obj.values():
            found += _judged(value)
    elif isinstance(obj, list):
        for value in obj:
            found += _judged(value)
    return found


def status(code: int, result: Path, started: float) -> str:
    """met / ran / missed / failed from the exit status and the JSON the run wrote (an older file is ignored)."""
    verdicts: list[bool] = []
    if result.is_file() and result.stat().st_mtime >= started:
        try:
            verdicts = _judged(json.loads(result.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            verdicts = []
    if code == 0:
        return "met" if verdicts else "ran"
    if code == 1 and verdicts and not all(verdicts):
        return "missed"
    return "failed"


def run_one(name: str, out: Path) -> dict[str, Any]:
    result = out / f"{name}.json"
    cmd = [sys.executable, "-m", f"bench.{name}", *QUICK[name], str(result)]
    print(f"\n$ {' '.join(['python', *cmd[1:]])}", flush=True)
    started = time.time()
    code = subprocess.run(cmd, cwd=ROOT).returncode
    return {"bench": name, "exit": code, "seconds": round(time.time() - started, 1),
            "status": status(code, result, started - 1), "json": str(result)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("names", nargs="*", help="quick benches to run (default: all of them)")
    ap.add_argument("--list", action="store_true", help="list the quick and the slow benches and stop")
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder for the quick runs' JSON (default {OUT})")
    args = ap.parse_args(argv)
    if args.list:
        print("quick (python -m bench runs these):")
        for name, quick in QUICK.items():
            print(f"  {name:22s} python -m bench.{name} {' '.join(quick[:-1])}")
        print("slow (run by hand, see bench/README.md):")
        for name, what in SLOW.items():
            print(f"  {name:22s} {what}")
        return 0
    names = [resolve(n) for n in args.names] or list(QUICK)
    slow = [n for n in names if n not in QUICK]
    if slow:
        raise SystemExit(f"{', '.join(slow)} has no quick form; run it by hand: python -m bench.{slow[0]} --help")
    out = args.out if args.out.is_absolute() else ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_one(name, out) for name in names]
    print(f"\n{'bench':22s} {'status':8s} {'exit':>4s} {'seconds':>8s}  json")
    for r in rows:
        print(f"{r['bench']:22s} {r['status']:8s} {r['exit']:>4d} {r['seconds']:>8.1f}  {os.path.relpath(r['json'])}")
    bad = [r["bench"] for r in rows if r["status"] in ("missed", "failed")]
    print(f"{len(rows) - len(bad)} of {len(rows)} quick benches met their targets or have none"
          + (f"; missed or failed: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
