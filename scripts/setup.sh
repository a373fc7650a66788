#!/usr/bin/env bash
# One command from a fresh clone: install toolidx into .venv, crawl the bundled example (a real
# stdio MCP server, examples/notes_server.py, and two saved tool lists), search it.
#   bash scripts/setup.sh
# The example is embedded with toolidx's own model, shipped inside the package (offline, no
# download), as every later crawl of yours is unless you name another (TOOLIDX_MODEL_PATH, --model).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "toolidx needs Python >= 3.10" >&2; exit 2; }
. scripts/steps.sh
# Times measured on a 2-core machine, idle / busy with other work: the venv 4 / 14 s, pip's update
# 6 s, the install 20 / 72 s with pip's cache warm (~100 s on a first install, downloading), the
# crawl and two searches 4 / 12 s.
[ -x .venv/bin/python ] || step "creating .venv" "5-15 s" "$PY" -m venv .venv
# pip prints a warning per unreachable mirror location on some machines; keep real errors
pipq() { "$@" 2>&1 | grep -v "WARNING: Location" || true; }
step "updating pip" "5-15 s" pipq .venv/bin/python -m pip install -q --upgrade pip
step "installing toolidx and its test tools into .venv" "20-80 s, ~2 min on a first install" \
  pipq .venv/bin/python -m pip install -q -e ".[test]"
.venv/bin/python -c "import toolidx, sqlean, sqlite_vec, fastembed, mcp" \
  || { echo "setup: install failed (see above)" >&2; exit 1; }
rm -f example.db example.db-wal example.db-shm
# the notes server runs under toolidx's own Python, the venv's (live.yaml says ${TOOLIDX_PYTHON})
echo "setup: crawling examples/live.yaml into example.db, then two searches (usually 5-15 s)" >&2
.venv/bin/toolidx crawl --config examples/live.yaml --db example.db
.venv/bin/toolidx search "convert a pdf to text" --db example.db -n 3
.venv/bin/toolidx search "save a note" --db example.db -n 3
echo "ready: .venv/bin/toolidx --help   (index: example.db)"
