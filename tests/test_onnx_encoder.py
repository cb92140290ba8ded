"""The ONNX backend of extraction (models/onnx_encoder.py) computes what the Paddle model computes: tag
probabilities, doc-type probabilities and link scores within 1e-4 on generated pages' windows, for the bundled
model and for a small one with the settings the bundled one does not use (tanh GELU, the ERNIE task row,
non-zero layout tables, a random head); a graph built from changed weights follows them; $PIAOJU_EXTRACTOR and
an onnxruntime that cannot be imported leave the extractor on Paddle."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from data.document import Line, Page
from models.extractor import DEFAULT_MODEL_DIR, Extractor

TOL = 1e-4


def _page(doc_type: str, seed: int) -> Page:
    from data.synth.generator import generate
    _, rec = generate(doc_type, seed, decorations=False)
    return Page(index=0, width=rec["width"], height=rec["height"],
                lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in rec["lines"]])


def _windows(ex: Extractor, page: Page) -> tuple[np.ndarray, ...]:
    """The arrays `Extractor.predict_page` hands `_forward` (common padding dropped)."""
    arr = ex.vocab.encode_page(page.lines, page.width, page.height, ex.cfg.max_len).arrays()
    used = int(arr["attention_mask"].sum(1).max())
    return tuple(arr[k][:, :used] for k in ("input_ids", "bbox", "attention_mask"))


def _compare(onnx: Extractor, paddle: Extractor, page: Page) -> float:
    """Largest difference of the two backends' outputs on `page` (asserting each within TOL)."""
    assert onnx.backend == "onnx" and paddle.backend == "paddle"
    arrays = _windows(paddle, page)
    tags_o, doc_o, link_o = onnx._forward(*arrays)
    tags_p, doc_p, link_p = paddle._forward(*arrays)
    assert tags_o.shape == tags_p.shape and doc_o.shape == doc_p.shape
    worst = max(float(np.abs(tags_o - tags_p).max()), float(np.abs(doc_o - doc_p).max()))
    assert worst < TOL
    assert (link_o is None) == (link_p is None)
    if link_o is not None and link_p is not None:
        lo, lp = link_o(), link_p()
        assert lo.shape == lp.shape == arrays[0].shape + arrays[0].shape[1:]
        # logits, not probabilities: compare as the decoder sees them, through the sigmoid, and the raw ones
        sig = float(np.abs(1 / (1 + np.exp(-lo.astype(np.float64))) - 1 / (1 + np.exp(-lp.astype(np.float64)))).max())
        assert sig < TOL and float(np.abs(lo - lp).max()) < 1e-3
        worst = max(worst, sig)
    return worst


@pytest.fixture(scope="module")
def bundled() -> tuple[Extractor, Extractor]:
    return Extractor.load(DEFAULT_MODEL_DIR, backend="onnx"), Extractor.load(DEFAULT_MODEL_DIR, backend="paddle")


@pytest.mark.parametrize("doc_type,seed", [("vat_invoice", 11), ("generic_form", 12), ("receipt", 13)])
def test_bundled_model_same_outputs_both_backends(bundled, doc_type, seed):
    onnx, paddle = bundled
    page = _page(doc_type, seed)
    _compare(onnx, paddle, page)
    if doc_type == "vat_invoice":
        assert _windows(paddle, page)[0].shape[0] > 1, "the page should span several windows"


def test_bundled_model_same_extraction_both_backends(bundled):
    """What a user sees: the decoded document is the same whichever backend ran the encoder."""
    from data.document import Document
    onnx, paddle = bundled
    for doc_type, seed in (("vat_invoice", 21), ("generic_form", 22)):
        got = [ex.extract(Document(pages=[_page(doc_type, seed)])) for ex in (onnx, paddle)]
        assert got[0].doc_type == got[1].doc_type
        assert {k: f.value for k, f in got[0].fields.items()} == {k: f.value for k, f in got[1].fields.items()}
        assert [(p.key, p.value) for p in got[0].pairs] == [(p.key, p.value) for p in got[1].pairs]


