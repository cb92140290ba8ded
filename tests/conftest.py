"""Shared test fixtures: where the real sample documents are (tests/data), and a scratch directory per test."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The real samples the suite reads live in tests/data (licences in tests/data/README.md), so a clone of
# the repository alone passes; SAMPLES_DIR points the tests at another folder of the same layout.
SAMPLES = Path(os.environ.get("SAMPLES_DIR", ROOT / "tests" / "data"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "img").is_dir():
        raise FileNotFoundError(f"real sample documents not found at {SAMPLES}; set SAMPLES_DIR")
    return SAMPLES
