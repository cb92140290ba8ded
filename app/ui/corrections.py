""""Save corrections": a checked page becomes a training example in our corpus format.

Every field, line-item cell and form pair of the page is saved as the clerk left it (`value` normalised,
`raw` as shown in the table; a pair's key and value) and placed on the printed text that holds it on the
page's OCR lines (`locate_text`: verbatim, else equal once normalised or in a printed form of its type,
else the closest line by edit distance above LOCATE_MIN_SCORE), which the model is trained on; `located`
says how, and a value printed nowhere is saved `located: "unlocated"` with no line, span or box rather
than on a wrong place. A 大写 amount is placed on its words, never on the figure it spells.

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


LOCATE_MIN_SCORE = 0.75     # a value not printed verbatim is placed on the closest line only this close
                            # (data/align.py score: 1 - weighted edit distance / length); else unlocated
EXACT, NORMALISED, FUZZY, UNLOCATED = "exact", "normalised", "fuzzy", "unlocated"


def _overlap(a: list[float] | None, b: list[float] | None) -> float:
    if not a or not b:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0)


def _box_line(page: Page, box: list[float] | None) -> int | None:
    """The line the model's box lies on (most overlap), a tie-breaker between equal matches."""
    if not box:
        return None
    best = max(range(len(page.lines)), key=lambda i: _overlap(page.lines[i].box, box), default=None)
    return best if best is not None and _overlap(page.lines[best].box, box) > 0 else None


def _words_only(text: str) -> bool:
    """A 大写 amount's text holds no figure: "104.12" typed or read into it is not what to look for."""
    return not any(ch.isascii() and ch.isdigit() for ch in text)


def _find_bounded(line: str, target: str) -> int:
    """Where `target` stands in `line` as a whole: a figure not cut out of a longer one ("30.00" is not
    found inside "130.00"), nor on characters already taken (masked as NUL); -1 when it does not."""
    at = line.find(target)
    while at >= 0:
        before = line[at - 1] if at else ""
        after = line[at + len(target)] if at + len(target) < len(line) else ""
        if not ((target[0].isdigit() and (before.isdigit() or before == "."))
                or (target[-1].isdigit() and (after.isdigit() or after == "."))):
            return at
        at = line.find(target, at + 1)
    return -1


def _masked(page: Page, taken: list[tuple[int, int, int]]) -> list[str]:
    """The page's line texts with the characters of `taken` spans (line, start, end) replaced by NUL."""
    lines = [list(ln.text) for ln in page.lines]
    for i, start, end in taken:
        lines[i][start:end] = ["\0"] * (end - start)
    return ["".join(chars) for chars in lines]


def locate_text(page: Page, texts: list[str], box: list[float] | None = None, field_type: str | None = None,
                near: int | None = None, taken: list[tuple[int, int, int]] | None = None
                ) -> tuple[int, list[int], str, float] | None:
    """Where the first of `texts` that can be found is printed on the page's OCR lines, as (line index,
    [start, end) in it, how it was found, match score), or None: unlocated.

    Tried in this order, each over all `texts` before the next: `exact` (the text verbatim in a line),
    `normalised` (equal once full-width forms, spaces and case are set aside, or one of the printed forms
    of its type: a date as 2024年3月5日, a figure's 大写 words; data/align.py `printed_forms`), `fuzzy` (the
    substring of a line closest by OCR-aware edit distance, score at least LOCATE_MIN_SCORE). Where the
    same text is printed twice (an item's amount and the total), the line under the model's `box` wins,
    else line `near` (where the rest of its item row was found). Characters in `taken` (line, start, end),
    where other values of the page were placed, are not used again: two cells "5.00" (price and amount)
    take the two figures printed, not the same one twice."""
    from data.align import align_value
    prefer = _box_line(page, box)
    prefer = near if prefer is None else prefer
    texts = [t.strip() for t in texts if t and t.strip()]
    order = ([prefer] if prefer is not None else []) + [i for i in range(len(page.lines)) if i != prefer]
    lines = _masked(page, taken or [])
    for target in texts:
        for i in order:
            at = _find_bounded(lines[i], target)
            if at >= 0:
                return i, [at, at + len(target)], EXACT, 1.0
    for bar, how in ((1.0, NORMALISED), (LOCATE_MIN_SCORE, FUZZY)):
        found = [m for t in texts if (m := align_value(t, lines, bar, prefer, field_type)) is not None]
        if found:
            m = max(found, key=lambda m: (m.score, m.line == prefer))
            return m.line, [m.start, m.end], how, float(m.score)
    return None


def _field_type(schema: Any, key: str) -> str | None:
    try:
        return schema.field(key).type if schema is not None else None
    except KeyError:
        return None


def field_entry(field: Field, page: Page, lines: list[dict[str, Any]], schema: Any, near: int | None = None,
                taken: list[tuple[int, int, int]] | None = None) -> dict[str, Any]:
    """The record entry of a field or an item cell: `value` (normalised), `raw` (the text the clerk saw and
    confirmed in the table), and where it is printed: `line`, `span`, `text` (that slice of the line, as
    check_record demands), `box`, `located` (exact / normalised / fuzzy, with `match` its score) or, when it
    cannot be found, `located: "unlocated"` with no line, span or box, so no wrong place is trained on.

    What is looked for is what the clerk saw (the raw text), then the normalised value; a 大写 amount
    (type amount_words) is looked for only as words, the raw words or the words its figure spells, never
    as the figure, which is printed on the 小写 line beside it."""
    ftype = _field_type(schema, field.key)
    raw = field.raw or field.value
    texts = [raw, field.value]
    if ftype == "amount_words":
        from data.normalize import format_amount_words, parse_amount
        figure = parse_amount(field.value or "")
        texts = [t for t in (raw, field.value) if t and _words_only(t)]
        texts += [format_amount_words(figure)] if figure is not None else []
    entry: dict[str, Any] = {"value": field.value, "raw": raw, "text": raw, "line": None, "span": None,
                             "box": None, "located": UNLOCATED}
    found = locate_text(page, texts, field.box, ftype, near, taken)
    if found:
        i, span, how, score = found
        if taken is not None:
            taken.append((i, span[0], span[1]))
        entry.update(line=i, span=span, text=page.lines[i].text[span[0]:span[1]], located=how, match=round(score, 4))
        entry["box"] = field.box if how == EXACT and field.box and _box_line(page, field.box) == i else lines[i]["box"]
    return entry


