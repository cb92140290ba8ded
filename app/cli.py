"""`python -m app <command> ...` (installed as `piaoju <command>`): one argparse dispatcher, one module per subcommand.

A subcommand module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> int` (the
exit code). Registering it is one line in COMMANDS. Modules are imported only to build the parser,
and a module that fails to import is reported instead of breaking the other commands.

Every command follows EXIT_STATUS (also the epilog of `--help`): problems found before any work
(bad options, a FILE that is not a readable file, an output that cannot be written) end with a message
on stderr and exit status 2, never a traceback (APP_DEBUG=1 shows it); documents that fail while
being processed are reported on stderr and recorded in the output, the others still run, and the
exit status is 1. `check_inputs` and `check_writable` are the up-front checks the commands share.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from data.atomic import write_bytes_atomic, write_text_atomic  # noqa: F401 - the commands import them from here
from data.document import display_name

if TYPE_CHECKING:
    from data.document import Document

# name -> module defining HELP, add_arguments(parser), run(args)
COMMANDS: dict[str, str] = {
    "ocr": "app.ocr_cmd",
    "extract": "app.extract_cmd",
    "batch": "app.batch.command",
    "ui": "app.ui.command",
    "serve": "app.serve.command",
}

EXIT_OK = 0
EXIT_FAILED = 1        # the command ran; one or more documents could not be processed
EXIT_BAD_INPUT = 2     # usage or input error found before any work: nothing was processed or written

EXIT_STATUS = """\
exit status (every command):
  0  every document was processed
  1  the command ran, but one or more documents failed (unreadable content, too many pages, ...):
     each is reported on stderr and recorded in the output (an error entry), the others are processed
     (batch counts an IN that matches nothing here too, and goes on with the others)
  2  usage or input error, found before any work: a bad option or --type, a FILE that does not exist
     or is not a readable file (missing, directory, symbolic link loop, dangling link, no permission),
     an output path that cannot be written, a missing model; the message is on stderr and nothing is
     processed or written
  130  interrupted (Ctrl-C)"""


# The one meaning of --json OUT (ocr, extract): the help of each says it in these words.
JSON_HELP = ("write the Documents to the file OUT: one JSON object when there is one document in all; JSON "
             "Lines (one document per line, in FILE order, as `batch --out` writes) when there are several "
             "(several FILEs, or a FILE holding several documents, e.g. a PDF of three invoices); an OUT "
             "ending in .jsonl always gets JSON Lines")


class UsageError(ValueError):
    """A problem with the command line found before any work: reported on stderr, exit status 2."""


class OutputError(RuntimeError):
    """An output (--json, --csv, an overlay) could not be written after the work was done (a full disk, a
    folder made read-only meanwhile): reported on stderr as one sentence, exit status 1."""


# Bidirectional-text controls: they reorder what follows on a terminal ("gpj.exe" shown as "exe.jpg").
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def terminal_text(text: str) -> str:
    """`text` (a file name, a message naming one) safe to print on a terminal: undecodable bytes as `\\xNN`
    (data.document.display_name) and every control character (ESC, CR, BEL, C1 controls, DEL, bidi
    overrides) escaped as `\\xNN` / `\\uNNNN`, so a file named "a\\x1b[2Jb.png" cannot clear the screen or
    forge a line. For what the CLIs print only; JSON and CSV keep the real name."""
    text = display_name(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if code < 0x20 or 0x7f <= code <= 0x9f:
            out.append(f"\\x{code:02x}")
        elif ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Zl", "Zp"):   # U+2028/9 break lines too
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)    # an ideographic space or a joiner is not a control: shown as it is
    return "".join(out)


def check_inputs(files: Iterable[str]) -> None:
    """Every FILE must be a readable regular file before the first one is processed, so a typo in the
    last argument does not surface after the OCR of all the others. Raises UsageError naming each bad
    one (one per line). Content (corrupt, too large, not a document) is checked when the file is read."""
    from data.io import InputError, check_file
    problems = []
    for path in files:
        try:
            check_file(path)
        except InputError as exc:
            problems.append(str(exc))
    if problems:
        raise UsageError("\n".join(problems))


def write_png(path: str | os.PathLike, image: Any) -> None:
    """Write a BGR image as PNG, atomically. Encoded by OpenCV but written by Python: cv2.imwrite
    segfaults on a path with undecodable bytes (a GBK file name from a Windows zip)."""
    import cv2
    import numpy as np
    ok, png = cv2.imencode(".png", np.ascontiguousarray(image))
    if not ok:
        raise OSError(f"cannot encode an image for {os.fsdecode(path)!r}")
    write_bytes_atomic(path, png.tobytes())


def check_writable(path: str, what: str, directory: bool = False) -> None:
    """Fail now, before any OCR, if `path` (a file to be written, or a folder to write into) cannot be
    written: its folder is created if missing and a scratch file is made there and removed."""
    if directory and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} {terminal_text(path)}: is a file, not a folder; give a folder")
    if not directory and os.path.isdir(path):
        raise UsageError(f"{what} {terminal_text(path)}: is a folder; give a file name")
    folder = path if directory else os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{what} {terminal_text(path)}: cannot be written ({exc.strerror or exc}); "
                         "choose another path") from None


def write_documents(out: str | os.PathLike, docs: Sequence[Document]) -> str:
    """Write --json OUT as JSON_HELP says, atomically: one document as one indented JSON object, several
    (or any number when OUT ends in .jsonl) as JSON Lines, so a script reading OUT knows from the count
    what it gets, and one reading many files reads them as it reads `batch` output. Any file name,
    undecodable bytes included, is written as valid UTF-8 (Document.to_json). Returns what was written,
    for the message: "JSON" or "JSON Lines"."""
    path = Path(out)
    one = len(docs) == 1 and path.suffix.lower() != ".jsonl"
    text = docs[0].to_json(indent=1) + "\n" if one else "".join(d.to_json() + "\n" for d in docs)
    try:
        write_text_atomic(path, text)
    except OSError as exc:     # the old file, if any, is left as it was (atomic write)
        raise output_error("--json", out, exc, f"the {len(docs)} document(s) were processed but not saved") from None
    return "JSON" if one else "JSON Lines"


def output_error(what: str, path: str | os.PathLike, exc: OSError, consequence: str) -> OutputError:
    """The one sentence for an output that could not be written: which, where, why (no space, read-only)
    and what it means, instead of a traceback."""
    why = exc.strerror or str(exc)
    hint = {28: "free some space", 30: "the filesystem is read-only", 122: "the disk quota is used up"}.get(
        exc.errno or 0, "check the folder's permissions and free space")
    return OutputError(f"{what} {terminal_text(os.fsdecode(path))}: cannot be written ({why}); {consequence}; "
                       f"{hint} and run the command again")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, str]]:
    prog = "piaoju" if os.path.basename(sys.argv[0]) == "piaoju" else "python -m app"
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Chinese document intelligence: OCR, field extraction and batch runs over images and PDFs.",
        epilog=f"Run `{prog} COMMAND --help` for a command's options.\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    broken: dict[str, str] = {}
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            broken[name] = f"{module_name} cannot be imported ({exc})"
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, epilog=EXIT_STATUS,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser, broken


def main(argv: list[str] | None = None) -> int:
    parser, broken = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in broken:
        print(f"error: command {argv[0]!r} is unavailable: {broken[argv[0]]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)     # argparse itself exits 2 on a bad option
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    from data.io import InputError
    try:
        return int(args._run(args) or 0)
    except OutputError as exc:         # the work was done, its output could not be saved
        if os.environ.get("APP_DEBUG"):
            raise
        print(f"error: {terminal_text(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except (UsageError, InputError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if os.environ.get("APP_DEBUG"):
            raise
        for line in str(exc).split("\n"):     # not splitlines(): a CR in a file name is escaped, not a break
            print(f"error: {terminal_text(line)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
