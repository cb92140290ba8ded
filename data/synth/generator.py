"""generate(): one synthetic page and its ground truth; generate_dir(): many pages to a folder.

Ground truth (a contract other parts build on):
    {"image", "doc_type", "layout", "seed", "degrade", "width", "height",
     "lines": [{"id", "text", "quad", "box", "label", "linking"}],
     "fields": {key: {"value", "text", "line", "span", "box"}},
     "items": [{key: field}], "pairs": [{"key", "value", "key_line", "value_line"}],
     "tables": [{"columns": [str], "column_lines": [id | None], "rows": [[str]], "cell_lines": [[id | None]]}],
     "signatures": [pair]}
A pair whose key asks for a signature (data.labels.SIGNATURE_KEY: 申请人签名 -> the name signed) is a
signature block's entry: it is listed under "signatures", not "pairs" (its lines keep their labels and links).
A table's rows hold one text per column ("" and None for a blank cell); a column name or cell printed
over several lines is the first line's id with the texts joined (data/synth/form.py).
Generic forms' pairs also list every line of a multi-line key or value ("key_lines", "value_lines")
and a check-box group's "options" (data/synth/form.py says how).
Geometry is in the final (degraded) image's pixels. A page is a pure function of (doc_type, seed,
layout, degrade): the same arguments give byte-identical images and JSON.

The straight rules a clean page draws (table borders, cell rules, boxes) are not part of that contract:
`generate_ruled` hands them back beside it (data.synth.canvas.Stroke), for data.born_pdf to draw as
vector paths, so corpora and benches written from the ground truth stay byte for byte as they were.
"""
from __future__ import annotations

import importlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PIL import Image

from data.document import box_to_quad, quad_to_box
from data.labels import SIGNATURE_KEY
from data.synth.canvas import Canvas, FieldMark, Stroke
from data.synth.degrade import LEVELS, Degradation
from data.synth.degrade import degrade as apply_degradation

Renderer = Callable[[random.Random, str, bool], Canvas]


# doc type -> (module, layouts dict name, render function name); modules load on first use
_TYPES: dict[str, tuple[str, str, str]] = {
    "vat_invoice": ("data.synth.invoice", "VAT_LAYOUTS", "render_vat"),
    "e_invoice": ("data.synth.invoice", "E_LAYOUTS", "render_e_invoice"),
    "id_card_front": ("data.synth.id_card", "FRONT_LAYOUTS", "render_front"),
    "id_card_back": ("data.synth.id_card", "BACK_LAYOUTS", "render_back"),
    "receipt": ("data.synth.receipt", "LAYOUTS", "render_receipt"),
    "generic_form": ("data.synth.form", "LAYOUTS", "render_form"),
    "business_licence": ("data.synth.licence", "LAYOUTS", "render_licence"),
    "train_ticket": ("data.synth.ticket", "LAYOUTS", "render_ticket"),
}


@dataclass(frozen=True)
class DocType:
    name: str
    layouts: tuple[str, ...]
    render: Renderer


def list_doc_types() -> list[str]:
    """Document types the generator makes."""
    return list(_TYPES)


def _doc_type(name: str) -> DocType:
    if name not in _TYPES:
        raise ValueError(f"unknown document type {name!r}; the generator makes: {', '.join(_TYPES)}")
    module_name, layouts, render = _TYPES[name]
    module = importlib.import_module(module_name)
    return DocType(name, tuple(getattr(module, layouts)), getattr(module, render))


def list_layouts(doc_type: str) -> list[str]:
    """Named layouts of a document type (hold whole layouts out to test generalisation)."""
    return list(_doc_type(doc_type).layouts)


def _r(v: float) -> float:
    return round(float(v), 1)


def _clip_box(box: list[float], w: int, h: int) -> list[float]:
    return [_r(min(max(box[0], 0), w)), _r(min(max(box[1], 0), h)),
            _r(min(max(box[2], 0), w)), _r(min(max(box[3], 0), h))]


