"""The model directory: the one module that writes, reads, lists and describes it, in one format.

The bundled models/default is the reference of the format:

    config.json              `ExtractorConfig`: encoder (EncoderConfig fields), tag_labels, doc_types, link, max_len
    model_state.safetensors  weights of the encoder and its extraction head (float16 or float32), Paddle layout
    vocab.txt             the vocabulary the token ids of the weights refer to
    labels.json           {"tags", "doc_types"}: the label maps, for tools that read no config
    schemas/<type>.yaml   the schema of each document type the head was trained on
    metrics.json, provenance.json, loss.png, README.md    optional, written by training
    pair_scorer.json      optional: the learned scorer of form key-value candidates and the learned piece
                          roles ("roles", models/extraction/form_roles.py), fitted on these weights
                          (`python -m training pair-scorer --model DIR`; read by `read_pair_scorer`)
    field_calibration.json  optional: the learned field confidence, P(a value shown is right), fitted on these
                          weights' readings of held-out pages (`python -m bench.review_bench --fit`; read by
                          `read_field_calibration`; without it a field's confidence is the model's own)

Weights are safetensors: a format that holds tensors and nothing else, so a model folder someone hands
over cannot run code when it is loaded or listed. (Hugging Face calls its own weights `model.safetensors`;
ours keep the `model_state` stem of the Paddle layout, so models/checkpoint.py never mistakes one for the
other.) A directory written before that holds `model_state.pdparams`, a pickle: it is read only through
models/checkpoint.py's restricted unpickler (a file referring to anything but arrays is refused, nothing of
it run, and such a directory is not listed), and converted to safetensors on first load
(`convert_model_dir`, or `python -m training convert-weights DIR`), with the pair scorer's record of the
weights it was fitted on carried over.

This module is the one owner of every file in the directory: training, retraining, the pair scorer's
fitting and the benchmarks read and write provenance.json, metrics.json and pair_scorer.json through
`read_provenance` / `write_provenance`, `read_metrics` / `write_metrics` and `read_pair_scorer` /
`write_pair_scorer` (writes atomic; a file that is there but unreadable is a ModelDirError saying which and
why, an absent one None), so the format of each file is decided in one place
(tests/test_model_dir_owner.py checks that no other module names them).

`write_model_dir` writes it into a hidden sibling folder and renames that into place when every file is
there (a write killed half way leaves only the hidden folder, which no listing shows), `read_model_dir`
builds the model from it with every weight checked against the config, `find_model_dirs` lists
directories for the UI's picker and `describe_model_dir` says what one holds without loading weights.
`is_model_dir` accepts exactly the directories `read_model_dir` can read (save a torn weight file): a
pretrained BERT/ERNIE checkpoint also has config.json, weights and vocab.txt, but it is an encoder to start
training from (`models.checkpoint.load_pretrained`), not a model that extracts, and `model_dir_problem`
says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import paddle

from data.atomic import fsync_path, new_file_mode, write_text_atomic
from models.checkpoint import PADDLE_SAFETENSORS, UnsafePickleError, load_paddle_pickle, paddle_pickle_problem
from models.encoder import Encoder, EncoderConfig
from models.heads import ExtractionHead, HeadConfig
from models.tokenizer import Tokenizer

if TYPE_CHECKING:
    from data.schemas import Schema
    from models.calibration import Calibration
    from models.extraction.pair_scorer import PairScorer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default"
WEIGHTS = PADDLE_SAFETENSORS                  # "model_state.safetensors"
LEGACY_WEIGHTS = "model_state.pdparams"       # a pickle: read restricted, converted to WEIGHTS on load
REQUIRED_FILES = ("config.json", WEIGHTS, "vocab.txt")
PROVENANCE = "provenance.json"                # how the weights were trained: command, config, seed, layouts
METRICS = "metrics.json"                      # the held-out evaluation report of training or retraining
PAIR_SCORER = "pair_scorer.json"              # the learned form pair scorer and piece roles
FIELD_CALIBRATION = "field_calibration.json"  # the learned field confidence (models/calibration.py)
TRAIN_HINT = ("train one with `python -m training train --config configs/default.yaml --out DIR` "
              "or run scripts/train_default.sh")


class ModelDirError(FileNotFoundError):
    """A model directory that is missing, incomplete or not ours; the message says how to get a good one."""


@dataclass
class ExtractorConfig:
    """config.json of a model directory: how to build the encoder and its head."""
    encoder: dict
    tag_labels: list[str]
    doc_types: list[str]
    link: bool = True
    max_len: int = 512

    def build(self) -> Encoder:
        enc = EncoderConfig(**self.encoder)
        head = ExtractionHead(HeadConfig(hidden_size=enc.hidden_size, tag_labels=list(self.tag_labels),
                                         doc_types=list(self.doc_types), link=self.link))
        return Encoder(enc, head)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1)

    def save(self, model_dir: str | Path) -> None:
        """config.json of `model_dir` (atomically); `write_model_dir` writes it after everything else."""
        write_text_atomic(Path(model_dir) / "config.json", self.to_json())

    @classmethod
    def from_dict(cls, raw: Any, where: str = "config.json") -> "ExtractorConfig":
        """Check the shape of a parsed config.json; ModelDirError naming what is wrong otherwise."""
        if not isinstance(raw, dict):
            raise ModelDirError(f"{where} does not hold a JSON object")
        if "encoder" not in raw or "tag_labels" not in raw:
            if "hidden_size" in raw or "init_args" in raw or "architectures" in raw:
                raise ModelDirError(f"{where} describes a pretrained BERT/ERNIE checkpoint, not an extraction "
                                    "model: start training from it (`python -m training train --init-from DIR`)")
            lacks = [k for k in ("encoder", "tag_labels") if k not in raw]
            raise ModelDirError(f"{where} lacks {' and '.join(lacks)}; it was not written by "
                                "models.model_dir.write_model_dir")
        known = {f.name for f in fields(EncoderConfig)}
        encoder = raw["encoder"]
        if not isinstance(encoder, dict) or set(encoder) - known:
            extra = sorted(set(encoder) - known) if isinstance(encoder, dict) else encoder
            raise ModelDirError(f"{where}: encoder settings {extra!r} are not EncoderConfig fields")
        tags, types = raw.get("tag_labels"), raw.get("doc_types", [])
        if not (isinstance(tags, list) and tags and tags[0] == "O" and all(isinstance(t, str) for t in tags)):
            raise ModelDirError(f"{where}: tag_labels must be a list of tags starting with 'O'")
        if not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
            raise ModelDirError(f"{where}: doc_types must be a list of names")
        own = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in own})

    @classmethod
    def load(cls, model_dir: str | Path) -> "ExtractorConfig":
        path = Path(model_dir) / "config.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ModelDirError(f"{model_dir} has no config.json; {TRAIN_HINT}") from exc
        except (OSError, ValueError) as exc:
            raise ModelDirError(f"{path} is unreadable ({exc})") from exc
        return cls.from_dict(raw, str(path))


# --- checks and listing -------------------------------------------------------------------------

def model_dir_problem(path: str | Path) -> str | None:
    """Why `path` is not a model directory `read_model_dir` can load, or None when it is one.
    Reads config.json only (the weights are checked when they are read)."""
    p = Path(path)
    if not p.is_dir():
        return f"{p} is not a directory"
    legacy = not (p / WEIGHTS).is_file() and (p / LEGACY_WEIGHTS).is_file()
    missing = [name for name in REQUIRED_FILES if not (p / name).is_file() and not (name == WEIGHTS and legacy)]
    if missing:
        return f"{p} lacks {', '.join(missing)}"
    try:
        ExtractorConfig.load(p)
    except ModelDirError as exc:
        return str(exc)
    if legacy:                   # a pickle: refused here already when it refers to anything but arrays
        return paddle_pickle_problem(p / LEGACY_WEIGHTS)
    return None


def is_model_dir(path: str | Path) -> bool:
    return model_dir_problem(path) is None


def check_model_dir(path: str | Path) -> Path:
    """`path` when it is a model directory, else ModelDirError with the reason and how to get one."""
    problem = model_dir_problem(path)
    if problem is not None:
        raise ModelDirError(f"{path} is not a model directory ({problem}); {TRAIN_HINT}")
    return Path(path)


def find_model_dirs(root: str | Path | None = None) -> list[Path]:
    """Model directories under `root` (itself included; default: models/), the bundled default first.
    Hidden folders below `root` are skipped: a write in progress or killed (`write_model_dir`'s staging
    folder), retrain's work folders and registry versions being exported are no models to offer."""
    r = Path(root) if root is not None else DEFAULT_MODEL_DIR.parent
    found = [r.resolve()] if is_model_dir(r) else []
    if r.is_dir():
        found += sorted(p.parent.resolve() for p in r.rglob("config.json")
                        if p.parent.resolve() != r.resolve()
                        and not any(part.startswith(".") for part in p.parent.relative_to(r).parts)
                        and is_model_dir(p.parent))
    found = list(dict.fromkeys(found))
    default = DEFAULT_MODEL_DIR.resolve()
    return sorted(found, key=lambda p: (p != default, str(p)))


