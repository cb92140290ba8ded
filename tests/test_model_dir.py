"""models/model_dir.py owns the model directory: what it writes it reads back (same outputs), lists and
describes; the bundled models/default is that format; and a directory either is a model that loads,
or every entry point says clearly why it is not (never a TypeError or KeyError from inside)."""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import paddle
import pytest

from models.encoder import EncoderConfig
from models.extractor import Extractor
from models.heads import tag_labels
from models.model_dir import (
    DEFAULT_MODEL_DIR,
    ExtractorConfig,
    ModelDirError,
    describe_model_dir,
    find_model_dirs,
    is_model_dir,
    model_dir_problem,
    model_schema,
    read_model_dir,
    write_model_dir,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"t{i}" for i in range(45)]


def _config(hidden: int = 16) -> ExtractorConfig:
    enc = EncoderConfig(vocab_size=len(VOCAB), hidden_size=hidden, num_layers=2, num_heads=2, intermediate_size=32,
                        max_position=32, dropout=0.0, attention_dropout=0.0)
    return ExtractorConfig(encoder=asdict(enc), tag_labels=tag_labels(["invoice_number", "items.amount"]),
                           doc_types=["vat_invoice", "generic_form"], link=True, max_len=32)


def _model(cfg: ExtractorConfig, seed: int = 3):
    paddle.seed(seed)
    model = cfg.build()
    for p in model.parameters():                 # layout and head weights non-trivial too
        p.set_value(paddle.randn(p.shape) * 0.1)
    model.eval()
    return model


def _outputs(model):
    ids = paddle.to_tensor([[2, 5, 7, 9]], dtype="int64")
    bbox = paddle.to_tensor([[[0, 0, 0, 0], [10, 20, 300, 40], [500, 20, 900, 40], [0, 0, 0, 0]]], dtype="int64")
    with paddle.no_grad():
        return [t.numpy() for t in model(ids, bbox, paddle.zeros_like(ids), paddle.ones_like(ids))]


def test_write_read_describe_round_trip(tmp_path):
    cfg = _config()
    model = _model(cfg)
    d = write_model_dir(model, cfg, VOCAB, tmp_path / "m", half=False)
    assert is_model_dir(d) and model_dir_problem(d) is None
    back, cfg2, vocab = read_model_dir(d)
    assert cfg2 == cfg and vocab.vocab == VOCAB
    for a, b in zip(_outputs(model), _outputs(back)):
        np.testing.assert_array_equal(a, b)
    # float16 storage: about half the file, outputs to float16 precision
    h = write_model_dir(model, cfg, VOCAB, tmp_path / "h", half=True)
    assert (h / "model_state.safetensors").stat().st_size < 0.6 * (d / "model_state.safetensors").stat().st_size
    assert not (d / "model_state.pdparams").exists()                 # weights that cannot carry code
    np.testing.assert_allclose(_outputs(read_model_dir(h)[0])[0], _outputs(model)[0], atol=2e-2)
    info = describe_model_dir(d)
    assert info.doc_types == ["vat_invoice", "generic_form"] and info.n_tags == 5
    assert (info.hidden_size, info.num_layers, info.vocab_size) == (16, 2, len(VOCAB))
    assert info.schemas == ["generic_form", "vat_invoice"]           # copied from data/schemas
    assert json.loads((d / "labels.json").read_text(encoding="utf-8"))["doc_types"] == cfg.doc_types
    assert "vat_invoice" in info.summary() and info.field_f1 is None
    # the extractor reads the same directory, with the schemas the directory carries
    ex = Extractor.load(d)
    assert set(ex.schemas) == {"vat_invoice", "generic_form"}


