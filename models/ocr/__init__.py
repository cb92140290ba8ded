"""Offline PP-OCR (detection -> page orientation -> recognition) as one package; `models.ocr` is its
public face, so callers write `from models.ocr import OCRSettings, get_engine` and the layout below can
change without touching them.

- engine.py: `OCRSettings`, `OCREngine`, `get_engine` (one engine per process and settings), read quality;
- det.py: the text detector's input and box finding; rec.py: line crops, angle votes, recognition;
- runtime.py: the bundled model files and Paddle Inference predictors (v4);
- onnx.py: onnxruntime sessions on the PP-OCRv6 ONNX files (v6);
- eval.py: CER and line scores for benches and tests.
"""
from data.geometry import reading_order
from models.ocr.engine import (
    DEFAULT_MODEL,
    MODEL_ENV,
    POOR_READ,
    TUNED,
    OCREngine,
    OCRSettings,
    get_engine,
    read_quality,
)

__all__ = ["DEFAULT_MODEL", "MODEL_ENV", "POOR_READ", "TUNED", "OCREngine", "OCRSettings", "get_engine",
           "read_quality", "reading_order"]
