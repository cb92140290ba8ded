"""The product does not talk to the network: `extract`, `batch --workers 2` and the UI's analysis, each
run in a network namespace with only loopback and every connect() traced (tests/netns.py), make no
connection outside loopback, name look-ups included.

What this guards against: onnxruntime 1.32 sends telemetry from any process that has imported it for
~9 s (a DNS look-up of mobile.events.data.microsoft.com, then TLS connections) unless
ORT_DISABLE_TELEMETRY=1 is set before it is imported (models/offline.py, called by the packages' __init__).
Each process here therefore stays alive HOLD_SECONDS after its work, onnxruntime loaded: without the
setting each test sees a connect() to port 53 of the namespace's resolver. (By hand, 30 s of each showed
no connection either.)
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from models.offline import OFFLINE_ENV
from tests.netns import outbound, run_offline
from tests.test_pipeline_app import pdf_bytes, text_page

ROOT = Path(__file__).resolve().parents[1]
HOLD_SECONDS = 12.0   # onnxruntime's telemetry fires ~9 s after it is imported

# `python -m app ARGS...` in this process, which then stays alive HOLD seconds (argv: HOLD ARGS...).
# For a batch the worker processes are kept too: the pool waits HOLD seconds, its workers idle with
# their models loaded, before it stops them.
RUN_AND_HOLD = """
import runpy, sys, time
hold = float(sys.argv[1])
sys.argv = ["app", *sys.argv[2:]]
import app.batch.pool as pool
stop, held = pool.WorkerPool.stop, []
def held_stop(self):
    time.sleep(hold)
    held.append(self)
    stop(self)
pool.WorkerPool.stop = held_stop
code = 0
try:
    runpy.run_module("app", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
if not held:
    time.sleep(hold)
sys.exit(code)
"""

# The UI's analysis of an upload (app/ui/main.py calls route.analyse_bytes), then HOLD seconds alive.
ANALYSE_AND_HOLD = """
import json, os, sys, time
from reading import route
path = sys.argv[2]
with open(path, "rb") as fh:
    analysis = route.analyse_bytes(fh.read(), os.path.basename(path))
print(json.dumps({"error": analysis.document.error, "documents": len(analysis.results),
                  "text": " ".join(page.text for page in analysis.document.pages)}))
time.sleep(float(sys.argv[1]))
"""


def _env() -> dict[str, str]:
    """This environment without the offline settings, which importing our packages put into this test
    process too: the command under test must set them itself."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


def _offline(tmp_path: Path, code: str, *args: str) -> str:
    """Run `python -c code HOLD args...` offline; assert it succeeded and connected nowhere; its stdout."""
    trace = tmp_path / "connect.trace"
    done = run_offline([sys.executable, "-c", code, str(HOLD_SECONDS), *args], trace, cwd=ROOT, env=_env(),
                       timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    left = outbound(trace)
    assert not left, "connections leaving the machine:\n" + "\n".join(left)
    return done.stdout


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "note.png"
    text_page(["编号 1001", "合计 12.50"]).save(path)
    return path


@pytest.mark.heavy
def test_extract_connects_nowhere(tmp_path, page):
    out = tmp_path / "note.json"
    _offline(tmp_path, RUN_AND_HOLD, "extract", str(page), "--json", str(out))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert "1001" in " ".join(line["text"] for p in doc["pages"] for line in p["lines"]), doc


@pytest.mark.heavy
def test_batch_with_two_workers_connects_nowhere(tmp_path, page):
    folder = tmp_path / "docs"
    folder.mkdir()
    page.rename(folder / "note.png")
    (folder / "two.pdf").write_bytes(pdf_bytes([text_page(["第一页 A1"]), text_page(["第二页 B2"])]))
    results = tmp_path / "results.jsonl"
    _offline(tmp_path, RUN_AND_HOLD, "batch", str(folder), "--out", str(results), "--workers", "2", "--no-progress")
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert {Path(r["file"]).name for r in rows} == {"note.png", "two.pdf"}


@pytest.mark.heavy
def test_ui_analysis_connects_nowhere(tmp_path, page):
    result = json.loads(_offline(tmp_path, ANALYSE_AND_HOLD, str(page)).splitlines()[-1])
    assert result["error"] is None and result["documents"] == 1 and "1001" in result["text"], result
