"""The label vocabulary shared by the corpus, the model head, decoding and training: defined once here
because data/ is the lowest layer and every other one reads these names.

- Tag keys: a schema field key, or `items.<key>` for a field of a repeated item row (`ITEM_PREFIX`),
  or one of the generic-form line labels the head tags (`FORM_KEYS`).
- Line labels of a generic form (XFUND's): `FORM_KEYS` plus "other" (`LINE_LABELS`), the values a
  corpus line's `label` may take.
- `COLONS`: the characters that end a key ("发票号码：") in half- and full-width form.
- `SIGNATURE_KEY`: a generic form's label that asks for a signature (负责人签名, 审核人签字, 单位盖章): what stands
  at it is a signature block's entry, no key-value pair.
- `IGNORE_INDEX`: the label id the losses skip (specials, padding, window overlap, unknown doc type),
  Paddle's `cross_entropy` default.
"""
from __future__ import annotations

import re

ITEM_PREFIX = "items."
FORM_KEYS = ("header", "question", "answer")
OTHER = "other"
LINE_LABELS = FORM_KEYS + (OTHER,)
COLONS = ":："
SIGNATURE_KEY = re.compile(r"(签名|签字|签章|盖章|签收|签发)[：:\s]*$")
IGNORE_INDEX = -100


def item_tag_key(key: str) -> str:
    """The tag key of an item-row field: `items.<key>`."""
    return ITEM_PREFIX + key


def is_item_key(tag_key: str) -> bool:
    return tag_key.startswith(ITEM_PREFIX)


def item_field_key(tag_key: str) -> str:
    """The field key inside an item row for a tag key `items.<key>` (the key itself otherwise)."""
    return tag_key[len(ITEM_PREFIX):] if tag_key.startswith(ITEM_PREFIX) else tag_key
