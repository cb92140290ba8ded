"""Tokenizer: offsets and boxes round-trip, long numbers stay exact, windows cover every character."""
from __future__ import annotations

import numpy as np
import pytest

from data.document import Line, box_to_quad
from models.tokenizer import DEFAULT_VOCAB, Tokenizer, char_quads
from models.vocab.build import SPECIALS, build_vocab, ppocr_dictionary, v6_characters


def _lines() -> list[Line]:
    return [
        Line("增值税专用发票", box_to_quad([300, 20, 720, 70])),
        Line("发票号码: 24312000000123456789", box_to_quad([40, 100, 640, 130])),
        Line("名 称：上海某某科技有限公司", box_to_quad([40, 150, 520, 180])),
        Line("统一社会信用代码 91310115MA1K4QXX2Y", [[40, 200], [700, 210], [699, 240], [39, 230]]),
    ]


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_dir(None)


def test_default_vocab_is_the_committed_build_of_both_ocr_dictionaries(tok):
    assert tok.vocab == build_vocab(ppocr_dictionary(), v6_characters())   # rebuild matches the committed file
    v4_only = build_vocab(ppocr_dictionary())
    assert tok.vocab[:len(v4_only)] == v4_only        # v6's characters are appended: v4-era ids unchanged
    assert tok.vocab[:5] == SPECIALS
    for ch in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz增值税发票￥發購銷稅":
        assert tok.char_id(ch) != tok.unk_id, ch
    assert len(set(tok.vocab)) == len(tok.vocab)
    assert DEFAULT_VOCAB.stat().st_size < 200_000


def test_every_char_of_a_span_decodes_to_the_original_text(tok):
    lines = _lines()
    enc = tok.encode_page(lines, 800, 300, max_len=128)
    assert len(enc) == sum(sum(not c.isspace() for c in ln.text) for ln in lines)
    for li, ln in enumerate(lines):
        toks = [t for t in range(len(enc)) if enc.line[t] == li]
        assert enc.text(toks[0], toks[-1]) == ln.text.strip()
        for t in toks:                                     # each token is exactly one character
            assert enc.text(t, t) == ln.text[enc.start[t]:enc.end[t]]
    # a span crossing lines joins the original pieces
    t_code = [t for t in range(len(enc)) if enc.line[t] == 3][-1]
    assert enc.text(0, t_code).startswith("增值税专用发票发票号码:") and enc.text(0, t_code).endswith("2Y")
    # page-text offsets index the page text the way Field.span promises
    page_text = "\n".join(ln.text for ln in lines)
    s, e = enc.page_span(t_code - 17, t_code)
    assert page_text[s:e] == "91310115MA1K4QXX2Y"


def test_long_digit_strings_are_one_token_per_digit(tok):
    number = "24312000000123456789"
    enc = tok.encode_page([Line(f"No{number}", box_to_quad([0, 0, 220, 20]))], 220, 20, max_len=64)
    digits = enc.ids[2:]
    assert len(digits) == 20
    assert [tok.vocab[i] for i in digits] == list(number)
    assert enc.text(2, 21) == number


def test_unknown_chars_map_to_unk_but_decode_to_themselves():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "发", "票", "1", "2", "a"]
    tok = Tokenizer(vocab)
    enc = tok.encode_page([Line("发票Ａ12㐀", box_to_quad([0, 0, 100, 10]))], 100, 10, max_len=16)
    # 'Ａ' (full-width) -> NFKC 'A' -> lower 'a'; '㐀' is unknown
    assert [tok.vocab[i] for i in enc.ids] == ["发", "票", "a", "1", "2", "[UNK]"]
    assert enc.text(0, len(enc) - 1) == "发票Ａ12㐀"
    assert enc.text(5, 5) == "㐀"


def test_char_boxes_split_the_line_and_stay_inside_it(tok):
    lines = _lines()
    enc = tok.encode_page(lines, 800, 300, max_len=128, box="char")
    for t in range(len(enc)):
        lb = lines[enc.line[t]].box
        x0, y0, x1, y1 = enc.char_box[t]
        assert lb[0] - 1e-6 <= x0 < x1 <= lb[2] + 1e-6 and lb[1] - 1e-6 <= y0 < y1 <= lb[3] + 1e-6
    # characters advance left to right along the line; CJK is twice as wide as a digit
    first = [t for t in range(len(enc)) if enc.line[t] == 1]
    xs = [enc.char_box[t][0] for t in first]
    assert xs == sorted(xs)
    cjk_w = enc.char_box[first[0]][2] - enc.char_box[first[0]][0]
    digit_w = enc.char_box[first[-1]][2] - enc.char_box[first[-1]][0]
    assert cjk_w == pytest.approx(2 * digit_w)
    # quads of a tilted line tile it exactly
    quads = char_quads("ab增", [[0, 0], [40, 10], [38, 30], [-2, 20]])
    assert quads[0][0] == [0, 0] and quads[-1][1] == [40, 10] and quads[-1][2] == [38, 30]
    # normalised boxes: 0..1000, line mode gives each token its line's box
    arr = tok.encode_page(lines, 800, 300, max_len=128).arrays()
    assert arr["bbox"].min() >= 0 and arr["bbox"].max() <= 1000
    assert list(arr["bbox"][0, 1]) == [375, 67, 900, 233]     # line 0 box [300,20,720,70] on 800x300


def test_windows_cover_every_token_with_overlap(tok):
    lines = [Line(f"第{i}行金额{i * 37}元", box_to_quad([10, 10 + 20 * i, 300, 28 + 20 * i])) for i in range(40)]
    enc = tok.encode_page(lines, 320, 900, max_len=32, stride=8)
    assert len(enc.windows) > 5
    seen = np.zeros(len(enc), dtype=int)
    for a, b in zip(enc.windows, enc.windows[1:]):
        assert b.start < a.end                           # consecutive windows overlap
    for w in enc.windows:
        seen[w.start:w.end] += 1
        assert w.input_ids[0] == tok.cls_id and w.input_ids[w.end - w.start + 1] == tok.sep_id
        assert len(w.input_ids) == 32 and sum(w.attention_mask) == w.end - w.start + 2
        assert w.input_ids[1:w.end - w.start + 1] == enc.ids[w.start:w.end]
    assert seen.min() >= 1
    # merging per-window values picks a copy of each token: the page ids come back exactly
    arr = enc.arrays()
    np.testing.assert_array_equal(enc.merge(arr["input_ids"]), enc.ids)
    np.testing.assert_array_equal(enc.merge(arr["bbox"]), enc.bbox)
    labels = np.arange(len(enc))
    scattered = enc.scatter(labels)
    np.testing.assert_array_equal(enc.merge(scattered), labels)
    assert (scattered[:, 0] == -100).all()


def test_checkpoint_vocab_is_used_and_missing_vocab_is_an_error(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n的\n", encoding="utf-8")
    tok = Tokenizer.from_dir(tmp_path)
    assert tok.vocab_size == 6 and tok.char_id("的") == 5 and tok.char_id("是") == tok.unk_id
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        Tokenizer.from_dir(tmp_path / "nothing")


def test_empty_page_gives_one_window_of_specials(tok):
    enc = tok.encode_page([], 100, 100, max_len=8)
    assert len(enc) == 0 and len(enc.windows) == 1
    assert enc.windows[0].input_ids[:2] == [tok.cls_id, tok.sep_id]
    assert enc.merge(enc.arrays()["input_ids"]).shape == (0,)
