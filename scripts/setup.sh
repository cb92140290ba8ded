#!/usr/bin/env bash
# Installs everything this project needs on a fresh Debian machine: CJK fonts (and the browser used
# by the UI test, and libGL, which the non-headless OpenCV wheels that paddleocr pulls in link
# against), then the pinned Python packages. Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS="fonts-noto-cjk fonts-wqy-zenhei fonts-wqy-microhei fonts-arphic-ukai fonts-arphic-uming
fonts-arphic-gbsn00lp fonts-arphic-gkai00mp chromium chromium-driver libgl1 libglib2.0-0"
missing=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "[setup] installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

PY=${PYTHON:-python3}
echo "[setup] Python packages (requirements.txt)"
$PY -m pip install -q --disable-pip-version-check --root-user-action=ignore -r requirements.txt
