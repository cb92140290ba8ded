"""One exit-status convention for `python -m app extract|ocr` (app/cli.py EXIT_STATUS): problems with the
command line are found before any work (message on stderr, exit 2, nothing processed or written);
documents that fail while being processed go to stderr and into the JSON, the others still run, exit 1.
The pipeline and the OCR engine are stand-ins that fail the test when they are reached too early."""
from __future__ import annotations

import json

import pytest

from app.cli import EXIT_STATUS, build_parser, check_writable, main
from data.document import Document, Field, Page
from reading import route
from reading.route import Analysis
from tests.test_ui import png_bytes


@pytest.fixture()
def processed(monkeypatch) -> list[str]:
    """Stand-in for reading.route.analyse_file: records each path; a file named bad* fails as a whole."""
    seen: list[str] = []

    def fake_analyse_file(path, model_dir=None, doc_type=None, on_page=None, **kw):
        seen.append(path)
        if "bad" in path:
            return Analysis(Document(source=path, error={"type": "InputError",
                                                         "message": f"{path}: corrupt or unsupported PNG"}))
        doc = Document(source=path, doc_type="vat_invoice", doc_type_score=0.9,
                       pages=[Page(index=0, width=300, height=200)])
        doc.fields["invoice_number"] = Field("invoice_number", "12345678", score=0.97, label="发票号码", valid=True)
        return Analysis(doc)

    monkeypatch.setattr(route, "analyse_file", fake_analyse_file)
    return seen


def _png(path) -> str:
    path.write_bytes(png_bytes())
    return str(path)


def _errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error: ")]


def test_a_missing_file_stops_extract_before_any_work(tmp_path, processed, capsys):
    good = _png(tmp_path / "good.png")
    out = tmp_path / "out.json"
    assert main(["extract", good, str(tmp_path / "missing.png"), "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert processed == [] and not out.exists(), "nothing is processed or written"
    assert _errors(captured.err) == [f"error: {tmp_path / 'missing.png'}: no such file; check the path"]
    assert captured.out == "" and "Traceback" not in captured.err


def test_links_and_folders_are_named_before_any_work(tmp_path, processed, capsys):
    loop, dangling = tmp_path / "loop.png", tmp_path / "dangling.png"
    loop.symlink_to(loop)
    dangling.symlink_to(tmp_path / "gone.png")
    assert main(["extract", str(loop), str(dangling), str(tmp_path)]) == 2
    errors = _errors(capsys.readouterr().err)
    assert processed == [] and len(errors) == 3, errors
    assert "symbolic link loop" in errors[0] and "dangling symbolic link" in errors[1]
    assert "is a directory" in errors[2]


@pytest.mark.parametrize("kind", ["json-under-a-file", "json-is-a-folder", "draw-is-a-file"])
def test_unwritable_outputs_stop_extract_before_any_work(tmp_path, processed, capsys, kind):
    good = _png(tmp_path / "good.png")
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("x", encoding="utf-8")
    (tmp_path / "folder.json").mkdir()
    option = {"json-under-a-file": ["--json", str(a_file / "out.json")],
              "json-is-a-folder": ["--json", str(tmp_path / "folder.json")],
              "draw-is-a-file": ["--draw", str(a_file)]}[kind]
    assert main(["extract", good, *option]) == 2
    errors = _errors(capsys.readouterr().err)
    assert processed == [] and len(errors) == 1 and option[0] in errors[0], errors
    assert a_file.read_text(encoding="utf-8") == "x"


def test_a_failed_document_is_reported_on_stderr_and_kept_in_the_json(tmp_path, processed, capsys):
    good, bad = _png(tmp_path / "good.png"), _png(tmp_path / "bad.png")
    out = tmp_path / "new" / "out.json"                 # a missing folder is created
    assert main(["extract", bad, good, "--json", str(out)]) == 1
    captured = capsys.readouterr()
    assert processed == [bad, good], "the good file is still processed after the bad one"
    assert _errors(captured.err) == [f"error: {bad}: corrupt or unsupported PNG"]
    assert "ERROR" not in captured.out and "corrupt" not in captured.out
    assert "12345678" in captured.out
    docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]     # JSON Lines
    assert [d.get("error") is not None for d in docs] == [True, False]
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.json"], "no temporary file is left"


def test_ocr_checks_files_and_options_before_loading_the_engine(tmp_path, monkeypatch, capsys):
    import models.ocr

    def no_engine(*a, **kw):
        raise AssertionError("the OCR engine was loaded before the command line was checked")

    monkeypatch.setattr(models.ocr, "get_engine", no_engine)
    good = _png(tmp_path / "good.png")
    assert main(["ocr", good, str(tmp_path / "missing.png")]) == 2
    assert "missing.png: no such file" in capsys.readouterr().err
    assert main(["ocr", good, "--pages", "3-1"]) == 2
    assert _errors(capsys.readouterr().err) == ["error: --pages '3-1': pages are 1-based and A <= B"]
    assert main(["ocr", good, "--json", str(tmp_path / "good.png" / "x.json")]) == 2
    assert "--json" in capsys.readouterr().err


class BlankEngine:
    """An OCR engine that finds no text: each page read is empty (the CLI's handling is under test)."""
    def read(self, image, page_index=0, timings=None):
        return Page(index=page_index, width=image.shape[1], height=image.shape[0])


def test_ocr_failed_file_is_exit_1_and_the_json_keeps_it(tmp_path, monkeypatch, capsys):
    import models.ocr

    monkeypatch.setattr(models.ocr, "get_engine", lambda settings=None: BlankEngine())
    good = _png(tmp_path / "good.png")
    notes = tmp_path / "notes.jpg"
    notes.write_text("not an image", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["ocr", str(notes), good, "--json", str(out), "--summary"]) == 1
    captured = capsys.readouterr()
    assert len(_errors(captured.err)) == 1 and "notes.jpg" in captured.err and "looks like text" in captured.err
    assert "good.png: 1 page(s)" in captured.out
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.get("error") is not None for r in rows] == [True, False]


