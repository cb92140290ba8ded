"""The read cache: each file's pages read once by the reading route (`route.read_file_pages`: decode, the
file's own text or OCR, ruled lines, rotation; no extraction) and kept in a JSONL file, so training,
evaluation, retraining and the benchmarks extract again and again from the very readings the product
makes, and pay for OCR once per file.

A row is {"id", "ocr": the OCR settings' tag, "reader": "auto" | "ocr", "page": the page} for a one-page
file ("pages": [...] for several): a one-page row is the row `training.trainer.ocr_records` always wrote,
so the readers of those caches (`trainer.cached_pages`, the shard merge) and caches made before keep
working. `read_key` names the reader's settings; a row read with other settings is read again (an older
OCR default, PIAOJU_READER=ocr against a text layer), unless the caller accepts any reading (`key=None`:
bench/decode_ablation.py, whose reruns must score its rule sets on the very same readings). Rows of the
trainer from before the reader mode was recorded (no "reader") were OCR of page images, which both modes
read alike, so they count for either; rows with no "ocr" tag (decode_ablation's) only for `key=None`.

Rows are appended and synced to disk one at a time, so a run killed mid-file loses at most the page it was
reading; a torn last line is skipped (and read again). The last row of an id that matches wins.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from data.document import Document, Page

CURRENT = "current"   # `key` default: the reader's settings now (`read_key`)
_SEP = "|reader="


def read_key(reader: str | None = None) -> str:
    """The reader's settings as a cache key: the OCR settings' tag (models.ocr.OCRSettings.tag, the model
    and runtime from the environment) and the reader mode (data.textlayer.reader_setting: `reader`, else
    PIAOJU_READER, else "auto")."""
    from data.textlayer import reader_setting
    from models.ocr import OCRSettings
    return f"{OCRSettings().tag()}{_SEP}{reader_setting(reader)}"


def _matches(row: dict[str, Any], key: str | None) -> bool:
    if key is None:
        return True
    if "ocr" not in row:
        return False
    tag, _, mode = key.partition(_SEP)
    return bool(row["ocr"] == tag and row.get("reader", mode) == mode)


def _row_pages(row: dict[str, Any]) -> list[dict[str, Any]]:
    return list(row["pages"]) if "pages" in row else [row["page"]]


def load_rows(cache: Path, key: str | None) -> dict[str, list[dict[str, Any]]]:
    """id -> the page dicts of its last row in `cache` that `key` accepts (see the module docstring).
    Lines that do not parse (a run killed while writing one) are skipped."""
    rows: dict[str, list[dict[str, Any]]] = {}
    if not cache.is_file():
        return rows
    for raw in cache.read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
            if _matches(row, key):
                rows[str(row["id"])] = _row_pages(row)
        except (ValueError, KeyError, TypeError):
            continue
    return rows


def _add_missing_rulings(pages: list[Page], path: str) -> None:
    """Pages cached before pages kept their ruled lines get them from the file's page images (what the
    route does for every page it reads now); a file that no longer decodes keeps its pages as they are."""
    from data.io import iter_pages
    from models.ocr.rulings import add_rulings
    try:
        for page, image in zip(pages, iter_pages(path)):
            add_rulings(page, image)
    except Exception:   # the cached reading stands; only its ruled lines stay missing
        return


def _row(rid: str, pages: list[Page], key: str) -> dict[str, Any]:
    tag, _, mode = key.partition(_SEP)
    row: dict[str, Any] = {"id": rid, "ocr": tag, "reader": mode}
    dicts = Document(pages=pages).to_dict()["pages"]
    if len(dicts) == 1:
        row["page"] = dicts[0]
    else:
        row["pages"] = dicts
    return row


def _ends_with_newline(cache: Path) -> bool:
    if not cache.is_file() or cache.stat().st_size == 0:
        return True
    with open(cache, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def read_pages_cached(items: Iterable[tuple[str, str]], cache: Path, *, key: str | None = CURRENT,
                      reader: str | None = None, desc: str = "reading pages",
                      skip_unreadable: bool = False) -> dict[str, list[Page]]:
    """id -> the pages of each (id, file path), read by the reading route (`route.read_file_pages`)
    once and cached in `cache` (JSONL, appended). `key`: the settings a cached reading must have been
    made with, `CURRENT` (default) for the reader's settings now (`read_key(reader)`), None for any
    cached reading; files without an accepted row are read with the settings now and appended under
    them. `reader`: the reader mode ("auto" / "ocr"; None: PIAOJU_READER). A file that cannot be read
    raises RuntimeError naming it; with `skip_unreadable` a file that cannot be decoded (data.io.InputError:
    missing, corrupt, over the limits) is left out of the result instead, and not cached, so a later call
    tries it again. A failure of OCR itself always raises: skipping it would hide a broken installation."""
    from tqdm import tqdm

    from data.io import InputError
    from reading.route import read_file_pages
    items = list(items)
    now = read_key(reader)
    want = now if key == CURRENT else key
    rows = load_rows(cache, want)
    done: dict[str, list[Page]] = {}
    for rid, path in items:
        if rid in rows and rid not in done:
            pages = Document.from_dict({"pages": rows[rid]}).pages
            if any("rules" not in d for d in rows[rid]):
                _add_missing_rulings(pages, path)
            done[rid] = pages
    todo = list(dict.fromkeys((rid, path) for rid, path in items if rid not in done))
    if not todo:
        return done
    cache.parent.mkdir(parents=True, exist_ok=True)
    torn = not _ends_with_newline(cache)
    with open(cache, "a", encoding="utf-8") as fh:
        if torn:                # a killed run's half line ends here: the next row starts on a line of its own
            fh.write("\n")
        for rid, path in tqdm(todo, desc=desc, unit="file"):
            try:
                pages = read_file_pages(path, reader=reader)
            except InputError as exc:
                if skip_unreadable:
                    continue
                raise RuntimeError(f"{path} could not be read: {exc}") from exc
            except RuntimeError as exc:   # the route's message: which page failed, and how
                raise RuntimeError(f"{path} could not be read: {exc}") from exc
            done[rid] = pages
            fh.write(json.dumps(_row(rid, pages, now), ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return done
