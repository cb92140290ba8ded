"""The upload UI: `streamlit run app/ui/main.py` (scripts/run.sh starts it).

Drop photos, scans or PDFs. Each page is shown on the left with its OCR lines, fields (each its own
colour), line-item cells and form pairs drawn on it (a form's lines outlined in their role's colour, a
行角色 Line roles toggle above to switch that off); on the right, at full height, tabs hold the
editable field table (a failed check colours its row and says why, in Chinese), the editable line items
(cells, rows added and deleted), the form's editable key-value pairs, its tables (a tab only where the page
has one; read-only) and the OCR text. Picking a field, an item row or a pair highlights its box and zooms
the page to it. Corrected values are re-normalised and the document re-validated from scratch at once.
Downloads: JSON, a CSV of fields, a CSV of items, one Excel
workbook (app/ui/export.py) and, where a form has tables, a CSV of their cells, for one document or the
whole upload. A page marked 已核对 (checked) can be saved as a training example (app/ui/corrections.py) in the
one folder the server sets ($PIAOJU_CORRECTIONS_DIR, else runs/corrections): the sidebar shows it, a
visitor cannot change it; unchecked pages are never saved. Below, the retrain panel
(app/ui/retrain_panel.py) counts the saved pages against what a retrain needs and starts one.

Served on 127.0.0.1 with the upload limit and no usage statistics by .streamlit/config.toml (read from
the directory Streamlit starts in: the repository root, as scripts/run.sh does).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# `streamlit run app/ui/main.py` puts app/ui/ on sys.path, not the repository root that our packages live in.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.offline import stay_offline  # noqa: E402

stay_offline()   # first: no onnxruntime telemetry from the server process (models/offline.py)

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.disable_static()   # dygraph mode; the models themselves run on their own thread, which ensures it too
                          # (models/runtime.py: Streamlit runs every rerun on a new thread)

import streamlit as st  # noqa: E402

from app.batch.inputs import DOCUMENT_SUFFIXES  # noqa: E402
from app.model_types import model_doc_types, model_type_label  # noqa: E402
from app.register import REGISTER_ENV, RegisterError  # noqa: E402
from app.ui import retrain_panel  # noqa: E402
from app.ui.corrections import CORRECTIONS_ENV, corrections_dir, save_correction  # noqa: E402
from app.ui.export import (  # noqa: E402
    XLSX_MIME,
    export_json,
    fields_csv,
    items_csv,
    session_duplicates,
    tables_csv,
    workbook,
)
from app.ui.fields import (  # noqa: E402
    COL_CHECK,
    COL_ITEM_CHECK,
    COL_KEY,
    COL_LABEL,
    COL_NORM,
    COL_PAGE,
    COL_ROW,
    COL_SCORE,
    COL_VALUE,
    EDITABLE,
    apply_edits,
    apply_item_edits,
    apply_pair_edits,
    error_in_words,
    failed_rows_style,
    fields_frame,
    items_frame,
    lines_frame,
    load_schema_or_none,
    pairs_frame,
    schema_label,
    table_frames,
)
from app.ui.review_queue import files_order, queue_label, queue_order  # noqa: E402
from app.ui.view import legend_html, page_overlay, timings_text, zoom_crop  # noqa: E402
from app.ui.words import warning_words  # noqa: E402
from data.document import Box, Document, Page  # noqa: E402
from data.io import MAX_FILE_BYTES, size_advice, sniff  # noqa: E402
from reading import route  # noqa: E402

UPLOAD_TYPES = [s.lstrip(".") for s in DOCUMENT_SUFFIXES]
AUTO = "自动识别 Automatic"
OCR_ONLY = "仅文字识别（未安装抽取模型） OCR only (no extraction model installed)"
LATEST = "latest|"          # a model choice that follows a registry's `latest` pointer: latest|<registry>|<name>
NOTHING = ""                # the "find on page" choice that highlights nothing
# Streamlit's Deploy button and its developer menu mean nothing to a clerk: hidden (also
# client.toolbarMode in .streamlit/config.toml). The page uses the window's width.
CHROME_CSS = """<style>
[data-testid="stAppDeployButton"], [data-testid="stMainMenu"], [data-testid="stToolbarActions"]
  {display: none !important;}
