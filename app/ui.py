"""The upload UI: `streamlit run app/ui.py` (scripts/run.sh starts it).

Drop photos, scans or PDFs; each page is shown with its OCR lines and extracted fields drawn as
coloured boxes, next to an editable table of the fields. Corrected values are re-normalised and
re-validated at once; the result downloads as JSON or CSV, and "Save corrections" stores the page as a
training example (app/ui_corrections.py) in the one folder the server sets ($PIAOJU_CORRECTIONS_DIR,
else runs/corrections): the sidebar shows it, a visitor cannot change it.

Served on 127.0.0.1 with the upload limit and no usage statistics by .streamlit/config.toml (read from
the directory Streamlit starts in: the repository root, as scripts/run.sh does).
"""
from __future__ import annotations

import hashlib
import sys
from dataclasses import replace as dc_replace
from pathlib import Path

# `streamlit run app/ui.py` puts app/ on sys.path, not the repository root that our packages live in.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.disable_static()   # dygraph mode; the models themselves run on their own thread, which ensures it too
                          # (models/runtime.py: Streamlit runs every rerun on a new thread)

import streamlit as st  # noqa: E402

from app import pipeline  # noqa: E402
from app.batch_inputs import DOCUMENT_SUFFIXES  # noqa: E402
from app.model_types import model_doc_types, model_type_label  # noqa: E402
from app.ui_corrections import CORRECTIONS_ENV, corrections_dir, save_correction  # noqa: E402
from app.ui_fields import (  # noqa: E402
    COL_KEY,
    EDITABLE,
    apply_edits,
    document_csv,
    error_in_words,
    fields_frame,
    lines_frame,
    schema_label,
)
from app.ui_view import legend_html, page_overlay, timings_text  # noqa: E402
from data.document import Document, Page  # noqa: E402
from data.io import MAX_FILE_BYTES, size_advice, sniff  # noqa: E402

UPLOAD_TYPES = [s.lstrip(".") for s in DOCUMENT_SUFFIXES]
AUTO = "自动识别 Automatic"
OCR_ONLY = "OCR only (no extraction model installed)"


