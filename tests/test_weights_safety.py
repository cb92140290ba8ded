"""A model folder must not run code (issue 34, item 3). Paddle's `.pdparams` is a pickle, and `paddle.load`
unpickles without restriction, so a crafted file ran a command on `extract --model`, `retrain --base`,
`train --init-from` and in the UI's model list. Our model directories now hold safetensors; an old pickle is
read only through models/checkpoint.py's restricted unpickler (and converted), which refuses any global a
state dict does not need. Each test here plants a pickle that would create a marker file when loaded and
checks that every entry point refuses it clearly and the marker never appears."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

from models.checkpoint import UnsafePickleError, load_paddle_pickle, paddle_pickle_problem, read_weights
from models.model_dir import (
    DEFAULT_MODEL_DIR,
    ModelDirError,
    describe_model_dir,
    find_model_dirs,
    is_model_dir,
    model_dir_problem,
    read_model_dir,
    read_pair_scorer,
    weights_digest,
)

ROOT = Path(__file__).resolve().parents[1]


class _Planted:
    """Pickles as a call of os.system that creates `marker`: what a hostile weight file does."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def _hostile_pickle(path: Path, marker: Path, protocol: int = 4) -> None:
    state = {"embeddings.word_embeddings.weight": np.zeros((4, 4), dtype="float16"), "x": _Planted(marker)}
    with open(path, "wb") as fh:
        pickle.dump(state, fh, protocol=protocol)


def _hostile_model_dir(where: Path, marker: Path) -> Path:
    """The bundled model's config and vocabulary beside a pickle weight file that runs a command."""
    where.mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "labels.json"):
        shutil.copy(DEFAULT_MODEL_DIR / name, where / name)
    _hostile_pickle(where / "model_state.pdparams", marker)
    return where


def test_the_planted_pickle_does_run_code_under_plain_pickle(tmp_path):
    """The fixture is honest: an unrestricted load (what paddle.load did) creates the marker."""
    marker = tmp_path / "MARKER"
    _hostile_pickle(tmp_path / "w.pdparams", marker)
    with open(tmp_path / "w.pdparams", "rb") as fh:
        pickle.load(fh)
    assert marker.exists()


@pytest.mark.parametrize("protocol", [2, 4])
def test_restricted_reader_refuses_without_running_anything(tmp_path, protocol):
    marker = tmp_path / "MARKER"
    _hostile_pickle(tmp_path / "w.pdparams", marker, protocol)
    with pytest.raises(UnsafePickleError, match="refers to posix.system"):
        load_paddle_pickle(tmp_path / "w.pdparams")
    assert "refers to posix.system" in (paddle_pickle_problem(tmp_path / "w.pdparams") or "")
    assert not marker.exists()


def test_restricted_reader_reads_what_paddle_saves(tmp_path):
    """State dicts (float16/32, protocol 2 and 4), optimizer states and the RNG state load as paddle.load
    loads them; the RNG state only where asked for."""
    paddle.seed(5)
    layer = paddle.nn.Linear(3, 4)
    opt = paddle.optimizer.AdamW(parameters=layer.parameters(), learning_rate=paddle.optimizer.lr.StepDecay(0.1, 2))
    layer(paddle.ones([2, 3])).sum().backward()
    opt.step()
    for protocol in (2, 4):
        paddle.save(layer.state_dict(), str(tmp_path / "m.pdparams"), protocol=protocol)
        ours, theirs = load_paddle_pickle(tmp_path / "m.pdparams"), paddle.load(str(tmp_path / "m.pdparams"))
        assert ours.keys() == theirs.keys()
        for k in ours:
            np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())
    paddle.save(opt.state_dict(), str(tmp_path / "o.pdopt"))
    ours, theirs = load_paddle_pickle(tmp_path / "o.pdopt"), paddle.load(str(tmp_path / "o.pdopt"))
    assert ours.keys() == theirs.keys() and ours["LR_Scheduler"] == theirs["LR_Scheduler"]
    paddle.save(paddle.get_rng_state(), str(tmp_path / "r.pdstate"))
    rng = tmp_path / "r.pdstate"
    assert paddle_pickle_problem(rng) and paddle_pickle_problem(rng, rng=True) is None
    paddle.set_rng_state(load_paddle_pickle(tmp_path / "r.pdstate", rng=True))
    first = paddle.rand([3]).numpy()
    paddle.set_rng_state(load_paddle_pickle(tmp_path / "r.pdstate", rng=True))
    np.testing.assert_array_equal(paddle.rand([3]).numpy(), first)


def test_model_listing_description_and_loading_refuse_the_folder(tmp_path):
    marker = tmp_path / "MARKER"
    d = _hostile_model_dir(tmp_path / "models" / "evil", marker)
    assert "refers to posix.system" in (model_dir_problem(d) or "")
    assert not is_model_dir(d) and d.resolve() not in find_model_dirs(tmp_path / "models")
    with pytest.raises(ModelDirError, match="refers to posix.system"):
        describe_model_dir(d)
    with pytest.raises(ModelDirError, match="refers to posix.system"):
        read_model_dir(d)
    with pytest.raises(UnsafePickleError, match="refers to posix.system"):
        read_weights(d)                                          # what `train --init-from` reads
    from models.model_dir import ExtractorConfig
    from training.warm_start import warm_start
    cfg = ExtractorConfig.load(d)
    with pytest.raises(ValueError, match="refers to posix.system"):
        warm_start(cfg.build(), cfg.tag_labels, cfg.doc_types, ["[PAD]", "[UNK]"], d)
    assert not marker.exists() and (d / "model_state.pdparams").is_file()     # refused, not converted