def _odd_model_dir(out: Path, seed: int, activation: str = "gelu_new") -> Path:
    """A small model with every weight random (layout tables and head included) and the options the bundled
    model leaves at their defaults, written as a model directory in float32."""
    import paddle

    from models.encoder import EncoderConfig
    from models.heads import schema_field_keys, tag_labels
    from models.model_dir import ExtractorConfig, write_model_dir
    from models.tokenizer import Tokenizer
    vocab = Tokenizer.from_dir(None)
    keys, types = schema_field_keys(["vat_invoice", "generic_form"])
    enc = EncoderConfig(vocab_size=vocab.vocab_size, hidden_size=48, num_layers=2, num_heads=3, intermediate_size=96,
                        max_position=128, activation=activation, use_task_id=True, task_id=1)
    cfg = ExtractorConfig(encoder=dict(enc.__dict__), tag_labels=tag_labels(keys), doc_types=types, max_len=128)
    paddle.seed(seed)
    model = cfg.build()
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.set_value(rng.normal(0, 0.5, p.shape).astype("float32"))
    return write_model_dir(model, cfg, vocab, out, half=False)


def test_small_model_with_other_settings_same_outputs(tmp_path):
    d = _odd_model_dir(tmp_path / "odd", seed=3)
    onnx, paddle = Extractor.load(d, backend="onnx"), Extractor.load(d, backend="paddle")
    for doc_type, seed in (("vat_invoice", 31), ("generic_form", 32)):
        _compare(onnx, paddle, _page(doc_type, seed))
    relu = _odd_model_dir(tmp_path / "relu", seed=4, activation="relu")
    _compare(Extractor.load(relu, backend="onnx"), Extractor.load(relu, backend="paddle"), _page("receipt", 33))


def test_graph_follows_changed_weights(tmp_path):
    """Nothing derived from the weights is kept between loads: a directory whose weights were replaced (a
    retrain written over it) runs its new weights, not those of the graph built before."""
    d = tmp_path / "m"
    _odd_model_dir(d, seed=5)
    page = _page("vat_invoice", 41)
    before = Extractor.load(d, backend="onnx")
    old_tags = before._forward(*_windows(before, page))[0]
    _odd_model_dir(d, seed=6)                            # other weights, same directory
    after, reference = Extractor.load(d, backend="onnx"), Extractor.load(d, backend="paddle")
    new_tags = after._forward(*_windows(after, page))[0]
    assert float(np.abs(new_tags - old_tags).max()) > 0.01      # vs agreement within 1e-4
    _compare(after, reference, page)


def test_environment_forces_paddle(monkeypatch):
    from models.onnx_encoder import BACKEND_ENV, wanted_backend
    monkeypatch.setenv(BACKEND_ENV, "paddle")
    assert wanted_backend("cpu") == "paddle"
    assert Extractor.load(DEFAULT_MODEL_DIR).backend == "paddle"
    monkeypatch.delenv(BACKEND_ENV)
    assert wanted_backend("cpu") == "onnx" and wanted_backend("gpu:0") == "paddle"
    assert Extractor.load(DEFAULT_MODEL_DIR).backend == "onnx"
    with pytest.raises(ValueError, match="backend"):
        Extractor.load(DEFAULT_MODEL_DIR, backend="tensorrt")


def test_without_onnxruntime_the_extractor_runs_paddle(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)     # what an environment without it imports
    ex = Extractor.load(DEFAULT_MODEL_DIR, backend="onnx")
    assert ex.backend == "paddle" and ex.onnx is None
    assert "runs in Paddle" in capsys.readouterr().err
    tags, doc, link = ex._forward(*_windows(ex, _page("receipt", 51)))
    assert np.isfinite(tags).all() and abs(float(doc.sum()) - 1) < 1e-5 and link is not None


def test_too_long_a_sequence_is_refused_as_paddle_refuses_it():
    ex = Extractor.load(DEFAULT_MODEL_DIR, backend="onnx")
    n = ex.model.config.max_position + 1
    with pytest.raises(ValueError, match="max_position"):
        ex._forward(np.ones((1, n), np.int64), np.zeros((1, n, 4), np.int64), np.ones((1, n), np.int64))
