"""Command-line and UI entry points: OCR, extraction, batch processing, the Streamlit app."""
from models.offline import stay_offline

stay_offline()   # before anything of the app can import onnxruntime or Ray: no telemetry (models/offline.py)
