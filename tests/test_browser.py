"""The real app in a real browser: `streamlit run app/ui/main.py` on a free local port, driven by headless
Chromium (Debian's /usr/bin/chromium) through Playwright, at a laptop's 1366 px width, with real OCR
and extraction. An invoice shows its line items; a form shows its key-value pairs; a value edited in
the field table is checked again (the failure and its warning appear, and go when the value is
fixed); the Excel download opens with openpyxl. Each state is saved as a screenshot in
artifacts/browser/ for a person to look at (docs/ holds two of them for the README)."""
from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1366, "height": 900}
ROW_PX = 35                                  # the data grid's row height (header row too)

pytestmark = [pytest.mark.heavy, pytest.mark.browser]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    tmp = tmp_path_factory.mktemp("streamlit")
    log = tmp / "server.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1", PIAOJU_CORRECTIONS_DIR=str(tmp / "corrections"))
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app/ui/main.py", "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start; its log:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def open_with(browser, server: str, path: Path, shots: bool = False):
    """A fresh page (its own session) with `path` uploaded and read; with `shots`, the empty page and
    the progress bar (file, page, stage) are checked and saved on the way."""
    from playwright.sync_api import expect
    page = browser.new_page(viewport=VIEWPORT, accept_downloads=True)
    page.goto(server)
    expect(page.get_by_text("Drop one or more")).to_be_visible(timeout=60_000)
    if shots:
        shot(page, "0_empty.png")
    page.locator("input[type=file]").set_input_files(str(path))
    if shots:
        bar = page.locator("[data-testid='stProgress']")
        expect(bar).to_contain_text(re.compile(r"文件 1/1 file 1 of 1: .* 第 1/1 页 page 1 of 1 · "
                                               r"(解码页面|检测文字位置|识别文字|字段抽取)"), timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "0_progress.png"))
    expect(page.get_by_text("文档类型 Document type")).to_be_visible(timeout=120_000)
    return page


def shot(page, name: str) -> None:
    page.wait_for_timeout(400)               # let the grid paint its canvas
    page.screenshot(path=str(ARTIFACTS / name))


def settle(page) -> None:
    """Wait until the script run the last action started has finished (Streamlit shows its running
    indicator meanwhile, and elements of the previous run may still be on the page)."""
    from playwright.sync_api import expect
    page.wait_for_timeout(300)
    expect(page.locator("[data-testid='stStatusWidget']")).to_have_count(0, timeout=30_000)


def active_grid(page):
    """The data grid of the tab that is shown."""
    return page.get_by_role("tabpanel").locator("[data-testid='stDataFrame']").first


def type_into_cell(page, grid, row: int, x: int, text: str) -> None:
    """Open the cell at body row `row` (0-based), `x` px from the grid's left edge, replace its value
    with `text` and commit with Enter. The grid draws on a canvas, so cells are reached by position;
    an edit is tried until the grid shows the text (at most four times, each after the app settles)."""
    from playwright.sync_api import expect
    attempts = 4
    for attempt in range(attempts):
        settle(page)                        # a rerun in flight replaces the grid (and moves it: alerts)
        grid = active_grid(page)
        box = grid.locator("canvas").first.bounding_box()
        at = (box["x"] + x, box["y"] + ROW_PX * (row + 1) + ROW_PX / 2)
        page.mouse.click(*at)               # the first click gives the grid focus and selects the cell
        page.wait_for_timeout(400)
        page.mouse.dblclick(*at)            # the double click opens its editor
        page.wait_for_timeout(400)
        page.keyboard.press("Control+a")
        page.keyboard.type(text)
        page.keyboard.press("Enter")
        try:
            settle(page)
            expect(active_grid(page).get_by_text(text, exact=True).first).to_be_attached(timeout=30_000)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise
            page.keyboard.press("Escape")


def test_invoice_items_find_edit_and_excel(server, browser, tmp_path):
    """The whole flow in a fresh page, once more if the first run fails: the grid is drawn on a canvas
    and reached by position, and on a loaded machine a click that lands while a rerun replaces the grid
    is lost (seen about one run in five under a concurrent test load). Every assertion still holds on
    the run that counts."""
    from playwright.sync_api import Error as PlaywrightError
    for attempt in range(2):
        folder = tmp_path / f"run{attempt}"
        folder.mkdir()
        try:
            _invoice_flow(server, browser, folder)
            return
        except (AssertionError, PlaywrightError):
            if attempt == 1:
                raise


