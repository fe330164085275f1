#!/usr/bin/env bash
# bench/backup.sh — backups that do only new work (`make bench-backup`). See
# bench/README.md, "Backups".
#
# Backs up the realistic 1 GiB VM image (scripts/make-vm-image.sh, cached in
# $BENCH_DIR/data as bench/run.sh caches it) with this tree's pbsdirect and
# with a baseline built from BENCH_BASE_REF (default: the commit before the
# pipeline change, "today"), in one run, and prints CPU-seconds (user+sys),
# wall and peak RSS (GNU time) and the ratios the goals are stated in:
#
#   local      full backup into a new directory datastore
#   s3         full backup into a new bucket prefix (loopback versitygw)
#   s3-again   the same image backed up again into that prefix, unchanged
#   proxy      full backup through faultproxy adding BENCH_LATENCY per
#              request: this tree at its defaults against the baseline at
#              --jobs 2, 4, 8 and 16 (its best is the bar)
#
# Goals (PASS/FAIL lines): s3-again ≤ 1 CPU-s and no chunk uploaded; s3
# under 256 MiB peak RSS and ≤ 1.2× local's CPU; proxy wall ≤ the
# baseline's best. Medians of BENCH_RUNS runs (default 3).
#
# Knobs: BENCH_DIR (build/bench), BENCH_RUNS (3), BENCH_LATENCY (20ms),
# BENCH_BASE_REF (git ref of the baseline; "none" skips it), BENCH_IMG (an
# image to use instead of the generated one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
RUNS=${BENCH_RUNS:-3}
LATENCY=${BENCH_LATENCY:-20ms}
BASE_REF=${BENCH_BASE_REF:-38c6a38}
mkdir -p "${BENCH_DIR:-build/bench}"
WORK=$(cd "${BENCH_DIR:-build/bench}" && pwd)
BK=$WORK/backup
DATA=$WORK/data
TOOLS=$WORK/tools
mkdir -p "$BK" "$DATA" "$TOOLS"
NEW=$ROOT/bin/pbsdirect
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$BK/s3root" "$BK"/local-*; }
trap cleanup EXIT
log() { printf '[bench-backup %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[ -x "$NEW" ] || { log "build first: make build"; exit 1; }
IMG=${BENCH_IMG:-$DATA/vm-1024M.img}
if [ ! -s "$IMG" ]; then
  log "dataset: scripts/make-vm-image.sh 1024 MiB"
  bash scripts/make-vm-image.sh "$IMG" 1024 >&2
  touch "$IMG.done"
fi

BASE=""
if [ "$BASE_REF" != none ]; then
  BASE=$TOOLS/pbsdirect-base-$BASE_REF
  if [ ! -x "$BASE" ]; then
    log "baseline: building $BASE_REF"
    src=$(mktemp -d)
    git archive "$BASE_REF" | tar -x -C "$src"
    (cd "$src" && CGO_ENABLED=0 $GO build -tags "$TAGS" -trimpath -o "$BASE" ./cmd/pbsdirect)
    rm -rf "$src"
  fi
fi
$GO build -tags "$TAGS" -o "$TOOLS/faultproxy" ./internal/faultproxy/cmd/faultproxy
VERSITYGW=${VERSITYGW:-$(command -v versitygw || echo "$($GO env GOPATH)/bin/versitygw")}

export AWS_ACCESS_KEY_ID=pbsdirect-bench AWS_SECRET_ACCESS_KEY=pbsdirect-bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
mkdir -p "$BK/s3root/bench"
port=$(( 20000 + RANDOM % 30000 ))
"$VERSITYGW" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" \
  --region us-east-1 --quiet posix "$BK/s3root" > "$BK/versitygw.log" 2>&1 &
PIDS+=("$!")
S3=http://127.0.0.1:$port
for _ in $(seq 200); do curl -s -o /dev/null "$S3/" && break; sleep 0.05; done
"$TOOLS/faultproxy" -listen 127.0.0.1:0 -target "$S3" -latency "$LATENCY" > "$BK/faultproxy.out" 2> "$BK/faultproxy.log" &
PIDS+=("$!")
PROXY=""
for _ in $(seq 100); do PROXY=$(sed -n 's/^faultproxy listening on //p' "$BK/faultproxy.out"); [ -n "$PROXY" ] && break; sleep 0.05; done
[ -n "$PROXY" ] || { log "faultproxy did not start"; exit 1; }

RESULTS=$BK/results.tsv
: > "$RESULTS"
N=0
# backup ROW BIN STORE S3FLAG... : one backup; appends ROW wall cpu rss uploaded to RESULTS.
backup() {
  local row=$1 bin=$2 store=$3; shift 3
  N=$((N + 1))
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S %M' -o "$BK/time" "$bin" backup --store "$store" "$@" --backup-type vm --backup-id 100 \
    --backup-time "2026-11-29T10:$(printf %02d $((N / 60))):$(printf %02d $((N % 60)))Z" --output-format json \
    "drive-scsi0.img:$IMG" > "$BK/out.json" 2> "$BK/err" || { log "$row failed: $(tail -c 400 "$BK/err")"; return 1; }
  t1=$(date +%s%N)
  local u s m
  read -r u s m < <(tail -n 1 "$BK/time")
  printf '%s\t%.3f\t%.2f\t%.0f\t%s\n' "$row" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b-a)/1e9}')" \
    "$(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" "$(awk -v m="$m" 'BEGIN{print m/1024}')" \
    "$(jq -r '."chunks-uploaded"' "$BK/out.json")" >> "$RESULTS"
  log "$(tail -n 1 "$RESULTS") (found present, read back: $(jq -r '."chunks-found-present" // "-"' "$BK/out.json"))"
}

