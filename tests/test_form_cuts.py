"""Learned cuts of colon-less lines (models/extraction/form_cuts.py): OCR read a label and its value as one
line (研究方向 思想政治教育, 学校代码10623); the cut model says where the value starts, the decoder splits the
line there, the model travels in pair_scorer.json, and the trainer labels real lines and glued copies."""
from __future__ import annotations

import random

import numpy as np
import pytest

from data.document import Line, Page, box_to_quad
from models.extraction import PagePrediction
from models.extraction.form_cuts import FEATURES, CutModel, cut_features, cut_label, fit_cuts, places
from models.extraction.forms import decode_form
from models.extraction.pair_scorer import PairScorer, PairScorerError

LABELS = ["O", "B-question", "I-question", "B-answer", "I-answer"]
NO_TAGS = np.zeros((0, 4))

# what a form prints: labels (never a known word's whole list) and values of many kinds
TRAIN_PAIRS = [("企业名称", "成都鼎意家居用品有限公司"), ("开户银行", "招商银行"), ("申请人", "龙燕鹏"),
               ("出生日期", "1991-12-15"), ("证件号码", "440106198410079543"), ("所在学院", "医学院"),
               ("联系电话", "0755-79484886"), ("注册资本", "贰仟万元整"), ("受理编号", "3478105"),
               ("毕业院校", "清华大学"), ("就诊科室", "妇产科"), ("邮政编码", "610041"), ("辅导员", "司马艳磊"),
               ("项目类别", "重点项目"), ("紧急联系人", "周敏"), ("入职时间", "2020年7月")]
WHOLE = ["身份证号码", "工作单位及职务", "单位信息", "合作单位信息表", "北京市朝阳区建国路88号", "思想政治教育",
         "2024-03-28", "袁梓副教授", "中国工商银行北京分行", "新媒体环境下高校思想政治教育创新研究", "学位类别"]


def _rows() -> list[tuple[list[dict[str, float]], int]]:
    rng = random.Random(0)
    rows = []
    for k, v in TRAIN_PAIRS:
        for sep in ("", " ", "  "):
            text = k + sep + v
            rows.append((cut_features(text, NO_TAGS), places(text).index(len(k) + len(sep))))
        for text in (k, v):
            if places(text):
                rows.append((cut_features(text, NO_TAGS), -1))
    for text in WHOLE:
        rows.append((cut_features(text, NO_TAGS), -1))
    rng.shuffle(rows)
    return rows


def test_places_are_where_a_value_could_start():
    assert places("密级公开") == [1, 2, 3]
    assert places("UDC 37") == [1, 2, 4, 5]              # after the space, not on it
    assert places("号") == []
    assert len(places("新媒体环境下高校思想政治教育创新研究")) == 14    # a label is at most cut_max long
    f = cut_features("学校代码 10623", NO_TAGS)
    at = places("学校代码 10623").index(5)
    assert f[at]["space"] == 1.0 and f[at]["ending"] == 1.0 and f[at]["suf_starts_digit"] == 1.0
    assert all(list(x) == list(FEATURES) for x in f)


def test_cut_label_reads_the_truth():
    pairs = [("研究方向", "思想政治教育"), ("论文提交日期", "2024-03-28")]
    printed = ["研究方向", "思想政治教育", "论文提交日期", "2024-03-28", "武汉大学"]
    assert cut_label("研究方向 思想政治教育", pairs, printed) == 5
    assert cut_label("论文提交日期2024-03-28", pairs, printed) == 6
    assert cut_label("论文提交日期2024-03-23", pairs, printed) == 6      # an OCR slip in the value
    assert cut_label("武汉大学", pairs, printed) is None                  # one printed line: no cut
    assert cut_label("思想政治教育武汉大学", pairs, printed) is False       # neither: not an example


def test_a_fitted_cut_model_cuts_labels_it_never_saw_from_their_values_and_leaves_whole_lines():
    model = fit_cuts(_rows(), hidden=8, seed=0)
    assert model.cut("学校代码 10623", NO_TAGS) == 5
    assert model.cut("联系人袁涵玲", NO_TAGS) is not None
    assert model.cut("银行账号 6222021234567890", NO_TAGS) == 5
    for whole in ("身份证号码", "思想政治教育"):
        assert model.cut(whole, NO_TAGS) is None, whole
    back = CutModel.from_dict(model.to_dict())
    assert back.cut("学校代码 10623", NO_TAGS) == 5


