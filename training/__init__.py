"""Training: the pipeline-parallel engine, the trainer and the retraining CLI."""
from models.offline import stay_offline

stay_offline()   # before training can import onnxruntime (OCR labels) or Ray: no telemetry (models/offline.py)
