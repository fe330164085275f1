#!/usr/bin/env bash
# bench/run.sh — the pbsdirect benchmark suite (`make bench`). See bench/README.md.
#
# Generates every dataset at run time into $BENCH_DIR (default build/bench,
# gitignored), backs each up plain and encrypted into local datastores (and
# serves them from a loopback versitygw S3 server), times pbsdirect restores
# against its baselines (--jobs 1 --writers 0), its peers (desync extract, s5cmd raw
# download) and the machine's ceilings (decode × cores from bench/cmd/chunkbench, O_DIRECT write
# from fio and dd with at least as many writers as pbsdirect),
# and prints one table plus PASS/FAIL goal lines. The table is also saved as
# $BENCH_DIR/results.md and $BENCH_DIR/results.json.
#
# Knobs (environment):
#   BENCH_QUICK=1          1 GiB realistic image, 1 run per config (default: 2 GiB, 3 runs)
#   BENCH_RUNS=N           runs per config (median is reported)
#   BENCH_VM_MIB=N         size of the realistic VM image in MiB
#   BENCH_DATASETS="..."   datasets to run, among: vm random reuse sparse (default: all)
#   BENCH_SKIP="..."       parts to skip, among: random reuse sparse encrypted desync s3 proxy ceiling provider
#   BENCH_DIR=DIR          work directory (default build/bench)
#   BENCH_SPARSE_DIR=DIR   where the 64 TiB sparse image and its restore target live
#                          (default: BENCH_DIR if its filesystem takes 64 TiB files, else /dev/shm)
#   BENCH_S5CMD_WORKERS=N  s5cmd --numworkers (default 256, s5cmd's own default)
#   BENCH_LATENCY=20ms     latency the proxy adds to every request
#   BENCH_REGEN=1          regenerate the datasets even if cached in BENCH_DIR/data
#   BENCH_CONN_MIBPS=50    provider rows: cap of each connection (MiB/s) at the capped endpoint
#   BENCH_PROVIDER_LATENCY=20ms  provider rows: latency of the TLS endpoints
#   BENCH_RCLONE_TRANSFERS=32    provider rows: rclone --transfers (pbsdirect's fetchers)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  RUNS=${BENCH_RUNS:-1}
  VM_MIB=${BENCH_VM_MIB:-1024}
else
  RUNS=${BENCH_RUNS:-3}
  VM_MIB=${BENCH_VM_MIB:-2048}
fi
DATASETS=${BENCH_DATASETS:-vm random reuse sparse}
SKIP=" ${BENCH_SKIP:-} "
S5_WORKERS=${BENCH_S5CMD_WORKERS:-256}
LATENCY=${BENCH_LATENCY:-20ms}
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
CORES=$(nproc)
BIN=$ROOT/bin/pbsdirect
TIME=/usr/bin/time
SNAP_TIME=2026-11-29T10:00:00Z
DESYNC_VERSION=v1.0.4
S5CMD_VERSION=v2.3.0

mkdir -p "${BENCH_DIR:-build/bench}"
WORK=$(cd "${BENCH_DIR:-build/bench}" && pwd)
TOOLS=$WORK/tools
DATA=$WORK/data
# Datastores live in $WORK/stores/bench/<dataset>-<plain|encrypted>: the S3
# server serves $WORK/stores, so bucket "bench" holds the very same (warm)
# files under those prefixes, without a copy.
S3_ROOT=$WORK/stores
STORES=$S3_ROOT/bench
OUT=$WORK/out
TMP=$WORK/tmp
RECORDS=$WORK/records.jsonl
mkdir -p "$TOOLS" "$DATA" "$STORES" "$OUT" "$TMP" "$WORK/desync"
: > "$RECORDS"

fstype() { { findmnt -no FSTYPE -T "$1" 2>/dev/null || stat -f -c %T "$1"; } | head -n 1; }
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
skipped() { [[ "$SKIP" == *" $1 "* ]]; }
has_dataset() { [[ " $DATASETS " == *" $1 "* ]] && ! skipped "$1"; }
note() { log "note: $*"; jq -nc --arg t "$*" '{type:"note",text:$t}' >> "$RECORDS"; }

# ---------------------------------------------------------------- cleanup
PIDS=()
SPARSE_FILES=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
  done
  for f in "${SPARSE_FILES[@]}"; do rm -f "$f"; done
  rm -rf "$OUT" "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- prerequisites
[ -x "$BIN" ] || die "$BIN missing: run make build (make bench does)"
[ -x "$TIME" ] || die "$TIME missing: apt-get install time"
for c in jq mkfs.ext4 dd truncate fallocate; do command -v "$c" >/dev/null || die "$c missing"; done

log "building helpers (bench/cmd/chunkbench, bench/cmd/benchreport)"
$GO build -tags "$TAGS" -o "$TOOLS/chunkbench" ./bench/cmd/chunkbench
$GO build -tags "$TAGS" -o "$TOOLS/benchreport" ./bench/cmd/benchreport

# go_tool NAME PACKAGE VERSION: builds a peer from a throwaway module (cached).
go_tool() {
  local name=$1 pkg=$2 version=$3 mod=$4
  local bin=$TOOLS/$name-$version
  if [ ! -x "$bin" ]; then
    log "building $name $version from a throwaway module in $TOOLS/src-$name (cached afterwards)"
    rm -rf "$TOOLS/src-$name"
    mkdir -p "$TOOLS/src-$name"
    ( cd "$TOOLS/src-$name" &&
      GOFLAGS= $GO mod init bench.invalid/$name >/dev/null 2>&1 &&
      GOFLAGS= $GO get "$mod@$version" >/dev/null 2>&1 &&
      GOFLAGS= $GO build -mod=mod -trimpath -o "$bin" "$pkg" ) >&2 || { rm -f "$bin"; return 1; }
  fi
  echo "$bin"
}
DESYNC=""
if ! skipped desync; then
  DESYNC=$(go_tool desync github.com/folbricht/desync/cmd/desync $DESYNC_VERSION github.com/folbricht/desync/cmd/desync) ||
    { note "desync $DESYNC_VERSION could not be built: desync rows skipped"; DESYNC=""; }
fi
S5CMD=""
VERSITYGW=""
FAULTPROXY=""
if ! skipped s3; then
  S5CMD=$(go_tool s5cmd github.com/peak/s5cmd/v2 $S5CMD_VERSION github.com/peak/s5cmd/v2) ||
    { note "s5cmd $S5CMD_VERSION could not be built: s5cmd rows skipped"; S5CMD=""; }
  VERSITYGW=${VERSITYGW:-$(command -v versitygw || true)}
  [ -n "$VERSITYGW" ] || { [ -x "$($GO env GOPATH)/bin/versitygw" ] && VERSITYGW=$($GO env GOPATH)/bin/versitygw; } || true
  if [ -z "$VERSITYGW" ]; then
    note "versitygw not installed (scripts/install-test-servers.sh): bucket rows skipped"
  fi
  if ! skipped proxy; then
    if [ -d internal/faultproxy/cmd/faultproxy ] && $GO build -tags "$TAGS" -o "$TOOLS/faultproxy" ./internal/faultproxy/cmd/faultproxy 2>"$TMP/fp-build.log"; then
      FAULTPROXY=$TOOLS/faultproxy
    else
      note "internal/faultproxy/cmd/faultproxy does not build: latency-proxy rows skipped ($(head -c 200 "$TMP/fp-build.log"))"
    fi
  fi
fi

# Provider-shaped endpoints (vm plain): internal/tlsproxy (TLS, HTTP/2
# offered, latency, a cap per connection) in front of versitygw and of
# internal/testenv/cmd/fakegcs; rclone downloads the same chunk objects.
TLSPROXY=""
FAKEGCS=""
RCLONE=""
CONN_MIBPS=${BENCH_CONN_MIBPS:-50}
PROVIDER_LATENCY=${BENCH_PROVIDER_LATENCY:-20ms}
RCLONE_TRANSFERS=${BENCH_RCLONE_TRANSFERS:-32}
if ! skipped provider; then
  if [ -z "$VERSITYGW" ]; then
    VERSITYGW=$(command -v versitygw || true)
    [ -n "$VERSITYGW" ] || { [ -x "$($GO env GOPATH)/bin/versitygw" ] && VERSITYGW=$($GO env GOPATH)/bin/versitygw; } || true
  fi
  if $GO build -tags "$TAGS" -o "$TOOLS/tlsproxy" ./internal/tlsproxy/cmd/tlsproxy 2>"$TMP/tp-build.log" &&
     $GO build -tags "$TAGS" -o "$TOOLS/fakegcs" ./internal/testenv/cmd/fakegcs 2>>"$TMP/tp-build.log"; then
    TLSPROXY=$TOOLS/tlsproxy FAKEGCS=$TOOLS/fakegcs
  else
    note "internal/tlsproxy or internal/testenv/cmd/fakegcs does not build: provider rows skipped ($(head -c 200 "$TMP/tp-build.log"))"
  fi
  RCLONE=$(command -v rclone || true)
  [ -n "$RCLONE" ] || note "rclone not installed (apt-get install rclone): raw-download rows of the provider endpoints skipped"
fi

# ---------------------------------------------------------------- measuring
# timed STDOUT_FILE CMD...: runs CMD with its stdout in STDOUT_FILE and sets
# WALL (seconds, measured here), CPU (user+sys of it and its children) and
# RSS (peak resident set of the largest process, MiB), and HOSTCPU (busy
# CPU seconds of the whole machine meanwhile: the command, the S3 server and
# proxy, kernel threads, and anything else running). Dirty pages of
# earlier steps are flushed first (nothing is dropped from the page cache).
# busy_ticks: CPU ticks the whole machine spent busy so far (/proc/stat).
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat; }
TICKS=$(getconf CLK_TCK)
timed() {
  local out=$1; shift
  sync
  local t0 t1 b0 b1
  b0=$(busy_ticks)
  t0=$(date +%s%N)
  if ! $TIME -f '%U %S %M' -o "$TMP/time" "$@" > "$out" 2> "$TMP/stderr"; then
    log "command failed: $*"
    cat "$TMP/stderr" >&2
    return 1
  fi
  t1=$(date +%s%N)
  b1=$(busy_ticks)
  HOSTCPU=$(awk -v a="$b0" -v b="$b1" -v t="$TICKS" 'BEGIN{printf "%.2f", (b-a)/t}')
  local u s m
  read -r u s m < <(tail -n 1 "$TMP/time")
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", (b-a)/1e9}')
  CPU=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  RSS=$(awk -v m="$m" 'BEGIN{printf "%.1f", m/1024}')
}

