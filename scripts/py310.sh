#!/usr/bin/env bash
# The fast tier on Python 3.10, the oldest Python pyproject.toml's requires-python allows (the
# main .venv runs a newer one, so 3.11-only syntax or stdlib would pass there unnoticed):
#   bash scripts/py310.sh [pytest args]
# A venv on 3.10 in .venv-py310 (made once, then reused), toolidx installed with its test extra,
# then `pytest -m "not slow and not model and not servers"`. Python 3.10: $PYTHON310, else
# python3.10 on PATH, else pyenv's newest 3.10. Missing: says so and fails under CI=true (skips
# otherwise, exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
is310() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; }
PY=""
# a pyenv shim on PATH answers only when 3.10 is pyenv's selected version: then the install itself
for c in "${PYTHON310:-}" "$(command -v python3.10 || true)" \
         "$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10 2>/dev/null | sort -V | tail -1 || true)"; do
  if is310 "$c"; then PY=$c; break; fi
done
if [ -z "$PY" ]; then
  msg="py310: no Python 3.10 (set PYTHON310, put python3.10 on PATH, or 'pyenv install 3.10')"
  case "${CI:-}" in
    1|true|yes) echo "$msg" >&2; exit 1 ;;
    *) echo "$msg: skipped" >&2; exit 0 ;;
  esac
fi
VENV=.venv-py310
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
echo "py310: $("$VENV/bin/python" -V) in $VENV" >&2
# pip prints a warning per unreachable mirror location on some machines; keep real errors
"$VENV/bin/python" -m pip install -q -e ".[test]" 2>&1 | grep -v "WARNING: Location" || true
"$VENV/bin/python" -c "import toolidx, sqlean, sqlite_vec, fastembed, mcp" \
  || { echo "py310: install failed (see above)" >&2; exit 1; }
exec "$VENV/bin/pytest" -m "not slow and not model and not servers" -n "${TOOLIDX_TEST_WORKERS:-2}" -q "$@"
