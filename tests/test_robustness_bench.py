"""The robustness bench in its quick form (every hostile probe of issue 34, small): each run ends by
itself, prints no traceback, stays under 1.5 GB and passes its probe's own check (nothing executed from
a pickle, the lost documents of a full disk named and completed by a rerun, a user's file untouched,
no live spreadsheet formula, no raw terminal escape). The bench exits 1 when any row misses."""
from __future__ import annotations

import json

import pytest

from bench import robustness_bench


@pytest.mark.heavy
def test_quick_robustness_bench_meets_every_target(tmp_path, capsys):
    out = tmp_path / "robustness.json"
    code = robustness_bench.main(["--quick", "--json", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    missed = [(r["input"], r["entry"], r["miss"], r["message"]) for r in result["rows"] if r["target"] != "ok"]
    assert code == 0 and not missed, missed
    labels = {r["input"] for r in result["rows"]}
    assert {p.label for p in robustness_bench.PROBES} <= labels
    assert {"thin_20M_x_3.png", "thin_332_bytes.pdf", "page_1e6_pt.pdf"} <= labels
    assert all(r["peak_rss_mb"] < robustness_bench.LIMIT_MB for r in result["rows"])
    assert "rows met their target" in capsys.readouterr().out


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
