"""models/model_dir.py is the one owner of a model directory's files: no other module of the product, the
training code or the benchmarks builds the path of provenance.json, metrics.json or pair_scorer.json (each
reads and writes them through `read_provenance`, `write_metrics`, `read_pair_scorer`, ...), and those
functions write what the readers read back, atomically."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from models.model_dir import (
    FIELD_CALIBRATION,
    METRICS,
    PAIR_SCORER,
    PROVENANCE,
    ModelDirError,
    describe_model_dir,
    read_metrics,
    read_pair_scorer_record,
    read_provenance,
    write_metrics,
    write_provenance,
)

ROOT = Path(__file__).resolve().parent.parent
OWNER = ROOT / "models" / "model_dir.py"
OWNED = {PROVENANCE, METRICS, PAIR_SCORER, FIELD_CALIBRATION}


def owned_names_in(path: Path) -> list[int]:
    """Lines of `path` where a string constant is exactly one of the owned file names: a path being built
    (`d / "metrics.json"`), not a sentence that mentions the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in OWNED]


def test_only_model_dir_names_the_files_of_a_model_directory():
    offenders = [f"{p.relative_to(ROOT)}:{line}"
                 for pkg in ("app", "data", "models", "training", "bench", "scripts")
                 for p in sorted((ROOT / pkg).rglob("*.py")) if p != OWNER
                 for line in owned_names_in(p)]
    assert offenders == [], f"read or write these through models/model_dir.py: {offenders}"
    assert owned_names_in(OWNER), "the owner itself names them (the scan sees constants)"


def test_the_scan_sees_a_raw_write(tmp_path: Path):
    raw = tmp_path / "raw.py"
    raw.write_text('from pathlib import Path\n\n\ndef f(d: Path) -> None:\n'
                   '    (d / "provenance.json").write_text("{}")\n', encoding="utf-8")
    assert owned_names_in(raw) == [5]


def test_records_round_trip_atomically_with_the_same_bytes(tmp_path: Path):
    record = {"command": "python -m training train", "heldout_layouts": ["vat_invoice/classic"], "名": 1}
    assert read_provenance(tmp_path) is None and read_metrics(tmp_path) is None
    path = write_provenance(tmp_path, record)
    assert path.read_text(encoding="utf-8") == json.dumps(record, ensure_ascii=False, indent=1)
    assert read_provenance(tmp_path) == record
    write_metrics(tmp_path, {"overall_field": {"f1": 0.5}})
    assert read_metrics(tmp_path) == {"overall_field": {"f1": 0.5}}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([PROVENANCE, METRICS])   # no temporary left


@pytest.mark.parametrize("text, why", [("{torn", "unreadable"), ("[1, 2]", "JSON object")])
def test_a_corrupt_record_is_a_clear_error(tmp_path: Path, text: str, why: str):
    for name, read in ((PROVENANCE, read_provenance), (METRICS, read_metrics), (PAIR_SCORER, read_pair_scorer_record)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ModelDirError, match=why) as err:
            read(tmp_path)
        assert name in str(err.value)


def test_describing_a_model_leaves_an_unreadable_record_out(tmp_path: Path):
    import shutil

    from models.model_dir import DEFAULT_MODEL_DIR, REQUIRED_FILES
    for name in REQUIRED_FILES:
        shutil.copy(DEFAULT_MODEL_DIR / name, tmp_path / name)
    write_metrics(tmp_path, {"overall_field": {"f1": 0.75}})
    write_provenance(tmp_path, {"command": "python -m training train"})
    info = describe_model_dir(tmp_path)
    assert info.field_f1 == 0.75 and info.trained_by == "python -m training train"
    (tmp_path / METRICS).write_text("{torn", encoding="utf-8")
    assert describe_model_dir(tmp_path).field_f1 is None
