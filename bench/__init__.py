from models.offline import stay_offline

stay_offline()   # before a bench imports onnxruntime or rapidocr: no telemetry (models/offline.py)

