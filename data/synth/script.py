"""Simplified -> traditional characters for the printed labels of generated invoices.

A hand-written table covering exactly the label and title words the invoice layouts print (电子发票,
购买方, 销售方, 价税合计 ...), not a general converter: values (names, amounts in words) stay as
drawn. A label character missing from the table prints unchanged, which for these words is the
traditional form too (名, 合, 日, 期 ...).
"""
from __future__ import annotations

# words first: where the traditional form is not the character-by-character one
_WORDS = {"备注": "備註", "征收率": "徵收率"}
_CHARS = dict(zip("电发税专购买销称统会码纳识别号开项规单数价额计写备货务应劳复负责铁车",
                  "電發稅專購買銷稱統會碼納識別號開項規單數價額計寫備貨務應勞複負責鐵車"))


def to_traditional(text: str) -> str:
    """The traditional-script spelling of a label or title the invoice layouts print."""
    for simp, trad in _WORDS.items():
        text = text.replace(simp, trad)
    return "".join(_CHARS.get(ch, ch) for ch in text)
