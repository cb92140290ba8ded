"""Train the extractor: synthetic corpus -> (noisy GT + real OCR) windows -> encoder + heads -> model dir.

    python -m training train --config configs/default.yaml [--out DIR] [--resume] [--init-from CKPT_DIR]

The config is a TrainConfig (training/config.py), read strictly; the loop, LR schedule and checkpoints
are training/loop.py's, shared with retrain and pretrain. `--init-from` starts the encoder from a
Chinese-BERT-wwm / ERNIE checkpoint directory (PaddleNLP or Hugging Face layout) instead of scratch.

What a run does, in order (every step is resumable from the work directory):
1. corpus: reads `data.corpus` JSONL, or generates pages with `python -m data.synth` per doc type;
   whole layouts are held out for evaluation (data/corpus.py `split_by_layout`);
2. real OCR of a share of the training images (cached), labelled by aligning GT values (data/align.py);
3. training through the pipeline engine (training/step.py; `pipeline:` in the config or
   `--pipeline-stages N --micro-batches M --schedule S [--transport inprocess|dist]`; one stage is the
   same engine), in one process or one process per stage under paddle.distributed.launch
   (training/launch_train.py); a checkpoint every `checkpoint_every` steps (per stage) into
   work/checkpoint/step_N/, written whole before it replaces anything, the newest two kept;
   `--resume` continues from the newest one that reads back whole (else the one before it);
4. the model directory: weights, vocab, labels, schemas, loss curve PNG, metrics.json (held-out
   layouts, GT lines) and provenance.json (config, seed, command, git commit).
"""
from __future__ import annotations

import json
import pickle
import random
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import paddle
from tqdm import tqdm

from data.corpus import corpus_from_synth_dir, read_corpus, split_by_layout, write_corpus
from data.document import Page
from models.checkpoint import CheckpointSlots
from models.encoder import EncoderConfig
from models.heads import schema_field_keys, tag_labels
from models.model_dir import ExtractorConfig, write_model_dir, write_provenance
from models.tokenizer import Tokenizer
from training.config import TrainConfig, load_config  # noqa: F401 - load_config: scripts import it from here
from training.dataset import TaggedPage, TrainingSet, collate, gt_lines, ocr_lines
from training.errors import RefusedError, TrainingError
from training.loop import RunState, lr_schedule, run
from training.loop import restore_checkpoint as _restore  # noqa: F401 - tests reach them by these names
from training.loop import resume as resume_from
from training.loop import save_checkpoint as _checkpoint  # noqa: F401
from training.step import check_pipeline, lead_first

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# --- data --------------------------------------------------------------------------------------------

def build_corpus(cfg: TrainConfig, work: Path) -> tuple[list[dict], list[dict]]:
    """(train, held-out) records; generated into work/synth on the first run, read after that."""
    data = cfg.data
    seed = cfg.seed
    train_file, test_file = work / "train" / "corpus.jsonl", work / "heldout" / "corpus.jsonl"
    if train_file.is_file() and test_file.is_file():
        return read_corpus(train_file), read_corpus(test_file)
    if data.corpus:
        records = read_corpus(data.corpus)
    else:
        records = []
        for i, doc_type in enumerate(tqdm(data.types, desc="generating pages", unit="type")):
            out = work / "synth" / doc_type
            have = [p for p in out.glob("*.json") if p.name != "manifest.json"] if out.is_dir() else []
            if len(have) < data.pages_per_type:     # none yet, or a run killed half way
                if out.is_dir():
                    shutil.rmtree(out)
                cmd = [sys.executable, "-m", "data.synth", "--type", doc_type, "--n", str(data.pages_per_type),
                       "--seed", str(seed * 1000 + i), "--degrade", data.degrade,
                       "--out", str(out)]
                res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
                if res.returncode != 0:
                    # a type the generator cannot draw yet is left out, loudly, rather than stopping the run
                    print(f"WARNING: generator failed for {doc_type}, training without it: "
                          f"{res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}\n"
                          f"  (reproduce with `{' '.join(cmd)}`)", file=sys.stderr)
                    continue
            records += corpus_from_synth_dir(out)
        if not records:
            raise TrainingError("the generator produced no pages for any type in data.types; "
                                "check `python -m data.synth --list`")
    train, test = split_by_layout(records, data.heldout_named or data.heldout_layouts, seed)
    write_corpus(train, train_file)
    write_corpus(test, test_file)
    return read_corpus(train_file), read_corpus(test_file)


