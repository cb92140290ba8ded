"""Models: the OCR engine wrapper, the layout-aware encoder, extractor heads, tokenizer, checkpoint import."""
from models.offline import stay_offline

stay_offline()   # before any submodule can import onnxruntime: no telemetry (models/offline.py)
