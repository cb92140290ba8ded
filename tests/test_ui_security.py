"""What a visitor of the upload UI can and cannot do to the server: corrections are written only into
the one folder the server sets (whatever the upload is called), Streamlit listens on loopback with the
upload limit the app enforces and no usage statistics (.streamlit/config.toml), and starting the server
opens no outbound connection (the heavy test runs it in a network namespace under strace)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import tomllib

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.ui.corrections import (
    CORRECTIONS_ENV,
    DEFAULT_CORRECTIONS_DIR,
    ROOT,
    corrections_dir,
    safe_stem,
    save_correction,
)
from data.io import MAX_FILE_BYTES
from reading import route
from tests.netns import remote
from tests.test_ui import UI, fake_analyse_bytes, invoice_document, png_bytes, upload

CONFIG = ROOT / ".streamlit" / "config.toml"
NASTY_NAMES = ["../../x.png", "../../x", "/etc/cron.d/evil.png", "..\\..\\win.png", "C:\\Windows\\evil.png",
               "a\x00b.png", "\x00", "x" * 5000 + ".png", "发票" * 300 + ".jpg", "..", ".", "", ".png",
               "a/../../b.png", "ok name (1).png"]


# --- the corrections folder --------------------------------------------------------------------------

@pytest.mark.parametrize("name", NASTY_NAMES, ids=[ascii(n[:12]) for n in NASTY_NAMES])
def test_upload_names_cannot_leave_the_corrections_folder(tmp_path, name):
    root = tmp_path / "box" / "corrections"
    corpus = save_correction(invoice_document(name), 0, np.full((200, 300, 3), 255, np.uint8), root)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(root in p.parents for p in written), written
    [image] = (root / "images").iterdir()
    assert len(image.name.encode("utf-8")) <= 255 and not image.name.startswith(".")
    assert corpus == root / "corpus.jsonl" and f'"images/{image.name}"' in corpus.read_text(encoding="utf-8")


def test_safe_stem_keeps_a_readable_name_and_nothing_else():
    assert safe_stem("../../x.png") == "x"
    assert safe_stem("/etc/passwd") == "passwd"
    assert safe_stem("..\\..\\win.png") == "win"
    assert safe_stem("a\x00b.png") == "a_b"
    assert safe_stem("增值税发票 2024.pdf") == "增值税发票_2024"
    assert safe_stem("..") == safe_stem("") == safe_stem("\x00") == "page"
    assert len(safe_stem("长" * 1000).encode("utf-8")) <= 120
    for name in NASTY_NAMES:
        stem = safe_stem(name)
        assert stem and not {"/", "\\", "\x00"} & set(stem) and not stem.startswith(".")


def test_corrections_dir_comes_from_the_server_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(CORRECTIONS_ENV, raising=False)
    assert corrections_dir() == DEFAULT_CORRECTIONS_DIR == ROOT / "runs" / "corrections"
    monkeypatch.setenv(CORRECTIONS_ENV, str(tmp_path / "c"))
    assert corrections_dir() == tmp_path / "c"
    monkeypatch.setenv(CORRECTIONS_ENV, "runs/elsewhere")       # relative: to the repository, not the cwd
    monkeypatch.chdir(tmp_path)
    assert corrections_dir() == ROOT / "runs" / "elsewhere"


@pytest.fixture()
def app(monkeypatch, tmp_path):
    monkeypatch.setattr(route, "analyse_bytes", fake_analyse_bytes)
    monkeypatch.setattr(route, "warm_up", lambda model_dir=None: None)
    monkeypatch.setenv(CORRECTIONS_ENV, str(tmp_path / "server" / "corrections"))
    at = AppTest.from_file(UI, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_ui_shows_the_folder_read_only_and_saves_only_there(app, tmp_path):
    folder = tmp_path / "server" / "corrections"
    assert [t.value for t in app.sidebar.text_input] == [str(folder)]
    assert all(t.disabled for t in app.text_input), "no text field lets a visitor pick where files go"
    upload(app, ("../../../escape.png", png_bytes()))
    app.checkbox[0].check().run()                                       # the page is marked 已核对
    next(b for b in app.button if b.label.startswith("保存已核对的页")).click().run()
    assert not app.exception and not app.error
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(folder in p.parents for p in written), written
    assert [p.name for p in (folder / "images").iterdir()][0].startswith("escape_p1_")


# --- Streamlit settings ------------------------------------------------------------------------------

def test_streamlit_config_binds_loopback_and_sends_no_statistics():
    cfg = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["server"]["headless"] is True
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["client"]["toolbarMode"] == "minimal", "no Deploy button or developer menu for visitors"
    run_sh = (ROOT / "scripts" / "run.sh").read_text(encoding="utf-8")
    assert "streamlit run app/ui/main.py" in run_sh and 'cd "$(dirname "$0")/.."' in run_sh, \
        "run.sh starts Streamlit from the repository root, where it reads .streamlit/config.toml"
    assert not re.search(r"--server\.(address|maxUploadSize)|gatherUsageStats\s+true", run_sh), \
        "run.sh must not override the address, the upload limit or the statistics setting"


def test_piaoju_ui_starts_the_script_run_sh_starts():
    """`piaoju ui` (app/ui/command.py) and scripts/run.sh run the same Streamlit script, which exists
    (the UI moved from app/ui.py into the app/ui/ package)."""
    import argparse
    from pathlib import Path

    from app.ui.command import command
    argv = command(argparse.Namespace(port=8600, streamlit_args=["--", "--server.address", "0.0.0.0"]))
    script = Path(argv[argv.index("run") + 1])
    assert script == ROOT / "app" / "ui" / "main.py" and script.is_file()
    assert f"streamlit run {script.relative_to(ROOT)}" in (ROOT / "scripts" / "run.sh").read_text(encoding="utf-8")
    assert argv[-2:] == ["--server.address", "0.0.0.0"] and argv[argv.index("--server.port") + 1] == "8600"


def test_upload_limit_is_the_one_streamlit_enforces(app):
    limit = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["server"]["maxUploadSize"]
    assert 0 < limit * 2**20 <= MAX_FILE_BYTES
    assert f"up to {limit} MB" in app.file_uploader[0].label        # the app's text and check use it
    big_png = b"\x89PNG\r\n\x1a\n" + b"\0" * (limit * 2**20)
    big_pdf = b"%PDF-1.7\n" + b"\0" * (limit * 2**20)
    upload(app, ("photo.png", big_png), ("scan.pdf", big_pdf))
    # failed analyses are never kept in the session (a rerun reads the file again): read what is shown
    shown = [line for e in app.error for line in e.value.splitlines()]
    photo = next(m for m in shown if "**photo.png**" in m)
    scan = next(m for m in shown if "**scan.pdf**" in m)
    assert f"above the {limit} MB limit" in photo
    assert "downscale the PNG" in photo and "split" not in photo
    assert "split the PDF" in scan


# --- no outbound connection at start -----------------------------------------------------------------

@pytest.mark.heavy
def test_server_start_opens_no_outbound_connection(tmp_path):
    """Start the UI as scripts/run.sh does (repository root, config file) inside a network namespace
    with only loopback, every connect() traced: all must be local, and the server answers on loopback.
    (Bound to 0.0.0.0 instead, Streamlit connects to 8.8.8.8 and to DNS for checkip.amazonaws.com.)"""
    trace, log = tmp_path / "connect.trace", tmp_path / "streamlit.log"
    port = 8501                     # a fresh namespace has every port free
    server = (f"ip link set lo up && exec strace -f -qq -e trace=connect,bind -o {trace} "
              f"{sys.executable} -m streamlit run app/ui/main.py --server.port {port}")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(["unshare", "-n", "sh", "-c", server], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    probe = (f"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/_stcore/health', timeout=2)"
             ".read().decode())")
    answer = ""
    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            got = subprocess.run(["nsenter", "-t", str(proc.pid), "-n", sys.executable, "-c", probe],
                                 capture_output=True, text=True, timeout=10)
            if got.returncode == 0:
                answer = got.stdout.strip()
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    output = log.read_text(errors="replace")
    assert answer == "ok", f"the server did not answer on 127.0.0.1:{port}:\n{output}"
    lines = trace.read_text().splitlines()
    assert any(f"htons({port})" in ln and 'inet_addr("127.0.0.1")' in ln for ln in lines if "bind(" in ln), \
        "the traced server bound to 127.0.0.1 (read from .streamlit/config.toml)"
    outbound = [ln for ln in lines if remote(ln)]
    assert not outbound, "connections leaving the machine at start:\n" + "\n".join(outbound)
