"""onnxruntime predictors for the PP-OCRv6 small det/rec and v2 angle-classifier ONNX files that the
installed rapidocr wheel ships (rapidocr/models/*.onnx). Nothing is downloaded and rapidocr itself is
never imported: only its package directory is located, so none of its download logic can run.

An `OnnxPredictor` has the Paddle `Predictor`'s interface (models/ocr/runtime.py): called with a float32
NCHW batch it returns the model's first output. It is built and run on the process's model thread
(models/runtime.py) like every other model object, so the engine has one threading mechanism whatever
backend serves it. The recogniser's character dictionary is not a file: it is embedded in the rec
model's metadata (`character`, one character per line), read by `embedded_charset`.

Session options (measured with bench/ocr_bench.py, see bench/README.md): all graph optimisations,
sequential execution (one inter-op thread: these graphs are chains), `intra_op_num_threads` from the
settings capped by the cores this process may run on, and no spin-waiting of idle pool threads, which
otherwise burns CPU that other work on shared cores (or the other pages in a batch) could use.

Recognition runs as concurrent batches instead (`OnnxOptions.parallel`): a session with one intra-op
thread, called from up to `parallel` threads at once, each batch computed whole on its caller's thread.
A page's recognition is dozens of independent batches of small convolutions, which two intra-op threads
split with poor efficiency (every op synchronises twice); two batches side by side keep both cores busy
with no synchronisation. Such a predictor is called directly, not on the model thread: onnxruntime's
`InferenceSession.run` is safe to call concurrently, and a semaphore bounds how many calls run at once
(whatever threads call), so two pages read at once still share `parallel` cores.
"""
from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from models.offline import stay_offline
from models.runtime import on_model_thread

PACKAGE = "rapidocr"
PIN = "rapidocr==3.10.0"          # the wheel whose bundled files were measured (requirements.txt)
DET_FILE = "PP-OCRv6_det_small.onnx"
REC_FILE = "PP-OCRv6_rec_small.onnx"
CLS_FILE = "ch_ppocr_mobile_v2.0_cls_mobile.onnx"


def package_models_dir() -> Path:
    """rapidocr's bundled model folder, found without importing rapidocr."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{PACKAGE} is not installed, so the PP-OCRv6 model files are missing. Install it with "
            f"`pip install {PIN} onnxruntime` (both are pinned in requirements.txt), or choose the "
            "PP-OCRv4 reader with OCRSettings(model='v4').")
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def bundled_onnx_files() -> tuple[Path, Path, Path]:
    """(det, cls, rec) ONNX paths inside the installed rapidocr wheel; a clear error when one is missing."""
    root = package_models_dir()
    paths = (root / DET_FILE, root / CLS_FILE, root / REC_FILE)
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(
                f"PP-OCRv6 model file missing: {p}. It ships inside the {PACKAGE} wheel; reinstall it with "
                f"`pip install --force-reinstall --no-deps {PIN}`.")
    return paths


def allowed_cores() -> int:
    """Cores this process may run on (its affinity mask: batch workers pin themselves to a share)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class OnnxOptions:
    threads: int = 1                 # intra-op threads; capped by allowed_cores()
    spin: bool = False               # let idle pool threads spin-wait for work (lower latency, more CPU)
    mem_arena: bool = True           # onnxruntime's CPU memory arena (reuses buffers between calls)
    parallel: int = 1                # calls that may run at once, each on its caller's thread (> 1: called
                                     # directly, not on the model thread; capped by allowed_cores())

    def concurrent(self) -> "OnnxOptions":
        """The same budget of cores spent as concurrent single-threaded calls (recognition batches)."""
        return OnnxOptions(threads=1, spin=False, mem_arena=self.mem_arena, parallel=self.threads)


class OnnxPredictor:
    """One onnxruntime CPU session; built and run on the model thread."""

    def __init__(self, model_path: Path, options: OnnxOptions | None = None) -> None:
        options = options or OnnxOptions()
        self.parallel = max(1, min(options.parallel, allowed_cores()))
        self._slots = threading.BoundedSemaphore(self.parallel)
        on_model_thread(self._build, Path(model_path), options)

    def _build(self, model_path: Path, options: OnnxOptions) -> None:
        stay_offline()   # models/__init__.py did already; onnxruntime reads it once, on import (no telemetry)
        try:
            import onnxruntime as ort
        except ImportError:
            raise FileNotFoundError("onnxruntime is not installed, so the PP-OCRv6 reader cannot run. Install "
                                    "it with `pip install -r requirements.txt`, or choose OCRSettings(model='v4')."
                                    ) from None
        if not model_path.is_file():
            raise FileNotFoundError(f"PP-OCRv6 model file missing: {model_path}; reinstall {PIN}")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = max(1, min(options.threads, allowed_cores()))
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = options.mem_arena
        so.log_severity_level = 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if options.spin else "0")
        self._session = ort.InferenceSession(str(model_path), sess_options=so, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        self._output = self._session.get_outputs()[0].name
        self.metadata: dict[str, str] = dict(self._session.get_modelmeta().custom_metadata_map)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        """Safe from any thread: the run happens on the model thread, or, for a concurrent predictor
        (`parallel` > 1), on the caller's thread with at most `parallel` runs at a time."""
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        if self.parallel > 1:
            with self._slots:
                return self._run(batch)
        return on_model_thread(self._run, batch)

    def _run(self, batch: np.ndarray) -> np.ndarray:
        return self._session.run([self._output], {self._input: batch})[0]


class WithMetadata(Protocol):
    """A predictor that exposes its model's metadata (OnnxPredictor, models/ocr/openvino.OpenVinoPredictor)."""
    metadata: dict[str, str]


def embedded_charset(predictor: WithMetadata) -> list[str]:
    """CTC classes of a rec model whose dictionary is in its metadata: blank, the characters, a space
    (the same layout as models/ocr/runtime.load_charset builds from a keys file)."""
    raw = predictor.metadata.get("character")
    if not raw:
        raise FileNotFoundError("the recognition model has no embedded character dictionary (metadata key "
                                f"'character'); is it the {REC_FILE} shipped in {PIN}?")
    # split on "\n" only: str.splitlines would also split on characters of the dictionary itself (U+2028...)
    chars = raw[:-1].split("\n") if raw.endswith("\n") else raw.split("\n")
    return ["<blank>"] + chars + [" "]