def test_the_ui_model_description_says_why(tmp_path):
    from app.ui.main import model_summary
    marker = tmp_path / "MARKER"
    d = _hostile_model_dir(tmp_path / "evil", marker)
    assert "refers to posix.system" in model_summary(str(d))
    assert not marker.exists()


def test_train_init_from_and_retrain_base_refuse_before_any_work(tmp_path, capsys):
    from training.__main__ import main
    marker = tmp_path / "MARKER"
    d = _hostile_model_dir(tmp_path / "evil", marker)
    assert main(["train", "--out", str(tmp_path / "m"), "--init-from", str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --init-from") and "refers to posix.system" in err, err
    (tmp_path / "corpus").mkdir()
    assert main(["retrain", "--corpus", str(tmp_path / "corpus"), "--base", str(d),
                 "--out-root", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --base") and "refers to posix.system" in err, err
    assert not marker.exists() and not (tmp_path / "out" / "registry").exists()


def test_training_checkpoints_are_read_restricted(tmp_path):
    """An old-format training checkpoint (model.pdparams + opt.pdopt) is resumed through the restricted
    reader: a planted optimizer file is refused, not run."""
    from training.loop import restore_checkpoint
    marker = tmp_path / "MARKER"
    (tmp_path / "state.json").write_text(json.dumps({"step": 3}), encoding="utf-8")
    _hostile_pickle(tmp_path / "opt.pdopt", marker)

    class OneStage:
        stages = 1

        def has_checkpoint(self, directory):
            return False

    with pytest.raises(UnsafePickleError):
        restore_checkpoint(OneStage(), paddle.nn.Linear(2, 2), tmp_path)
    assert not marker.exists()


@pytest.mark.heavy
def test_extract_refuses_a_pickle_model_folder(tmp_path):
    marker = tmp_path / "MARKER"
    d = _hostile_model_dir(tmp_path / "evil", marker)
    res = subprocess.run([sys.executable, "-m", "app", "extract", "--model", str(d),
                          str(ROOT / "tests" / "data" / "img" / "rec_pp_word_1.jpg")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "refers to posix.system" in res.stderr and "Traceback" not in res.stderr
    assert not marker.exists()


@pytest.mark.heavy
def test_an_old_pickle_model_dir_is_converted_on_load_with_its_scorer_kept(tmp_path, capsys):
    """A model directory written before safetensors: loaded through the restricted reader, converted to
    model_state.safetensors (the same tensors; the pickle deleted; a message), the same outputs, and a
    pair scorer fitted on the pickle's digest still used."""
    from safetensors.numpy import load_file
    d = tmp_path / "old"
    shutil.copytree(DEFAULT_MODEL_DIR, d)
    state = load_file(str(d / "model_state.safetensors"))
    (d / "model_state.safetensors").unlink()
    paddle.save({k: paddle.to_tensor(v) for k, v in state.items()}, str(d / "model_state.pdparams"))
    scorer = json.loads((d / "pair_scorer.json").read_text(encoding="utf-8"))
    scorer["about"]["weights_sha256"] = weights_digest(d)                     # fitted on the pickle
    (d / "pair_scorer.json").write_text(json.dumps(scorer), encoding="utf-8")
    assert is_model_dir(d) and read_pair_scorer(d) is not None
    model, _, _ = read_model_dir(d)
    assert "converted the old pickle weights" in capsys.readouterr().err
    assert not (d / "model_state.pdparams").exists() and (d / "model_state.safetensors").is_file()
    back = load_file(str(d / "model_state.safetensors"))
    assert all(back[k].dtype == v.dtype and np.array_equal(back[k], v) for k, v in state.items())
    assert read_pair_scorer(d) is not None                          # the record follows the conversion
    ref, _, _ = read_model_dir(DEFAULT_MODEL_DIR)
    ids = paddle.to_tensor([[2, 50, 60, 3]], dtype="int64")
    with paddle.no_grad():
        a = model(ids, paddle.zeros([1, 4, 4], dtype="int64"), paddle.zeros_like(ids), paddle.ones_like(ids))
        b = ref(ids, paddle.zeros([1, 4, 4], dtype="int64"), paddle.zeros_like(ids), paddle.ones_like(ids))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_a_write_killed_half_way_leaves_no_model(tmp_path, monkeypatch):
    """write_model_dir builds in a hidden folder and renames it into place: a write that dies after the
    weights leaves nothing listed (not even a directory under the final name)."""
    from dataclasses import asdict

    from models import model_dir as md
    from models.encoder import EncoderConfig
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
    cfg = md.ExtractorConfig(encoder=asdict(EncoderConfig(vocab_size=8, hidden_size=8, num_layers=1, num_heads=2,
                                                          intermediate_size=16, max_position=16)),
                             tag_labels=["O"], doc_types=["generic_form"], max_len=16)

    def dies(*_a, **_kw):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(md.ExtractorConfig, "to_json", dies)          # after vocab, weights, labels, schemas
    with pytest.raises(KeyboardInterrupt):
        md.write_model_dir(cfg.build(), cfg, vocab, tmp_path / "m")
    assert not (tmp_path / "m").exists() and find_model_dirs(tmp_path) == []
    monkeypatch.undo()
    # a leftover staging folder holding a whole model is never listed either
    d = md.write_model_dir(cfg.build(), cfg, vocab, tmp_path / "m")
    shutil.copytree(d, tmp_path / ".m.partial-1-abc")
    assert find_model_dirs(tmp_path) == [d.resolve()]
    from data.atomic import new_file_mode
    assert (d / "model_state.safetensors").stat().st_mode & 0o777 == new_file_mode()    # not safetensors' 0600
