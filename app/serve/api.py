"""The HTTP API of `piaoju serve` (FastAPI on uvicorn; OpenAPI at /docs and /openapi.json).

    POST   /v1/documents       multipart `file`, optional form fields `model` (a name from /v1/models) and
                               `type` (a document type the model knows). Answers with the JSON
                               `extract --json` writes: one object for a file holding one document, a list
                               of them for a file holding several (extract writes those as JSON Lines);
                               422 with that JSON when the file could not be read (corrupt, not a document,
                               too many pixels). A file above --sync-max-mb, `?async=1`, or a document not
                               read within --sync-timeout gets 202 and its job at once (Location header).
    GET    /v1/jobs/{id}       status (queued, running, done, failed, cancelled), progress in pages, result
    DELETE /v1/jobs/{id}       cancel a queued or running job; a finished one is deleted with its result
    GET    /v1/models          the model names a request may use
    GET    /healthz, /readyz   the process answers / a worker has its models loaded and the store answers
    GET    /metrics            Prometheus text (app/serve/metrics.py)

The guard in front of every route (`Guard`, plain ASGI, so it runs before any body is read):
- every path but /healthz and /readyz (and /docs, /openapi.json with --public-docs) needs
  `Authorization: Bearer KEY`; 401 otherwise, before the upload is read;
- POST /v1/documents must state its Content-Length (411 otherwise) and may not exceed the upload limit
  (the UI's: .streamlit/config.toml server.maxUploadSize, capped by data.io.MAX_FILE_BYTES) by more than
  the form's overhead (413), so an oversized upload is refused before it is received;
- every answer is counted and timed for /metrics.
No CORS middleware is installed: browsers on other origins cannot read the answers, and since every
call needs an Authorization header (which forces a preflight no one answers), cannot make them either.
"""
from __future__ import annotations

import asyncio
import functools
import json
import math
import threading
import time
import tomllib
import unicodedata
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPBearer

from app.serve.auth import KeyChecker
from app.serve.catalog import ModelCatalog, UnknownModel
from app.serve.fairqueue import FairQueue, QueueFull
from app.serve.jobs import Job, JobNotFound, JobStore, check_job_id, new_job_id
from app.serve.metrics import Metrics
from app.serve.workers import ServicePool

ROOT = Path(__file__).resolve().parents[2]
STREAMLIT_CONFIG = ROOT / ".streamlit" / "config.toml"
FORM_OVERHEAD = 64 * 1024          # multipart boundaries, part headers and the small form fields
OPEN_PATHS = ("/healthz", "/readyz")
DOC_PATHS = ("/docs", "/docs/oauth2-redirect", "/openapi.json")
EXPIRE_EVERY = 60.0


def upload_limit_bytes(config: Path = STREAMLIT_CONFIG) -> int:
    """The per-file upload limit the UI uses (app/ui/main.py upload_limit_mb): Streamlit's
    server.maxUploadSize in MB from .streamlit/config.toml (Streamlit's default 200 when unset), capped
    by data.io.MAX_FILE_BYTES. Read from the file, so the service does not import Streamlit."""
    from data.io import MAX_FILE_BYTES
    try:
        with open(config, "rb") as fh:
            mb = int(tomllib.load(fh).get("server", {}).get("maxUploadSize", 200))
    except (OSError, tomllib.TOMLDecodeError, ValueError, TypeError):
        mb = 200
    return min(mb * 2**20, MAX_FILE_BYTES)


@dataclass
class ServeConfig:
    jobs_dir: Path
    keys: list[str]
    workers: int = 1
    queue_limit: int = 16
    keep_hours: float = 24.0
    sync_max_bytes: int = 5 * 2**20
    sync_timeout: float = 300.0
    job_timeout: float = 600.0
    public_docs: bool = False
    upload_limit: int = field(default_factory=upload_limit_bytes)
    warm_model: str | None = None
    models_root: Path = ROOT
    ray: Any = None          # a connected app.serve.ray_workers.RayCluster (serve --ray): workers are its actors


