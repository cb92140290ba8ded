"""The models a request may name (`model=` on POST /v1/documents; GET /v1/models lists them).

The same listing as the UI's model chooser (models.model_dir.find_model_dirs over models/ and runs/,
training work folders left out): `default` is the bundled model; each registry name stands for the
version its `latest` pointer names at the time the job is accepted (a promotion is followed without a
restart); each registry version is offered by its folder name (`invoice-v0003`); any other model
folder by its path relative to the repository root (`runs/exp1/model`). A request's string is only ever
looked up in this listing: it is never joined into a path, so `../../etc` or an absolute path names no
model. The listing is read again at most every `ttl` seconds.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NAME = "default"
RECHECK_SECONDS = 2.0


class UnknownModel(LookupError):
    pass


def _internal(path: Path) -> bool:
    return any(part.startswith(".") for part in path.parts)


def list_models(root: Path = ROOT) -> dict[str, str | None]:
    """{name: model directory} (None for the bundled default, which the pipeline loads by itself)."""
    from models.model_dir import DEFAULT_MODEL_DIR, find_model_dirs
    from training.model_registry import REGISTRY_DIR, ModelRegistry
    dirs = list(find_model_dirs(root / "models"))
    if (root / "runs").is_dir():
        dirs += [d for d in find_model_dirs(root / "runs") if d not in dirs]
    dirs = [d for d in dirs if not _internal(d.relative_to(root) if d.is_relative_to(root) else d)]
    names: dict[str, str | None] = {}
    default = DEFAULT_MODEL_DIR.resolve()
    if default in dirs:
        names[DEFAULT_NAME] = None
    registries = {d.parent for d in dirs if d.parent.name == REGISTRY_DIR}
    if (root / "models" / REGISTRY_DIR).is_dir():
        registries.add(root / "models" / REGISTRY_DIR)
    for reg in sorted(registries):
        registry = ModelRegistry(reg.parent)
        for name in registry.names():
            latest = registry.latest(name)
            if latest is not None:
                names.setdefault(name, str(latest))
    for d in dirs:
        if d == default:
            continue
        label = d.name if d.parent.name == REGISTRY_DIR else (
            str(d.relative_to(root)) if d.is_relative_to(root) else str(d))
        names.setdefault(label, str(d))
    return names


class ModelCatalog:
    def __init__(self, root: Path = ROOT, ttl: float = 30.0) -> None:
        self.root = root
        self.ttl = ttl
        self._lock = threading.Lock()
        self._names: dict[str, str | None] = {}
        self._read_at = float("-inf")

    def names(self) -> dict[str, str | None]:
        with self._lock:
            if time.monotonic() - self._read_at > self.ttl:
                self._names = list_models(self.root)
                self._read_at = time.monotonic()
            return dict(self._names)

    def resolve(self, name: str | None) -> tuple[str, str | None]:
        """(name, model directory or None for the bundled default) for a requested name; UnknownModel
        naming the choices otherwise."""
        name = name or DEFAULT_NAME
        names = self.names()
        if name not in names:
            with self._lock:                        # a model exported a moment ago: look once more, but
                if time.monotonic() - self._read_at > RECHECK_SECONDS:    # unknown names force no scan loop
                    self._read_at = float("-inf")
            names = self.names()
        if name not in names:
            raise UnknownModel(f"model {name!r} is not one of this server's models; choose one of "
                               f"{', '.join(names) or '(none)'} (GET /v1/models lists them)")
        return name, names[name]