# record_run DATASET VARIANT CONFIG TOOL DATA_BYTES [SUMMARY_JSON_FILE]
record_run() {
  local summary=null
  [ -n "${6:-}" ] && summary=$(cat "$6")
  jq -nc --arg ds "$1" --arg v "$2" --arg c "$3" --arg tool "$4" --argjson data "$5" \
    --argjson wall "$WALL" --argjson cpu "$CPU" --argjson hostcpu "$HOSTCPU" --argjson rss "$RSS" --argjson s "$summary" \
    '{type:"run",dataset:$ds,variant:$v,config:$c,tool:$tool,wall:$wall,cpu:$cpu,host_cpu:$hostcpu,rss_mib:$rss,data_bytes:$data,summary:$s}' >> "$RECORDS"
  log "  $1 $2 $3: ${WALL}s, CPU ${CPU}s (machine ${HOSTCPU}s), RSS ${RSS} MiB"
}

# first_touch DATASET VARIANT CRYPT SUMMARY_JSON_FILE: the CPU time of
# first-touching the buffers of the restore whose JSON summary is given
# (its jobs, writers and fetchers; 4 MiB chunks), measured by chunkbench
# touch in a process of its own, recorded apart: a fixed cost per run on
# this machine, not a cost per restored byte (bench/README.md).
first_touch() {
  local enc=""
  [ "$3" = encrypted ] && enc=-encrypted
  # shellcheck disable=SC2046
  "$TOOLS/chunkbench" touch $(jq -r '"-jobs \(.jobs) -writers \(.writers) -fetchers \(.fetchers)"' "$4") $enc \
    -max-chunk 4194304 > "$TMP/touch.json" || { note "chunkbench touch failed ($1 $2)"; return 0; }
  jq -c --arg ds "$1" --arg v "$2" '{type:"touch",dataset:$ds,variant:$v,cpu:.["cpu-seconds"],touch_bytes:.bytes}' \
    "$TMP/touch.json" >> "$RECORDS"
  log "  first touch of the restore's buffers ($1 $2): $(jq -r '"\(.bytes / 1048576 | floor) MiB, \(.["cpu-seconds"]) CPU-s"' "$TMP/touch.json")"
}

# ---------------------------------------------------------------- datasets
# gen_* make a dataset (cached in $DATA) and set IMG to its path.
gen_vm() {
  local img=$DATA/vm-${VM_MIB}M.img
  if [ -n "${BENCH_REGEN:-}" ] || [ ! -s "$img" ] || [ "$(stat -c %s "$img")" != $((VM_MIB << 20)) ] || [ ! -e "$img.done" ]; then
    log "dataset vm: scripts/make-vm-image.sh ${VM_MIB} MiB (ext4 from real files; ~45 s per GiB)"
    rm -f "$img.done"
    bash scripts/make-vm-image.sh "$img" "$VM_MIB" >&2
    touch "$img.done"
  fi
  IMG=$img
}

gen_random() {
  local img=$DATA/random-1G.img
  if [ -n "${BENCH_REGEN:-}" ] || [ ! -e "$img.done" ]; then
    log "dataset random: 1 GiB from /dev/urandom"
    rm -f "$img.done"
    head -c $((1 << 30)) /dev/urandom > "$img"
    touch "$img.done"
  fi
  IMG=$img
}

# 1 GiB made of 4 distinct 4 MiB chunks (2 random, 2 base64 text that
# compresses ~1.3×), repeated in a scrambled order: 256 positions, 4 unique chunks.
gen_reuse() {
  local img=$DATA/reuse-1G.img
  if [ -n "${BENCH_REGEN:-}" ] || [ ! -e "$img.done" ]; then
    log "dataset reuse: 1 GiB of 4 distinct 4 MiB chunks repeated"
    rm -f "$img.done"
    head -c $((4 << 20)) /dev/urandom > "$TMP/c0"
    head -c $((4 << 20)) /dev/urandom > "$TMP/c1"
    head -c $((13 << 18)) /dev/urandom > "$TMP/r"
    base64 -w 76 "$TMP/r" > "$TMP/c2"
    truncate -s 4M "$TMP/c2"
    head -c $((13 << 18)) /dev/urandom > "$TMP/r"
    base64 -w 0 "$TMP/r" > "$TMP/c3"
    truncate -s 4M "$TMP/c3"
    rm -f "$TMP/r"
    : > "$img"
    for i in $(seq 0 255); do cat "$TMP/c$(( (i * 7 + i / 5) % 4 ))" >> "$img"; done
    rm -f "$TMP"/c[0-3]
    touch "$img.done"
  fi
  IMG=$img
}

# 64 TiB sparse file with SPARSE_CHUNKS distinct 4 MiB data blocks at scattered offsets.
SPARSE_CHUNKS=5
SPARSE_DIR=""
gen_sparse() {
  local dir
  for dir in ${BENCH_SPARSE_DIR:-$DATA /dev/shm}; do
    if truncate -s 64T "$dir/.bench-sparse-probe" 2>/dev/null; then
      rm -f "$dir/.bench-sparse-probe"
      SPARSE_DIR=$dir
      break
    fi
    rm -f "$dir/.bench-sparse-probe"
    note "$(fstype "$dir") at $dir refuses 64 TiB sparse files (truncate -s 64T fails; ext4 with 4 KiB blocks caps files at 16 TiB)"
  done
  [ -n "$SPARSE_DIR" ] || return 1
  [ "$SPARSE_DIR" = "$DATA" ] || note "so the 64 TiB sparse image and its restore target live on $(fstype "$SPARSE_DIR") at $SPARSE_DIR (its datastore stays in $STORES)"
  local img=$SPARSE_DIR/pbsdirect-bench-sparse-64T.img
  SPARSE_FILES+=("$img")
  log "dataset sparse: truncate -s 64T $img, $SPARSE_CHUNKS × 4 MiB of random data at scattered offsets"
  rm -f "$img"
  truncate -s 64T "$img"
  local o
  for o in 0 1048573 4194301 9999991 16777215; do # 4 MiB block numbers (16777216 in 64 TiB)
    dd if=/dev/urandom of="$img" bs=4M count=1 seek="$o" conv=notrunc status=none
  done
  IMG=$img
}

# ---------------------------------------------------------------- S3 server
S3_ENDPOINT=""
S3_PROXY=""
PBS_S3_OK=0
free_port() {
  local p
  for _ in $(seq 50); do
    p=$(( 20000 + RANDOM % 30000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  return 1
}
start_s3() {
  [ -n "$VERSITYGW" ] || return 1
  [ -n "$S3_ENDPOINT" ] && return 0
  export AWS_ACCESS_KEY_ID=pbsdirect-bench AWS_SECRET_ACCESS_KEY=pbsdirect-bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  local port try
  for try in 1 2 3; do
    port=$(free_port)
    "$VERSITYGW" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" \
      --region us-east-1 --quiet posix "$S3_ROOT" > "$WORK/versitygw.log" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 200); do
      if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
        S3_ENDPOINT=http://127.0.0.1:$port
        break
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    [ -n "$S3_ENDPOINT" ] && break
    kill "$pid" 2>/dev/null || true
  done
  [ -n "$S3_ENDPOINT" ] || { note "versitygw did not start: $(tail -c 300 "$WORK/versitygw.log")"; return 1; }
  log "versitygw (posix backend over $S3_ROOT) on $S3_ENDPOINT"
  if [ -n "$FAULTPROXY" ]; then
    "$FAULTPROXY" -listen 127.0.0.1:0 -target "$S3_ENDPOINT" -latency "$LATENCY" > "$WORK/faultproxy.out" 2> "$WORK/faultproxy.log" &
    PIDS+=("$!")
    for _ in $(seq 100); do
      S3_PROXY=$(sed -n 's/^faultproxy listening on //p' "$WORK/faultproxy.out")
      [ -n "$S3_PROXY" ] && break
      sleep 0.05
    done
    [ -n "$S3_PROXY" ] && log "faultproxy (+$LATENCY per request) on $S3_PROXY" || note "faultproxy did not start: proxy rows skipped"
  fi
  return 0
}

# ---------------------------------------------------------------- per dataset
KEY=$WORK/bench-key.json
if ! skipped encrypted; then
  rm -f "$KEY"
  "$BIN" key create --kdf none "$KEY" >/dev/null 2>&1 || die "pbsdirect key create --kdf none failed"
fi
CRYPTS="plain"
skipped encrypted || CRYPTS="plain encrypted"

keyflag() { [ "$1" = encrypted ] && echo "--keyfile $KEY" || true; }

# restore_target DATASET: where restores of DATASET are written.
restore_target() {
  if [ "$1" = sparse ]; then echo "$SPARSE_DIR/pbsdirect-bench-sparse-restored.img"; else echo "$OUT/restored.img"; fi
}

run_dataset() {
  local ds=$1 img id
  IMG=""
  case $ds in
    vm) gen_vm; id=100 ;;
    random) gen_random; id=101 ;;
    reuse) gen_reuse; id=102 ;;
    sparse) gen_sparse || { note "64 TiB sparse dataset skipped: no filesystem here takes 64 TiB sparse files"; return 0; }; id=103 ;;
  esac
  img=$IMG
  local target
  target=$(restore_target "$ds")
  if [ "$ds" = sparse ]; then SPARSE_FILES+=("$target"); fi
  local snap=vm/$id/$SNAP_TIME archive=drive-scsi0.img.fidx
  declare -A decode_mbps unique_bytes decode_cpu_ns

  for crypt in $CRYPTS; do
    local store=$STORES/$ds-$crypt variant=$crypt/local
    log "== $ds ($crypt): backup $img -> $store"
    rm -rf "$store"
    # shellcheck disable=SC2046
    timed "$TMP/backup.json" "$BIN" backup --store "$store" $(keyflag "$crypt") --backup-type vm --backup-id "$id" \
      --backup-time "$SNAP_TIME" --output-format json "drive-scsi0.img:$img"
    jq -c --arg ds "$ds" --arg v "$variant" --argjson wall "$WALL" \
      '{type:"backup",dataset:$ds,variant:$v,seconds:$wall,image_bytes:.["image-bytes"],chunks_uploaded:.["chunks-uploaded"],backup:.}' \
      "$TMP/backup.json" >> "$RECORDS"
    log "  backup: ${WALL}s ($(jq -r '"\(.["chunks-uploaded"]) chunks uploaded, \(.["uploaded-bytes"]) bytes"' "$TMP/backup.json"))"

    log "== $ds ($crypt): pbsdirect restore, local, $RUNS run(s) per config"
    local r cfg
    for r in $(seq "$RUNS"); do
      for cfg in defaults jobs1; do
        local extra="" name="pbsdirect defaults"
        [ "$cfg" = jobs1 ] && extra="--jobs 1 --writers 0" name="pbsdirect --jobs 1 --writers 0"
        rm -f "$target"
        # shellcheck disable=SC2046,SC2086
        timed "$TMP/restore.json" "$BIN" restore --store "$store" $(keyflag "$crypt") $extra --output-format json \
          "$snap" "$archive" "$target"
        record_run "$ds" "$variant" "$name" pbsdirect "$(jq '.["data-bytes"]' "$TMP/restore.json")" "$TMP/restore.json"
        if [ "$cfg" = defaults ] && [ "$r" = 1 ] && [ "$ds" != sparse ]; then
          first_touch "$ds" "$variant" "$crypt" "$TMP/restore.json"
        fi
        if [ "$ds" = sparse ] && [ "$cfg" = defaults ] && [ "$r" = 1 ]; then
          jq -nc --arg v "$variant" --argjson n "$SPARSE_CHUNKS" --argjson a "$(du -B1 "$target" | cut -f1)" \
            --argjson size "$(stat -c %s "$target")" \
            '{type:"sparse",variant:$v,expected_chunks:$n,allocated:$a,size:$size}' >> "$RECORDS"
          log "  sparse target: $(stat -c %s "$target") bytes, $(du -B1 "$target" | cut -f1) allocated"
        fi
      done
    done
    rm -f "$target"

    if [ "$ds" != sparse ] && ! skipped ceiling; then
      log "== $ds ($crypt): decode ceiling, single-threaded over the archive's own chunks"
      # shellcheck disable=SC2046
      "$TOOLS/chunkbench" decode -store "$store" $(keyflag "$crypt") "$snap" "$archive" > "$TMP/decode.json"
      decode_mbps[$crypt]=$(jq '.["mb-per-second"]' "$TMP/decode.json")
      unique_bytes[$crypt]=$(jq '.["unique-bytes"]' "$TMP/decode.json")
      decode_cpu_ns[$crypt]=$(jq '.["cpu-ns-per-byte"]' "$TMP/decode.json")
      log "  decode: ${decode_mbps[$crypt]} MB/s per core, ${decode_cpu_ns[$crypt]} CPU ns per byte"

    fi
  done

  if [ "$ds" != sparse ] && ! skipped ceiling; then
    # The write ceiling comes from tools that are not pbsdirect, at least as
    # parallel as pbsdirect's writers (max(4, jobs/2), jobs = cores), under
    # the same conditions: a target on the same disk as the restores, space
    # reserved first with fallocate (as pbsdirect does), O_DIRECT 4 MiB
    # writes, fsync at the end. fio (Debian package fio) writes from memory,
    # like pbsdirect, with W and 2W writers on W slices; dd (1 writer, and W
    # on W slices) copies the page-cached image. The fastest is the ceiling.
    local W=$(( CORES / 2 > 4 ? CORES / 2 : 4 )) size
    size=$(stat -c %s "$img")
    cat > "$TMP/ddpar.sh" <<'DD'
img=$1 target=$2 w=$3
blocks=$(( ($(stat -c %s "$img") + 4194303) / 4194304 ))
per=$(( (blocks + w - 1) / w ))
fallocate -l "$(stat -c %s "$img")" "$target"
for i in $(seq 0 $((w - 1))); do
  dd if="$img" of="$target" bs=4M skip=$((i * per)) seek=$((i * per)) count=$per oflag=direct conv=notrunc,fsync status=none &
done
wait
DD
    cat > "$TMP/fio.sh" <<'FIO'
target=$1 size=$2 w=$3
# w jobs, each writing its own slice of per bytes (a multiple of 4 MiB; the
# last may end past size, as a restore's last chunk may): job i at i × per.
per=$(( (size + w * 4194304 - 1) / (w * 4194304) * 4194304 ))
fallocate -l $(( per * w )) "$target"
exec fio --name=ceiling --filename="$target" --rw=write --bs=4M --direct=1 --ioengine=psync \
  --fallocate=none --end_fsync=1 --numjobs="$w" --size="$per" --offset_increment="$per" \
  --group_reporting --output-format=terse > /dev/null
