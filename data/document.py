"""The one result shape: Document > Page > Line, plus extracted Fields, item rows, key-value Pairs and Tables.

Every entry point (OCR, extraction, the UI, the batch CLI, evaluation) returns or consumes a
`Document`; `Result` is the same class under the name the design uses. JSON is the exchange form:
`Document.to_json()` / `Document.from_json()` round-trip exactly.

Geometry conventions:
- `quad` is four [x, y] points in page pixels, clockwise from the top-left corner of the text.
- `box` is the axis-aligned [x0, y0, x1, y1] in page pixels (x1/y1 exclusive, floats allowed).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

Box = list[float]          # [x0, y0, x1, y1]
Quad = list[list[float]]   # [[x, y]] * 4, clockwise from top-left


_ATOMS = (str, int, float, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(obj: Any) -> Any:
    """dataclasses.asdict, value for value (dataclasses as dicts, lists, tuples and dicts copied, any other
    leaf deep-copied), without deep-copying the strings and numbers that are nearly every leaf of a Document:
    asdict took several ms a page of a few hundred lines, a tenth of reading the page from its text layer."""
    kind = type(obj)
    if kind in _ATOMS:
        return obj
    if kind is list:
        return [plain(v) for v in obj]
    if kind is dict:
        return {plain(k): plain(v) for k, v in obj.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None and is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(obj))
    if names is not None:
        return {name: plain(getattr(obj, name)) for name in names}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):      # a named tuple
        return kind(*[plain(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return kind(plain(v) for v in obj)
    if isinstance(obj, dict):
        return kind((plain(k), plain(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


def display_name(text: str) -> str:
    """A file name (or path) as text that can always be written as UTF-8: unchanged when it is valid
    Unicode, else each undecodable byte (a lone surrogate from os.fsdecode, e.g. a GBK name from a
    Windows zip) written as `\\xNN`. Lossless for display; keep the original str to open the file."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def json_safe(value: Any) -> Any:
    """`value` (dicts, lists, strings...) with every string passed through `display_name`, so that
    json.dumps(..., ensure_ascii=False) of it always encodes as UTF-8."""
    if isinstance(value, str):
        return display_name(value)
    if isinstance(value, dict):
        return {display_name(k) if isinstance(k, str) else k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def quad_to_box(quad: Quad) -> Box:
    if len(quad) == 4:      # every line's box is read from its quad thousands of times a page: no lists built
        a, b, c, d = quad
        return [float(min(a[0], b[0], c[0], d[0])), float(min(a[1], b[1], c[1], d[1])),
                float(max(a[0], b[0], c[0], d[0])), float(max(a[1], b[1], c[1], d[1]))]
    xs = [p[0] for p in quad]
    ys = [p[1] for p in quad]
    return [float(min(xs)), float(min(ys)), float(max(xs)), float(max(ys))]


def box_to_quad(box: Box) -> Quad:
    x0, y0, x1, y1 = (float(v) for v in box)
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def union_box(boxes: list[Box]) -> Box | None:
    boxes = [b for b in boxes if b]
    if not boxes:
        return None
    return [min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes)]


@dataclass
class Line:
    """One text line as OCR (or the generator) sees it."""
    text: str
    quad: Quad
    score: float = 1.0
    label: str | None = None       # optional tag: XFUND-style header/question/answer/other
    # on a page read as a generic form, what the line is (models/extraction/form_line_roles.py ROLES: label,
    # value, header, table_cell, hint, check_box, signature, heading, text); None elsewhere, and then left
    # out of the JSON (an invoice's JSON has no "role")
    role: str | None = None

    @property
    def box(self) -> Box:
        return quad_to_box(self.quad)


@dataclass
class Page:
    index: int                     # 0-based page number within the document
    width: int
    height: int
    lines: list[Line] = field(default_factory=list)
    rotation: int = 0              # degrees the input was turned to come out upright (0/90/180/270)
    rules: list[list[float]] = field(default_factory=list)   # ruled lines [x0, y0, x1, y1] (models/ocr/rulings.py)
    reader: str = "ocr"            # how its text was read: "ocr", "text_layer" (a PDF's own text), "ofd"

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


@dataclass
class Field:
    """One extracted value. `value` is normalised (ISO date, decimal string); `raw` is as read."""
    key: str
    value: str
    raw: str = ""
    score: float = 1.0
    box: Box | None = None
    page: int = 0
    valid: bool | None = None      # True/False from a validator, None where no rule applies
    label: str = ""                # the schema's Chinese label
    span: list[int] | None = None  # [start, end) character offsets into the page text, if known
    review: bool = False           # a person should look: a check failed or the confidence is low (data/validate.py)
    reason: str | None = None      # valid is False: the code of the check it failed (data/validate.py REASON_CODES)
    # the model's own probability, where `score` is the calibrated P(right) (models/calibration.py). None: `score`
    # is not calibrated (the model directory has no calibration, a person typed the value, an older result)
    model_score: float | None = None