def display_filename(name: str | None) -> str:
    """The client's file name as the Document's `source`: its last path part, no control characters, at
    most 200 characters. Only ever text in a result; the upload is stored under its job id."""
    name = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")[:200].strip()
    return name if name not in ("", ".", "..") else "upload"


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def _route(path: str) -> str:
    """A bounded label for /metrics: the route, never a job id or a scanner's random path."""
    if path.startswith("/v1/jobs/"):
        return "/v1/jobs/{id}"
    known = ("/v1/documents", "/v1/models", "/healthz", "/readyz", "/metrics", *DOC_PATHS)
    return path if path in known else "other"


class Guard:
    """Keys, the upload limit and the metrics, in front of the app; see the module docstring."""

    def __init__(self, app: Any, keys: KeyChecker, upload_limit: int, public_docs: bool, metrics: Metrics) -> None:
        self.app, self.keys, self.upload_limit = app, keys, upload_limit
        self.public_docs, self.metrics = public_docs, metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path, method = scope["path"], scope["method"]
        status = [500]

        async def counted_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            refusal = self._refusal(scope)
            if refusal is not None:
                await refusal(scope, receive, counted_send)
            else:
                await self.app(scope, receive, counted_send)
        finally:
            self.metrics.request(_route(path), method, status[0], time.perf_counter() - started)

    def _refusal(self, scope: dict[str, Any]) -> Response | None:
        path = scope["path"]
        if path in OPEN_PATHS or (self.public_docs and path in DOC_PATHS):
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = self.keys.client(headers.get("authorization"))
        if client is None:
            return _error(401, "Unauthorized", "send an API key as `Authorization: Bearer KEY` (the server's keys "
                          "come from PIAOJU_API_KEYS or serve --keys FILE)", {"WWW-Authenticate": "Bearer"})
        scope.setdefault("state", {})["client"] = client
        if path == "/v1/documents" and scope["method"] == "POST":
            length = headers.get("content-length", "")
            if not length.isdigit():
                return _error(411, "LengthRequired", "send the upload with a Content-Length header")
            if int(length) > self.upload_limit + FORM_OVERHEAD:
                return _error(413, "FileTooLarge", _too_large(int(length), self.upload_limit))
        return None


def _too_large(size: int, limit: int) -> str:
    return (f"the upload is {size / 2**20:.1f} MiB, above this server's limit of {limit / 2**20:.0f} MiB per file "
            "(the UI's, .streamlit/config.toml server.maxUploadSize); split the file or send fewer pages")


class Waiters:
    """Requests waiting for their job (a synchronous POST): woken from the worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    def add(self, job_id: str) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiting.setdefault(job_id, []).append((loop, future))
        return future

    def discard(self, job_id: str, future: asyncio.Future[None]) -> None:
        with self._lock:
            left = [(lp, f) for lp, f in self._waiting.get(job_id, []) if f is not future]
            if left:
                self._waiting[job_id] = left
            else:
                self._waiting.pop(job_id, None)

    def wake(self, job: Job) -> None:
        with self._lock:
            waiting = self._waiting.pop(job.id, [])
        for loop, future in waiting:
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def job_view(job: Job) -> dict[str, Any]:
    return {"id": job.id, "status": job.state, "url": f"/v1/jobs/{job.id}", "filename": job.filename,
            "model": job.model, "type": job.doc_type, "attempts": job.attempts,
            "progress": {"pages_done": job.pages_done, "pages_total": job.pages_total},
            "created": job.created, "started": job.started, "finished": job.finished,
            "result": _result_body(job), "error": job.error}


def _result_body(job: Job) -> Any:
    """extract's JSON: the one document as an object, several as a list; None before there is a result."""
    if job.result is None:
        return None
    return job.result[0] if len(job.result) == 1 else job.result


