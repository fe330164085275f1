#!/usr/bin/env bash
# bench/instant.sh — instant access benchmarks (bench/README.md, "Instant access").
#
# On the realistic VM image (scripts/make-vm-image.sh, ext4 from real files,
# default 1 GiB), backed up into a local datastore:
#   1. throughput: nbdcopy of the image through `pbsdirect serve-nbd` from the
#      local store, against `pbsdirect restore` of it to a file, same run,
#      medians of BENCH_RUNS runs; goal: nbdcopy ≥ 70 % of restore;
#   2. memory: peak RSS of serve-nbd during those copies, against
#      --cache-size + 64 MiB;
#   3. bucket: GETs per random 4 KiB read of a cold chunk through serve-nbd
#      from an S3 bucket (versitygw behind the counting faultproxy); goal: 1.
# Needs nbdcopy (libnbd-bin), qemu-io (qemu-utils), mkfs.ext4, versitygw
# (scripts/install-test-servers.sh) for part 3.
#
# Knobs: BENCH_DIR (default build/bench), BENCH_VM_MIB (1024), BENCH_RUNS (3),
# BENCH_CACHE (256MiB), BENCH_COLD_READS (20).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
VM_MIB=${BENCH_VM_MIB:-1024}
RUNS=${BENCH_RUNS:-3}
CACHE=${BENCH_CACHE:-256MiB}
COLD=${BENCH_COLD_READS:-20}
mkdir -p "${BENCH_DIR:-build/bench}"
WORK=$(cd "${BENCH_DIR:-build/bench}" && pwd)/instant
mkdir -p "$WORK" "$WORK/data"
BIN=$WORK/pbsdirect
SNAP=vm/100/2026-11-29T10:00:00Z
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
log() { echo "== $*" >&2; }
for tool in nbdcopy nbdinfo qemu-io mkfs.ext4 bc /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench/instant.sh: $tool missing (apt-get install libnbd-bin qemu-utils e2fsprogs time)" >&2; exit 2; }
done

$GO build -tags "$TAGS" -o "$BIN" ./cmd/pbsdirect
IMG=$WORK/data/vm-${VM_MIB}M.img
if [ ! -e "$IMG.done" ]; then
  log "image: scripts/make-vm-image.sh $VM_MIB MiB"
  bash scripts/make-vm-image.sh "$IMG" "$VM_MIB" >&2
  touch "$IMG.done"
fi
STORE=$WORK/s3/bkt/ds
if [ ! -e "$STORE.done" ]; then
  rm -rf "$STORE"
  "$BIN" backup --store "$STORE" --backup-type vm --backup-id 100 --backup-time 2026-11-29T10:00:00Z "drive-scsi0.img:$IMG" >&2
  touch "$STORE.done"
fi
WANT=$(sha256sum < "$IMG" | cut -d' ' -f1)

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }

# 1 + 2: restore vs nbdcopy through the export, local store.
SOCK=$WORK/nbd.sock
restore_t=() nbd_t=() rss=()
for run in $(seq "$RUNS"); do
  rm -f "$WORK/restored.raw"
  t0=$(now)
  "$BIN" restore --store "$STORE" "$SNAP" drive-scsi0 "$WORK/restored.raw" >/dev/null
  restore_t+=("$(echo "$(now) - $t0" | bc)")

  rm -f "$WORK/nbdcopy.raw" "$SOCK"
  /usr/bin/time -f "%M" -o "$WORK/serve.rss" "$BIN" serve-nbd --store "$STORE" --cache-size "$CACHE" --socket "$SOCK" "$SNAP" > "$WORK/serve.out" 2> "$WORK/serve.err" &
  spid=$!
  for _ in $(seq 200); do grep -q nbd+unix "$WORK/serve.out" 2>/dev/null && break; sleep 0.05; done
  t0=$(now)
  nbdcopy "nbd+unix:///drive-scsi0?socket=$SOCK" "$WORK/nbdcopy.raw"
  nbd_t+=("$(echo "$(now) - $t0" | bc)")
  # /usr/bin/time's child is serve-nbd: stop it with SIGTERM.
  pkill -TERM -P "$spid" 2>/dev/null || kill -TERM "$spid"
  wait "$spid" || true
  rss+=("$(cat "$WORK/serve.rss" | tail -1)")
  got=$(sha256sum < "$WORK/nbdcopy.raw" | cut -d' ' -f1)
  [ "$got" = "$WANT" ] || { echo "nbdcopy result differs from the image" >&2; exit 1; }
  log "run $run: restore ${restore_t[-1]}s, nbdcopy ${nbd_t[-1]}s, serve-nbd peak RSS $((rss[-1] / 1024)) MiB"
