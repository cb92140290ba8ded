"""Per-field precision / recall / F1 (exact match after normalisation), per doc type, and pair F1.

Scoring rules, the same for every model and corpus:
- a field is a true positive when the predicted normalised value equals the ground truth's; a wrong
  value counts twice (a false positive and a false negative), as in the usual KIE scoring;
- item-row fields count as a multiset of (items.<key>, value) per page, so row order does not matter;
- a generic form's pairs are (key text, value text) with spaces, colons and width folded, matched as
  a multiset per page;
- a generic form's table cells are (column name, cell text), folded the same way, non-blank cells only,
  matched as a multiset per page (`score_tables`); `pair_errors` counts the two wrong kinds of pair a
  clerk would never sign: a label taken as a value, and a table's line read into a pair.

`python -m training evaluate --model DIR --data DIR [--ocr real|gt]` runs the extractor over a corpus
(ground-truth lines or real OCR of the rendered images) and prints/writes these tables.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from data.labels import item_tag_key
from data.normalize import normalize_value, to_halfwidth


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: "Counts") -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": round(self.precision, 4),
                "recall": round(self.recall, 4), "f1": round(self.f1, 4)}


def _multiset_counts(gold: Counter, pred: Counter) -> Counts:
    tp = sum((gold & pred).values())
    return Counts(tp=tp, fp=sum(pred.values()) - tp, fn=sum(gold.values()) - tp)


def fold_text(text: str) -> str:
    """Comparison form of free text: half-width, no whitespace, no trailing colon."""
    return re.sub(r"\s+", "", to_halfwidth(text or "")).strip(":").upper()


def compare_value(field_type: str | None, text: str) -> str:
    """The comparison form of a value: the schema's normaliser, then folding."""
    norm = normalize_value(field_type or "text", text) if text else None
    return fold_text(norm if norm is not None else text)


@dataclass
class PageScore:
    """Counts for one page, by field key, plus its pairs and its table cells (generic forms)."""
    doc_type: str
    fields: dict[str, Counts] = field(default_factory=dict)
    pairs: Counts | None = None
    cells: Counts | None = None


def score_fields(gold: dict[str, str], pred: dict[str, str], items_gold: list[dict[str, str]] | None = None,
                 items_pred: list[dict[str, str]] | None = None) -> dict[str, Counts]:
    """Counts by key for one page. Values must already be in comparison form (see `compare_value`)."""
    out: dict[str, Counts] = {}
    for key in set(gold) | set(pred):
        g, p = gold.get(key) or "", pred.get(key) or ""
        c = Counts()
        if g and p and g == p:
            c.tp = 1
        else:
            c.fp = int(bool(p))
            c.fn = int(bool(g))
        out[key] = c
    gi = Counter((item_tag_key(k), v) for row in items_gold or [] for k, v in row.items() if v)
    pi = Counter((item_tag_key(k), v) for row in items_pred or [] for k, v in row.items() if v)
    for key in {k for k, _ in gi} | {k for k, _ in pi}:
        out[key] = _multiset_counts(Counter({kv: n for kv, n in gi.items() if kv[0] == key}),
                                    Counter({kv: n for kv, n in pi.items() if kv[0] == key}))
    return out


def score_pairs(gold: list[tuple[str, str]], pred: list[tuple[str, str]]) -> Counts:
    g = Counter((fold_text(k), fold_text(v)) for k, v in gold)
    p = Counter((fold_text(k), fold_text(v)) for k, v in pred)
    return _multiset_counts(g, p)


def table_cells(tables: list[tuple[list[str], list[list[str]]]]) -> Counter:
    """The non-blank cells of (columns, rows of texts) tables as a multiset of folded (column, text)."""
    return Counter((fold_text(cols[j]), fold_text(text)) for cols, rows in tables for row in rows
                   for j, text in enumerate(row) if j < len(cols) and fold_text(text))


def gold_tables(rec: dict) -> list[tuple[list[str], list[list[str]]]]:
    """A generated page's tables (its ground truth's "tables") as (columns, rows of texts)."""
    return [(list(t["columns"]), [list(r) for r in t["rows"]]) for t in rec.get("tables") or []]


