"""Calibrated field confidence and straight-through documents (issue 40, item 4: where to look).

The calibration (models/calibration.py) is fitted on synthetic rows here, deterministic; it is stored in and
read from a model directory through models/model_dir.py (ignored once the weights change); the extractor
applies it where a document's fields are finalised, keeping the model's own probability in
`Field.model_score`; a document with nothing to look at is `straight_through`."""
from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from data.document import Document, Field, Line, Page, box_to_quad
from data.schemas import load_schema
from data.validate import CALIBRATED_REVIEW_THRESHOLD, REVIEW_THRESHOLD, needs_review, straight_through, validate
from models.calibration import FEATURES, RULE_SCORE, Calibration, calibrate, field_features, fit
from models.extractor import Extractor
from models.model_dir import (
    FIELD_CALIBRATION,
    WEIGHTS,
    ModelDirError,
    read_field_calibration,
    write_field_calibration,
)


def synthetic_rows() -> list[dict]:
    """Rows where a failed check or a poorly read line means wrong, a passed check right, and the model's
    probability says little (it is high on wrong and right fields alike), as on real pages."""
    rows = []
    for i in range(400):
        checked = i % 3 == 0
        poor_line = i % 7 == 0
        wrong = (poor_line and i % 2 == 0) or (not checked and i % 11 == 0)
        x = {n: 0.0 for n in FEATURES}
        x.update(model_logit=4.0 + (i % 5) * 0.3, line_ocr_logit=0.5 if poor_line else 6.0, page_ocr_logit=4.5,
                 check_passed=float(checked and not wrong), free_text=float(not checked), log_length=2.0)
        rows.append({"features": x, "right": not wrong})
    return rows


def test_fit_is_deterministic_and_learns_the_evidence_not_the_softmax():
    rows = synthetic_rows()
    a, b = fit(rows), fit(list(rows))
    assert a.weights == b.weights and a.bias == b.bias, "the same rows give the same weights"
    w = dict(zip(a.features, a.weights))
    assert w["line_ocr_logit"] > 0 and w["check_passed"] > 0, w
    base = {n: 0.0 for n in FEATURES} | {"model_logit": 4.6, "page_ocr_logit": 4.5, "log_length": 2.0}
    poorly_read = a.probability(base | {"line_ocr_logit": 0.5, "free_text": 1.0})
    checked = a.probability(base | {"line_ocr_logit": 6.0, "check_passed": 1.0})
    assert poorly_read < 0.8 < checked, (poorly_read, checked)
    rate = sum(r["right"] for r in rows) / len(rows)
    mean = sum(a.probability(r["features"]) for r in rows) / len(rows)
    assert abs(mean - rate) < 0.01, "calibrated: the mean probability is the share of right fields"
    with pytest.raises(ValueError, match="right and wrong"):
        fit([r for r in rows if r["right"]])


def page_with(score_of_line: float, reader: str = "ocr") -> Page:
    lines = [Line("发票号码：12345678", box_to_quad([0, 0, 100, 20]), 0.99),
             Line("销售方：丁科技有限公司", box_to_quad([0, 30, 100, 50]), score_of_line)]
    return Page(index=0, width=300, height=200, lines=lines, reader=reader)


def test_features_read_the_ocr_of_the_value_s_own_line_and_trust_a_text_layer():
    seller = Field("seller_name", "丁科技有限公司", raw="丁科技有限公司", score=0.97, span=[18, 25])
    doc = Document(pages=[page_with(0.61)], fields={"seller_name": seller})
    x = field_features(doc, seller, "text")
    assert x["line_ocr_logit"] == pytest.approx(math.log(0.61 / 0.39), abs=1e-3), "the seller's line, not the page"
    assert x["page_ocr_logit"] == pytest.approx(math.log(0.8 / 0.2), abs=1e-3)
    assert x["free_text"] == 1.0 and x["by_rule"] == 0.0 and x["check_passed"] == 0.0
    layer = Document(pages=[page_with(0.61, reader="text_layer")], fields={"seller_name": seller})
    y = field_features(layer, seller, "text")
    assert y["text_layer"] == 1.0 and y["line_ocr_logit"] > 9, "a PDF's own text was not misread"
    ruled = Field("seat", "06车017号", score=RULE_SCORE, span=[0, 4])
    assert field_features(doc, ruled, "code")["by_rule"] == 1.0


def calibration_of(weight_line: float) -> Calibration:
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("line_ocr_logit")] = weight_line
    return Calibration(weights, 0.0)


