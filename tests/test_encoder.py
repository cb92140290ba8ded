"""The encoder's block contract, its equivalence with its own blocks, gradients, sizes and the loss."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

from data.labels import IGNORE_INDEX as IGNORE
from models.encoder import Encoder, EncoderConfig, count_parameters, parameter_count
from models.heads import ExtractionHead, HeadConfig, loss_fn, tag_labels

LABELS = tag_labels(["a", "b"])


def _model(link: bool = True, dropout: float = 0.0) -> Encoder:
    paddle.seed(3)
    config = EncoderConfig(vocab_size=60, hidden_size=32, num_layers=3, num_heads=4, intermediate_size=48,
                           max_position=24, dropout=dropout, attention_dropout=dropout)
    head = ExtractionHead(HeadConfig(hidden_size=32, tag_labels=LABELS, doc_types=["x", "y", "z"],
                                     link=link, dropout=dropout))
    return Encoder(config, head=head)


def _batch(seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 60, size=(2, 9))
    mask = np.ones_like(ids)
    mask[1, 6:], ids[1, 6:] = 0, 0
    x0, y0 = rng.integers(0, 800, size=(2, 9)), rng.integers(0, 900, size=(2, 9))
    bbox = np.stack([x0, y0, x0 + rng.integers(1, 200, size=(2, 9)), y0 + rng.integers(1, 100, size=(2, 9))], -1)
    t = lambda a: paddle.to_tensor(a, dtype="int64")
    return t(ids), t(bbox), t(np.zeros_like(ids)), t(mask)


def _labels(seed: int = 0):
    rng = np.random.default_rng(seed)
    tags = rng.integers(0, len(LABELS), size=(2, 9))
    tags[:, 0] = IGNORE
    tags[1, 6:] = IGNORE
    links = (rng.random((2, 9, 9)) < 0.2).astype("float32")
    link_mask = np.ones((2, 9, 9), "float32")
    link_mask[1, :, 6:] = 0
    return {"tags": paddle.to_tensor(tags), "doc_type": paddle.to_tensor([2, 0]),
            "links": paddle.to_tensor(links), "link_mask": paddle.to_tensor(link_mask)}


def test_block_contract_and_forward_equals_blocks_in_sequence():
    model = _model()
    model.eval()
    inputs = _batch()
    blocks = model.blocks()
    assert len(blocks) == 1 + 3 + 1 and blocks[0] is model.embeddings and blocks[-1] is model.head
    with paddle.no_grad():
        whole = model(*inputs)
        out = blocks[0](*inputs)
        hidden, mask_bias = out
        assert mask_bias.stop_gradient and mask_bias.dtype == paddle.float32
        assert mask_bias.shape == [2, 1, 1, 9] and float(mask_bias[1, 0, 0, 7]) == -1e4 \
            and float(mask_bias[0].sum()) == 0
        for block in blocks[1:]:
            out = block(*out) if isinstance(out, tuple) else block(out)
    assert isinstance(out, tuple) and len(out) == 3
    assert out[0].shape == [2, 9, len(LABELS)] and out[1].shape == [2, 3] and out[2].shape == [2, 9, 9]
    for a, b in zip(whole, out):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_padding_does_not_change_real_tokens():
    model = _model(link=False)
    model.eval()
    ids, bbox, types, mask = _batch()
    with paddle.no_grad():
        full = model(ids, bbox, types, mask)[0].numpy()
        # the padded row's real tokens alone give the same tag logits
        short = model(ids[1:2, :6], bbox[1:2, :6], types[1:2, :6], mask[1:2, :6])[0].numpy()
    np.testing.assert_allclose(full[1, :6], short[0], rtol=1e-4, atol=1e-5)


def test_layout_embeddings_start_at_zero_then_matter():
    model = _model(link=False)
    model.eval()
    ids, bbox, types, mask = _batch()
    with paddle.no_grad():
        a = model(ids, bbox, types, mask)[0].numpy()
        b = model(ids, paddle.zeros_like(bbox), types, mask)[0].numpy()
    np.testing.assert_array_equal(a, b)
    model.embeddings.x_embeddings.weight.set_value(paddle.randn(model.embeddings.x_embeddings.weight.shape))
    with paddle.no_grad():
        c = model(ids, bbox, types, mask)[0].numpy()
    assert np.abs(c - a).max() > 1e-3


def test_gradients_reach_every_parameter():
    model = _model(link=True, dropout=0.1)
    model.train()
    loss = loss_fn(model(*_batch()), _labels())
    loss.backward()
    # the word-embedding rows of unused ids get zero gradient, so check per table that some row moved
    no_grad = [n for n, p in model.named_parameters() if p.grad is None or float(p.grad.abs().sum()) == 0.0]
    assert no_grad == []


def test_loss_parts_ignore_masked_positions_and_never_nan():
    model = _model(link=True)
    model.eval()
    with paddle.no_grad():
        outputs = model(*_batch())
    lab = _labels()
    tag_logits = outputs[0].numpy()
    tags = lab["tags"].numpy()
    logp = tag_logits - np.log(np.exp(tag_logits).sum(-1, keepdims=True))
    valid = tags != IGNORE
    expected_tag = -np.mean(logp[valid, tags[valid]])
    only_tags = float(loss_fn(outputs, {"tags": lab["tags"]}))
    assert only_tags == pytest.approx(expected_tag, rel=1e-5)
    # a tuple of labels means the same as the dict
    assert float(loss_fn(outputs, (lab["tags"], lab["doc_type"], lab["links"], lab["link_mask"]))) == \
        pytest.approx(float(loss_fn(outputs, lab)), rel=1e-6)
    # no labelled doc type / all tags ignored: finite
    none = {"tags": paddle.full([2, 9], IGNORE, dtype="int64"), "doc_type": paddle.to_tensor([IGNORE, IGNORE])}
    assert float(loss_fn(outputs, none)) == 0.0
    # logits at ignored positions (padding, [CLS]) do not change the loss; at a labelled one they do
    for pos, same in (((1, 7), True), ((0, 0), True), ((0, 3), False)):
        logits = tag_logits.copy()
        logits[pos] += np.arange(len(LABELS)) * 5.0
        changed = float(loss_fn((paddle.to_tensor(logits), outputs[1]), {"tags": lab["tags"]}))
        assert (changed == pytest.approx(only_tags)) is same


def test_a_few_steps_fit_a_tiny_batch():
    model = _model(link=True)
    model.train()
    opt = paddle.optimizer.AdamW(learning_rate=3e-3, parameters=model.parameters())
    batch, lab = _batch(), _labels()
    losses = []
    for _ in range(15):
        loss = loss_fn(model(*batch), lab)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def test_presets_have_the_advertised_sizes():
    from models.tokenizer import Tokenizer
    vocab = Tokenizer.from_dir(None).vocab_size
    tiny = EncoderConfig.preset("tiny", vocab_size=vocab)
    tiny_model = Encoder(tiny)
    assert count_parameters(tiny_model) == parameter_count(tiny)
    # float32 weight file under 40 MB with the v4+v6 vocabulary (18,785 tokens: the embedding is half of it)
    assert parameter_count(tiny) * 4 < 40e6
    base = EncoderConfig.preset("base")
    large = EncoderConfig.preset("large")
    assert (base.num_layers, base.hidden_size, large.num_layers, large.hidden_size, large.num_heads) == \
        (12, 768, 24, 1024, 16)
    # ERNIE/RoBERTa-large's ~325M text parameters (plus the pooler they carry, which we drop)
    assert 320e6 < parameter_count(large, with_layout=False) + 1024 * 1025 < 330e6
    with pytest.raises(ValueError, match="unknown encoder preset"):
        EncoderConfig.preset("huge")
    with pytest.raises(ValueError, match="not divisible"):
        EncoderConfig(hidden_size=30, num_heads=4)
