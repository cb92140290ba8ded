#!/usr/bin/env bash
# Installs everything this project needs on a fresh Debian 12 machine, into a virtual environment in
# .venv (Debian's python3 is "externally managed": pip may not install into it):
#   1. Debian packages: python3-venv/pip if missing, CJK fonts, Chromium (the UI test), libGL;
#   2. .venv made with python3 -m venv (PYTHON=/path/to/python3.11 picks another interpreter);
#   3. the pinned Python packages (requirements.txt, requirements-dev.txt) and this project itself
#      (editable, with its `piaoju` command) into .venv.
# Safe to run again: it only adds what is missing. As root it calls apt-get directly, else via sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
APT_PKGS="fonts-noto-cjk fonts-wqy-zenhei fonts-wqy-microhei fonts-arphic-ukai fonts-arphic-uming
fonts-arphic-gbsn00lp fonts-arphic-gkai00mp chromium chromium-driver libgl1 libglib2.0-0
strace iproute2"   # strace, iproute2 (ip): the no-outbound test of the UI (tests/test_ui_security.py)
# the venv module and its pip come in Debian's python3-venv (absent on a minimal install)
if ! "$PY" -c "import venv, ensurepip" >/dev/null 2>&1; then APT_PKGS="python3-venv python3-pip $APT_PKGS"; fi
missing=""
if command -v dpkg >/dev/null 2>&1; then
  for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
fi
if [ -n "$missing" ]; then
  echo "[setup] installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

VENV=.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import sys; sys.exit(sys.version_info < (3, 11))" 2>/dev/null; then
  echo "[setup] creating $VENV with $("$PY" --version 2>&1) ($(command -v "$PY"))"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
# reinstall only when requirements.txt or pyproject.toml changed since the last complete install
stamp="$VENV/.installed"
want=$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] Python packages (requirements.txt, requirements-dev.txt) into $VENV"
  "$VPY" -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
  # the project itself, editable: the `piaoju` command (pyproject.toml) runs this checkout
  "$VPY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi
echo "[setup] ready: $VPY ($("$VPY" --version 2>&1)); 'source $VENV/bin/activate' to use it in this shell"