def test_the_model_carries_its_schemas(tmp_path):
    """A schema file given at write time is the one the model's users read (not the repo's)."""
    cfg = _config()
    custom = tmp_path / "vat_invoice.yaml"
    from data.schemas import SCHEMA_DIR
    text = (SCHEMA_DIR / "vat_invoice.yaml").read_text(encoding="utf-8")
    custom.write_text(text.replace("label: 增值税发票", "label: 我的发票", 1), encoding="utf-8")
    assert "label: 我的发票" in custom.read_text(encoding="utf-8")
    d = write_model_dir(_model(cfg), cfg, VOCAB, tmp_path / "m", schemas={"vat_invoice": custom})
    assert model_schema(d, "vat_invoice").label == "我的发票"
    assert model_schema(None, "vat_invoice").label != "我的发票"


def test_bundled_default_is_the_format():
    assert is_model_dir(DEFAULT_MODEL_DIR)
    model, cfg, vocab = read_model_dir(DEFAULT_MODEL_DIR)      # every weight checked against config.json
    assert vocab.vocab_size == cfg.encoder["vocab_size"] and "vat_invoice" in cfg.doc_types
    info = describe_model_dir(DEFAULT_MODEL_DIR)
    assert info.field_f1 is not None and 0.5 < info.field_f1 <= 1 and info.trained_by
    assert set(info.schemas) == set(cfg.doc_types)
    assert find_model_dirs()[0] == DEFAULT_MODEL_DIR.resolve()


def _pretrained_checkpoint(d):
    """What a PaddleNLP ERNIE checkpoint looks like on disk: config.json, model_state.pdparams, vocab.txt."""
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"hidden_size": 16, "num_hidden_layers": 2, "vocab_size": 50}))
    paddle.save({"ernie.embeddings.word_embeddings.weight": paddle.zeros([50, 16])}, str(d / "model_state.pdparams"))
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")


def _broken_dirs(tmp_path):
    cfg = _config()
    good = write_model_dir(_model(cfg), cfg, VOCAB, tmp_path / "good")
    out = {}
    pre = tmp_path / "pretrained"
    _pretrained_checkpoint(pre)
    out["pretrained encoder checkpoint"] = pre
    import shutil
    for name in ("torn weights", "other config's weights", "no config", "vocab of another size", "bad config"):
        d = tmp_path / name.replace(" ", "_").replace("'", "")
        shutil.copytree(good, d)
        out[name] = d
    w = out["torn weights"] / "model_state.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    other = _config(hidden=8)
    write_model_dir(_model(other), other, VOCAB, tmp_path / "other")
    weights = "model_state.safetensors"
    shutil.copy(tmp_path / "other" / weights, out["other config's weights"] / weights)
    (out["no config"] / "config.json").unlink()
    (out["vocab of another size"] / "vocab.txt").write_text("\n".join(VOCAB[:-3]) + "\n", encoding="utf-8")
    raw = json.loads((good / "config.json").read_text(encoding="utf-8"))
    raw["encoder"]["n_layer"] = 3                       # a key EncoderConfig does not have
    (out["bad config"] / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    return good, out


def test_a_directory_loads_or_says_why(tmp_path):
    good, broken = _broken_dirs(tmp_path)
    assert Extractor.load(good).cfg.doc_types == ["vat_invoice", "generic_form"]
    listed = find_model_dirs(tmp_path)
    assert good.resolve() in listed
    for name, d in broken.items():
        with pytest.raises(ModelDirError) as err:
            Extractor.load(d)
        assert str(d) in str(err.value), name
        if is_model_dir(d):                            # only the weights can still be wrong
            assert name in ("torn weights", "other config's weights", "vocab of another size"), name
        else:
            assert d.resolve() not in listed, name
            with pytest.raises(ModelDirError):
                describe_model_dir(d)
    assert "pretrained BERT/ERNIE checkpoint" in model_dir_problem(broken["pretrained encoder checkpoint"])
    with pytest.raises(ModelDirError, match="do not fit"):
        read_model_dir(broken["other config's weights"])
    with pytest.raises(ModelDirError, match="unreadable"):
        read_model_dir(broken["torn weights"])
    with pytest.raises(ModelDirError, match="vocab.txt has 47 tokens"):
        read_model_dir(broken["vocab of another size"])
    with pytest.raises(ModelDirError, match="python -m training train"):
        Extractor.load(tmp_path / "nothing")