def _invoice_flow(server, browser, tmp_path):
    from openpyxl import load_workbook
    from playwright.sync_api import expect

    from data.synth import generate
    image, truth = generate("vat_invoice", seed=7, layout="vat_paper_split")
    invoice = tmp_path / "invoice_7.png"
    image.save(invoice)
    number = truth["fields"]["invoice_number"]["value"]
    # what the pipeline itself reads from this page (the server runs the same code and models): the UI
    # must show exactly that; how close it is to the gold values is the benches' business, checked
    # here only loosely (3 of 4 amounts)
    from reading.route import analyse_bytes
    read = analyse_bytes(invoice.read_bytes(), invoice.name).parts()[0]
    expected = [{k: f.value for k, f in row.items()} for row in read.items]
    page = open_with(browser, server, invoice, shots=True)
    try:
        grid = active_grid(page)
        expect(grid.get_by_text(number, exact=False).first).to_be_attached(timeout=30_000)
        headers = grid.locator("th").all_text_contents()     # the grid renders only the columns in view
        assert {"字段 Field", "识别值 Value", "置信度 Confidence", "校验 Check"} <= set(headers), headers
        shot(page, "1_invoice_fields.png")

        # line items: a table of their own
        page.get_by_role("tab", name=re.compile(r"明细 Items \(4\)")).click()
        items = active_grid(page)
        # the grid renders only the columns in view: all of them, up to tax and check, fit at 1366 px
        expect(items.locator("th").filter(has_text="校验 Check")).to_have_count(1, timeout=30_000)
        cells = items.locator("td").all_text_contents()
        for row in expected:
            assert all(v in cells for k, v in row.items() if k in ("amount", "tax", "name")), (row, cells)
        assert sum(row["amount"]["value"] in cells for row in truth["items"]) >= 3, cells   # OCR may miss one
        assert sum(row["name"]["value"] in cells for row in truth["items"]) >= 2, cells
        shot(page, "2_invoice_items.png")
        zoom = page.get_by_text(re.compile(r"^放大 Zoom: 明细第 2 行"))
        for attempt in range(3):        # an item row picked in "find on page" is found on the page (the items
            settle(page)                # table is an editor now; a pick while a rerun replaces it: pick again)
            page.locator("[data-testid='stSelectbox']").filter(has_text="定位 Find on page").first.click()
            page.keyboard.type("明细第 2 行")          # the list is long (fields first): filter it
            page.get_by_role("option", name=re.compile(r"^明细第 2 行")).click()
            try:
                expect(zoom).to_be_visible(timeout=30_000)
                break
            except AssertionError:
                page.keyboard.press("Escape")
                if attempt == 2:
                    raise

        # find on page: the picked value is highlighted and zoomed
        found = page.get_by_text("放大 Zoom: 字段 发票号码")
        for attempt in range(3):        # a pick made while a rerun replaces the widget is lost: pick again
            settle(page)
            page.locator("[data-testid='stSelectbox']").filter(has_text="定位 Find on page").first.click()
            page.get_by_role("option", name="字段 发票号码").click()
            try:
                expect(found).to_be_visible(timeout=30_000)
                break
            except AssertionError:
                page.keyboard.press("Escape")
                if attempt == 2:
                    raise
        shot(page, "3_invoice_find.png")

        # an edit is checked again: a 7-digit number fails with the reason in Chinese; fixed, the
        # failure and its warning are gone (no stale warning)
        page.get_by_role("tab", name=re.compile(r"字段 Fields")).click()
        warning = page.locator("[data-testid='stAlert']").filter(has_text="发票号码：应为8位数字")
        type_into_cell(page, active_grid(page), 2, 150 + 60, "1234567")     # row 2: invoice_number
        expect(warning).to_have_count(1, timeout=60_000)
        expect(active_grid(page).get_by_text("✗ 应为8位数字", exact=False).first).to_be_attached()
        shot(page, "4_invoice_edit_failed.png")
        # the fix clearing the failure and its warning is checked through AppTest
        # (tests/test_ui.py::test_failed_check_says_why_in_chinese_and_a_fix_clears_it): a second edit
        # on the canvas grid was lost too often on a loaded machine to be a reliable browser step

        with page.expect_download(timeout=30_000) as download:
            page.get_by_role("button", name="Excel", exact=True).click()
        # the invoice register (app/batch/xlsx_out.py): Chinese headers in row 1, field keys in row 2
        book = load_workbook(io.BytesIO(Path(download.value.path()).read_bytes()))
        assert book.sheetnames == ["发票 Invoices", "明细 Items", "字段 Fields"], book.sheetnames
        keys = [c.value for c in book["明细 Items"][2]]
        rows = [r for r in book["明细 Items"].iter_rows(min_row=3, values_only=True)
                if isinstance(r[keys.index("row")], int)]          # not the SUM row under them
        assert [r[keys.index("name")] for r in rows] == [c for c in cells if c.startswith("*")], \
            "the items as the table showed them"
        assert [r[keys.index("amount")] for r in rows] == [
            float(row["amount"].replace(",", "")) if row.get("amount") else None for row in expected], \
            "amounts as numbers"
        fields = {r[4]: r[5] for r in book["字段 Fields"].iter_rows(min_row=2, values_only=True)}
        assert fields["invoice_number"] == "1234567", "the export holds the corrected value"
        keys = [c.value for c in book["发票 Invoices"][2]]
        invoice = next(book["发票 Invoices"].iter_rows(min_row=3, values_only=True))
        assert invoice[keys.index("invoice_number")] == "1234567", "the register row holds it too"
        assert not page.locator("[data-testid='stException']").count(), "the app showed a traceback"
    finally:
        page.close()


def test_form_shows_its_pairs_in_a_table(server, browser, tmp_path):
    """A generated form (data.synth, generic_form, layout form_grid, seed 3) whose eight gold key-value
    pairs are known; XFUND pages cannot be shipped with the repository (licence), so this stands in for
    xfund_zh_val_0 (seven pairs). The ruled grid is one of the plainer layouts: this checks that pairs
    reach the table, not how hard forms are read (bench/form_pairs_bench.py measures that)."""
    from playwright.sync_api import expect

    from data.synth import generate
    image, truth = generate("generic_form", 3, "form_grid")
    gold = [(p["key"], p["value"]) for p in truth["pairs"]]
    assert len(gold) == 8
    form = tmp_path / "form_3.png"
    image.save(form)
    page = open_with(browser, server, form)
    try:
        tab = page.get_by_role("tab", name="键值对 Pairs (8)")
        expect(tab).to_have_attribute("aria-selected", "true", timeout=60_000)     # a form opens on its pairs
        grid = active_grid(page)
        for key, value in gold:
            expect(grid.get_by_text(key, exact=True).first).to_be_attached(timeout=30_000)
            expect(grid.get_by_text(value, exact=True).first).to_be_attached()
        shot(page, "5_form_pairs.png")
        assert not page.locator("[data-testid='stException']").count(), "the app showed a traceback"
    finally:
        page.close()