def score_tables(gold: list[tuple[list[str], list[list[str]]]], pred: list) -> Counts:
    """Cell counts of predicted `data.document.Table`s against gold (columns, rows) tables."""
    return _multiset_counts(table_cells(gold), table_cells([(t.columns, [[c.text for c in r] for r in t.rows])
                                                            for t in pred]))


def _inside(box: list[float] | None, other: list[float]) -> bool:
    if not box:
        return False
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return other[0] <= x <= other[2] and other[1] <= y <= other[3]


def pair_errors(rec: dict, pairs: list) -> dict[str, int]:
    """How many predicted pairs (`data.document.Pair`s, boxes in the page's pixels) of a generated page take a
    printed label as their value (the value's box centre inside a gold question or header line), and how
    many hold a line of a gold table (key or value centre inside one)."""
    lines = rec.get("lines") or []
    labels = [ln["box"] for ln in lines if ln.get("label") in ("question", "header")]
    ids = {i for t in rec.get("tables") or [] for i in list(t.get("column_lines") or []) +
           [c for row in t.get("cell_lines") or [] for c in row] if i is not None}
    table = [ln["box"] for ln in lines if ln.get("id") in ids]
    label_value = sum(1 for p in pairs if any(_inside(p.value_box, b) for b in labels))
    in_table = sum(1 for p in pairs if any(_inside(p.value_box, b) or _inside(p.key_box, b) for b in table))
    return {"label_as_value": label_value, "table_line_pairs": in_table}