def ocr_records(records: list[dict], cache: Path, desc: str = "real OCR") -> dict[str, Page]:
    """Each record's image read once by the reading route, as the product reads it (reading/cache.py:
    the OCR settings and reader mode are the cache key, a row read with others is read again; pages
    cached before ruled lines were kept get them from the image). One page per record id: its first.
    Records with no image, or one that cannot be decoded, are left out."""
    from reading.cache import read_pages_cached
    items = [(_rid(r), str(r["image"])) for r in records if r.get("image")]
    pages = read_pages_cached(items, cache, desc=desc, skip_unreadable=True)
    return {rid: read[0] for rid, read in pages.items() if read}


def _rid(rec: dict) -> str:
    return str(rec.get("id") or rec.get("image"))


def cached_pages(cache: Path, tag: str | None = None) -> dict[str, Page]:
    """The pages of an `ocr_records` cache by record id (`tag`: only those read with these OCR settings,
    models.ocr.OCRSettings.tag; else the first read of each, whatever settings read it)."""
    from data.document import Document
    pages: dict[str, Page] = {}
    if cache.is_file():
        for raw in cache.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                row = json.loads(raw)
                if (tag is None and row["id"] not in pages) or (tag is not None and row.get("ocr") == tag):
                    pages[row["id"]] = Document.from_dict({"pages": [row["page"]]}).pages[0]
    return pages


def form_set_pages(folder: Path, only: set[str] | None = None, ocr_tag: str | None = None
                   ) -> list[tuple[dict, Page]]:
    """(record, OCR'd page) for every generic-form page of a generator folder (`only`: these record ids);
    OCRs what its ocr_cache.jsonl lacks. `ocr_tag`: only the pages read with those OCR settings, so two runs
    compare decoders on the same reads after the OCR defaults changed. Used by the pair scorer's fit and
    bench.form_pairs_bench."""
    recs = [r for r in corpus_from_synth_dir(folder) if r.get("doc_type") == "generic_form"
            and (only is None or r["id"] in only)]
    if ocr_tag is not None:
        cached = cached_pages(folder / "ocr_cache.jsonl", ocr_tag)
        return [(r, cached[_rid(r)]) for r in recs if _rid(r) in cached]
    pages = ocr_records(recs, folder / "ocr_cache.jsonl", desc=f"real OCR {folder.name}")
    return [(r, pages[_rid(r)]) for r in recs if _rid(r) in pages]


def ocr_pass(work: Path, shard: int, shards: int, seed: int) -> None:
    """Read training pages with real OCR, every `shards`-th page of a fixed order from `seed`
    starting at `shard`, into work/ocr_train.shard<i>.jsonl: run one per core in the background
    (scripts/train_default.sh OCR_SHARDS=2) and stop them any time; `train` folds what they read into
    its OCR cache and trains on every cached page."""
    train_recs = read_corpus(work / "train" / "corpus.jsonl")
    order = random.Random(seed).sample(train_recs, len(train_recs))
    ocr_records(order[shard::shards], work / f"ocr_train.shard{shard}.jsonl", desc=f"OCR shard {shard}")


def fold_ocr_shards(work: Path) -> None:
    """Append pages from work/ocr_train.shard*.jsonl that work/ocr_train.jsonl lacks (ids once)."""
    cache = work / "ocr_train.jsonl"
    seen = set()
    if cache.is_file():
        seen = {json.loads(raw)["id"] for raw in cache.read_text(encoding="utf-8").splitlines() if raw.strip()}
    with open(cache, "a", encoding="utf-8") as out:
        for part in sorted(work.glob("ocr_train.shard*.jsonl")):
            for raw in part.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(raw)
                except json.JSONDecodeError:      # the last line of a shard stopped mid-write
                    continue
                if row["id"] not in seen:
                    seen.add(row["id"])
                    out.write(raw + "\n")


# --- the model ---------------------------------------------------------------------------------------

