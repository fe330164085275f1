#!/usr/bin/env bash
# bench/fleet.sh: fleet-scale verify benchmarks (issue 14), each against a
# baseline measured in the same run:
#   small   500 one-chunk snapshots from a bucket (versitygw on loopback):
#           through a proxy adding 20 ms to every request vs direct
#           (goal: at most 1.5x), and the sequential --parallel 1 for context
#   shards  a 512 MiB image in 64 KiB chunks (8192 distinct chunks): 8 shard
#           processes at once on this machine; each shard's share of the
#           chunks vs 1/8 (goal: within +-10 %)
#   vm      verify of the realistic VM image (scripts/make-vm-image.sh,
#           BENCH_VM_MIB, default 2048) vs its restore, MB/s of image
#           (goal: verify at least as fast)
#   rss     peak RSS of an unsharded verify of a store with BENCH_MANY
#           (default 1000000) distinct tiny chunks, and of one shard of 8
#
#   bash bench/fleet.sh                 # all parts
#   BENCH_FLEET="small shards" bash bench/fleet.sh
#
# Needs versitygw (scripts/install-test-servers.sh), jq, GNU time,
# mkfs.ext4. Work files go to BENCH_DIR (default build/bench-fleet).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TAGS=disable_grpc_modules
WORK=${BENCH_DIR:-build/bench-fleet}
PARTS=${BENCH_FLEET:-small shards vm rss}
LATENCY=${BENCH_LATENCY:-20ms}
VM_MIB=${BENCH_VM_MIB:-2048}
MANY=${BENCH_MANY:-1000000}
mkdir -p "$WORK/bin"
WORK=$(cd "$WORK" && pwd)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
log() { echo "fleet: $*" >&2; }
has() { [[ " $PARTS " == *" $1 "* ]]; }
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc -l; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

$GO build -tags "$TAGS" -o "$WORK/bin/pbsdirect" ./cmd/pbsdirect
$GO build -tags "$TAGS" -o "$WORK/bin/manychunks" ./bench/cmd/manychunks
PBS=$WORK/bin/pbsdirect
RESULTS=()
result() { RESULTS+=("$*"); echo "RESULT $*"; }

start_s3() {
  local root=$1 gw
  gw=$(command -v versitygw || echo "$($GO env GOPATH)/bin/versitygw")
  $GO build -tags "$TAGS" -o "$WORK/bin/faultproxy" ./internal/faultproxy/cmd/faultproxy
  export AWS_ACCESS_KEY_ID=fleet AWS_SECRET_ACCESS_KEY=fleet-secret-key AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  local port=$((20000 + RANDOM % 20000))
  "$gw" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --region us-east-1 --quiet posix "$root" > "$WORK/versitygw.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.05; done
  S3=http://127.0.0.1:$port
  "$WORK/bin/faultproxy" -listen 127.0.0.1:0 -target "$S3" -latency "$LATENCY" > "$WORK/faultproxy.out" 2> "$WORK/faultproxy.log" &
  PIDS+=("$!")
  for _ in $(seq 100); do PROXY=$(sed -n 's/^faultproxy listening on //p' "$WORK/faultproxy.out"); [ -n "$PROXY" ] && break; sleep 0.05; done
  log "versitygw on $S3, faultproxy (+$LATENCY) on $PROXY"
}

if has small; then
  root=$WORK/s3
  store=$root/fleet/small
  if [ ! -e "$store.done" ]; then
    rm -rf "$store"; mkdir -p "$store"
    log "small: writing 500 one-chunk snapshots"
    "$WORK/bin/manychunks" -store "$store" -snapshots 500 >&2
    touch "$store.done"
  fi
  start_s3 "$root"
  run_small() { # endpoint extra-args...
    local ep=$1; shift
    local t0 t1
    t0=$(now)
    "$PBS" verify --store s3://fleet/small --s3-endpoint "$ep" --bucket-layout plain --output-format json "$@" > "$WORK/small.json"
    t1=$(now)
    [ "$(jq '.snapshots | length' "$WORK/small.json")" = 500 ] || { log "small: wrong report"; exit 1; }
    secs "$t0" "$t1"
  }
  run_small "$S3" > /dev/null # warm the page cache
  direct=$(for _ in 1 2 3; do run_small "$S3"; done | median)
  proxied=$(for _ in 1 2 3; do run_small "$PROXY"; done | median)
  seq1=$(run_small "$PROXY" --parallel 1)
  r=$(ratio "$proxied" "$direct")
  ok=$(echo "$r <= 1.5" | bc -l)
  result "small: 500 one-chunk snapshots: direct ${direct}s, +$LATENCY proxy ${proxied}s (ratio ${r}, goal <= 1.5: $([ "$ok" = 1 ] && echo PASS || echo FAIL)); sequential (--parallel 1) through the proxy ${seq1}s"
fi

