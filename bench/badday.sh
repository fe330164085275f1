#!/usr/bin/env bash
# bench/badday.sh — restores on the bad day (issue 10): a bucket restore
# through the 20 ms latency proxy, undisturbed (the baseline of this run),
# then with a throttling window (every request answered 503 SlowDown with
# Retry-After for 10 s, then for 60 s), and over a 400 KiB/s link; each
# checked byte for byte (sha256), timed, and its peak RSS taken
# (/usr/bin/time). Prints one table and PASS/FAIL goal lines:
#   - the 10 s window costs at most 15 s over the undisturbed restore;
#   - the 60 s window and the slow link complete;
#   - a restore interrupted (SIGINT) at 50 % (its progress line) and continued with --resume takes at most 55 %
#     of the undisturbed time;
#   - peak RSS < 256 MiB in every run.
#
# Knobs (environment):
#   BADDAY_MIB=N       image size in MiB (random data, 4 MiB chunks; default 128)
#   BADDAY_LINK_MIB=N  image restored over the slow link (default 32: about 82 s)
#   BADDAY_SKIP="..."  runs to skip, among: window60 link resume
#   BENCH_DIR=DIR      work directory (default build/bench-badday)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MIB=${BADDAY_MIB:-128}
LINK_MIB=${BADDAY_LINK_MIB:-32}
SKIP=" ${BADDAY_SKIP:-} "
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
mkdir -p "${BENCH_DIR:-build/bench-badday}"
WORK=$(cd "${BENCH_DIR:-build/bench-badday}" && pwd)
BIN=$WORK/pbsdirect
FP=$WORK/faultproxy
SNAP=vm/100/2026-11-29T10:00:00Z
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done; rm -rf "$WORK/out" "$WORK/s3root"; }
trap cleanup EXIT
log() { printf '[badday %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

log "building pbsdirect and faultproxy"
$GO build -tags "$TAGS" -o "$BIN" ./cmd/pbsdirect
$GO build -tags "$TAGS" -o "$FP" ./internal/faultproxy/cmd/faultproxy
VERSITYGW=${VERSITYGW:-$(command -v versitygw || echo "$($GO env GOPATH)/bin/versitygw")}
[ -x "$VERSITYGW" ] || { log "versitygw not installed (scripts/install-test-servers.sh)"; exit 1; }

rm -rf "$WORK/s3root" "$WORK/out"; mkdir -p "$WORK/s3root/bench" "$WORK/out"
export AWS_ACCESS_KEY_ID=badday AWS_SECRET_ACCESS_KEY=badday-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
port=$(free_port)
"$VERSITYGW" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" \
  --region us-east-1 --quiet posix "$WORK/s3root" > "$WORK/versitygw.log" 2>&1 &
PIDS+=($!)
S3=http://127.0.0.1:$port
for _ in $(seq 50); do curl -s -o /dev/null "$S3/" && break; sleep 0.1; done

for n in "$MIB" "$LINK_MIB"; do
  [ -f "$WORK/disk-$n.raw" ] || head -c "${n}M" /dev/urandom > "$WORK/disk-$n.raw"
  "$BIN" backup --store "s3://bench/img$n" --s3-endpoint "$S3" --backup-type vm --backup-id 100 \
    --backup-time 2026-11-29T10:00:00Z "drive-scsi0.img:$WORK/disk-$n.raw" > /dev/null
done

# proxy ARGS... starts a faultproxy in front of versitygw and sets PROXY.
proxy() {
  "$FP" -listen 127.0.0.1:0 -target "$S3" "$@" > "$WORK/fp.out" 2> "$WORK/fp.log" &
  PROXY_PID=$!
  PIDS+=($PROXY_PID)
  for _ in $(seq 50); do PROXY=$(sed -n 's/^faultproxy listening on //p' "$WORK/fp.out"); [ -n "$PROXY" ] && break; sleep 0.1; done
}

# run NAME MIB PROXY-ARGS... restores image MIB through a fresh proxy and
# prints "NAME seconds rss-KiB retries throttled limit-decreases".
run() {
  local name=$1 n=$2; shift 2
  proxy "$@"
  rm -f "$WORK/out/$name.raw"
  /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$BIN" restore --output-format json --store "s3://bench/img$n" \
    --s3-endpoint "$PROXY" "$SNAP" drive-scsi0 "$WORK/out/$name.raw" > "$WORK/$name.json" 2> "$WORK/$name.err" || {
    log "$name FAILED: $(tail -c 400 "$WORK/$name.err")"; echo "$name FAIL - - - - -"; kill "$PROXY_PID"; return; }
  kill "$PROXY_PID"
  [ "$(sha256sum < "$WORK/out/$name.raw")" = "$(sha256sum < "$WORK/disk-$n.raw")" ] || { log "$name: WRONG BYTES"; echo "$name WRONG - - - - -"; return; }
  rm -f "$WORK/out/$name.raw"
  read -r secs rss < "$WORK/time.txt"
  echo "$name $secs $rss $(jq -r '[.retries, (."bucket-requests".throttled // 0), (."bucket-requests"."limit-decreases" // 0)] | @tsv' "$WORK/$name.json")"
}

# resume_run NAME MIB: a restore through the 20 ms proxy stopped with
# SIGINT once its progress line says 50 % of the data is written (what is
# written is synced and journaled as it stops), then continued with --resume (timed): prints "NAME seconds rss-KiB
# retries resumed-chunks fetched-chunks".
resume_run() {
  local name=$1 n=$2
  proxy -latency 20ms
  rm -f "$WORK/out/$name.raw"
  "$BIN" restore --progress lines --progress-interval 50ms --store "s3://bench/img$n" --s3-endpoint "$PROXY" \
    "$SNAP" drive-scsi0 "$WORK/out/$name.raw" > /dev/null 2> "$WORK/$name-1.err" &
  local pid=$!
  until grep -Eq ' (5[0-9]|[6-9][0-9]|100)% ' "$WORK/$name-1.err"; do sleep 0.01; done
  kill -INT "$pid"
  wait "$pid" || true
  /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$BIN" restore --resume --output-format json --store "s3://bench/img$n" \
    --s3-endpoint "$PROXY" "$SNAP" drive-scsi0 "$WORK/out/$name.raw" > "$WORK/$name.json" 2> "$WORK/$name.err" || {
    log "$name FAILED: $(tail -c 400 "$WORK/$name.err")"; echo "$name FAIL - - - - -"; kill "$PROXY_PID"; return; }
  kill "$PROXY_PID"
  [ "$(sha256sum < "$WORK/out/$name.raw")" = "$(sha256sum < "$WORK/disk-$n.raw")" ] || { log "$name: WRONG BYTES"; echo "$name WRONG - - - - -"; return; }
  rm -f "$WORK/out/$name.raw"
  read -r secs rss < "$WORK/time.txt"
  echo "$name $secs $rss $(jq -r '[.retries, ."resumed-chunks", ."chunks-fetched"] | @tsv' "$WORK/$name.json")"
}

results=()
log "undisturbed: ${MIB} MiB through the 20 ms proxy"
results+=("$(run base "$MIB" -latency 20ms)")
log "10 s SlowDown window (Retry-After: 5) after the first requests"
results+=("$(run window10 "$MIB" -latency 20ms -slowdown-after 8 -slowdown-for 10s -retry-after 5s)")
if [[ "$SKIP" != *" resume "* ]]; then
  log "interrupted (SIGINT) once half the chunks are durable, then --resume"
  results+=("$(resume_run resume50 "$MIB")")
fi
if [[ "$SKIP" != *" window60 "* ]]; then
  log "60 s SlowDown window (Retry-After: 5)"
  results+=("$(run window60 "$MIB" -latency 20ms -slowdown-after 8 -slowdown-for 60s -retry-after 5s)")
fi
if [[ "$SKIP" != *" link "* ]]; then
  log "${LINK_MIB} MiB over a 400 KiB/s link"
  results+=("$(run link400k "$LINK_MIB" -bandwidth 409600)")
fi

printf '\n| run | seconds | vs undisturbed | peak RSS MiB | retries | throttled (resume50: chunks resumed) | limit halvings (resume50: chunks fetched) |\n|---|---|---|---|---|---|---|\n'
base=$(awk '$1=="base"{print $2}' <<<"${results[0]}")
fail=0
for r in "${results[@]}"; do
  read -r name secs rss retries thr dec <<<"$r"
  if [ "$secs" = FAIL ] || [ "$secs" = WRONG ]; then printf '| %s | %s | | | | | |\n' "$name" "$secs"; fail=1; continue; fi
  printf '| %s | %.1f | %+.1f s | %.0f | %s | %s | %s |\n' "$name" "$secs" "$(echo "$secs - $base" | bc)" "$(echo "$rss / 1024" | bc)" "$retries" "$thr" "$dec"
  [ "$rss" -lt $((256 * 1024)) ] || { echo "FAIL: $name peak RSS $((rss / 1024)) MiB >= 256 MiB"; fail=1; }
  if [ "$name" = resume50 ]; then
    if (( $(echo "$secs <= $base * 0.55" | bc) )); then echo "PASS: resume after 50 % takes $(echo "scale=0; 100 * $secs / $base" | bc) % of the undisturbed restore (goal <= 55 %)"; else echo "FAIL: resume after 50 % takes $(echo "scale=0; 100 * $secs / $base" | bc) % of the undisturbed restore (goal <= 55 %)"; fail=1; fi
  fi
  if [ "$name" = window10 ]; then
    if (( $(echo "$secs <= $base + 15" | bc) )); then echo "PASS: 10 s SlowDown window costs $(echo "$secs - $base" | bc) s (goal <= 15 s)"; else echo "FAIL: 10 s SlowDown window costs $(echo "$secs - $base" | bc) s (goal <= 15 s)"; fail=1; fi
  fi
done
[ "$fail" = 0 ] && echo "PASS: every run byte-exact, peak RSS < 256 MiB"
exit "$fail"
