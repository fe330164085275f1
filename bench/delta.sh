#!/usr/bin/env bash
# bench/delta.sh — differential restores (bench/README.md, "Differential
# restores"; `make bench-delta`).
#
# On the realistic VM image (scripts/make-vm-image.sh, default 2 GiB) and a
# copy of it with 2 % of its 4 MiB chunks changed (random data written over
# data chunks), both backed up into one local datastore, it times, in the
# same run (medians of BENCH_RUNS runs):
#   full      restore of N into a new file (the baseline);
#   base      restore --base auto of N onto a file holding N-1 (restored and
#             recorded by pbsdirect); goal: <= 10 % of full;
#   readhash  restore --in-place of N onto a file holding N: every range read
#             back and hashed, nothing fetched (the time of reading and
#             hashing the image);
#   in-place  restore --in-place of N onto a file holding N-1; goal: <=
#             readhash + base (reading and hashing the image plus the
#             changed chunks' restore);
# and the dry run of the 64 TiB sparse image (5 × 4 MiB of data; goal: < 2 s).
# Each run's target is prepared outside the timing; every restored target is
# compared with its image (cmp).
#
# The load average at the start and the end is printed with the table: on a
# shared machine the times (the short ones most) include waiting for a CPU.
#
# Knobs: BENCH_DIR (default build/bench), BENCH_VM_MIB (2048), BENCH_RUNS (3),
# BENCH_CHANGED_PERCENT (2), BENCH_SPARSE_DIR (where the 64 TiB sparse image
# lives: BENCH_DIR if its file system takes 64 TiB files, else /dev/shm).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
VM_MIB=${BENCH_VM_MIB:-2048}
RUNS=${BENCH_RUNS:-3}
PCT=${BENCH_CHANGED_PERCENT:-2}
mkdir -p "${BENCH_DIR:-build/bench}"
WORK=$(cd "${BENCH_DIR:-build/bench}" && pwd)/delta
DATA=$(cd "${BENCH_DIR:-build/bench}" && pwd)/data
mkdir -p "$WORK" "$DATA"
BIN=$WORK/pbsdirect
T0=2026-11-29T10:00:00Z
T1=2026-11-29T11:00:00Z
log() { echo "== $*" >&2; }
for tool in mkfs.ext4 python3 cmp; do
  command -v "$tool" >/dev/null || { echo "bench/delta.sh: $tool missing" >&2; exit 2; }
done
$GO build -tags "$TAGS" -o "$BIN" ./cmd/pbsdirect

# The images: N-1 (shared with bench/run.sh's cache) and N.
OLD=$DATA/vm-${VM_MIB}M.img
if [ ! -s "$OLD" ] || [ "$(stat -c %s "$OLD")" != $((VM_MIB << 20)) ] || [ ! -e "$OLD.done" ]; then
  log "dataset: scripts/make-vm-image.sh $VM_MIB MiB"
  rm -f "$OLD.done"
  bash scripts/make-vm-image.sh "$OLD" "$VM_MIB" >&2
  touch "$OLD.done"
fi
NEW=$WORK/vm-${VM_MIB}M-changed.img
log "N: $PCT % of the 4 MiB chunks of N-1 changed (data chunks, random data)"
python3 - "$OLD" "$NEW" "$PCT" <<'PY'
import os, random, sys
src, dst, pct = sys.argv[1], sys.argv[2], float(sys.argv[3])
cs = 4 << 20
size = os.path.getsize(src)
n = size // cs
random.seed(25)
data = []
with open(src, 'rb') as f:
    for i in range(n):
        b = f.read(cs)
        if b.count(0) != len(b):
            data.append(i)
k = max(1, round(n * pct / 100))
pick = sorted(random.sample(data, min(k, len(data))))
os.system(f"cp --sparse=always '{src}' '{dst}'")
with open(dst, 'r+b') as f:
    for i in pick:
        f.seek(i * cs)
        f.write(os.urandom(cs))
print(f"changed {len(pick)} of {n} chunks ({len(data)} with data)", file=sys.stderr)
PY

STORE=$WORK/store
rm -rf "$STORE"
mkdir -p "$STORE"
log "backing up N-1 and N into $STORE"
"$BIN" backup --store "$STORE" --backup-type vm --backup-id 100 --backup-time $T0 drive-scsi0.img:"$OLD" >/dev/null
"$BIN" backup --store "$STORE" --backup-type vm --backup-id 100 --backup-time $T1 drive-scsi0.img:"$NEW" >/dev/null