@dataclass
class Report:
    """Totals over pages: micro-averaged by field, by doc type, overall, and pair F1."""
    by_field: dict[str, dict[str, Counts]] = field(default_factory=dict)   # doc_type -> key -> counts
    pairs: dict[str, Counts] = field(default_factory=dict)                  # doc_type -> counts
    cells: dict[str, Counts] = field(default_factory=dict)                  # doc_type -> table cell counts
    doc_type_correct: Counter = field(default_factory=Counter)
    pages: Counter = field(default_factory=Counter)
    by_level: dict[str, "Report"] = field(default_factory=dict)            # degradation level -> report
    layout_pairs: dict[str, dict[str, Counts]] = field(default_factory=dict)  # form layout -> level -> pairs

    def add(self, page: PageScore, predicted_type: str | None = None, level: str | None = None,
            layout: str | None = None) -> None:
        if layout is not None and page.pairs is not None:   # generated forms: pair scores per layout and level
            for lv in (level or "-", "all"):
                self.layout_pairs.setdefault(layout, {}).setdefault(lv, Counts()).add(page.pairs)
        if level is not None:      # generated pages carry their degradation level: none / light / photo / heavy
            self.by_level.setdefault(level, Report()).add(page, predicted_type)
        self.pages[page.doc_type] += 1
        self.doc_type_correct[page.doc_type] += int(predicted_type == page.doc_type)
        slot = self.by_field.setdefault(page.doc_type, {})
        for key, c in page.fields.items():
            slot.setdefault(key, Counts()).add(c)
        if page.pairs is not None:
            self.pairs.setdefault(page.doc_type, Counts()).add(page.pairs)
        if page.cells is not None:
            self.cells.setdefault(page.doc_type, Counts()).add(page.cells)

    def type_totals(self) -> dict[str, Counts]:
        out = {}
        for dt, keys in self.by_field.items():
            total = Counts()
            for c in keys.values():
                total.add(c)
            out[dt] = total
        return out

    def overall(self) -> Counts:
        total = Counts()
        for c in self.type_totals().values():
            total.add(c)
        return total

    def headline(self) -> dict[str, float]:
        """One F1 per doc type: field F1, or pair F1 for a type scored by pairs (generic forms: their
        ground truth has no fields, so fields predicted on a form taken for another type are only false
        positives and do not switch a form to field F1)."""
        out = {}
        for dt, c in self.type_totals().items():
            use_pairs = dt in self.pairs and c.tp + c.fn == 0
            out[dt] = round((self.pairs[dt] if use_pairs else c).f1, 4)
        return dict(sorted(out.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "overall_field": self.overall().as_dict(),
            "f1_by_type": self.headline(),
            "by_degradation": {lv: {"pages": sum(r.pages.values()), "f1_by_type": r.headline(),
                                    "overall_field_f1": round(r.overall().f1, 4)}
                               for lv, r in sorted(self.by_level.items())},
            "pairs_by_layout": {lay: {lv: c.as_dict() for lv, c in sorted(levels.items())}
                                for lay, levels in sorted(self.layout_pairs.items())},
            "doc_types": {dt: {"pages": self.pages[dt],
                               "doc_type_accuracy": round(self.doc_type_correct[dt] / max(1, self.pages[dt]), 4),
                               "field": c.as_dict(),
                               "pairs": self.pairs[dt].as_dict() if dt in self.pairs else None,
                               "table_cells": self.cells[dt].as_dict() if dt in self.cells else None,
                               "fields": {k: v.as_dict() for k, v in sorted(self.by_field[dt].items())}}
                          for dt, c in sorted(self.type_totals().items())},
        }

    def table(self) -> str:
        rows = [f"{'doc type / field':40s} {'P':>6s} {'R':>6s} {'F1':>6s} {'n':>5s}"]
        for dt, total in sorted(self.type_totals().items()):
            acc = self.doc_type_correct[dt] / max(1, self.pages[dt])
            rows.append(f"{dt + f'  ({self.pages[dt]} pages, type acc {acc:.2f})':40s} "
                        f"{total.precision:6.3f} {total.recall:6.3f} {total.f1:6.3f} {total.tp + total.fn:5d}")
            for key, c in sorted(self.by_field[dt].items()):
                rows.append(f"  {key:38s} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} {c.tp + c.fn:5d}")
            if dt in self.pairs:
                c = self.pairs[dt]
                rows.append(f"  {'[key-value pairs]':38s} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} "
                            f"{c.tp + c.fn:5d}")
            if dt in self.cells:
                c = self.cells[dt]
                rows.append(f"  {'[table cells]':38s} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} "
                            f"{c.tp + c.fn:5d}")
        o = self.overall()
        rows.append(f"{'ALL FIELDS':40s} {o.precision:6.3f} {o.recall:6.3f} {o.f1:6.3f} {o.tp + o.fn:5d}")
        if self.by_level:
            types = sorted(self.headline())
            rows.append("")
            rows.append("F1 by degradation level (field F1; generic_form: pair F1)")
            rows.append(f"{'level':8s} {'pages':>5s} " + " ".join(f"{t[:13]:>13s}" for t in types)
                        + f" {'all fields':>10s}")
            order = ("none", "light", "photo", "heavy")
            for lv in [x for x in order if x in self.by_level] + sorted(x for x in self.by_level if x not in order):
                r = self.by_level[lv]
                h = r.headline()
                rows.append(f"{lv:8s} {sum(r.pages.values()):5d} " +
                            " ".join(f"{h[t]:13.3f}" if t in h else f"{'-':>13s}" for t in types) +
                            f" {r.overall().f1:10.3f}")
        if self.layout_pairs:
            seen = {lv for v in self.layout_pairs.values() for lv in v} - {"all"}
            levels = sorted(seen, key=lambda lv: (("none", "light", "photo", "heavy") + (lv,)).index(lv)) + ["all"]
            rows += ["", "generic_form key-value pairs by layout and level: P/R/F1 (pairs)",
                     f"{'layout':16s} " + " ".join(f"{lv:>22s}" for lv in levels)]
            for lay, by in sorted(self.layout_pairs.items()):
                rows.append(f"{lay:16s} " + " ".join(
                    f"{by[lv].precision:.2f}/{by[lv].recall:.2f}/{by[lv].f1:.2f} ({by[lv].tp + by[lv].fn})".rjust(22)
                    if lv in by else f"{'-':>22s}" for lv in levels))
        return "\n".join(rows)


def write_report(report: Report, path: str | Path, extra: dict[str, Any] | None = None) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({**report.as_dict(), **(extra or {})}, ensure_ascii=False, indent=1),
                          encoding="utf-8")