def _field_gt(c: Canvas, mark: FieldMark, geo: Degradation) -> dict[str, Any]:
    box = quad_to_box(geo.points(box_to_quad(mark.box)))
    text = c.lines[mark.line].text[mark.span[0]:mark.span[1]]
    return {"value": mark.value, "text": text, "line": mark.line, "span": list(mark.span),
            "box": _clip_box(box, geo.width, geo.height)}


def ground_truth(c: Canvas, geo: Degradation, doc_type: str, layout: str, seed: int,
                 image_name: str) -> dict[str, Any]:
    """The ground-truth dict of a drawn page after its degradation."""
    lines = []
    for i, ln in enumerate(c.lines):
        quad = [[_r(x), _r(y)] for x, y in geo.points(box_to_quad(ln.box))]
        lines.append({"id": i, "text": ln.text, "quad": quad,
                      "box": _clip_box(quad_to_box(quad), geo.width, geo.height), "label": ln.label,
                      "linking": [[a, b] for a, b in c.links if i in (a, b)]})
    return {
        "image": image_name, "doc_type": doc_type, "layout": layout, "seed": seed,
        "degrade": geo.level, "width": geo.width, "height": geo.height,
        "lines": lines,
        "fields": {k: _field_gt(c, m, geo) for k, m in c.fields.items()},
        "items": [{k: _field_gt(c, m, geo) for k, m in row.items()} for row in c.items],
        "pairs": [dict(p) for p in c.pairs if not SIGNATURE_KEY.search(p["key"])],
        "tables": [dict(t) for t in c.tables],
        "signatures": [dict(p) for p in c.pairs if SIGNATURE_KEY.search(p["key"])],
    }


def generate(doc_type: str, seed: int, layout: str | None = None, degrade: str = "none",
             decorations: bool = True, image_name: str | None = None) -> tuple[Image.Image, dict[str, Any]]:
    """One page: (RGB image, ground-truth dict). `decorations=False` draws text only (no rules,
    stamps or backgrounds), which tests use to compare ink against boxes."""
    _, image, gt = _generate(doc_type, seed, layout, degrade, decorations, image_name)
    return image, gt


def generate_ruled(doc_type: str, seed: int, layout: str | None = None,
                   image_name: str | None = None) -> tuple[Image.Image, dict[str, Any], list[Stroke]]:
    """`generate(doc_type, seed, layout)` (a clean page: the same image and ground truth) and the straight
    rules it draws, in the page's pixels, cut off where the page ends (Canvas.crop_height)."""
    canvas, image, gt = _generate(doc_type, seed, layout, "none", True, image_name)
    return image, gt, _clip_strokes(canvas.strokes, gt["width"], gt["height"])


def _clip_strokes(strokes: list[Stroke], w: int, h: int) -> list[Stroke]:
    """The strokes within the page [0, w] x [0, h]: a box reaching beyond it becomes its sides, and each
    straight piece is cut to the page (the rules are across or down, so a cut is a clamp)."""
    out: list[Stroke] = []
    for st in strokes:
        if all(0 <= x <= w and 0 <= y <= h for x, y in st.points):
            out.append(st)
            continue
        pts = list(st.points) + ([st.points[0]] if st.closed else [])
        for (ax, ay), (bx, by) in zip(pts, pts[1:]):
            if max(ax, bx) < 0 or min(ax, bx) > w or max(ay, by) < 0 or min(ay, by) > h:
                continue
            piece = ((min(max(ax, 0.0), w), min(max(ay, 0.0), h)), (min(max(bx, 0.0), w), min(max(by, 0.0), h)))
            if piece[0] != piece[1]:
                out.append(Stroke(piece, False, st.width, st.color))
    return out