FIO
    local ways=("dd 1" "dd $W")
    if command -v fio >/dev/null; then
      ways+=("fio $W" "fio $((2 * W))")
    else
      note "fio not installed (apt-get install fio): write ceiling from dd only"
    fi
    log "== $ds: write ceiling, O_DIRECT 4 MiB writes into a reserved target, fsync: ${ways[*]/%/ writers;} $RUNS run(s)"
    local way best_mbps=0 best_label=""
    for way in "${ways[@]}"; do
      local tool=${way% *} n=${way#* } walls=()
      for r in $(seq "$RUNS"); do
        rm -f "$OUT/dd.img"
        case $way in
          "dd 1")
            fallocate -l "$size" "$OUT/dd.img"
            timed "$TMP/dd.out" dd if="$img" of="$OUT/dd.img" bs=4M oflag=direct conv=notrunc,fsync status=none ;;
          dd*) timed "$TMP/dd.out" bash "$TMP/ddpar.sh" "$img" "$OUT/dd.img" "$n" ;;
          fio*)
            timed "$TMP/dd.out" bash "$TMP/fio.sh" "$OUT/dd.img" "$size" "$n" ;;
        esac
        walls+=("$WALL")
      done
      rm -f "$OUT/dd.img"
      local wmed wmbps bytes=$size
      # fio writes whole slices of 4 MiB blocks.
      [ "$tool" = fio ] && bytes=$(( (size + n * 4194304 - 1) / (n * 4194304) * 4194304 * n ))
      wmed=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}')
      wmbps=$(awk -v s="$bytes" -v w="$wmed" 'BEGIN{printf "%.1f", s/1e6/w}')
      log "  write, $tool ×$n: $wmbps MB/s"
      jq -nc --arg ds "$ds" --arg t "$tool" --argjson n "$n" --argjson w "$wmbps" \
        '{type:"write",dataset:$ds,tool:$t,writers:$n,write_mbps:$w}' >> "$RECORDS"
      if awk -v a="$wmbps" -v b="$best_mbps" 'BEGIN{exit !(a > b)}'; then
        best_mbps=$wmbps
        best_label="$tool O_DIRECT ×$n"
      fi
    done
    local wmbps=$best_mbps
    for crypt in $CRYPTS; do
      jq -nc --arg ds "$ds" --arg v "$crypt/local" --argjson d "${decode_mbps[$crypt]}" --argjson u "${unique_bytes[$crypt]}" \
        --argjson dc "${decode_cpu_ns[$crypt]}" --argjson w "$wmbps" --arg wl "$best_label" --argjson c "$CORES" --argjson wb "$size" \
        '{type:"ceiling",dataset:$ds,variant:$v,decode_mbps_1t:$d,decode_cpu_ns_per_byte:$dc,unique_bytes:$u,write_mbps:$w,write_label:$wl,write_bytes:$wb,cores:$c}' >> "$RECORDS"
    done
  fi

  if [ -n "$DESYNC" ] && [ "$ds" != sparse ]; then
    local dstore=$WORK/desync/$ds
    log "== $ds: desync $DESYNC_VERSION make -m 4096:4096:4096 (PBS' fixed 4 MiB chunks, SHA-256 like PBS)"
    rm -rf "$dstore" "$dstore.caibx"
    mkdir -p "$dstore"
    "$DESYNC" make --digest sha256 -m 4096:4096:4096 -n "$CORES" -s "$dstore" "$dstore.caibx" "$img" >&2
    local plain_data
    plain_data=$(jq -s --arg ds "$ds" '[.[] | select(.type=="run" and .dataset==$ds and .variant=="plain/local" and .config=="pbsdirect defaults")][0].data_bytes' "$RECORDS")
    log "== $ds: desync extract -n $CORES + sync of the output, $RUNS run(s)"
    for r in $(seq "$RUNS"); do
      rm -f "$target"
      timed "$TMP/desync.out" sh -c '"$1" extract --digest sha256 -n "$2" -s "$3" "$4" "$5" && sync "$5"' desync \
        "$DESYNC" "$CORES" "$dstore" "$dstore.caibx" "$target"
      record_run "$ds" plain/local "desync $DESYNC_VERSION extract -n $CORES" desync "$plain_data"
    done
    rm -f "$target"
    rm -rf "$dstore" "$dstore.caibx"
  fi

  if ! skipped s3 && start_s3; then
    run_s3 "$ds" "$snap" "$archive" "$target"
  fi
  if [ "$ds" = vm ] && ! skipped provider && [ -n "$TLSPROXY" ] && start_s3; then
    run_provider "$ds" "$snap" "$archive" "$target"
  fi
}

