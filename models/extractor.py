"""The extractor: OCR'd `Document` in, the same `Document` out with doc type, fields, items and pairs.

    ex = get_extractor()                    # models/default, loaded once per process
    doc = ex.extract(ocr_document)          # doc_type(+score), fields, items, pairs, warnings

This module loads a model directory and runs it (`predict_page`: lines in reading order, a tilted page's
turned level (rule `level_lines`) -> character tokens with line boxes in overlapping windows
(models/tokenizer.py) -> encoder + extraction head -> per-character tag probabilities, each from the
window where the character has most context). What the probabilities mean is decided by the decoding
rules of models/extraction/ (`RULES`, in order: candidate spans, document type, fields, items,
arithmetic, generic-form pairs), then data/validate.py checks the values.

The model directory (its files, writing, reading, listing) is models/model_dir.py's; the names
imported from there below are the ones callers have long used from this module.
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import paddle

from data.document import Document, Page
from data.labels import FORM_KEYS, ITEM_PREFIX
from data.validate import validate
from models.calibration import calibrate
from models.encoder import Encoder
from models.extraction import DEFAULT_SETTINGS, DecodeSettings, PagePrediction, check_names, decode_page
from models.extraction.doctype import OTHER_TYPE, pick_type
from models.extraction.rules import encoder_input, is_form
from models.heads import ExtractionHead
from models.model_dir import (  # noqa: F401  (the directory names callers know from here)
    DEFAULT_MODEL_DIR,
    ExtractorConfig,
    ModelDirError,
    find_model_dirs,
    is_model_dir,
    model_schema,
    read_field_calibration,
    read_model_dir,
    read_pair_scorer,
)
from models.onnx_encoder import OnnxEncoder, OnnxUnavailable, wanted_backend
from models.runtime import on_model_thread
from models.tokenizer import Tokenizer

GENERIC = "generic_form"


class Extractor:
    """A loaded model with its vocabulary and schemas. Build with `Extractor.load` / `get_extractor`.

    `backend`: "onnx" runs the forward pass through onnxruntime (models/onnx_encoder.py, a graph built from
    `model`'s weights; several times faster on CPU), "paddle" through the Paddle model itself; None picks
    onnx on CPU unless $PIAOJU_EXTRACTOR says "paddle". Where the ONNX graph cannot be built the extractor
    runs Paddle (a note on stderr says why); `self.backend` says which one runs. `model` stays the Paddle
    model either way (training, the pipeline engine and tests use it); change its weights and load again."""

    def __init__(self, model: Encoder, cfg: ExtractorConfig, vocab: Tokenizer, model_dir: Path | None = None,
                 backend: str | None = None):
        self.model = model
        self.model.eval()
        self.cfg = cfg
        self.vocab = vocab
        self.model_dir = model_dir
        self.tag_labels = cfg.tag_labels
        self.schemas = {name: model_schema(model_dir, name) for name in cfg.doc_types}
        self.pair_scorer = read_pair_scorer(model_dir)      # None: forms rank candidates by hand weights
        self.calibration = read_field_calibration(model_dir)   # None: a field's confidence is the model's
        self.onnx = self._onnx_encoder(backend)
        self.backend = "onnx" if self.onnx is not None else "paddle"

    @classmethod
    def load(cls, model_dir: str | Path = DEFAULT_MODEL_DIR, backend: str | None = None) -> "Extractor":
        """ModelDirError (with how to get a model) for anything models.model_dir cannot read."""
        model, cfg, vocab = read_model_dir(model_dir)
        return cls(model, cfg, vocab, Path(model_dir), backend)

    def _onnx_encoder(self, backend: str | None) -> OnnxEncoder | None:
        if backend not in (None, "onnx", "paddle"):
            raise ValueError(f"extractor backend {backend!r} unknown; use 'onnx' or 'paddle'")
        if (backend or wanted_backend(str(paddle.get_device()))) != "onnx":
            return None
        head = self.model.head
        if not isinstance(head, ExtractionHead):
            return None
        try:
            weights = {k: v.numpy() for k, v in self.model.state_dict().items()}
            return OnnxEncoder(weights, dataclasses.asdict(self.model.config), head.config.link, head.config.link_dim)
        except OnnxUnavailable as exc:
            print(f"{self.model_dir or 'model'}: the encoder runs in Paddle, not onnxruntime ({exc})", file=sys.stderr)
            return None

    # --- model ----------------------------------------------------------------------------------
    def _forward(self, ids: np.ndarray, bbox: np.ndarray, mask: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, Callable[[], np.ndarray] | None]:
        """(tag probabilities, doc-type probabilities averaged over windows, a function giving the link
        scores, or None without a link head). Runs on the model thread (models/runtime.py): dygraph mode and
        Paddle's oneDNN state are per thread. The link scores ([W, T, T], ~6% of the forward pass) are computed
        from the kept hidden states on the first call only: pages that are not generic forms never ask.
        With the ONNX backend the same, from onnxruntime (`_forward_paddle` is the reference it is tested
        against)."""
        if self.onnx is None:
            return self._forward_paddle(ids, bbox, mask)
        onnx = self.onnx
        tags, doc, hidden = onnx(ids, bbox, mask)
        if onnx.link_session is None:
            return tags, doc.mean(0), None
        kept: list[np.ndarray] = []

        def scores() -> np.ndarray:
            if not kept:
                kept.append(onnx.link(hidden, mask))
            return kept[0]
        return tags, doc.mean(0), lambda: on_model_thread(scores)

    @paddle.no_grad()
    def _forward_paddle(self, ids: np.ndarray, bbox: np.ndarray, mask: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, Callable[[], np.ndarray] | None]:
        """`_forward` through the Paddle model (dygraph): the fallback, and the reference."""
        blocks = self.model.blocks()
        head = blocks[-1]
        if not (isinstance(head, ExtractionHead) and head.config.link):
            res = self.model(paddle.to_tensor(ids), paddle.to_tensor(bbox), None, paddle.to_tensor(mask))
            return self._probs(res[0], res[1]) + ((lambda: res[2].numpy()) if len(res) > 2 else None,)
        out: tuple = (paddle.to_tensor(ids), paddle.to_tensor(bbox), None, paddle.to_tensor(mask))
        for block in blocks[:-1]:                   # Encoder.forward's loop, the head left for below
            out = block(*out)
        hidden, bias = out
        tag_logits, doc_logits = head(hidden, bias, link=False)
        kept: list[np.ndarray] = []

        @paddle.no_grad()
        def scores() -> np.ndarray:
            if not kept:
                kept.append(head.link_logits(hidden, bias).numpy())
            return kept[0]
        return self._probs(tag_logits, doc_logits) + (lambda: on_model_thread(scores),)

    @staticmethod
    def _probs(tag_logits: paddle.Tensor, doc_logits: paddle.Tensor) -> tuple[np.ndarray, np.ndarray]:
        return (paddle.nn.functional.softmax(tag_logits, -1).numpy(),
                paddle.nn.functional.softmax(doc_logits, -1).numpy().mean(0))

    def predict_page(self, page: Page, off: frozenset[str] = frozenset()) -> PagePrediction:
        """Raw predictions for one page: doc-type probabilities, per-character tag probabilities
        (NaN on whitespace) and a `link(a, b)` scorer between two (line, char) positions. The encoder sees
        the lines the "input" rules left on give it (models/extraction/rules.py `encoder_input`: a tilted
        page's turned level, rule `level_lines`)."""
        lines, index = encoder_input(page, off)
        enc = self.vocab.encode_page(lines, page.width, page.height, self.cfg.max_len)
        enc.line = [index[i] for i in enc.line]             # back to the page's own line numbers
        n_tags = len(self.tag_labels)
        probs = [np.full((len(ln.text), n_tags), np.nan) for ln in page.lines]
        if not enc.ids:
            return PagePrediction(np.full(len(self.cfg.doc_types), 1 / max(1, len(self.cfg.doc_types))),
                                  probs, lambda a, b: None, self.pair_scorer)
        arr = enc.arrays()
        used = int(arr["attention_mask"].sum(1).max())     # drop padding every window shares
        tags, doc, links = on_model_thread(self._forward, *(arr[k][:, :used]
                                                             for k in ("input_ids", "bbox", "attention_mask")))
        for t, row in enumerate(enc.merge(tags)):
            probs[enc.line[t]][enc.start[t]] = row
        token_of = {(enc.line[t], enc.start[t]): t for t in range(len(enc.ids))}

        def link(a: tuple[int, int], b: tuple[int, int]) -> float | None:
            ta, tb = token_of.get(a), token_of.get(b)
            if links is None or ta is None or tb is None:
                return None
            scores_of = links()
            scores = [scores_of[wi, w.position(ta), w.position(tb)] for wi, w in enumerate(enc.windows)
                      if w.start <= ta < w.end and w.start <= tb < w.end]
            return float(max(scores)) if scores else None
        return PagePrediction(doc, probs, link, self.pair_scorer)

    # --- decoding -------------------------------------------------------------------------------
    def _allowed(self, doc_type: str) -> np.ndarray:
        schema = self.schemas.get(doc_type)
        keys = set()
        if schema is not None:
            keys |= {f.key for f in schema.fields} | {ITEM_PREFIX + f.key for f in schema.item_fields}
        if doc_type == GENERIC:
            keys |= set(FORM_KEYS)
        return np.array([lab == "O" or lab[2:] in keys for lab in self.tag_labels])

    def extract(self, doc: Document, doc_type: str | None = None, settings: DecodeSettings = DEFAULT_SETTINGS,
                off: frozenset[str] = frozenset()) -> Document:
        """Fill doc_type (+score), fields, items, pairs and warnings of `doc` (in place; also returned).
        `off` names decoding rules to switch off (models/extraction/rules.py; the ablation bench's knob)."""
        t0 = time.perf_counter()
        check_names(off)
        preds = [self.predict_page(p, off) for p in doc.pages]
        if doc_type is None:
            total = sum((p.doc for p in preds), np.zeros(len(self.cfg.doc_types)))
            total = total / max(1e-9, total.sum())
            texts = [ln.text for p in doc.pages for ln in p.lines]
            generic = self.cfg.doc_types.index(GENERIC) if GENERIC in self.cfg.doc_types else None
            best = pick_type(total, self.cfg.doc_types, self.schemas, texts, settings, off, generic) \
                if len(total) else 0
            doc.doc_type = self.cfg.doc_types[best] if self.cfg.doc_types else None
            doc.doc_type_score = round(float(total[best]), 4) if len(total) else None
        else:
            if doc_type not in self.schemas:
                raise ValueError(f"document type {doc_type!r} is not one this model knows; "
                                 f"choose from {', '.join(self.cfg.doc_types)}")
            doc.doc_type, doc.doc_type_score = doc_type, 1.0
        dt = doc.doc_type or ""
        allowed = self._allowed(dt)
        doc.fields, doc.items, doc.pairs, doc.tables, doc.signatures = {}, [], [], [], []
        _clear_roles(doc)              # a form's line roles from an earlier extraction (decode_page sets them)
        for page, pred in zip(doc.pages, preds):
            decode_page(doc, page, pred, self.schemas.get(dt), self.tag_labels, allowed, dt == GENERIC, settings, off)
        if dt == GENERIC and doc_type is None and not is_form(doc.pairs, [ln.text for ln in doc.lines], off, settings):
            doc.doc_type, doc.fields, doc.items, doc.pairs = OTHER_TYPE, {}, [], []   # not a form: text only
            doc.tables, doc.signatures = [], []
            _clear_roles(doc)
        self._validate(doc)
        doc.timings["extract"] = doc.timings.get("extract", 0.0) + time.perf_counter() - t0
        return doc

    def revalidate(self, doc: Document) -> Document:
        """Validate and calibrate `doc` again as `extract` does (in place; also returned): for a document whose
        rows changed after extraction, e.g. an invoice the route joined to its goods-list pages."""
        self._validate(doc)
        return doc

    def _validate(self, doc: Document) -> None:
        """data/validate.py `validate` with this model's schema (a generic form's has no fields: pairs only),
        then each field's confidence calibrated (models/calibration.py: whether its check passed is part of
        the evidence); the one place a field's shown confidence is decided."""
        schema = self.schemas.get(doc.doc_type or "")
        validate(doc, schema)
        calibrate(doc, self.calibration, schema)


def _clear_roles(doc: Document) -> None:
    """No line role (Line.role, set on a generic form's pages only): the document is not read as a form."""
    for line in doc.lines:
        line.role = None


@functools.lru_cache(maxsize=4)
def _cached(model_dir: str) -> Extractor:
    return Extractor.load(model_dir)


def get_extractor(model_dir: str | Path | None = None) -> Extractor:
    """The process-wide extractor for a model directory (loaded on first use only). Safe from any thread:
    loaded on the model thread (models/runtime.py), where its forward passes run too."""
    return on_model_thread(_cached, str(Path(model_dir or DEFAULT_MODEL_DIR).resolve()))
