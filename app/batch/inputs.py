"""Turn the batch command's IN arguments (files, folders, glob patterns) into a list of documents.

Folders are walked recursively and keep only files whose suffix is a document type we read, so a
folder of scans with a stray `Thumbs.db` does not produce error rows. A file named explicitly is
always taken: if it is not readable, the user asked for it and should see an error row saying why.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

# What the decoder (data/io.py) reads: raster images, multi-page TIFF, PDF.
DOCUMENT_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pdf", ".ofd", ".xml")


@dataclass
class InputList:
    files: list[str] = field(default_factory=list)      # absolute paths, in a stable order, no repeats
    ignored: list[str] = field(default_factory=list)    # found in folders but not a document type
    missing: list[str] = field(default_factory=list)    # arguments that matched nothing


def is_document(path: str) -> bool:
    return path.lower().endswith(DOCUMENT_SUFFIXES)


def _walk(folder: str) -> tuple[list[str], list[str]]:
    docs: list[str] = []
    other: list[str] = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()  # stable order across runs, so resume and progress are predictable
        for name in sorted(names):
            path = os.path.join(root, name)
            (docs if is_document(name) else other).append(path)
    return docs, other


def expand_inputs(args: list[str]) -> InputList:
    """Files as given, folders recursively, glob patterns (`**` allowed) expanded; paths made absolute."""
    out = InputList()
    seen: set[str] = set()

    def add(path: str) -> None:
        path = os.path.abspath(path)
        if path not in seen:
            seen.add(path)
            out.files.append(path)

    def add_dir(folder: str) -> None:
        docs, other = _walk(folder)
        for path in docs:
            add(path)
        out.ignored.extend(os.path.abspath(p) for p in other)

    for arg in args:
        if os.path.isdir(arg):
            add_dir(arg)
        elif os.path.lexists(arg):
            add(arg)
        elif glob.has_magic(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                out.missing.append(arg)
            for match in matches:
                if os.path.isdir(match):
                    add_dir(match)
                elif is_document(match):
                    add(match)
                else:
                    out.ignored.append(os.path.abspath(match))
        else:
            out.missing.append(arg)
    return out