# start_bg OUTFILE PATTERN CMD...: starts CMD in the background with its
# stdout in OUTFILE and sets STARTED to what follows PATTERN on its first
# line matching it (the listening URL), once it is there.
STARTED=""
start_bg() {
  local out=$1 pat=$2; shift 2
  "$@" > "$out" 2> "$out.err" &
  local pid=$!
  PIDS+=("$pid")
  STARTED=""
  for _ in $(seq 600); do
    STARTED=$(sed -n "s/^$pat//p" "$out" | head -n 1)
    [ -n "$STARTED" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$STARTED" ] || { note "$1 did not start: $(tail -c 200 "$out.err")"; return 1; }
}

# run_provider DATASET SNAP ARCHIVE TARGET: restores DATASET (plain) from
# S3 (versitygw) and GCS (fakegcs) through two provider-shaped HTTPS
# endpoints each (tlsproxy: HTTP/2 offered, +PROVIDER_LATENCY per request;
# one of them capping each connection at CONN_MIBPS MiB/s), with the
# defaults and with --bucket-http 2, and downloads the same chunk objects
# with rclone (S3; its default transport, and --disable-http2), runs of
# all configurations interleaved.
run_provider() {
  local ds=$1 snap=$2 archive=$3 target=$4 crypt=plain
  local store=$STORES/$ds-$crypt url=s3://bench/$ds-$crypt gurl=gs://bench/$ds-$crypt
  local data
  data=$(jq -s --arg ds "$ds" '[.[] | select(.type=="run" and .dataset==$ds and .variant=="plain/local" and .config=="pbsdirect defaults")][0].data_bytes' "$RECORDS")
  local gcs
  start_bg "$WORK/fakegcs.out" 'fakegcs listening on ' "$FAKEGCS" -bucket bench -prefix "$ds-$crypt" -dir "$store" || return 0
  gcs=$STARTED
  log "fakegcs (in memory: $store) on $gcs"
  "$TOOLS/chunkbench" list -store "$store" "$snap" "$archive" > "$TMP/chunks.txt"
  local eps=() backend cap
  for backend in s3 gcs; do
    local up=$S3_ENDPOINT
    [ "$backend" = gcs ] && up=$gcs
    for cap in 0 "$CONN_MIBPS"; do
      local name=$backend-tls+$PROVIDER_LATENCY
      [ "$cap" = 0 ] || name=$name+${cap}MiB/s/conn
      local tag=${name//[^a-z0-9]/_} line
      start_bg "$WORK/tlsproxy-$tag.out" 'tlsproxy listening on ' "$TLSPROXY" -target "$up" \
        -latency "$PROVIDER_LATENCY" -conn-mibps "$cap" -cert "$WORK/tlsproxy-$tag.pem" || return 0
      line=$STARTED
      eps+=("$name|${line%% fingerprint *}|${line##* fingerprint }|$WORK/tlsproxy-$tag.pem")
      log "tlsproxy ($name) on ${line%% fingerprint *}"
    done
  done
  log "== $ds ($crypt): provider-shaped endpoints, $RUNS run(s) per config, interleaved"
  local r e cfg
  for r in $(seq "$RUNS"); do
    for e in "${eps[@]}"; do
      local name ep fp cert
      IFS='|' read -r name ep fp cert <<< "$e"
      local variant=$crypt/$name
      for cfg in defaults h2; do
        local extra="" label="pbsdirect defaults" st=$url
        [ "$cfg" = h2 ] && extra="--bucket-http 2" label="pbsdirect --bucket-http 2"
        rm -f "$target"
        if [ "${name%%-*}" = gcs ]; then
          st=$gurl
          # shellcheck disable=SC2086
          timed "$TMP/restore.json" env STORAGE_EMULATOR_HOST="$ep" SSL_CERT_FILE="$cert" \
            "$BIN" restore --store "$st" $extra --output-format json "$snap" "$archive" "$target" || continue
        else
          # shellcheck disable=SC2086
          timed "$TMP/restore.json" "$BIN" restore --store "$st" --s3-endpoint "$ep" --s3-fingerprint "$fp" --s3-path-style \
            $extra --output-format json "$snap" "$archive" "$target" || continue
        fi
        record_run "$ds" "$variant" "$label" pbsdirect "$(jq '.["data-bytes"]' "$TMP/restore.json")" "$TMP/restore.json"
        log "    connections: $(jq -c '.["bucket-requests"].connections' "$TMP/restore.json")"
      done
      rm -f "$target"
      if [ -n "$RCLONE" ] && [ "${name%%-*}" = s3 ]; then
        local h2
        for h2 in "" --disable-http2; do
          rm -rf "$OUT/rc"
          # shellcheck disable=SC2086
          # rclone's S3 backend refuses --ca-cert and AWS_CA_BUNDLE
          # ("HTTPClient's transport unsupported type"); it trusts
          # SSL_CERT_FILE, as Go does.
          timed "$TMP/rclone.out" env -u AWS_CA_BUNDLE SSL_CERT_FILE="$cert" RCLONE_CONFIG_BENCH_TYPE=s3 RCLONE_CONFIG_BENCH_PROVIDER=Other \
            RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
            RCLONE_CONFIG_BENCH_REGION=us-east-1 RCLONE_CONFIG_BENCH_ENDPOINT="$ep" RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE=true \
            sh -c '"$1" copy "bench:bench/$2" "$3" --files-from-raw "$4" --no-traverse --ignore-checksum --transfers "$5" --checkers "$5" $6 && sync -f "$3"' rclone \
            "$RCLONE" "$ds-$crypt" "$OUT/rc" "$TMP/chunks.txt" "$RCLONE_TRANSFERS" "$h2" || continue
          record_run "$ds" "$variant" "rclone copy (raw chunks, $RCLONE_TRANSFERS transfers${h2:+, $h2})" rclone "$data"
        done
        rm -rf "$OUT/rc"
      fi
    done
  done
}

run_s3() {
  local ds=$1 snap=$2 archive=$3 target=$4
  for crypt in $CRYPTS; do
    local store=$STORES/$ds-$crypt
    local url=s3://bench/$ds-$crypt
    local data
    data=$(jq -s --arg ds "$ds" --arg v "$crypt/local" '[.[] | select(.type=="run" and .dataset==$ds and .variant==$v and .config=="pbsdirect defaults")][0].data_bytes' "$RECORDS")
    if [ "$PBS_S3_OK" = 0 ]; then
      if "$BIN" snapshots --store "$url" --s3-endpoint "$S3_ENDPOINT" --s3-path-style > /dev/null 2> "$TMP/s3probe.err"; then
        PBS_S3_OK=1
      else
        PBS_S3_OK=-1
        note "pbsdirect --store s3:// not usable in this build ($(head -n 1 "$TMP/s3probe.err")): pbsdirect bucket rows skipped"
      fi
    fi
    # The chunks this snapshot uses, for s5cmd.
    # shellcheck disable=SC2046
    "$TOOLS/chunkbench" list -store "$store" $(keyflag "$crypt") "$snap" "$archive" > "$TMP/chunks.txt"
    local endpoints=("s3|$S3_ENDPOINT")
    [ -n "$S3_PROXY" ] && endpoints+=("s3+$LATENCY|$S3_PROXY")
    local e
    for e in "${endpoints[@]}"; do
      local net=${e%%|*} ep=${e#*|}
      local variant=$crypt/$net
      log "== $ds ($crypt): bucket $url via $ep, $RUNS run(s) per config"
      awk -v u="$url" -v d="$OUT/s5" '{print "cp " u "/" $1 " " d "/" $1}' "$TMP/chunks.txt" > "$TMP/s5cmds.txt"
      local r
      for r in $(seq "$RUNS"); do
        if [ "$PBS_S3_OK" = 1 ]; then
          rm -f "$target"
          # shellcheck disable=SC2046
          timed "$TMP/restore.json" "$BIN" restore --store "$url" --s3-endpoint "$ep" --s3-path-style $(keyflag "$crypt") \
            --output-format json "$snap" "$archive" "$target"
          record_run "$ds" "$variant" "pbsdirect defaults" pbsdirect "$(jq '.["data-bytes"]' "$TMP/restore.json")" "$TMP/restore.json"
          if [ "$r" = 1 ]; then first_touch "$ds" "$variant" "$crypt" "$TMP/restore.json"; fi
        fi
        if [ -n "$S5CMD" ]; then
          rm -rf "$OUT/s5"
          timed "$TMP/s5.out" sh -c '"$1" --endpoint-url "$2" --numworkers "$3" run "$4" > /dev/null && sync -f "$5"' s5cmd \
            "$S5CMD" "$ep" "$S5_WORKERS" "$TMP/s5cmds.txt" "$OUT"
          record_run "$ds" "$variant" "s5cmd $S5CMD_VERSION cp (raw chunks, $S5_WORKERS workers)" s5cmd "$data"
        fi
      done
      rm -rf "$OUT/s5" "$target"
    done
  done
}

log "$("$BIN" version)  | $CORES cores | runs per config: $RUNS | realistic image: $VM_MIB MiB | work dir: $WORK"
for ds in vm random reuse sparse; do
  has_dataset "$ds" || continue
  run_dataset "$ds"
done

# ---------------------------------------------------------------- report
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
shani=no
grep -qw sha_ni /proc/cpuinfo && shani=yes
title="pbsdirect benchmark — $(date -u +%Y-%m-%d) — $CORES cores ($cpu, SHA-NI: $shani), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(fstype "$WORK") — $RUNS run(s) per config (median), realistic image $VM_MIB MiB, pbsdirect $(git describe --always --dirty 2>/dev/null || echo dev)"
echo >&2
log "done; table also in $WORK/results.md and $WORK/results.json"
echo "$title"
echo "(wall = median seconds, output flushed; data MB/s = non-zero bytes restored / wall, MB = 10^6; datastores warm in page cache;"
echo " ÷ pbsdirect = this row's wall / pbsdirect defaults' wall in the same dataset and variant: >1 means pbsdirect is faster; for ceilings, the fraction of the ceiling pbsdirect reaches)"
echo
"$TOOLS/benchreport" -in "$RECORDS" -md "$WORK/results.md" -json "$WORK/results.json" -title "$title"
