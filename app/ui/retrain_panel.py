"""The UI's retrain panel: how many checked pages the corrections folder holds against what a retrain
needs, a button that starts `python -m training retrain` on them in the background, its progress while
it runs and, when it ends, whether the new model took `latest` and why (or why not).

The retrain is a subprocess, never a thread of the server: it takes minutes and gigabytes, and a
Streamlit rerun or a closed tab must not stop it. Its output goes to a log under runs/retrain_ui/, which
each rerun reads (`read_progress`: the `progress: STAGE (i of n)` lines training/retrain.py prints, and
the fine-tune's step counter). One retrain at a time per server (`RUN`, module state shared by every
session: two would fight over the cores for no gain). The exact command is shown beside the button, so
whoever runs the server can start it by hand instead.

Whether the new model is used is not decided here: training/retrain.py's promotion rule moves `latest`
only for a model better on the corrected pages that loses no base type, and this panel reports what it
decided (the version's report.json).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from data.importers.records import CORPUS_FILE

ROOT = Path(__file__).resolve().parents[2]
BASE_MODEL = "models/default"         # what a retrain from the UI starts from (as the command shown says)
LOG_DIR = ROOT / "runs" / "retrain_ui"
POLL_SECONDS = 2.0                    # how often the panel rereads the log while a retrain runs
_PROGRESS = re.compile(r"progress: (\w+) \((\d+) of (\d+)\)")
_STEPS = re.compile(r"(\d+)/(\d+) \[")           # tqdm's "24/60 [00:10<00:15, ...]"
_EXPORTED = re.compile(r"model exported to (.+) \(report: ")
STAGE_WORDS = {"import": "导入语料 importing the corpus", "split": "划分留出页 holding pages out",
               "replay": "生成复习页 drawing rehearsal pages", "finetune": "微调 fine-tuning",
               "form_scorer": "表单打分器 fitting the form scorer", "evaluate": "评估 scoring base and new",
               "base_heldout": "基础留出集 scoring the base's own held-out pages",
               "export": "导出 exporting the version"}


@dataclass
class RetrainRun:
    """A retrain started from the UI: its process (`poll()` gives the exit status once it ended), the
    command, and the log its output goes to."""
    proc: Any
    argv: list[str]
    log: Path
    started: float = field(default_factory=time.time)


RUN: dict[str, RetrainRun | None] = {"current": None}     # one per server process, shared by all sessions
_LOCK = threading.Lock()


def retrain_argv(corpus: str | Path) -> list[str]:
    """The retrain the button starts: the corrections folder as corpus, on the bundled base."""
    return [sys.executable, "-m", "training", "retrain", "--corpus", str(corpus), "--base", BASE_MODEL]


def retrain_command(corpus: str | Path) -> str:
    """The same command as a person types it (from the repository root)."""
    return "python " + shlex.join(retrain_argv(corpus)[1:])


def checked_pages(corpus: str | Path) -> int:
    """Pages saved in the corrections folder (one corpus.jsonl line each; none when it does not exist)."""
    try:
        text = (Path(corpus) / CORPUS_FILE).read_text(encoding="utf-8")
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if line.strip())


def launch(argv: list[str], log: Path) -> Any:
    """Start the retrain in the background, its output into `log`; a new session, so it outlives the
    rerun (and a stop of the server's own process group)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)


def start(corpus: str | Path) -> RetrainRun | None:
    """Start a retrain unless one is running (then None)."""
    with _LOCK:
        run = RUN["current"]
        if run is not None and run.proc.poll() is None:
            return None
        argv = retrain_argv(corpus)
        log = LOG_DIR / f"retrain-{time.strftime('%Y%m%d-%H%M%S')}.log"
        RUN["current"] = RetrainRun(launch(argv, log), argv, log)
        return RUN["current"]


def read_log(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def read_progress(text: str) -> tuple[float, str]:
    """(share done, what it is doing) from a retrain's output so far: the last stage line, and within the
    fine-tune its step counter (tqdm redraws with carriage returns: the last one counts)."""
    found = list(_PROGRESS.finditer(text))
    if not found:
        return 0.0, "启动中 starting…"
    last = found[-1]
    stage, i, n = last[1], int(last[2]), int(last[3])
    within, words = 0.0, STAGE_WORDS.get(stage, stage)
    steps = list(_STEPS.finditer(text, last.end()))
    if stage == "finetune" and steps:
        done, total = int(steps[-1][1]), int(steps[-1][2])
        within = done / total if total else 0.0
        words += f" {done}/{total}"
    return min((i - 1 + within) / n, 1.0), f"{words} (第 {i}/{n} 步 stage {i} of {n})"


def outcome(status: int, text: str) -> tuple[str, str]:
    """(kind, message) of an ended retrain: "success" when the new version took `latest`, "warning" when
    it was exported but kept out (the rule's reasons), "error" when it was refused or failed."""
    import json
    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
    error = next((ln[len("error: "):] for ln in reversed(lines) if ln.startswith("error: ")), "")
    exported = list(_EXPORTED.finditer(text))
    report: dict = {}
    if exported:
        try:
            report = json.loads((ROOT / exported[-1][1].strip() / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = {}
    version = report.get("version") or (Path(exported[-1][1].strip()).name if exported else "")
    if status == 0 and report.get("promoted"):
        return "success", (f"新模型 {version} 已成为 latest The new model {version} is now `latest`: "
                           f"held-out corrected pages F1 {report['base_f1']:.3f} → {report['new_f1']:.3f}. "
                           "在左侧栏刷新模型列表 Refresh the model list in the sidebar to use it.")
    if exported:
        why = report.get("promotion") or error or "see the log"
        return "warning", (f"新模型 {version} 已导出但未启用 The new model {version} was exported but is not used: "
                           f"latest {why}")
    if status == 2:
        return "error", f"重新训练被拒绝 The retrain was refused: {error or 'see the log'}"
    return "error", (f"重新训练失败 The retrain failed (exit status {status}): "
                     f"{error or (lines[-1] if lines else 'no output')}")


def _show_run(run: RetrainRun) -> None:
    """A running retrain's progress, or an ended one's result (a full rerun when it ends, so the
    button comes back)."""
    text = read_log(run.log)
    status = run.proc.poll()
    if status is None:
        share, words = read_progress(text)
        minutes = (time.time() - run.started) / 60
        st.progress(share, text=f"重新训练中 Retraining: {words} · {minutes:.0f} min")
        st.caption(f"输出 Output: {run.log}")
        return
    kind, message = outcome(status, text)
    getattr(st, kind)(message)
    st.caption(f"输出 Output: {run.log}")


@st.fragment(run_every=POLL_SECONDS)
def _running(run: RetrainRun) -> None:
    _show_run(run)
    if run.proc.poll() is not None:
        st.rerun()            # the whole page: the start button is offered again


def show(corpus: str | Path) -> None:
    """The panel: the count against MIN_CORPUS_PAGES, the start button (while none runs), the progress or
    the last result, and the exact command."""
    from training.retrain import MIN_CORPUS_PAGES, MIN_HELDOUT_PAGES
    total = checked_pages(corpus)
    st.markdown(f"**重新训练 Retrain** · 已核对 {total} 页 checked pages saved / 至少 {MIN_CORPUS_PAGES} 页 "
                f"needed")
    run = RUN["current"]
    running = run is not None and run.proc.poll() is None
    if total < MIN_CORPUS_PAGES:      # retrain would refuse it (exit 2): said here, not after a clerk has run it
        st.info(f"重新训练至少需要 {MIN_CORPUS_PAGES} 页已核对的页，还差 {MIN_CORPUS_PAGES - total} 页 / "
                f"Retraining needs at least {MIN_CORPUS_PAGES} checked pages, {MIN_CORPUS_PAGES - total} more: "
                f"it holds {MIN_HELDOUT_PAGES} of them out to judge the new model against the current one.")
    elif st.button("开始重新训练 Start retraining", disabled=running, key="retrain_start",
                   help="在后台用已核对的页重新训练；只有在已核对页上更好、且其他类型不变差时才会启用新模型 "
                        "Retrains on the checked pages in the background; the new model is used only when it is "
                        "better on them and no other document type gets worse"):
        start(corpus)
        st.rerun()            # drawn again with the button off and the progress on
    if run is not None:
        if running:
            _running(run)
        else:
            _show_run(run)
    st.caption("或在服务器上运行 Or run on the server (from the repository root):")
    st.code(retrain_command(corpus), language="bash")