def _generate(doc_type: str, seed: int, layout: str | None, degrade: str, decorations: bool,
              image_name: str | None) -> tuple[Canvas, Image.Image, dict[str, Any]]:
    dt = _doc_type(doc_type)
    if degrade not in LEVELS:
        raise ValueError(f"degrade must be one of {', '.join(LEVELS)}, got {degrade!r}")
    rng = random.Random(f"{doc_type}:{seed}")
    if layout is None:
        layout = rng.choice(dt.layouts)
    elif layout not in dt.layouts:
        raise ValueError(f"{doc_type} has no layout {layout!r}; choose from {', '.join(dt.layouts)}")
    canvas = dt.render(rng, layout, decorations)
    image, geo = apply_degradation(canvas.image, random.Random(f"degrade:{doc_type}:{seed}"), degrade)
    name = image_name or f"{doc_type}_{seed}.jpg"
    return canvas, image, ground_truth(canvas, geo, doc_type, layout, seed, name)


# --- many pages ------------------------------------------------------------------------------------

def page_seed(base_seed: int, index: int) -> int:
    """Seed of page `index` of a run: distinct across indices and base seeds, stable forever."""
    return (base_seed * 1_000_003 + index) % (2 ** 31)


def _write_page(job: tuple[str, int, int, str | None, str, str, int]) -> dict[str, Any]:
    doc_type, base_seed, index, layout, degrade_level, out_dir, quality = job
    seed = page_seed(base_seed, index)
    doc_id = f"{doc_type}_{base_seed}_{index:06d}"
    image, gt = generate(doc_type, seed, layout, degrade_level, image_name=f"{doc_id}.jpg")
    out = Path(out_dir)
    image.save(out / f"{doc_id}.jpg", quality=quality)
    (out / f"{doc_id}.json").write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")
    return {"id": doc_id, "image": f"{doc_id}.jpg", "json": f"{doc_id}.json", "doc_type": doc_type,
            "layout": gt["layout"], "seed": seed, "degrade": gt["degrade"], "width": gt["width"],
            "height": gt["height"], "lines": len(gt["lines"]), "fields": len(gt["fields"]),
            "items": len(gt["items"])}


def _init_worker() -> None:
    # one thread per process: the parallelism is in the processes
    import cv2
    cv2.setNumThreads(1)


def generate_dir(doc_type: str | list[str], n: int, seed: int, out_dir: str | os.PathLike,
                 degrade: str = "none", layouts: list[str] | None = None, workers: int = 1,
                 quality: int = 92, progress: bool = True) -> list[dict[str, Any]]:
    """Write n pages (image + JSON each) and manifest.jsonl to out_dir; returns the manifest rows.
    Page i of several types or layouts takes them in turn, so every one is equally represented."""
    types = [doc_type] if isinstance(doc_type, str) else list(doc_type)
    for t in types:
        for wanted in layouts or []:
            if wanted not in list_layouts(t):
                raise ValueError(f"{t} has no layout {wanted!r}; choose from {', '.join(list_layouts(t))}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for i in range(n):
        t = types[i % len(types)]
        lay = layouts[(i // len(types)) % len(layouts)] if layouts else None
        jobs.append((t, seed, i, lay, degrade, str(out), quality))
    from tqdm import tqdm
    bar = tqdm(total=n, desc=f"synth {'+'.join(types)}", unit="page", disable=not progress)
    rows: list[dict[str, Any]] = []
    if workers <= 1:
        _init_worker()
        for job in jobs:
            rows.append(_write_page(job))
            bar.update()
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        # spawn, not fork: a caller that already loaded threaded libraries (paddle, OpenMP, a test
        # session) deadlocks forked children on locks held by threads that did not survive the fork.
        # An executor, not multiprocessing.Pool: a worker killed (out of memory) or failing to start is
        # a BrokenProcessPool error here, where Pool waits for its pages forever.
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_init_worker) as pool:
            for row in pool.map(_write_page, jobs, chunksize=max(1, min(16, n // (workers * 4) or 1))):
                rows.append(row)
                bar.update()
    bar.close()
    with open(out / "manifest.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows
