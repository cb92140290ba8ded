"""`--type` of `python -m app extract` and `batch` is checked against the MODEL's doc types (its
labels.json), before any file is read: a type the model was never trained on is refused with the
list of the ones it was, and a retrained model's new type is accepted."""
from __future__ import annotations

import json

import pytest

from app.cli import main
from app.model_types import UnknownTypeError, check_doc_type, model_doc_types, model_type_label
from models.extractor import DEFAULT_MODEL_DIR
from tests.test_ui import model_dir_with_new_type


def bundled_types() -> list[str]:
    return json.loads((DEFAULT_MODEL_DIR / "labels.json").read_text(encoding="utf-8"))["doc_types"]


def test_model_types_come_from_the_model_directory(tmp_path):
    assert model_doc_types(None) == bundled_types() == model_doc_types(DEFAULT_MODEL_DIR)
    assert "parking_receipt" not in model_doc_types(None)
    new = model_dir_with_new_type(tmp_path)
    assert model_doc_types(new)[-1] == "parking_receipt"
    assert "train_ticket" not in model_doc_types(new)       # the repo has its schema; this model was not trained on it
    assert model_type_label(new, "parking_receipt") == "停车收据 (parking_receipt)"
    check_doc_type("parking_receipt", new)
    with pytest.raises(UnknownTypeError, match="parking_receipt"):
        check_doc_type("parking_receipt", None)


@pytest.mark.parametrize("command", ["extract", "batch"])
def test_unknown_type_is_refused_naming_the_models_types(command, tmp_path, capsys):
    missing = str(tmp_path / "never_read.png")      # the check comes first: the file is never opened
    argv = [command, missing, "--type", "parking_receipt"]      # a type only a retrained model knows
    if command == "batch":
        argv += ["--out", str(tmp_path / "out.jsonl")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "parking_receipt" in err and "was not trained on" in err
    assert ", ".join(bundled_types()) in err
    assert not (tmp_path / "out.jsonl").exists()


def test_new_type_passes_the_check_with_its_model(tmp_path, capsys, monkeypatch):
    new = model_dir_with_new_type(tmp_path)
    seen = {}

    def fake_analyse_file(path, model_dir, doc_type):
        seen.update(model=model_dir, doc_type=doc_type)
        raise FileNotFoundError(path)

    monkeypatch.setattr("reading.route.analyse_file", fake_analyse_file)
    (tmp_path / "a.png").write_bytes(b"")          # it must exist: missing files are refused before any work
    assert main(["extract", str(tmp_path / "a.png"), "--model", str(new), "--type", "parking_receipt"]) == 2
    assert seen == {"model": str(new), "doc_type": "parking_receipt"}, "the type reached the pipeline"
