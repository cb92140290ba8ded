"""The training config: typed dataclasses, loaded strictly from YAML (configs/*.yaml).

    cfg = load_config("configs/default.yaml")      # TrainConfig; cfg.train.lr, cfg.data.types, ...
    cfg = TrainConfig.from_dict({"train": {"steps": 3}})    # unspecified keys keep the defaults

One set of defaults: the dataclass defaults below, which are the values the bundled model was trained
with (configs/default.yaml states them all; tests/test_train_config.py checks the two agree), except
`out`, so that a config without it never writes into the tracked models/default. A key the
dataclasses do not have is an error naming it and the nearest valid key (a typo such as `warmpu` used to
be ignored silently, training with the default instead); a value of the wrong type is an error too.
To add a setting, add a plain field to its section here (with the YAML value as its default).
"""
from __future__ import annotations

import difflib
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from training.errors import ConfigError
from training.noise import NoiseConfig

# every type the generator can draw; types it cannot draw yet are skipped with a warning
DEFAULT_TYPES = ["vat_invoice", "e_invoice", "id_card_front", "id_card_back", "receipt", "generic_form"]


BUNDLED_ENCODER = {"hidden_size": 192, "num_layers": 3, "num_heads": 4, "intermediate_size": 768, "dropout": 0.1}


@dataclass
class DataConfig:
    """Where the pages come from and how they are split."""
    types: list[str] = field(default_factory=lambda: list(DEFAULT_TYPES))
    pages_per_type: int = 160
    degrade: str = "mix"              # photo/scan degradations on the rendered images (what real OCR reads)
    heldout_layouts: float = 0.25     # share of each type's layouts held out whole for evaluation (retrain too)
    # layouts held out by name ("<doc_type>/<layout>"), replacing the share when given: a warm-started run
    # keeps its base's held-out layouts held out (else it would be scored on pages the base trained on)
    heldout_named: list[str] = field(default_factory=list)
    real_ocr_pages: int = 40          # training pages also read by real PP-OCR and labelled by alignment
    real_ocr_repeat: int = 4          # real OCR pages are few: each joins the mix this many times
    corpus: str | None = None         # a corpus (data/corpus.py format) instead of generating pages


@dataclass
class ModelConfig:
    """The encoder: a preset shape with per-field overrides, or a pretrained checkpoint (`init_from`)."""
    preset: str = "tiny"
    max_len: int = 256                # window length in characters; pages are cut into overlapping windows
    # overrides of the preset's EncoderConfig fields; the default is the bundled model's shape (a smaller
    # tiny) and belongs to the default preset: a config naming another preset without `encoder` gets none
    encoder: dict[str, Any] = field(default_factory=lambda: dict(BUNDLED_ENCODER))
    # a Chinese-BERT-wwm / ERNIE checkpoint directory (PaddleNLP or Hugging Face layout) to start the
    # encoder from; its config.json and vocab.txt then decide the shape and vocabulary (preset and
    # encoder are ignored)
    init_from: str | None = None
    # a model directory of ours (e.g. the previous bundled model) whose weights start this run, carried
    # over by token, tag and doc-type name (training/warm_start.py); vocabulary, tags and types may grow
    warm_start: str | None = None


@dataclass
class OptimConfig:
    """The `train:` section: steps, batch, AdamW and the LR schedule (training/loop.py `lr_schedule`)."""
    steps: int = 1800
    batch_size: int = 8
    lr: float = 0.001
    warmup: int = 30
    weight_decay: float = 0.01
    checkpoint_every: int = 50


