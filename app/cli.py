"""`python -m app <command> ...` (installed as `piaoju <command>`): one argparse dispatcher, one module per subcommand.

A subcommand module defines `HELP` (one line), `add_arguments(parser)` and `run(args) -> int` (the
exit code). Registering it is one line in COMMANDS. Modules are imported only to build the parser,
and a module that fails to import is reported instead of breaking the other commands.

Bad input (data.io.InputError, a missing file) ends with a one-line message and exit code 2, never a
traceback; set APP_DEBUG=1 to see the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# name -> module defining HELP, add_arguments(parser), run(args)
COMMANDS: dict[str, str] = {
    "ocr": "app.ocr_cmd",
    "extract": "app.extract_cmd",
    "batch": "app.batch_cmd",
    "ui": "app.ui_cmd",
}

EXIT_BAD_INPUT = 2


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, str]]:
    prog = "piaoju" if os.path.basename(sys.argv[0]) == "piaoju" else "python -m app"
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Chinese document intelligence: OCR, field extraction and batch runs over images and PDFs.",
        epilog=f"Run `{prog} COMMAND --help` for a command's options.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    broken: dict[str, str] = {}
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            broken[name] = f"{module_name} cannot be imported ({exc})"
            continue
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser, broken


def main(argv: list[str] | None = None) -> int:
    parser, broken = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in broken:
        print(f"error: command {argv[0]!r} is unavailable: {broken[argv[0]]}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
    from data.io import InputError
    try:
        return int(args._run(args) or 0)
    except (InputError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if os.environ.get("APP_DEBUG"):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
