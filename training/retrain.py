"""Retrain on a user's corpus: import -> (WWM adaptation) -> fine-tune -> base vs new -> versioned export.

    python -m training retrain --corpus DIR --base MODEL [--pretrain] [--force] [--out-root models/]
                               [--eval-ocr real] [--ocr-train] [--replay 0.5] [--keep-work]
    python -m training promote models/registry/NAME-v0003
    python -m training import --format ours|ppocrlabel|xfund|labelstudio|csv --src PATH --out DIR

A new document type is data: put its schema YAML in CORPUS/schemas/ (or pass --schema) beside labelled
pages, and the heads grow to its fields (the base's labels first, so what the base knew is kept, then
the new ones). The exported directory carries the schema, so the app lists the new type.

Fine-tuning on the corpus alone forgets what the base knew (60 steps on train tickets took the base's
receipts and generic forms to F1 0), so every batch also rehearses it (`--replay`, half of each batch by
default): generated pages of each doc type the base knew, drawn once into the work dir on the layouts its
training used (never the layouts the promotion check scores on), with a seed apart from that check's.

Stages run in order and each leaves a marker in the work directory (<out-root>/registry/.work/<key>/),
so an interrupted (Ctrl-C) or killed run started again with the same arguments skips finished stages and
the fine-tune resumes from its last checkpoint. The work directory (~180 MB: checkpoints, replay pages)
is removed when the run ends, exported or failed (`--keep-work` keeps it), and a later retrain removes
those of killed runs whose process is gone (`remove_stale_work`). The export reserves a NEW version
(<name>-v0001, -v0002, ...); `latest` moves to it only when (`decide_promotion`) the corpus held out at
least MIN_HELDOUT_PAGES pages, the new model's F1 on them (the corrected kind: the corpus' doc types) is
above the base's, and on the base's own held-out set (generated pages of every doc type the base knew,
layouts its training held out) it loses no more than PROMOTION_TOLERANCE F1 on any type. A run with too
few held-out pages is refused before training (`python -m training retrain` exits 2 with the reason); a
version that is not promoted is still exported for inspection, and the command exits 1 with the reasons.
`--force` trains even then and keeps the version, but never moves `latest`: a second, explicit step does
(`python -m training promote VERSION_DIR`, which prints the report's figures first).

The base's learned form models (pair_scorer.json: the pair scorer and the piece roles) read the weights'
tags and link head, so they are fitted again for the new weights (`refit_form_scorer`, on generated pages
of the base's training form layouts) before anything is scored: a retrained model without them would
decode forms by hand rules alone and lose to its base on forms.

Real OCR is where a layout's headroom is: `--eval-ocr real` also scores base and new through PP-OCR
of the held-out images (and promotes on that), and `--ocr-train` adds the training pages as OCR reads
them, labelled by aligning each page's values (training/ocr_labels.py). Each image is read once into
WORK/ocr_cache.jsonl (or --ocr-cache), shared by those stages and by a resumed run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from data.corpus import CORPUS_FILE, read_corpus, split_by_layout, write_corpus
from data.importers import FORMATS, import_corpus
from data.importers.records import SCHEMA_DIR
from training.config import RETRAIN, DataConfig, TrainConfig
from training.errors import ConfigError, RefusedError, RetrainError
from training.model_registry import ModelRegistry, check_name
from training.noise import NoiseConfig

PROCESS_STARTED = time.time()     # about when this process started: older unclaimed work dirs are not a live run's

STAGES = ("import", "split", "pretrain", "finetune", "evaluate", "export")
# share held out of a corpus: the training config's data.heldout_layouts (configs/default.yaml), one number
HELDOUT = DataConfig().heldout_layouts
# The promotion rule's numbers, in one place (decide_promotion applies them):
MIN_HELDOUT_PAGES = 8        # fewer held-out corpus pages cannot tell a better model from a worse one (one page
                             # once moved `latest` to a model that had lost a third of the invoice fields)
MIN_CORPUS_PAGES = 3 * MIN_HELDOUT_PAGES   # a corpus split by pages holds MIN_HELDOUT_PAGES out from this size on
PROMOTION_TOLERANCE = 0.01   # F1 the new model may lose on one doc type of the base's own held-out set (the
                             # noise of a few pages per type) and still count as "no loss"
BASE_HELDOUT_PAGES = 24      # pages per doc type in the base's own held-out set (generated, fixed seed, scored on
                             # their own lines: seconds). At 8 one field of ~100 moved a type's F1 by 0.0104, more
                             # than PROMOTION_TOLERANCE, so a single field decided every promotion (review_loop
                             # bench); at 24 the tolerance is ~3 fields of ~300: noise stays inside it
BASE_HELDOUT_SEED = 16016
BASE_HELDOUT_SHARE = HELDOUT  # share of a type's layouts held out when the base's provenance does not name them
                             # (the trainer's default, configs/default.yaml data.heldout_layouts)
# Rehearsal (replay) of what the base knew, mixed into every fine-tune batch (`ReplayStream`):
REPLAY_SHARE = 0.5           # share of each batch's windows drawn from replay pages (`--replay`; 0 turns it off).
                             # Without replay, 60 steps on 30 train tickets took generic_form 0.941 -> 0.000 and
                             # receipt 0.992 -> 0.000 on the base's held-out pages (bench/retrain_replay_bench.py)
REPLAY_PAGES_PER_TYPE = 32   # generated pages per doc type the base knew (~0.05 s each), layouts it TRAINED on
REPLAY_SEED = 27027          # + the run's seed: never the gate's BASE_HELDOUT_SEED, and its layouts never the gate's
REPLAY_OCR_PAGES_PER_TYPE = 4    # with --ocr-train: replay pages also read by real PP-OCR (~3 s each), as the
                                 # trainer reads a share of its generated pages


@dataclass
class Promotion:
    """Whether the new model may take `latest`, and every reason it may not (empty when it may)."""
    promote: bool
    reasons: list[str]


FORM_SCORER_PAGES = 200     # generated form pages the retrained model's form scorer and roles are fitted on
                            # (`--form-scorer-pages`; ~1 CPU-second a page: most of a short retrain's time)


def refit_form_scorer(base: Path, new: Path, seed: int, pages: int = FORM_SCORER_PAGES) -> dict:
    """Fit the new weights' pair scorer and piece roles (training/pair_scorer.py) as the base's were, on
    `pages` generated pages of the base's training form layouts, when the base has them and the new model
    reads forms; else nothing (and why)."""
    from models.model_dir import PAIR_SCORER, ExtractorConfig, ModelDirError, read_pair_scorer_record
    from training.pair_scorer import FORM, run, train_layouts
    try:
        raw, unreadable = read_pair_scorer_record(base), ""
    except ModelDirError as exc:           # said after the checks below, as when it was read last
        raw, unreadable = {}, str(exc)
    if raw is None:
        return {"refit": False, "why": f"the base has no {PAIR_SCORER}"}
    if FORM not in ExtractorConfig.load(new).doc_types:
        return {"refit": False, "why": "the new model reads no generic forms"}
    try:
        layouts = train_layouts(base, None)
    except (RefusedError, OSError, ValueError) as exc:
        return {"refit": False, "why": str(exc)}
    if unreadable:
        return {"refit": False, "why": unreadable}
    about = run(new, pages, [], layouts, seed, None, log=lambda *_: None,
                mode=str(raw.get("mode", "rerank")), roles=raw.get("roles") is not None)
    return {"refit": True, "pages": pages, "layouts": layouts, "cv_pair_f1": about.get("cv_pair_f1"),
            "seconds": about.get("seconds")}


def decide_promotion(corpus_base_f1: float, corpus_new_f1: float, heldout_pages: int,
                     base_types_base: dict[str, float], base_types_new: dict[str, float],
                     tolerance: float = PROMOTION_TOLERANCE, min_pages: int = MIN_HELDOUT_PAGES,
                     corpus_types_base: dict[str, float] | None = None,
                     corpus_types_new: dict[str, float] | None = None) -> Promotion:
    """The promotion rule. The new model moves `latest` only when all of these hold:
    - the corpus split held out at least `min_pages` pages (else its score is luck);
    - on those held-out corpus pages (the corrected kind: the doc types the corpus holds) its field F1
      is above the base's: a retrain that only matches the base gains nothing and risks what was not
      measured, so a tie keeps `latest` where it is;
    - on those pages no doc type of the corpus (`corpus_types_*`, F1 per type) loses more than
      `tolerance`, so a mixed corpus cannot trade one corrected kind for another;
    - on the base's own held-out set (`base_types_*`: F1 per doc type the base knew, see
      `base_heldout_records`) it loses no more than `tolerance` F1 on any type.
    Pure: it takes the scores, so it is tested without training anything."""
    reasons = []
    if heldout_pages < min_pages:
        reasons.append(f"only {heldout_pages} held-out page(s) of the corpus, at least {min_pages} are needed: "
                       f"a score on so few pages cannot tell a better model from a worse one")
    if corpus_new_f1 < corpus_base_f1:
        reasons.append(f"held-out corpus F1 fell: base {corpus_base_f1:.3f} -> new {corpus_new_f1:.3f}")
    elif corpus_new_f1 == corpus_base_f1:
        reasons.append(f"held-out corpus F1 is no better: base {corpus_base_f1:.3f} -> new {corpus_new_f1:.3f} "
                       f"(the corrected kind must improve)")
    for dt, before in sorted((corpus_types_base or {}).items()):
        after = (corpus_types_new or {}).get(dt, 0.0)
        if after < before - tolerance:
            reasons.append(f"{dt} on the held-out corpus pages fell: F1 {before:.3f} -> {after:.3f} "
                           f"(more than the {tolerance} tolerated)")
    for dt, before in sorted(base_types_base.items()):
        after = base_types_new.get(dt, 0.0)
        if after < before - tolerance:
            reasons.append(f"{dt} on the base's own held-out pages fell: F1 {before:.3f} -> {after:.3f} "
                           f"(more than the {tolerance} tolerated)")
    return Promotion(not reasons, reasons)


# --- schemas and labels ---------------------------------------------------------------------------

def corpus_schemas(corpus_dir: Path) -> dict[str, Path]:
    """{doc type: schema file} for the schema YAMLs a corpus brings (CORPUS/schemas/*.yaml)."""
    from data.schemas import load_schema_file
    found = {}
    for path in sorted((corpus_dir / SCHEMA_DIR).glob("*.yaml")):
        found[load_schema_file(path).name] = path
    return found


def label_map(records: list[dict], schema_files: dict[str, Path], base_tags: list[str],
              base_types: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(tag labels, doc types, notes): the base's, then the corpus' new ones appended.

    Field keys come from each doc type's schema (the corpus' own file first, then the bundled one);
    a type with neither gets the keys its pages use, with a note saying so.
    """
    from data.labels import FORM_KEYS, ITEM_PREFIX
    from data.schemas import list_schemas, load_schema, load_schema_file
    types = list(base_types)
    keys = [t[2:] for t in base_tags if t.startswith("B-")]
    notes: list[str] = []
    for dt in sorted({str(r.get("doc_type")) for r in records}):
        if dt not in types:
            types.append(dt)
        if dt in schema_files or dt in list_schemas():
            schema = load_schema_file(schema_files[dt]) if dt in schema_files else load_schema(dt)
            keys += [f.key for f in schema.fields] + [ITEM_PREFIX + f.key for f in schema.item_fields]
        else:
            raise RetrainError(f"doc type {dt!r} has no schema: add CORPUS/schemas/{dt}.yaml (or --schema FILE) "
                             f"listing its fields, or import with --doc-type naming a known type")
    from models.heads import tag_labels
    return tag_labels(list(dict.fromkeys(keys + list(FORM_KEYS)))), types, notes


def grow_from_base(base_dir: Path, tags: list[str], types: list[str]):
    """A model with the base's encoder and a head for `tags`/`types`; rows the base had are copied
    (training/warm_start.py, by tag and doc-type name; the vocabulary is the base's own)."""
    from models.model_dir import ExtractorConfig
    from models.tokenizer import Tokenizer
    from training.warm_start import warm_start
    base_cfg = ExtractorConfig.load(base_dir)
    cfg = ExtractorConfig(encoder=dict(base_cfg.encoder), tag_labels=list(tags), doc_types=list(types),
                          link=base_cfg.link, max_len=base_cfg.max_len)
    model = cfg.build()
    warm_start(model, list(tags), list(types), Tokenizer.from_dir(base_dir).vocab, base_dir)
    return model, cfg


# --- stages ---------------------------------------------------------------------------------------

class Stages:
    """Stage markers: `done(name)`, `finish(name, result)`; results are kept for the report."""

    def __init__(self, work: Path):
        self.dir = work / "stages"
        self.dir.mkdir(parents=True, exist_ok=True)

    def done(self, name: str) -> dict | None:
        p = self.dir / f"{name}.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None

    def finish(self, name: str, result: dict) -> dict:
        tmp = self.dir / f"{name}.json.tmp"
        tmp.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(self.dir / f"{name}.json")
        return result


WORK_DIR = ".work"           # <out-root>/registry/.work/<name>-<key>/: one run's stages, checkpoints, replay pages
OWNER_FILE = "owner.json"    # in a work dir: the process running it, so a later run tells a live one from a dead one
# the stages a run reports as it enters them (`progress`): the UI's progress bar (app/ui/retrain_panel.py) reads them
PROGRESS_STAGES = ("import", "split", "replay", "finetune", "form_scorer", "evaluate", "base_heldout", "export")


def progress(stage: str) -> None:
    """One line a watcher can parse (`progress: finetune (4 of 8)`), flushed at once (stdout is a pipe)."""
    print(f"progress: {stage} ({PROGRESS_STAGES.index(stage) + 1} of {len(PROGRESS_STAGES)})", flush=True)


def claim_work(work: Path) -> None:
    """Make `work` and record this process in it (OWNER_FILE), so `remove_stale_work` never takes it."""
    from data.atomic import write_text_atomic
    work.mkdir(parents=True, exist_ok=True)
    write_text_atomic(work / OWNER_FILE, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                     "started": time.time()}))


def _owner_alive(work: Path) -> bool:
    """Whether the process that claimed `work` may still be running it. Another machine's process (a
    shared filesystem) cannot be checked, so it counts as alive; a folder with no record (made before
    runs claimed theirs) counts as alive while it is newer than this process."""
    try:
        owner = json.loads((work / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return work.stat().st_mtime >= PROCESS_STARTED
    if owner.get("host") != socket.gethostname():
        return True
    pid = int(owner.get("pid", 0))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's live process
        return True
    return pid != os.getpid() or float(owner.get("started", 0)) >= PROCESS_STARTED


def remove_stale_work(root: Path, keep: Path) -> list[Path]:
    """Remove and return the work directories under `root` left by runs that died without cleaning up
    (killed, out of memory, the machine went down): their process is gone. `keep`, this run's own (same
    arguments), is resumed instead, and a live run's is never touched, so two retrains can run at once."""
    removed = []
    if root.is_dir():
        for work in sorted(root.iterdir()):
            if work.is_dir() and work.resolve() != keep.resolve() and not _owner_alive(work):
                shutil.rmtree(work, ignore_errors=True)
                removed.append(work)
    return removed


def remove_work(work: Path) -> None:
    """Remove a run's work directory (and the `.work` folder once it holds no other run's)."""
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:                  # another run's work is there, or it is gone already
        pass


def run_key(args: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(args, sort_keys=True).encode()).hexdigest()[:10]


def stage_import(corpus: Path, fmt: str | None, schemas: list[str], dest: Path, ocr) -> dict:
    """Bring the corpus into the work dir in our format (checked), whatever it came as."""
    if fmt is None:
        if (corpus / CORPUS_FILE).is_file() or corpus.suffix == ".jsonl":
            fmt = "ours"
        elif corpus.is_dir() and any(corpus.glob("*.json")):
            from data.corpus import corpus_from_synth_dir  # a generator output folder
            corpus_from_synth_dir(corpus, dest / "_synth")
            if (corpus / SCHEMA_DIR).is_dir():
                import shutil
                shutil.copytree(corpus / SCHEMA_DIR, dest / "_synth" / SCHEMA_DIR, dirs_exist_ok=True)
            corpus, fmt = dest / "_synth", "ours"
        else:
            raise RetrainError(f"{corpus} holds no {CORPUS_FILE}; pass --format ({'|'.join(FORMATS)}) to import it")
    from tqdm import tqdm
    report = import_corpus(fmt, corpus, dest / "corpus", schemas=schemas,
                           **({"ocr": ocr, "progress": tqdm} if fmt == "csv" else {}))
    print(report.summary())
    if report.records_written == 0:
        raise RetrainError(f"no usable pages in {corpus}; fix the records listed above and run again")
    return {"format": fmt, "written": report.records_written, "bad": len(report.errors)}


def stage_split(corpus_dir: Path, work: Path, seed: int) -> dict:
    """Held-out split: whole layouts where the corpus names several, else a stable share of pages."""
    records = read_corpus(corpus_dir)
    train, test = split_by_layout(records, HELDOUT, seed)
    how = "layouts"
    if not test or not train:
        # imported corpora rarely name layouts: hold out pages, stable under re-runs (hash of the image name);
        # at least MIN_HELDOUT_PAGES where the corpus has three times that, so a small corpus can still be judged
        def bucket(r: dict) -> float:
            return int(hashlib.md5(Path(r["image"]).name.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        ranked = sorted(records, key=bucket)
        n_test = sum(bucket(r) < HELDOUT for r in records)
        if len(records) >= MIN_CORPUS_PAGES:
            n_test = max(n_test, MIN_HELDOUT_PAGES)
        n_test = min(max(n_test, 1), len(records) - 1) if len(records) > 1 else len(records)
        held = {id(r) for r in ranked[:n_test]}
        train = [r for r in records if id(r) not in held]
        test = [r for r in records if id(r) in held]
        how = "pages"
    write_corpus(train, work / "train")
    write_corpus(test, work / "heldout")
    return {"train": len(train), "heldout": len(test), "split_by": how}


def finetune(base_dir: Path, train_recs: list[dict], heldout: list[dict], schema_files: dict[str, Path],
             work: Path, steps: int, batch_size: int, lr: float, pipe: dict, seed: int,
             ocr_recs: list[dict] = (), ocr_repeat: int = 2, replay: list | None = None,
             replay_share: float = 0.0, replay_noise: NoiseConfig | None = None) -> dict:
    """Fine-tune the (grown) base on the corpus through the trainer's step function (pipeline engine
    where installed); checkpoints in work/checkpoint make it resumable.

    `ocr_recs` (training/ocr_labels.py) are the training pages as real OCR read them, labelled by
    alignment; they join the mix `ocr_repeat` times each and get no synthetic noise (OCR's is real).
    `replay` (`replay_pages`: the base's doc types on layouts it trained on) fills `replay_share` of every
    batch (`ReplayStream`), noised as the base's own training noised them (`replay_noise`, its
    provenance's `noise`), so the fine-tune keeps rehearsing what the base knew."""
    import paddle

    from models.checkpoint import CheckpointSlots
    from models.model_dir import ExtractorConfig, write_model_dir
    from models.tokenizer import Tokenizer
    from training.dataset import TrainingSet, collate, gt_lines
    from training.loop import RunState, lr_schedule, resume, run
    from training.noise import CORPUS_NOISE
    from training.step import EngineStep, extractor_batch, extractor_loss
    from training.trainer import plot_losses

    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
    base_cfg = ExtractorConfig.load(base_dir)
    tags, types, notes = label_map(train_recs + heldout, schema_files, base_cfg.tag_labels, base_cfg.doc_types)
    model, cfg = grow_from_base(base_dir, tags, types)
    vocab = Tokenizer.from_dir(base_dir)
    sched = lr_schedule(lr, steps, max(1, steps // 10))
    step_fn = EngineStep(model.blocks(), extractor_loss, sched, pipe)
    how = step_fn.how
    ckpt = CheckpointSlots(work / "checkpoint")      # the newest two; a torn newest falls back to the older
    state = resume(step_fn, ckpt, sched, steps, "the fine-tune", model) or RunState()
    pages = [gt_lines(r) for r in train_recs]
    for rec in ocr_recs:
        page = gt_lines(rec)
        page.source = "ocr"
        pages += [page] * ocr_repeat
    tag_index, type_index = {t: i for i, t in enumerate(tags)}, {t: i for i, t in enumerate(types)}
    dataset = TrainingSet(pages, vocab, tag_index, type_index, cfg.max_len, CORPUS_NOISE, seed + state.step)
    rehearsal = None
    if replay and replay_share > 0:
        rehearsal = TrainingSet(list(replay), vocab, tag_index, type_index, cfg.max_len, replay_noise or CORPUS_NOISE,
                                seed + 1 + state.step)
    stream = ReplayStream(dataset, rehearsal, batch_size, replay_share if rehearsal else 0.0)

    def next_batch():
        batch = stream.next()
        batch = batch[:step_fn.usable_rows(len(batch))]
        return extractor_batch(*collate(batch)) if batch else None

    state = run(step_fn, next_batch, sched, ckpt, steps, max(1, min(50, steps // 4)), state, "fine-tune")
    out = work / "finetuned"
    write_model_dir(model, cfg, vocab, out)
    copy_schemas(schema_files, out)
    plot_losses(state.losses, out / "loss.png")
    return {"steps": state.step, "step_function": how, "losses": state.losses, "notes": notes,
            "pages": {"gt": len(train_recs), "ocr": len(ocr_recs), "ocr_repeat": ocr_repeat if ocr_recs else 0,
                      "replay": len(replay or []) if rehearsal else 0},
            "batch_rows": dict(stream.rows),
            "tag_labels": len(tags), "new_doc_types": [t for t in types if t not in base_cfg.doc_types]}


def copy_schemas(schema_files: dict[str, Path], model_dir: Path) -> None:
    (model_dir / "schemas").mkdir(parents=True, exist_ok=True)
    for name, path in schema_files.items():
        (model_dir / "schemas" / f"{name}.yaml").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")


def normalise_gold(records: list[dict], schema_files: dict[str, Path]) -> list[dict]:
    """Gold values of corpus-only doc types normalised by their schema's field types.

    training/evaluate.py normalises gold values only for bundled schemas, so a new type's
    "2024年03月05日" would never equal the extractor's ISO "2024-03-05"; this does for new types what
    the evaluator does for bundled ones.
    """
    import copy

    from data.normalize import normalize_value
    from data.schemas import list_schemas, load_schema_file
    schemas = {dt: load_schema_file(p) for dt, p in schema_files.items() if dt not in list_schemas()}
    out = []
    for rec in records:
        schema = schemas.get(str(rec.get("doc_type")))
        if schema is not None:
            rec = copy.deepcopy(rec)
            types = {f.key: f.type for f in schema.fields}
            for key, f in (rec.get("fields") or {}).items():
                if isinstance(f, dict) and key in types:
                    f["value"] = normalize_value(types[key], str(f.get("value", ""))) or f.get("value")
        out.append(rec)
    return out


def evaluate_model(model_dir: Path, records: list[dict], schema_files: dict[str, Path], ocr: str = "gt",
                   cache: Path | None = None) -> dict:
    """Held-out scores of a model: on the records' own lines ("gt") or through real PP-OCR of their
    images ("real"; pages read once into `cache`, so base and new and a resumed run share one read)."""
    from models.extractor import Extractor
    from training.evaluate import evaluate_corpus
    report, _ = evaluate_corpus(Extractor.load(model_dir), normalise_gold(records, schema_files), ocr, cache)
    return report.as_dict()


def stage_evaluate(base: Path, new: Path, heldout: list[dict], schema_files: dict[str, Path], eval_ocr: str,
                   cache: Path) -> dict:
    """base vs new on the held-out split: always on its own lines; with eval_ocr "real" also through
    real OCR, which then decides the promotion (it is what users get)."""
    out = {"base": evaluate_model(base, heldout, schema_files), "new": evaluate_model(new, heldout, schema_files)}
    if eval_ocr == "real":
        out["base_real"] = evaluate_model(base, heldout, schema_files, "real", cache)
        out["new_real"] = evaluate_model(new, heldout, schema_files, "real", cache)
    return out


def base_heldout_layouts(base_dir: Path) -> tuple[dict[str, list[str]], list[str]]:
    """({doc type: layouts}, notes): what the base's own held-out set is drawn from.

    Every doc type the base knows and the generator draws; per type the layouts its training held out
    (provenance.json `heldout_layouts`), else the ones the trainer's rule (`split_by_layout`, a quarter of
    each type's layouts, the run's seed) holds out, else (a type with one layout) all of them."""
    from data.corpus import split_by_layout
    from data.synth.generator import list_doc_types, list_layouts
    from models.model_dir import ExtractorConfig, read_provenance
    known = list(ExtractorConfig.load(base_dir).doc_types)
    drawable = [t for t in known if t in list_doc_types()]
    notes = [f"{t}: the generator cannot draw it, so it has no base held-out pages" for t in known
             if t not in drawable]
    prov = read_provenance(base_dir) or {}
    named: dict[str, list[str]] = {}
    for item in prov.get("heldout_layouts") or []:
        dt, _, lay = str(item).partition("/")
        if dt in drawable and lay in list_layouts(dt):
            named.setdefault(dt, []).append(lay)
    dummies = [{"doc_type": t, "layout": lay} for t in drawable for lay in list_layouts(t)]
    _, held = split_by_layout(dummies, BASE_HELDOUT_SHARE, int(prov.get("seed", 0)))
    layouts = {}
    for t in drawable:
        layouts[t] = sorted(named.get(t) or [r["layout"] for r in held if r["doc_type"] == t] or list_layouts(t))
    return layouts, notes


def base_heldout_records(base_dir: Path, pages_per_type: int = BASE_HELDOUT_PAGES,
                         seed: int = BASE_HELDOUT_SEED) -> tuple[list[dict], dict]:
    """(records, summary) of the base's own held-out set: `pages_per_type` generated pages (fixed seed,
    no degradation: they are scored on their own lines) of each doc type the base knew, layouts held
    out as `base_heldout_layouts` says. The same base always gets the same pages."""
    from data.synth.generator import generate, page_seed
    layouts, notes = base_heldout_layouts(base_dir)
    records = []
    for dt, lays in layouts.items():
        for i in range(pages_per_type):
            s = page_seed(seed, i)
            _, gt = generate(dt, s, lays[i % len(lays)], "none", image_name=f"{dt}_{s}.jpg")
            gt["id"] = f"base_heldout/{dt}/{i}"
            records.append(gt)
    return records, {"pages": len(records), "layouts": layouts, "notes": notes, "seed": seed}


# --- rehearsal: what the base knew, replayed during the fine-tune ----------------------------------

def replay_layouts(base_dir: Path) -> tuple[dict[str, list[str]], list[str]]:
    """({doc type: layouts}, notes): the layouts replay pages are drawn from, per doc type the base knew.

    Exactly the generator layouts the promotion gate does NOT score on (`base_heldout_layouts`, the same
    split): replaying a held-out layout would teach the gate's own test pages. A type whose every layout
    is held out (one layout only) gets no replay pages, and a note says so."""
    from data.synth.generator import list_layouts
    from models.model_dir import ExtractorConfig
    held, _ = base_heldout_layouts(base_dir)
    notes = [f"{dt}: the generator cannot draw it, so it is not replayed (the fine-tune may forget it)"
             for dt in ExtractorConfig.load(base_dir).doc_types if dt not in held]
    out: dict[str, list[str]] = {}
    for dt, lays in held.items():
        train = [lay for lay in list_layouts(dt) if lay not in lays]
        if train:
            out[dt] = train
        else:
            notes.append(f"{dt}: every layout it has is in the base's held-out set, so it gets no replay pages")
    return out, notes


def base_training_config(base_dir: Path) -> TrainConfig | None:
    """The TrainConfig a base model was trained with (its provenance.json `config`, read strictly), or
    None when it has no record (a retrained version, a hand-made model directory). A record this
    version cannot read is refused (RetrainError), not half-read."""
    from models.model_dir import PROVENANCE, read_provenance
    prov = read_provenance(base_dir)
    config = prov.get("config") if prov is not None else None
    if config is None:
        return None
    try:
        return TrainConfig.from_dict(config, str(base_dir / PROVENANCE))
    except ConfigError as exc:
        raise RetrainError(f"the base's training config cannot be read: {exc}") from exc


def replay_seed(seed: int) -> int:
    """Generator seed of a run's replay pages: REPLAY_SEED + the run's seed, stepped past the gate's."""
    s = REPLAY_SEED + seed
    return s + 1 if s == BASE_HELDOUT_SEED else s


def replay_records(base_dir: Path, dest: Path, pages_per_type: int = REPLAY_PAGES_PER_TYPE,
                   seed: int = 0) -> tuple[list[dict], dict]:
    """(records, summary) of the replay pages: `pages_per_type` generated pages of each doc type the base
    knew, its training layouts in turn (`replay_layouts`), degraded as the base's training pages were
    (provenance `data.degrade`, else "mix"), images and ground truth under `dest`.

    Generated once per retrain: a page whose JSON exists is not drawn again (the JSON is written last,
    by rename), so a killed run resumes where it stopped and a rerun costs nothing."""
    from data.synth.degrade import LEVELS
    from data.synth.generator import generate, page_seed
    layouts, notes = replay_layouts(base_dir)
    base_cfg = base_training_config(base_dir)
    degrade = base_cfg.data.degrade if base_cfg else "mix"
    degrade = degrade if degrade in LEVELS else "mix"
    base_seed = replay_seed(seed)
    records = []
    for dt, lays in layouts.items():
        folder = dest / dt
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(pages_per_type):
            s = page_seed(base_seed, i)
            stem = f"{dt}_{s}"
            gt_file = folder / f"{stem}.json"
            if gt_file.is_file():
                gt = json.loads(gt_file.read_text(encoding="utf-8"))
            else:
                image, gt = generate(dt, s, lays[i % len(lays)], degrade, image_name=f"{stem}.jpg")
                tmp_img = folder / f"{stem}.tmp.jpg"
                image.save(tmp_img, quality=92)
                tmp_img.replace(folder / f"{stem}.jpg")
                tmp = folder / f"{stem}.json.tmp"
                tmp.write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")
                tmp.replace(gt_file)
            gt["id"] = f"replay/{dt}/{s}"        # the page seed: a shared --ocr-cache never mixes two runs' pages
            gt["image"] = str((folder / f"{stem}.jpg").resolve())
            records.append(gt)
    return records, {"pages": len(records), "layouts": layouts, "notes": notes, "seed": base_seed,
                     "degrade": degrade}


def replay_pages(records: list[dict], ocr: dict | None = None, ocr_repeat: int = 2) -> list:
    """TaggedPages of the replay records as the trainer takes its generated pages: each page's own
    lines (noised afresh every epoch), and for those read by real OCR (`ocr`: {record id: Page}) also
    the OCR lines labelled by alignment (training/dataset.py `ocr_lines`), `ocr_repeat` times each."""
    from training.dataset import gt_lines, ocr_lines
    from training.trainer import _rid
    pages = [gt_lines(r) for r in records]
    for r in records:
        if ocr and _rid(r) in ocr:
            pages += [ocr_lines(r, ocr[_rid(r)])] * ocr_repeat
    return pages


def replay_ocr_choice(records: list[dict], per_type: int, seed: int) -> list[dict]:
    """The replay pages real OCR reads with --ocr-train: `per_type` of each doc type, a seeded sample."""
    rng = random.Random(seed)
    chosen = []
    for dt in sorted({str(r.get("doc_type")) for r in records}):
        of_type = [r for r in records if str(r.get("doc_type")) == dt]
        chosen += rng.sample(of_type, min(per_type, len(of_type)))
    return chosen


class ReplayStream:
    """Training batches of `batch_size` windows, `replay_rows(share, batch_size)` of them from the replay
    set and the rest from the corpus, every batch (never a batch of one source alone, so no step pulls
    the shared encoder and heads toward the new data only).

    Each source keeps its own queue of length-bucketed groups (`TrainingSet.batches`, a fresh noise draw
    each epoch); a group shorter than needed is topped up from the next, and what a batch does not take
    goes back to the queue, so every window is seen once per epoch of its source."""

    def __init__(self, corpus, replay, batch_size: int, share: float):
        self.sets = {"corpus": corpus, "replay": replay}
        self.batch_size = batch_size
        self.rows = {"replay": replay_rows(share, batch_size) if replay is not None and replay.pages else 0}
        self.rows["corpus"] = batch_size - self.rows["replay"]
        self.queues: dict[str, list] = {"corpus": [], "replay": []}

    def _take(self, source: str) -> list:
        want, queue, out = self.rows[source], self.queues[source], []
        while len(out) < want:
            if not queue:
                data = self.sets[source]
                queue.extend(data.batches(want, data.epoch()))
                if not queue:
                    raise RetrainError(f"the {source} pages give no training windows")
            out += queue.pop()
        if len(out) > want:
            queue.append(out[want:])
        return out[:want]

    def next(self) -> list:
        """One batch: replay windows first, then the corpus'."""
        return (self._take("replay") if self.rows["replay"] else []) + self._take("corpus")


def replay_rows(share: float, batch_size: int) -> int:
    """Replay windows in a batch of `batch_size` for a replay share: at least one when the share is
    above 0, and always at least one corpus window."""
    if not 0.0 <= share < 1.0:
        raise RetrainError(f"--replay must be in [0, 1) (a share of each batch), got {share}")
    if share == 0.0 or batch_size < 2:
        return 0
    return min(batch_size - 1, max(1, round(share * batch_size)))


def field_f1(metrics: dict) -> dict[str, float]:
    return {f"{dt}.{k}": v["f1"] for dt, d in metrics["doc_types"].items() for k, v in d["fields"].items()}


# --- report ---------------------------------------------------------------------------------------

def write_report(out: Path, summary: dict, base_m: dict, new_m: dict, losses: list[float],
                 gt_lines: tuple[dict, dict] | None = None, title: str | None = None) -> None:
    """report.md + report.json + loss.png + f1.png in the exported model directory. `base_m`/`new_m`
    are the scores the promotion used; `gt_lines` the held-out pages' own-line scores when those were
    real-OCR scores; `title` the version's name (default: `out`'s, which a staging folder does not have)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from training.trainer import plot_losses
    plot_losses(losses or [float("nan")], out / "loss.png")
    bf, nf = field_f1(base_m), field_f1(new_m)
    keys = sorted(set(bf) | set(nf))
    fig, ax = plt.subplots(figsize=(max(5, 0.45 * len(keys) + 2), 4), dpi=80)
    x = np.arange(len(keys))
    ax.bar(x - 0.2, [bf.get(k, 0.0) for k in keys], 0.4, label="base")
    ax.bar(x + 0.2, [nf.get(k, 0.0) for k in keys], 0.4, label="new")
    ax.set_xticks(x, keys, rotation=70, ha="right", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("held-out field F1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "f1.png")
    plt.close(fig)
    extra = {"base_gt_lines": gt_lines[0], "new_gt_lines": gt_lines[1]} if gt_lines else {}
    (out / "report.json").write_text(json.dumps({**summary, "base": base_m, "new": new_m, **extra},
                                                ensure_ascii=False, indent=1), encoding="utf-8")
    rows = [f"# Retrain report: {title or out.name}", "",
            f"- corpus: `{summary['corpus']}` ({summary['split']['train']} train / "
            f"{summary['split']['heldout']} held-out pages, held out by {summary['split']['split_by']})",
            f"- base: `{summary['base']}`; adaptation (WWM MLM): {summary['pretrain'] or 'no'}",
            f"- fine-tune: {summary['finetune']['steps']} steps via {summary['finetune']['step_function']}",
            *([f"- replay: {summary['finetune'].get('batch_rows', {}).get('replay', 0)} of every "
               f"{sum(summary['finetune'].get('batch_rows', {}).values())} windows per batch from "
               f"{summary['replay'].get('pages', 0)} generated pages of the base's doc types (layouts it trained "
               f"on: " + "; ".join(f"{dt} {', '.join(lays)}"
                                   for dt, lays in summary['replay'].get('layouts', {}).items())
               + ")"] if summary.get("replay") else ["- replay: none (fine-tuned on the corpus alone)"]),
            *[f"- replay note: {n}" for n in (summary.get("replay") or {}).get("notes", [])],
            f"- held-out field F1 ({summary.get('judged_on', 'own lines')}): base **{summary['base_f1']:.3f}**, "
            f"new **{summary['new_f1']:.3f}**",
            *([f"- on the held-out pages' own lines: base {summary['gt_lines']['base_f1']:.3f}, "
               f"new {summary['gt_lines']['new_f1']:.3f}"] if summary.get("gt_lines") else []),
            *([f"- trained also on {summary['ocr_labels']['pages']} pages as real OCR read them "
               f"({summary['ocr_labels']['labelled']}/{summary['ocr_labels']['values']} values aligned)"]
              if summary.get("ocr_labels") else []),
            f"- latest pointer: {summary['promotion']}", "",
            *_base_heldout_rows(summary.get("base_heldout")),
            "| field | base F1 | new F1 |", "| --- | ---: | ---: |"]
    rows += [f"| {k} | {bf.get(k, 0.0):.3f} | {nf.get(k, 0.0):.3f} |" for k in keys]
    rows += ["", "![loss](loss.png)", "", "![per-field F1](f1.png)", ""]
    rows += [f"- note: {n}" for n in summary["finetune"].get("notes", [])]
    (out / "report.md").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _base_heldout_rows(kept: dict | None) -> list[str]:
    """report.md section: base vs new on the base's own held-out set, per doc type."""
    if not kept:
        return []
    rows = [f"Base's own held-out pages ({kept.get('pages', 0)} generated pages, layouts its training held out; "
            f"promotion needs no type to lose more than {PROMOTION_TOLERANCE} F1):", "",
            "| doc type | layouts | base F1 | new F1 | type accuracy base -> new |",
            "| --- | --- | ---: | ---: | ---: |"]
    for dt, before in sorted(kept["base_f1_by_type"].items()):
        acc = kept.get("type_accuracy", {}).get(dt) or [None, None]
        rows.append(f"| {dt} | {', '.join(kept.get('layouts', {}).get(dt, []))} | {before:.3f} | "
                    f"{kept['new_f1_by_type'].get(dt, 0.0):.3f} | "
                    + " -> ".join("-" if a is None else f"{a:.0%}" for a in acc) + " |")
    return rows + [f"- note: {n}" for n in kept.get("notes", [])] + [""]


# --- the command ----------------------------------------------------------------------------------

def read_page_with_ocr(path: Path):
    """PP-OCR of one image file (the csv importer's OCR function)."""
    import cv2

    from models.ocr import get_engine
    image = cv2.imread(str(path))
    if image is None:
        raise ValueError(f"cannot decode {path.name} as an image")
    return get_engine().read(image)


def retrain(corpus: Path, base: Path, out_root: Path, name: str = "extractor", fmt: str | None = None,
            schemas: list[str] = (), pretrain: bool = False, force: bool = False, steps: int = RETRAIN.steps,
            batch_size: int = RETRAIN.batch_size, lr: float = RETRAIN.lr,
            pretrain_steps: int = RETRAIN.pretrain.steps, pipe: dict | None = None, seed: int = RETRAIN.seed,
            command: str = "", eval_ocr: str = "gt", ocr_train: bool = False,
            ocr_repeat: int = 2, ocr_cache: Path | None = None, replay: float = REPLAY_SHARE,
            replay_pages_per_type: int = REPLAY_PAGES_PER_TYPE, keep_work: bool = False,
            form_scorer_pages: int = FORM_SCORER_PAGES) -> Path:
    """Run every stage (skipping finished ones) and return the exported version directory.

    The work directory is removed when the run ends, exported or failed (`keep_work` keeps it for
    inspection); only an interrupted run (Ctrl-C) or a killed one leaves it, for the same command to
    resume, and the next retrain removes those whose process is gone (`remove_stale_work`).

    `replay` is the share of each fine-tune batch drawn from generated pages of the doc types the base
    knew (layouts it trained on, `replay_records`); 0 fine-tunes on the corpus alone. `form_scorer_pages`:
    generated form pages the new weights' form scorer is fitted on (`refit_form_scorer`)."""
    from models.model_dir import model_dir_problem, write_metrics
    check_name(name)
    problem = model_dir_problem(base)       # a pickle weight file that refers to anything but arrays included
    if problem is not None:
        raise RetrainError(f"--base {base} is not a model directory ({problem}); use models/default or a "
                           f"directory this command exported")
    if not corpus.exists():
        raise RetrainError(f"--corpus {corpus} does not exist")
    pipe = pipe or {}
    replay_rows(replay, batch_size)               # a bad --replay is refused before any work
    if replay_pages_per_type < 1:
        raise RetrainError(f"--replay-pages must be at least 1, got {replay_pages_per_type}")
    if form_scorer_pages < 1:
        raise RetrainError(f"--form-scorer-pages must be at least 1, got {form_scorer_pages}")
    registry = ModelRegistry(out_root)
    key = run_key({"corpus": str(corpus.resolve()), "base": str(base.resolve()), "fmt": fmt, "schemas": list(schemas),
                   "pretrain": pretrain, "steps": steps, "bs": batch_size, "lr": lr, "pipe": pipe, "seed": seed,
                   "name": name, "pretrain_steps": pretrain_steps,
                   # only when set, so the work dirs of runs made before these options keep their key
                   **({"eval_ocr": eval_ocr} if eval_ocr != "gt" else {}),
                   **({"ocr_train": ocr_repeat} if ocr_train else {}),
                   **({"replay": replay, "replay_pages": replay_pages_per_type} if replay > 0 else {}),
                   **({"form_scorer_pages": form_scorer_pages} if form_scorer_pages != FORM_SCORER_PAGES else {}),
                   # pages added to the corpus since an interrupted run (a clerk saved more): a fresh run, not a
                   # resume that would train and judge on the old import
                   **({"corpus_sha1": hashlib.sha1((corpus / CORPUS_FILE).read_bytes()).hexdigest()}
                      if (corpus / CORPUS_FILE).is_file() else {})})
    work = registry.root / WORK_DIR / f"{name}-{key}"
    for stale in remove_stale_work(registry.root / WORK_DIR, keep=work):
        print(f"removed {stale}: the work directory of a run that ended without cleaning up")
    claim_work(work)
    interrupted = False
    try:
        stages = Stages(work)
        print(f"work directory {work} (an interrupted run resumes from here; removed when the run ends)")
        t0 = time.time()

        progress("import")
        imported = stages.done("import") or stages.finish("import", stage_import(
            corpus, fmt, list(schemas), work, read_page_with_ocr))
        progress("split")
        split = stages.done("split") or stages.finish("split", stage_split(work / "corpus", work, seed))
        if split["heldout"] < MIN_HELDOUT_PAGES and not force:       # refuse before any training is spent
            total = split["train"] + split["heldout"]
            raise RetrainError(     # the work dir goes with it: the user adds pages and the next run imports afresh
                f"only {split['heldout']} of the corpus' {total} pages can be held out to judge the new model; at "
                f"least {MIN_HELDOUT_PAGES} are needed (a corpus of {MIN_CORPUS_PAGES} or more pages holds out "
                f"{MIN_HELDOUT_PAGES}), else one lucky page decides whether `latest` moves. Label more pages, or "
                f"pass --force to train anyway (the version is kept; `latest` moves only by `python -m training "
                f"promote`)")
        schema_files = corpus_schemas(work / "corpus")
        train_recs, heldout = read_corpus(work / "train"), read_corpus(work / "heldout")

        start = base
        if pretrain:
            from training.pretrain import pretrain as run_pretrain
            adapted = stages.done("pretrain") or stages.finish("pretrain", run_pretrain(
                [r for r in train_recs], base, work / "pretrained", steps=pretrain_steps, pipe=pipe, seed=seed,
                resume=True))     # a killed adaptation continues from work/pretrained.ckpt
            start = work / "pretrained"
        else:
            adapted = None
        ocr_cache = ocr_cache or work / "ocr_cache.jsonl"     # one PP-OCR read per page image, for every stage
        ocr_recs: list[dict] = []
        if ocr_train:
            from training.ocr_labels import ocr_training_records
            if not stages.done("ocr_labels"):
                labelled, coverage = ocr_training_records(train_recs, ocr_cache)
                write_corpus(labelled, work / "ocr_train")
                stages.finish("ocr_labels", coverage)
            ocr_recs = read_corpus(work / "ocr_train")
        rehearsal: list = []
        replay_noise: NoiseConfig | None = None
        progress("replay")
        if replay > 0 and not stages.done("finetune"):
            # the base's doc types on the layouts it trained on (never the gate's), generated once into the work dir
            found, replay_set = replay_records(base, work / "replay", replay_pages_per_type, seed)
            ocr_read: dict = {}
            if ocr_train and found:       # as the trainer does with its generated pages: a share read by real OCR
                from training.trainer import ocr_records
                chosen = replay_ocr_choice(found, REPLAY_OCR_PAGES_PER_TYPE, replay_set["seed"])
                ocr_read = ocr_records(chosen, ocr_cache, desc="real OCR (replay pages)")
                ocr_read = {r["id"]: ocr_read[r["id"]] for r in chosen if r["id"] in ocr_read}   # not the whole cache
                replay_set["ocr_pages"] = len(ocr_read)
            stages.finish("replay", replay_set)
            rehearsal = replay_pages(found, ocr_read, ocr_repeat)
            base_cfg = base_training_config(base)
            replay_noise = base_cfg.noise if base_cfg else None      # no record: the light corpus noise
        progress("finetune")
        tuned = stages.done("finetune") or stages.finish("finetune", finetune(
            start, train_recs, heldout, schema_files, work, steps, batch_size, lr, pipe, seed, ocr_recs, ocr_repeat,
            rehearsal, replay, replay_noise))
        progress("form_scorer")
        stages.done("form_scorer") or stages.finish("form_scorer", refit_form_scorer(
            base, work / "finetuned", seed, form_scorer_pages))
        progress("evaluate")
        evaluated = stages.done("evaluate") or stages.finish("evaluate", stage_evaluate(
            base, work / "finetuned", heldout, schema_files, eval_ocr, ocr_cache))

        # what the base knew: its own doc types on generated pages of held-out layouts, base and new alike
        progress("base_heldout")
        if not stages.done("base_heldout"):
            base_recs, base_set = base_heldout_records(base)
            write_corpus(base_recs, work / "base_heldout")
            stages.finish("base_heldout", base_set)
        base_set = stages.done("base_heldout") or {}
        base_kept = stages.done("evaluate_base_heldout") or stages.finish("evaluate_base_heldout", stage_evaluate(
            base, work / "finetuned", read_corpus(work / "base_heldout"), schema_files, "gt", ocr_cache))

        progress("export")
        done = stages.done("export")
        if done:
            print(f"already exported as {done['version']}")
            return Path(done["version"])
        judged = "real" if "new_real" in evaluated else "gt"      # what the promotion and headline use
        suffix = "_real" if judged == "real" else ""
        base_f1 = evaluated["base" + suffix]["overall_field"]["f1"]
        new_f1 = evaluated["new" + suffix]["overall_field"]["f1"]
        kept_base, kept_new = base_kept["base"]["f1_by_type"], base_kept["new"]["f1_by_type"]
        corpus_by_type = tuple(evaluated[m + suffix].get("f1_by_type", {}) for m in ("base", "new"))
        decision = decide_promotion(base_f1, new_f1, split["heldout"], kept_base, kept_new,
                                    corpus_types_base=corpus_by_type[0], corpus_types_new=corpus_by_type[1])
        promoted = decision.promote and not force       # --force keeps the version; `promote` is a second step
        # complete or invisible: the version is built in a hidden staging folder, renamed over the reserved
        # (empty, unlisted) one once its report is written, and only then may `latest` move to it
        version = registry.reserve(name)
        staging = registry.staging(version)
        for f in (work / "finetuned").iterdir():
            if f.is_file():
                shutil.copy2(f, staging / f.name)
        copy_schemas(schema_files, staging)
        previous = registry.latest(name)
        kept = f"kept at {previous.name if previous else 'none'}"
        if promoted:
            promotion = f"moved to {version.name}"
        elif force:
            promotion = (f"{kept}: --force keeps the new version without moving `latest` ("
                         + ("the promotion rule passed" if decision.promote else
                            "the promotion rule refused it: " + "; ".join(decision.reasons))
                         + f"); to make it latest: {promote_command(version)}")
        else:
            promotion = f"{kept}: " + "; ".join(decision.reasons) + f" (to use it anyway: {promote_command(version)})"
        summary = {"corpus": str(corpus), "base": str(base), "version": version.name, "command": command,
                   "import": imported, "split": split,
                   "pretrain": adapted and {k: v for k, v in adapted.items() if k != "losses"},
                   "finetune": {k: v for k, v in tuned.items() if k != "losses"}, "base_f1": base_f1, "new_f1": new_f1,
                   "replay": {"share": replay, **(stages.done("replay") or {})} if replay > 0 else None,
                   "base_heldout": {**base_set, "base_f1_by_type": kept_base, "new_f1_by_type": kept_new,
                                    "type_accuracy": {
                                        dt: [base_kept[m]["doc_types"].get(dt, {}).get("doc_type_accuracy")
                                             for m in ("base", "new")] for dt in kept_base}},
                   "promotion_rule": {"min_heldout_pages": MIN_HELDOUT_PAGES, "tolerance": PROMOTION_TOLERANCE,
                                      "corrected_kind": sorted(corpus_by_type[0]),
                                      "corpus_f1_by_type": {"base": corpus_by_type[0], "new": corpus_by_type[1]},
                                      "refused_because": decision.reasons},
                   "promoted": promoted, "forced": force, "promotion": promotion,
                   "seconds": round(time.time() - t0, 1),
                   "judged_on": ("real PP-OCR of the held-out images" if judged == "real"
                                 else "the held-out pages' own lines"),
                   "ocr_labels": stages.done("ocr_labels")}
        if judged == "real":
            summary["gt_lines"] = {"base_f1": evaluated["base"]["overall_field"]["f1"],
                                   "new_f1": evaluated["new"]["overall_field"]["f1"]}
        try:
            write_metrics(staging, evaluated["new" + suffix])
            write_report(staging, summary, evaluated["base" + suffix], evaluated["new" + suffix], tuned["losses"],
                         (evaluated["base"], evaluated["new"]) if judged == "real" else None, title=version.name)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)     # the reserved version stays empty: never listed
            raise
        registry.publish(staging, version)
        if promoted:
            registry.promote(name, version)                # after the version is whole, report included
        stages.finish("export", {"version": str(version)})
        print(f"held-out field F1: base {base_f1:.3f} -> new {new_f1:.3f}")
        print("base's own held-out pages, F1 by doc type: " + ", ".join(
            f"{dt} {kept_base[dt]:.3f} -> {kept_new.get(dt, 0.0):.3f}" for dt in sorted(kept_base)))
        print(f"latest {promotion}")
        print(f"model exported to {version} (report: {version / 'report.md'})")
        return version
    except BaseException as exc:
        # Ctrl-C or a stop (not an Exception: a failure): kept, so the same command resumes from its last stage
        interrupted = not isinstance(exc, Exception)
        raise
    finally:
        if not interrupted and not keep_work:    # finished, or failed: a rerun starts afresh anyway
            remove_work(work)


def retrain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, type=Path,
                   help="corpus folder (corpus.jsonl [+ schemas/*.yaml]), generator output, or a source for --format")
    p.add_argument("--base", required=True, type=Path, help="model directory to start from (e.g. models/default)")
    p.add_argument("--format", choices=FORMATS, help="import the corpus from this format first (default: ours)")
    p.add_argument("--schema", action="append", default=[], help="schema YAML of a new doc type (repeatable)")
    p.add_argument("--pretrain", action="store_true", help="adapt the encoder with whole-word-masked MLM first")
    p.add_argument("--force", action="store_true",
                   help="train and export even if the corpus holds out too few pages to judge the new model; "
                        "the version is kept but `latest` never moves (a second step does: `python -m "
                        "training promote VERSION_DIR`)")
    p.add_argument("--keep-work", action="store_true",
                   help="keep the work directory (stages, checkpoints, replay pages; ~180 MB) after the run; "
                        "by default it is removed when the run ends")
    p.add_argument("--out-root", type=Path, default=Path("models"), help="versions go to OUT_ROOT/registry/")
    p.add_argument("--name", default="extractor", help="model name: versions are NAME-v0001, NAME-v0002, ...")
    p.add_argument("--steps", type=int, default=RETRAIN.steps, help="fine-tune steps (default: %(default)s)")
    p.add_argument("--pretrain-steps", type=int, default=RETRAIN.pretrain.steps,
                   help="MLM steps with --pretrain (default: %(default)s, as `python -m training pretrain`)")
    p.add_argument("--batch-size", type=int, default=RETRAIN.batch_size)
    p.add_argument("--lr", type=float, default=RETRAIN.lr)
    p.add_argument("--pipeline-stages", type=int, default=RETRAIN.stages,
                   help="pipeline stages (pipeline engine, in one process)")
    p.add_argument("--micro-batches", type=int, default=RETRAIN.micro_batches,
                   help="micro-batches per step (divides --batch-size)")
    p.add_argument("--seed", type=int, default=RETRAIN.seed)
    p.add_argument("--eval-ocr", choices=["gt", "real"], default="gt",
                   help="gt: score base and new on the held-out pages' own lines; real: also through real "
                        "PP-OCR of their images (read once, cached in the work dir), and promote on that")
    p.add_argument("--ocr-train", action="store_true",
                   help="also train on the training pages as real PP-OCR reads them (read once, cached), "
                        "labelled by aligning each page's field values to the OCR lines")
    p.add_argument("--ocr-repeat", type=int, default=2, help="with --ocr-train: times each OCR page joins the mix")
    p.add_argument("--ocr-cache", type=Path,
                   help="PP-OCR page cache (JSONL) to read and extend (default: WORK/ocr_cache.jsonl); runs "
                        "on the same images can share one")
    p.add_argument("--replay", type=float, default=REPLAY_SHARE,
                   help="share of each fine-tune batch drawn from generated pages of the base's own doc types "
                        "(layouts its training used, never those the promotion check scores), so it does not "
                        f"forget them; 0 = the corpus alone (default: {REPLAY_SHARE})")
    p.add_argument("--replay-pages", type=int, default=REPLAY_PAGES_PER_TYPE,
                   help="replay pages generated per doc type the base knew (default: %(default)s)")
    p.add_argument("--form-scorer-pages", type=int, default=FORM_SCORER_PAGES,
                   help="generated form pages the new weights' form pair scorer and piece roles are fitted on "
                        "(default: %(default)s; fewer: a faster retrain, a noisier form scorer)")


def retrain_main(a: argparse.Namespace) -> int:
    """Exit status as app/cli.py's EXIT_STATUS: 0 exported and promoted, or (--force) exported and kept
    as asked, `latest` unmoved; 1 the run finished and the version is exported for inspection, but the
    promotion rule kept `latest` where it was (the reasons on stderr); 2 refused before training (bad
    input, too few held-out pages), with the reason on stderr."""
    pipe = {"stages": a.pipeline_stages, "micro_batches": a.micro_batches}
    # RetrainError, CorpusError, CheckpointError: python -m training prints them and exits 2
    version = retrain(a.corpus, a.base, a.out_root, a.name, a.format, a.schema, a.pretrain, a.force, a.steps,
                      a.batch_size, a.lr, a.pretrain_steps, pipe, a.seed,
                      "python -m training " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
                      a.eval_ocr, a.ocr_train, a.ocr_repeat, a.ocr_cache, a.replay, a.replay_pages, a.keep_work,
                      a.form_scorer_pages)
    report = json.loads((version / "report.json").read_text(encoding="utf-8"))
    if report.get("forced"):
        print(f"{version.name} kept; latest {report['promotion']}")
        return 0
    if not report.get("promoted"):
        print(f"error: {version.name} not promoted: latest {report['promotion']}", file=sys.stderr)
        return 1
    return 0


def promote_command(version: Path) -> str:
    """The second, explicit step that moves `latest` to a version the rule or --force left unpromoted."""
    return f"python -m training promote {shlex.quote(str(version))}"


def report_figures(report: dict) -> list[str]:
    """The lines of a retrain report a promotion is judged by: base vs new on the held-out corpus pages
    (overall and per corrected doc type) and on the base's own held-out set, and what the rule said."""
    rule = report.get("promotion_rule") or {}
    rows = [f"held-out corpus pages ({report.get('split', {}).get('heldout', '?')}, "
            f"{report.get('judged_on', 'own lines')}): field F1 base {report['base_f1']:.3f} -> "
            f"new {report['new_f1']:.3f}"]
    by_type = rule.get("corpus_f1_by_type") or {}
    rows += [f"  {dt}: {f1:.3f} -> {by_type.get('new', {}).get(dt, 0.0):.3f}"
             for dt, f1 in sorted((by_type.get("base") or {}).items())]
    kept = report.get("base_heldout") or {}
    if kept.get("base_f1_by_type"):
        rows.append(f"base's own held-out pages ({kept.get('pages', '?')}), F1 by doc type (tolerance "
                    f"{rule.get('tolerance', PROMOTION_TOLERANCE)}):")
        rows += [f"  {dt}: {f1:.3f} -> {kept.get('new_f1_by_type', {}).get(dt, 0.0):.3f}"
                 for dt, f1 in sorted(kept["base_f1_by_type"].items())]
    reasons = rule.get("refused_because") or []
    rows.append("promotion rule: " + ("passed" if not reasons else "refused: " + "; ".join(reasons)))
    return rows


def promote_version(version: Path) -> list[str]:
    """Move `latest` to an exported `version` (the explicit step after --force, or after the rule kept
    it), and mark its report so; returns the report's figures, the promotion line last. Refused
    (RetrainError) for a folder that is not a complete version with a retrain report."""
    from data.atomic import write_text_atomic
    version = Path(version)
    try:
        registry, name = ModelRegistry.of_version(version)
        report = json.loads((version / "report.json").read_text(encoding="utf-8"))
        previous = registry.latest(name)
        registry.promote(name, version)
    except (OSError, ValueError) as exc:        # RegistryError is a ValueError; no or a torn report.json
        raise RetrainError(f"{version} cannot be promoted: {exc}. Give a version folder that "
                           f"`python -m training retrain` exported (models/registry/NAME-v0001)") from exc
    figures = report_figures(report)
    was = previous.name if previous else "none"
    report.update(promoted=True, promotion=f"moved to {version.name} by `python -m training promote` (was {was}; "
                                           f"at export: {report.get('promotion', '')})")
    write_text_atomic(version / "report.json", json.dumps(report, ensure_ascii=False, indent=1))
    md = version / "report.md"
    if md.is_file():
        write_text_atomic(md, md.read_text(encoding="utf-8")
                          + f"\n- latest pointer: {report['promotion']}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    return figures + [f"latest moved to {version.name} (was {was})"]


def promote_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("version", type=Path, metavar="VERSION_DIR",
                   help="an exported version, e.g. models/registry/extractor-v0003 (its report.json is shown)")


def promote_main(a: argparse.Namespace) -> int:
    for line in promote_version(a.version):
        print(line)
    return 0


def import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", required=True, choices=FORMATS, help="what --src is")
    p.add_argument("--src", required=True, type=Path, help="the export file or folder to import")
    p.add_argument("--out", required=True, type=Path, help="corpus folder to write (corpus.jsonl, images/)")
    p.add_argument("--doc-type", help="document type of every page (when the source does not say)")
    p.add_argument("--schema", action="append", default=[], help="schema YAML to bundle (new doc types)")
    p.add_argument("--min-score", type=float, default=0.85, help="csv: least alignment score kept as a label")


def import_main(a: argparse.Namespace) -> int:
    from tqdm import tqdm
    opts = {"ocr": read_page_with_ocr, "min_score": a.min_score, "progress": tqdm} if a.format == "csv" else {}
    try:
        report = import_corpus(a.format, a.src, a.out, a.doc_type, a.schema, **opts)
    except (ValueError, OSError) as exc:       # no such --src, unknown format: python -m training says so, exit 2
        raise RefusedError(str(exc)) from exc
    print(report.summary())
    print(f"corpus written to {a.out / CORPUS_FILE}; full report in {a.out / 'import_report.json'}")
    return 0 if report.records_written else 1


RETRAIN_COMMAND = (retrain_args, retrain_main)
PROMOTE_COMMAND = (promote_args, promote_main)
IMPORT_COMMAND = (import_args, import_main)
