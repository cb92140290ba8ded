"""The one error a file or upload that cannot be turned into pages raises, in a module of its own so
that every page source (data/io.py, data/textlayer.py, data/ofd.py) raises it without importing another."""
from __future__ import annotations

import os


class InputError(ValueError):
    """A file (or upload) that cannot be turned into pages. `path` names it, `reason` says why and what to do."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")
