"""Script entry for `python -m paddle.distributed.launch`, which takes a script path, not `-m`.

    python -m paddle.distributed.launch --nproc_per_node 4 training/launch_train.py train \\
        --config configs/default.yaml --pipeline-stages 4 --micro-batches 8 --schedule 1f1b

Each process runs `python -m training <same arguments>` as one stage (transport "dist" is chosen
because the launcher set PADDLE_TRAINERS_NUM); rank 0 writes the model directory and the report.
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: put the repository root on the import path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