.block-container {padding-top: 2rem; padding-left: 1.5rem; padding-right: 1.5rem; max-width: 100%;}
</style>"""
STAGE_WORDS = {"decode": ("解码页面", "decoding the page", 0.0),
               "ocr": ("文字检测与识别", "OCR: detecting and recognising text", 0.1),
               "detect": ("检测文字位置", "OCR: detecting text", 0.1),
               "recognise": ("识别文字", "OCR: recognising text", 0.35),
               "extract": ("字段抽取", "extracting fields", 0.8)}


def upload_limit_mb() -> int:
    """The per-file upload limit in MB: Streamlit's server.maxUploadSize (25 in .streamlit/config.toml),
    which the drop zone states and the server enforces, capped by what data/io.py reads at all. One
    number, so the drop zone, the label and the app's own check never disagree."""
    return min(int(st.get_option("server.maxUploadSize")), MAX_FILE_BYTES // 2**20)


# --- models and choices ------------------------------------------------------------------------------

@st.cache_resource(show_spinner="正在加载识别模型（仅第一次）Loading the OCR and extraction models (first time only)…")
def load_models(model_dir: str | None) -> bool:
    route.warm_up(model_dir)
    return True


def _internal(path: Path) -> bool:
    """A work folder of training or retraining (models/registry/.work/..., any hidden folder): never
    offered as a model even though it holds one."""
    return any(part.startswith(".") for part in path.parts)


@st.cache_data(ttl=30, show_spinner=False)
def model_choices() -> list[str]:
    """Models to offer: the bundled default, each registry name's `latest` (followed when used, so a
    promotion shows without a restart), then every other model directory under models/ and runs/,
    work folders left out. Cached for 30 s; the sidebar's refresh button clears it."""
    try:
        from models.extractor import find_model_dirs
    except ImportError:
        return []
    dirs = list(find_model_dirs())
    runs = ROOT / "runs"
    if runs.is_dir():
        dirs += [d for d in find_model_dirs(runs) if d not in dirs]
    dirs = [d for d in dirs if not _internal(d)]
    from training.model_registry import REGISTRY_DIR, ModelRegistry
    registries = {d.parent for d in dirs if d.parent.name == REGISTRY_DIR}
    if (ROOT / "models" / REGISTRY_DIR).is_dir():
        registries.add(ROOT / "models" / REGISTRY_DIR)
    latest = [f"{LATEST}{reg}|{name}" for reg in sorted(registries)
              for name in ModelRegistry(reg.parent).names() if ModelRegistry(reg.parent).latest(name)]
    return [str(d) for d in dirs[:1]] + latest + [str(d) for d in dirs[1:]]


def resolve_model(choice: str | None) -> str | None:
    """The model directory a choice stands for now (a `latest` choice: where its pointer points)."""
    if not choice or not choice.startswith(LATEST):
        return choice
    from training.model_registry import ModelRegistry
    _, registry, name = choice.split("|", 2)
    target = ModelRegistry(Path(registry).parent).latest(name)
    return str(target) if target else None


def model_name(choice: str) -> str:
    if choice.startswith(LATEST):       # the label stays when the pointer moves, so the choice is kept
        return f"{choice.split('|', 2)[2]} · latest 最新"
    path = Path(choice)
    try:
        from models.extractor import DEFAULT_MODEL_DIR
        if path == DEFAULT_MODEL_DIR.resolve():
            return "default · 内置模型 bundled"
    except ImportError:
        pass
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return path.name


@st.cache_data(ttl=30, show_spinner=False)
def model_summary(model: str) -> str:
    """What the selected model directory holds (models/model_dir.py `describe_model_dir`), or why it
    cannot be used."""
    from models.model_dir import ModelDirError, describe_model_dir
    try:
        return describe_model_dir(model).summary()
    except ModelDirError as exc:
        return f"不能使用此模型 This model cannot be used: {exc}"


@st.cache_data(show_spinner=False)
def type_choices(model: str | None) -> dict[str, str]:
    """{doc type: label} the selected model was trained on (its labels.json and schemas/), so a
    retrained model's new type shows and types it never saw do not; none without a model."""
    if model is None:
        return {}
    return {t: model_type_label(model, t) for t in model_doc_types(model)}


def sidebar() -> tuple[str | None, str | None, str]:
    st.sidebar.header("设置 Settings")
    if st.sidebar.button("↻ 刷新模型列表 Refresh models", help="重新查找模型（新训练或新发布的 latest）"
                         " Look for models again (a new version, a moved `latest`)"):
        model_choices.clear()
        type_choices.clear()
    models = model_choices()
    if models:
        choice = st.sidebar.selectbox("模型 Model", models, format_func=model_name, key="model",
                                      help="models/ 与 runs/ 下的模型；latest 跟随注册表的最新发布版本 "
                                           "Models under models/ and runs/; `latest` follows the registry")
        model = resolve_model(choice)
        if choice.startswith(LATEST):
            st.sidebar.caption(f"latest → {Path(model).name if model else '—'}")
        if model:
            st.sidebar.caption(model_summary(model))
    else:
        st.sidebar.selectbox("模型 Model", [OCR_ONLY], disabled=True)
        model = None
    types = type_choices(model)
    choice = st.sidebar.selectbox("文档类型 Document type", [AUTO] + list(types),
                                  format_func=lambda t: types.get(t, t),
                                  help="自动：由模型判断并显示置信度；列出的是所选模型训练过的类型 Automatic: the "
                                       "model decides and shows its confidence. Listed: the types the selected "
                                       "model was trained on")
    corrections = str(corrections_dir())
    st.sidebar.text_input("纠正保存目录 Corrections are saved in", corrections, disabled=True,
                          help="已核对的页作为训练语料保存在这里 Checked pages are written here as a training corpus "
                               f"(corpus.jsonl + images/). Set on the server ({CORRECTIONS_ENV}), not in the browser")
    st.sidebar.caption(f"文件 Files: {', '.join(UPLOAD_TYPES)}; 每个最多 up to {upload_limit_mb()} MB each. "
                       "PDF 与多页 TIFF 的每一页都会读取 Every page of a PDF or TIFF is read.")
    return model, (None if choice == AUTO else choice), corrections


# --- processing --------------------------------------------------------------------------------------

def analyse_upload(name: str, data: bytes, model: str | None, doc_type: str | None,
                   file_no: int = 1, files: int = 1) -> dict[str, Any]:
    """Process one upload once per (content, model, type); the result lives in the session. A failed
    result (the file's document has an `error`) is never kept: the next rerun, or removing and adding
    the file again, reads it afresh instead of showing a stale failure (a transient model error used to
    stick to the file's content for the whole session). While it runs, a bar names the file (n of N),
    the page (n of N) and the stage."""
    key = f"{hashlib.sha256(data).hexdigest()[:16]}|{model}|{doc_type}"
    cache = st.session_state.setdefault("analyses", {})
    if key in cache:
        return cache[key]
    result: dict[str, Any]
    if not data:
        result = {"key": key, "name": name, "error": {"type": "InputError",
                                                      "message": f"{name} is empty (0 bytes); upload the file again"}}
    elif len(data) > upload_limit_mb() * 2**20:
        result = {"key": key, "name": name, "error": {
            "type": "InputError",
            "message": f"{name} is {len(data) / 2**20:.1f} MB, above the {upload_limit_mb()} MB limit; "
                       f"{size_advice(sniff(data[:1024]))}, or use the batch command (python -m app batch)"}}
    else:
        where = f"文件 {file_no}/{files} file {file_no} of {files}: {name}"
        bar = st.progress(0.0, text=f"{where} · 读取中 reading…")

        def on_stage(stage: str, page: int, total: int) -> None:
            zh, en, at = STAGE_WORDS.get(stage, (stage, stage, 0.0))
            done = (file_no - 1 + (page - 1 + at) / max(total, 1)) / files
            bar.progress(min(done, 1.0), text=f"{where} · 第 {page}/{total} 页 page {page} of {total} · {zh} {en}…")

        def on_page(done: int, total: int) -> None:
            bar.progress(min((file_no - 1 + done / max(total, 1)) / files, 1.0),
                         text=f"{where} · 第 {done}/{total} 页已完成 page {done} of {total} done")

        analysis = route.analyse_bytes(data, name, model, doc_type, on_page=on_page, on_stage=on_stage)
        bar.empty()
        result = {"key": key, "name": name, "analysis": analysis, "error": analysis.document.error, "model": model}
        document_views(result)
    if not result.get("error"):
        cache[key] = result
    return result


# --- one document ------------------------------------------------------------------------------------

def show_header(view: dict) -> None:
    """Type and confidence in full (the type's Chinese name and key wrap, never cut), then counts."""
    doc = view["corrected"]
    label = schema_label(doc.doc_type) if doc.doc_type else "未识别 not detected"
    c1, c2, c3, c4, c5, c6, *c7 = st.columns([4, 2, 1, 1, 1, 1] + ([1] if doc.tables else []))
    c1.markdown(f"<div style='font-size:0.875rem'>文档类型 Document type</div>"
                f"<div style='font-size:1.6rem;line-height:1.25'>{label}</div>", unsafe_allow_html=True)
    if doc.straight_through:
        c1.markdown(":green-badge[✓ 直通 Straight-through]",
                    help="每个字段都通过校验（或无校验规则）且置信度高于核对阈值：无需逐项核对 "
                         "Every field is valid (or has no check) and above the review threshold")
    c2.metric("置信度 Confidence", "—" if doc.doc_type_score is None else f"{doc.doc_type_score:.0%}",
              help="模型对文档类型的把握；手动选择类型时也显示 The model's confidence in the type")
    c3.metric("页 Pages", len(doc.pages))
    c4.metric("字段 Fields", len(doc.fields))
    c5.metric("明细 Items", len(doc.items))
    c6.metric("键值对 Pairs", len(doc.pairs))
    if c7:
        c7[0].metric("表格 Tables", len(doc.tables))


def find_targets(doc: Document, page: Page) -> dict[str, tuple[str, list[Box]]]:
    """What "find on page" offers on this page: {id: (label, boxes)} for each field with a box, each
    line item with a boxed cell, each form pair and each form table with a box."""
    targets: dict[str, tuple[str, list[Box]]] = {}
    for key, f in doc.fields.items():
        if f.page == page.index and f.box:
            targets[f"field:{key}"] = (f"字段 {f.label or key}", [f.box])
    for i, row in enumerate(doc.items):
        boxes = [f.box for f in row.values() if f.page == page.index and f.box]
        if boxes:
            name = row["name"].value if "name" in row else ""
            targets[f"item:{i}"] = (f"明细第 {i + 1} 行 item {i + 1} {name}".strip(), boxes)
    for i, p in enumerate(doc.pairs):
        boxes = [b for b in (p.key_box, p.value_box) if b]
        if p.page == page.index and boxes:
            targets[f"pair:{i}"] = (f"{p.key}：{p.value}", boxes)
    for i, t in enumerate(doc.tables):
        if t.page == page.index and t.box:
            targets[f"table:{i}"] = (f"表格 {i + 1} Table {i + 1}", [t.box])
    return targets


def _table_height(rows: int) -> int:
    """Every row visible without an inner scroll bar, up to a screen's worth."""
    return min(38 + 35 * max(rows, 1), 900)


def show_fields_tab(view: dict, page: Page, picked: str = NOTHING) -> None:
    doc = view["corrected"]
    frame = fields_frame(doc, page.index)
    if frame.empty:
        st.info("此页没有抽取到字段。" + ("这是表单：见“键值对”。 This is a form: see the pairs tab." if doc.pairs else
                                    "见“文本”中的 OCR 文字。 No fields on this page: see the text tab."))
        return
    st.caption("在“识别值”列改正数值，立即重新校验。 Correct a value in the 识别值 Value column; it is checked again "
               "at once. 校验未通过的行标红 Rows that fail a check are red.")
    multi_page = len(doc.pages) > 1
    edited = st.data_editor(
        failed_rows_style(frame, picked.split(":", 1)[1] if picked.startswith("field:") else None),
        key=f"edit-{view['key']}-{page.index}-{view['version']}",
        hide_index=True, width="stretch", num_rows="fixed", height=_table_height(len(frame)),
        disabled=[c for c in frame.columns if c not in EDITABLE],
        column_config={COL_KEY: None, COL_PAGE: st.column_config.NumberColumn(width=50) if multi_page else None,
                       COL_LABEL: st.column_config.TextColumn(width=140),
                       COL_VALUE: st.column_config.TextColumn(width=180),
                       COL_NORM: st.column_config.TextColumn(width=120),
                       COL_SCORE: st.column_config.TextColumn(width=110),
                       COL_CHECK: st.column_config.TextColumn(width=240)})
    # checked with the model's own schema; a value typed into an empty row belongs to this page
    corrected, changed = apply_edits(doc, edited, view.get("model"), page.index)
    if changed:
        view["corrected"] = corrected
        view["version"] += 1
        view.setdefault("changed", set()).update(changed)
        st.rerun()


def _apply_table_edits(view: dict, corrected: Document, changed: list[str]) -> None:
    """Keep an items or pairs table's edits: the view's document replaced by the corrected copy (validated
    again from scratch), the tables drawn anew (their widget keys carry the version), what changed named."""
    if changed:
        view["corrected"] = corrected
        view["version"] += 1
        view.setdefault("changed", set()).update(changed)
        st.rerun()


def show_items_tab(view: dict, page: Page) -> None:
    """The page's line items in an editor: change a cell, add a row at the bottom, delete a row (select it,
    then the bin). Each change validates the document again, as a field edit does; the find-on-page
    picker on the left finds a row on the page."""
    doc = view["corrected"]
    frame = items_frame(doc, page.index)
    schema = load_schema_or_none(doc.doc_type, view.get("model"))
    if frame.empty and not (schema and schema.item_keys()):        # rows can be added where the type has items
        st.info("此页没有明细行。 No line items on this page.")
        return
    st.caption("改正单元格、在末尾添加行或删除行，立即重新校验。 Correct a cell, add a row at the bottom or "
               "delete one; it is checked again at once. 用左侧“定位”在页面上查找一行 Use “Find on page” to see a row.")
    widths = {"名称 Name": 150, "规格型号 Spec": 80, "单位 Unit": 60, "数量 Qty": 60, "单价 Price": 95,
              "金额 Amount": 90, "税率 Rate": 60, "税额 Tax": 80, "校验 Check": 100}
    edited = st.data_editor(
        failed_rows_style(frame), key=f"items-{view['key']}-{page.index}-{view['version']}", hide_index=True,
        width="stretch", num_rows="dynamic", height=_table_height(len(frame) + 1),
        disabled=[COL_ROW, COL_ITEM_CHECK],
        column_config={COL_ROW: None, **{c: st.column_config.TextColumn(width=w) for c, w in widths.items()
                                         if c in frame.columns}})
    _apply_table_edits(view, *apply_item_edits(doc, edited, view.get("model"), page.index))


def show_pairs_tab(view: dict, page: Page) -> None:
    """A form's key-value pairs on this page in an editor: change a key or a value, add a pair at the
    bottom, delete one. Each change is kept at once (and saved with the page when it is checked)."""
    doc = view["corrected"]
    frame = pairs_frame(doc, page.index)
    if frame.empty and doc.doc_type != "generic_form":
        st.info("此页没有键值对（表单的“问题 → 回答”）。 No key-value pairs on this page.")
        return
    st.caption("改正键或值、在末尾添加或删除键值对。 Correct a key or a value, add a pair at the bottom or delete one.")
    edited = st.data_editor(
        frame.style.format({"置信度 Confidence": "{:.0%}"}, na_rep=""),
        key=f"pairs-{view['key']}-{page.index}-{view['version']}", hide_index=True, width="stretch",
        num_rows="dynamic", height=_table_height(len(frame) + 1),
        disabled=["#", "置信度 Confidence", "页 Page"],
        column_config={"#": st.column_config.NumberColumn(width=40), "键 Key": st.column_config.TextColumn(width=200),
                       "值 Value": st.column_config.TextColumn(width=260)})
    _apply_table_edits(view, *apply_pair_edits(doc, edited, view.get("model"), page.index))


def show_tables_tab(view: dict, page: Page) -> None:
    """The form's tables on this page, each under its number, page and size, its column names as the header
    and one row per record (read-only: the tables are exported as read, app/batch/xlsx_out.py 表格 Tables)."""
    for n, table, frame in table_frames(view["corrected"], page.index):
        st.markdown(f"**表格 {n} Table {n}** · 第 {table.page + 1} 页 page {table.page + 1} · "
                    f"{len(table.columns)} 列 columns × {len(table.rows)} 行 records")
        st.dataframe(frame, key=f"table-{view['key']}-{page.index}-{n}", hide_index=True, width="stretch",
                     height=_table_height(len(frame)))


def show_page(view: dict, page_index: int) -> None:
    """Page `page_index` (its position in the document's pages) on the left, drawn on its preview with
    the picked box highlighted and zoomed; on the right the tabs of what was read, its warnings and
    the 已核对 checkbox. Images, fields and the page picker use the page's index in the file."""
    analysis = view["analysis"]
    doc = view["corrected"]
    page = doc.pages[page_index]
    targets = find_targets(doc, page)
    pick_key = f"find-{view['key']}-{page.index}"
    if st.session_state.get(pick_key, NOTHING) not in targets:
        st.session_state[pick_key] = NOTHING
    left, right = st.columns([4, 7], gap="medium")
    with left:
        chosen = st.selectbox("定位 Find on page", [NOTHING] + list(targets), key=pick_key,
                              format_func=lambda t: targets[t][0] if t else "— 选择字段、明细、键值对或表格 "
                                                                            "pick a field, item, pair or table —")
        label, boxes = targets.get(chosen, ("", []))
        # a form's lines are outlined in their role's colour (app/draw.py ROLE_COLOURS); a busy page can go grey
        roles = any(ln.role for ln in page.lines) and st.toggle(
            "行角色 Line roles", value=True, key=f"roles-{view['key']}-{page.index}",
            help="按角色给每行文字描边（标签、值、表头、单元格、提示、勾选框、签名、标题），见图下的图例。 "
                 "Outline each text line in its role's colour (label, value, header, cell, hint, check box, "
                 "signature, heading); the legend under the page says which is which.")
        if page.index < len(analysis.images):
            image = page_overlay(analysis.image(page.index), page, doc, highlight=boxes, roles=roles)
            crop = zoom_crop(image, page, boxes)
            if crop is not None:
                st.image(crop, channels="BGR", caption=f"放大 Zoom: {label}", width="stretch")
            st.image(image, channels="BGR", caption=f"{doc.source} — 第 {page.index + 1} 页 page {page.index + 1}: "
                                                    f"{len(page.lines)} 行文字 text lines", width="stretch")
        st.markdown(legend_html(doc, page.index, label, roles=roles), unsafe_allow_html=True)
    with right:
        n_fields = sum(1 for f in doc.fields.values() if f.page == page.index)
        n_items = len(items_frame(doc, page.index))
        n_pairs = sum(1 for p in doc.pairs if p.page == page.index)
        n_tables = sum(1 for t in doc.tables if t.page == page.index)
        tabs = {"fields": f"字段 Fields ({n_fields})", "items": f"明细 Items ({n_items})",
                "pairs": f"键值对 Pairs ({n_pairs})", "tables": f"表格 Tables ({n_tables})",
                "text": f"文本 Text ({len(page.lines)})"}
        if not n_tables:        # a tab only where the page has a table
            del tabs["tables"]
        order = list(tabs)
        if not n_fields and (n_pairs or n_tables):      # a form opens on what it holds, pairs first
            lead = (["pairs"] if n_pairs else []) + (["tables"] if n_tables else [])
            order = lead + [n for n in order if n not in lead]
        for name, tab in zip(order, st.tabs([tabs[n] for n in order])):
            with tab:
                if name == "fields":
                    show_fields_tab(view, page, chosen)
                elif name == "items":
                    show_items_tab(view, page)
                elif name == "pairs":
                    show_pairs_tab(view, page)
                elif name == "tables":
                    show_tables_tab(view, page)
                else:
                    st.dataframe(lines_frame(page), hide_index=True, width="stretch",
                                 height=_table_height(len(page.lines)))
        if view.get("changed"):
            st.caption("你改正的字段 Corrected by you: " + "、".join(
                doc.fields[k].label if k in doc.fields and doc.fields[k].label else k for k in sorted(view["changed"])))
        for warning in doc.warnings:
            st.warning(warning_words(warning, doc))
        confirmed = view.setdefault("confirmed", set())
        checked = st.checkbox("已核对此页，数值无误 I have checked this page", value=page.index in confirmed,
                              key=f"ok-{view['key']}-{page.index}",
                              help="只有已核对的页才会保存为训练样本 Only checked pages are saved as training examples")
        (confirmed.add if checked else confirmed.discard)(page.index)
        st.caption(timings_text(doc.timings))


def _full_page(view: dict, page: Page, data: bytes | None) -> np.ndarray:
    """The full-size upright page for a training example: decoded again from the upload (the UI keeps
    only previews); the kept image when the upload's bytes are not at hand."""
    if data:
        return route.page_image(data, view["name"], page.index, page.rotation)
    return view["analysis"].image(page.index)


def document_views(result: dict) -> list[dict]:
    """The views of an upload: one per document read from it (`Analysis.parts()`), each holding that
    document's one object (`corrected`: shown, edited, validated, exported and saved) and its corrections
    state, made once and kept in the session with the upload; none for an upload that was not read.

    The same whichever way the file was split. For a one-document file the view is the upload itself (its
    widget keys stay those of the upload) and its document is the part too, never `Analysis.document`:
    that file document is another object, whose `checks` (the warnings the validator last added) are not
    recorded, so an edit there kept a fixed value's warning and showed every other check twice."""
    analysis = result.get("analysis")
    if analysis is None:
        return []
    parts = analysis.parts()
    if len(parts) == 1:
        result.setdefault("corrected", parts[0])
        result.setdefault("version", 0)
        return [result]
    views = result.setdefault("views", {})
    for i, part in enumerate(parts):
        views.setdefault(i, {"key": f"{result['key']}|{i + 1}", "name": result["name"], "analysis": analysis,
                             "corrected": part, "version": 0, "model": result.get("model")})
    return [views[i] for i in range(len(parts))]


def views_of(result: dict) -> list[dict]:
    """The views (documents with their corrections state) of an upload."""
    return document_views(result)


def confirmed_pages(results: list[dict]) -> list[tuple[dict, dict, int]]:
    """(upload, view, page position) of every page marked 已核对 in these uploads."""
    out = []
    for result in results:
        for view in views_of(result):
            doc = view["corrected"]
            out += [(result, view, i) for i, p in enumerate(doc.pages) if p.index in view.get("confirmed", ())]
    return out


def save_confirmed(results: list[dict], data: dict[str, bytes], folder: str) -> None:
    """Save every checked page (its corrected values as ground truth) into the server's folder."""
    pages = confirmed_pages(results)
    saved, path = 0, None
    try:
        for result, view, i in pages:
            doc = view["corrected"]
            image = _full_page(view, doc.pages[i], data.get(result["key"]))
            path = save_correction(doc, i, image, folder, view.get("model"))
            saved += 1
    except (OSError, ValueError) as exc:
        st.error(f"保存失败 Could not save the corrections ({saved} of {len(pages)} saved): {exc}. "
                 f"保存目录由服务器设置 The folder is set on the server ({CORRECTIONS_ENV}); ask whoever runs it.")
    if saved:
        st.session_state["saved_pages"] = st.session_state.get("saved_pages", 0) + saved
        total = len((Path(path).read_text(encoding="utf-8") if path else "").splitlines())
        st.success(f"已保存 {saved} 页已核对的页面为训练样本 Saved {saved} checked page(s) as training examples in "
                   f"{path} (本次共 {st.session_state['saved_pages']} 页 this session; "
                   f"语料共 {total} 页 in the corpus)")
        # how many there are against what a retrain needs, and the retrain itself: the panel below the button


def export_buttons(docs: list[tuple[str, Document]], stem: str, scope: str, key: str,
                   duplicates: dict[int, tuple[str, str]] | None = None) -> None:
    """The downloads of `docs` (the fields CSV and the Excel register with the `duplicates` found; the tables
    CSV only where a document has tables).
    Each file is made when its button is clicked (a callable, run by Streamlit on its own thread), not on
    every rerun, and a download does not rerun the page."""
    buttons: list[tuple[str, Callable[..., bytes], str, str]] = [
        ("JSON", export_json, f"{stem}.json", "application/json"),
        ("字段 CSV", functools.partial(fields_csv, duplicates=duplicates), f"{stem}_fields.csv", "text/csv"),
        ("明细 CSV", items_csv, f"{stem}_items.csv", "text/csv"),
        ("Excel", functools.partial(workbook, duplicates=duplicates), f"{stem}.xlsx", XLSX_MIME)]
    if any(d.tables for _, d in docs):
        buttons.append(("表格 CSV", tables_csv, f"{stem}_tables.csv", "text/csv"))
    for col, (label, make, name, mime) in zip(st.columns(len(buttons)), buttons):
        col.download_button(f"{label}{scope}", functools.partial(make, list(docs)), name, mime, width="stretch",
                            key=f"{label}-{key}", on_click="ignore")


def document_hashes(results: list[dict]) -> list[str]:
    """The content hash (as in the upload's cache key) of each document of `all_documents(results)`."""
    out: list[str] = []
    for result in results:
        if result.get("analysis"):
            out += [str(result["key"]).split("|")[0]] * len(document_views(result))
    return out


def show_duplicates(docs: list[tuple[str, Document]], hashes: list[str]) -> dict[int, tuple[str, str]]:
    """Warn about invoices read more than once in this session, or (with $PIAOJU_REGISTER, the register file
    the batch's --register writes too) in earlier runs and sessions; returns them for the downloads."""
    try:
        found = session_duplicates(docs, os.environ.get(REGISTER_ENV) or None, hashes)
    except RegisterError as exc:
        st.warning(f"发票台账无法使用 The invoice register cannot be used: {exc}")
        found = session_duplicates(docs)
    dup = [f"- **{docs[i][0]}** (文档 document {docs[i][1].part}) = {d}" for i, (d, _) in found.items() if d]
    near = [f"- **{docs[i][0]}** (文档 document {docs[i][1].part}) ≈ {n}" for i, (_, n) in found.items() if n]
    if dup:
        st.error("重复发票 Duplicate invoices (同一发票代码+号码，或同一数电票号码 same code and number): \n"
                 + "\n".join(dup))
    if near:
        st.warning("疑似重复 Possible duplicates (销售方、金额、日期相同，号码不同 same seller, total and date, "
                   "another number): \n" + "\n".join(near))
    return found


def part_view(result: dict) -> dict:
    """What the page, table and buttons show for an upload: the upload itself when its file holds one
    document; else the document picked from those found in the file, with its own corrections state
    (one view per document, kept in the session with the upload)."""
    parts = result["analysis"].parts()
    views = document_views(result)
    if len(views) == 1:
        return views[0]
    n = len(parts)
    pages = [", ".join(map(str, d.page_numbers())) for d in parts]
    st.info(f"此文件包含 {n} 份文档，每份从自己的页面读取（空白页跳过），请逐份核对。 This file holds {n} documents; "
            "each was read from its own page(s) (blank pages are skipped). Pick one to check and correct it.")
    docs = [v["corrected"] for v in views]       # as corrected so far: a fixed document moves down the queue
    order = queue_order(docs)
    overview = [{"#": docs[i].part, "页 Pages": pages[i],
                 "类型 Type": schema_label(docs[i].doc_type) if docs[i].doc_type else "—",
                 "核对 Review": queue_label(docs[i]), "字段 Fields": len(docs[i].fields),
                 "明细 Items": len(docs[i].items), "键值对 Pairs": len(docs[i].pairs),
                 "错误 Error": (docs[i].error or {}).get("message", "")}
                for i in order]
    st.dataframe(overview, hide_index=True, width="stretch")
    chosen = st.selectbox("文件内文档 Document in this file", order, help=QUEUE_HELP,
                          format_func=lambda i: f"第 {i + 1}/{n} 份 Document {i + 1} of {n} — page {pages[i]}"
                                                + (f" — {queue_label(docs[i])}" if queue_label(docs[i]) else ""),
                          key=f"part-{result['key']}")
    return views[chosen]


QUEUE_HELP = ("最需要核对的在前：读取失败、校验未通过、待核对字段最多的文档排在前面，直通的排在最后。 "
              "Most in need of a look first: documents that failed, then those with the most failed checks and "
              "fields to check; straight-through ones last")


def file_label(docs: list[Document]) -> str:
    """An upload's entry in the file list: its one document's review state, or its documents' counts."""
    if len(docs) == 1:
        return queue_label(docs[0])
    through = sum(d.straight_through for d in docs)
    return f"{len(docs)} 份 documents, {through} 直通 straight-through"


def show_document(result: dict) -> dict | None:
    """One upload: its error, or its document (picked from the file's documents) and page. Returns the
    view shown, for the export and save buttons."""
    if result.get("error"):
        st.error(error_in_words(result["error"]))
        if not result.get("analysis") or not result["analysis"].document.pages:
            return None
    view = part_view(result)
    if view["corrected"].error and view["corrected"].error != result.get("error"):
        st.error(error_in_words(view["corrected"].error))
    show_header(view)
    doc = view["corrected"]
    pages = len(doc.pages)
    page_index = 0
    if pages > 1:
        page_index = st.selectbox("页 Page", range(pages),
                                  format_func=lambda i: f"第 {i + 1}/{pages} 页 Page {i + 1} of {pages}"
                                  if doc.parts <= 1 else f"文件第 {doc.pages[i].index + 1} 页 page "
                                                         f"{doc.pages[i].index + 1} of the file",
                                  key=f"page-{view['key']}")
    show_page(view, page_index)
    return view


def all_documents(results: list[dict]) -> list[tuple[str, Document]]:
    """Every document of every upload that was read, as corrected so far."""
    return [(result["name"], view["corrected"]) for result in results for view in document_views(result)]


# --- the app -----------------------------------------------------------------------------------------

def main() -> None:
    st.set_page_config(page_title="文档识别 Document reader", page_icon="📄", layout="wide",
                       initial_sidebar_state="collapsed")
    st.markdown(CHROME_CSS, unsafe_allow_html=True)
    model, doc_type, folder = sidebar()
    st.markdown("### 文档识别 Document reader")
    st.caption("发票、身份证、营业执照、车票、小票和表单：上传、核对、改正、导出。 "
               "Invoices, ID cards, licences, tickets, receipts and forms: upload, check, correct, export. "
               "模型 Model: "
               f"{Path(model).name if model else '—'} · 类型 Type: {doc_type or '自动 automatic'} "
               "（在左侧栏更改 change in the sidebar ›）")
    uploads = st.file_uploader(f"上传图片、PDF、OFD 或发票 XML Upload images, PDFs, OFDs or invoice XML "
                               f"(每个最多 up to {upload_limit_mb()} MB each)",
                               type=UPLOAD_TYPES, accept_multiple_files=True)
    if not uploads:
        st.info("把一张或多张照片、扫描件、PDF、OFD 或发票 XML 拖到上面。 Drop one or more photos, scans, PDFs, OFDs "
                "or invoice XML files above "
                "to read them.")
        retrain_panel.show(folder)
        return
    try:
        load_models(model)
    except (OSError, RuntimeError, ValueError) as exc:
        st.error(f"模型无法加载 The models could not be loaded: {exc}")
        return
    results, data = [], {}
    for n, upload in enumerate(uploads, 1):
        raw = upload.getvalue()
        result = analyse_upload(upload.name, raw, model, doc_type, n, len(uploads))
        results.append(result)
        data[result["key"]] = raw
    failed = [r for r in results if r.get("error")]
    if len(results) > 1 and failed:     # every failure in view, not only the chosen file's
        st.error(f"{len(failed)} / {len(results)} 个文件无法读取 files could not be read:\n"
                 + "\n".join(f"- **{r['name']}**: {error_in_words(r['error'])}" for r in failed))
    if len(results) > 1:
        per_file = [[] if r.get("error") else [v["corrected"] for v in document_views(r)] for r in results]
        names = [f"{r['name']} — 失败 failed" if r.get("error") else
                 r["name"] + (f" — {file_label(per_file[i])}" if file_label(per_file[i]) else "")
                 for i, r in enumerate(results)]
        chosen = st.selectbox("文档 Document", files_order(per_file), help=QUEUE_HELP,
                              format_func=lambda i: names[i], key="file-pick")
    else:
        chosen = 0
    view = show_document(results[chosen])
    st.divider()
    if view is not None:
        doc = view["corrected"]
        stem = Path(view["name"]).stem + (f"_document{doc.part}" if doc.parts > 1 else "")
    everything = all_documents(results)
    duplicates = show_duplicates(everything, document_hashes(results))
    if view is not None:
        st.markdown("**下载此文档 Download this document**")
        mine = next((i for i, (_, d) in enumerate(everything) if d is doc), None)
        export_buttons([(view["name"], doc)], stem, "", "one",
                       {0: duplicates[mine]} if mine in duplicates else None)
    if len(everything) > 1:             # several files, or one file of several documents
        st.markdown(f"**下载全部 {len(everything)} 份文档 Download all {len(everything)} documents of "
                    f"{len(results)} files**")
        export_buttons(everything, "documents", " · 全部 all", "all", duplicates)
    checked = len(confirmed_pages(results))
    if st.button(f"保存已核对的页 Save checked pages ({checked})", disabled=not checked, type="primary",
                 help=f"把标记为“已核对”的页（含你的改正）作为训练样本保存到 {folder}；未核对的页不保存。 "
                      "Saves the pages marked as checked, with your corrections as ground truth; unchecked pages "
                      "are not saved"):
        save_confirmed(results, data, folder)
    retrain_panel.show(folder)        # after saving, so the count includes what was just saved


main()
