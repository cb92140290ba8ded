"""The read cache (reading/cache.py): files read once by the reading route, keyed by the reader's settings,
and the trainer's and decode_ablation's caches going through it."""
import json

import cv2
import numpy as np
import pytest
from PIL import Image

from data.document import Document, Line, Page, box_to_quad
from reading import cache as read_cache
from reading import route


class Engine:
    """A stand-in OCR engine: one line naming the read's number, so a page read again differs."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[int] = []
        self.fail = fail

    def read(self, image, page_index=0, timings=None, **kw):
        if self.fail:
            raise RuntimeError("the OCR model is broken")
        self.calls.append(page_index)
        h, w = image.shape[:2]
        return Page(page_index, w, h, [Line(f"read {len(self.calls)}", box_to_quad([1, 1, 9, 9]), 0.99)])


@pytest.fixture
def engine(monkeypatch):
    eng = Engine()
    monkeypatch.setattr(route, "ocr_engine", lambda: eng)
    return eng


@pytest.fixture
def files(tmp_path):
    png = tmp_path / "one.png"
    cv2.imwrite(str(png), np.full((40, 30, 3), 255, np.uint8))
    tif = tmp_path / "two.tif"
    frames = [Image.new("RGB", (30, 40), "white"), Image.new("RGB", (30, 40), "white")]
    frames[0].save(tif, save_all=True, append_images=frames[1:])
    return [("a", str(png)), ("b", str(tif))]


def _rows(cache):
    return [json.loads(r) for r in cache.read_text(encoding="utf-8").splitlines() if r.strip()]


def test_a_second_call_reads_nothing(tmp_path, engine, files):
    cache = tmp_path / "cache.jsonl"
    first = read_cache.read_pages_cached(files, cache)
    assert engine.calls == [0, 0, 1] and [len(first["a"]), len(first["b"])] == [1, 2]
    again = read_cache.read_pages_cached(files, cache)
    assert engine.calls == [0, 0, 1], "nothing is read again"
    assert {k: [p.lines[0].text for p in v] for k, v in again.items()} == {"a": ["read 1"], "b": ["read 2", "read 3"]}
    rows = _rows(cache)
    # a one-page file is the row the trainer always wrote ({id, ocr, page}); several pages: "pages"
    assert rows[0]["ocr"] == read_cache.read_key().split("|")[0] and "page" in rows[0] and len(rows[1]["pages"]) == 2
    assert {r["reader"] for r in rows} == {"auto"}


def test_a_row_read_with_other_settings_is_read_again_and_key_none_accepts_any(tmp_path, engine, files,
                                                                              monkeypatch):
    cache = tmp_path / "cache.jsonl"
    read_cache.read_pages_cached(files[:1], cache)
    monkeypatch.setenv("PIAOJU_READER", "ocr")      # another reader mode: another key
    assert read_cache.read_key() != read_cache.read_key("auto")
    pages = read_cache.read_pages_cached(files[:1], cache)
    assert len(engine.calls) == 2 and pages["a"][0].lines[0].text == "read 2"
    assert read_cache.read_pages_cached(files[:1], cache)["a"][0].lines[0].text == "read 2"
    monkeypatch.delenv("PIAOJU_READER")
    assert read_cache.read_pages_cached(files[:1], cache)["a"][0].lines[0].text == "read 1"   # its own row again
    # a row of other OCR settings is read again; key=None takes it as it is
    other = tmp_path / "other.jsonl"
    page = Document(pages=[Page(0, 30, 40, [Line("old", box_to_quad([1, 1, 9, 9]))])]).to_dict()["pages"][0]
    other.write_text(json.dumps({"id": "a", "ocr": "OCRSettings(model='v0')", "page": page}) + "\n"
                     + json.dumps({"id": "b", "pages": [page, page]}) + "\n", encoding="utf-8")  # decode_ablation's
    assert read_cache.read_pages_cached(files, other, key=None)["a"][0].lines[0].text == "old"
    assert len(engine.calls) == 2, "key=None reads nothing that is cached"
    assert read_cache.read_pages_cached(files, other)["a"][0].lines[0].text == "read 3"
    assert len(engine.calls) == 5, "rows of other settings and rows with no settings are read again"


def test_a_torn_last_line_is_read_again_and_the_next_row_starts_a_line(tmp_path, engine, files):
    cache = tmp_path / "cache.jsonl"
    read_cache.read_pages_cached(files, cache)
    text = cache.read_text(encoding="utf-8").splitlines()
    cache.write_text(text[0] + "\n" + text[1][:40], encoding="utf-8")       # killed while writing "b"
    pages = read_cache.read_pages_cached(files, cache)
    assert engine.calls == [0, 0, 1, 0, 1] and pages["a"][0].lines[0].text == "read 1"
    lines = cache.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["id"] == "b"
    assert read_cache.read_pages_cached(files, cache)["b"][1].lines[0].text == "read 5"


def test_unreadable_files_are_skipped_only_when_asked_and_ocr_failures_always_raise(tmp_path, engine, files,
                                                                                    monkeypatch):
    cache = tmp_path / "cache.jsonl"
    missing = [("gone", str(tmp_path / "gone.png"))]
    with pytest.raises(RuntimeError, match="gone.png could not be read"):
        read_cache.read_pages_cached(missing, cache)
    assert read_cache.read_pages_cached(missing + files[:1], cache, skip_unreadable=True).keys() == {"a"}
    monkeypatch.setattr(route, "ocr_engine", lambda: Engine(fail=True))
    with pytest.raises(RuntimeError, match="OCR of page 1 of 2 failed: the OCR model is broken"):
        read_cache.read_pages_cached(files[1:], cache, skip_unreadable=True)


def test_read_file_pages_is_the_routes_reading_without_extraction(files, monkeypatch):
    class Turning(Engine):     # the same reading every time, of a page OCR turned upright
        def read(self, image, page_index=0, timings=None, **kw):
            page = super().read(image, page_index, timings)
            page.lines[0].text, page.rotation = f"page {page_index}", 180
            return page
    monkeypatch.setattr(route, "ocr_engine", lambda: Turning())
    monkeypatch.setattr(route, "extractor_available", lambda model_dir=None: False)
    analysis = route.analyse_file(files[1][1])
    pages = route.read_file_pages(files[1][1])
    assert Document(pages=pages).to_dict() == Document(pages=analysis.document.pages).to_dict()
    assert [(p.index, p.rotation, p.lines[0].text) for p in pages] == [(0, 180, "page 0"), (1, 180, "page 1")]


def test_trainer_ocr_records_reads_through_the_route_and_keeps_its_old_rows(tmp_path, engine, files,
                                                                            monkeypatch):
    import models.ocr.rulings as rulings
    from models.ocr import OCRSettings
    from training.trainer import ocr_records
    monkeypatch.setattr(rulings, "find_rulings", lambda image, quads: [[0.0, 5.0, 29.0, 5.0]])
    records = [{"id": "a", "image": files[0][1]}, {"id": "b", "image": files[1][1]}, {"id": "c"}]
    cache = tmp_path / "ocr_train.jsonl"
    old = Document(pages=[Page(0, 30, 40, [Line("old", box_to_quad([1, 1, 9, 9]))])]).to_dict()["pages"][0]
    del old["rules"]       # read before pages kept their ruled lines
    cache.write_text(json.dumps({"id": "a", "ocr": OCRSettings().tag(), "page": old}) + "\n", encoding="utf-8")
    pages = ocr_records(records, cache)
    assert pages["a"].lines[0].text == "old", "a trainer row of the same OCR settings is kept"
    assert pages["a"].rules == [[0.0, 5.0, 29.0, 5.0]], "its ruled lines are found from the image"
    assert engine.calls == [0, 1], "the other record is read by the route, all its pages (the first is kept)"
    assert pages["b"].lines[0].text == "read 1" and pages.keys() == {"a", "b"}
    assert _rows(cache)[-1]["reader"] == "auto"


def test_decode_ablation_reads_through_the_cache_whatever_the_settings(tmp_path, engine, files):
    from bench.decode_ablation import read_pages
    cache = tmp_path / "ocr.jsonl"
    page = Document(pages=[Page(0, 30, 40, [Line("kept", box_to_quad([1, 1, 9, 9]))])]).to_dict()["pages"][0]
    cache.write_text(json.dumps({"id": "a", "pages": [page]}) + "\n", encoding="utf-8")   # its old rows
    pages = read_pages(files, cache)
    assert pages["a"][0].lines[0].text == "kept" and engine.calls == [0, 1]
    assert _rows(cache)[-1]["id"] == "b" and "ocr" in _rows(cache)[-1]
