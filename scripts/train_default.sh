#!/usr/bin/env bash
# Rebuild the bundled default model (models/default) from a fixed seed, on CPU.
# Generates the synthetic corpus, OCRs a share of it, trains, and evaluates on held-out layouts.
# Work files (pages, OCR cache, checkpoints) go to runs/default_work; rerun with --resume to continue.
set -euo pipefail
cd "$(dirname "$0")/.."
nice -n 2 python3 -m training train --config configs/default.yaml --out models/default \
    --work runs/default_work --max-minutes "${MAX_MINUTES:-30}" "$@"