for run in $(seq "$RUNS"); do
  log "run $run of $RUNS"
  backup local "$NEW" "$BK/local-$run"
  rm -rf "$BK/local-$run"
  backup s3 "$NEW" "s3://bench/new-$run" --s3-endpoint "$S3"
  backup s3-again "$NEW" "s3://bench/new-$run" --s3-endpoint "$S3"
  backup proxy "$NEW" "s3://bench/newp-$run" --s3-endpoint "$PROXY"
  if [ -n "$BASE" ]; then
    backup base-local "$BASE" "$BK/blocal-$run"
    rm -rf "$BK/blocal-$run"
    backup base-s3 "$BASE" "s3://bench/base-$run" --s3-endpoint "$S3"
    backup base-s3-again "$BASE" "s3://bench/base-$run" --s3-endpoint "$S3"
    for j in 2 4 8 16; do
      backup "base-proxy-j$j" "$BASE" "s3://bench/basep$j-$run" --s3-endpoint "$PROXY" --jobs "$j"
    done
  fi
  rm -rf "$BK/s3root/bench"/*
done

# med ROW COLUMN: median of a column (2 wall, 3 cpu, 4 rss, 5 uploaded) over a row's runs.
med() { awk -F'\t' -v r="$1" -v c="$2" '$1==r{print $c}' "$RESULTS" | sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
printf '\n| row | wall s | CPU s | peak RSS MiB | chunks uploaded |\n|---|---|---|---|---|\n'
for row in local s3 s3-again proxy base-local base-s3 base-s3-again base-proxy-j2 base-proxy-j4 base-proxy-j8 base-proxy-j16; do
  grep -q "^$row	" "$RESULTS" || continue
  printf '| %s | %s | %s | %s | %s |\n' "$row" "$(med "$row" 2)" "$(med "$row" 3)" "$(med "$row" 4)" "$(med "$row" 5)"
done
goal() { if awk "BEGIN{exit !($2)}"; then echo "PASS $1"; else echo "FAIL $1"; fi; }
echo
again_cpu=$(med s3-again 3); again_up=$(med s3-again 5)
goal "unchanged image again into S3: $again_cpu CPU-s (≤ 1), $again_up chunks uploaded (0)" "$again_cpu <= 1 && $again_up == 0"
s3rss=$(med s3 4); s3cpu=$(med s3 3); lcpu=$(med local 3)
goal "full backup into S3: peak RSS $s3rss MiB (< 256)" "$s3rss < 256"
goal "full backup into S3: CPU $s3cpu s = $(awk -v a="$s3cpu" -v b="$lcpu" 'BEGIN{printf "%.2f", a/b}')× local's $lcpu s (≤ 1.2)" "$s3cpu <= 1.2 * $lcpu"
if [ -n "$BASE" ]; then
  best=$(for j in 2 4 8 16; do echo "$(med "base-proxy-j$j" 2) j$j"; done | sort -g | head -n 1)
  pw=$(med proxy 2)
  goal "behind +$LATENCY: $pw s = $(awk -v a="$pw" -v b="${best% *}" 'BEGIN{printf "%.2f", a/b}')× the baseline's best (--jobs ${best#* j}: ${best% *} s) (≤ 1)" "$pw <= ${best% *}"
  echo "baseline $BASE_REF: S3 full $(med base-s3 3) CPU-s, $(med base-s3 4) MiB; again $(med base-s3-again 3) CPU-s, $(med base-s3-again 5) chunks uploaded"
fi
