"""The training config is typed and strict, has one set of defaults (the bundled model's), and the
training CLI follows one error convention: typed errors from the library, one line and an exit status
from `python -m training` only."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from training.config import TrainConfig, load_config
from training.errors import ConfigError, RefusedError, RetrainError, TrainingError

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_bundled_config_loads_strictly(path):
    cfg = load_config(path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    # every value written in the file is the value the run gets (nothing dropped or renamed)
    loaded = asdict(cfg)
    for section, values in raw.items():
        if isinstance(values, dict):
            for key, value in values.items():
                assert loaded[section][key] == value, f"{path.name}: {section}.{key}"
        else:
            assert loaded[section] == values, f"{path.name}: {section}"


def test_the_defaults_are_the_bundled_models_config():
    """One set of defaults: TrainConfig() is exactly configs/default.yaml (what models/default was
    trained with), so a config that leaves a key out trains as the bundled model did. Only the output
    differs: a config without `out` writes runs/model, never the tracked models/default."""
    from dataclasses import replace
    assert TrainConfig().out == "runs/model"
    assert replace(TrainConfig(), out="models/default") == load_config(ROOT / "configs" / "default.yaml")
    d = TrainConfig()
    assert (d.seed, d.train.lr, d.train.warmup, d.train.checkpoint_every) == (7, 0.001, 30, 50)
    assert (d.data.real_ocr_repeat, d.data.heldout_layouts) == (4, 0.25)


def test_retrain_holds_out_the_configs_share():
    from training import retrain
    assert retrain.HELDOUT == TrainConfig().data.heldout_layouts == 0.25
    assert retrain.BASE_HELDOUT_SHARE == retrain.HELDOUT


@pytest.mark.parametrize("raw, named, nearest", [
    ({"train": {"warmpu": 10}}, "train.warmpu", "train.warmup"),
    ({"sed": 3}, "sed", "seed"),
    ({"data": {"heldout_layout": 0.3}}, "data.heldout_layout", "data.heldout_layouts"),
    ({"noise": {"page_shfit": 0.1}}, "noise.page_shfit", "noise.page_shift"),
    ({"model": {"encoder": {"num_layer": 2}}}, "model.encoder.num_layer", "model.encoder.num_layers"),
    ({"pipline": {"stages": 2}}, "pipline", "pipeline"),
])
def test_unknown_key_names_it_and_the_nearest_valid_one(raw, named, nearest):
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_dict(raw, "my.yaml")
    assert str(err.value) == f"my.yaml: unknown key '{named}'; did you mean '{nearest}'?"


def test_a_key_like_nothing_lists_the_valid_ones_and_wrong_types_are_refused():
    with pytest.raises(ConfigError, match=r"unknown key 'train\.zzz'; valid keys: batch_size, checkpoint_every"):
        TrainConfig.from_dict({"train": {"zzz": 1}})
    with pytest.raises(ConfigError, match=r"train\.steps must be int, got 'many'"):
        TrainConfig.from_dict({"train": {"steps": "many"}})
    with pytest.raises(ConfigError, match=r"data\.types must be a list"):
        TrainConfig.from_dict({"data": {"types": "receipt"}})
    with pytest.raises(ConfigError, match=r"train must be a mapping"):
        TrainConfig.from_dict({"train": 3})
    cfg = TrainConfig.from_dict({"train": {"lr": 1}, "data": {"corpus": None}})
    assert cfg.train.lr == 1.0 and isinstance(cfg.train.lr, float) and cfg.train.steps == 1800


def test_errors_are_one_hierarchy():
    assert issubclass(ConfigError, RefusedError) and issubclass(ConfigError, ValueError)
    assert issubclass(RetrainError, RefusedError) and issubclass(RefusedError, TrainingError)
    from training.retrain import RetrainError as FromRetrain
    assert FromRetrain is RetrainError
    assert RefusedError("x").exit_status == 2 and TrainingError("x").exit_status == 1


def test_a_typo_in_the_config_is_refused_by_the_cli_before_any_work(tmp_path, capsys):
    from training.__main__ import main
    raw = yaml.safe_load((ROOT / "configs" / "default.yaml").read_text(encoding="utf-8"))
    raw["train"]["warmpu"] = raw["train"].pop("warmup")
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "did you mean 'train.warmup'?" in err, err
    assert not (tmp_path / "m_work").exists() and not (tmp_path / "m").exists()
    assert main(["train", "--config", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "m")]) == 2
    assert "not found" in capsys.readouterr().err


def test_help_documents_the_exit_statuses():
    out = subprocess.run([sys.executable, "-m", "training", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120).stdout
    assert "exit status" in out and re.search(r"^\s+2\s+refused before any work", out, re.M), out
    assert re.search(r"^\s+1\s+the run started and then failed", out, re.M)
    sub = subprocess.run([sys.executable, "-m", "training", "pretrain", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120).stdout
    assert "exit status" in sub


def test_library_code_never_ends_the_process():
    """Only the __main__.py entry points turn errors into exit statuses (issue 15's bar)."""
    hits = []
    for folder in ("training", "models", "data"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "__main__.py" and "SystemExit" in path.read_text(encoding="utf-8"):
                hits.append(str(path.relative_to(ROOT)))
    assert hits == []


def test_one_lr_schedule_in_the_tree():
    """training/loop.py defines the only LR schedule; train, retrain and pretrain use it."""
    defs = []
    for folder in ("training", "models", "data", "bench", "app"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            defs += [str(path.relative_to(ROOT))] * len(re.findall(r"paddle\.optimizer\.lr\.\w+\(", text))
    assert defs == ["training/loop.py"]
    for module in ("trainer", "retrain", "pretrain"):
        assert "lr_schedule(" in (ROOT / "training" / f"{module}.py").read_text(encoding="utf-8"), module


def test_lr_schedule_warms_up_then_decays_to_the_floor():
    from training.loop import LR_FLOOR, lr_factor, lr_schedule
    steps, warmup = 100, 10
    f = [lr_factor(s, steps, warmup) for s in range(steps)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)          # linear warm-up
    assert all(a >= b for a, b in zip(f[9:], f[10:]))                          # then never rises
    assert min(f) == LR_FLOOR and f[-1] == LR_FLOOR
    sched = lr_schedule(0.01, steps, warmup)
    assert sched.get_lr() == pytest.approx(0.001)
    for _ in range(9):
        sched.step()
    assert sched.get_lr() == pytest.approx(0.01)
    assert lr_factor(0, 5, 0) == 1.0            # no warm-up: full LR from the first step


def test_training_imports_nothing_from_the_app():
    """Dependencies point one way (app -> training/models -> data): no module of training/ imports app."""
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / "training").rglob("*.py")
           if re.search(r"^\s*(from app[.\s]|import app\b)", p.read_text(encoding="utf-8"), re.M)]
    assert bad == []


@pytest.mark.parametrize("name, layers", [("base", 12), ("large", 24)])
def test_base_and_large_configs_run_the_preset_shape_through_the_pipeline_engine(name, layers):
    """Naming a preset without `encoder` overrides gets that preset's shape (the default overrides are
    the bundled tiny model's), and the config's pipeline split fits the model's blocks and batch."""
    from models.encoder import EncoderConfig
    from training.step import check_pipeline
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    assert cfg.model.encoder == {} and EncoderConfig.preset(cfg.model.preset).num_layers == layers
    pipe = check_pipeline(cfg.pipeline.as_dict(), n_blocks=layers + 2, batch_size=cfg.train.batch_size)
    assert pipe["stages"] > 1 and pipe["transport"] == "inprocess"
    assert TrainConfig.from_dict({"model": {"preset": "base", "encoder": {"dropout": 0.2}}}).model.encoder == \
        {"dropout": 0.2}


def test_retrain_reads_the_bases_training_config_typed(tmp_path):
    """Replay pages are degraded and noised as the base's own training was: its provenance config read
    as a TrainConfig (strictly); no record means the light corpus noise, a bad record is refused."""
    import json

    from models.extractor import DEFAULT_MODEL_DIR
    from training.retrain import base_training_config
    bundled = base_training_config(DEFAULT_MODEL_DIR)
    prov = json.loads((DEFAULT_MODEL_DIR / "provenance.json").read_text(encoding="utf-8"))["config"]
    assert bundled is not None and bundled.noise.page_shift == prov["noise"]["page_shift"]
    assert bundled.data.degrade == prov["data"]["degrade"]
    assert base_training_config(tmp_path) is None
    (tmp_path / "provenance.json").write_text(json.dumps({"config": {"noise": {"jiter": 0.1}}}), encoding="utf-8")
    with pytest.raises(RetrainError, match="did you mean 'noise.jitter'"):
        base_training_config(tmp_path)


def test_every_command_refuses_bad_input_with_one_line_and_exit_2(tmp_path, capsys):
    """pretrain and import raise typed errors in the library; `python -m training` alone prints them."""
    from tests.test_retrain import make_corpus
    from training.__main__ import main
    from training.pretrain import pretrain
    corpus = make_corpus(tmp_path / "c", 2)
    with pytest.raises(RefusedError, match="is not a model directory"):
        pretrain([], tmp_path / "nobase", tmp_path / "out")
    assert main(["pretrain", "--corpus", str(corpus), "--base", str(tmp_path / "nobase"),
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --base") and err.count("\n") == 1 and not (tmp_path / "out").exists()
    assert main(["import", "--format", "ours", "--src", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