def gold_of(rec: dict, schema) -> tuple[dict[str, str], list[dict[str, str]], list[tuple[str, str]]]:
    """Ground truth of a corpus record in comparison form: fields, item rows, pairs."""
    def ftype(key: str, items: bool = False) -> str | None:
        try:
            return schema.field(key).type if schema is not None else None
        except KeyError:
            return None
    fields = {k: compare_value(ftype(k), str(f.get("value") if isinstance(f, dict) else f))
              for k, f in (rec.get("fields") or {}).items()}
    items = [{k: compare_value(ftype(k), str(f.get("value") if isinstance(f, dict) else f)) for k, f in row.items()}
             for row in rec.get("items") or []]
    pairs = [(p["key"], p["value"]) for p in rec.get("pairs") or []]
    if not pairs:   # pairs from XFUND-style line links
        by_id = {ln.get("id", i): ln for i, ln in enumerate(rec.get("lines") or [])}
        for ln in rec.get("lines") or []:
            for a, b in ln.get("linking") or []:
                if ln.get("id") == a and a in by_id and b in by_id and by_id[a].get("label") == "question" \
                        and by_id[b].get("label") == "answer":
                    pairs.append((by_id[a]["text"], by_id[b]["text"]))
    return fields, items, pairs


def pred_of(doc, schema) -> tuple[dict[str, str], list[dict[str, str]], list[tuple[str, str]]]:
    def ftype(key: str) -> str | None:
        try:
            return schema.field(key).type if schema is not None else None
        except KeyError:
            return None
    fields = {k: compare_value(ftype(k), f.value) for k, f in doc.fields.items()}
    items = [{k: compare_value(ftype(k), f.value) for k, f in row.items()} for row in doc.items]
    return fields, items, [(p.key, p.value) for p in doc.pairs]


def evaluate_corpus(extractor, records: list[dict], ocr: str = "gt", cache: Path | None = None,
                    use_type: bool = False) -> tuple[Report, list[dict]]:
    """Run `extractor` on each record (GT lines, or real OCR of its image) and score it.
    Returns the report and one row per page (id, predicted type, values) for inspection."""
    from tqdm import tqdm

    from data.document import Document, Line, Page
    from data.schemas import list_schemas, load_schema
    pages = {}
    if ocr == "real":
        from training.trainer import _rid, ocr_records
        pages = ocr_records(records, cache or Path("runs") / "eval_ocr_cache.jsonl", desc="real OCR (eval)")
    report, rows = Report(), []
    for rec in tqdm(records, desc="evaluating", unit="page"):
        if ocr == "real":
            from training.trainer import _rid
            page = pages.get(_rid(rec))
            if page is None:
                continue
        else:
            page = Page(index=0, width=int(rec.get("width") or 1000), height=int(rec.get("height") or 1000),
                        lines=[Line(text=ln["text"],
                                    quad=ln.get("quad") or [[ln["box"][0], ln["box"][1]], [ln["box"][2], ln["box"][1]],
                                                            [ln["box"][2], ln["box"][3]], [ln["box"][0], ln["box"][3]]])
                               for ln in rec.get("lines") or []])
        dt = str(rec.get("doc_type"))
        doc = extractor.extract(Document(source=str(rec.get("image", "")), pages=[page]),
                                doc_type=dt if use_type else None)
        schema = load_schema(dt) if dt in list_schemas() else None
        gf, gi, gp = gold_of(rec, schema)
        pf, pi, pp = pred_of(doc, schema)
        form = dt == "generic_form"
        ps = PageScore(dt, score_fields(gf, pf, gi, pi), score_pairs(gp, pp) if form else None,
                       score_tables(gold_tables(rec), doc.tables) if form else None)
        report.add(ps, doc.doc_type, rec.get("degrade"), rec.get("layout") if dt == "generic_form" else None)
        rows.append({"id": rec.get("id"), "doc_type": dt, "predicted_type": doc.doc_type, "degrade": rec.get("degrade"),
                     "wrong": {k: [gf.get(k), pf.get(k)] for k in set(gf) | set(pf) if gf.get(k) != pf.get(k)}})
    return report, rows


# --- the shared real samples (never trained on) ---------------------------------------------------------

