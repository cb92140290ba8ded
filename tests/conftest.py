"""Shared test fixtures: where the real sample documents are (tests/data), and a small untrained extractor."""
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


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A model directory holding a small untrained extractor (VAT invoice and generic form): for the shapes
    and plumbing of extraction, not its accuracy."""
    from models.encoder import EncoderConfig
    from models.heads import schema_field_keys, tag_labels
    from models.model_dir import ExtractorConfig, write_model_dir
    from models.tokenizer import Tokenizer
    d = tmp_path_factory.mktemp("m") / "tiny"
    keys, types = schema_field_keys(["vat_invoice", "generic_form"])
    vocab = Tokenizer.from_dir(None)
    enc = {**EncoderConfig.preset("tiny", vocab_size=vocab.vocab_size, hidden_size=32, num_layers=1, num_heads=2,
                                  intermediate_size=64, max_position=64).__dict__}
    cfg = ExtractorConfig(encoder=enc, tag_labels=tag_labels(keys), doc_types=types, max_len=64)
    write_model_dir(cfg.build(), cfg, vocab, d)
    return d
