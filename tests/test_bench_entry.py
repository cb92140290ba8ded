"""The bench entry and benchmarks that can fail: `python -m bench --list` names the quick benches, a target is met or
missed by one rule, and a bench whose run misses its target exits 1 with the miss in its JSON."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from bench.__main__ import QUICK, SLOW, status
from bench.targets import Target, judge

ROOT = Path(__file__).resolve().parents[1]


def test_list_names_every_quick_bench_and_its_arguments():
    out = subprocess.run([sys.executable, "-m", "bench", "--list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    quick, slow = out.split("slow")
    for name in QUICK:
        assert f"python -m bench.{name} " in quick
        assert (ROOT / "bench" / f"{name}.py").is_file()
    for name in SLOW:
        assert name in slow and name not in quick
        assert (ROOT / "bench" / f"{name}.py").is_file()


def test_target_met_and_missed():
    assert Target("ratio", 1.05, 1.10, at_least=False).met
    assert not Target("ratio", 1.20, 1.10, at_least=False).met
    assert Target("recovery", 0.98, 0.98).met                       # the bar itself is met ...
    assert not Target("gain", 0.0, 0.0, strict=True).met            # ... unless the bar says "improves"
    assert not Target("nothing measured", math.nan, 0.5).met
    verdict = judge([Target("a", 1.0, 0.5), Target("b", 0.1, 0.5)], quiet=True)
    assert verdict["met"] is False
    assert [t["met"] for t in verdict["targets"]] == [True, False]
    assert judge([], quiet=True)["met"] is True


def test_status_reads_the_verdict_from_the_json(tmp_path):
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"rows": [{"ok": True}, {"ok": False}]}), encoding="utf-8")
    assert status(1, result, 0.0) == "missed"
    assert status(1, tmp_path / "absent.json", 0.0) == "failed"      # an error, not a measurement
    result.write_text(json.dumps({"rows": [{"target": "ok"}, {"target": "missed"}]}), encoding="utf-8")
    assert status(1, result, 0.0) == "missed"
    assert status(1, result, result.stat().st_mtime + 10) == "failed"   # a file older than the run is not its verdict
    result.write_text(json.dumps({"met": True}), encoding="utf-8")
    assert status(0, result, 0.0) == "met"
    result.write_text(json.dumps({"share": 0.07}), encoding="utf-8")
    assert status(0, result, 0.0) == "ran"


def test_a_missed_target_exits_1_and_is_in_the_json(tmp_path):
    """synth_bench with a bar no run can meet (10,000 pages in 0.001 minutes): exit 1, the miss in its JSON."""
    out = tmp_path / "synth.json"
    run = subprocess.run([sys.executable, "-m", "bench.synth_bench", "--n", "1", "--dir-n", "2",
                          "--target-min", "0.001", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "MISSED" in run.stdout
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["met"] is False and result["targets"][0]["limit"] == 0.001
