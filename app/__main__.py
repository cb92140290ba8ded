"""Entry point of `python -m app`; the commands live in app/cli.py."""
import sys

from app.cli import main

sys.exit(main())
