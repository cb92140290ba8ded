"""Shared test fixtures: where the real sample documents are, and a scratch directory per test."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared/samples beside the checkout (CI lays the same path); SAMPLES_DIR overrides it.
SAMPLES = Path(os.environ.get("SAMPLES_DIR", ROOT.parent / "shared" / "samples"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "img").is_dir():
        raise FileNotFoundError(f"real sample documents not found at {SAMPLES}; set SAMPLES_DIR")
    return SAMPLES
