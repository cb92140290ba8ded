"""Issue 39 item 4: the railway e-ticket invoice (电子发票（铁路电子客票）, doc type e_invoice) carries every
field of the ticket it prints: the e_invoice schema lists the train ticket's journey fields, the generator
marks them in its ground truth, and the bundled model (not retrained) reads those its schema's patterns find."""
from __future__ import annotations

import pytest

from app.batch.csv_out import merge_keys
from app.batch.xlsx_out import INVOICE_SHEET, INVOICE_TYPES, LEAD, TAIL, schema_sheet
from data.document import Document, Line, Page
from data.schemas import load_schema
from data.synth import generate
from data.validate import validate_fields
from models.model_dir import DEFAULT_MODEL_DIR, model_schema

JOURNEY = ["from_station", "to_station", "train_number", "departure_date", "departure_time", "seat", "seat_class",
           "passenger_id", "passenger_name"]
# the fields the e-invoice had before the journey: their order (and so a register's columns) is kept
BEFORE = ["title", "invoice_number", "issue_date", "buyer_name", "buyer_tax_id", "seller_name", "seller_tax_id",
          "total_amount", "total_tax", "total_with_tax", "total_with_tax_in_words", "drawer", "remarks"]


@pytest.mark.parametrize("where", ["repo", "bundled model"])
def test_e_invoice_schema_lists_the_journey_as_the_train_ticket_does(where):
    schema = load_schema("e_invoice") if where == "repo" else model_schema(DEFAULT_MODEL_DIR, "e_invoice")
    ticket = load_schema("train_ticket")
    assert schema.keys() == BEFORE + JOURNEY
    for key in JOURNEY:
        spec, theirs = schema.field(key), ticket.field(key)
        assert not spec.required, key                   # other e-invoices print no journey
        assert (spec.type, spec.label, spec.pattern, spec.drop_suffix, spec.validators) == \
            (theirs.type, theirs.label, theirs.pattern, theirs.drop_suffix, theirs.validators), key
        assert spec.key_phrases == [], key              # the e-ticket prints no key before any of them


def test_railway_ground_truth_marks_the_journey_where_it_is_printed():
    schema = load_schema("e_invoice")
    for seed, level in ((1, "none"), (2, "light"), (7, "photo")):
        _, gt = generate("e_invoice", seed, "einv_railway", level)
        f = gt["fields"]
        assert set(JOURNEY) <= set(f), sorted(f)
        for key in JOURNEY:
            line = gt["lines"][f[key]["line"]]["text"]
            start, end = f[key]["span"]
            assert line[start:end] == f[key]["text"], (key, line)
        stations = [gt["lines"][f[k]["line"]]["text"] for k in ("from_station", "to_station")]
        assert stations == [f["from_station"]["text"] + "站", f["to_station"]["text"] + "站"]
        departure = gt["lines"][f["departure_date"]["line"]]["text"]
        assert f["departure_time"]["line"] == f["departure_date"]["line"] and departure.endswith(
            f["departure_time"]["text"] + "开")
        assert f["passenger_id"]["line"] == f["passenger_name"]["line"] and "*" in f["passenger_id"]["value"]
        valid, warnings = validate_fields(schema, {k: v["text"] for k, v in f.items()})
        assert warnings == [] and all(valid[k] is not False for k in JOURNEY), warnings
        assert {k: valid[k] for k in ("train_number", "departure_time", "seat", "seat_class", "passenger_id")} == \
            dict.fromkeys(("train_number", "departure_time", "seat", "seat_class", "passenger_id"), True)
    # the other e-invoices print no journey
    for layout in ("einv_standard", "einv_split", "einv_stacked"):
        _, gt = generate("e_invoice", 3, layout, "none")
        assert not set(JOURNEY) & set(gt["fields"]), layout


def test_invoice_register_keeps_its_columns_and_adds_the_journey_after_them():
    rail = {"file": "/in/rail.pdf", "doc_type": "e_invoice", "pages": [{"index": 0}],
            "fields": {"invoice_number": {"value": "25329000000123456789"}, "train_number": {"value": "G7"},
                       "from_station": {"value": "南京南"}, "passenger_id": {"value": "3201**********1234"}}}
    sheet = schema_sheet(INVOICE_SHEET, list(INVOICE_TYPES), [rail])
    keys = [k for k, _, _ in sheet.columns]
    fields = keys[len(LEAD):-len(TAIL)]
    at = fields.index("remarks") + 1
    assert fields[at:at + len(JOURNEY)] == JOURNEY       # right after the last e-invoice field, in print order
    # the columns a register had before are those of the two schemas without the journey, in the same order
    assert [k for k in fields if k not in JOURNEY] == merge_keys(load_schema("vat_invoice").keys(), BEFORE)
    row = dict(zip(keys, (v for v, _ in sheet.rows[0])))
    assert (row["train_number"], row["from_station"], row["passenger_id"]) == ("G7", "南京南", "3201**********1234")
    labels = {k: label for k, label, _ in sheet.columns}
    assert (labels["from_station"], labels["seat_class"]) == ("出发站", "席别")


@pytest.mark.heavy
def test_bundled_model_reads_the_patterned_journey_fields_off_the_ground_truth_lines():
    """The head was trained to tag the journey as no field; the fields whose schema gives a pattern (time,
    seat, class, masked ID) are filled from it, the others (stations, train, date, name) wait for a
    retraining, so only what is read is checked: every value it gives is the printed one."""
    from models.extractor import Extractor
    ex = Extractor.load(DEFAULT_MODEL_DIR)
    for seed in (1, 2):
        _, gt = generate("e_invoice", seed, "einv_railway", "none")
        page = Page(index=0, width=gt["width"], height=gt["height"],
                    lines=[Line(text=ln["text"], quad=ln["quad"]) for ln in gt["lines"]])
        doc = ex.extract(Document(source="rail.jpg", pages=[page]))
        assert doc.doc_type == "e_invoice"
        got = {k: f.value for k, f in doc.fields.items() if k in JOURNEY}
        patterned = {"departure_time", "seat", "seat_class", "passenger_id"}
        assert patterned <= set(got), got
        assert got == {k: gt["fields"][k]["value"] for k in got}, got
