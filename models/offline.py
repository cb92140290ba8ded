"""Keep every process of the product off the network: no telemetry, no usage statistics, no hub look-ups.

onnxruntime (1.32) sends telemetry from any process that has imported it for ~9 s: a DNS look-up of
mobile.events.data.microsoft.com, then TLS connections. `onnxruntime.disable_telemetry_events()` does not
stop it; only `ORT_DISABLE_TELEMETRY=1` in the environment before onnxruntime is imported does. Ray sends
usage statistics unless `RAY_USAGE_STATS_ENABLED=0` is set before Ray starts. The Hugging Face libraries
(huggingface_hub, datasets, transformers; paddlenlp and aistudio-sdk reach hubs the same way) try the
network for a name that is not a local folder; models are never downloaded at run time here, so they are
told to stay offline and fail at once instead. (Measured: importing paddle, paddlenlp, huggingface_hub,
aistudio_sdk, datasets, rapidocr, paddleocr or streamlit opens no connection; onnxruntime does.)

`stay_offline()` sets these variables unless the user set them. It runs when the packages `app`, `models`,
`training` and `bench` are imported, i.e. before any of our code can import onnxruntime (models/ocr/onnx.py,
models/vocab/build.py) or Ray, in every entry point (`python -m app`, `python -m training`, the Streamlit
script, `python -m bench.*`). Worker processes get the variables twice over: batch workers are spawned with
this process's environment, and a Ray actor imports `app` (app/batch/ray_pool.py) before it loads a model.
tests/test_no_network.py checks extract, batch and the UI's analysis under strace in a loopback-only network
namespace. Streamlit's own usage statistics are off in .streamlit/config.toml and app/ui/command.py.
"""
from __future__ import annotations

import os

OFFLINE_ENV = {
    "ORT_DISABLE_TELEMETRY": "1",        # onnxruntime: read once, when it is imported
    "RAY_USAGE_STATS_ENABLED": "0",      # Ray: read when a Ray instance starts or a driver connects
    "HF_HUB_OFFLINE": "1",               # huggingface_hub: no look-up for a name that is not a local folder
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_DATASETS_OFFLINE": "1",          # datasets
    "TRANSFORMERS_OFFLINE": "1",
}


def stay_offline() -> None:
    """Set OFFLINE_ENV in this process's environment (inherited by every process it starts); a variable
    the user set is kept. Call before onnxruntime or Ray is imported: both read it only then."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
