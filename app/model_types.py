"""The document types a model directory can extract, for the UI's type chooser and `--type` checks.

A model extracts the types its head was trained on: `doc_types` in its config.json (models/model_dir.py),
each described by the schema file it carries in MODEL/schemas/ (the repo's data/schemas/ only as a
fallback for old directories). So a model retrained with a new type offers that type, and types the
repo has schemas for but the model never saw (e.g. business_licence for models/default) are not
offered. Reads config.json and a schema file; loading the weights is not needed.
"""
from __future__ import annotations

from pathlib import Path


class UnknownTypeError(ValueError):
    """`--type` names a type the chosen model does not know; the message lists the ones it does."""


def default_model_dir() -> Path:
    from models.model_dir import DEFAULT_MODEL_DIR
    return DEFAULT_MODEL_DIR


def model_doc_types(model_dir: str | Path | None) -> list[str]:
    """Doc types of a model directory in its own order ([] when it is no model directory)."""
    from models.model_dir import ExtractorConfig, ModelDirError
    try:
        return [str(t) for t in ExtractorConfig.load(Path(model_dir) if model_dir else default_model_dir()).doc_types]
    except ModelDirError:
        return []


def model_type_label(model_dir: str | Path | None, doc_type: str) -> str:
    """"中文名 (name)" from the model's own schema file, else the repo's, else just the name."""
    from models.model_dir import model_schema
    try:
        schema = model_schema(Path(model_dir) if model_dir else default_model_dir(), doc_type)
    except Exception:    # a type without any readable schema still shows, by its name
        return doc_type
    return f"{schema.label} ({schema.name})"


def check_doc_type(doc_type: str | None, model_dir: str | Path | None) -> None:
    """Raise UnknownTypeError unless `doc_type` is None or one of the model's types."""
    if doc_type is None:
        return
    known = model_doc_types(model_dir)
    if doc_type not in known:
        where = model_dir or "the bundled models/default"
        raise UnknownTypeError(
            f"--type {doc_type}: the model {where} was not trained on this document type; choose one of "
            f"{', '.join(known) or '(none listed in its labels.json)'}, leave --type out to let the model "
            f"decide, or retrain with `python -m training retrain` to add the type")
