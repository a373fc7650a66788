#!/usr/bin/env bash
# Static checks, as CI runs them before the tests: lint (ruff), types (mypy), layers (import-linter),
# import circles (scripts/import_cycles.py), dead code (vulture), and formatting (ruff format) once
# the tree is formatted.
#   bash scripts/check.sh
# Installs the checkers into .venv on first use (the `dev` extra).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "no .venv: run 'bash scripts/setup.sh' first" >&2; exit 2; }
if [ ! -x .venv/bin/ruff ] || [ ! -x .venv/bin/mypy ] || [ ! -x .venv/bin/lint-imports ] || [ ! -x .venv/bin/vulture ]; then
  .venv/bin/python -m pip install -q -e ".[dev]" 2>&1 | grep -v "WARNING: Location" || true
fi
echo "check: ruff" >&2
.venv/bin/ruff check toolidx tests benchmarks scripts training
echo "check: mypy" >&2
.venv/bin/mypy
echo "check: import layers" >&2
.venv/bin/lint-imports --no-cache
echo "check: import circles" >&2
.venv/bin/python scripts/import_cycles.py
echo "check: dead code" >&2
.venv/bin/vulture
# Formatting, last: [tool.ruff.format] in pyproject.toml (`ruff format` fixes what this finds)
echo "check: format" >&2
.venv/bin/ruff format --check toolidx tests benchmarks scripts training