def upload_limit_mb() -> int:
    """The per-file upload limit in MB: Streamlit's server.maxUploadSize (25 in .streamlit/config.toml),
    which the drop zone states and the server enforces, capped by what data/io.py reads at all. One
    number, so the drop zone, the label and the app's own check never disagree."""
    return min(int(st.get_option("server.maxUploadSize")), MAX_FILE_BYTES // 2**20)


# --- models and choices ------------------------------------------------------------------------------

@st.cache_resource(show_spinner="Loading the OCR and extraction models (first time only)…")
def load_models(model_dir: str | None) -> bool:
    pipeline.warm_up(model_dir)
    return True


@st.cache_data(show_spinner=False)
def model_choices() -> list[str]:
    try:
        from models.extractor import find_model_dirs
    except ImportError:
        return []
    dirs = list(find_model_dirs())
    runs = ROOT / "runs"
    if runs.is_dir():
        dirs += [d for d in find_model_dirs(runs) if d not in dirs]
    return [str(d) for d in dirs]


@st.cache_data(show_spinner=False)
def type_choices(model: str | None) -> dict[str, str]:
    """{doc type: label} the selected model was trained on (its labels.json and schemas/), so a
    retrained model's new type shows and types it never saw do not; none without a model."""
    if model is None:
        return {}
    return {t: model_type_label(model, t) for t in model_doc_types(model)}


def sidebar() -> tuple[str | None, str | None, str]:
    st.sidebar.header("设置 Settings")
    models = model_choices()
    if models:
        model = st.sidebar.selectbox("Model 模型", models, format_func=lambda p: Path(p).name,
                                     help="Model directories found under models/ and runs/")
    else:
        st.sidebar.selectbox("Model 模型", [OCR_ONLY], disabled=True)
        model = None
    types = type_choices(model)
    choice = st.sidebar.selectbox("Document type 文档类型", [AUTO] + list(types),
                                  format_func=lambda t: types.get(t, t),
                                  help="Automatic: the model decides and shows its confidence. "
                                       "Listed: the types the selected model was trained on")
    corrections = str(corrections_dir())
    st.sidebar.text_input("Corrections are saved in 纠正保存目录", corrections, disabled=True,
                          help="Corrected pages are written here as a training corpus (corpus.jsonl + "
                               f"images/). Set on the server ({CORRECTIONS_ENV}), not in the browser")
    st.sidebar.caption(f"Files: {', '.join(UPLOAD_TYPES)}; up to {upload_limit_mb()} MB each. "
                       "PDF and multi-page TIFF pages are all read.")
    return model, (None if choice == AUTO else choice), corrections


# --- processing --------------------------------------------------------------------------------------

def analyse_upload(name: str, data: bytes, model: str | None, doc_type: str | None) -> dict:
    """Process one upload once per (content, model, type); the result lives in the session. A failed
    result (the file's document has an `error`) is never kept: the next rerun, or removing and adding
    the file again, reads it afresh instead of showing a stale failure (a transient model error used to
    stick to the file's content for the whole session)."""
    key = f"{hashlib.sha256(data).hexdigest()[:16]}|{model}|{doc_type}"
    cache = st.session_state.setdefault("analyses", {})
    if key in cache:
        return cache[key]
    if not data:
        result = {"key": key, "name": name, "error": {"type": "InputError",
                                                      "message": f"{name} is empty (0 bytes); upload the file again"}}
    elif len(data) > upload_limit_mb() * 2**20:
        result = {"key": key, "name": name, "error": {
            "type": "InputError",
            "message": f"{name} is {len(data) / 2**20:.1f} MB, above the {upload_limit_mb()} MB limit; "
                       f"{size_advice(sniff(data[:1024]))}, or use the batch command (python -m app batch)"}}
    else:
        bar = st.progress(0.0, text=f"Reading {name}…")

        def on_page(done: int, total: int) -> None:
            bar.progress(done / total, text=f"{name}: page {done} of {total} read")

        analysis = pipeline.analyse_bytes(data, name, model, doc_type, on_page=on_page)
        bar.empty()
        result = {"key": key, "name": name, "analysis": analysis, "corrected": analysis.document,
                  "version": 0, "error": analysis.document.error}
    if not result.get("error"):
        cache[key] = result
    return result


# --- one document ------------------------------------------------------------------------------------

def show_header(result: dict) -> None:
    doc = result["corrected"]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Document type 类型", schema_label(doc.doc_type) if doc.doc_type else "not detected")
    c2.metric("Confidence 置信度", "—" if doc.doc_type_score is None else f"{doc.doc_type_score:.0%}")
    c3.metric("Pages 页数", len(doc.pages))
    c4.metric("Fields 字段", len(doc.fields))


def show_page(result: dict, page_index: int) -> None:
    """Page `page_index` (its position in the document's pages) drawn on its preview, beside the
    fields read on it. Images, fields and the page picker use the page's index in the file."""
    analysis = result["analysis"]
    doc = result["corrected"]
    page = doc.pages[page_index]
    left, right = st.columns([3, 2], gap="large")
    with left:
        if page.index < len(analysis.images):
            image = page_overlay(analysis.image(page.index), page, doc)
            st.image(image, channels="BGR", caption=f"{doc.source} — page {page.index + 1}: "
                                                    f"{len(page.lines)} text lines", width="stretch")
        st.markdown(legend_html(doc, page.index), unsafe_allow_html=True)
    with right:
        frame = fields_frame(doc, page.index)
        if frame.empty:
            st.subheader("Text lines 文本行")
            st.info("No fields were extracted on this page; these are the text lines OCR read.")
            st.dataframe(lines_frame(page), hide_index=True, width="stretch")
        else:
            st.subheader("Fields 字段")
            st.caption("Edit a value in the 识别值 column to correct it; it is re-checked at once.")
            edited = st.data_editor(
                frame, key=f"edit-{result['key']}-{page_index}-{result['version']}",
                hide_index=True, width="stretch", num_rows="fixed",
                disabled=[c for c in frame.columns if c not in EDITABLE],
                column_config={COL_KEY: None})
            corrected, changed = apply_edits(doc, edited)
            if changed:
                result["corrected"] = corrected
                result["version"] += 1
                result.setdefault("changed", set()).update(changed)
                st.rerun()
        if result.get("changed"):
            st.caption("Corrected by you: " + ", ".join(sorted(result["changed"])))
        for warning in doc.warnings:
            st.warning(warning)
        st.caption(timings_text(doc.timings))
    with st.expander(f"OCR text of page {page.index + 1} ({len(page.lines)} lines)"):
        st.text(page.text or "(no text found)")


def _page_for_saving(doc: Document, page_index: int) -> tuple[Document, int]:
    """(document, page position) as save_correction reads them: the position in `doc.pages` must also be
    the page number its fields carry. A document found later in a file (its page 3 alone) is given
    as a copy holding that page as page 0, with its fields on it."""
    page = doc.pages[page_index]
    if page.index == page_index:
        return doc, page_index
    fields = {k: dc_replace(f, page=0) for k, f in doc.fields.items() if f.page == page.index}
    return dc_replace(doc, pages=[dc_replace(page, index=0)], fields=fields, items=[], pairs=[]), 0


def _full_page(result: dict, page: Page, data: bytes | None) -> np.ndarray:
    """The full-size upright page for a training example: decoded again from the upload (the UI keeps
    only previews); the kept image when the upload's bytes are not at hand."""
    if data:
        return pipeline.page_image(data, result["name"], page.index, page.rotation)
    return result["analysis"].image(page.index)


def show_actions(result: dict, page_index: int, corrections_dir: str, data: bytes | None = None) -> None:
    doc = result["corrected"]
    stem = Path(result["name"]).stem + (f"_document{doc.part}" if doc.parts > 1 else "")
    c1, c2, c3 = st.columns(3)
    c1.download_button("Download JSON", doc.to_json(indent=2).encode("utf-8"), f"{stem}.json",
                       "application/json", width="stretch")
    c2.download_button("Download CSV", document_csv(doc, result["name"]), f"{stem}.csv", "text/csv",
                       width="stretch")
    if c3.button("Save corrections 保存纠正", width="stretch",
                 help=f"Adds page {doc.pages[page_index].index + 1} with its current field values to the "
                      f"training corpus in {corrections_dir}"):
        try:
            image = _full_page(result, doc.pages[page_index], data)
            path = save_correction(*_page_for_saving(doc, page_index), image, corrections_dir)
        except (OSError, ValueError) as exc:
            st.error(f"Could not save the corrections: {exc}. The folder is set on the server "
                     f"({CORRECTIONS_ENV}); ask whoever runs it.")
        else:
            st.success(f"Saved page {doc.pages[page_index].index + 1} as a training example in {path}")


def part_view(result: dict) -> dict:
    """What the page, table and buttons show for an upload: the upload itself when its file holds one
    document; else the document picked from those found in the file, with its own corrections state
    (one view per document, kept in the session with the upload)."""
    parts = result["analysis"].parts()
    if len(parts) <= 1:
        return result
    n = len(parts)
    pages = [", ".join(map(str, d.page_numbers())) for d in parts]
    st.info(f"This file holds {n} documents; each was read from its own page(s) "
            "(blank pages are skipped). Pick one to check and correct it.")
    overview = [{"#": d.part, "页 Pages": pages[i], "类型 Type": schema_label(d.doc_type) if d.doc_type else "—",
                 "字段 Fields": len(d.fields), "错误 Error": (d.error or {}).get("message", "")}
                for i, d in enumerate(parts)]
    st.dataframe(overview, hide_index=True, width="stretch")
    chosen = st.selectbox("Document in this file 文件内文档", range(n),
                          format_func=lambda i: f"Document {i + 1} of {n} — page {pages[i]}",
                          key=f"part-{result['key']}")
    views = result.setdefault("views", {})
    if chosen not in views:
        views[chosen] = {"key": f"{result['key']}|{chosen + 1}", "name": result["name"],
                         "analysis": result["analysis"], "corrected": parts[chosen], "version": 0}
    return views[chosen]


def show_document(result: dict, corrections_dir: str, data: bytes | None = None) -> None:
    if result.get("error"):
        st.error(error_in_words(result["error"]))
        if not result.get("analysis") or not result["analysis"].document.pages:
            return
    view = part_view(result)
    if view is not result and view["corrected"].error:
        st.error(error_in_words(view["corrected"].error))
    show_header(view)
    doc = view["corrected"]
    pages = len(doc.pages)
    page_index = 0
    if pages > 1:
        page_index = st.selectbox("Page 页", range(pages),
                                  format_func=lambda i: f"Page {i + 1} of {pages}" if doc.parts <= 1
                                  else f"Page {doc.pages[i].index + 1} of the file",
                                  key=f"page-{view['key']}")
    show_page(view, page_index)
    show_actions(view, page_index, corrections_dir, data)


# --- the app -----------------------------------------------------------------------------------------

def main() -> None:
    st.set_page_config(page_title="文档识别 Document reader", page_icon="📄", layout="wide")
    model, doc_type, corrections_dir = sidebar()
    st.title("文档识别 Document reader")
    st.caption("Invoices, ID cards, licences, tickets, receipts and forms: upload, check, correct, export.")
    uploads = st.file_uploader(f"Upload images or PDFs (up to {upload_limit_mb()} MB each)", type=UPLOAD_TYPES,
                               accept_multiple_files=True)
    if not uploads:
        st.info("Drop one or more photos, scans or PDFs above to read them.")
        return
    try:
        load_models(model)
    except (OSError, RuntimeError, ValueError) as exc:
        st.error(f"The models could not be loaded: {exc}")
        return
    results = []
    for upload in uploads:
        results.append(analyse_upload(upload.name, upload.getvalue(), model, doc_type))
    failed = [r for r in results if r.get("error")]
    if len(results) > 1 and failed:     # every failure in view, not only the chosen file's
        st.error(f"{len(failed)} of {len(results)} files could not be read:\n"
                 + "\n".join(f"- **{r['name']}**: {error_in_words(r['error'])}" for r in failed))
    if len(results) > 1:
        names = [f"{r['name']}{' — failed' if r.get('error') else ''}" for r in results]
        chosen = st.selectbox("Document 文档", range(len(results)), format_func=lambda i: names[i])
    else:
        chosen = 0
    st.divider()
    show_document(results[chosen], corrections_dir, uploads[chosen].getvalue())


main()