done
R=$(printf '%s\n' "${restore_t[@]}" | median)
N=$(printf '%s\n' "${nbd_t[@]}" | median)
PEAK=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
case $CACHE in *GiB|*G) CACHE_MIB=$(( ${CACHE%%[GgMm]*} * 1024 ));; *MiB|*M) CACHE_MIB=${CACHE%%[Mm]*};; esac
MIB=$VM_MIB
echo
echo "| what | seconds (median of $RUNS) | MiB/s |"
echo "|---|---|---|"
echo "| pbsdirect restore to a file | $R | $(echo "scale=1; $MIB / $R" | bc) |"
echo "| nbdcopy from serve-nbd | $N | $(echo "scale=1; $MIB / $N" | bc) |"
RATIO=$(echo "scale=3; $R / $N" | bc)
echo
echo "nbdcopy / restore throughput: $(echo "scale=1; $RATIO * 100" | bc) % (goal ≥ 70 %): $( [ "$(echo "$RATIO >= 0.70" | bc)" = 1 ] && echo PASS || echo FAIL)"
echo "serve-nbd peak RSS: $((PEAK / 1024)) MiB with --cache-size $CACHE (goal ≤ $((CACHE_MIB + 64)) MiB): $( [ $((PEAK / 1024)) -le $((CACHE_MIB + 64)) ] && echo PASS || echo FAIL)"

# 3: GETs per cold 4 KiB read from a bucket.
VERSITYGW=${VERSITYGW:-$(command -v versitygw || echo "$($GO env GOPATH)/bin/versitygw")}
if [ ! -x "$VERSITYGW" ] || ! $GO build -tags "$TAGS" -o "$WORK/faultproxy" ./internal/faultproxy/cmd/faultproxy 2>/dev/null; then
  echo "cold reads from a bucket: skipped (versitygw or faultproxy missing: scripts/install-test-servers.sh)"
  exit 0
fi
export AWS_ACCESS_KEY_ID=pbsdirect-bench AWS_SECRET_ACCESS_KEY=pbsdirect-bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
PORT=$(( 20000 + RANDOM % 20000 ))
"$VERSITYGW" --port "127.0.0.1:$PORT" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --region us-east-1 --quiet posix "$WORK/s3" > "$WORK/versitygw.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.05; done
# requests N: serve-nbd through a fresh counting proxy, doing N cold reads
# (offsets in distinct data chunks); prints the proxy's request count.
requests() {
  "$WORK/faultproxy" -listen 127.0.0.1:0 -target "http://127.0.0.1:$PORT" > "$WORK/fp.out" 2> "$WORK/fp.err" &
  local fp=$! url=""
  for _ in $(seq 100); do url=$(sed -n 's/^faultproxy listening on //p' "$WORK/fp.out"); [ -n "$url" ] && break; sleep 0.05; done
  rm -f "$SOCK"
  "$BIN" serve-nbd --store s3://bkt/ds --s3-endpoint "$url" --socket "$SOCK" "$SNAP" > "$WORK/serve.out" 2> "$WORK/serve.err" &
  local sp=$!
  for _ in $(seq 200); do grep -q nbd+unix "$WORK/serve.out" 2>/dev/null && break; sleep 0.05; done
  # Every third data chunk, in random order: no two reads in neighbouring
  # chunks, so nothing looks sequential.
  local cmds=() off
  while read -r off; do
    cmds+=(-c "read $(( off + 4096 * (RANDOM % 1024) )) 4k")
  done < <(nbdinfo --map "nbd+unix:///drive-scsi0?socket=$SOCK" |
    awk '$NF == "data" { n = $2 / 4194304; for (k = 0; k < n; k++) print $1 + k * 4194304 }' |
    awk 'NR % 3 == 1' | shuf | head -n "$1" | tee "$WORK/reads.list")
  # nbdinfo --map asks for block status only: no chunk is read.
  [ "$1" = 0 ] || qemu-io -r -f raw "${cmds[@]}" "nbd+unix:///drive-scsi0?socket=$SOCK" > /dev/null
  kill -TERM "$sp"; wait "$sp" || true
  kill -TERM "$fp"; wait "$fp" || true
  sed -n 's/^faultproxy: \([0-9]*\) requests.*/\1/p' "$WORK/fp.err"
}
requests 0 > "$WORK/base.count"
base=$(cat "$WORK/base.count")
requests "$COLD" > "$WORK/with.count"
with=$(cat "$WORK/with.count")
reads=$(grep -c . "$WORK/reads.list" || true)
echo "cold 4 KiB reads from the bucket: $reads reads cost $((with - base)) requests ($base at start-up: manifest, index, listing): $(echo "scale=2; ($with - $base) / $reads" | bc) GET per read (goal 1): $( [ $((with - base)) = "$reads" ] && echo PASS || echo FAIL)"
