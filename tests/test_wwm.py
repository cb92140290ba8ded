"""Whole-word masking: chosen spans are whole jieba words or whole alphanumeric runs, the rate is near
15% over a corpus, and the 80/10/10 split holds per word."""
from __future__ import annotations

import random

import pytest

from data.document import Line, box_to_quad
from models.tokenizer import Tokenizer
from training.wwm import IGNORE, mask_window, word_spans

PHRASES = ["增值税专用发票", "发票号码：", "04451234", "开票日期：2024年03月05日", "购买方名称：北京星河科技有限公司",
           "纳税人识别号：91110108MA01ABCD2X", "价税合计（大写）壹仟贰佰叁拾肆圆伍角整", "（小写）¥1234.50",
           "销售方：上海明远贸易有限公司", "地址、电话：上海市浦东新区世纪大道100号 021-58881234",
           "开户行及账号：中国工商银行上海分行 6222021001234567890", "收款人：王芳", "复核：李强", "备注"]
TOK = Tokenizer.from_dir(None)        # the extractor's own tokenizer and from-scratch vocabulary


def corpus_pages(n: int, seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    return [[" ".join(rng.sample(PHRASES, 2)) for _ in range(rng.randint(4, 10))] for _ in range(n)]


def encode(lines: list[str], max_len=64):
    """The page as the model sees it: windows that may cut a line (and a word) at their edges."""
    enc = TOK.encode_page([Line(t, box_to_quad([0, 20 * i, 500, 20 * i + 18])) for i, t in enumerate(lines)],
                          1000, 1000, max_len=max_len)
    return enc, enc.windows


def test_word_spans_keep_alphanumeric_runs_whole():
    text = "纳税人识别号：91110108MA01ABCD2X 合计¥1234.50"
    words = [text[s:e] for s, e in word_spans(text)]
    assert "91110108MA01ABCD2X" in words and "1234.50" in words
    assert "".join(words) == text.replace(" ", "")          # every non-space character, once, in order


def test_every_masked_span_is_a_whole_word():
    pages = corpus_pages(30)
    rng = random.Random(1)
    checked = 0
    for lines in pages:
        enc, windows = encode(lines)
        for w in windows:
            m = mask_window(enc, w, TOK, rng)
            chosen = {p for word in m.words for p in word}
            assert {i for i, label in enumerate(m.labels) if label != IGNORE} == chosen
            assert all(m.input_ids[i] == w.input_ids[i] for i in range(len(w.input_ids)) if i not in chosen)
            assert all(1 <= p <= w.end - w.start for p in chosen)          # never [CLS], [SEP] or padding
            for word in m.words:
                toks = [w.start + p - 1 for p in word]                       # position -> page token
                li = enc.line[toks[0]]
                assert {enc.line[t] for t in toks} == {li}
                span = (enc.start[toks[0]], enc.end[toks[-1]])
                assert span in word_spans(lines[li]), lines[li][span[0]:span[1]]
                # all characters of a word share one fate: all [MASK], or none
                masked = [m.input_ids[p] == TOK.mask_id for p in word]
                assert all(masked) or not any(masked)
                checked += 1
    assert checked > 200


def test_words_cut_by_a_window_edge_are_never_chosen():
    enc, windows = encode(["纳税人识别号：91110108MA01ABCD2X 开户行及账号：中国工商银行上海分行"] * 3, max_len=24)
    assert len(windows) > 2
    for w in windows:
        for _ in range(20):
            m = mask_window(enc, w, TOK, random.Random(_))
            for word in m.words:
                toks = [w.start + p - 1 for p in word]
                whole = enc.texts[enc.line[toks[0]]]
                assert (enc.start[toks[0]], enc.end[toks[-1]]) in word_spans(whole)


def test_rate_and_80_10_10_over_a_corpus():
    pages = corpus_pages(200, seed=3)
    rng = random.Random(7)
    tokens = chosen = 0
    fate = {"mask": 0, "random_or_keep": 0, "keep": 0}
    for lines in pages:
        enc, windows = encode(lines, max_len=128)
        for w in windows:
            m = mask_window(enc, w, TOK, rng)
            tokens += w.end - w.start
            chosen += sum(1 for label in m.labels if label != IGNORE)
            for word in m.words:
                if m.input_ids[word[0]] == TOK.mask_id:
                    fate["mask"] += 1
                else:
                    fate["random_or_keep"] += 1
                    fate["keep"] += all(m.input_ids[p] == w.input_ids[p] for p in word)
                    specials = {TOK.pad_id, TOK.unk_id, TOK.cls_id, TOK.sep_id, TOK.mask_id}
                    assert not specials & {m.input_ids[p] for p in word}
    assert 0.13 <= chosen / tokens <= 0.155, chosen / tokens
    words = fate["mask"] + fate["random_or_keep"]
    assert 0.76 <= fate["mask"] / words <= 0.84
    assert 0.07 <= fate["keep"] / words <= 0.13


@pytest.mark.heavy
def test_short_pretrain_through_the_engine_lowers_mlm_loss(tmp_path):
    from data.corpus import read_corpus
    from models.extractor import Extractor
    from tests.test_retrain import make_base, make_corpus
    from training.pretrain import pretrain
    corpus, base = make_corpus(tmp_path / "c", 20), make_base(tmp_path / "base", hidden=64, layers=2)
    out = tmp_path / "adapted"
    r = pretrain(read_corpus(corpus), base, out, steps=30, batch_size=8, lr=2e-3,
                 pipe={"stages": 2, "micro_batches": 2})
    assert "pipeline engine (2 stages" in r["step_function"]
    assert r["mlm_loss_after"] < 0.8 * r["mlm_loss_before"], r
    Extractor.load(out)      # the fine-tune (and the app) can start from the adapted encoder
