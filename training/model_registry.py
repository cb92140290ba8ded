"""Versioned model directories: models/registry/<name>-v0001/, -v0002/, ... and a `latest` pointer.

A retrain never overwrites a model: each export reserves the next free version with an exclusive
mkdir (two concurrent retrains get different numbers), builds the version in a hidden sibling folder
(`staging`) and renames it over the reserved, empty one only when every file, the report included, is
there (`publish`). A version is complete or invisible: `versions`, `latest` and `promote` see only
directories holding a model (config.json), so an export killed half way leaves nothing any listing shows
(an empty reserved folder and a hidden staging one, which the next export's number skips).

`<name>-latest` is a one-line text file naming the version the UI and CLI should use; it moves only when
the caller says the new model earned it, and only to a published version, and is replaced atomically so
a reader never sees it half written. A text file rather than a symlink so it survives copying, zipping
and filesystems without links, and so directory scans never see one model twice.
"""
from __future__ import annotations

import re
import shutil
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

    @classmethod
    def of_version(cls, version_dir: Path) -> tuple[ModelRegistry, str]:
        """(the registry holding `version_dir`, the model name) for a version folder NAME-v0001."""
        version_dir = Path(version_dir)
        m = _VERSION.match(version_dir.name)
        if not m or version_dir.parent.name != REGISTRY_DIR:
            raise RegistryError(f"{version_dir} is not a version directory (<out-root>/{REGISTRY_DIR}/NAME-v0001)")
        return cls(version_dir.parent.parent), m["name"]

    def _numbered(self, name: str) -> list[tuple[int, Path]]:
        found = []
        if self.root.is_dir():
            for p in self.root.iterdir():
                m = _VERSION.match(p.name)
                if p.is_dir() and m and m["name"] == name:
                    found.append((int(m["num"]), p))
        return sorted(found)

    @staticmethod
    def complete(version_dir: Path) -> bool:
        """Whether a version directory was published whole (`publish`); a reserved or torn one is not."""
        return (Path(version_dir) / "config.json").is_file()

    def versions(self, name: str) -> list[Path]:
        """Complete version directories of `name`, oldest first (reserved, unfinished ones left out)."""
        return [p for _, p in self._numbered(name) if self.complete(p)]

    def reserve(self, name: str) -> Path:
        """Create and return the next version directory, empty (never an existing one; numbers of
        reserved but unfinished versions are skipped too). Fill it with `staging` + `publish`."""
        check_name(name)
        self.root.mkdir(parents=True, exist_ok=True)
        existing = self._numbered(name)
        num = existing[-1][0] + 1 if existing else 1
        while True:
            path = self.root / f"{name}-v{num:04d}"
            try:
                path.mkdir()          # exclusive: fails if another process took this number
                return path
            except FileExistsError:
                num += 1

    def staging(self, version_dir: Path) -> Path:
        """A new hidden folder beside the reserved `version_dir` to build the version in."""
        from models.model_dir import staging_dir
        return staging_dir(Path(version_dir))

    def publish(self, staging: Path, version_dir: Path) -> Path:
        """Rename the finished `staging` folder over the reserved, empty `version_dir` (one atomic rename:
        readers see no version, then the whole of it)."""
        from models.model_dir import publish_dir
        version_dir = Path(version_dir)
        if version_dir.parent.resolve() != self.root.resolve() or not _VERSION.match(version_dir.name):
            raise RegistryError(f"{version_dir} is not a version directory of {self.root}")
        if version_dir.exists() and any(version_dir.iterdir()):
            raise RegistryError(f"{version_dir} is not empty; reserve a new version")
        try:
            return publish_dir(Path(staging), version_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def pointer(self, name: str) -> Path:
        return self.root / f"{name}-latest"

    def latest(self, name: str) -> Path | None:
        """The version `latest` points at, or None when nothing was promoted yet."""
        p = self.pointer(name)
        if not p.is_file():
            return None
        target = self.root / p.read_text(encoding="utf-8").strip()
        return target if target.is_dir() and self.complete(target) else None

    def promote(self, name: str, version_dir: Path) -> None:
        """Point `latest` at `version_dir` (atomic replace); only a complete version can take it."""
        version_dir = Path(version_dir)
        if version_dir.parent.resolve() != self.root.resolve() or not version_dir.is_dir():
            raise RegistryError(f"{version_dir} is not a version directory of {self.root}")
        if not self.complete(version_dir):
            raise RegistryError(f"{version_dir} is not a complete model version (no config.json); "
                                "publish it before promoting it")
        write_text_atomic(self.pointer(name), version_dir.name + "\n")

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted({m["name"] for p in self.root.iterdir()
                       if (m := _VERSION.match(p.name)) and p.is_dir() and self.complete(p)})
