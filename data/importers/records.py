"""Build, check and write corpus records (one page per JSONL line, the generator's ground-truth shape).

A record: {"image", "doc_type", "layout", "width", "height",
           "lines": [{"id", "text", "quad", "box", "label", "linking"}],
           "fields": {key: {"value", "text", "line", "span", "box"}}, "items": [...], "pairs": [...]}

`check_record` is the one definition of "well formed" every importer applies before writing, so a
corpus from any source reads the same downstream.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, TypeGuard

from PIL import Image

from data.atomic import fsync_path, write_text_atomic
from data.document import box_to_quad, quad_to_box, union_box
from data.labels import LINE_LABELS

CORPUS_FILE = "corpus.jsonl"
IMAGE_DIR = "images"
SCHEMA_DIR = "schemas"
XFUND_LABELS = LINE_LABELS     # the line labels of XFUND-style forms (data/labels.py)
BOX_SLACK = 2.0          # pixels a box may always stick out of the page (annotation tools round outward)
BOX_TOLERANCE = 0.02     # share of the page's width/height a box may stick out (clipped when written); a box
                         # further out belongs to another page size or another image, so it is an error
_BAD_BYTE = re.compile("[\udc80-\udcff]")     # what surrogateescape makes of a byte that is not UTF-8


def read_source(path: Path) -> str:
    """A source file's text; bytes that are not UTF-8 are kept as lone surrogates (surrogateescape) so
    one bad byte costs the one record it sits in (see `bad_byte`), not the whole import. A BOM is dropped."""
    return path.read_bytes().decode("utf-8-sig", errors="surrogateescape")


def bad_byte(text: str, start: int = 0, end: int | None = None) -> tuple[int, str] | None:
    """(offset, why) of the first byte in text[start:end] that was not UTF-8 (see `read_source`), else None."""
    m = _BAD_BYTE.search(text, start, len(text) if end is None else end)
    if m is None:
        return None
    column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return m.start(), (f"byte 0x{ord(m.group()) - 0xDC00:02X} at column {column} is not UTF-8; "
            f"save the file as UTF-8 (e.g. from GBK: iconv -f GBK -t UTF-8)")


def page_slack(w: float, h: float) -> tuple[float, float]:
    """How far (x, y) a box may stick out of a w x h page and still be clipped rather than refused."""
    return max(BOX_SLACK, BOX_TOLERANCE * w), max(BOX_SLACK, BOX_TOLERANCE * h)


def _outside(box: list, w: float, h: float) -> bool:
    sx, sy = page_slack(w, h)
    return box[0] < -sx or box[1] < -sy or box[2] > w + sx or box[3] > h + sy


def make_line(line_id: int, text: str, quad: list | None = None, box: list | None = None,
              label: str | None = None, linking: list | None = None) -> dict[str, Any]:
    """A line from a quad or a box (whichever the source has); the other is derived.

    A null text raises ValueError: str(None) would put the word "None" on the page as if it were printed."""
    if text is None:
        raise ValueError(f"box {line_id} has a null transcription; type its text or delete the box")
    if quad is None and box is not None:
        quad = box_to_quad(box)
    if quad is not None:
        quad = [[round(float(x), 1), round(float(y), 1)] for x, y in quad]
        box = [round(v, 1) for v in quad_to_box(quad)]
    return {"id": int(line_id), "text": str(text), "quad": quad, "box": box,
            "label": label, "linking": [list(map(int, ln)) for ln in (linking or [])]}


def field_from_line(line: dict[str, Any], value: str | None = None) -> dict[str, Any]:
    """A field whose value is the whole text of one line (how box-level annotation tools label)."""
    text = line["text"]
    return {"value": value if value is not None else text, "text": text, "line": line["id"],
            "span": [0, len(text)], "box": line["box"]}


def pairs_from_links(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Question -> answer pairs from XFUND-style `linking` ([[from_id, to_id], ...])."""
    by_id = {ln["id"]: ln for ln in lines}
    seen, pairs = set(), []
    for ln in lines:
        for a, b in ln.get("linking") or []:
            if (a, b) in seen or a not in by_id or b not in by_id:
                continue
            seen.add((a, b))
            k, v = by_id[a], by_id[b]
            if k.get("label") == "question" and v.get("label") == "answer":
                pairs.append({"key": k["text"], "value": v["text"], "key_line": a, "value_line": b,
                              "key_box": k["box"], "value_box": v["box"]})
    return pairs


