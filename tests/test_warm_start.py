"""training/warm_start.py: weights carried over by name when vocabulary, tags and doc types change."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle

from models.extractor import ExtractorConfig
from training.warm_start import warm_start

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ENC = dict(vocab_size=8, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_position=32,
           layout_buckets=11)


def _write_base(d: Path) -> tuple[ExtractorConfig, dict]:
    cfg = ExtractorConfig(encoder=dict(ENC), tag_labels=["O", "B-x", "I-x"], doc_types=["t1"], max_len=32)
    paddle.seed(1)
    model = cfg.build()
    d.mkdir()
    cfg.save(d)
    paddle.save(model.state_dict(), str(d / "model_state.pdparams"))
    (d / "vocab.txt").write_text("\n".join(SPECIALS + ["甲", "乙", "丙"]) + "\n", encoding="utf-8")
    return cfg, {k: v.numpy().copy() for k, v in model.state_dict().items()}


def test_rows_and_columns_follow_their_names(tmp_path):
    _, base = _write_base(tmp_path / "base")
    vocab = SPECIALS + ["丙", "甲", "發"]                    # reordered, one token dropped, one new
    tags = ["O", "B-y", "I-y", "B-x", "I-x"]
    types = ["t2", "t1"]
    cfg = ExtractorConfig(encoder={**ENC, "vocab_size": len(vocab)}, tag_labels=tags, doc_types=types, max_len=32)
    paddle.seed(2)
    model = cfg.build()
    fresh_tagger = model.state_dict()["head.tagger.weight"].numpy().copy()
    report = warm_start(model, tags, types, vocab, tmp_path / "base")
    got = {k: v.numpy() for k, v in model.state_dict().items()}

    words, old = got["embeddings.word_embeddings.weight"], base["embeddings.word_embeddings.weight"]
    np.testing.assert_allclose(words[5], old[7], rtol=1e-6)        # 丙 kept its row
    np.testing.assert_allclose(words[6], old[5], rtol=1e-6)        # 甲 too
    np.testing.assert_allclose(words[7], old[1], rtol=1e-6)        # 發 starts as [UNK]
    assert (report.vocab_rows, report.new_tokens) == (7, 1)

    np.testing.assert_allclose(got["head.tagger.weight"][:, 3], base["head.tagger.weight"][:, 1], rtol=1e-6)
    np.testing.assert_allclose(got["head.tagger.bias"][4], base["head.tagger.bias"][2], rtol=1e-6)
    np.testing.assert_allclose(got["head.tagger.weight"][:, 1], fresh_tagger[:, 1], rtol=1e-6)   # B-y fresh
    np.testing.assert_allclose(got["head.doc_classifier.weight"][:, 1], base["head.doc_classifier.weight"][:, 0],
                               rtol=1e-6)
    assert report.new_tags == ["y"] and report.new_doc_types == ["t2"]
    np.testing.assert_allclose(got["layers.0.q_proj.weight"], base["layers.0.q_proj.weight"], rtol=1e-6)
    assert "warm start from" in report.summary()


def test_a_directory_without_weights_is_a_clear_error(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"tag_labels": [], "doc_types": []}))
    cfg = ExtractorConfig(encoder=dict(ENC), tag_labels=["O"], doc_types=["t1"], max_len=32)
    try:
        warm_start(cfg.build(), ["O"], ["t1"], SPECIALS, tmp_path / "m")
    except FileNotFoundError as e:
        assert "model_state.safetensors" in str(e)
    else:
        raise AssertionError("a directory without weights must be refused")