def create_app(cfg: ServeConfig) -> FastAPI:
    metrics = Metrics()
    keys = KeyChecker(cfg.keys)
    waiters = Waiters()
    catalog = ModelCatalog(cfg.models_root)
    state: dict[str, Any] = {}

    def retry_after() -> str:
        pool: ServicePool = state["pool"]
        return str(max(1, math.ceil(len(state["queue"]) * metrics.mean_job_seconds() / max(1, pool.size))))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        store = JobStore(cfg.jobs_dir)
        queue = FairQueue(cfg.queue_limit)
        for job in store.recover():      # accepted before a stop: never refused, never lost
            queue.put(job.id, job.client, force=True)
        pool = ServicePool(store, queue, cfg.workers, warm_model=cfg.warm_model, job_timeout=cfg.job_timeout,
                           on_finish=waiters.wake, metrics=metrics, ray=cfg.ray)
        state.update(store=store, queue=queue, pool=pool)
        metrics.gauges.update({
            "piaoju_jobs_queued": lambda: len(queue), "piaoju_jobs_running": pool.running,
            "piaoju_workers_ready": pool.ready_workers, "piaoju_workers": lambda: pool.size,
            "piaoju_queue_limit": lambda: queue.limit})
        stop = threading.Event()

        def expire() -> None:
            while not stop.is_set():
                try:
                    store.expire(cfg.keep_hours * 3600)
                except Exception as exc:       # a busy or full disk: try again later
                    print(f"[serve] could not remove old results: {exc}")
                stop.wait(EXPIRE_EVERY)
        janitor = threading.Thread(target=expire, name="serve-expire", daemon=True)
        pool.start()
        janitor.start()
        try:
            yield
        finally:
            stop.set()
            pool.stop()
            janitor.join(timeout=5)
            store.close()

    app = FastAPI(title="piaoju document API", version="1", lifespan=lifespan, redoc_url=None,
                  description="Chinese document intelligence over HTTP: OCR, fields, items and pairs, the JSON of "
                              "`piaoju extract --json`. Every route but /healthz and /readyz needs "
                              "`Authorization: Bearer KEY`.")
    bearer = [Depends(HTTPBearer(auto_error=False))]     # for the docs' Authorize button; Guard enforces it

    def client_of(request: Request) -> str:
        return str(request.scope.get("state", {}).get("client", ""))

    def own_job(request: Request, job_id: str) -> Job:
        job = state["store"].get(check_job_id(job_id))
        if job.client != client_of(request):       # another key's job is not found, not forbidden
            raise JobNotFound(job_id)
        return job

    @app.exception_handler(JobNotFound)
    async def not_found(_: Request, exc: JobNotFound) -> JSONResponse:
        return _error(404, "JobNotFound", "no job with this id for this API key (results are kept for "
                      f"{cfg.keep_hours:g} hours after they are ready)")

    @app.post("/v1/documents", dependencies=bearer, status_code=200,
              responses={202: {"description": "accepted; the job to poll"}, 401: {}, 411: {}, 413: {},
                         422: {"description": "the file could not be read; the Document JSON with its error"},
                         429: {"description": "the queue is full; retry after Retry-After seconds"}})
    async def post_document(request: Request,
                            file: Annotated[UploadFile, File(description="PDF, OFD or image")],
                            model: Annotated[str | None, Form(description="a name from GET /v1/models")] = None,
                            type: Annotated[str | None, Form(description="the document type to assume")] = None,
                            run_async: Annotated[bool, Query(alias="async",
                                                             description="answer 202 with a job at once")] = False,
                            ) -> Response:
        """Read one file; answer with extract's JSON, or with a job for large files and `?async=1`."""
        try:
            model_name, model_dir = await run_in_threadpool(catalog.resolve, model)
        except UnknownModel as exc:
            return _error(400, "UnknownModel", str(exc))
        if type:
            from app.model_types import UnknownTypeError, check_doc_type
            try:
                check_doc_type(type, model_dir)
            except UnknownTypeError as exc:
                return _error(400, "UnknownType", str(exc).replace("--type ", "type ", 1).replace(
                    "leave --type out", "leave type out"))
        data = await file.read(cfg.upload_limit + 1)
        if len(data) > cfg.upload_limit:
            return _error(413, "FileTooLarge", _too_large(len(data), cfg.upload_limit))
        store: JobStore = state["store"]
        queue: FairQueue = state["queue"]
        client, job_id = client_of(request), new_job_id()
        wait_here = not run_async and len(data) <= cfg.sync_max_bytes
        future = waiters.add(job_id) if wait_here else None
        try:
            await run_in_threadpool(queue.reserve, client, job_id, functools.partial(
                store.add, data, client=client, filename=display_filename(file.filename), model=model_name,
                model_dir=model_dir, doc_type=type or None, job_id=job_id))
        except QueueFull as exc:
            if future is not None:
                waiters.discard(job_id, future)
            return _error(429, "QueueFull", f"{exc} (the limit is {queue.limit}); send it again after "
                          "Retry-After seconds", {"Retry-After": retry_after()})
        del data                   # kept on disk now; a waiting request holds no upload in memory
        headers = {"Location": f"/v1/jobs/{job_id}", "X-Job-Id": job_id}
        if future is not None:
            try:
                await asyncio.wait_for(asyncio.shield(future), cfg.sync_timeout)
            except asyncio.TimeoutError:
                pass
            finally:
                waiters.discard(job_id, future)
            job = store.get(job_id)
            if job.state in ("done", "failed"):
                return _answer(job, headers)
            if job.state == "cancelled":
                return JSONResponse(job_view(job), status_code=409, headers=headers)
        return JSONResponse(job_view(store.get(job_id)), status_code=202, headers=headers)

    @app.get("/v1/jobs/{job_id}", dependencies=bearer)
    def get_job(request: Request, job_id: str) -> JSONResponse:
        """A job: status, progress (pages), and its result (extract's JSON) once done."""
        return JSONResponse(job_view(own_job(request, job_id)))

    @app.delete("/v1/jobs/{job_id}", dependencies=bearer)
    def delete_job(request: Request, job_id: str) -> JSONResponse:
        """Cancel a queued or running job (its worker is stopped); delete a finished job and its result."""
        job = own_job(request, job_id)
        store: JobStore = state["store"]
        if job.state in ("queued", "running"):
            store.cancel(job.id)
            state["pool"].cancel(job.id)
            waiters.wake(store.get(job.id))       # a synchronous POST waiting for it answers now
            return JSONResponse({"id": job.id, "status": "cancelled"})
        store.delete(job.id)
        return JSONResponse({"id": job.id, "status": "deleted"})

    @app.get("/v1/models", dependencies=bearer)
    def get_models() -> JSONResponse:
        return JSONResponse({"models": list(catalog.names()), "default": "default"})

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        pool: ServicePool | None = state.get("pool")
        ready = pool.ready_workers() if pool else 0
        try:
            state["store"].check()
            store_ok = True
        except Exception:
            store_ok = False
        body = {"ready": bool(ready) and store_ok, "workers_ready": ready, "workers": pool.size if pool else 0,
                "store": store_ok, "queued": len(state["queue"]) if "queue" in state else 0}
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @app.get("/metrics", dependencies=bearer, response_class=PlainTextResponse)
    def get_metrics() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    app.add_middleware(Guard, keys=keys, upload_limit=cfg.upload_limit,
                       public_docs=cfg.public_docs, metrics=metrics)
    return app


def _answer(job: Job, headers: dict[str, str]) -> Response:
    """A finished job's answer to a synchronous POST: 200 with extract's JSON; 422 with it when the file
    could not be read; 500 with the error when the server could not read it (a crashed worker)."""
    if job.result is not None:
        body = json.dumps(_result_body(job), ensure_ascii=False)
        return Response(body, status_code=200 if job.state == "done" else 422, media_type="application/json",
                        headers=headers)
    error = job.error or {"type": "Failed", "message": "the job failed"}
    return JSONResponse({"id": job.id, "status": job.state, "error": error}, status_code=500, headers=headers)
