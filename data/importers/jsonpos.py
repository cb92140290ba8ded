"""Read the elements of a JSON array together with the line each one starts on.

XFUND and Label Studio exports are single JSON documents, but a user fixing a bad record needs a line
number, not "documents[17]". `json.JSONDecoder.raw_decode` gives the end offset of each element, from
which the starting line follows.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

_DECODER = json.JSONDecoder()
_WS = re.compile(r"\s*")


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _skip_ws(text: str, pos: int) -> int:
    """Offset of the first non-whitespace character at or after `pos`."""
    m = _WS.match(text, pos)
    assert m is not None      # `\s*` matches the empty string, so it matches at every offset
    return m.end()


def iter_array(text: str, start: int) -> Iterator[tuple[int, Any]]:
    """Yield (line, element) for the JSON array whose '[' is at `text[start]`.

    Raises json.JSONDecodeError (with its own line number) where the array is malformed.
    """
    for begin, _, element in iter_array_spans(text, start):
        yield line_of(text, begin), element


def iter_array_spans(text: str, start: int) -> Iterator[tuple[int, int, Any]]:
    """Yield (start offset, end offset, element) for the JSON array whose '[' is at `text[start]`."""
    if text[start] != "[":
        raise json.JSONDecodeError("expected '['", text, start)
    pos = _skip_ws(text, start + 1)
    if text.startswith("]", pos):
        return
    while True:
        element, end = _DECODER.raw_decode(text, pos)
        yield pos, end, element
        pos = _skip_ws(text, end)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
        elif text.startswith("]", pos):
            return
        else:
            raise json.JSONDecodeError("expected ',' or ']' between array elements", text, pos)


def find_array(text: str, key: str | None) -> int:
    """Offset of the array: the top-level value when `key` is None, else the value of `"key": [`."""
    if key is None:
        pos = _skip_ws(text, 0)
        if not text.startswith("[", pos):
            raise json.JSONDecodeError("expected a JSON array at the top level", text, pos)
        return pos
    m = re.search(r'"%s"\s*:\s*\[' % re.escape(key), text)
    if not m:
        raise json.JSONDecodeError(f'no "{key}": [...] array found', text, 0)
    return m.end() - 1