def _page(lines: list[tuple[str, list[float]]]) -> tuple[Page, PagePrediction]:
    page = Page(index=0, width=1200, height=1600,
                lines=[Line(text=t, quad=box_to_quad(b), score=0.99) for t, b in lines])
    probs = [np.eye(len(LABELS))[np.zeros(len(t), int)] for t, _ in lines]     # the encoder says "other"
    return page, PagePrediction(np.zeros(1), probs, lambda a, b: None)


def test_the_decoder_cuts_where_the_model_says_and_the_rule_switch_falls_back_to_known_labels():
    page, pred = _page([("学校代码 10623", [68, 85, 232, 109]), ("研究生姓名", [448, 627, 583, 656]),
                        ("徐磊磊", [600, 627, 665, 656])])
    model = fit_cuts(_rows(), hidden=8, seed=0)
    pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                  mode="rerank", weight=0.0, cuts=model)
    got = [(p.key, p.value) for p in decode_form(page, pred, LABELS)]
    assert ("学校代码", "10623") in got and ("研究生姓名", "徐磊磊") in got
    # switched off: form_pieces.inline_label knows no 代码 label, the line stays one piece and no pair
    off = [(p.key, p.value) for p in decode_form(page, pred, LABELS, off=frozenset({"form_cuts"}))]
    assert ("学校代码", "10623") not in off and ("研究生姓名", "徐磊磊") in off


def test_cuts_travel_in_the_scorer_file_and_a_foreign_one_is_refused():
    model = fit_cuts(_rows(), hidden=0, seed=0)
    s = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1), cuts=model)
    back = PairScorer.from_dict(s.to_dict())
    assert back.cuts is not None and back.cuts.cut("学校代码 10623", NO_TAGS) == model.cut("学校代码 10623", NO_TAGS)
    assert PairScorer.from_dict({k: v for k, v in s.to_dict().items() if k != "cuts"}).cuts is None
    bad = s.to_dict()
    bad["cuts"]["features"][0] = "no_such_feature"
    with pytest.raises(PairScorerError, match="no_such_feature"):
        PairScorer.from_dict(bad)


def test_the_trainer_labels_real_lines_and_glues_copies_of_true_pairs():
    from training.pair_scorer import FormPage, cut_lines
    page, pred = _page([("学位类别学士", [493, 563, 648, 590]), ("研究方向", [425, 571, 520, 595]),
                        ("中国现当代文学", [540, 571, 695, 595]), ("武汉大学", [540, 220, 712, 267])])
    gold = [("学位类别", "学士"), ("研究方向", "中国现当代文学")]
    truth = [(t, lab, [0.0, 0.0, 1.0, 1.0]) for t, lab in (("学位类别", "question"), ("学士", "answer"),
                                                          ("研究方向", "question"), ("中国现当代文学", "answer"),
                                                          ("武汉大学", "header"))]
    fp = FormPage("form_cover", "none", "ocr", page, pred, gold, np.zeros(0), np.zeros(0), truth)
    real, glued = cut_lines(_Ex(), fp, random.Random(0))
    # (武汉大学, the page's title in large type, is never cut: not an example)
    assert [(t, c) for t, _, c in real] == [("学位类别学士", 4), ("研究方向", None), ("中国现当代文学", None)]
    # 研究方向 and its value are lines of their own: glued into one, cut where the key ends
    assert len(glued) == 1 and glued[0][0].startswith("研究方向") and glued[0][0].endswith("中国现当代文学")
    assert glued[0][2] == len(glued[0][0]) - len("中国现当代文学") and len(glued[0][1]) == len(glued[0][0])


class _Ex:
    tag_labels = LABELS


class _CutsAfterThree:
    """A cut model that cuts every line after its third character (before a box after two)."""
    def cut(self, text, mass, known=False):
        return 2 if text[2:3] == "□" else 3 if len(text) > 3 else None


def test_a_printed_option_is_never_cut_off_as_a_label():
    from models.extraction.form_pieces import split_line
    page, _ = _page([("□A型 □B型", [159, 537, 280, 563]), ("血型□A型", [77, 524, 200, 550])])
    options = split_line(page, 0, NO_TAGS, cuts=_CutsAfterThree())      # type: ignore[arg-type]
    assert [(p.text, p.colon_key, p.value) for p in options] == [("□A型 □B型", False, None)]
    glued = split_line(page, 1, NO_TAGS, cuts=_CutsAfterThree())        # type: ignore[arg-type]
    assert glued[0].text == "血型" and glued[0].value is not None and glued[0].value.text == "□A型"
