"""Start a model from an earlier model directory of ours whose vocabulary, tags or doc types differ.

A retrain of the bundled model that adds document types, fields or characters (a larger OCR dictionary)
need not start from random weights: every weight whose meaning carries over is copied by NAME, not by
position, so what the earlier model learned is kept and only what is new starts fresh.

- word embeddings: the row of each token the earlier vocabulary had (matched by the token string);
  a token it lacked starts as the earlier model's [UNK] row, so an unseen character behaves as it did
  before (as unknown) until training moves it, instead of as random noise;
- tagging and doc-type heads: the column of each tag / doc type the earlier model had (matched by name);
  new ones keep their fresh initialisation;
- every other weight of the same name and shape (encoder layers, layout embeddings, link head) is copied;
  one whose shape differs (e.g. a longer position table) keeps its fresh initialisation and is reported.

`python -m training train --config C` uses it when C's `model.warm_start` names a directory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HEADS = {"head.tagger": "tag_labels", "head.doc_classifier": "doc_types"}
WORD_TABLE = "embeddings.word_embeddings.weight"


@dataclass
class WarmStartReport:
    """What was carried over, for the provenance file and the console."""
    base: str
    copied: int = 0                                          # tensors copied whole
    vocab_rows: int = 0                                      # embedding rows matched by token
    new_tokens: int = 0                                      # tokens the base lacked ([UNK] row)
    tags: int = 0                                            # tag columns matched by name
    new_tags: list[str] = field(default_factory=list)
    doc_types: int = 0
    new_doc_types: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)           # tensors left at their fresh initialisation

    def summary(self) -> str:
        return (f"warm start from {self.base}: {self.copied} tensors copied, {self.vocab_rows} token rows kept "
                f"({self.new_tokens} new tokens start as [UNK]), {self.tags} tags kept "
                f"(new: {', '.join(self.new_tags) or 'none'}), {self.doc_types} doc types kept "
                f"(new: {', '.join(self.new_doc_types) or 'none'})"
                + (f"; fresh: {', '.join(self.fresh)}" if self.fresh else ""))


def warm_start(model, tag_labels: list[str], doc_types: list[str], vocab: list[str],
               base_dir: str | Path) -> WarmStartReport:
    """Copy into `model` (built for `tag_labels`, `doc_types`, `vocab`) what the model directory
    `base_dir` (config.json, model_state.safetensors, vocab.txt) knew, matched by name. An older directory's
    model_state.pdparams is read by the restricted unpickler only (ValueError when it refers to anything
    but arrays: a pickle can run code) and converted."""
    import paddle

    from models.model_dir import LEGACY_WEIGHTS, WEIGHTS, ExtractorConfig, ModelDirError, read_model_weights, read_vocab

    base_dir = Path(base_dir)
    for name in ("config.json", WEIGHTS, "vocab.txt"):
        if not (base_dir / name).is_file() and not (name == WEIGHTS and (base_dir / LEGACY_WEIGHTS).is_file()):
            raise FileNotFoundError(f"warm start: {base_dir} has no {name}; name a model directory "
                                    "this project wrote (e.g. models/default)")
    cfg = ExtractorConfig.load(base_dir)
    base_names = {"tag_labels": list(cfg.tag_labels), "doc_types": list(cfg.doc_types)}
    new_names = {"tag_labels": list(tag_labels), "doc_types": list(doc_types)}
    base_vocab = read_vocab(base_dir)
    try:             # safetensors; an older directory's pickle only through the restricted reader
        state = read_model_weights(base_dir)
    except ModelDirError as exc:
        raise ValueError(f"warm start: {exc}") from exc
    report = WarmStartReport(base=str(base_dir))

    target = model.state_dict()
    merged = {}
    for name, tensor in target.items():
        dst = tensor.numpy().astype("float32")
        if name not in state:
            report.fresh.append(name)
            continue
        src = np.asarray(state[name], dtype="float32")
        head = next((h for h in HEADS if name.startswith(h)), None)
        if name == WORD_TABLE:
            index = {tok: i for i, tok in enumerate(base_vocab)}
            unk = src[index["[UNK]"]]
            for j, tok in enumerate(vocab):
                i = index.get(tok)
                if i is not None and i < src.shape[0]:
                    dst[j] = src[i]
                    report.vocab_rows += 1
                else:
                    dst[j] = unk
                    report.new_tokens += 1
        elif head is not None:
            kind = HEADS[head]
            index = {lab: i for i, lab in enumerate(base_names[kind])}
            kept = 0
            for j, lab in enumerate(new_names[kind]):       # the label axis is the last one
                i = index.get(lab)
                if i is not None and i < src.shape[-1]:
                    dst[..., j] = src[..., i]
                    kept += 1
            fresh = [lab for lab in new_names[kind] if lab not in index]
            if kind == "tag_labels":
                report.tags, report.new_tags = kept, fresh
            else:
                report.doc_types, report.new_doc_types = kept, fresh
        elif src.shape == dst.shape:
            dst = src
            report.copied += 1
        else:
            report.fresh.append(name)
            continue
        merged[name] = paddle.to_tensor(np.ascontiguousarray(dst, dtype="float32"))
    model.set_state_dict(merged)
    # tag names are per-position (B-x, I-x): report the fields, not both halves
    report.new_tags = sorted({t.split("-", 1)[-1] for t in report.new_tags})
    return report