def test_the_convention_is_in_the_help_of_every_command(capsys):
    parser, _ = build_parser()
    assert "exit status" in parser.format_help() and EXIT_STATUS in parser.format_help()
    for command in ("ocr", "extract", "batch"):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0 and "usage or input error" in capsys.readouterr().out
    assert main([]) == 2 and "usage:" in capsys.readouterr().err


def test_check_writable_accepts_a_new_folder_and_leaves_no_probe(tmp_path):
    check_writable(str(tmp_path / "a" / "b" / "out.json"), "--json")
    check_writable(str(tmp_path / "draw"), "--draw", directory=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "draw"]


def test_a_file_name_that_is_not_utf8_is_written_escaped(tmp_path, capsys):
    """A GBK file name (from a Windows zip) reaches the JSON as \\xNN escapes instead of crashing the
    writer (it used to leave no --json at all). The real pipeline: the content is refused at decode."""
    import os
    name = os.fsencode(str(tmp_path)) + b"/" + "发票.png".encode("gbk")
    with open(name, "wb") as fh:
        fh.write(b"not an image at all\n")
    out = tmp_path / "out.json"
    rc = main(["extract", os.fsdecode(name), "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 1 and "Traceback" not in captured.err
    doc = json.loads(out.read_bytes().decode("utf-8"))          # valid UTF-8 JSON
    # b"\xc6\xb1" happens to be valid UTF-8 (Ʊ): only the undecodable bytes are escaped, losslessly
    assert doc["source"] == "\\xb7\\xa2Ʊ.png" and "not a JPEG" in doc["error"]["message"]


class _FsyncFails:
    """`os` for data/atomic.py whose fsync of the temporary file reports a full disk."""

    def fsync(self, fd):
        import errno
        import os
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        import os
        return getattr(os, name)


def test_extract_and_ocr_json_on_a_full_disk_is_one_sentence_and_exit_1(tmp_path, processed, monkeypatch, capsys):
    import data.atomic
    import models.ocr

    monkeypatch.setattr(models.ocr, "get_engine", lambda settings=None: BlankEngine())
    good = _png(tmp_path / "good.png")
    out = tmp_path / "out.json"
    out.write_text("the previous result\n", encoding="utf-8")
    monkeypatch.setattr(data.atomic, "os", _FsyncFails())
    for command in ("extract", "ocr"):
        assert main([command, good, "--json", str(out)]) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and _errors(err) == [_errors(err)[0]], err
        assert "--json" in err and "No space left on device" in err and "run the command again" in err
        assert out.read_text(encoding="utf-8") == "the previous result\n", "the old file is kept whole"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["good.png", "out.json"], "no temporary file is left"


def test_extract_and_ocr_refuse_a_fifo_or_a_device_without_reading_it(tmp_path, processed, capsys):
    import os

    from tests.test_batch_disk import run_in_thread
    fifo, zero = tmp_path / "pipe.png", tmp_path / "zero.png"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    for command in ("extract", "ocr"):
        assert run_in_thread(lambda command=command: main([command, str(fifo), str(zero)])) == 2
        errors = _errors(capsys.readouterr().err)
        assert len(errors) == 2 and "is a FIFO (named pipe), not a regular file" in errors[0], errors
        assert "character device (a symbolic link to '/dev/zero')" in errors[1]
    assert processed == []


def test_file_names_with_terminal_escapes_are_printed_escaped(tmp_path, processed, capsys):
    good = _png(tmp_path / "a\x1b[2Jb.png")
    missing = str(tmp_path / "x\x1b]0;title\x07\ry.png")
    assert main(["extract", missing]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err and "\x07" not in err
    assert _errors(err) == [f"error: {tmp_path}/x\\x1b]0;title\\x07\\x0dy.png: no such file; check the path"]
    out = tmp_path / "out.json"
    assert main(["extract", good, "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out and "a\\x1b[2Jb.png" in captured.out
    assert json.loads(out.read_text(encoding="utf-8"))["source"] == good, "the JSON keeps the real name"
