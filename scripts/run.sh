#!/usr/bin/env bash
# Installs everything (scripts/setup.sh, into .venv), then starts the main job: the Streamlit upload UI
# on the bundled default model (models/default), with the settings in .streamlit/config.toml (loopback
# only). Open the printed URL (default http://localhost:8501). PORT=8600 bash scripts/run.sh picks
# another port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app/ui/main.py --server.port "${PORT:-8501}" \
  --server.headless true --browser.gatherUsageStats false
