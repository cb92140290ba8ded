"""One meaning of `--json OUT` for `ocr` and `extract` (app/cli.py JSON_HELP): one document in all -> one
JSON object; several (several FILEs, or one FILE holding several documents) -> JSON Lines, one document
per line in FILE order, as `batch --out` writes; an OUT ending in .jsonl always gets JSON Lines. The OCR
engine and the pipeline are stand-ins: what is tested is the writing, not the reading."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import JSON_HELP, main
from data.document import Document, Page
from reading import route
from reading.route import Analysis
from tests.test_ui import png_bytes

COMMANDS = ("ocr", "extract")


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch) -> None:
    """OCR reads every page as an empty page; extraction finds one document per file, three in a file
    named three*."""
    import models.ocr

    class Engine:
        def read(self, image, page_index=0, timings=None):
            return Page(index=page_index, width=image.shape[1], height=image.shape[0])

    def analyse_file(path, model_dir=None, doc_type=None, **kw):
        whole = Document(source=path, pages=[Page(index=i, width=30, height=20) for i in range(3)])
        if not Path(path).name.startswith("three"):
            return Analysis(whole)
        parts = [Document(source=path, doc_type="receipt", part=i + 1, parts=3, pages=[whole.pages[i]])
                 for i in range(3)]
        return Analysis(whole, results=parts)

    monkeypatch.setattr(models.ocr, "get_engine", lambda settings=None: Engine())
    monkeypatch.setattr(route, "analyse_file", analyse_file)


def _png(path: Path) -> str:
    path.write_bytes(png_bytes())
    return str(path)


def _json_lines(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines and all(line.startswith("{") and line.endswith("}") for line in lines), "one object a line"
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("command", COMMANDS)
def test_one_file_gives_one_json_object(tmp_path, command):
    a = _png(tmp_path / "a.png")
    out = tmp_path / "out.json"
    assert main([command, a, "--json", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(doc, dict) and doc["source"] == a
    assert len(out.read_text(encoding="utf-8").splitlines()) > 1, "the one object is indented"


@pytest.mark.parametrize("command", COMMANDS)
def test_several_files_give_json_lines_in_file_order(tmp_path, command):
    b, a = _png(tmp_path / "b.png"), _png(tmp_path / "a.png")
    out = tmp_path / "out.json"
    assert main([command, b, a, "--json", str(out)]) == 0
    assert [d["source"] for d in _json_lines(out)] == [b, a]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png", "out.json"], "no temporary file left"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_jsonl_out_gets_json_lines_even_for_one_document(tmp_path, command):
    a = _png(tmp_path / "a.png")
    out = tmp_path / "out.jsonl"
    assert main([command, a, "--json", str(out)]) == 0
    assert [d["source"] for d in _json_lines(out)] == [a]


def test_extract_of_one_file_holding_several_documents_gives_json_lines(tmp_path, capsys):
    three, a = _png(tmp_path / "three.png"), _png(tmp_path / "a.png")
    out = tmp_path / "out.json"
    assert main(["extract", three, "--json", str(out)]) == 0
    assert [(d["source"], d["part"], d["parts"]) for d in _json_lines(out)] == [(three, i, 3) for i in (1, 2, 3)]
    assert f"JSON Lines (3 documents) written to {out}" in capsys.readouterr().out
    assert main(["extract", a, three, "--json", str(out)]) == 0
    assert [(Path(d["source"]).name, d["part"]) for d in _json_lines(out)] == \
        [("a.png", 1), ("three.png", 1), ("three.png", 2), ("three.png", 3)]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_is_no_json_out(tmp_path, capsys, command):
    """--json names a file for every command (extract used to take a folder and write one file per
    input): a folder is refused before any work, with nothing written into it."""
    a = _png(tmp_path / "a.png")
    (tmp_path / "out").mkdir()
    assert main([command, a, "--json", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "is a folder; give a file name" in err
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_the_meaning_is_in_the_help_of_both_commands(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert " ".join(JSON_HELP.split()) in shown and "JSON Lines" in shown


def test_a_documents_dict_is_dataclasses_asdict_value_for_value():
    """Document.to_dict builds its dict without dataclasses.asdict (data.document.plain): every page, line,
    field, item, pair, table and signature comes out as asdict gives it, the role-less line's role dropped."""
    from dataclasses import asdict

    from data.document import Cell, Field, Line, Pair, Table, plain
    line = Line(text="发票号码：123", quad=[[0.0, 0.0], [9.0, 0.0], [9.0, 3.0], [0.0, 3.0]], score=0.5)
    page = Page(index=0, width=10, height=20, lines=[line], rules=[[0.0, 1.0, 9.0, 1.0]], reader="text_layer")
    doc = Document(source="a.pdf", pages=[page], doc_type="vat_invoice", doc_type_score=0.9,
                   fields={"invoice_number": Field(key="invoice_number", value="123", score=0.8,
                                                   box=[1.0, 2.0, 3.0, 4.0])},
                   items=[{"name": Field(key="name", value="纸")}], pairs=[Pair(key="姓名", value="张三", score=0.7)],
                   signatures=[Pair(key="签名", value="李四")], warnings=["w"], timings={"total": 1.5},
                   error={"type": "E", "message": "m"})
    doc.tables = [Table(columns=["a", "b"], rows=[[Cell(text="1"), Cell(text="")]],
                        column_boxes=[None, [0.0, 0.0, 1.0, 1.0]])]
    assert plain(doc) == asdict(doc)
    assert plain(doc)["items"][0]["name"]["value"] == "纸" and plain(doc)["tables"][0]["rows"][0][1]["text"] == ""
    d = doc.to_dict()
    assert "role" not in d["pages"][0]["lines"][0] and d["tables"] == asdict(doc)["tables"]
    assert Document.from_dict(d).to_dict() == d
