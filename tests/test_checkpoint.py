"""Checkpoint import is proved against PaddleNLP's own ErnieModel/BertModel on identical weights.

Each test builds the reference model from a small config with random weights, writes it in one of
the layouts a user will bring (PaddleNLP save_pretrained, HF safetensors, HF pytorch_model.bin), loads
it through models/checkpoint.py and compares last hidden states on random input with padding.
"""
from __future__ import annotations

import json

import numpy as np
import paddle
import pytest

from models.checkpoint import load_pretrained, read_torch_bin, save_torch_bin
from models.encoder import Encoder

SMALL = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=40, type_vocab_size=2,
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _reference(kind: str, **extra):
    from paddlenlp.transformers import BertConfig, BertModel, ErnieConfig, ErnieModel
    paddle.seed(7)
    if kind == "ernie":
        model = ErnieModel(ErnieConfig(**SMALL, **extra))
    else:
        model = BertModel(BertConfig(**SMALL, **extra))
    # PaddleNLP's init leaves LayerNorms at 1/0; randomise them so the mapping of every key matters
    for name, p in model.named_parameters():
        if "norm" in name:
            p.set_value(paddle.rand(p.shape) + 0.5 if name.endswith("weight") else paddle.rand(p.shape) - 0.5)
    model.eval()
    return model


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, SMALL["vocab_size"], size=(2, 11))
    mask = np.ones_like(ids)
    mask[1, 7:] = 0                      # second sequence padded
    ids[1, 7:] = 0
    types = rng.integers(0, 2, size=ids.shape)
    return (paddle.to_tensor(ids, dtype="int64"), paddle.to_tensor(types, dtype="int64"),
            paddle.to_tensor(mask, dtype="int64"))


def _reference_hidden(model, ids, types, mask) -> np.ndarray:
    with paddle.no_grad():
        return model(ids, token_type_ids=types, attention_mask=mask)[0].numpy()


def _ours_hidden(model: Encoder, ids, types, mask, bbox=None) -> np.ndarray:
    model.eval()
    with paddle.no_grad():
        return model(ids, bbox, types, mask)[0].numpy()


def _write_vocab(path, n=SMALL["vocab_size"]):
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                                              + [f"t{i}" for i in range(n - 5)]) + "\n", encoding="utf-8")


def _hf_state(ref, prefix: str) -> dict[str, np.ndarray]:
    """The reference weights under Hugging Face names, Linear weights as torch's [out, in]."""
    names = {"self_attn.q_proj": "attention.self.query", "self_attn.k_proj": "attention.self.key",
             "self_attn.v_proj": "attention.self.value", "self_attn.out_proj": "attention.output.dense",
             "norm1": "attention.output.LayerNorm", "linear1": "intermediate.dense",
             "linear2": "output.dense", "norm2": "output.LayerNorm"}
    out = {}
    for key, value in ref.state_dict().items():
        value = value.numpy()
        if key.startswith("encoder.layers."):
            _, _, idx, *rest = key.split(".")
            part, param = ".".join(rest[:-1]), rest[-1]
            hf = f"encoder.layer.{idx}.{names[part]}.{param}"
            if param == "weight" and value.ndim == 2:
                value = value.T
        elif key.startswith("embeddings.layer_norm"):
            hf = key.replace("layer_norm", "LayerNorm")
        elif key.startswith("pooler.dense.weight"):
            hf, value = key, value.T
        else:
            hf = key
        out[prefix + hf] = np.ascontiguousarray(value)
    out["cls.predictions.bias"] = np.zeros(SMALL["vocab_size"], np.float32)   # a pre-training head
    return out


def _hf_config(kind: str, **extra) -> dict:
    return {**SMALL, "model_type": kind, "hidden_act": "gelu", "layer_norm_eps": 1e-12, **extra}


@pytest.mark.parametrize("kind", ["ernie", "bert"])
def test_paddlenlp_layout_matches_paddlenlp_model(kind, tmp_path):
    ref = _reference(kind)
    ref.save_pretrained(str(tmp_path))
    _write_vocab(tmp_path)
    ids, types, mask = _inputs()
    model, notes = load_pretrained(tmp_path)
    ours = _ours_hidden(model, ids, types, mask)
    theirs = _reference_hidden(ref, ids, types, mask)
    valid = mask.numpy().astype(bool)
    np.testing.assert_allclose(ours[valid], theirs[valid], rtol=1e-4, atol=1e-5)
    assert any("pooler" in n for n in notes)
    # any layout input gives the same output while the layout tables are still zero
    bbox = paddle.to_tensor(np.random.default_rng(1).integers(0, 1001, size=(2, 11, 4)), dtype="int64")
    np.testing.assert_allclose(_ours_hidden(model, ids, types, mask, bbox)[valid], theirs[valid],
                               rtol=1e-4, atol=1e-5)


