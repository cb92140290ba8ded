"""The robustness bench in its quick form (every hostile probe of issue 34, small): each run ends by
itself, prints no traceback, stays under 1.5 GB and passes its probe's own check (nothing executed from
a pickle, the lost documents of a full disk named and completed by a rerun, a user's file untouched,
no live spreadsheet formula, no raw terminal escape). The bench exits 1 when any row misses."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import robustness_bench

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.heavy
def test_quick_robustness_bench_meets_every_target(tmp_path):
    """Run as its own process, as a user runs it: a child's peak RSS from wait4 starts at its parent's
    resident size when it was forked, so forked from this test process (gigabytes after the suite's
    earlier tests) every row would read as the test process's size."""
    out = tmp_path / "robustness.json"
    done = subprocess.run([sys.executable, "-m", "bench.robustness_bench", "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    result = json.loads(out.read_text(encoding="utf-8"))
    missed = [(r["input"], r["entry"], r["miss"], r["message"]) for r in result["rows"] if r["target"] != "ok"]
    assert done.returncode == 0 and not missed, (missed, done.stdout[-3000:], done.stderr[-3000:])
    labels = {r["input"] for r in result["rows"]}
    assert {p.label for p in robustness_bench.PROBES} <= labels
    assert {"thin_20M_x_3.png", "thin_332_bytes.pdf", "page_1e6_pt.pdf"} <= labels
    assert all(r["peak_rss_mb"] < robustness_bench.LIMIT_MB for r in result["rows"])
    assert "rows met their target" in done.stdout


def test_a_run_that_misses_is_reported_as_missed():
    """The shared target: a hang, a kill, a traceback or too much memory each make a row miss."""
    ok = {"rc": 1, "stdout": "", "stderr": "error: bad file", "seconds": 1.0, "timed_out": False,
          "peak_rss_mb": 400.0}
    assert robustness_bench.general_miss(ok) is None
    assert "hung" in robustness_bench.general_miss({**ok, "timed_out": True})
    assert "signal 9" in robustness_bench.general_miss({**ok, "rc": -9})
    assert "traceback" in robustness_bench.general_miss({**ok, "stderr": "Traceback (most recent call last):\n"})
    assert "peak RSS" in robustness_bench.general_miss({**ok, "peak_rss_mb": 2000.0})
    assert "killed above" in robustness_bench.general_miss({**ok, "rc": -9, "peak_rss_mb": 4200.0})
