"""One `python -m training retrain` run as a user starts it (a subprocess), for the benches that judge retrains."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def run_retrain(args: list[str], root: Path, name: str) -> tuple[int, float, Path, dict[str, Any]]:
    """(exit status, seconds, the version folder, its report.json) of `python -m training retrain ARGS` writing
    registry NAME under ROOT. Exit 1 (exported, not promoted) is a result; any other failure ends the bench."""
    from training.model_registry import ModelRegistry
    cmd = [sys.executable, "-m", "training", "retrain", *args, "--out-root", str(root), "--name", name]
    print("$ " + " ".join(cmd[1:]), flush=True)
    t0 = time.time()
    rc = subprocess.run(cmd).returncode
    seconds = round(time.time() - t0, 1)
    if rc not in (0, 1):
        raise SystemExit(f"retrain failed (exit {rc}): {' '.join(cmd)}")
    version = ModelRegistry(root).versions(name)[-1]
    return rc, seconds, version, json.loads((version / "report.json").read_text(encoding="utf-8"))
