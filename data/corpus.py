"""Our training corpus format: JSONL, one page per line.

Each record is the synthetic generator's ground-truth JSON for one page (lines with text, quad/box,
label, linking; fields {key: {value, text, line, span, box}}; items; pairs; doc_type; layout), with
"image" made relative to the directory that holds the JSONL file, so a corpus directory can be moved
or copied as a whole. Importers of other formats write the same records.

`split_by_layout` holds out whole layouts, never single pages, because a model that has seen a
layout's geometry scores far better on it than it will on a form it has never seen.
"""
from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

CORPUS_FILE = "corpus.jsonl"
Record = dict[str, Any]


class CorpusError(ValueError):
    """A corpus file or record that cannot be used; the message says which and what to do."""


def corpus_path(path: str | Path) -> Path:
    """Accept either the JSONL file or the directory that holds corpus.jsonl."""
    p = Path(path)
    return p / CORPUS_FILE if p.is_dir() else p


def write_corpus(records: Iterable[Record], path: str | Path) -> Path:
    """Write records as JSONL; each "image" is rewritten relative to the file's directory."""
    out = Path(path)
    if out.is_dir() or out.suffix != ".jsonl":
        out = out / CORPUS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    base = out.parent.resolve()
    tmp = out.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            rec = dict(rec)
            if rec.get("image"):
                rec["image"] = os.path.relpath(Path(rec["image"]).resolve(), base)
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(out)   # a killed writer never leaves a half corpus under the real name
    return out


def iter_corpus(path: str | Path, absolute_images: bool = True) -> Iterator[Record]:
    """Records of a corpus; with `absolute_images` each "image" is resolved to a full path."""
    src = corpus_path(path)
    if not src.is_file():
        raise CorpusError(f"no corpus at {src}; build one with `python -m data.synth ... --out DIR` "
                          f"and `data.corpus.corpus_from_synth_dir`, or pass the .jsonl path")
    base = src.parent
    with open(src, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{src}:{n}: not valid JSON ({exc.msg}); fix or delete that line") from exc
            if not isinstance(rec, dict) or "lines" not in rec:
                raise CorpusError(f"{src}:{n}: a page record needs a 'lines' list")
            if absolute_images and rec.get("image"):
                rec["image"] = str((base / rec["image"]).resolve())
            yield rec


def read_corpus(path: str | Path, absolute_images: bool = True) -> list[Record]:
    return list(iter_corpus(path, absolute_images))


def corpus_from_synth_dir(synth_dir: str | Path, out: str | Path | None = None) -> list[Record]:
    """Gather a generator output directory (<id>.json beside its image) into records; optionally write
    them as <out>/corpus.jsonl (images stay where they are, referenced relatively)."""
    d = Path(synth_dir)
    records = []
    for gt in sorted(d.glob("*.json")):
        if gt.name in ("manifest.json", "meta.json", "summary.json"):
            continue
        rec = json.loads(gt.read_text(encoding="utf-8"))
        if not isinstance(rec, dict) or "lines" not in rec:
            continue
        rec.setdefault("id", gt.stem)
        img = rec.get("image")
        if img and not Path(img).is_absolute():
            rec["image"] = str((d / img).resolve())
        records.append(rec)
    if not records:
        raise CorpusError(f"no ground-truth pages (*.json with 'lines') in {d}; run the generator first")
    if out is not None:
        write_corpus(records, out)
    return records


def layout_of(rec: Record) -> str:
    """The layout name a page was drawn with ("<doc_type>/<layout>" so names never clash)."""
    layout = rec.get("layout") or rec.get("layout_id") or rec.get("template") or "default"
    return f"{doc_type_of(rec)}/{layout}"


def doc_type_of(rec: Record) -> str:
    return str(rec.get("doc_type") or rec.get("type") or rec.get("schema") or "unknown")


def split_by_layout(records: list[Record], heldout: float | Iterable[str] = 0.2, seed: int = 0
                    ) -> tuple[list[Record], list[Record]]:
    """(train, held-out) with whole layouts held out.

    `heldout` is either a share of each doc type's layouts (at least one held out wherever a type
    has two or more) or an explicit set of layout names as `layout_of` spells them.
    """
    by_type: dict[str, set[str]] = {}
    for rec in records:
        by_type.setdefault(doc_type_of(rec), set()).add(layout_of(rec))
    if isinstance(heldout, (int, float)):
        rng = random.Random(seed)
        held: set[str] = set()
        for dt in sorted(by_type):
            layouts = sorted(by_type[dt])
            if len(layouts) < 2:
                continue
            k = min(len(layouts) - 1, max(1, round(heldout * len(layouts))))
            held.update(rng.sample(layouts, k))
    else:
        held = set(heldout)
    train = [r for r in records if layout_of(r) not in held]
    test = [r for r in records if layout_of(r) in held]
    return train, test
