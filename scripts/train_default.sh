#!/usr/bin/env bash
# Rebuild the bundled default model (models/default) from a fixed seed, on CPU.
# Generates the synthetic corpus, OCRs a share of it, trains, and evaluates on held-out layouts.
# Work files (pages, OCR cache, checkpoints) go to runs/default_work; rerun with --resume to continue.
#
# OCR_SHARDS=N OCR_MINUTES=M first reads more training pages with real PP-OCR: N background
# processes for M minutes (a fixed page order from the seed); every page read joins the training mix.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-configs/default.yaml}"   # configs/refresh_v6.yaml: the warm-started stage 4 (models/default/README.md)
WORK="${WORK:-runs/default_work}"
if [[ "${OCR_SHARDS:-0}" -gt 0 ]]; then
    .venv/bin/python -c "import training.trainer as t, pathlib; t.build_corpus(t.load_config('$CONFIG'), pathlib.Path('$WORK'))"
    pids=()
    for ((i = 0; i < OCR_SHARDS; i++)); do
        OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python -c "import training.trainer as t, pathlib; t.ocr_pass(pathlib.Path('$WORK'), $i, $OCR_SHARDS, 7)" &
        pids+=($!)
    done
    sleep "$(( ${OCR_MINUTES:-20} * 60 ))"
    kill "${pids[@]}" 2>/dev/null || true
    wait || true
fi
nice -n 2 .venv/bin/python -m training train --config "$CONFIG" --out models/default \
    --work "$WORK" --max-minutes "${MAX_MINUTES:-30}" "$@"
