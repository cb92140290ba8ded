"""Generator variants of issue 17: the railway e-ticket invoice (电子发票（铁路电子客票）), red seals
over the title and the seller's name, and e-invoices printed with traditional-script labels."""
from __future__ import annotations

import re

import numpy as np
from PIL import Image, ImageDraw

from data.fonts import STYLES, pil_font
from data.schemas import load_schema
from data.synth import generate, list_layouts
from data.synth.script import to_traditional
from data.validate import validate_fields
from models.extraction.doctype import title_line

E_TABLE_LAYOUTS = ["einv_standard", "einv_split", "einv_stacked"]


def _seal_pixels(image: Image.Image) -> np.ndarray:
    """Saturated red: a seal's ink, never the brown, maroon, blue or black print of the forms."""
    a = np.asarray(image.convert("RGB")).astype(np.int16)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return (r > 180) & (r - g > 80) & (r - b > 70)


def _share_in(mask: np.ndarray, box: list[float]) -> float:
    x0, y0, x1, y1 = (round(v) for v in box)
    crop = mask[y0:y1 + 1, x0:x1 + 1]
    return float(crop.mean()) if crop.size else 0.0


def test_railway_e_ticket_is_an_e_invoice_with_a_20_digit_number_and_no_seller():
    assert "einv_railway" in list_layouts("e_invoice")
    schema = load_schema("e_invoice")
    for seed, level in ((1, "none"), (2, "light"), (3, "photo"), (4, "heavy")):
        image, gt = generate("e_invoice", seed, "einv_railway", level)
        assert gt["doc_type"] == "e_invoice" and gt["layout"] == "einv_railway" and image.size == (gt["width"],
                                                                                                  gt["height"])
        f = gt["fields"]
        assert f["title"]["text"] == "电子发票（铁路电子客票）"
        assert re.fullmatch(r"\d{20}", f["invoice_number"]["value"]) and f["invoice_number"]["text"] == \
            f["invoice_number"]["value"]
        assert not {"seller_name", "seller_tax_id", "total_amount", "total_tax"} & set(f) and gt["items"] == []
        # the fare is the total, printed after 票价 on its line or on the key line before it
        fare_line = gt["lines"][f["total_with_tax"]["line"]]["text"]
        key_lines = [ln["text"] for ln in gt["lines"] if ln["text"].startswith("票价")]
        assert key_lines and re.fullmatch(r"\d+\.\d\d", f["total_with_tax"]["value"]), fare_line
        texts = [ln["text"] for ln in gt["lines"]]
        assert any(t.startswith("电子客票号") for t in texts) and any("****" in t or "**********" in t for t in texts)
        assert any(t.endswith("站") for t in texts)
        values = {k: v["text"] for k, v in f.items()}
        valid, warnings = validate_fields(schema, values)
        assert warnings == [] and False not in valid.values(), warnings
        # the title identifies the type, as the extractor's type rule reads it
        assert title_line(schema.title_phrases, texts) == f["title"]["line"]
    a, a_gt = generate("e_invoice", 5, "einv_railway", "light")
    b, b_gt = generate("e_invoice", 5, "einv_railway", "light")
    assert a.tobytes() == b.tobytes() and a_gt == b_gt


def test_seals_sit_over_the_title_and_the_seller_name_on_a_share_of_pages():
    over_title, over_seller = [], []
    for seed in range(16):
        layout = E_TABLE_LAYOUTS[seed % 3]
        image, gt = generate("e_invoice", seed, layout, "none")
        red = _seal_pixels(image)
        over_title.append(_share_in(red, gt["fields"]["title"]["box"]) > 0.02)
        over_seller.append(_share_in(red, gt["fields"]["seller_name"]["box"]) > 0.02)
        assert red.sum() > 2000, (seed, layout)                 # both seals are on every page
    assert 3 <= sum(over_title) <= 13, over_title
    assert 3 <= sum(over_seller) <= 13, over_seller
    rail = [_share_in(_seal_pixels(im), gt["fields"]["title"]["box"]) > 0.02
            for im, gt in (generate("e_invoice", s, "einv_railway") for s in range(10))]
    assert 2 <= sum(rail) <= 8, rail
    # and the print itself is never seal red: text-only pages have none
    for seed in range(4):
        plain, _ = generate("e_invoice", seed, E_TABLE_LAYOUTS[seed % 3], decorations=False)
        assert _seal_pixels(plain).sum() == 0


def _drawn(style: str, ch: str) -> bytes:
    img = Image.new("L", (60, 60))
    ImageDraw.Draw(img).text((5, 5), ch, font=pil_font(style, 40), fill=255)
    return img.tobytes()


def test_traditional_script_invoices_print_traditional_labels_in_fonts_that_have_them():
    schema = load_schema("e_invoice")
    trad = []
    for seed in range(60):
        _, gt = generate("e_invoice", seed, decorations=False)
        if "發票" in gt["fields"]["title"]["value"]:
            trad.append(gt)
    assert 3 <= len(trad) <= 20, len(trad)                     # a small share of e-invoices
    labels = ["價稅合計（大寫）", "開票人：", "合　　計", "單價", "稅額"]
    for gt in trad:
        texts = [ln["text"] for ln in gt["lines"]]
        joined = "".join(texts)
        assert gt["fields"]["title"]["value"] in schema.title_phrases
        assert all(any(t.startswith(lab) or t == lab for t in texts) for lab in labels), texts
        assert "發票號碼" in joined and "購" in joined and "銷" in joined
        assert "价税合计" not in joined and "开票人" not in joined and "发票号码" not in joined
    # every traditional character the layouts print has a glyph in every font style (no tofu)
    chars = set(to_traditional("电子发票增值税专用普通购买方信息销售方名称统一社会信用代码纳税人识别号发票号码开票日期"
                               "项目规格型号单位数量单价金额税率征收率税额合计价税大写小写开票人备注"))
    for style in STYLES:
        missing = _drawn(style, "\U0010fffd")
        assert not [c for c in chars if _drawn(style, c) == missing], style
