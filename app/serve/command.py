"""`python -m app serve [--host H] [--port P] [--workers N] [--keys FILE] ...`: the HTTP API (app/serve/api.py).

Safe by default: it listens on 127.0.0.1 unless --host says otherwise, and it does not start without an
API key (PIAOJU_API_KEYS, comma-separated, and/or --keys FILE with one key a line). --insecure-no-auth
starts it without keys, for a trial on one's own machine, and only on a loopback address: a server
without keys on a network would let anyone read anyone's documents.

One server per jobs folder (a lock file): two servers recovering the same jobs would read each twice.
--ray [ADDRESS] runs the model workers as Ray actors (app/serve/ray_workers.py); the rest stays here.
"""
from __future__ import annotations

import argparse
import fcntl
import ipaddress
import os
import sys
from pathlib import Path

from app.cli import UsageError, check_writable, terminal_text

HELP = "serve the extraction over HTTP (API keys, a job store that survives restarts, OpenAPI at /docs)"
ROOT = Path(__file__).resolve().parents[2]
JOBS_DIR_ENV = "PIAOJU_SERVE_DIR"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=1,
                   help="model worker processes, each holding the models (~1 GB); default 1")
    p.add_argument("--queue", type=int, default=16,
                   help="documents that may wait for a worker; more are answered 429 with Retry-After (default 16)")
    p.add_argument("--keys", metavar="FILE",
                   help="file of API keys, one a line (added to those in $PIAOJU_API_KEYS, comma-separated)")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="start without any API key (loopback addresses only), for a trial on this machine")
    p.add_argument("--jobs-dir", metavar="DIR",
                   help=f"where jobs, results and uploads are kept (default ${JOBS_DIR_ENV} or runs/serve)")
    p.add_argument("--keep-hours", type=float, default=24.0,
                   help="hours a finished job's result is kept, then removed (default 24)")
    p.add_argument("--sync-max-mb", type=float, default=5.0,
                   help="files up to this size are answered in the POST itself; larger ones get a job (default 5)")
    p.add_argument("--sync-timeout", type=float, default=300.0,
                   help="seconds a POST waits for its document before answering 202 with the job (default 300)")
    p.add_argument("--job-timeout", type=float, default=600.0,
                   help="seconds one document may take; then its worker is stopped and the job fails (default 600)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run the model workers as Ray actors: no ADDRESS starts a Ray instance on this machine that "
                        "ends with the server; 'auto' or HOST:PORT joins a cluster (`ray start --head`). The API, "
                        "the job store and the queue stay in this process; --workers actors, one CPU each; model "
                        "folders must be at the same path on every node")
    p.add_argument("--model", metavar="NAME", default="default",
                   help="the model the workers load at start (a name from GET /v1/models; requests may name others)")
    p.add_argument("--public-docs", action="store_true",
                   help="serve /docs and /openapi.json without a key (the API description only, no data)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def lock_jobs_dir(folder: Path) -> int:
    """Hold `folder/serve.lock` for the life of the process (the kernel drops it on any exit, kill -9 too)."""
    fd = os.open(folder / "serve.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(f"--jobs-dir {terminal_text(str(folder))}: another `serve` is using this folder; stop it "
                         "or give another --jobs-dir") from None
    return fd


def run(args: argparse.Namespace) -> int:
    from app.serve.auth import KEYS_ENV, KeyConfigError, load_keys
    for name, value in (("--workers", args.workers), ("--queue", args.queue)):
        if value < 1:
            raise UsageError(f"{name} {value}: give 1 or more")
    for name, value in (("--keep-hours", args.keep_hours), ("--sync-max-mb", args.sync_max_mb),
                        ("--sync-timeout", args.sync_timeout), ("--job-timeout", args.job_timeout)):
        if not value > 0:
            raise UsageError(f"{name} {value}: give a number above 0")
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: give a port from 1 to 65535")
    try:
        keys = load_keys(args.keys)
    except KeyConfigError as exc:
        raise UsageError(str(exc)) from None
    if not keys and not args.insecure_no_auth:
        raise UsageError(f"no API key is configured: set {KEYS_ENV}=KEY1,KEY2 or pass --keys FILE (make a key with "
                         "`python -c \"import secrets; print(secrets.token_urlsafe(32))\"`); for a trial on this "
                         "machine only, --insecure-no-auth starts without keys")
    if keys and args.insecure_no_auth:
        raise UsageError("--insecure-no-auth was given but API keys are configured; drop one of the two")
    if args.insecure_no_auth and not _loopback(args.host):
        raise UsageError(f"--insecure-no-auth is allowed only on a loopback address, not --host {args.host}: "
                         "configure API keys to serve other machines")
    jobs_dir = Path(args.jobs_dir or os.environ.get(JOBS_DIR_ENV) or ROOT / "runs" / "serve")
    check_writable(str(jobs_dir), "--jobs-dir", directory=True)
    lock = lock_jobs_dir(jobs_dir)

    from app.serve.catalog import ModelCatalog, UnknownModel
    try:
        _, warm_model = ModelCatalog().resolve(args.model)
    except UnknownModel as exc:
        raise UsageError(f"--model: {exc}") from None

    import uvicorn

    from app.serve.api import ServeConfig, create_app
    cfg = ServeConfig(jobs_dir=jobs_dir, keys=keys, workers=args.workers, queue_limit=args.queue,
                      keep_hours=args.keep_hours, sync_max_bytes=int(args.sync_max_mb * 2**20),
                      sync_timeout=args.sync_timeout, job_timeout=args.job_timeout, public_docs=args.public_docs,
                      warm_model=warm_model)
    if args.ray is not None:
        from app.serve.ray_workers import RayCluster, RaySetupError
        cfg.ray = RayCluster(args.ray)
        try:
            print(f"piaoju serve: {cfg.ray.connect()}", file=sys.stderr, flush=True)
        except RaySetupError as exc:
            os.close(lock)
            raise UsageError(str(exc).replace("--ray", "serve --ray")) from None
    auth = f"{len(keys)} API key(s)" if keys else "NO AUTHENTICATION (--insecure-no-auth)"
    where = " (Ray actors)" if cfg.ray is not None else ""
    print(f"piaoju serve: http://{args.host}:{args.port} (OpenAPI: /docs), {args.workers} worker(s){where}, queue "
          f"{args.queue}, uploads up to {cfg.upload_limit // 2**20} MiB, {auth}, jobs in "
          f"{terminal_text(str(jobs_dir))}", file=sys.stderr, flush=True)
    try:
        # limit_concurrency: connections beyond it get 503, so uploads being received (each up to the upload
        # limit in memory until it is on disk) stay bounded; waiting synchronous requests fit in it
        uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level="info", server_header=False,
                    timeout_graceful_shutdown=10, limit_concurrency=2 * (args.queue + args.workers) + 16)
    finally:
        if cfg.ray is not None:
            cfg.ray.close()
        os.close(lock)
    return 0
