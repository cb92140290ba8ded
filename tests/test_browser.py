"""The real app in a real browser: `streamlit run app/ui.py` on a free local port, driven by headless
Chromium through Playwright. Uploads a generated invoice, waits for real OCR (and extraction when a
model is installed), checks that its invoice number is shown in the result table, downloads the CSV,
and leaves screenshots in artifacts/browser/ for a person to look at."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app/ui.py", "--server.headless", "true",
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


@pytest.mark.heavy
@pytest.mark.browser
def test_upload_invoice_in_a_real_browser(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from data.synth import generate
    image, truth = generate("vat_invoice", seed=7, layout="vat_paper_split")
    invoice = tmp_path / "invoice_7.png"
    image.save(invoice)
    number = truth["fields"]["invoice_number"]["value"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
            page.goto(server)
            expect(page.get_by_text("Drop one or more")).to_be_visible(timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "1_empty.png"))
            page.locator("input[type=file]").set_input_files(str(invoice))
            # the result: type metric, the page image and a table (fields, or OCR lines without a model)
            expect(page.get_by_text("Document type 类型")).to_be_visible(timeout=240_000)
            grid = page.locator("[data-testid='stDataFrame']").first
            expect(grid).to_be_visible(timeout=60_000)
            # the data grid draws on a canvas; its accessible table holds the cell text
            expect(grid.get_by_text(number, exact=False).first).to_be_attached(timeout=30_000)
            page.set_viewport_size({"width": 1440, "height": 2000})   # the app scrolls inside itself
            page.wait_for_timeout(500)
            page.screenshot(path=str(ARTIFACTS / "2_result.png"))

            with page.expect_download(timeout=30_000) as download:
                page.get_by_role("button", name="Download CSV").click()
            csv_text = Path(download.value.path()).read_text(encoding="utf-8-sig")
            assert csv_text.startswith("file,part,parts,source,pages,page,doc_type")
            assert "invoice_7.png" in csv_text
            assert not page.locator("[data-testid='stException']").count(), "the app showed a traceback"
        finally:
            browser.close()
