"""The extraction head (last pipeline block), its label maps and its loss.

`ExtractionHead(config)(hidden, mask_bias) -> (tag_logits [B, T, n_tags], doc_logits [B, n_types])`
and, with `config.link=True`, a third output `link_logits [B, T, T]`: bilinear scores that token i
(the first token of a key/question line) links to token j (the first token of its value/answer line),
XFUND's key->value links.

`loss_fn(outputs, labels) -> scalar` is separate so the pipeline engine can call it on the last stage.
`labels` is a dict (or a tuple in the same order):
    tags       int64 [B, T]     BIO tag id per token; -100 = ignore (specials, padding, overlap)
    doc_type   int64 [B]        document type id; -100 = unknown
    links      float [B, T, T]  1 where token i links to token j (optional)
    link_mask  float [B, T, T]  1 on the (i, j) pairs that count in the link loss (optional)

Tag keys: every schema field key, plus `items.<key>` for the fields of repeated item rows, plus the
generic-form line labels (`header`, `question`, `answer`). Label 0 is always "O".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from data.labels import FORM_KEYS, IGNORE_INDEX, ITEM_PREFIX


def tag_labels(field_keys: list[str]) -> list[str]:
    """["O", "B-k1", "I-k1", "B-k2", ...] for the given keys, in order, without duplicates."""
    labels = ["O"]
    for key in dict.fromkeys(field_keys):
        if not key or key.startswith(("B-", "I-")) or key == "O":
            raise ValueError(f"field key {key!r} cannot be a tag key (empty or looks like a tag)")
        labels += [f"B-{key}", f"I-{key}"]
    return labels


def schema_field_keys(schema_names: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(tag keys, doc types) over the schemas in data/schemas (all of them by default).

    Item-row fields become `items.<key>`; the generic form's line labels are always included.
    """
    from data.schemas import list_schemas, load_schema
    names = list(schema_names) if schema_names is not None else list(list_schemas())
    keys: list[str] = []
    for name in names:
        schema = load_schema(name)
        keys += [f.key for f in schema.fields]
        keys += [ITEM_PREFIX + f.key for f in schema.item_fields]
    return list(dict.fromkeys(keys + list(FORM_KEYS))), names


@dataclass
class HeadConfig:
    hidden_size: int
    tag_labels: list[str] = field(default_factory=lambda: ["O"])
    doc_types: list[str] = field(default_factory=list)
    link: bool = False              # add the key->value linking output (generic forms)
    link_dim: int = 128
    dropout: float = 0.1

    @property
    def n_tags(self) -> int:
        return len(self.tag_labels)

    @property
    def n_types(self) -> int:
        return max(1, len(self.doc_types))


class ExtractionHead(nn.Layer):
    """Token tagging + doc type on [CLS] (+ key->value linking); the last block of the pipeline."""

    def __init__(self, config: HeadConfig):
        super().__init__()
        self.config = config
        d = config.hidden_size
        self.dropout = nn.Dropout(config.dropout)
        self.tagger = nn.Linear(d, config.n_tags)
        # doc type from [CLS] through a BERT-style pooler (dense + tanh), then a classifier
        self.pool = nn.Linear(d, d)
        self.doc_classifier = nn.Linear(d, config.n_types)
        if config.link:
            self.link_query = nn.Linear(d, config.link_dim)
            self.link_key = nn.Linear(d, config.link_dim)

    def forward(self, hidden, mask_bias, link: bool = True):
        """`link=False` leaves the link output out (inference: models/extractor.py computes it with
        `link_logits` only for the pages whose decoding asks for it, the generic forms)."""
        h = self.dropout(hidden)
        tag_logits = self.tagger(h)
        pooled = paddle.tanh(self.pool(hidden[:, 0]))
        doc_logits = self.doc_classifier(self.dropout(pooled))
        if not self.config.link or not link:
            return tag_logits, doc_logits
        return tag_logits, doc_logits, self.link_logits(h, mask_bias)

    def link_logits(self, h, mask_bias):
        """The link output of `forward` from the (dropped-out) hidden states `h`: the same operations on the
        same inputs, so in eval mode (dropout is the identity) the very same numbers, computed later."""
        q, k = self.link_query(h), self.link_key(h)
        # a low-rank bilinear form h_i^T Wq^T Wk h_j; padding columns get the mask bias
        link_logits = paddle.matmul(q, k, transpose_y=True) / math.sqrt(self.config.link_dim)
        return link_logits + mask_bias[:, 0]          # [B, 1, T] broadcasts over rows


def _masked_mean(values: paddle.Tensor, mask: paddle.Tensor) -> paddle.Tensor:
    mask = mask.astype(values.dtype)
    return (values * mask).sum() / paddle.clip(mask.sum(), min=1.0)


def _unpack_labels(labels) -> dict:
    if isinstance(labels, dict):
        return labels
    names = ("tags", "doc_type", "links", "link_mask")
    return dict(zip(names, labels))


def loss_fn(outputs, labels, doc_weight: float = 1.0, link_weight: float = 1.0) -> paddle.Tensor:
    """Token-tag cross-entropy + doc-type cross-entropy (+ link BCE), each averaged over its mask.

    A batch where a part has no labelled positions contributes zero for that part (never NaN), so
    micro-batches without a doc-type label or links are fine.
    """
    tag_logits, doc_logits = outputs[0], outputs[1]
    lab = _unpack_labels(labels)
    tags = lab["tags"].astype("int64")
    valid = tags != IGNORE_INDEX
    per_token = F.cross_entropy(tag_logits, paddle.where(valid, tags, paddle.zeros_like(tags)).unsqueeze(-1),
                                reduction="none").squeeze(-1)
    loss = _masked_mean(per_token, valid)
    if lab.get("doc_type") is not None and doc_weight:
        doc = lab["doc_type"].astype("int64").reshape([-1])
        ok = doc != IGNORE_INDEX
        per_doc = F.cross_entropy(doc_logits, paddle.where(ok, doc, paddle.zeros_like(doc)).unsqueeze(-1),
                                  reduction="none").reshape([-1])
        loss = loss + doc_weight * _masked_mean(per_doc, ok)
    if len(outputs) > 2 and lab.get("links") is not None and link_weight:
        links = lab["links"].astype(outputs[2].dtype)
        mask = lab.get("link_mask")
        mask = paddle.ones_like(links) if mask is None else mask
        per_pair = F.binary_cross_entropy_with_logits(outputs[2], links, reduction="none")
        loss = loss + link_weight * _masked_mean(per_pair, mask)
    return loss