def _is_num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_record(rec: dict[str, Any], root: Path | None = None) -> list[str]:
    """Everything wrong with one record, as messages a user can act on ([] when it is fine).

    `root` is the directory `rec["image"]` is relative to; when given, the image must exist.
    """
    errs: list[str] = []
    if not isinstance(rec, dict):
        return [f"record is a {type(rec).__name__}, expected a JSON object"]
    image = rec.get("image")
    if not isinstance(image, str) or not image:
        errs.append('"image" is missing: give the page image path')
    elif root is not None and not (root / image).is_file():
        errs.append(f"image {image!r} not found under {root}")
    w, h = rec.get("width"), rec.get("height")
    if not (_is_num(w) and _is_num(h) and w > 0 and h > 0):
        errs.append(f'"width"/"height" must be positive numbers, got {w!r}/{h!r}')
        w = h = None
    lines = rec.get("lines")
    if not isinstance(lines, list):
        return errs + ['"lines" must be a list of {"id","text","quad"/"box"}']
    ids: dict[int, dict] = {}
    for i, ln in enumerate(lines):
        where = f"lines[{i}]"
        if not isinstance(ln, dict):
            errs.append(f"{where} is not an object")
            continue
        if not isinstance(ln.get("text"), str):
            errs.append(f'{where}: "text" must be a string')
        lid = ln.get("id")
        if not isinstance(lid, int) or isinstance(lid, bool):
            errs.append(f'{where}: "id" must be an integer')
        elif lid in ids:
            errs.append(f"{where}: duplicate line id {lid}")
        else:
            ids[lid] = ln
        quad, box = ln.get("quad"), ln.get("box")
        if not (isinstance(quad, list) and len(quad) == 4
                and all(isinstance(p, list) and len(p) == 2 and all(map(_is_num, p)) for p in quad)):
            errs.append(f'{where}: "quad" must be four [x, y] points')
        if not (isinstance(box, list) and len(box) == 4 and all(map(_is_num, box))):
            errs.append(f'{where}: "box" must be [x0, y0, x1, y1]')
        elif box[2] < box[0] or box[3] < box[1]:
            errs.append(f"{where}: box {box} has x1 < x0 or y1 < y0")
        elif w and h and _outside(box, w, h):
            errs.append(f"{where}: box {box} lies outside the {w}x{h} page")
        label = ln.get("label")
        if label is not None and not isinstance(label, str):
            errs.append(f'{where}: "label" must be a string or null')
    for i, ln in enumerate(lines):
        if not isinstance(ln, dict):
            continue
        for link in ln.get("linking") or []:
            if not (isinstance(link, list) and len(link) == 2 and all(x in ids for x in link)):
                errs.append(f"lines[{i}]: linking {link!r} refers to a line id that does not exist")
    fields = rec.get("fields", {})
    if not isinstance(fields, dict):
        return errs + ['"fields" must be an object {key: {"value", "line", "span", ...}}']
    for key, f in fields.items():
        errs.extend(_check_field(f"fields[{key!r}]", f, ids, w, h))
    items = rec.get("items", [])
    if not isinstance(items, list):
        errs.append('"items" must be a list of {key: field} rows')
    else:
        for r, row in enumerate(items):
            if not isinstance(row, dict):
                errs.append(f"items[{r}] is not an object")
                continue
            for key, f in row.items():
                errs.extend(_check_field(f"items[{r}][{key!r}]", f, ids, w, h))
    return errs


def _check_field(where: str, f: Any, ids: dict[int, dict], w: float | None, h: float | None) -> list[str]:
    if not isinstance(f, dict):
        return [f"{where} must be an object with a \"value\""]
    errs = []
    if not isinstance(f.get("value"), str):
        errs.append(f'{where}: "value" must be a string')
    box = f.get("box")
    if box is not None:
        if not (isinstance(box, list) and len(box) == 4 and all(map(_is_num, box))):
            errs.append(f'{where}: "box" must be [x0, y0, x1, y1] or absent')
        elif box[2] < box[0] or box[3] < box[1]:
            errs.append(f"{where}: box {box} has x1 < x0 or y1 < y0")
        elif w and h and _outside(box, w, h):
            errs.append(f"{where}: box {box} lies outside the {w}x{h} page")
    line, span = f.get("line"), f.get("span")
    if line is None:
        return errs                     # a value with no place on the page (allowed, e.g. derived)
    if line not in ids:
        return errs + [f"{where}: line {line!r} does not exist"]
    text = ids[line].get("text") or ""
    if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)
            and 0 <= span[0] < span[1] <= len(text)):
        return errs + [f"{where}: span {span!r} is not inside line {line} ({len(text)} characters)"]
    if "text" in f and f["text"] != text[span[0]:span[1]]:
        errs.append(f"{where}: text {f['text']!r} differs from line {line}[{span[0]}:{span[1]}] "
                    f"{text[span[0]:span[1]]!r}")
    return errs


def image_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as im:       # reads the header only
        return im.size


