"""Our corpus format: JSONL round trip with relative images, and holding out whole layouts."""
import json

import pytest

from data.corpus import CorpusError, corpus_from_synth_dir, layout_of, read_corpus, split_by_layout, write_corpus


def _rec(i: int, doc_type: str, layout: str, image: str) -> dict:
    return {"id": f"{doc_type}_{i}", "image": image, "doc_type": doc_type, "layout": layout,
            "width": 100, "height": 50, "lines": [{"id": 0, "text": f"发票号码：{i:08d}", "box": [0, 0, 90, 20]}],
            "fields": {"invoice_number": {"value": f"{i:08d}", "text": f"{i:08d}", "line": 0, "span": [5, 13],
                                          "box": [40, 0, 90, 20]}}}


def test_round_trip_keeps_records_and_makes_images_relative(tmp_path):
    img = tmp_path / "imgs" / "a.jpg"
    img.parent.mkdir()
    img.write_bytes(b"x")
    recs = [_rec(i, "vat_invoice", "L1", str(img)) for i in range(3)]
    out = write_corpus(recs, tmp_path / "corpus")
    raw = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert raw[0]["image"] == "../imgs/a.jpg"                 # relative to the corpus directory
    back = read_corpus(tmp_path / "corpus")
    assert [r["fields"] for r in back] == [r["fields"] for r in recs]
    assert back[0]["image"] == str(img.resolve())              # resolved again on reading


def test_corpus_moves_with_its_images(tmp_path):
    (tmp_path / "c" / "images").mkdir(parents=True)
    (tmp_path / "c" / "images" / "p.jpg").write_bytes(b"x")
    write_corpus([_rec(0, "vat_invoice", "L1", str(tmp_path / "c" / "images" / "p.jpg"))], tmp_path / "c")
    (tmp_path / "c").rename(tmp_path / "moved")
    assert read_corpus(tmp_path / "moved")[0]["image"] == str((tmp_path / "moved" / "images" / "p.jpg").resolve())


def test_split_holds_out_whole_layouts():
    recs = [_rec(i, t, f"L{i % 4}", "") for t in ("vat_invoice", "receipt") for i in range(20)]
    train, test = split_by_layout(recs, 0.25, seed=3)
    train_layouts, test_layouts = {layout_of(r) for r in train}, {layout_of(r) for r in test}
    assert train_layouts and test_layouts and not train_layouts & test_layouts
    assert {r["doc_type"] for r in test} == {"vat_invoice", "receipt"}   # each type loses one layout
    assert len(train) + len(test) == len(recs)


def test_bad_line_names_file_and_line(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"lines": []}\n{oops\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"corpus.jsonl:2"):
        read_corpus(tmp_path)


def test_gathers_generator_output(tmp_path):
    (tmp_path / "p1.json").write_text(json.dumps(_rec(1, "vat_invoice", "L1", "p1.jpg")), encoding="utf-8")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    recs = corpus_from_synth_dir(tmp_path)
    assert len(recs) == 1 and recs[0]["image"] == str((tmp_path / "p1.jpg").resolve())