def test_ernie3_task_type_embedding_matches(tmp_path):
    ref = _reference("ernie", use_task_id=True, task_type_vocab_size=3)
    ref.save_pretrained(str(tmp_path))
    _write_vocab(tmp_path)
    ids, types, mask = _inputs(3)
    model, _ = load_pretrained(tmp_path)
    assert model.config.use_task_id
    valid = mask.numpy().astype(bool)
    np.testing.assert_allclose(_ours_hidden(model, ids, types, mask)[valid],
                               _reference_hidden(ref, ids, types, mask)[valid], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("kind,prefix", [("bert", "bert."), ("ernie", "ernie."), ("bert", "")])
def test_hf_layout_matches_paddlenlp_model(kind, prefix, fmt, tmp_path):
    ref = _reference(kind)
    state = _hf_state(ref, prefix)
    if fmt == "safetensors":
        from safetensors.numpy import save_file
        save_file(state, str(tmp_path / "model.safetensors"))
    else:
        save_torch_bin(state, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(json.dumps(_hf_config(kind)), encoding="utf-8")
    _write_vocab(tmp_path)
    ids, types, mask = _inputs(5)
    model, notes = load_pretrained(tmp_path)
    valid = mask.numpy().astype(bool)
    np.testing.assert_allclose(_ours_hidden(model, ids, types, mask)[valid],
                               _reference_hidden(ref, ids, types, mask)[valid], rtol=1e-4, atol=1e-5)
    assert any("cls.predictions.bias" in n for n in notes)


def test_torch_bin_round_trip_keeps_dtype_shape_and_strides(tmp_path):
    state = {"a": np.arange(12, dtype=np.float32).reshape(3, 4).T,       # non-contiguous input
             "b": np.array([1, -2, 3], dtype=np.int64),
             "c": np.float16(2.5) * np.ones((2, 2), np.float16)}
    save_torch_bin(state, tmp_path / "w.bin")
    back = read_torch_bin(tmp_path / "w.bin")
    assert list(back) == ["a", "b", "c"]
    for k in state:
        assert back[k].dtype == state[k].dtype and back[k].shape == state[k].shape
        np.testing.assert_array_equal(back[k], state[k])
    # the pickle speaks torch's own vocabulary, so torch.load reads it too
    import pickletools
    import zipfile
    with zipfile.ZipFile(tmp_path / "w.bin") as z:
        names = z.namelist()
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read("w/data.pkl"))]
    assert {"w/data.pkl", "w/version", "w/data/0", "w/data/1", "w/data/2"} <= set(names)
    assert ("GLOBAL", "torch._utils _rebuild_tensor_v2") in ops
    assert ("GLOBAL", "torch FloatStorage") in ops and ("GLOBAL", "torch LongStorage") in ops
    assert sum(name == "BINPERSID" for name, _ in ops) == 3