def page_record(doc: Document, page_index: int, image_name: str, schema: Any = None) -> dict[str, Any]:
    """The corpus record of page `page_index` (its position in `doc.pages`) with the fields, line items and
    form pairs on it as the user corrected them, each placed on the page's OCR lines (`field_entry`).

    Fields, cells and pairs belong to the page whose index in the file they carry (`Page.index`), so a
    page of a document found later in a file (its page 3 alone) is saved with what was read or typed on it.
    A pair whose key and value are found on two lines also labels them as the generic-form model learns
    pairs (data/labels.py): the key's line `question`, the value's line `answer`, linked key -> value;
    other question/answer labels the OCR lines carried are dropped, so a pair the clerk deleted is not
    trained on."""
    page = doc.pages[page_index]
    at = page.index
    if schema is None:
        from app.ui.fields import load_schema_or_none
        schema = load_schema_or_none(doc.doc_type)
    lines = [make_line(i, ln.text, quad=ln.quad, label=ln.label) for i, ln in enumerate(page.lines)]
    # Values the model read (they have a box) are placed first, then those typed in, so a typed total
    # cannot take the item amount printed above it and push that cell onto the total's figure.
    taken: list[tuple[int, int, int]] = []         # spans placed so far: each printed value labels one thing
    fields: dict[str, Any] = {}
    rows: list[dict[str, Any]] = [{} for _ in doc.items]
    todo = [(f.box is None, -1, key, f) for key, f in doc.fields.items() if f.page == at]
    todo += [(f.box is None, r, key, f) for r, row in enumerate(doc.items) for key, f in row.items() if f.page == at]
    for _, r, key, f in sorted(todo, key=lambda t: t[0]):
        if r < 0:
            fields[key] = field_entry(f, page, lines, schema, taken=taken)
            continue
        near = next((c["line"] for c in rows[r].values() if c["line"] is not None), None)
        rows[r][key] = field_entry(f, page, lines, schema, near, taken)
    order = {r: list(row) for r, row in enumerate(doc.items)}
    fields = {key: fields[key] for key in doc.fields if key in fields}
    items = [{key: rows[r][key] for key in order[r] if key in rows[r]} for r in range(len(rows)) if rows[r]]
    pairs = []
    mine = [p for p in doc.pairs if p.page == at]
    if mine or doc.doc_type == "generic_form":     # a form whose pairs were all deleted has none to learn
        for ln in lines:
            if ln["label"] in ("question", "answer"):
                ln["label"], ln["linking"] = None, []
    for p in mine:
        entry: dict[str, Any] = {"key": p.key, "value": p.value}
        for side, text, box in (("key", p.key, p.key_box), ("value", p.value, p.value_box)):
            found = locate_text(page, [text], box, taken=taken)
            if found:
                i, span, how, score = found
                taken.append((i, span[0], span[1]))
                entry.update({f"{side}_line": i, f"{side}_lines": [i], f"{side}_span": span,
                              f"{side}_box": lines[i]["box"],
                              f"{side}_text": page.lines[i].text[span[0]:span[1]], f"{side}_located": how,
                              f"{side}_match": round(score, 4)})
            else:
                entry.update({f"{side}_line": None, f"{side}_lines": [], f"{side}_span": None, f"{side}_box": None,
                              f"{side}_text": text, f"{side}_located": UNLOCATED})
        k, v = entry["key_line"], entry["value_line"]
        if k is not None and v is not None and k != v:
            lines[k]["label"], lines[v]["label"] = "question", "answer"
            if [k, v] not in lines[k]["linking"]:
                lines[k]["linking"].append([k, v])
        pairs.append(entry)
    return {"image": image_name, "width": page.width, "height": page.height,
            "doc_type": doc.doc_type, "layout": "user-corrections", "source": doc.source,
            "lines": lines, "fields": fields, "items": items, "pairs": pairs}


def save_correction(doc: Document, page_index: int, image: np.ndarray, out_dir: str | os.PathLike,
                    model_dir: str | None = None) -> Path:
    """Write page `page_index` (its position in `doc.pages`) of `doc`, its image and its record, into
    `out_dir` (created if needed); returns the JSONL path. Values are placed with the schema of the model
    that read the document (`model_dir`). The image is named after the page's number in the file."""
    root = Path(out_dir).expanduser()
    (root / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise ValueError("the page image could not be encoded as PNG")
    data = encoded.tobytes()
    digest = hashlib.sha256(data).hexdigest()[:10]
    image_name = f"{IMAGE_DIR}/{safe_stem(doc.source or '')}_p{doc.pages[page_index].index + 1}_{digest}.png"
    image_path = root / image_name
    if image_path.resolve().parent != (root / IMAGE_DIR).resolve():    # safe_stem makes this impossible
        raise ValueError(f"refusing to write {image_name!r} outside {root / IMAGE_DIR}")
    from app.ui.fields import load_schema_or_none
    record = page_record(doc, page_index, image_name, load_schema_or_none(doc.doc_type, model_dir))
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