@dataclass
class PipelineConfig:
    """How the model's blocks are cut and scheduled (training/step.py `check_pipeline` validates)."""
    stages: int = 1
    micro_batches: int = 1
    schedule: str = "1f1b"
    transport: str | None = None      # inprocess | dist; None: dist when started by the launcher

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class TrainConfig:
    """The whole config of `python -m training train`."""
    seed: int = 7
    # the one setting whose default is not configs/default.yaml's (models/default): a config that leaves
    # it out must not overwrite the tracked bundled model
    out: str = "runs/model"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: OptimConfig = field(default_factory=OptimConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None, source: str = "config") -> "TrainConfig":
        """Strictly: every key must be a field (else ConfigError naming it and the nearest valid one)."""
        raw = dict(raw or {})
        model = raw.get("model")
        if isinstance(model, dict) and model.get("preset", "tiny") != "tiny" and "encoder" not in model:
            raw["model"] = {**model, "encoder": {}}     # the default overrides are the tiny preset's
        return _build(cls, raw, "", source)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what provenance.json records and YAML writes)."""
        return asdict(self)


@dataclass(frozen=True)
class PretrainConfig:
    """Whole-word-masked MLM on a corpus (training/pretrain.py): the defaults of `python -m training pretrain`
    and of retrain's `--pretrain` stage, one set for both. The two used to disagree on the steps (the
    pretrain command 200, retrain and the function 100); 100 is kept, the value a retrain's adaptation
    has always run with (and that its resumable stage records)."""
    steps: int = 100
    batch_size: int = 8
    lr: float = 5e-4
    max_len: int = 128                # tokens per window
    checkpoint_every: int = 50
    stages: int = 2                   # pipeline stages, in one process
    micro_batches: int = 2
    schedule: str = "1f1b"
    seed: int = 0


@dataclass(frozen=True)
class RetrainConfig:
    """The fine-tune of `python -m training retrain` (training/retrain.py), its command-line defaults and
    its function's; `pretrain` is its optional adaptation stage, the same settings as the pretrain command."""
    steps: int = 300
    batch_size: int = 8
    lr: float = 3e-4
    stages: int = 2
    micro_batches: int = 2            # divides batch_size
    seed: int = 0
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)


# The defaults every entry point reads: `python -m training train` from TrainConfig (and its YAML),
# pretrain and retrain from these (their options override them, as --steps overrides train.steps).
PRETRAIN = PretrainConfig()
RETRAIN = RetrainConfig()


def load_config(path: str | Path) -> TrainConfig:
    """A TrainConfig from a YAML file; ConfigError (with the fix) for a missing file, bad YAML or a bad key."""
    import yaml
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config {p} not found; start from configs/default.yaml")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {p} is not valid YAML: {exc}") from exc
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"config {p} must be a mapping of sections (seed, data, model, train, ...)")
    return TrainConfig.from_dict(raw, str(p))


def _encoder_keys() -> list[str]:
    from models.encoder import EncoderConfig
    return [f.name for f in fields(EncoderConfig)]


def _unknown(key: str, where: str, valid: list[str], source: str) -> ConfigError:
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    hint = f"; did you mean '{where}{near[0]}'?" if near else f"; valid keys: {', '.join(sorted(valid))}"
    return ConfigError(f"{source}: unknown key '{where}{key}'{hint}")


def _build(cls: type, raw: Any, where: str, source: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: {where.rstrip('.') or 'the config'} must be a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    kwargs = {}
    for key, value in raw.items():
        if key not in names:
            raise _unknown(str(key), where, names, source)
        kwargs[key] = _value(hints[key], value, f"{where}{key}", source)
    return cls(**kwargs)


def _value(tp: Any, value: Any, key: str, source: str) -> Any:
    """`value` checked (and for sections, built) as type `tp`."""
    if isinstance(tp, type) and is_dataclass(tp):
        return _build(tp, value, key + ".", source)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        if value is None and type(None) in args:
            return None
        return _value(next(a for a in args if a is not type(None)), value, key, source)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: {key} must be a list, got {value!r}")
        return [_value(args[0], v, f"{key}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {key} must be a mapping, got {value!r}")
        if key == "model.encoder":
            valid = _encoder_keys()
            for k in value:
                if k not in valid:
                    raise _unknown(str(k), "model.encoder.", valid, source)
        return dict(value)
    ok = {int: isinstance(value, int) and not isinstance(value, bool),
          float: isinstance(value, (int, float)) and not isinstance(value, bool),
          str: isinstance(value, str), bool: isinstance(value, bool)}.get(tp, True)
    if not ok:
        raise ConfigError(f"{source}: {key} must be {getattr(tp, '__name__', tp)}, got {value!r}")
    return float(value) if tp is float else value
