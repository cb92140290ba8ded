"""The model directory: the one module that writes, reads, lists and describes it, in one format.

The bundled models/default is the reference of the format:

    config.json           `ExtractorConfig`: encoder (EncoderConfig fields), tag_labels, doc_types, link, max_len
    model_state.pdparams  weights of the encoder and its extraction head (float16 or float32)
    vocab.txt             the vocabulary the token ids of the weights refer to
    labels.json           {"tags", "doc_types"}: the label maps, for tools that read no config
    schemas/<type>.yaml   the schema of each document type the head was trained on
    metrics.json, provenance.json, loss.png, README.md    optional, written by training
    pair_scorer.json      optional: the learned scorer of form key-value candidates and the learned piece
                          roles ("roles", models/extraction/form_roles.py), fitted on these weights
                          (`python -m training pair-scorer --model DIR`; read by `read_pair_scorer`)

`write_model_dir` writes it (each file atomically, config.json last, so a directory whose write was
killed has no config.json and is never taken for a model), `read_model_dir` builds the model from it
with every weight checked against the config, `find_model_dirs` lists directories for the UI's picker
and `describe_model_dir` says what one holds without loading weights. `is_model_dir` accepts exactly
the directories `read_model_dir` can read (save a torn weight file): a pretrained BERT/ERNIE checkpoint
also has config.json, weights and vocab.txt, but it is an encoder to start training from
(`models.checkpoint.load_pretrained`), not a model that extracts, and `model_dir_problem` says so.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import paddle

from data.atomic import fsync_path, write_text_atomic
from models.encoder import Encoder, EncoderConfig
from models.heads import ExtractionHead, HeadConfig
from models.tokenizer import Tokenizer

if TYPE_CHECKING:
    from data.schemas import Schema
    from models.extraction.pair_scorer import PairScorer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default"
REQUIRED_FILES = ("config.json", "model_state.pdparams", "vocab.txt")
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
    missing = [name for name in REQUIRED_FILES if not (p / name).is_file()]
    if missing:
        return f"{p} lacks {', '.join(missing)}"
    try:
        ExtractorConfig.load(p)
    except ModelDirError as exc:
        return str(exc)
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
    """Model directories under `root` (itself included; default: models/), the bundled default first."""
    r = Path(root) if root is not None else DEFAULT_MODEL_DIR.parent
    found = [r.resolve()] if is_model_dir(r) else []
    if r.is_dir():
        found += sorted(p.parent.resolve() for p in r.rglob("config.json")
                        if p.parent.resolve() != r.resolve() and is_model_dir(p.parent))
    found = list(dict.fromkeys(found))
    default = DEFAULT_MODEL_DIR.resolve()
    return sorted(found, key=lambda p: (p != default, str(p)))


# --- writing --------------------------------------------------------------------------------------

def _save_state_atomic(state: dict, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        paddle.save(state, tmp)
        fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


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
    d.mkdir(parents=True, exist_ok=True)
    write_text_atomic(d / "vocab.txt", "\n".join(tokens) + "\n")
    state = {k: (v.astype("float16") if half and v.dtype == paddle.float32 else v)
             for k, v in model.state_dict().items()}
    _save_state_atomic(state, d / "model_state.pdparams")
    write_text_atomic(d / "labels.json", json.dumps({"tags": cfg.tag_labels, "doc_types": cfg.doc_types},
                                                    ensure_ascii=False, indent=1))
    (d / "schemas").mkdir(exist_ok=True)
    for name in cfg.doc_types:
        src = (schemas or {}).get(name) or SCHEMA_DIR / f"{name}.yaml"
        if Path(src).is_file():
            write_text_atomic(d / "schemas" / f"{name}.yaml", Path(src).read_text(encoding="utf-8"))
    cfg.save(d)                                          # last: only a whole directory has a config
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
    try:
        state = paddle.load(str(d / "model_state.pdparams"), return_numpy=True)
    except Exception as exc:           # whatever a torn or foreign pickle raises
        raise ModelDirError(f"{d / 'model_state.pdparams'} is unreadable ({exc}); re-export the model") from exc
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


def model_schema(model_dir: str | Path | None, doc_type: str) -> "Schema":
    """The schema of `doc_type` as the model carries it (MODEL/schemas/), else the repo's data/schemas
    file (no model, or a directory written before models carried their schemas); SchemaError when
    neither exists. The model's copy wins: a retrained type's fields are those it was trained on."""
    from data.schemas import load_schema, load_schema_file
    own = Path(model_dir) / "schemas" / f"{doc_type}.yaml" if model_dir is not None else None
    return load_schema_file(own) if own is not None and own.is_file() else load_schema(doc_type)


def weights_digest(model_dir: str | Path) -> str:
    """sha256 of the weights file: what a pair scorer records as the weights it was fitted on."""
    import hashlib
    h = hashlib.sha256()
    with open(Path(model_dir) / "model_state.pdparams", "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_pair_scorer(model_dir: str | Path | None) -> "PairScorer | None":
    """The directory's learned form-pair scorer, or None: none there (the hand-weighted ranking decodes),
    or one fitted on other weights (a retrained model's stale scorer: its tag and link features would
    mislead it; retrain it with `python -m training pair-scorer --model DIR`). ModelDirError for a file
    that cannot be read or names features the decoder does not compute."""
    from models.extraction.forms import FEATURES
    from models.extraction.pair_scorer import PairScorerError, load_pair_scorer
    try:
        scorer = load_pair_scorer(model_dir, list(FEATURES))
    except PairScorerError as exc:
        raise ModelDirError(str(exc)) from exc
    if scorer is None or model_dir is None:
        return None
    fitted = scorer.about.get("weights_sha256")
    if fitted and (Path(model_dir) / "model_state.pdparams").is_file() and fitted != weights_digest(model_dir):
        return None
    return scorer


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


def _json_or_none(path: Path) -> dict | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def describe_model_dir(path: str | Path) -> ModelInfo:
    """A `ModelInfo` of a model directory; ModelDirError when it is not one."""
    d = check_model_dir(path)
    cfg = ExtractorConfig.load(d)
    metrics = _json_or_none(d / "metrics.json") or {}
    overall = metrics.get("overall_field")
    prov = _json_or_none(d / "provenance.json") or {}
    return ModelInfo(
        path=d, doc_types=list(cfg.doc_types), n_tags=len(cfg.tag_labels),
        hidden_size=int(cfg.encoder.get("hidden_size", 0)), num_layers=int(cfg.encoder.get("num_layers", 0)),
        vocab_size=int(cfg.encoder.get("vocab_size", 0)), max_len=cfg.max_len,
        weights_mb=round((d / "model_state.pdparams").stat().st_size / 2 ** 20, 2),
        schemas=sorted(t for t in cfg.doc_types if (d / "schemas" / f"{t}.yaml").is_file()),
        field_f1=overall.get("f1") if isinstance(overall, dict) else None,
        trained_by=prov.get("command") if isinstance(prov.get("command"), str) else None)
