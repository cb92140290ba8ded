#!/usr/bin/env bash
# Installs everything (scripts/setup.sh, into .venv), then checks the installation, lints (ruff),
# type-checks (mypy on data/, models/, reading/ and app/) and runs the whole test suite. Extra arguments go to pytest
# (e.g. `bash scripts/test.sh -m "not heavy"` while iterating). Any failing step fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
PY=.venv/bin/python
echo "[test] environment: every package the product uses imports in .venv"
$PY scripts/check_env.py || exit 1
echo "[test] ruff (rules in pyproject.toml)"
$PY -m ruff check . || { echo "[test] ruff found problems (fix them, or 'ruff check --fix')"; exit 1; }
echo "[test] mypy (data/, models/, reading/, app/)"
$PY -m mypy || { echo "[test] mypy found type errors"; exit 1; }
$PY -m pytest "$@"
rc=$?
if [ "$rc" = 5 ]; then
  # pytest exit 5 = "no tests ran". With a selection (-m/-k/paths) that can be legitimate; with no
  # arguments it means collection is broken, which must fail CI.
  if [ "$#" -gt 0 ]; then echo "[test] no tests matched the selection: $*"; exit 0; fi
  echo "[test] pytest collected no tests: the suite is broken"; exit 1
fi
exit $rc
