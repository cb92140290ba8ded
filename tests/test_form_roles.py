"""Learned piece roles for generic forms (models/extraction/form_roles.py): the decoder reads them in place of
the encoder's tags, they travel in pair_scorer.json, and they learn from generated pages of training layouts
to tell labels from answers on a layout the encoder never saw."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from data.document import Line, Page, box_to_quad
from models.extraction import PagePrediction
from models.extraction.form_pieces import label_masses, split_line
from models.extraction.form_roles import (
    FEATURES,
    ROLES,
    RoleModel,
    fit_roles,
    merge,
    piece_features,
    relabel,
    role_labels,
    runs,
)
from models.extraction.forms import decode_form
from models.extraction.pair_scorer import PairScorer, PairScorerError
from models.extraction.settings import DEFAULT_SETTINGS, DecodeSettings

LABELS = ["O", "B-question", "I-question", "B-answer", "I-answer"]


def _page(lines: list[tuple[str, list[float]]]) -> tuple[Page, PagePrediction]:
    page = Page(index=0, width=1200, height=1600,
                lines=[Line(text=t, quad=box_to_quad(b), score=0.99) for t, b in lines])
    probs = [np.eye(len(LABELS))[np.zeros(len(t), int)] for t, _ in lines]     # the encoder says "other"
    return page, PagePrediction(np.zeros(1), probs, lambda a, b: None)


def _roles(weights: dict[str, dict[str, float]], bias: dict[str, float] | None = None) -> RoleModel:
    """A linear role model reading only the named features: {role: {feature: weight}}."""
    n = len(FEATURES)
    w = np.zeros((n, len(ROLES)))
    for role, ws in weights.items():
        for name, v in ws.items():
            w[FEATURES.index(name), ROLES.index(role)] = v
    b = np.array([(bias or {}).get(r, 0.0) for r in ROLES])
    return RoleModel(list(FEATURES), np.zeros(n), np.ones(n), w, b)


def _pieces(page: Page, pred: PagePrediction) -> tuple[list, list]:
    masses = label_masses(pred.probs, LABELS)
    return runs([p for li in range(len(page.lines)) for p in split_line(page, li, masses[li])]), masses


# a grid row and a cover line: 项目名称 | 城市更新示范工程 ; 负责人：王小明
ROWS = [("项目名称", [100, 100, 220, 130]), ("城市更新示范工程", [300, 100, 520, 130]),
        ("负责人：王小明", [100, 200, 320, 230])]
# first in its row -> question, the rest and what follows a colon answer (a model that learned "labels open rows")
FIRST_IS_KEY = {"question": {"first_in_row": 6.0}, "answer": {"has_left": 6.0, "after_colon": 12.0}}


def test_features_describe_each_run_in_its_row():
    page, pred = _page(ROWS)
    pieces, masses = _pieces(page, pred)
    assert [p.text for p in pieces] == ["项目名称", "城市更新示范工程", "负责人", "王小明"]   # the colon's answer too
    f = piece_features(page, pieces, masses)
    assert all(list(x) == list(FEATURES) for x in f)
    assert f[0]["first_in_row"] == 1.0 and f[0]["has_right"] == 1.0 and f[0]["ending"] == 1.0   # 称 ends labels
    assert f[1]["first_in_row"] == 0.0 and f[1]["left_ending"] == 1.0
    assert f[2]["colon_key"] == 1.0 and f[2]["has_colon_value"] == 1.0 and f[2]["after_colon"] == 0.0
    assert f[3]["colon_key"] == 0.0 and f[3]["after_colon"] == 1.0


def test_relabel_writes_the_roles_over_each_run_and_the_decoder_reads_them():
    page, pred = _page(ROWS)
    pieces, masses = _pieces(page, pred)
    out = relabel(page, pieces, masses, _roles(FIRST_IS_KEY))
    assert out[0][:, 0].min() > 0.9                        # 项目名称: question over every character
    assert out[1][:, 1].min() > 0.9                        # the company: answer
    assert out[2][:3, 0].min() > 0.9 and out[2][4:, 1].min() > 0.9   # 负责人 question, 王小明 (after the colon) answer
    assert masses[0][:, 3].min() == 1.0                    # the encoder's masses are left as they were
    hand = [(p.key, p.value) for p in decode_form(page, pred, LABELS)]
    assert ("项目名称", "城市更新示范工程") in hand

    def decoded(roles: RoleModel, off: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                      mode="rerank", weight=0.0, roles=roles)
        return [(p.key, p.value) for p in decode_form(page, pred, LABELS, off=off)]
    # roles that call what opens a row a header: the decoder reads them, and a header is nobody's key
    header = _roles({"header": {"first_in_row": 6.0}, "answer": {"has_left": 6.0}})
    assert ("项目名称", "城市更新示范工程") not in decoded(header)
    assert ("项目名称", "城市更新示范工程") in decoded(header, frozenset({"form_roles"}))    # switched off by name
    assert ("项目名称", "城市更新示范工程") in decoded(_roles(FIRST_IS_KEY))


def test_a_piece_the_roles_call_a_label_is_nobodys_value():
    # two headings of a table's columns side by side: 第一债务人 | 第二债务人
    page, pred = _page([("第一债务人", [100, 100, 250, 130]), ("第二债务人", [400, 100, 550, 130])])
    # roles: the left one a sure label, the right one leaning label (question 0.6, answer 0.1)
    roles = _roles({"question": {"first_in_row": 6.0, "has_left": 2.0}, "header": {"has_left": 0.3},
                    "answer": {"has_left": 0.5}}, {"other": -5.0})

    def decoded(st: DecodeSettings) -> list[tuple[str, str]]:
        pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                      mode="rerank", weight=0.0, roles=roles)
        return [(p.key, p.value) for p in decode_form(page, pred, LABELS, st)]
    assert decoded(DEFAULT_SETTINGS) == []
    # without the veto the sure label takes the less sure one as its value: the key-score margin allows it
    assert decoded(replace(DEFAULT_SETTINGS, form_role_label=9.0)) == [("第一债务人", "第二债务人")]


def test_a_sentence_the_roles_call_an_answer_is_a_value():
    # 申请理由 | 因工作需要赴外地出差，需办理相关手续: a comma reads as an instruction to the text rules,
    # but the roles call the label a question and the sentence an answer
    page, pred = _page([("申请理由", [593, 264, 677, 293]),
                        ("因工作需要赴外地出差，需办理相关手续", [692, 263, 1054, 287])])
    roles = _roles({"question": {"first_in_row": 6.0}, "answer": {"has_left": 6.0}}, {"other": -5.0})

    def decoded(st: DecodeSettings) -> list[tuple[str, str]]:
        pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                      mode="rerank", weight=0.0, roles=roles)
        return [(p.key, p.value) for p in decode_form(page, pred, LABELS, st)]
    assert decoded(DEFAULT_SETTINGS) == [("申请理由", "因工作需要赴外地出差，需办理相关手续")]
    assert decoded(replace(DEFAULT_SETTINGS, form_role_answer=9.0)) == []      # the sentence veto alone
    # prose that ends its sentences is a form's notes, whatever the roles say (XFUND: 市政府隐私声明 | 市政府收集…。)
    page, pred = _page([("市政府隐私声明", [593, 264, 760, 293]),
                        ("市政府收集的所有个人信息都将用于市政府的业务目的并得到保密。如需更多信息，请参见隐私声明。",
                         [780, 263, 1180, 287])])
    assert decoded(DEFAULT_SETTINGS) == []
    # ... but one sentence that ends the value is an answer (经营范围 | 技术转让;技术开发、信息系统集成服务。)
    page, pred = _page([("经营范围", [593, 264, 677, 293]),
                        ("技术转让;技术开发、信息系统集成服务。", [692, 263, 1054, 287])])
    assert decoded(DEFAULT_SETTINGS) == [("经营范围", "技术转让;技术开发、信息系统集成服务。")]
    # ... and so is one closed by a bracketed note (a business scope's 依法须经批准的项目… after its last 。)
    scope = "技术转让、信息系统集成服务。（依法须经批准的项目，经相关部门批准后方可开展经营活动）"
    page, pred = _page([("经营范围", [593, 264, 677, 293]), (scope, [692, 263, 1154, 287])])
    assert decoded(DEFAULT_SETTINGS) == [("经营范围", scope)]


def test_the_text_right_after_a_colon_is_its_keys_answer_whatever_the_roles_say():
    # OCR read the answer as a line of its own, touching the colon; the roles lean "label" on both
    page, pred = _page([("所在学院：", [491, 726, 608, 752]), ("文学院", [598, 726, 679, 751])])
    roles = _roles({"question": {"first_in_row": 6.0, "has_left": 3.0}, "answer": {"has_left": 1.0}},
                   {"other": -5.0})
    pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                  mode="rerank", weight=0.0, roles=roles)
    assert [(p.key, p.value) for p in decode_form(page, pred, LABELS)] == [("所在学院", "文学院")]
    # far out on the row it is no longer "right after the colon": the veto holds
    page, pred2 = _page([("所在学院：", [491, 726, 608, 752]), ("文学院", [900, 726, 981, 751])])
    pred2.pair_scorer = pred.pair_scorer
    assert decode_form(page, pred2, LABELS) == []


def test_roles_travel_in_the_scorer_file_and_a_foreign_one_is_refused():
    roles = _roles(FIRST_IS_KEY, {"other": 0.5})
    s = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1), roles=roles)
    back = PairScorer.from_dict(s.to_dict())
    assert back.roles is not None
    x = np.random.default_rng(0).normal(size=(5, len(FEATURES)))
    assert np.allclose(back.roles.predict(x), roles.predict(x), atol=1e-5)
    assert PairScorer.from_dict({k: v for k, v in s.to_dict().items() if k != "roles"}).roles is None
    bad = s.to_dict()
    bad["roles"]["features"][0] = "no_such_feature"
    with pytest.raises(PairScorerError, match="no_such_feature"):
        PairScorer.from_dict(bad)
    bad = s.to_dict()
    bad["roles"]["w1"] = [[1.0]]
    with pytest.raises(PairScorerError, match="shapes"):
        PairScorer.from_dict(bad)


def test_role_labels_match_pieces_to_the_printed_lines():
    page, pred = _page(ROWS + [("二、备注", [100, 300, 220, 330])])
    pieces, _ = _pieces(page, pred)
    truth = [("项目名称", "question", [100, 100, 220, 130]), ("城市更新示范工程", "answer", [300, 100, 520, 130]),
             ("负责人：", "question", [100, 200, 170, 230]), ("王小明", "answer", [180, 200, 320, 230])]
    got = [ROLES[i] for i in role_labels(pieces, truth)]
    assert got == ["question", "answer", "question", "answer", "other"]    # 二、备注 is printed nowhere in truth


def test_fit_roles_learns_a_separable_rule():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3))
    y = np.where(x[:, 0] > 0.5, 0, np.where(x[:, 1] > 0, 1, 3))
    for hidden in (0, 8):
        m = fit_roles(x, y, ["len", "digits", "latin"], hidden, epochs=400, lr=0.05)
        assert (m.predict(x).argmax(1) == y).mean() > 0.9
        assert RoleModel.from_dict(m.to_dict()).predict(x[:3]) == pytest.approx(m.predict(x[:3]), abs=1e-4)
    # an ensemble is one MLP whose logits are the mean of its members' logits
    members = [fit_roles(x, y, ["len", "digits", "latin"], 8, epochs=100, seed=s) for s in (3, 4)]
    both = merge(members)
    assert both.w1.shape == (3, 16)
    assert both.logits(x[:5]) == pytest.approx((members[0].logits(x[:5]) + members[1].logits(x[:5])) / 2, abs=1e-9)
    assert (fit_roles(x, y, ["len", "digits", "latin"], 8, epochs=100, seed=3, members=2).logits(x[:5]) ==
            pytest.approx(both.logits(x[:5]), abs=1e-9))


@pytest.mark.heavy
def test_roles_learned_on_training_layouts_tell_labels_from_answers_on_a_layout_the_encoder_never_saw():
    from models.extractor import Extractor
    from training.pair_scorer import FormPage, collect, fit_role_model, generated_page, role_data
    ex = Extractor.load("models/default")
    fps = collect(ex, ["form_grid", "form_apply", "form_clinic"], 9, 11, [])
    assert all(fp.truth for fp in fps)
    roles, about = fit_role_model(ex, fps)
    assert about["pieces"] > 100 and about["cv_piece_accuracy"] is not None
    right = total = 0
    for seed in (77, 78):                                  # form_rows: held out of the bundled model's training
        page, gold, _, truth = generated_page("form_rows", "light", seed)
        fp = FormPage("form_rows", "light", "gen", page, ex.predict_page(page), gold, np.zeros(0), np.zeros(0),
                      truth)
        x, _, y = role_data(ex, fp)
        right += int((roles.predict(x).argmax(1) == y).sum())
        total += len(y)
    assert total > 20 and right >= 0.75 * total


def test_a_piece_the_roles_call_an_answer_is_no_part_of_a_label_over_two_lines():
    # 朱轩秀 over 汉族 (the next row's value) ends as labels end (族): only the roles tell it is no label
    page, pred = _page([("姓名", [68, 94, 141, 122]), ("朱轩秀", [147, 98, 202, 124]),
                        ("民族", [67, 129, 140, 156]), ("汉族", [144, 128, 187, 156])])
    pred.pair_scorer = PairScorer(["where_colon"], np.zeros(1), np.ones(1), np.zeros((1, 1)), np.zeros(1),
                                  mode="rerank", weight=0.0, roles=_roles(FIRST_IS_KEY, {"other": -5.0}))
    assert [(p.key, p.value) for p in decode_form(page, pred, LABELS)] == [("姓名", "朱轩秀"), ("民族", "汉族")]
    joined = decode_form(page, pred, LABELS, replace(DEFAULT_SETTINGS, form_role_answer=9.0))
    assert ("姓名", "朱轩秀汉族") in [(p.key, p.value) for p in joined]