def test_torch_bin_refuses_foreign_globals(tmp_path):
    import pickle
    import zipfile
    with zipfile.ZipFile(tmp_path / "evil.bin", "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"x": print}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"print.*refusing"):
        read_torch_bin(tmp_path / "evil.bin")


def test_missing_key_is_an_error_listing_it(tmp_path):
    ref = _reference("bert")
    state = _hf_state(ref, "bert.")
    del state["bert.encoder.layer.1.output.dense.bias"]
    from safetensors.numpy import save_file
    save_file(state, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(_hf_config("bert")), encoding="utf-8")
    _write_vocab(tmp_path)
    with pytest.raises(KeyError, match=r"missing.*layers\.1\.linear2\.bias"):
        load_pretrained(tmp_path)


def test_shape_mismatch_is_an_error_listing_it(tmp_path):
    ref = _reference("ernie")
    ref.save_pretrained(str(tmp_path))
    _write_vocab(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["intermediate_size"] = 48                          # config no longer fits the weights
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(KeyError, match=r"shape mismatch.*layers\.0\.linear1\.weight: "
                                       r"checkpoint \[32, 64\] vs model \[32, 48\]"):
        load_pretrained(tmp_path)


def test_unknown_encoder_key_is_an_error(tmp_path):
    state = _hf_state(_reference("bert"), "bert.")
    state["bert.encoder.layer.0.attention.self.relative_bias"] = np.zeros(3, np.float32)
    from safetensors.numpy import save_file
    save_file(state, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(_hf_config("bert")), encoding="utf-8")
    _write_vocab(tmp_path)
    with pytest.raises(KeyError, match="relative_bias"):
        load_pretrained(tmp_path)


def test_hub_name_is_refused_with_a_hint():
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        load_pretrained("ernie-3.0-medium-zh")


def test_legacy_paddlenlp_model_config_json(tmp_path):
    ref = _reference("ernie")
    ref.save_pretrained(str(tmp_path))
    _write_vocab(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").unlink()
    # PaddleNLP <= 2.4 wrote a task model's config as nested init_args
    legacy = {"init_args": [{"init_args": [cfg], "init_class": "ErnieModel"}],
              "init_class": "ErnieForTokenClassification"}
    (tmp_path / "model_config.json").write_text(json.dumps(legacy))
    ids, types, mask = _inputs(9)
    model, _ = load_pretrained(tmp_path)
    assert (model.config.num_layers, model.config.intermediate_size) == (2, 64)
    valid = mask.numpy().astype(bool)
    np.testing.assert_allclose(_ours_hidden(model, ids, types, mask)[valid],
                               _reference_hidden(ref, ids, types, mask)[valid], rtol=1e-4, atol=1e-5)


# --- training checkpoints: two slots, written whole, a torn newest falls back to the older ---------------

def _write_step(step: int):
    def write(d):
        (d / "weights.bin").write_bytes(bytes([step % 256]) * 1000)
        (d / "state.json").write_text(json.dumps({"step": step}))
    return write


def _read_step(d) -> int:
    blob = (d / "weights.bin").read_bytes()
    assert len(blob) == 1000
    return json.loads((d / "state.json").read_text())["step"]


def test_checkpoint_slots_keep_the_newest_two_and_a_killed_save_replaces_nothing(tmp_path):
    from models.checkpoint import CheckpointSlots
    slots = CheckpointSlots(tmp_path / "ckpt")
    for step in (100, 200, 300):
        slots.save(step, _write_step(step))
    assert [p.name for p in slots.slots()] == ["step_00000300", "step_00000200"]
    assert sorted(p.name for p in slots.root.iterdir()) == ["step_00000200", "step_00000300"]

    def killed_mid_save(d):
        (d / "weights.bin").write_bytes(b"\0" * 10)
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        slots.save(400, killed_mid_save)
    assert [p.name for p in slots.slots()] == ["step_00000300", "step_00000200"]
    where, step = slots.resume(_read_step)
    assert (where.name, step) == ("step_00000300", 300)
    slots.save(400, _write_step(400))           # the same step again: the killed save's leftovers go
    assert sorted(p.name for p in slots.root.iterdir()) == ["step_00000300", "step_00000400"]
    assert CheckpointSlots(tmp_path / "none").resume(_read_step) is None


def test_torn_newest_checkpoint_resumes_from_the_older_one_and_says_so(tmp_path, capsys):
    """Real engine checkpoints through the trainer's save/restore: the newest slot's stage file is
    truncated (a save torn by a crash or a full disk); resume takes the older slot, weights exact."""
    from models.checkpoint import CheckpointError, CheckpointSlots
    from training.pipeline.toy import ToyConfig, build_toy_blocks, make_batch, toy_loss
    from training.step import EngineStep
    from training.trainer import _checkpoint, _restore
    cfg = ToyConfig(hidden=16, layers=2, heads=2, ffn=32, max_len=8)

    def engine():
        blocks = build_toy_blocks(cfg, seed=0)
        return EngineStep(blocks, toy_loss, 0.01, {"stages": 2, "micro_batches": 2}), blocks

    step_fn, blocks = engine()
    slots = CheckpointSlots(tmp_path / "checkpoint")
    at_step = {}
    for step in range(1, 7):
        step_fn.train_step(*make_batch(4, cfg, seed=step))
        if step % 2 == 0:
            _checkpoint(step_fn, {"step": step, "losses": []}, slots)
            at_step[step] = {f"{i}.{k}": v.numpy().copy() for i, b in enumerate(blocks)
                             for k, v in b.state_dict().items()}
    assert [p.name for p in slots.slots()] == ["step_00000006", "step_00000004"]
    torn = slots.slots()[0] / "stage_1_dp0.pdparams"
    torn.write_bytes(torn.read_bytes()[: torn.stat().st_size // 2])

    fresh, fresh_blocks = engine()
    capsys.readouterr()
    where, state = slots.resume(lambda d: _restore(fresh, None, d))
    err = capsys.readouterr().err
    assert state["step"] == 4 and where.name == "step_00000004"
    assert "step_00000006 is unreadable" in err and "torn" in err and "older checkpoint" in err
    got = {f"{i}.{k}": v.numpy() for i, b in enumerate(fresh_blocks) for k, v in b.state_dict().items()}
    assert all(np.array_equal(got[k], at_step[4][k]) for k in got)

    (where / "state.json").write_text("{")            # both unreadable: an error, not a silent restart
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        slots.resume(lambda d: _restore(fresh, None, d))
