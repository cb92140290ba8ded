"""Each import format, from small inputs written by hand: good records land in the corpus in our
shape, bad ones are reported with file and line number and do not stop the import."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from data.document import Line, Page
from data.importers import import_corpus
from data.importers.records import CORPUS_FILE, check_record


def blank(path: Path, size=(400, 300)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, "white").save(path)
    return path


def read_corpus(out: Path) -> list[dict]:
    return [json.loads(row) for row in (out / CORPUS_FILE).read_text(encoding="utf-8").splitlines()]


def lines_of(report, kind="error"):
    return {(Path(p.file).name, p.line) for p in report.problems if p.kind == kind}


def test_ours_checks_records_and_copies_images(tmp_path):
    src = tmp_path / "src"
    blank(src / "a.png")
    good = {"image": "a.png", "doc_type": "receipt", "layout": "r1", "width": 400, "height": 300,
            "lines": [{"id": 0, "text": "合计：12.50", "quad": [[10, 10], [110, 10], [110, 30], [10, 30]],
                       "box": [10, 10, 110, 30], "label": None, "linking": []}],
            "fields": {"total": {"value": "12.50", "text": "12.50", "line": 0, "span": [3, 8],
                                 "box": [60, 10, 110, 30]}}, "items": [], "pairs": []}
    bad_span = json.loads(json.dumps(good))
    bad_span["fields"]["total"]["span"] = [3, 40]
    missing_img = {**good, "image": "nope.png"}
    text = "\n".join([json.dumps(good, ensure_ascii=False), "{not json", json.dumps(bad_span),
                      json.dumps(missing_img), json.dumps(good)]) + "\n"
    (src / CORPUS_FILE).write_text(text, encoding="utf-8")
    (src / "schemas").mkdir()
    (src / "schemas" / "receipt_x.yaml").write_text("name: receipt_x\n", encoding="utf-8")
    out = tmp_path / "out"
    report = import_corpus("ours", src, out)
    assert (report.records_seen, report.records_written) == (5, 2)
    assert lines_of(report) == {(CORPUS_FILE, 2), (CORPUS_FILE, 3), (CORPUS_FILE, 4)}
    recs = read_corpus(out)
    assert [r["fields"]["total"]["value"] for r in recs] == ["12.50", "12.50"]
    assert recs[0]["image"] != recs[1]["image"] and all((out / r["image"]).is_file() for r in recs)
    assert (out / "schemas" / "receipt_x.yaml").is_file()
    assert "2 of 5 records written, 3 bad" in report.summary()


def test_ppocrlabel_kie_fields_labels_and_links(tmp_path):
    src = tmp_path / "ppocr"
    blank(src / "imgs" / "p1.jpg")
    blank(src / "imgs" / "p2.jpg")
    boxes1 = [
        {"transcription": "发票号码：", "points": [[10, 10], [90, 10], [90, 30], [10, 30]], "key_cls": "question",
         "id": 1, "linking": [[1, 2]]},
        {"transcription": "12345678", "points": [[100, 10], [200, 10], [200, 30], [100, 30]], "key_cls": "answer",
         "id": 2, "linking": [[1, 2]]},
        {"transcription": "2024年3月5日", "points": [[10, 50], [150, 50], [150, 70], [10, 70]],
         "key_cls": "issue_date", "id": 3, "linking": []},
    ]
    boxes2 = [{"transcription": "x", "points": [[1, 1], [2, 1]], "key_cls": "other", "id": 1}]
    (src / "Label.txt").write_text("\n".join([
        "imgs/p1.jpg\t" + json.dumps(boxes1, ensure_ascii=False),
        "imgs/p2.jpg\t" + json.dumps(boxes2),            # two points only: bad
        "imgs/p3.jpg\t[]",                               # image missing: bad
        "imgs/p2.jpg no tab here",
    ]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    report = import_corpus("ppocrlabel", src, out, doc_type="vat_invoice")
    assert report.records_written == 1
    assert lines_of(report) == {("Label.txt", 2), ("Label.txt", 3), ("Label.txt", 4)}
    (rec,) = read_corpus(out)
    assert rec["doc_type"] == "vat_invoice" and (rec["width"], rec["height"]) == (400, 300)
    assert [ln["label"] for ln in rec["lines"]] == ["question", "answer", None]
    assert rec["fields"]["issue_date"]["value"] == "2024年3月5日"
    assert rec["fields"]["issue_date"]["box"] == [10, 50, 150, 70]
    assert rec["pairs"] == [{"key": "发票号码：", "value": "12345678", "key_line": 1, "value_line": 2,
                             "key_box": [10, 10, 90, 30], "value_box": [100, 10, 200, 30]}]
    assert check_record(rec, out) == []


def test_xfund_documents_with_line_numbers(tmp_path):
    src = tmp_path / "xfund"
    blank(src / "images" / "zh_0.jpg", (800, 600))
    good = {"id": "zh_0", "img": {"fname": "zh_0.jpg", "width": 800, "height": 600}, "document": [
        {"id": 0, "text": "姓名", "box": [10, 10, 60, 30], "label": "question", "linking": [[0, 1]], "words": []},
        {"id": 1, "text": "张三", "box": [70, 10, 120, 30], "label": "answer", "linking": [[0, 1]], "words": []},
        {"id": 2, "text": "申请表", "box": [300, 0, 400, 20], "label": "header", "linking": [], "words": []}]}
    bad_label = {"id": "zh_1", "img": {"fname": "zh_0.jpg", "width": 800, "height": 600},
                 "document": [{"id": 0, "text": "x", "box": [1, 1, 5, 5], "label": "key"}]}
    bad_link = {"id": "zh_2", "img": {"fname": "zh_0.jpg", "width": 800, "height": 600},
                "document": [{"id": 0, "text": "x", "box": [1, 1, 5, 5], "label": "question", "linking": [[0, 9]]}]}
    body = ",\n".join(json.dumps(d, ensure_ascii=False) for d in (good, bad_label, bad_link))
    (src / "zh.val.json").write_text('{"lang": "zh",\n "documents": [\n' + body + "\n]}\n", encoding="utf-8")
    out = tmp_path / "out"
    report = import_corpus("xfund", src / "zh.val.json", out)
    assert (report.records_seen, report.records_written) == (3, 1)
    assert lines_of(report) == {("zh.val.json", 4), ("zh.val.json", 5)}
    (rec,) = read_corpus(out)
    assert rec["doc_type"] == "generic_form"
    assert [(ln["text"], ln["label"]) for ln in rec["lines"]] == [("姓名", "question"), ("张三", "answer"),
                                                                ("申请表", "header")]
    assert [(p["key"], p["value"]) for p in rec["pairs"]] == [("姓名", "张三")]


def test_xfund_truncated_file_is_reported_not_fatal(tmp_path):
    src = tmp_path / "xf"
    blank(src / "a.jpg")
    doc = {"id": "a", "img": {"fname": "a.jpg"}, "document": [{"id": 0, "text": "t", "box": [1, 1, 9, 9],
                                                               "label": "other"}]}
    (src / "x.json").write_text('{"documents": [\n' + json.dumps(doc) + ',\n{"id": "b", "docu', encoding="utf-8")
    report = import_corpus("xfund", src, tmp_path / "out")
    assert report.records_written == 1 and lines_of(report) == {("x.json", 3)}
    assert read_corpus(tmp_path / "out")[0]["width"] == 400     # read from the image when not given


def ls_region(rid, x, y, w, h, text, label, rotation=0):
    geom = {"x": x, "y": y, "width": w, "height": h, "rotation": rotation}
    base = {"id": rid, "original_width": 1000, "original_height": 500, "to_name": "image"}
    return [{**base, "type": "rectangle", "from_name": "bbox", "value": dict(geom)},
            {**base, "type": "labels", "from_name": "label", "value": {**geom, "labels": [label]}},
            {**base, "type": "textarea", "from_name": "transcription", "value": {**geom, "text": [text]}}]


def test_labelstudio_percent_boxes_labels_and_relations(tmp_path):
    src = tmp_path / "ls"
    blank(src / "scan.png", (1000, 500))
    result = (ls_region("a", 10, 10, 20, 10, "纳税人识别号", "question")
              + ls_region("b", 40, 10, 30, 10, "91110108MA01ABCD2X", "answer")
              + ls_region("c", 10, 50, 50, 10, "¥1,234.50", "total_amount")
              + [{"type": "relation", "from_id": "a", "to_id": "b", "direction": "right"}])
    tasks = [{"id": 1, "data": {"ocr": "/data/upload/1/3f2a1b9c-scan.png"}, "annotations": [{"result": result}]},
             {"id": 2, "data": {"ocr": "/data/upload/1/3f2a1b9c-scan.png"}, "annotations": []},
             {"id": 3, "data": {"ocr": "scan.png"}, "annotations": [{"result": [
                 {"id": "z", "type": "textarea", "value": {"x": 1, "y": 1, "width": 1, "height": 1, "text": ["t"]},
                  "original_width": 1000, "original_height": 500}, *ls_region("q", 0, 0, 5, 5, "x", "other")[:1]]}]}]
    text = "[\n" + ",\n".join(json.dumps(t, ensure_ascii=False) for t in tasks) + "\n]\n"
    (src / "export.json").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    report = import_corpus("labelstudio", src / "export.json", out, doc_type="vat_invoice")
    assert report.records_written == 1
    # task 2 has no annotations; task 3's region "q" has a rectangle but no transcription
    assert lines_of(report) == {("export.json", 3), ("export.json", 4)}
    assert "no transcription" in report.problems[-1].message
    rec = read_corpus(out)[0]
    assert rec["lines"][0]["box"] == [100.0, 50.0, 300.0, 100.0]     # 10%..30% of 1000, 10%..20% of 500
    assert rec["fields"]["total_amount"]["value"] == "¥1,234.50"
    assert rec["pairs"][0]["value"] == "91110108MA01ABCD2X"
    assert rec["lines"][0]["linking"] == [[0, 1]]


def test_labelstudio_rotation_turns_about_top_left(tmp_path):
    from data.importers.labelstudio import _quad
    q = _quad({"x": 10, "y": 10, "width": 10, "height": 10, "rotation": 90}, 100, 100)
    assert [[round(a, 6) for a in p] for p in q] == [[10, 10], [10, 20], [0, 20], [0, 10]]


def fake_ocr(lines: list[str]):
    def read(path: Path) -> Page:
        return Page(index=0, width=400, height=300, lines=[
            Line(text=t, quad=[[10, 10 + 30 * i], [310, 10 + 30 * i], [310, 30 + 30 * i], [10, 30 + 30 * i]])
            for i, t in enumerate(lines)])
    return read


def test_csv_weak_labels_keep_confident_alignments_and_report_the_rest(tmp_path):
    src = tmp_path / "csv"
    blank(src / "r1.png")
    (src / "values.csv").write_text(
        "image,invoice_no,total,buyer\n"
        "r1.png,04451234,1234.50,北京星河科技有限公司\n"
        "missing.png,1,2,3\n"
        "r1.png,99999999,1234.50,上海\n", encoding="utf-8")
    ocr = fake_ocr(["发票号码：O4451234", "价税合计（小写）¥1234.5O", "购买方：北京星河科技有限公司"])
    out = tmp_path / "out"
    report = import_corpus("csv", src / "values.csv", out, doc_type="vat_invoice", ocr=ocr)
    assert report.records_written == 2
    assert lines_of(report) == {("values.csv", 3)}
    weak = {(p.line, p.message.split("=")[0]) for p in report.problems if p.kind == "weak"}
    assert weak == {(4, "invoice_no"), (4, "buyer")}     # a different number is not a match
    first, second = read_corpus(out)
    f = first["fields"]["invoice_no"]
    assert first["lines"][f["line"]]["text"][slice(*f["span"])] == "O4451234"    # O read for 0
    assert first["fields"]["buyer"]["text"] == "北京星河科技有限公司"
    assert first["fields"]["total"]["span"] == [9, 16]
    assert set(second["fields"]) == {"total"}
    assert report.fields_placed == 4 and report.fields_dropped == 2


def test_check_record_names_what_is_wrong():
    rec = {"image": "a.png", "width": 10, "height": 10,
           "lines": [{"id": 0, "text": "ab", "quad": [[0, 0], [5, 0], [5, 5], [0, 5]], "box": [0, 0, 50, 5]}],
           "fields": {"k": {"value": "b", "line": 3, "span": [1, 2]}}}
    errs = check_record(rec)
    assert any("outside the 10x10 page" in e for e in errs)
    assert any("line 3 does not exist" in e for e in errs)


def test_unknown_format_tells_the_choices(tmp_path):
    with pytest.raises(ValueError, match="ppocrlabel"):
        import_corpus("docx", tmp_path, tmp_path / "o")


def receipt(image: str = "a.png", **over) -> dict:
    rec = {"image": image, "doc_type": "receipt", "layout": "r1", "width": 400, "height": 300,
           "lines": [{"id": 0, "text": "合计：12.50", "quad": [[10, 10], [110, 10], [110, 30], [10, 30]],
                      "box": [10, 10, 110, 30], "label": None, "linking": []}],
           "fields": {"total": {"value": "12.50", "text": "12.50", "line": 0, "span": [3, 8],
                                "box": [60, 10, 110, 30]}}, "items": [], "pairs": []}
    return {**rec, **over}


def test_a_non_utf8_byte_costs_its_record_not_the_import(tmp_path, capsys):
    """One GBK-encoded record among UTF-8 ones: that file:line is reported, the others are imported,
    and the CLI exits normally with the count (no UnicodeDecodeError traceback)."""
    from training.__main__ import main
    src = tmp_path / "src"
    blank(src / "a.png")
    good = json.dumps(receipt(), ensure_ascii=False).encode("utf-8")
    gbk = json.dumps(receipt(), ensure_ascii=False).encode("gbk")      # 合计 in GBK: not UTF-8
    (src / CORPUS_FILE).write_bytes(b"\n".join([good, gbk, good]) + b"\n")
    out = tmp_path / "out"
    assert main(["import", "--format", "ours", "--src", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 of 3 records written, 1 bad" in printed
    assert f"{src / CORPUS_FILE}:2: [error] byte 0x" in printed and "not UTF-8" in printed
    assert [r["fields"]["total"]["value"] for r in read_corpus(out)] == ["12.50", "12.50"]

    # the same in a single-document format: the line of the bad byte, the other documents kept
    xf = tmp_path / "xf"
    blank(xf / "a.jpg")
    doc = {"id": "a", "img": {"fname": "a.jpg"}, "document": [{"id": 0, "text": "姓名", "box": [1, 1, 9, 9],
                                                               "label": "question"}]}
    body = [json.dumps(doc, ensure_ascii=False).encode()] * 3
    body[1] = json.dumps(doc, ensure_ascii=False, indent=0).encode("gbk")      # document 2 spans lines 4..
    data = b'{"documents": [\n' + b",\n".join(body) + b"\n]}\n"
    (xf / "x.json").write_bytes(data)
    bad_line = data[:data.index("姓名".encode("gbk"))].count(b"\n") + 1
    report = import_corpus("xfund", xf, tmp_path / "xout")
    assert report.records_written == 2 and lines_of(report) == {("x.json", bad_line)} and bad_line > 3


def test_null_transcription_is_an_error_not_the_text_None(tmp_path):
    src = tmp_path / "ppocr"
    blank(src / "p1.jpg")
    box = {"transcription": "合计", "points": [[10, 10], [90, 10], [90, 30], [10, 30]], "key_cls": "other", "id": 1}
    (src / "Label.txt").write_text("\n".join([
        "p1.jpg\t" + json.dumps([box], ensure_ascii=False),
        "p1.jpg\t" + json.dumps([box, {**box, "id": 2, "transcription": None}], ensure_ascii=False),
    ]) + "\n", encoding="utf-8")
    report = import_corpus("ppocrlabel", src, tmp_path / "out")
    assert report.records_written == 1 and lines_of(report) == {("Label.txt", 2)}
    assert "null transcription" in report.errors[0].message
    assert "None" not in (tmp_path / "out" / CORPUS_FILE).read_text(encoding="utf-8")


def test_box_far_outside_the_page_is_an_error_slightly_outside_is_clipped(tmp_path):
    src = tmp_path / "src"
    blank(src / "a.png")                            # 400 x 300: 2% is 8 x 6 pixels
    slightly = receipt()
    slightly["lines"][0]["quad"] = [[-3, 10], [405, 10], [405, 30], [-3, 30]]
    slightly["lines"][0]["box"] = [-3, 10, 405, 30]
    slightly["fields"]["total"]["box"] = [60, 10, 405, 304]
    far_field = receipt()
    far_field["fields"]["total"]["box"] = [60, 10, 900, 30]      # twice the page width: another image's box
    far_line = receipt()
    far_line["lines"][0]["box"] = [10, 10, 110, 360]
    (src / CORPUS_FILE).write_text("\n".join(json.dumps(r, ensure_ascii=False)
                                             for r in (slightly, far_field, far_line)) + "\n", encoding="utf-8")
    report = import_corpus("ours", src, tmp_path / "out")
    assert lines_of(report) == {(CORPUS_FILE, 2), (CORPUS_FILE, 3)}
    assert all("outside the 400x300 page" in p.message for p in report.errors)
    (rec,) = read_corpus(tmp_path / "out")
    assert rec["lines"][0]["box"] == [0, 10, 400, 30]
    assert rec["lines"][0]["quad"] == [[0, 10], [400, 10], [400, 30], [0, 30]]
    assert rec["fields"]["total"]["box"] == [60, 10, 400, 300]
    assert check_record(rec, tmp_path / "out") == []


def test_a_crash_mid_import_leaves_the_previous_corpus_whole(tmp_path, monkeypatch):
    from data.importers.records import CorpusWriter
    src, out = tmp_path / "src", tmp_path / "out"
    blank(src / "a.png")
    (src / CORPUS_FILE).write_text("\n".join(json.dumps(receipt(), ensure_ascii=False)
                                             for _ in range(3)) + "\n", encoding="utf-8")
    assert import_corpus("ours", src, out).records_written == 3
    before = (out / CORPUS_FILE).read_bytes()
    real_write = CorpusWriter.write

    def dies_on_the_second_record(self, rec):
        if self.count == 1:
            raise KeyboardInterrupt("killed mid-write")
        real_write(self, rec)

    monkeypatch.setattr(CorpusWriter, "write", dies_on_the_second_record)
    with pytest.raises(KeyboardInterrupt):
        import_corpus("ours", src, out)
    assert (out / CORPUS_FILE).read_bytes() == before          # not one record of the killed import
    assert not (out / (CORPUS_FILE + ".tmp")).exists()
    with pytest.raises(KeyboardInterrupt):
        import_corpus("ours", src, tmp_path / "fresh")
    assert not (tmp_path / "fresh" / CORPUS_FILE).exists()     # no corpus rather than a partial one
