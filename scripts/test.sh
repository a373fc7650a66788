#!/usr/bin/env bash
# One command runs the whole test suite with real components:
#   bash scripts/test.sh [pytest args]
# - the embedding model: TOOLIDX_MODEL_PATH, default ../shared/models/all-MiniLM-L6-v2-onnx-int8
# - the real MCP servers: TOOLIDX_TEST_SERVERS, default ~/.cache/toolidx/test-servers, installed
#   there (outside the clone) by ../shared/servers/setup.sh when missing
# Run scripts/setup.sh first (it creates .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/pytest ] || { echo "no .venv: run 'bash scripts/setup.sh' first" >&2; exit 2; }
SHARED=$(cd .. && pwd)/shared
if [ -z "${TOOLIDX_MODEL_PATH:-}" ] && [ -d "$SHARED/models/all-MiniLM-L6-v2-onnx-int8" ]; then
  export TOOLIDX_MODEL_PATH="$SHARED/models/all-MiniLM-L6-v2-onnx-int8"
fi
export TOOLIDX_TEST_SERVERS=${TOOLIDX_TEST_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/toolidx/test-servers}
if [ ! -f "$TOOLIDX_TEST_SERVERS/servers.json" ] && [ -x "$SHARED/servers/setup.sh" ]; then
  . scripts/steps.sh
  # measured: ~4.5 min on a fresh machine (npm's 9 servers most of it), 40 s with pip's and npm's caches
  STEP_PREFIX=test step "installing the 16 real MCP servers into $TOOLIDX_TEST_SERVERS, once" \
    "1-5 min; it names each of its 4 steps" bash "$SHARED/servers/setup.sh" "$TOOLIDX_TEST_SERVERS" >&2
fi
echo "test: running the suite on ${TOOLIDX_TEST_WORKERS:-2} workers (pytest prints its progress)" >&2
# two workers: the suite waits on servers and the model more than on one core
exec .venv/bin/pytest -n "${TOOLIDX_TEST_WORKERS:-2}" "$@"