def check_init_from(cfg: TrainConfig) -> None:
    """Refuse (RefusedError, before any work) a `model.init_from` that is not a loadable BERT/ERNIE
    checkpoint directory: no folder, no config.json, no vocab.txt or no weights file, or Paddle weights
    in a pickle that refers to anything but arrays (a pickle can run code; `load_paddle_pickle`)."""
    if not cfg.model.init_from:
        return
    from models.checkpoint import PADDLE_SAFETENSORS, paddle_pickle_problem, read_config
    src = Path(cfg.model.init_from)
    if not src.is_dir():
        raise RefusedError(f"--init-from {src} is not a local directory; download the checkpoint once "
                           f"(PaddleNLP or Hugging Face layout) and pass its folder")
    try:
        enc = read_config(src)
    except (OSError, ValueError) as exc:
        raise RefusedError(f"--init-from {src}: {exc}") from exc
    if not (src / "vocab.txt").is_file():
        raise RefusedError(f"--init-from {src} has no vocab.txt; the token ids of its weights depend on it")
    weights = (PADDLE_SAFETENSORS, "model_state.pdparams", "model.safetensors", "pytorch_model.bin")
    if not any((src / f).is_file() for f in weights):
        raise RefusedError(f"--init-from {src} has no weights ({', '.join(weights[:-1])} or {weights[-1]})")
    pickled = src / "model_state.pdparams"
    problem = paddle_pickle_problem(pickled) if pickled.is_file() and not (src / PADDLE_SAFETENSORS).is_file() else None
    if problem:
        raise RefusedError(f"--init-from {problem}")
    if cfg.model.max_len > enc.max_position:
        raise RefusedError(f"model.max_len {cfg.model.max_len} is longer than {src}'s {enc.max_position} "
                           f"positions; lower model.max_len")


def build_model(cfg: TrainConfig, labels: list[str], doc_types: list[str]):
    """(model, ExtractorConfig, vocabulary) for a run: the preset shape with the config's overrides and
    the from-scratch vocabulary, or (`model.init_from`) a Chinese-BERT-wwm / ERNIE checkpoint directory
    in PaddleNLP or Hugging Face layout, read by models.checkpoint.load_pretrained with its own
    config.json and vocab.txt; the extraction head starts fresh either way."""
    from models.heads import ExtractionHead, HeadConfig
    mcfg = cfg.model
    if mcfg.init_from:
        from models.checkpoint import load_pretrained, read_config
        src = Path(mcfg.init_from)
        try:
            hidden = read_config(src).hidden_size
            head = ExtractionHead(HeadConfig(hidden_size=hidden, tag_labels=list(labels), doc_types=list(doc_types),
                                             link=True))
            model, notes = load_pretrained(src, head=head)
            vocab = Tokenizer.from_dir(src)
        except (OSError, KeyError, ValueError, pickle.UnpicklingError) as exc:   # the restricted unpickler's refusal
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise RefusedError(f"--init-from {src}: {message}") from exc
        for note in notes:
            print(f"init from {src}: {note}")
        xcfg = ExtractorConfig(encoder=asdict(model.config), tag_labels=list(labels), doc_types=list(doc_types),
                               link=True, max_len=mcfg.max_len)
        return model, xcfg, vocab
    vocab = Tokenizer.from_dir(None)   # the from-scratch vocabulary: PP-OCR's dictionary + specials
    enc = {**asdict(EncoderConfig.preset(mcfg.preset)), **mcfg.encoder,
           "vocab_size": vocab.vocab_size, "max_position": mcfg.max_len}
    xcfg = ExtractorConfig(encoder=enc, tag_labels=list(labels), doc_types=list(doc_types), link=True,
                           max_len=mcfg.max_len)
    model = xcfg.build()
    if mcfg.warm_start:
        from training.warm_start import warm_start
        try:
            report = warm_start(model, list(labels), list(doc_types), vocab.vocab, mcfg.warm_start)
        except (OSError, KeyError, ValueError) as exc:
            raise RefusedError(f"model.warm_start {mcfg.warm_start}: {exc}") from exc
        print(report.summary())
    return model, xcfg, vocab


def make_step(model, lr_sched, cfg: TrainConfig, pipe: dict):
    """The training step: the pipeline engine over the model's blocks (one stage is its degenerate
    case) with one AdamW per stage and global-norm clipping across stages. Returns (step, description);
    a bad combination of pipeline settings raises ConfigError saying which flag to change."""
    from training.step import EngineStep, extractor_loss
    step = EngineStep(model.blocks(), extractor_loss, lr_sched, pipe, weight_decay=cfg.train.weight_decay,
                      clip_norm=1.0, batch_size=cfg.train.batch_size)
    return step, step.how


def to_tensors(inputs: dict, labels: dict) -> tuple[tuple, tuple]:
    """collate's arrays -> (inputs, labels) as the engine takes them (training/step.py)."""
    from training.step import extractor_batch
    return extractor_batch(inputs, labels)


# --- the run -----------------------------------------------------------------------------------------

