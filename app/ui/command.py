"""`python -m app ui [--port N]` (or `piaoju ui`): the Streamlit upload UI, as scripts/run.sh starts it.

Runs `streamlit run app/ui/main.py` from the repository root, so .streamlit/config.toml applies (loopback
only, the upload limit, no usage statistics); extra arguments after `--` go to streamlit.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HELP = "start the upload UI (Streamlit) on the bundled model; open the printed URL"
ROOT = Path(__file__).resolve().parents[2]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8501")),
                   help="port to serve on (default 8501, or $PORT)")
    p.add_argument("streamlit_args", nargs=argparse.REMAINDER, metavar="-- ARGS",
                   help="further streamlit options, e.g. -- --server.address 0.0.0.0 (see README: "
                        "serving on a LAN)")


def command(args: argparse.Namespace) -> list[str]:
    extra = [a for a in args.streamlit_args if a != "--"]
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "ui" / "main.py"),
            "--server.port", str(args.port), "--server.headless", "true",
            "--browser.gatherUsageStats", "false", *extra]


def run(args: argparse.Namespace) -> int:
    os.chdir(ROOT)                     # .streamlit/config.toml is read from the working directory
    cmd = command(args)
    os.execv(cmd[0], cmd)              # replaces this process: Ctrl-C stops the server directly
    return 0  # pragma: no cover - execv does not return
