"""The errors training code raises, in one hierarchy, and the exit statuses the CLI maps them to.

Library functions (train, retrain, pretrain, evaluate, the config loader) raise these and never end
the process; only `python -m training` (training/__main__.py) turns them into a one-line message on
stderr and an exit status, the convention of app/cli.py:

    0  done
    1  failed after work started (a run that trained but could not finish, a model not promoted)
    2  refused before any work: a bad option, config, corpus, model or checkpoint; nothing was written

Each class carries its status in `exit_status`, so the CLI needs no table of its own; errors of the
layers below (data.corpus.CorpusError, models.checkpoint.CheckpointError, models.extractor.ModelDirError)
are input problems and map to 2 (`exit_status_of`).
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1        # the command ran and failed part way (something may have been written)
EXIT_REFUSED = 2       # refused before any work: nothing was trained or written

EXIT_STATUS_HELP = """\
exit status (every command):
  0  done
  1  the run started and then failed (for retrain: a version exported but not promoted); the reason is on stderr
  2  refused before any work (bad option, config key, corpus, model or checkpoint); one line on stderr,
     nothing trained or written"""


class TrainingError(Exception):
    """A training run that cannot go on; the message says why and what to do. Raised after work
    started (exit status 1) unless a subclass says otherwise."""
    exit_status = EXIT_FAILED


class RefusedError(TrainingError):
    """Bad input found before any work (exit status 2): nothing was trained or written."""
    exit_status = EXIT_REFUSED


class ConfigError(RefusedError, ValueError):
    """A config or option that cannot be used: an unknown key (named with the nearest valid one), a
    value of the wrong type, a bad pipeline combination. A ValueError too, for callers that catch those."""


class ResumeError(RefusedError):
    """A checkpoint that belongs to another run (other corpus, step count or pipeline split)."""


class RetrainError(RefusedError):
    """A retrain that cannot go on (bad input, a corpus too small to judge the new model); the message
    says why and what to do. `python -m training retrain` prints it and exits 2."""


def exit_status_of(exc: BaseException) -> int | None:
    """The exit status for an error the CLI reports as one line, or None for a real bug (a traceback)."""
    if isinstance(exc, TrainingError):
        return exc.exit_status
    from data.corpus import CorpusError
    from models.checkpoint import CheckpointError
    from models.extractor import ModelDirError
    if isinstance(exc, (CorpusError, CheckpointError, ModelDirError)):
        return EXIT_REFUSED
    return None