@dataclass
class Pair:
    """A key-value pair of a generic form (no schema needed)."""
    key: str
    value: str
    key_box: Box | None = None
    value_box: Box | None = None
    score: float = 1.0
    page: int = 0


@dataclass
class Cell:
    """One cell of a form's table: its text ("" where the cell is blank) and where it stands."""
    text: str = ""
    box: Box | None = None


@dataclass
class Table:
    """A table of a generic form: a header row naming the columns and one record per row under it
    (家庭成员: 称谓 | 姓名 | 出生年月 over a row per person). Every record has one Cell per column. Its
    headers and cells are no key-value pairs: a form's `pairs` never hold a table's lines."""
    columns: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)
    column_boxes: list[Box | None] = field(default_factory=list)
    box: Box | None = None         # the whole table: header and records
    score: float = 1.0
    page: int = 0

    def records(self) -> list[dict[str, str]]:
        """The rows as {column: text}, the flat view used for CSV and Excel (a repeated column name
        gets its position: 姓名, 姓名 (2))."""
        names = []
        for i, c in enumerate(self.columns):
            names.append(c if c not in names else f"{c} ({i + 1})")
        return [{n: cell.text for n, cell in zip(names, row)} for row in self.rows]


@dataclass
class Document:
    source: str = ""
    pages: list[Page] = field(default_factory=list)
    doc_type: str | None = None
    doc_type_score: float | None = None
    fields: dict[str, Field] = field(default_factory=dict)
    items: list[dict[str, Field]] = field(default_factory=list)   # repeated rows (invoice items)
    pairs: list[Pair] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)               # a form's tables (never in pairs)
    signatures: list[Pair] = field(default_factory=list)            # a form's signature block (never in pairs)
    warnings: list[str] = field(default_factory=list)
    # the validator's warnings of the last `data.validate.validate` call, which are also in `warnings`:
    # the next call takes exactly these out before adding its own, so a fixed value's warning goes
    checks: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)       # seconds per stage
    error: dict[str, str] | None = None                           # {"type", "message"} when it failed
    part: int = 1                  # 1-based number of this document among those found in its file
    parts: int = 1                 # how many documents the file holds (a PDF of 3 invoices: 3)
    # every field and item cell valid (or with no check) and above the review threshold, no check warning:
    # nothing asks for a person's look (data/validate.py `straight_through`)
    straight_through: bool = False

    # --- convenience -------------------------------------------------------------------------
    @property
    def lines(self) -> list[Line]:
        return [line for page in self.pages for line in page.lines]

    def page_numbers(self) -> list[int]:
        """1-based numbers, in the file, of this document's pages (a file's second invoice: [2])."""
        return [p.index + 1 for p in self.pages]

    def values(self) -> dict[str, str]:
        """{key: normalised value}, the flat view used for CSV and evaluation."""
        return {k: f.value for k, f in self.fields.items()}

    # --- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = plain(self)
        for page in d["pages"]:
            for line in page["lines"]:
                if line.get("role") is None:
                    line.pop("role", None)       # only a form's lines have one: other JSON stays as it was
        return d

    def to_json(self, **kw: Any) -> str:
        """JSON text that always encodes as UTF-8 (undecodable file-name bytes become \\xNN)."""
        kw.setdefault("ensure_ascii", False)
        return json.dumps(json_safe(self.to_dict()), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Document":
        pages = [Page(index=p["index"], width=p["width"], height=p["height"],
                      lines=[Line(**ln) for ln in p.get("lines", [])],
                      rotation=p.get("rotation", 0), rules=[list(r) for r in p.get("rules", [])],
                      reader=p.get("reader", "ocr"))
                 for p in d.get("pages", [])]
        return cls(
            source=d.get("source", ""),
            pages=pages,
            doc_type=d.get("doc_type"),
            doc_type_score=d.get("doc_type_score"),
            fields={k: Field(**v) for k, v in d.get("fields", {}).items()},
            items=[{k: Field(**v) for k, v in row.items()} for row in d.get("items", [])],
            pairs=[Pair(**p) for p in d.get("pairs", [])],
            tables=[Table(columns=list(t.get("columns", [])),
                          rows=[[Cell(**c) for c in row] for row in t.get("rows", [])],
                          column_boxes=list(t.get("column_boxes", [])), box=t.get("box"),
                          score=t.get("score", 1.0), page=t.get("page", 0))
                    for t in d.get("tables", [])],
            signatures=[Pair(**p) for p in d.get("signatures", [])],
            warnings=list(d.get("warnings", [])),
            checks=list(d.get("checks", [])),
            timings=dict(d.get("timings", {})),
            error=d.get("error"),
            part=int(d.get("part", 1)),
            parts=int(d.get("parts", 1)),
            straight_through=bool(d.get("straight_through", False)),
        )

    @classmethod
    def from_json(cls, s: str) -> "Document":
        return cls.from_dict(json.loads(s))


Result = Document