def find_image(name: str, *roots: Path) -> Path | None:
    """Resolve an image reference from an export: as given, relative to a root, or by file name.

    Label Studio prefixes uploads with a hash ("3f2a1b9c-scan.jpg") and PPOCRLabel stores
    "folder/scan.jpg"; both are matched by their base name too.
    """
    p = Path(name)
    if p.is_absolute() and p.is_file():
        return p
    base = p.name.split("?d=")[-1]
    candidates = [base]
    if "-" in base and len(base.split("-", 1)[0]) == 8:
        candidates.append(base.split("-", 1)[1])
    for root in roots:
        for c in [str(p).lstrip("/"), *candidates]:
            if (root / c).is_file():
                return root / c
    return None


def write_checked(writer: "CorpusWriter", report, path: Path, lineno: int, name: str,
                  rec: dict[str, Any], roots: list[Path], size: str = "keep") -> None:
    """The common tail of every importer: find the record's image under `roots`, take the page size
    from the image (`size`: "keep" the record's, fill it when "missing", or "always"), check the
    record and write it. A problem becomes a bad-record entry in `report`; nothing is raised."""
    image = find_image(name, *roots)
    if image is None:
        report.bad(path, lineno, f"image {name!r} not found beside {path.name}")
        return
    if size == "always" or (size == "missing" and not (rec.get("width") and rec.get("height"))):
        rec["width"], rec["height"] = image_size(image)
    errs = check_record({"image": name, **rec})
    if errs:
        report.bad(path, lineno, "; ".join(errs[:3]))
        return
    writer.write({"image": writer.add_image(image), **rec})
    report.records_written += 1


def clip_to_page(rec: dict[str, Any]) -> None:
    """Clip every box (lines, fields, items, pairs) to the page, in place. Only records `check_record`
    passed get here, so nothing moves by more than the tolerance (`page_slack`)."""
    w, h = rec.get("width"), rec.get("height")
    if not (isinstance(w, (int, float)) and isinstance(h, (int, float)) and w > 0 and h > 0):
        return

    def clip(box: Any) -> Any:
        if not (isinstance(box, list) and len(box) == 4 and all(map(_is_num, box))):
            return box
        return [min(max(box[0], 0), w), min(max(box[1], 0), h), min(max(box[2], 0), w), min(max(box[3], 0), h)]

    for ln in rec.get("lines") or []:
        if isinstance(ln.get("quad"), list):
            ln["quad"] = [[min(max(x, 0), w), min(max(y, 0), h)] for x, y in ln["quad"]]
        ln["box"] = clip(ln.get("box"))
    for f in [*(rec.get("fields") or {}).values(), *(v for row in rec.get("items") or [] for v in row.values())]:
        if isinstance(f, dict) and "box" in f:
            f["box"] = clip(f["box"])
    for pair in rec.get("pairs") or []:
        for k in ("key_box", "value_box"):
            if k in pair:
                pair[k] = clip(pair[k])


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never a part."""
    write_text_atomic(path, text)


class CorpusWriter:
    """Writes records to DIR/corpus.jsonl and copies each page image to DIR/images/ (unique names).

    Records go to corpus.jsonl.tmp; only a clean close fsyncs it and renames it over corpus.jsonl, so an
    import that crashes or is killed leaves the previous corpus (or none), never a partial one."""

    def __init__(self, out_dir: str | Path):
        self.out = Path(out_dir)
        (self.out / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
        self.path = self.out / CORPUS_FILE
        self._tmp = self.out / (CORPUS_FILE + ".tmp")
        self._fh = open(self._tmp, "w", encoding="utf-8")
        self._names: set[str] = set()
        self.count = 0

    def add_image(self, src: Path) -> str:
        """Copy the image in; returns its path relative to the corpus directory."""
        name, n = src.name, 1
        while name in self._names:
            name = f"{src.stem}_{n}{src.suffix}"
            n += 1
        self._names.add(name)
        dst = self.out / IMAGE_DIR / name
        if src.resolve() != dst.resolve():
            shutil.copyfile(src, dst)
        return f"{IMAGE_DIR}/{name}"

    def write(self, rec: dict[str, Any]) -> None:
        """Append one checked record; boxes a little outside the page are clipped to it here."""
        rec.setdefault("fields", {})
        rec.setdefault("items", [])
        rec.setdefault("pairs", [])
        clip_to_page(rec)
        self._fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.count += 1

    def close(self) -> None:
        """Publish the corpus: fsync the temporary file and rename it over corpus.jsonl."""
        if self._fh.closed:
            return
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self.path)
        fsync_path(self.out)

    def abort(self) -> None:
        """Drop what was written; an existing corpus.jsonl stays as it was."""
        if not self._fh.closed:
            self._fh.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "CorpusWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def union_of(lines: list[dict[str, Any]]) -> list[float] | None:
    return union_box([ln["box"] for ln in lines])