TARGET=$WORK/target.img
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
restore() { "$BIN" restore --store "$STORE" --progress none "$@"; }
# timed CMD...: prints the seconds CMD took.
timed() {
  local s e
  s=$(date +%s.%N)
  "$@" >/dev/null
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
prepare() { # prepare SNAPTIME: TARGET holds that snapshot, restored (and recorded)
  rm -f "$TARGET"
  restore vm/100/$1 drive-scsi0 "$TARGET" >/dev/null
  sync
}
declare -A T
for cfg in full base readhash inplace; do
  for r in $(seq "$RUNS"); do
    case $cfg in
      full) rm -f "$TARGET"; sync; t=$(timed restore vm/100/$T1 drive-scsi0 "$TARGET") ;;
      base) prepare $T0; t=$(timed restore --base auto vm/100/$T1 drive-scsi0 "$TARGET") ;;
      readhash) prepare $T1; t=$(timed restore --in-place vm/100/$T1 drive-scsi0 "$TARGET") ;;
      inplace) prepare $T0; t=$(timed restore --in-place vm/100/$T1 drive-scsi0 "$TARGET") ;;
    esac
    cmp "$TARGET" "$NEW" || { echo "bench/delta.sh: $cfg: the target differs from N" >&2; exit 1; }
    log "$cfg run $r: ${t}s"
    echo "$t" >> "$WORK/$cfg.times"
  done
  T[$cfg]=$(median < "$WORK/$cfg.times")
  rm -f "$WORK/$cfg.times"
done
prepare $T0
DRY=$(restore --dry-run --base auto --output-format json vm/100/$T1 drive-scsi0 "$TARGET")
rm -f "$TARGET"

# The 64 TiB sparse image's dry run.
SPARSE_DIR=""
for dir in ${BENCH_SPARSE_DIR:-$DATA /dev/shm}; do
  if truncate -s 64T "$dir/.bench-sparse-probe" 2>/dev/null; then SPARSE_DIR=$dir; fi
  rm -f "$dir/.bench-sparse-probe"
  [ -z "$SPARSE_DIR" ] || break
done
SPARSE_T=""
SPARSE_CPU=""
if [ -n "$SPARSE_DIR" ]; then
  IMG=$SPARSE_DIR/pbsdirect-bench-delta-sparse-64T.img
  trap 'rm -f "$IMG"' EXIT
  rm -f "$IMG"
  truncate -s 64T "$IMG"
  for o in 0 1048573 4194301 9999991 16777215; do
    dd if=/dev/urandom of="$IMG" bs=4M count=1 seek="$o" conv=notrunc status=none
  done
  log "backing up the 64 TiB sparse image"
  "$BIN" backup --store "$STORE" --backup-type vm --backup-id 103 --backup-time $T0 drive-scsi0.img:"$IMG" >/dev/null
  rm -f "$IMG"
  for r in $(seq "$RUNS"); do
    timed restore --dry-run vm/103/$T0 drive-scsi0 "$WORK/sparse-target.img" >> "$WORK/sparse.times"
  done
  SPARSE_T=$(median < "$WORK/sparse.times")
  rm -f "$WORK/sparse.times"
  SPARSE_CPU=$(/usr/bin/time -f "%U user + %S sys" "$BIN" restore --store "$STORE" --progress none --dry-run vm/103/$T0 drive-scsi0 "$WORK/sparse-target.img" 2>&1 >/dev/null | tail -n 1)
  restore --dry-run vm/103/$T0 drive-scsi0 "$WORK/sparse-target.img" >&2
else
  log "no file system here takes 64 TiB sparse files: sparse dry run skipped"
fi

ok() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo PASS; else echo FAIL; fi; }
cat <<REPORT
pbsdirect differential restores — $(date -u +%Y-%m-%d) — $(nproc) cores, load average $LOAD0 → $(cut -d' ' -f1 /proc/loadavg) — ${VM_MIB} MiB realistic image, $PCT % of chunks changed — median of $RUNS run(s)
| run | seconds | vs full |
|---|---|---|
| full restore of N (new file) | ${T[full]} | 1.00 |
| --base auto onto N-1 | ${T[base]} | $(printf %.3f "$(echo "${T[base]} / ${T[full]}" | bc -l)") |
| --in-place onto N (read and hash only) | ${T[readhash]} | $(printf %.3f "$(echo "${T[readhash]} / ${T[full]}" | bc -l)") |
| --in-place onto N-1 | ${T[inplace]} | $(printf %.3f "$(echo "${T[inplace]} / ${T[full]}" | bc -l)") |
| dry run, 64 TiB sparse image (CPU: ${SPARSE_CPU:-}) | ${SPARSE_T:-skipped} | |
dry run of --base auto: $(echo "$DRY" | python3 -c 'import json,sys; d=json.load(sys.stdin); a=d["archives"][0]; print("%d chunks, %d encoded bytes, %d positions skipped of %d" % (d["chunks"], d["encoded-bytes"], a["skipped-positions"], a["delta"]["positions"]))')
$(ok "${T[base]} <= 0.10 * ${T[full]}"): --base takes at most 10 % of a full restore's time
$(ok "${T[inplace]} <= ${T[readhash]} + ${T[base]}"): --in-place takes at most reading and hashing the image plus the changed chunks' restore
$( [ -n "$SPARSE_T" ] && ok "$SPARSE_T < 2" || echo SKIP ): the 64 TiB sparse image's dry run takes under 2 s
REPORT
