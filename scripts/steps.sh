# Sourced by setup.sh and test.sh: a long step says what it does and how long it usually takes
# before it starts, then a line every STEP_TICK_S seconds (10) until it ends. Nobody waits through
# a silence wondering whether it hangs (#45: a 100 s `pip install -q` said nothing at all).
#   step "installing toolidx" "20 s to 2 min" CMD ARGS...
step() {
  local what=$1 usually=$2
  shift 2
  echo "${STEP_PREFIX:-setup}: $what (usually $usually)..." >&2
  local parent=$$
  (
    n=0
    # sleep without the script's stderr: killed with the loop or not, it holds no pipe open
    while sleep "${STEP_TICK_S:-10}" </dev/null >/dev/null 2>&1 && kill -0 "$parent" 2>/dev/null; do
      n=$((n + ${STEP_TICK_S:-10}))
      echo "${STEP_PREFIX:-setup}: ... still $what (${n}s)" >&2
    done
  ) &
  local ticker=$! rc=0
  "$@" || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}
