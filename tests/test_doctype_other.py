"""Unknown stays unknown: a page that is neither a schema type nor a form (a newspaper, a book page, notes)
is typed `other` and keeps its text, with no fields and no pairs; forms stay forms (models/extractor.py,
models/extraction/doctype.py form_structure). The tests use pages built here and generated ones only, so a
clone of the repository alone runs them; by hand, on real OCR of 11 OmniDoc pages (not shipped), all were
`other` with 0 fields and 0 pairs while an XFUND form kept its 7 pairs."""
from __future__ import annotations

import pytest

from data.document import Document, Line, Page, box_to_quad
from data.synth.generator import generate, list_layouts
from models.extractor import get_extractor

NEWSPAPER = ["本报讯（记者 王芳）今年以来，全市新增绿地面积12.5万平方米，城市生态持续改善。",
             "据市园林局介绍，今年共完成道路绿化改造38条，新建口袋公园21个，市民出门见绿。",
             "电话：0731-56494164", "E-mail：news@example.cn",
             "茶园生态和茶叶品种更加优化，带动茶产业提质增效和农民增收，全年茶叶产值增长一成。",
             "下一步，我市将继续推进城乡绿化一体化建设，让绿色成为城市发展的鲜明底色。"] * 6


def page_of(texts: list[str]) -> Page:
    return Page(index=0, width=1200, height=60 * len(texts) + 100,
                lines=[Line(t, box_to_quad([40, 40 + 60 * i, 40 + 24 * len(t), 80 + 60 * i]))
                       for i, t in enumerate(texts)])


@pytest.fixture(scope="module")
def extractor():
    return get_extractor()


def test_a_newspaper_page_is_other_with_its_text_and_no_pairs(extractor):
    doc = extractor.extract(Document(source="paper.png", pages=[page_of(NEWSPAPER)]))
    assert (doc.doc_type, doc.fields, doc.items, doc.pairs) == ("other", {}, [], [])
    assert doc.pages[0].lines[0].text == NEWSPAPER[0], "the text is kept"
    # without the rule, the page is the generic form it was taken for (pairs such as 电话 -> 0731-...)
    kept = extractor.extract(Document(source="paper.png", pages=[page_of(NEWSPAPER)]),
                             off=frozenset(["form_needs_structure"]))
    assert kept.doc_type == "generic_form"


def test_a_chosen_generic_form_type_is_kept(extractor):
    doc = extractor.extract(Document(source="paper.png", pages=[page_of(NEWSPAPER)]), doc_type="generic_form")
    assert doc.doc_type == "generic_form"


@pytest.mark.parametrize("layout", list_layouts("generic_form"))
def test_generated_forms_stay_forms(extractor, layout):
    for seed in (100, 101):
        _, gt = generate("generic_form", seed, layout)
        page = Page(index=0, width=gt["width"], height=gt["height"],
                    lines=[Line(ln["text"], ln["quad"]) for ln in gt["lines"]])
        doc = extractor.extract(Document(source="form.png", pages=[page]))
        assert doc.doc_type != "other" and (doc.doc_type != "generic_form" or doc.pairs), (layout, seed)


@pytest.mark.parametrize("doc_type", ["vat_invoice", "e_invoice", "receipt", "train_ticket", "id_card_front",
                                      "business_licence"])
def test_generated_documents_of_known_types_are_never_other(extractor, doc_type):
    for seed in (100, 101):
        _, gt = generate(doc_type, seed)
        page = Page(index=0, width=gt["width"], height=gt["height"],
                    lines=[Line(ln["text"], ln["quad"]) for ln in gt["lines"]])
        assert extractor.extract(Document(source="x.png", pages=[page])).doc_type == doc_type


def test_a_forms_tables_and_signatures_are_found_once_and_go_with_its_type():
    # a generated form with a table, extracted twice (the UI re-extracts): one table, not two; typed other
    # (not a form after all), it keeps no tables or signatures either
    for seed in range(200, 240):
        _, gt = generate("generic_form", seed, "form_sections")
        if gt["tables"] and gt["tables"][0]["rows"]:
            break
    page = Page(index=0, width=gt["width"], height=gt["height"],
                lines=[Line(ln["text"], ln["quad"]) for ln in gt["lines"]])
    doc = get_extractor().extract(Document(source="form.png", pages=[page]), doc_type="generic_form")
    assert len(doc.tables) == 1
    again = get_extractor().extract(doc, doc_type="generic_form")
    assert len(again.tables) == 1
    other = get_extractor().extract(Document(source="paper.png", pages=[page_of(NEWSPAPER)]))
    assert other.doc_type == "other" and other.tables == [] and other.signatures == []
