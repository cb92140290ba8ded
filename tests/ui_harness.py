"""The upload UI under Streamlit's AppTest with the analysis replaced by a test's own (no OCR, no model)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from streamlit.testing.v1 import AppTest

from reading import route

UI = str(Path(__file__).resolve().parents[1] / "app" / "ui" / "main.py")


def start_ui(monkeypatch, tmp_path: Path, analyse: Callable) -> AppTest:
    """The UI started once, its analysis `analyse` (reading.route.analyse_bytes's signature), its corrections kept
    under `tmp_path`."""
    monkeypatch.setattr(route, "analyse_bytes", analyse)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    monkeypatch.setenv("PIAOJU_CORRECTIONS_DIR", str(tmp_path / "corrections"))
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at
