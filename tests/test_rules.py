"""The decoding rules as data (models/extraction/rules.py): the list, switching rules off, and what the
rules that only a whole page shows do, through the public decoding functions."""
from __future__ import annotations

import pytest

from models.extraction import RULES, check_names


def test_rules_are_named_once_in_order_and_print():
    from models.extraction.rules import table
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert names.index("field_candidates") < names.index("choose_fields") < names.index("money_figures")
    printed = table().splitlines()
    assert len(printed) == len(RULES) and all(r.name in line for r, line in zip(RULES, printed))
    assert all(r.doc for r in RULES)


def test_only_known_rules_that_are_not_core_can_be_switched_off():
    check_names(frozenset(r.name for r in RULES if not r.core))
    with pytest.raises(ValueError, match="no such rule"):
        check_names(frozenset(["choose_fields"]))          # core: the decoding itself
    with pytest.raises(ValueError, match="no such rule"):
        check_names(frozenset(["rekey_by_phrase_typo"]))


def test_schema_labels_cover_every_field_and_item_field():
    from data.schemas import list_schemas, load_schema
    from models.heads import FORM_KEYS, ITEM_PREFIX, schema_field_keys, tag_labels
    keys, doc_types = schema_field_keys()
    assert doc_types == list(list_schemas())
    for name in doc_types:
        schema = load_schema(name)
        assert {f.key for f in schema.fields} <= set(keys)
        assert {ITEM_PREFIX + f.key for f in schema.item_fields} <= set(keys)
    assert set(FORM_KEYS) <= set(keys) and len(keys) == len(set(keys))
    labels = tag_labels(keys)
    assert labels[0] == "O" and len(labels) == 1 + 2 * len(keys)
    assert labels[labels.index("B-items.amount") + 1] == "I-items.amount"
