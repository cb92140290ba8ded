"""`python -m training <command>`: a dispatcher, so each command lives in its own module.

Commands: train (training/trainer.py), evaluate (training/evaluate.py), pair-scorer
(training/pair_scorer.py). Others add theirs by
appending to COMMANDS a (name, help, add_arguments, run) entry.

Library code raises typed errors (training/errors.py) and never exits; `main` is the one place that
turns them into one line on stderr and the exit status of the convention below (EXIT_STATUS_HELP).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from training.errors import EXIT_STATUS_HELP, exit_status_of


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/default.yaml", help="YAML config (see configs/default.yaml)")
    p.add_argument("--out", help="model directory to write (default: the config's `out`, else runs/model)")
    p.add_argument("--work", help="where generated data, OCR cache and checkpoints go (default: OUT_work)")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint in the work dir")
    p.add_argument("--steps", type=int, help="override train.steps")
    p.add_argument("--max-minutes", type=float, help="stop (and save) after this many minutes")
    p.add_argument("--pipeline-stages", type=int,
                   help="pipeline stages the model's blocks are cut into (default: the config's pipeline.stages; "
                        "1 = the same engine with one stage)")
    p.add_argument("--micro-batches", type=int, help="micro-batches per step (must divide train.batch_size)")
    p.add_argument("--schedule", choices=["gpipe", "1f1b", "interleaved", "zbh1"], help="pipeline schedule")
    p.add_argument("--transport", choices=["inprocess", "dist"],
                   help="inprocess: every stage in this process; dist: one process per stage, started with "
                        "`python -m paddle.distributed.launch --nproc_per_node N training/launch_train.py train ...` "
                        "(default: dist when started by the launcher, else inprocess)")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation at the end")
    p.add_argument("--init-from", metavar="DIR",
                   help="start the encoder from a Chinese-BERT-wwm / ERNIE checkpoint directory (PaddleNLP: "
                        "model_state.pdparams, or Hugging Face: model.safetensors / pytorch_model.bin; with "
                        "config.json and vocab.txt), which then sets the model's shape and vocabulary "
                        "(model.init_from in the config); never downloaded")


def _train(a: argparse.Namespace) -> int:
    from data.corpus import read_corpus
    from models.model_dir import write_metrics
    from training.config import load_config
    from training.evaluate import evaluate_corpus
    from training.step import check_pipeline, is_lead_process
    from training.trainer import check_init_from, train
    cfg = load_config(a.config)            # ConfigError (exit 2) names an unknown key and the nearest valid one
    if a.steps:
        cfg.train.steps = a.steps
    for k, v in (("stages", a.pipeline_stages), ("micro_batches", a.micro_batches), ("schedule", a.schedule),
                 ("transport", a.transport)):
        if v is not None:
            setattr(cfg.pipeline, k, v)
    if a.init_from:
        cfg.model.init_from = a.init_from
    check_pipeline(cfg.pipeline.as_dict(), batch_size=cfg.train.batch_size)     # refused before any work
    check_init_from(cfg)
    out = Path(a.out or cfg.out)
    command = "python -m training " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    train(cfg, out, Path(a.work) if a.work else None, a.resume, command, a.max_minutes)
    if not is_lead_process():     # one process per stage: the lead evaluates and reports
        return 0
    if not a.no_eval:
        from models.extractor import Extractor
        work = Path(a.work) if a.work else out.parent / (out.name + "_work")
        report, _ = evaluate_corpus(Extractor.load(out), read_corpus(work / "heldout"), "gt")
        print(report.table())
        write_metrics(out, {**report.as_dict(), "data": "held-out layouts, generator lines", "ocr": "gt"})
    print(f"model written to {out}")
    return 0


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="models/default", help="model directory")
    p.add_argument("--data", help="corpus directory or .jsonl (data/corpus.py format)")
    p.add_argument("--samples", help="instead of a corpus: the shared real samples directory (metagpt "
                                    "invoice field by field, XFUND form pair F1), through real OCR")
    p.add_argument("--ocr", choices=["gt", "real"], default="gt",
                   help="gt: the corpus's own lines; real: PP-OCR on each page image")
    p.add_argument("--limit", type=int, help="evaluate only the first N pages of each doc type")
    p.add_argument("--given-type", action="store_true", help="tell the model the true doc type")
    p.add_argument("--json", help="write the report here (default: MODEL/eval_<data>_<ocr>.json, or "
                                  "runs/eval/default_<data>_<ocr>.json for the bundled models/default, "
                                  "which is tracked in git and must not change by evaluating it)")


EVAL_DIR = Path("runs") / "eval"


def default_report_path(model: str | Path, stem: str) -> Path:
    """Where `evaluate` writes its report when --json is not given: beside the model, except for the
    bundled models/default, whose files are tracked (its curated evals are committed on purpose)."""
    from models.extractor import DEFAULT_MODEL_DIR
    model = Path(model)
    if model.resolve() == DEFAULT_MODEL_DIR.resolve():
        return EVAL_DIR / f"{model.resolve().name}_{stem}.json"
    return model / f"eval_{stem}.json"


def _evaluate(a: argparse.Namespace) -> int:
    import json

    from data.corpus import CorpusError, read_corpus
    from models.extractor import Extractor, ModelDirError
    from training.evaluate import evaluate_corpus, evaluate_samples, samples_table, write_report
    if a.samples:
        res = evaluate_samples(a.model, a.samples)
        print(samples_table(res))
        out = Path(a.json or default_report_path(a.model, "samples"))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"report written to {out}")
        return 0
    if not a.data:
        print("error: give --data CORPUS (or --samples DIR)", file=sys.stderr)
        return 2
    try:
        records = read_corpus(a.data)
        ex = Extractor.load(a.model)
    except (CorpusError, ModelDirError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.limit:
        seen: dict[str, int] = {}
        keep = []
        for r in records:
            dt = str(r.get("doc_type"))
            if seen.get(dt, 0) < a.limit:
                seen[dt] = seen.get(dt, 0) + 1
                keep.append(r)
        records = keep
    cache = Path(a.data) / "ocr_cache.jsonl" if Path(a.data).is_dir() else None
    report, rows = evaluate_corpus(ex, records, a.ocr, cache, a.given_type)
    print(report.table())
    out = Path(a.json or default_report_path(a.model, f"{Path(a.data).name}_{a.ocr}"))
    write_report(report, out, {"data": str(a.data), "ocr": a.ocr, "pages": rows})
    print(f"report written to {out}")
    return 0


def _convert_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                   help="model directories holding the old model_state.pdparams (a pickle)")


def _convert(a: argparse.Namespace) -> int:
    """Convert each DIR's old pickle weights to model_state.safetensors (models/model_dir.py
    `convert_model_dir`: read by the restricted unpickler, so a file that would run code is refused)."""
    from models.model_dir import ModelDirError, convert_model_dir
    failed = 0
    for d in a.dirs:
        try:
            print(convert_model_dir(d))
        except (ModelDirError, OSError) as exc:
            print(f"error: {d}: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


COMMANDS = [
    ("train", "train the extractor from a config", _train_args, _train),
    ("evaluate", "per-field P/R/F1 of a model on a corpus", _eval_args, _evaluate),
    ("import", "import a labelled corpus (ours, PPOCRLabel, XFUND, Label Studio, CSV weak labels)",
     *__import__("training.retrain", fromlist=["x"]).IMPORT_COMMAND),
    ("pretrain", "whole-word-masked MLM adaptation of an encoder on a corpus' text",
     *__import__("training.pretrain", fromlist=["x"]).PRETRAIN_COMMAND),
    ("retrain", "import, adapt, fine-tune, evaluate base vs new, export a new model version",
     *__import__("training.retrain", fromlist=["x"]).RETRAIN_COMMAND),
    ("promote", "move a model name's `latest` to an exported version (the step after retrain --force), "
     "showing its report's figures", *__import__("training.retrain", fromlist=["x"]).PROMOTE_COMMAND),
    ("pair-scorer", "fit a model's learned scorer of form key-value candidates (MODEL/pair_scorer.json)",
     *__import__("training.pair_scorer", fromlist=["x"]).PAIR_SCORER_COMMAND),
    ("convert-weights", "convert model directories' old pickle weights (model_state.pdparams) to safetensors",
     _convert_args, _convert),
]


def main(argv: list[str] | None = None) -> int:
    """Run one command; a typed error becomes one line on stderr and its exit status (EXIT_STATUS_HELP).
    TRAINING_DEBUG=1 shows the traceback instead."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.split("\n")[0],
                                     epilog=EXIT_STATUS_HELP, formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True)
    runners = {}
    for name, help_, add, run in COMMANDS:
        add(sub.add_parser(name, help=help_, description=help_, epilog=EXIT_STATUS_HELP, formatter_class=raw))
        runners[name] = run
    args = parser.parse_args(argv)       # argparse itself exits 2 on a bad option
    try:
        return runners[args.command](args)
    except Exception as exc:
        status = exit_status_of(exc)
        if status is None or os.environ.get("TRAINING_DEBUG"):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print("error: " + " ".join(str(message).split()), file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
