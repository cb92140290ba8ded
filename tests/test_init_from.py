"""`python -m training train --init-from DIR` starts the encoder from a BERT/ERNIE checkpoint directory
(here a small random ERNIE saved by PaddleNLP itself) through models.checkpoint.load_pretrained, and
trains it through the pipeline engine."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def save_small_ernie(where: Path) -> dict[str, np.ndarray]:
    """A random 2-layer ERNIE in PaddleNLP's save_pretrained layout, with a vocabulary of our default
    vocab's first 600 tokens (specials, ASCII, common characters). Returns its weights."""
    from paddlenlp.transformers import ErnieConfig, ErnieModel

    from models.tokenizer import Tokenizer
    vocab = Tokenizer.from_dir(None).vocab[:600]
    paddle.seed(11)
    model = ErnieModel(ErnieConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                   num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                                   type_vocab_size=2))
    model.save_pretrained(str(where))
    (where / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    assert (where / "model_state.pdparams").is_file()          # the PaddleNLP layout, not safetensors
    return {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def ernie(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    d = tmp_path_factory.mktemp("ernie")
    return d, save_small_ernie(d)


def test_the_model_starts_from_the_checkpoint(ernie):
    from training.config import TrainConfig
    from training.trainer import build_model
    src, ref = ernie
    cfg = TrainConfig.from_dict({"model": {"init_from": str(src), "max_len": 48}})
    model, xcfg, vocab = build_model(cfg, ["O", "B-total", "I-total"], ["receipt"])
    assert vocab.vocab == (src / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert xcfg.encoder["hidden_size"] == 32 and xcfg.encoder["num_layers"] == 2 and xcfg.max_len == 48
    ours = model.state_dict()
    np.testing.assert_array_equal(ours["embeddings.word_embeddings.weight"].numpy(),
                                  ref["embeddings.word_embeddings.weight"])
    np.testing.assert_array_equal(ours["layers.1.linear2.weight"].numpy(),
                                  ref["encoder.layers.1.linear2.weight"])
    # the head is new, sized for the labels
    assert ours["head.tagger.weight"].shape == [32, 3]


def test_a_directory_that_is_not_a_checkpoint_is_refused_before_any_work(tmp_path, capsys):
    from training.__main__ import main
    (tmp_path / "empty").mkdir()
    for bad, message in ((tmp_path / "nowhere", "not a local directory"), (tmp_path / "empty", "config.json")):
        assert main(["train", "--out", str(tmp_path / "m"), "--init-from", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --init-from") and message in err and err.count("\n") == 1, err
        assert not (tmp_path / "m_work").exists()


@pytest.mark.heavy
def test_train_init_from_a_paddlenlp_checkpoint_through_the_pipeline_engine(ernie, tmp_path):
    """Two steps at a vanishing LR in two pipeline stages: the written model is the checkpoint's
    encoder (to float16 precision), with its vocabulary, and loads for extraction."""
    from data.corpus import corpus_from_synth_dir, write_corpus
    from models.extractor import Extractor
    src, ref = ernie
    subprocess.run([sys.executable, "-m", "data.synth", "--type", "receipt", "--n", "6", "--seed", "2",
                    "--degrade", "none", "--out", str(tmp_path / "syn")], check=True, capture_output=True, cwd=ROOT)
    write_corpus(corpus_from_synth_dir(tmp_path / "syn"), tmp_path / "all")
    cfg = {"seed": 3, "data": {"corpus": str(tmp_path / "all"), "real_ocr_pages": 0},
           "model": {"max_len": 48}, "train": {"steps": 2, "batch_size": 4, "lr": 1e-9, "warmup": 1},
           "pipeline": {"stages": 2, "micro_batches": 2}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "training", "train", "--config", str(tmp_path / "cfg.yaml"),
                          "--init-from", str(src), "--out", str(tmp_path / "model"), "--no-eval"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = tmp_path / "model"
    prov = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert prov["config"]["model"]["init_from"] == str(src) and "2 stages x 2 micro-batches" in prov["step_function"]
    assert (out / "vocab.txt").read_text(encoding="utf-8") == (src / "vocab.txt").read_text(encoding="utf-8")
    from safetensors.numpy import load_file
    state = load_file(str(out / "model_state.safetensors"))
    np.testing.assert_allclose(state["embeddings.word_embeddings.weight"].astype("float32"),
                               ref["embeddings.word_embeddings.weight"], atol=1e-3)
    np.testing.assert_allclose(state["layers.0.q_proj.weight"].astype("float32"),
                               ref["encoder.layers.0.self_attn.q_proj.weight"], atol=1e-3)
    Extractor.load(out)