def train(cfg: TrainConfig | dict, out: Path, work: Path | None = None, resume: bool = False,
          command: str = "", max_minutes: float | None = None) -> Path:
    """Train per `cfg` (a TrainConfig, or a dict read strictly into one); write the model directory
    `out`. Returns `out`."""
    if not isinstance(cfg, TrainConfig):
        cfg = TrainConfig.from_dict(cfg)
    check_init_from(cfg)
    seed = cfg.seed
    random.seed(seed)
    np.random.seed(seed)
    paddle.seed(seed)
    work = Path(work or out.parent / (out.name + "_work"))
    work.mkdir(parents=True, exist_ok=True)
    tcfg, data = cfg.train, cfg.data

    pipe = check_pipeline(cfg.pipeline.as_dict(), batch_size=tcfg.batch_size)
    # one process per stage: the lead generates (and OCRs) the corpus, the others read what it wrote
    train_recs, test_recs = lead_first(lambda: build_corpus(cfg, work), pipe)
    doc_types = sorted({str(r.get("doc_type")) for r in train_recs + test_recs})
    keys, _ = schema_field_keys([d for d in doc_types if _has_schema(d)])
    labels = tag_labels(keys)
    tag_index = {t: i for i, t in enumerate(labels)}
    type_index = {d: i for i, d in enumerate(doc_types)}
    model, xcfg, vocab = build_model(cfg, labels, doc_types)

    pages: list[TaggedPage] = [gt_lines(r) for r in train_recs]
    n_ocr = data.real_ocr_pages
    if n_ocr:
        rng = random.Random(seed)
        chosen = rng.sample(train_recs, min(n_ocr, len(train_recs)))
        fold_ocr_shards(work)
        ocr = lead_first(lambda: ocr_records(chosen, work / "ocr_train.jsonl"), pipe)
        # every training page already in the OCR cache counts too (an earlier or background OCR pass):
        # real OCR is the scarce, valuable part of the mix
        picked = {_rid(r) for r in chosen}
        chosen += [r for r in train_recs if _rid(r) in ocr and _rid(r) not in picked]
        # real OCR pages are few: show them more often
        pages += [ocr_lines(r, ocr[_rid(r)]) for r in chosen if _rid(r) in ocr] * data.real_ocr_repeat
        n_ocr = sum(_rid(r) in ocr for r in chosen)

    steps = tcfg.steps
    sched = lr_schedule(tcfg.lr, steps, tcfg.warmup)
    step_fn, how = make_step(model, sched, cfg, pipe)

    ckpt = CheckpointSlots(work / "checkpoint")       # the newest two; a torn newest falls back to the older
    state = (resume and resume_from(step_fn, ckpt, sched, steps, "training", model)) or RunState()
    dataset = TrainingSet(pages, vocab, tag_index, type_index, xcfg.max_len, cfg.noise, seed + state.step)
    bs = tcfg.batch_size
    batches: list = []

    def next_batch():
        nonlocal batches
        if not batches:
            batches = dataset.batches(bs, dataset.epoch())
        batch = batches.pop()
        batch = batch[:step_fn.usable_rows(len(batch))]     # the last, short batch of an epoch
        return to_tensors(*collate(batch)) if batch else None

    deadline = time.time() + 60 * max_minutes if max_minutes else None
    state = run(step_fn, next_batch, sched, ckpt, steps, tcfg.checkpoint_every, state, "training",
                deadline=deadline)

    step_fn.gather(ckpt.root / "gathered")    # one process per stage: the lead collects every stage's weights
    if not step_fn.lead:
        return out
    write_model_dir(model, xcfg, vocab, out)
    plot_losses(state.losses, out / "loss.png")
    write_provenance(out, {
        "command": command, "config": cfg.to_dict(), "seed": seed, "git_commit": git_commit(),
        "train_pages": len(train_recs), "real_ocr_pages": n_ocr, "heldout_pages": len(test_recs),
        "heldout_layouts": sorted({f"{r.get('doc_type')}/{r.get('layout')}" for r in test_recs}),
        "train_layouts": sorted({f"{r.get('doc_type')}/{r.get('layout')}" for r in train_recs}),
        "steps": state.step, "step_function": how, "resumed_at_steps": state.resumed_at,
        "final_loss": float(np.mean(state.losses[-50:])) if state.losses else None,
        "work_dir": str(work)})
    return out


def _has_schema(name: str) -> bool:
    from data.schemas import list_schemas
    return name in list_schemas()


def plot_losses(losses: list[float], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=80)
    ax.plot(losses, lw=0.6, alpha=0.4, label="step")
    k = max(1, len(losses) // 50)
    if len(losses) >= k:
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(k - 1, len(losses)), smooth, lw=1.5, label=f"mean of {k}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
