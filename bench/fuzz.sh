#!/usr/bin/env bash
# bench/fuzz.sh — run every fuzz target of the module for a while (not in CI).
#
# Each target runs FUZZ_TIME (default 5m) with a short -fuzzminimizetime, so
# that time goes to executing inputs rather than to minimizing each new
# interesting one (the default is 60 s per input). A crasher fails the
# script; go test writes it under the package's testdata/fuzz/<Target>/.
# Prints one line per target: executions, executions per second, new
# interesting inputs, and ok or FAIL. The logs stay in $FUZZ_DIR.
#
# Knobs (environment):
#   FUZZ_TIME=5m           time per target
#   FUZZ_MINIMIZE=2s       -fuzzminimizetime
#   FUZZ_PARALLEL=N        -parallel (default: GOMAXPROCS)
#   FUZZ_TARGETS="..."     package:Target pairs to run (default: every Fuzz* found)
#   FUZZ_DIR=DIR           logs (default build/fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TIME=${FUZZ_TIME:-5m}
MIN=${FUZZ_MINIMIZE:-2s}
DIR=${FUZZ_DIR:-build/fuzz}
PAR=()
[ -n "${FUZZ_PARALLEL:-}" ] && PAR=(-parallel "$FUZZ_PARALLEL")
mkdir -p "$DIR"

targets=${FUZZ_TARGETS:-}
if [ -z "$targets" ]; then
  # Every "func FuzzX(" in a _test.go file of this module, as ./pkg:FuzzX.
  targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bench/zstdcgo/' | sort | while read -r f; do
    for t in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
      echo "$(dirname "$f"):$t"
    done
  done)
fi

printf '%-32s %-22s %14s %10s %12s  %s\n' package target execs execs/s interesting result
fail=0
for pt in $targets; do
  pkg=${pt%%:*} t=${pt##*:}
  log="$DIR/$(echo "${pkg#./}" | tr / _)_$t.log"
  set +e
  $GO test -tags disable_grpc_modules -run '^$' -fuzz "^$t\$" -fuzztime "$TIME" -fuzzminimizetime "$MIN" "${PAR[@]}" "$pkg" >"$log" 2>&1
  rc=$?
  set -e
  # Last progress line: "fuzz: elapsed: 5m0s, execs: 123 (410/sec), new interesting: 7 (total: 30)"
  line=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1 || true)
  execs=$(echo "$line" | sed -nE 's/.*execs: ([0-9]+) .*/\1/p')
  # Average rate over the whole run (the line's own rate is the last 3 s).
  elapsed=$(echo "$line" | sed -nE 's/^fuzz: elapsed: ([0-9hms]+),.*/\1/p')
  secs=$(echo "$elapsed" | awk '{ t = 0; s = $0
    if (match(s, /[0-9]+h/)) t += 3600 * substr(s, RSTART, RLENGTH - 1)
    if (match(s, /[0-9]+m/)) t += 60 * substr(s, RSTART, RLENGTH - 1)
    if (match(s, /[0-9]+s/)) t += substr(s, RSTART, RLENGTH - 1)
    print t }')
  [ -n "$execs" ] && [ "${secs:-0}" -gt 0 ] && secs=$((execs / secs)) || secs=?
  newi=$(echo "$line" | sed -nE 's/.*new interesting: ([0-9]+).*/\1/p')
  res=ok
  if [ $rc -ne 0 ] || grep -q -- '--- FAIL' "$log"; then res="FAIL (see $log)"; fail=1; fi
  printf '%-32s %-22s %14s %10s %12s  %s\n' "$pkg" "$t" "${execs:-?}" "${secs:-?}" "${newi:-?}" "$res"
done
exit $fail