# the hand-made ground truth of metagpt_invoice_1 names fields in Chinese; our schema keys
SAMPLE_FIELD_KEYS = {"发票名称": "title", "发票代码": "invoice_code", "发票号码": "invoice_number",
                     "开票日期": "issue_date", "校验码": "check_code", "机器编号": "machine_number",
                     "购买方名称": "buyer_name", "购买方纳税人识别号": "buyer_tax_id", "销售方名称": "seller_name",
                     "销售方纳税人识别号": "seller_tax_id", "销售方地址电话": "seller_address_phone",
                     "销售方开户行及账号": "seller_bank_account", "合计金额": "total_amount", "合计税额": "total_tax",
                     "价税合计大写": "total_with_tax_in_words", "价税合计小写": "total_with_tax",
                     "收款人": "payee", "复核": "reviewer", "开票人": "drawer"}


def ocr_and_extract(path: str | Path, model_dir: str | Path, doc_type: str | None = None):
    """One file read as the app reads it: through the reading route (reading/route.py `analyse_file`:
    decode, the file's own text or OCR, the file split into documents, extraction). A file that holds
    several documents is scored by its first (`Analysis.parts()[0]`, extracted from the file's first page
    with text alone); the shared samples are one page each, so that is the whole file. A file that
    failed as a whole gives the file document with its `error` (no fields: every gold field missed)."""
    from reading.route import analyse_file
    return analyse_file(str(path), str(model_dir), doc_type).parts()[0]


def evaluate_samples(model_dir: str | Path, samples_dir: str | Path,
                     analyse: Callable[..., Any] = ocr_and_extract) -> dict[str, Any]:
    """Real OCR + extraction on the real mock invoice (field by field) and the real XFUND form (pairs).
    `analyse(path, model_dir, doc_type=None) -> Document` reads one file (default `ocr_and_extract`)."""
    from data.schemas import load_schema
    samples = Path(samples_dir)
    out: dict[str, Any] = {}
    inv = json.loads((samples / "gt" / "metagpt_invoice_1.json").read_text(encoding="utf-8"))
    doc = analyse(str(samples / inv["image"]), str(model_dir))
    schema = load_schema("vat_invoice")
    from data.document import Document
    from reading.route import extract_pages
    # the same OCR'd pages again, told the type: separates type errors from field errors
    forced = extract_pages(doc.pages, doc.source, str(model_dir), doc_type="vat_invoice")

    def rows_of(d: Document) -> list[dict]:
        rows = []
        for zh, want in inv["fields"].items():
            key = SAMPLE_FIELD_KEYS.get(zh)
            if key is None:
                continue
            ftype = schema.field(key).type
            got = d.fields.get(key)
            ok = got is not None and compare_value(ftype, got.value) == compare_value(ftype, want)
            rows.append({"key": key, "label": zh, "want": want, "got": got.value if got else None, "ok": ok})
        return rows
    rows, frows = rows_of(doc), rows_of(forced)
    out["metagpt_invoice_1"] = {"doc_type": doc.doc_type, "doc_type_score": doc.doc_type_score, "fields": rows,
                                "right": sum(r["ok"] for r in rows), "of": len(rows),
                                "right_given_type": sum(r["ok"] for r in frows), "fields_given_type": frows}
    form = json.loads((samples / "gt" / "xfund_zh_val_0.json").read_text(encoding="utf-8"))
    fdoc = analyse(str(samples / form["image"]), str(model_dir), doc_type="generic_form")
    c = score_pairs([(p["key"], p["value"]) for p in form["kv_pairs"]], [(p.key, p.value) for p in fdoc.pairs])
    out["xfund_zh_val_0"] = {"pairs": c.as_dict(), "predicted": [[p.key, p.value] for p in fdoc.pairs],
                             "predicted_type_unforced": None}
    return out


def samples_table(res: dict[str, Any]) -> str:
    inv = res["metagpt_invoice_1"]
    lines = [f"metagpt_invoice_1 (predicted type {inv['doc_type']} {inv['doc_type_score']}): "
             f"{inv['right']}/{inv['of']} fields right; told it is vat_invoice: {inv['right_given_type']}/{inv['of']}"]
    for r in inv["fields_given_type"]:
        lines.append(f"  {'ok ' if r['ok'] else 'BAD'} {r['key']:26s} want {r['want']!s:28s} got {r['got']}")
    p = res["xfund_zh_val_0"]["pairs"]
    lines.append(f"xfund_zh_val_0 pairs: P {p['precision']:.3f} R {p['recall']:.3f} F1 {p['f1']:.3f}")
    return "\n".join(lines)
