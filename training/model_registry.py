"""Versioned model directories: models/registry/<name>-v0001/, -v0002/, ... and a `latest` pointer.

A retrain never overwrites a model: each export reserves the next free version with an exclusive
mkdir (two concurrent retrains get different numbers). `<name>-latest` is a one-line text file naming
the version the UI and CLI should use; it moves only when the caller says the new model earned it, and
is replaced atomically so a reader never sees it half written. A text file rather than a symlink so it
survives copying, zipping and filesystems without links, and so directory scans never see one model twice.
"""
from __future__ import annotations

import re
from pathlib import Path

from data.atomic import write_text_atomic

REGISTRY_DIR = "registry"
_VERSION = re.compile(r"^(?P<name>.+)-v(?P<num>\d{4,})$")
_NAME = re.compile(r"^[A-Za-z0-9_.\u4e00-\u9fff-]+$")


class RegistryError(ValueError):
    pass


def check_name(name: str) -> str:
    if not _NAME.match(name) or name.startswith("."):
        raise RegistryError(f"model name {name!r} may use letters, digits, '_', '.', '-' only; pick another --name")
    return name


class ModelRegistry:
    """The versions of each named model under `<out_root>/registry/`."""

    def __init__(self, out_root: str | Path):
        self.root = Path(out_root) / REGISTRY_DIR

    def versions(self, name: str) -> list[Path]:
        """Existing version directories of `name`, oldest first."""
        if not self.root.is_dir():
            return []
        found = []
        for p in self.root.iterdir():
            m = _VERSION.match(p.name)
            if p.is_dir() and m and m["name"] == name:
                found.append((int(m["num"]), p))
        return [p for _, p in sorted(found)]

    def reserve(self, name: str) -> Path:
        """Create and return the next version directory (never an existing one)."""
        check_name(name)
        self.root.mkdir(parents=True, exist_ok=True)
        existing = self.versions(name)
        num = int(_VERSION.match(existing[-1].name)["num"]) + 1 if existing else 1
        while True:
            path = self.root / f"{name}-v{num:04d}"
            try:
                path.mkdir()          # exclusive: fails if another process took this number
                return path
            except FileExistsError:
                num += 1

    def pointer(self, name: str) -> Path:
        return self.root / f"{name}-latest"

    def latest(self, name: str) -> Path | None:
        """The version `latest` points at, or None when nothing was promoted yet."""
        p = self.pointer(name)
        if not p.is_file():
            return None
        target = self.root / p.read_text(encoding="utf-8").strip()
        return target if target.is_dir() else None

    def promote(self, name: str, version_dir: Path) -> None:
        """Point `latest` at `version_dir` (atomic replace)."""
        version_dir = Path(version_dir)
        if version_dir.parent.resolve() != self.root.resolve() or not version_dir.is_dir():
            raise RegistryError(f"{version_dir} is not a version directory of {self.root}")
        write_text_atomic(self.pointer(name), version_dir.name + "\n")

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted({m["name"] for p in self.root.iterdir() if (m := _VERSION.match(p.name))})