if has shards; then
  store=$WORK/shards
  if [ ! -e "$store.done" ]; then
    rm -rf "$store"; mkdir -p "$store"
    head -c $((512 << 20)) /dev/urandom > "$WORK/shards.raw"
    "$PBS" backup --store "$store" --backup-type vm --backup-id 1 --backup-time "2026-11-29T10:00:00Z" --chunk-size 64 "drive-scsi0.img:$WORK/shards.raw" > /dev/null
    rm -f "$WORK/shards.raw"
    touch "$store.done"
  fi
  t0=$(now)
  "$PBS" verify --store "$store" --output-format json > "$WORK/shard-all.json"
  t1=$(now)
  total=$(jq '."chunks-checked"' "$WORK/shard-all.json")
  t2=$(now)
  shard_pids=()
  for i in $(seq 0 7); do
    JOB_COMPLETION_INDEX=$i "$PBS" verify --store "$store" --shard auto/8 --report "$WORK/shard-$i.json" --output-format json > /dev/null &
    shard_pids+=("$!")
  done
  wait "${shard_pids[@]}"
  t3=$(now)
  counts=$(for i in $(seq 0 7); do jq '."chunks-checked"' "$WORK/shard-$i.json"; done | tr '\n' ' ')
  worst=$(for c in $counts; do echo "scale=4; ($c * 8 / $total - 1) * 100" | bc -l | tr -d -; done | sort -n | tail -1)
  sum=$(echo "$counts" | tr ' ' '+' | sed 's/+$//' | bc)
  "$PBS" report merge --output-format json "$WORK"/shard-?.json > "$WORK/shard-merged.json" || true
  ok=$(echo "$worst <= 10" | bc -l)
  result "shards: $total chunks, 8 shards checked [$counts] (sum $sum), worst deviation from 1/8: ${worst} % (goal <= 10 %: $([ "$ok" = 1 ] && echo PASS || echo FAIL)); unsharded $(secs "$t0" "$t1")s, 8 shard processes at once $(secs "$t2" "$t3")s; merged report chunks-checked $(jq '."chunks-checked"' "$WORK/shard-merged.json")"
fi

if has vm; then
  img=$WORK/vm-${VM_MIB}.img
  store=$WORK/vm
  if [ ! -e "$store.done" ]; then
    bash scripts/make-vm-image.sh "$img" "$VM_MIB" >&2
    rm -rf "$store"; mkdir -p "$store"
    "$PBS" backup --store "$store" --backup-type vm --backup-id 1 --backup-time "2026-11-29T10:00:00Z" "drive-scsi0.img:$img" > /dev/null
    rm -f "$img"
    touch "$store.done"
  fi
  target=$WORK/vm-restored.img
  rest=() ver=()
  for _ in 1 2 3 4 5; do
    rm -f "$target"
    rest+=("$("$PBS" restore --store "$store" --output-format json vm/1 drive-scsi0 "$target" | jq '."mib-per-second"')")
    # Both rates from the commands' own clocks (store opened to done).
    "$PBS" verify --store "$store" --output-format json vm/1 > "$WORK/vm-verify.json"
    ver+=("$(jq '.bytes / 1048576 / .seconds' "$WORK/vm-verify.json")")
  done
  rm -f "$target"
  rm_=$(printf '%s\n' "${rest[@]}" | median); vm_=$(printf '%s\n' "${ver[@]}" | median)
  r=$(ratio "$vm_" "$rm_")
  ok=$(echo "$r >= 1" | bc -l)
  result "vm: ${VM_MIB} MiB image: restore $(printf %.0f "$rm_") MiB/s, verify $(printf %.0f "$vm_") MiB/s (median of 5 alternating runs; verify/restore ${r}, goal >= 1: $([ "$ok" = 1 ] && echo PASS || echo FAIL))"
fi

if has rss; then
  store=$WORK/many-$MANY
  if [ ! -e "$store.done" ]; then
    rm -rf "$store"
    log "rss: writing $MANY distinct chunks"
    "$WORK/bin/manychunks" -store "$store" -n "$MANY" >&2
    touch "$store.done"
  fi
  /usr/bin/time -f "%M %e" -o "$WORK/rss-all" "$PBS" verify --store "$store" > /dev/null
  /usr/bin/time -f "%M %e" -o "$WORK/rss-shard" "$PBS" verify --store "$store" --shard 0/8 > /dev/null
  read -r kib s < "$WORK/rss-all"
  read -r kib8 s8 < "$WORK/rss-shard"
  per=$((kib * 1024 / MANY))
  result "$(printf 'rss: %d distinct chunks: unsharded verify peak RSS %d MiB (%ss, %d bytes per chunk), shard 0/8 %d MiB (%ss)' "$MANY" $((kib / 1024)) "$s" "$per" $((kib8 / 1024)) "$s8")"
fi

echo
echo "fleet benchmark results:"
printf '  %s\n' "${RESULTS[@]}"
