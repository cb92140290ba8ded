"""Retraining from corrections cannot make things worse: the new model takes `latest` only when it is
better on the corrected kind (the corpus' doc types) and no base type loses more than the tolerance;
`--force` trains and keeps the version but `latest` moves only by `python -m training promote`; the
~180 MB work folder is removed when a run ends, exported or failed, kept for resume when interrupted,
and removed on a later start when the run that left it is dead.

Training, scoring and the base's held-out set are stand-ins here (`fake_stages`): what is tested is the
run's logic around them, in seconds. tests/test_retrain.py runs the real stages (heavy)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_retrain import make_base, make_corpus
from training.model_registry import ModelRegistry


def fake_stages(monkeypatch, corpus_f1: tuple[float, float] = (0.1, 0.9),
                base_types: tuple[float, float] = (0.8, 0.8), fail: BaseException | None = None) -> list[str]:
    """Replace the fine-tune (a copy of the base), the form-scorer refit, the scoring (base, new F1 on the
    held-out corpus pages: `corpus_f1`; on the base's own held-out generic forms: `base_types`) and the
    base's held-out set. `fail` is raised by the fine-tune instead. Returns the stages that ran."""
    import shutil

    from training import retrain as rt
    ran: list[str] = []

    def finetune(start, train_recs, heldout, schema_files, work, *a, **kw):
        ran.append("finetune")
        if fail is not None:
            raise fail
        shutil.copytree(start, work / "finetuned")
        return {"steps": 1, "step_function": "fake", "losses": [1.0], "notes": [], "pages": {"gt": len(train_recs)},
                "batch_rows": {"corpus": 4}, "tag_labels": 0, "new_doc_types": []}

    def scores(model_dir, records, schema_files, ocr="gt", cache=None):
        new = Path(model_dir).name == "finetuned"
        base_set = str(records[0].get("id", "")).startswith("base_heldout/")
        f1 = (base_types if base_set else corpus_f1)[1 if new else 0]
        dt = "generic_form" if base_set else "parking_ticket"
        return {"overall_field": {"f1": f1}, "f1_by_type": {dt: f1}, "doc_types": {}}

    def base_heldout(base_dir, *a, **kw):
        from data.corpus import read_corpus
        recs = read_corpus(Path(base_dir).parent / "corpus")[:2]
        for i, r in enumerate(recs):
            r["id"] = f"base_heldout/generic_form/{i}"
        return recs, {"pages": len(recs), "layouts": {}, "notes": [], "seed": 0}

    monkeypatch.setattr(rt, "finetune", finetune)
    monkeypatch.setattr(rt, "refit_form_scorer", lambda *a: {"refit": False, "why": "stand-in"})
    monkeypatch.setattr(rt, "evaluate_model", scores)
    monkeypatch.setattr(rt, "base_heldout_records", base_heldout)
    return ran


@pytest.fixture
def setup(tmp_path):
    """(corpus of 32 labelled pages, small base, out-root): base and corpus side by side, as
    `fake_stages`' base held-out set expects."""
    return make_corpus(tmp_path / "corpus", 32), make_base(tmp_path / "base", 32, 1), tmp_path / "m"


def args(corpus: Path, base: Path, root: Path, *extra: str) -> list[str]:
    return ["retrain", "--corpus", str(corpus), "--base", str(base), "--out-root", str(root), "--name", "p",
            "--replay", "0", *extra]


# --- the rule ---------------------------------------------------------------------------------------

def test_promotion_needs_the_corrected_kind_better_not_only_not_worse():
    from training.retrain import MIN_HELDOUT_PAGES, PROMOTION_TOLERANCE, decide_promotion
    same = {"vat_invoice": 0.9}
    tie = decide_promotion(0.8, 0.8, MIN_HELDOUT_PAGES, same, same)
    assert not tie.promote and "no better" in tie.reasons[0] and "0.800 -> new 0.800" in tie.reasons[0]
    assert decide_promotion(0.8, 0.81, MIN_HELDOUT_PAGES, same, same).promote
    # a mixed corpus: better overall, but one corrected kind lost more than the tolerance on its held-out pages
    mixed = decide_promotion(0.7, 0.8, MIN_HELDOUT_PAGES, same, same,
                             corpus_types_base={"vat_invoice": 0.9, "receipt": 0.6},
                             corpus_types_new={"vat_invoice": 0.9 - 3 * PROMOTION_TOLERANCE, "receipt": 0.95})
    assert not mixed.promote and len(mixed.reasons) == 1 and "vat_invoice on the held-out corpus" in mixed.reasons[0]


def test_a_tie_on_the_corrected_pages_keeps_latest(setup, monkeypatch, capsys):
    from training.__main__ import main
    fake_stages(monkeypatch, corpus_f1=(0.9, 0.9))
    corpus, base, root = setup
    assert main(args(corpus, base, root)) == 1
    assert "no better" in capsys.readouterr().err
    assert ModelRegistry(root).latest("p") is None and len(ModelRegistry(root).versions("p")) == 1


def test_force_keeps_the_version_and_only_promote_moves_latest(setup, monkeypatch, capsys):
    """--force on a model the rule refuses (a base type lost): exported and kept, `latest` unmoved
    (exit 0: it did what --force means), the report says how to promote; `promote` prints the figures,
    moves `latest` and records it in the report."""
    from training.__main__ import main
    fake_stages(monkeypatch, base_types=(0.8, 0.5))
    corpus, base, root = setup
    reg = ModelRegistry(root)
    assert main(args(corpus, base, root, "--force")) == 0
    (version,) = reg.versions("p")
    rep = json.loads((version / "report.json").read_text(encoding="utf-8"))
    assert rep["forced"] and not rep["promoted"] and reg.latest("p") is None and not reg.pointer("p").exists()
    assert f"python -m training promote {version}" in rep["promotion"] in capsys.readouterr().out
    assert rep["promotion_rule"]["corrected_kind"] == ["parking_ticket"]

    assert main(["promote", str(version)]) == 0
    out = capsys.readouterr().out
    assert "field F1 base 0.100 -> new 0.900" in out and "generic_form: 0.800 -> 0.500" in out
    assert "refused: generic_form on the base's own held-out pages fell" in out
    assert f"latest moved to {version.name} (was none)" in out
    assert reg.latest("p") == version
    rep = json.loads((version / "report.json").read_text(encoding="utf-8"))
    assert rep["promoted"] and "python -m training promote" in rep["promotion"]
    assert "python -m training promote" in (version / "report.md").read_text(encoding="utf-8")


def test_force_never_moves_latest_even_when_the_rule_passes(setup, monkeypatch):
    from training.retrain import retrain
    fake_stages(monkeypatch)
    corpus, base, root = setup
    first = retrain(corpus, base, root, "p", replay=0.0)             # earns it
    assert ModelRegistry(root).latest("p") == first
    forced = retrain(corpus, base, root, "p", replay=0.0, force=True, seed=1)
    assert forced != first and ModelRegistry(root).latest("p") == first
    assert "the promotion rule passed" in json.loads((forced / "report.json").read_text(encoding="utf-8"))["promotion"]


def test_promote_refuses_what_is_not_an_exported_version(tmp_path, capsys):
    from training.__main__ import main
    assert main(["promote", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "cannot be promoted" in err and "Traceback" not in err


# --- the work folder --------------------------------------------------------------------------------

def work_root(root: Path) -> Path:
    return root / "registry" / ".work"


def test_work_folder_is_removed_when_the_run_succeeds(setup, monkeypatch, capsys):
    from training.__main__ import main
    fake_stages(monkeypatch)
    corpus, base, root = setup
    assert main(args(corpus, base, root)) == 0
    assert "progress: finetune (4 of 8)" in capsys.readouterr().out
    assert not work_root(root).exists() and ModelRegistry(root).latest("p") is not None


def test_work_folder_is_removed_when_the_run_fails(setup, monkeypatch):
    from training.retrain import retrain
    fake_stages(monkeypatch, fail=RuntimeError("out of memory"))
    corpus, base, root = setup
    with pytest.raises(RuntimeError, match="out of memory"):
        retrain(corpus, base, root, "p", replay=0.0)
    assert not work_root(root).exists() and ModelRegistry(root).versions("p") == []


def test_an_interrupted_run_keeps_its_work_and_the_same_command_resumes(setup, monkeypatch):
    from training.retrain import retrain
    corpus, base, root = setup
    fake_stages(monkeypatch, fail=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        retrain(corpus, base, root, "p", replay=0.0)
    (work,) = work_root(root).iterdir()
    assert (work / "stages" / "split.json").is_file()
    ran = fake_stages(monkeypatch)
    version = retrain(corpus, base, root, "p", replay=0.0)
    assert ran == ["finetune"] and ModelRegistry(root).latest("p") == version and not work_root(root).exists()


def test_a_dead_runs_work_folder_is_removed_on_the_next_start_and_a_live_ones_kept(setup, monkeypatch, capsys):
    """A crash (kill -9, out of memory) runs no cleanup: the next retrain, with other arguments, removes
    the folder its dead process left, and never one a live process holds."""
    from training.retrain import OWNER_FILE, retrain
    corpus, base, root = setup
    dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()
    host = __import__("socket").gethostname()
    for name, pid in (("p-dead", int(dead_pid)), ("p-live", os.getppid())):
        (work_root(root) / name / "checkpoint").mkdir(parents=True)
        (work_root(root) / name / OWNER_FILE).write_text(json.dumps({"pid": pid, "host": host, "started": 0}))
    fake_stages(monkeypatch)
    retrain(corpus, base, root, "p", replay=0.0)
    assert "p-dead: the work directory of a run that ended without cleaning up" in capsys.readouterr().out
    assert [p.name for p in work_root(root).iterdir()] == ["p-live"]


def test_pages_added_after_an_interruption_start_a_fresh_run_not_a_stale_resume(setup, monkeypatch):
    """A clerk saves more checked pages after a retrain was interrupted: the next run imports them (its own
    work folder), instead of resuming on the old import; the interrupted one's is removed as stale."""
    from training.retrain import retrain
    corpus, base, root = setup
    fake_stages(monkeypatch, fail=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        retrain(corpus, base, root, "p", replay=0.0)
    (old,) = work_root(root).iterdir()
    with open(corpus / "corpus.jsonl", "a", encoding="utf-8") as fh:
        fh.write((corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    seen: list[int] = []
    fake_stages(monkeypatch)
    from training import retrain as rt
    real_split = rt.stage_split

    def split(corpus_dir, work, seed):
        out = real_split(corpus_dir, work, seed)
        seen.append(out["train"] + out["heldout"])
        return out

    monkeypatch.setattr(rt, "stage_split", split)
    monkeypatch.setattr(rt, "_owner_alive", lambda work: False)       # the interrupted run's process is gone
    retrain(corpus, base, root, "p", replay=0.0)
    assert seen == [33] and not old.exists()
