"""OpenVINO predictors for the same PP-OCRv6 small det/rec and v2 classifier ONNX files that
models/ocr/onnx.py runs on onnxruntime (OCRSettings.runtime, issue 38). OpenVINO reads the .onnx files
directly; nothing is converted ahead of time and nothing is downloaded.

An `OpenVinoPredictor` has `OnnxPredictor`'s interface and threading: called with a float32 NCHW batch it
returns the model's first output; built on the model thread (models/runtime.py) and run there, or, for a
concurrent predictor (`OnnxOptions.parallel` > 1, recognition), called directly from up to `parallel`
threads at once. OpenVINO runs a request on its compiled model's stream threads, not on the caller's, so
the concurrent form is `parallel` streams of one thread each, with one infer request per stream handed
out from a pool: two recognition batches then run side by side on two cores, as onnxruntime's
concurrent sessions do. The recogniser's dictionary is in the model's `framework` rt_info (OpenVINO's
ONNX reader copies the ONNX metadata there), exposed as `metadata` like onnxruntime's custom metadata.

Compile options:
- INFERENCE_PRECISION_HINT f32 unless asked otherwise. On a CPU with AVX-512 bf16 or AMX OpenVINO's default
  is bf16, which changed the recogniser's probabilities by up to 0.29 (issue 38); f32 agrees with
  onnxruntime to 2e-5 and reads the same lines (tests/test_ocr_openvino.py).
- INFERENCE_NUM_THREADS from the options, capped by the cores this process may run on (batch workers pin
  themselves to a share of the cores before loading models, app/batch/worker.share_cores), NUM_STREAMS 1
  (or `parallel`, see above), PERFORMANCE_HINT LATENCY.
- ENABLE_CPU_PINNING off: OpenVINO keeps its threads inside the process's affinity mask either way (checked
  under `taskset`), so the workers' shares hold; pinning each thread to one core in addition would stop
  it moving off a core that the process's other model, another page or other work on shared cores keeps
  busy.
- CACHE_DIR: compiled models are cached on disk (keyed by OpenVINO on the model, the options and its own
  version), so a new process does not compile again. The folder is $PIAOJU_CACHE/openvino, else
  $XDG_CACHE_HOME/piaoju/openvino, else ~/.cache/piaoju/openvino, created private to the user; one that
  cannot be created or written, is a link, or is writable by others is not used (a compiled model is
  loaded from it), and the models are then compiled in memory every time, never failing for it.
"""
from __future__ import annotations

import os
import queue
import stat
from pathlib import Path
from typing import Any

import numpy as np

from models.ocr.onnx import OnnxOptions, allowed_cores
from models.runtime import on_model_thread

CACHE_ENV = "PIAOJU_CACHE"
PRECISIONS = ("f32", "bf16")
INSTALL_HINT = ("Install it with `pip install -r requirements.txt` (x86-64 only), or choose onnxruntime with "
                "OCRSettings(runtime='onnxruntime') or OCR_RUNTIME=onnxruntime.")


def cache_dir() -> Path | None:
    """The compiled-model cache folder, created if need be; None where no safe, writable one is available."""
    base = os.environ.get(CACHE_ENV, "").strip()
    if base:
        root = Path(base).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "piaoju"
    path = root / "openvino"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
        if (stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode)
                or (hasattr(os, "getuid") and info.st_uid != os.getuid())
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK | os.X_OK)):
            return None
    except (OSError, RuntimeError):   # RuntimeError: Path.home() without a home directory
        return None
    return path


def compile_config(options: OnnxOptions, precision: str = "f32") -> dict[str, Any]:
    """OpenVINO CPU properties for these options (see the module docstring)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown OpenVINO precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    parallel = max(1, min(options.parallel, allowed_cores()))
    threads = parallel if parallel > 1 else max(1, min(options.threads, allowed_cores()))
    return {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": parallel,
            "PERFORMANCE_HINT": "LATENCY", "ENABLE_CPU_PINNING": False}


class OpenVinoPredictor:
    """One compiled OpenVINO CPU model and an infer request per concurrent call; built on the model thread."""

    def __init__(self, model_path: Path, options: OnnxOptions | None = None, precision: str = "f32",
                 cache: bool = True) -> None:
        options = options or OnnxOptions()
        self.parallel = max(1, min(options.parallel, allowed_cores()))
        self.config = compile_config(options, precision)
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        on_model_thread(self._build, Path(model_path), cache)

    def _build(self, model_path: Path, cache: bool) -> None:
        try:
            import openvino as ov
        except ImportError:
            raise FileNotFoundError(f"OCR runtime 'openvino' was asked for, but the openvino package is not "
                                    f"installed. {INSTALL_HINT}") from None
        if not model_path.is_file():
            from models.ocr.onnx import PIN
            raise FileNotFoundError(f"PP-OCRv6 model file missing: {model_path}; reinstall {PIN}")
        core = ov.Core()
        config = dict(self.config)
        folder = cache_dir() if cache else None
        if folder is not None:
            config["CACHE_DIR"] = str(folder)
        model = core.read_model(str(model_path))
        try:
            self.compiled = core.compile_model(model, "CPU", config)
        except RuntimeError:
            if "CACHE_DIR" not in config:
                raise
            config.pop("CACHE_DIR")   # an unreadable or unwritable cache entry: compile in memory instead
            self.compiled = core.compile_model(model, "CPU", config)
        for _ in range(self.parallel):
            self._requests.put(self.compiled.create_infer_request())
        self.metadata: dict[str, str] = {}
        if model.has_rt_info(["framework"]):
            framework = model.get_rt_info(["framework"]).astype(dict)
            self.metadata = {str(k): v.astype(str) if hasattr(v, "astype") else str(v) for k, v in framework.items()}

    def precision(self) -> str:
        """The precision the compiled model infers in ("f32", "bf16", ...)."""
        return str(self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name())

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        """Safe from any thread: the run happens on the model thread, or, for a concurrent predictor
        (`parallel` > 1), on one of `parallel` infer requests, a caller waiting while all are busy."""
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        if self.parallel > 1:
            return self._run(batch)
        return on_model_thread(self._run, batch)

    def _run(self, batch: np.ndarray) -> np.ndarray:
        request = self._requests.get()     # blocks while `parallel` calls are running
        try:
            # the output is copied out of the request's buffer (share_outputs=False), which its next run reuses
            return np.asarray(request.infer({0: batch}, share_inputs=True)[0])
        finally:
            self._requests.put(request)
