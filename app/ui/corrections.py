""""Save corrections": a checked page becomes a training example in our corpus format.

The record is the shape data/importers/records.py defines (one page per line of corpus.jsonl, image
path relative to the corpus directory, under images/), so `python -m training` can import the
directory like any other corpus. Saving the same page again replaces its record instead of adding a
second one, and the JSONL is rewritten through a temporary file, so a crash never leaves half a file.

Where: one folder fixed on the server (`corrections_dir()`: $PIAOJU_CORRECTIONS_DIR, else
runs/corrections in the repository). A visitor of the UI cannot choose it, and the image file name
made from an upload's name is sanitised (`safe_stem`), so no upload writes outside that folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from data.atomic import write_text_atomic
from data.document import Document, Field, Page
from data.importers.records import CORPUS_FILE, IMAGE_DIR, check_record, make_line

ROOT = Path(__file__).resolve().parents[2]
CORRECTIONS_ENV = "PIAOJU_CORRECTIONS_DIR"
DEFAULT_CORRECTIONS_DIR = ROOT / "runs" / "corrections"
MAX_STEM_BYTES = 120        # UTF-8 bytes of the name part taken from an upload; file names stop at 255
_UNSAFE = re.compile(r"[^\w.-]+")


def corrections_dir() -> Path:
    """The folder corrections are saved in: $PIAOJU_CORRECTIONS_DIR (a relative value is taken from the
    repository root, not from wherever the server was started), else runs/corrections. Read on the
    server only: the UI shows it and offers no way to change it, so a visitor cannot write elsewhere."""
    raw = os.environ.get(CORRECTIONS_ENV, "").strip()
    path = Path(raw).expanduser() if raw else DEFAULT_CORRECTIONS_DIR
    return (path if path.is_absolute() else ROOT / path).resolve()


def safe_stem(name: str) -> str:
    """A file-name stem made from an upload's name that cannot leave the folder it is written in: the
    last component after either slash, its suffix dropped, every run of characters other than letters
    and digits (any script), `_`, `.`, `-` replaced by `_`, no leading or trailing dots, at most
    MAX_STEM_BYTES bytes; "page" when nothing is left."""
    base = re.split(r"[\\/]", name)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    stem = _UNSAFE.sub("_", stem).strip("._")
    stem = stem.encode("utf-8")[:MAX_STEM_BYTES].decode("utf-8", "ignore").rstrip("._")
    return stem or "page"


def _locate(field: Field, page: Page) -> tuple[int, list[int]] | None:
    """(line index, [start, end) in that line) of the field on the page, when it can be found.

    Preferred: the corrected value written verbatim in a line (the user picked the right text);
    otherwise the place the model read it from (its page-text span), since the value sits there even
    if OCR misread some characters."""
    for target in (field.value, field.raw):
        if not target:
            continue
        for i, line in enumerate(page.lines):
            at = line.text.find(target)
            if at >= 0:
                return i, [at, at + len(target)]
    if field.span:
        offset = 0
        for i, line in enumerate(page.lines):
            start, end = field.span[0] - offset, field.span[1] - offset
            if 0 <= start < end <= len(line.text):
                return i, [start, end]
            offset += len(line.text) + 1
    return None


def page_record(doc: Document, page_index: int, image_name: str) -> dict[str, Any]:
    """The corpus record of one page of `doc`, with fields as the user corrected them."""
    page = doc.pages[page_index]
    lines = [make_line(i, ln.text, quad=ln.quad, label=ln.label) for i, ln in enumerate(page.lines)]
    fields: dict[str, Any] = {}
    for key, field in doc.fields.items():
        if field.page != page_index:
            continue
        entry: dict[str, Any] = {"value": field.value, "text": field.raw or field.value,
                                 "line": None, "span": None, "box": field.box}
        found = _locate(field, page)
        if found:
            i, span = found
            entry.update(line=i, span=span, text=page.lines[i].text[span[0]:span[1]])
            entry["box"] = entry["box"] or lines[i]["box"]
        fields[key] = entry
    return {"image": image_name, "width": page.width, "height": page.height,
            "doc_type": doc.doc_type, "layout": "user-corrections", "source": doc.source,
            "lines": lines, "fields": fields, "items": [], "pairs": []}


def save_correction(doc: Document, page_index: int, image: np.ndarray, out_dir: str | os.PathLike
                    ) -> Path:
    """Write the page image and its record into `out_dir` (created if needed); returns the JSONL path."""
    root = Path(out_dir).expanduser()
    (root / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise ValueError("the page image could not be encoded as PNG")
    data = encoded.tobytes()
    digest = hashlib.sha256(data).hexdigest()[:10]
    image_name = f"{IMAGE_DIR}/{safe_stem(doc.source or '')}_p{page_index + 1}_{digest}.png"
    image_path = root / image_name
    if image_path.resolve().parent != (root / IMAGE_DIR).resolve():    # safe_stem makes this impossible
        raise ValueError(f"refusing to write {image_name!r} outside {root / IMAGE_DIR}")
    record = page_record(doc, page_index, image_name)
    image_path.write_bytes(data)
    problems = check_record(record, root)
    if problems:
        raise ValueError("the corrected page is not a valid training record: " + "; ".join(problems))

    corpus = root / CORPUS_FILE
    kept = []
    if corpus.exists():
        for raw in corpus.read_text(encoding="utf-8").splitlines():
            if raw.strip() and json.loads(raw).get("image") != image_name:
                kept.append(raw)
    kept.append(json.dumps(record, ensure_ascii=False))
    write_text_atomic(corpus, "\n".join(kept) + "\n")
    return corpus
