"""`piaoju serve`: the HTTP API other programs call (issue 37).

    api.py      FastAPI app: POST /v1/documents, GET/DELETE /v1/jobs/{id}, /v1/models, /healthz, /readyz,
                /metrics; the guard in front of it (API keys, upload size) and the request metrics
    jobs.py     the job store (SQLite, WAL) and the uploads folder: accepted means kept
    fairqueue.py  the bounded queue of accepted jobs, served round-robin across API keys
    workers.py  a fixed pool of model worker processes (the batch pool's process discipline)
    catalog.py  model names a request may ask for, resolved through the model listing only
    auth.py     API keys (environment or file), compared in constant time
    metrics.py  Prometheus text exposition
    command.py  the CLI subcommand
"""