# --- writing --------------------------------------------------------------------------------------

def save_weights(state: dict[str, np.ndarray], path: Path) -> None:
    """{name: array} as safetensors at `path` (written in place: callers write into a staging folder or a
    temporary name), fsynced."""
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v) for k, v in state.items()}, str(path), metadata={"format": "np"})
    os.chmod(path, new_file_mode())            # safetensors creates 0600; a model is read by services too
    fsync_path(path)


def load_weights(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file
    return load_file(str(path))


def staging_dir(final: Path) -> Path:
    """A new, empty hidden sibling of `final` to build it in (the mode a plain mkdir gives, umask honoured);
    no listing looks inside hidden folders."""
    final.parent.mkdir(parents=True, exist_ok=True)
    while True:
        stage = final.parent / f".{final.name}.partial-{os.getpid()}-{secrets.token_hex(3)}"
        try:
            stage.mkdir()
            return stage
        except FileExistsError:
            continue


def publish_dir(stage: Path, final: Path) -> Path:
    """Put the complete folder `stage` in place as `final`: one rename when `final` is absent or empty (so a
    reader sees nothing, then everything); into a folder that already holds files, file by file with
    config.json last (a model directory counts as one only once its config is there)."""
    for f in stage.rglob("*"):
        if f.is_file():
            fsync_path(f)
    fsync_path(stage)
    if final.is_dir() and not final.is_symlink() and not any(final.iterdir()):
        os.replace(stage, final)                  # rename(2) replaces an empty directory atomically
    elif not final.exists():
        os.rename(stage, final)
    else:
        for f in sorted(stage.rglob("*"), key=lambda f: (f.name == "config.json", len(f.parts))):
            if f.is_file():
                dest = final / f.relative_to(stage)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(f, dest)
        shutil.rmtree(stage, ignore_errors=True)
    fsync_path(final.parent)
    return final


def write_model_dir(model: Encoder, cfg: ExtractorConfig, vocab: Tokenizer | list[str], out: str | Path,
                    half: bool = True, schemas: dict[str, Path] | None = None) -> Path:
    """Write a complete model directory (module doc); returns it.

    `half` stores float weights as float16 (half the size, the same tags; read back as float32).
    `schemas` maps a doc type to its schema file; a type not in it gets the repo's data/schemas file."""
    from data.schemas import SCHEMA_DIR
    tokens = list(vocab.vocab if isinstance(vocab, Tokenizer) else vocab)
    if len(tokens) != int(cfg.encoder.get("vocab_size", len(tokens))):
        raise ValueError(f"vocab has {len(tokens)} tokens but the encoder expects {cfg.encoder['vocab_size']}; "
                         "save the vocabulary the model was built with")
    d = Path(out)
    stage = staging_dir(d)
    try:
        (stage / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
        state = {k: (v.astype("float16") if half and v.dtype == paddle.float32 else v).numpy()
                 for k, v in model.state_dict().items()}
        save_weights(state, stage / WEIGHTS)
        (stage / "labels.json").write_text(json.dumps({"tags": cfg.tag_labels, "doc_types": cfg.doc_types},
                                                      ensure_ascii=False, indent=1), encoding="utf-8")
        (stage / "schemas").mkdir()
        for name in cfg.doc_types:
            src = (schemas or {}).get(name) or SCHEMA_DIR / f"{name}.yaml"
            if Path(src).is_file():
                (stage / "schemas" / f"{name}.yaml").write_text(Path(src).read_text(encoding="utf-8"),
                                                                encoding="utf-8")
        (stage / "config.json").write_text(cfg.to_json(), encoding="utf-8")
        publish_dir(stage, d)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return d


# --- reading --------------------------------------------------------------------------------------

def read_model_dir(path: str | Path) -> tuple[Encoder, ExtractorConfig, Tokenizer]:
    """(model in eval mode, config, tokenizer) from a model directory; ModelDirError when it is not one
    or its weights do not fit its config (every weight is checked, none silently skipped)."""
    d = check_model_dir(path)
    cfg = ExtractorConfig.load(d)
    try:
        vocab = Tokenizer.from_dir(d)
    except ValueError as exc:
        raise ModelDirError(f"{d / 'vocab.txt'}: {exc}") from exc
    if vocab.vocab_size != int(cfg.encoder.get("vocab_size", vocab.vocab_size)):
        raise ModelDirError(f"{d}: vocab.txt has {vocab.vocab_size} tokens, config.json says "
                            f"{cfg.encoder['vocab_size']}; copy the vocab.txt the model was trained with")
    try:
        model = cfg.build()
    except (TypeError, ValueError) as exc:
        raise ModelDirError(f"{d / 'config.json'}: cannot build the model ({exc})") from exc
    state = read_model_weights(d)
    ours = model.state_dict()
    missing, extra = sorted(set(ours) - set(state)), sorted(set(state) - set(ours))
    bad = [f"{k} {list(np.shape(v))} vs {list(ours[k].shape)}" for k, v in state.items()
           if k in ours and list(np.shape(v)) != list(ours[k].shape)]
    if missing or extra or bad:
        raise ModelDirError(f"{d}: the weights do not fit config.json (missing {missing[:5]}, unexpected "
                            f"{extra[:5]}, shapes {bad[:5]}); re-export the model")
    for k, v in state.items():
        ours[k].set_value(paddle.to_tensor(np.asarray(v), dtype=ours[k].dtype))
    model.eval()
    return model, cfg, vocab


def read_vocab(path: str | Path) -> list[str]:
    """vocab.txt of a model directory as its exact lines (a token may be a symbol, ids are line numbers),
    without the special-token checks of `Tokenizer`: what warm starting matches rows by."""
    lines = (Path(path) / "vocab.txt").read_text(encoding="utf-8").rstrip("\n").split("\n")
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def read_model_weights(path: str | Path) -> dict[str, np.ndarray]:
    """{name: array} of model directory `path`: its safetensors, else (an older directory) its pickle read
    restricted and converted (`convert_model_dir`; where the directory cannot be written, read as is).
    ModelDirError for a pickle that refers to anything but arrays, or an unreadable file."""
    d = Path(path)
    if not (d / WEIGHTS).is_file() and (d / LEGACY_WEIGHTS).is_file():
        try:
            print(convert_model_dir(d), file=sys.stderr)
        except OSError as exc:          # a read-only directory: use the weights, say how to convert later
            state = _read_legacy(d)
            print(f"{d}: read the old pickle weights {LEGACY_WEIGHTS} through the restricted reader; could not "
                  f"convert them to {WEIGHTS} ({exc}); run `python -m training convert-weights {d}` where the "
                  f"folder is writable", file=sys.stderr)
            return state
    try:
        return load_weights(d / WEIGHTS)
    except Exception as exc:           # whatever a torn or foreign file raises
        raise ModelDirError(f"{d / WEIGHTS} is unreadable ({exc}); re-export the model") from exc


def _read_legacy(d: Path) -> dict[str, np.ndarray]:
    path = d / LEGACY_WEIGHTS
    try:
        state = load_paddle_pickle(path, return_numpy=True)
    except UnsafePickleError as exc:
        raise ModelDirError(str(exc)) from exc
    except Exception as exc:           # whatever a torn pickle raises
        raise ModelDirError(f"{path} is unreadable ({exc}); re-export the model") from exc
    if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise ModelDirError(f"{path} does not hold a state dict of arrays; re-export the model")
    return state


def convert_model_dir(path: str | Path) -> str:
    """Convert an older model directory's `model_state.pdparams` (read by the restricted unpickler: a file
    that refers to anything but arrays is refused, ModelDirError) to `model_state.safetensors`, the same
    tensors bit for bit, and delete the pickle; a pair scorer fitted on those weights has its record of
    them moved to the new file, so it stays in use. Returns what was done, for the user; OSError when the
    directory cannot be written (nothing changed then)."""
    d = Path(path)
    legacy, new = d / LEGACY_WEIGHTS, d / WEIGHTS
    if new.is_file():
        return f"{d} already holds {WEIGHTS}; nothing to convert"
    if not legacy.is_file():
        raise ModelDirError(f"{d} holds neither {WEIGHTS} nor {LEGACY_WEIGHTS}")
    state = _read_legacy(d)
    old_digest = _file_digest(legacy)
    tmp = d / f".{WEIGHTS}.{os.getpid()}-{secrets.token_hex(3)}.tmp"
    try:
        save_weights(state, tmp)
        back = load_weights(tmp)
        if back.keys() != state.keys() or any(back[k].dtype != v.dtype or not np.array_equal(back[k], v)
                                              for k, v in state.items()):
            raise OSError(f"{tmp} does not read back as the weights written")
        os.replace(tmp, new)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(d)
    kept = _move_scorer_digest(d, old_digest, _file_digest(new))
    legacy.unlink(missing_ok=True)
    return (f"{d}: converted the old pickle weights {LEGACY_WEIGHTS} to {WEIGHTS} (the same {len(state)} "
            f"tensors; the pickle was deleted, safetensors cannot carry code)" + (kept and f"; {kept}"))


def _move_scorer_digest(d: Path, old: str, new: str) -> str:
    """pair_scorer.json records the digest of the weights it was fitted on: point it at the converted file
    when it named the pickle (only the digest string changes, the rest of the file stays byte for byte)."""
    path = d / PAIR_SCORER
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    if f'"{old}"' not in text:
        return ""
    write_text_atomic(path, text.replace(f'"{old}"', f'"{new}"'))
    return f"{PAIR_SCORER} now names the converted weights"


def model_schema(model_dir: str | Path | None, doc_type: str) -> "Schema":
    """The schema of `doc_type` as the model carries it (MODEL/schemas/), else the repo's data/schemas
    file (no model, or a directory written before models carried their schemas); SchemaError when
    neither exists. The model's copy wins: a retrained type's fields are those it was trained on."""
    from data.schemas import load_schema, load_schema_file
    own = Path(model_dir) / "schemas" / f"{doc_type}.yaml" if model_dir is not None else None
    return load_schema_file(own) if own is not None and own.is_file() else load_schema(doc_type)


def weights_file(model_dir: str | Path) -> Path:
    """The weights file of a model directory: its safetensors, or an older directory's pickle."""
    d = Path(model_dir)
    return d / WEIGHTS if (d / WEIGHTS).is_file() or not (d / LEGACY_WEIGHTS).is_file() else d / LEGACY_WEIGHTS


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def weights_digest(model_dir: str | Path) -> str:
    """sha256 of the weights file: what a pair scorer records as the weights it was fitted on
    (`convert_model_dir` moves the record from the pickle's digest to the safetensors')."""
    return _file_digest(weights_file(model_dir))


def read_pair_scorer(model_dir: str | Path | None) -> "PairScorer | None":
    """The directory's learned form-pair scorer, or None: none there (the hand-weighted ranking decodes),
    or one fitted on other weights (a retrained model's stale scorer: its tag and link features would
    mislead it; retrain it with `python -m training pair-scorer --model DIR`). ModelDirError for a file
    that cannot be read or names features the decoder does not compute."""
    from models.extraction.forms import FEATURES
    from models.extraction.pair_scorer import PairScorer, PairScorerError
    raw = read_pair_scorer_record(model_dir) if model_dir is not None else None
    if raw is None or model_dir is None:
        return None
    try:
        scorer = PairScorer.from_dict(raw, list(FEATURES), str(Path(model_dir) / PAIR_SCORER))
    except PairScorerError as exc:
        raise ModelDirError(str(exc)) from exc
    fitted = scorer.about.get("weights_sha256")
    if fitted and weights_file(model_dir).is_file() and fitted != weights_digest(model_dir):
        return None
    return scorer


def read_pair_scorer_record(model_dir: str | Path) -> dict | None:
    """pair_scorer.json as stored (its "mode", whether it has "roles", its record of the weights), without
    checking it against the decoder's features or the weights: what a retrain needs to refit the new
    weights' scorer as the base's was. None when there is none; ModelDirError when it is unreadable."""
    return _read_record(model_dir, PAIR_SCORER)


def write_pair_scorer(model_dir: str | Path, scorer: "PairScorer") -> Path:
    """Save `scorer` as the directory's pair_scorer.json (atomically); returns the file."""
    path = Path(model_dir) / PAIR_SCORER
    scorer.save(path)
    return path


def read_field_calibration(model_dir: str | Path | None) -> "Calibration | None":
    """The directory's field calibration (models/calibration.py), or None: none there, or one fitted on other
    weights (a retrained model's stale one: the model's probabilities are among its inputs, so it would
    mislead; fit it again with `python -m bench.review_bench --fit`). Either way a field's confidence is then
    the model's own probability, as before calibrations existed. ModelDirError for a file that cannot be read
    or names evidence this version does not compute."""
    from models.calibration import Calibration
    raw = _read_record(model_dir, FIELD_CALIBRATION) if model_dir is not None else None
    if raw is None or model_dir is None:
        return None
    try:
        calibration = Calibration.from_dict(raw, str(Path(model_dir) / FIELD_CALIBRATION))
    except ValueError as exc:
        raise ModelDirError(f"{exc}; fit it again with `python -m bench.review_bench --fit` (or delete it)") from exc
    fitted = calibration.about.get("weights_sha256")
    if not fitted or not weights_file(model_dir).is_file() or fitted != weights_digest(model_dir):
        return None
    return calibration


def write_field_calibration(model_dir: str | Path, calibration: "Calibration") -> Path:
    """Save `calibration` as the directory's field_calibration.json (atomically), recording the digest of the
    weights it was fitted on (`read_field_calibration` ignores it once they change); returns the file."""
    record = calibration.to_dict()
    record["about"] = {**record["about"], "weights_sha256": weights_digest(model_dir)}
    return _write_record(model_dir, FIELD_CALIBRATION, record)


# --- the small JSON records: provenance and metrics -----------------------------------------------

def _read_record(model_dir: str | Path, name: str) -> dict | None:
    """The JSON object in `model_dir`/`name`; None when the file is absent; ModelDirError naming the file
    and what is wrong when it cannot be read, is not JSON (a write torn by an older, non-atomic version)
    or holds something other than an object."""
    path = Path(model_dir) / name
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:             # ValueError: not JSON, or not UTF-8
        raise ModelDirError(f"{path} is unreadable ({exc}); write it again (or delete it)") from exc
    if not isinstance(raw, dict):
        raise ModelDirError(f"{path} does not hold a JSON object; write it again (or delete it)")
    return raw


def _write_record(model_dir: str | Path, name: str, record: dict) -> Path:
    """`record` as indented UTF-8 JSON (Chinese kept readable) at `model_dir`/`name`, atomically: a reader
    sees the old file or the new one, never half of it."""
    path = Path(model_dir) / name
    write_text_atomic(path, json.dumps(record, ensure_ascii=False, indent=1))
    return path


def read_provenance(model_dir: str | Path) -> dict | None:
    """provenance.json: how the weights were trained (`write_provenance`); None for a directory without
    one (a retrained version, a hand-made directory); ModelDirError when it is unreadable."""
    return _read_record(model_dir, PROVENANCE)


def write_provenance(model_dir: str | Path, record: dict) -> Path:
    """Write provenance.json: the training run's command, config (`TrainConfig.to_dict`), seed, git commit,
    page counts, `train_layouts` and `heldout_layouts` ("doc_type/layout"), steps and final loss. Retraining
    reads `config` and `heldout_layouts`, the pair scorer `train_layouts`, the benchmarks the layouts."""
    return _write_record(model_dir, PROVENANCE, record)


def read_metrics(model_dir: str | Path) -> dict | None:
    """metrics.json: the held-out evaluation of the weights (training/evaluate.py's report, with
    "overall_field"); None when there is none; ModelDirError when it is unreadable."""
    return _read_record(model_dir, METRICS)


def write_metrics(model_dir: str | Path, report: dict) -> Path:
    """Write metrics.json: an evaluation report (`Report.as_dict()`, plus what it was measured on)."""
    return _write_record(model_dir, METRICS, report)


def _record_or_none(read: Any, model_dir: Path) -> dict:
    """For describing only: a missing or unreadable record leaves its line of the summary out."""
    try:
        return read(model_dir) or {}
    except ModelDirError:
        return {}


# --- describing -----------------------------------------------------------------------------------

@dataclass
class ModelInfo:
    """What a model directory holds, read from its small JSON files (no weights loaded)."""
    path: Path
    doc_types: list[str]
    n_tags: int
    hidden_size: int
    num_layers: int
    vocab_size: int
    max_len: int
    weights_mb: float
    schemas: list[str]                     # the doc types whose schema file the directory carries
    field_f1: float | None = None          # metrics.json overall field F1 (held-out layouts)
    trained_by: str | None = None          # provenance.json command

    def summary(self) -> str:
        f1 = f", field F1 {self.field_f1:.3f}" if self.field_f1 is not None else ""
        return (f"{self.path.name}: {len(self.doc_types)} types ({', '.join(self.doc_types)}), "
                f"{self.num_layers}x{self.hidden_size} encoder, {self.weights_mb:.1f} MB{f1}")


def describe_model_dir(path: str | Path) -> ModelInfo:
    """A `ModelInfo` of a model directory; ModelDirError when it is not one."""
    d = check_model_dir(path)
    cfg = ExtractorConfig.load(d)
    metrics = _record_or_none(read_metrics, d)
    overall = metrics.get("overall_field")
    prov = _record_or_none(read_provenance, d)
    return ModelInfo(
        path=d, doc_types=list(cfg.doc_types), n_tags=len(cfg.tag_labels),
        hidden_size=int(cfg.encoder.get("hidden_size", 0)), num_layers=int(cfg.encoder.get("num_layers", 0)),
        vocab_size=int(cfg.encoder.get("vocab_size", 0)), max_len=cfg.max_len,
        weights_mb=round(weights_file(d).stat().st_size / 2 ** 20, 2),
        schemas=sorted(t for t in cfg.doc_types if (d / "schemas" / f"{t}.yaml").is_file()),
        field_f1=overall.get("f1") if isinstance(overall, dict) else None,
        trained_by=prov.get("command") if isinstance(prov.get("command"), str) else None)