def test_calibrate_keeps_the_model_probability_and_flags_what_the_evidence_doubts():
    schema = load_schema("vat_invoice")
    seller = Field("seller_name", "丁科技有限公司", raw="丁科技有限公司", score=0.99, span=[18, 25])
    doc = Document(doc_type="vat_invoice", pages=[page_with(0.8)], fields={"seller_name": seller})
    validate(doc, schema)
    assert seller.review is False, "0.99 from the model alone: not highlighted (the issue's complaint)"
    calibrate(doc, calibration_of(1.0), schema)
    assert seller.model_score == 0.99 and seller.score == pytest.approx(0.8, abs=1e-3)
    assert seller.score > REVIEW_THRESHOLD, "flagged by the calibrated scale's own threshold"
    assert seller.score < CALIBRATED_REVIEW_THRESHOLD and seller.review is True and seller.valid is None
    assert not doc.straight_through
    back = Document.from_json(doc.to_json())
    assert back.fields["seller_name"].model_score == 0.99 and back.fields["seller_name"].review is True
    plain = Field("seller_name", "丁科技有限公司", score=0.99, span=[18, 25])
    other = Document(doc_type="vat_invoice", pages=[page_with(0.55)], fields={"seller_name": plain})
    calibrate(other, None, schema)
    assert plain.score == 0.99 and plain.model_score is None, "no calibration: the model's own probability"
    assert plain.review is False, "judged against the softmax's own threshold, as before"


def test_the_extractor_calibrates_where_it_finishes_a_document():
    schema = load_schema("vat_invoice")
    seller = Field("seller_name", "丁科技有限公司", raw="丁科技有限公司", score=0.99, span=[18, 25])
    doc = Document(doc_type="vat_invoice", pages=[page_with(0.55)], fields={"seller_name": seller})
    fake = SimpleNamespace(schemas={"vat_invoice": schema}, calibration=calibration_of(1.0))
    Extractor._validate(fake, doc)      # the one place: validate, then calibrate
    assert seller.model_score == 0.99 and seller.review is True


def model_dir_with_weights(tmp_path: Path, content: bytes = b"weights-1") -> Path:
    (tmp_path / WEIGHTS).write_bytes(content)
    return tmp_path


def test_calibration_round_trips_through_the_model_directory_and_goes_stale_with_the_weights(tmp_path):
    d = model_dir_with_weights(tmp_path)
    assert read_field_calibration(d) is None, "missing: the model's own probability, no error"
    cal = fit(synthetic_rows())
    path = write_field_calibration(d, cal)
    assert path.name == FIELD_CALIBRATION and not list(d.glob(".*.tmp")), "written atomically, nothing left over"
    back = read_field_calibration(d)
    assert back is not None and back.weights == pytest.approx(cal.weights, abs=1e-5)
    assert back.bias == pytest.approx(cal.bias, abs=1e-5) and back.about["rows"] == 400
    (d / WEIGHTS).write_bytes(b"weights-2")         # retrained: the old calibration would mislead
    assert read_field_calibration(d) is None
    (d / FIELD_CALIBRATION).write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelDirError, match=FIELD_CALIBRATION):
        read_field_calibration(d)
    (d / FIELD_CALIBRATION).write_text(json.dumps({"features": ["gut_feeling"], "weights": [1.0], "bias": 0}),
                                       encoding="utf-8")
    with pytest.raises(ModelDirError, match="gut_feeling"):
        read_field_calibration(d)


def receipt(score: float = 0.99, date: str = "2024年03月05日") -> Document:
    """A receipt: its store name has no check, its date and total have."""
    doc = Document(doc_type="receipt", pages=[page_with(0.99)])
    doc.fields["store_name"] = Field("store_name", "丁便利店", raw="丁便利店", score=score)
    doc.fields["date"] = Field("date", "", raw=date, score=0.99)
    doc.fields["total_amount"] = Field("total_amount", "30.00", raw="30.00", score=0.99)
    return doc


def test_straight_through_only_when_nothing_asks_for_a_look():
    schema = load_schema("receipt")
    doc = receipt()
    validate(doc, schema)
    assert doc.fields["date"].valid is True and doc.fields["store_name"].valid is None
    assert doc.straight_through is True, "valid or no rule, all above the threshold"
    assert Document.from_json(doc.to_json()).straight_through is True
    low = receipt(score=REVIEW_THRESHOLD - 0.01)
    validate(low, schema)
    assert needs_review(low.fields["store_name"]) and low.straight_through is False, "a field without a rule"
    bad = receipt(date="2024年13月45日")
    validate(bad, schema)
    assert bad.fields["date"].valid is False and not bad.straight_through
    missing = receipt()
    del missing.fields["total_amount"]
    validate(missing, schema)
    assert missing.checks and not missing.straight_through, "a required field not found"
    assert not straight_through(Document(doc_type="receipt")), "nothing read is nothing to pass through"
    bad.fields["date"] = Field("date", "", raw="2024年03月05日", score=1.0)
    validate(bad, schema)           # corrected in the UI: checked again from scratch
    assert bad.straight_through
