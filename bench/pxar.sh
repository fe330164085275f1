#!/usr/bin/env bash
# bench/pxar.sh — directory restore benchmark (bench/README.md, "pxar extraction").
#
# Builds a tree of real files (a copy of /usr/share, then /usr/lib, up to
# BENCH_PXAR_MIB MiB of file contents), backs it up with
# `pbsdirect backup … root.pxar:TREE` into a local directory datastore and
# makes a GNU tar file of the same tree on the same disk; then times, run by
# run alternating, `tar -xf TREE.tar -C EMPTY` against
# `pbsdirect restore --store DS SNAP root.pxar EMPTY` (each followed by
# `sync`, so that both pay their writeback; page cache dropped before each
# run when root can), medians of BENCH_RUNS runs. Goal: pbsdirect's rate
# ≥ 80 % of tar's. The extracted trees are compared (path, type, size,
# mode, mtime of files and symlinks) with the source.
#
# Knobs: BENCH_DIR (default build/bench), BENCH_PXAR_MIB (1024; 256 with
# BENCH_QUICK=1), BENCH_RUNS (3; 1 with BENCH_QUICK=1), BENCH_PXAR_FORMAT
# (split or legacy, default split), BENCH_REGEN=1 (rebuild tree, tar, store),
# PBSDIRECT=PATH (a pbsdirect binary to use instead of building this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
TAGS=${TAGS:-disable_grpc_modules}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
  MIB=${BENCH_PXAR_MIB:-256}
  RUNS=${BENCH_RUNS:-1}
else
  MIB=${BENCH_PXAR_MIB:-1024}
  RUNS=${BENCH_RUNS:-3}
fi
FORMAT=${BENCH_PXAR_FORMAT:-split}
mkdir -p "${BENCH_DIR:-build/bench}"
WORK=$(cd "${BENCH_DIR:-build/bench}" && pwd)/pxar
# The leading "_" keeps go tooling (go list/vet/test ./...) out of the tree:
# /usr/share holds .go files.
DATA=$WORK/_data-${MIB}M
TREE=$DATA/tree
TARF=$DATA/tree.tar
STORE=$DATA/ds-$FORMAT
SNAP_TIME=2026-11-29T10:00:00Z
SNAP=host/bench/$SNAP_TIME
OUTD=$WORK/out
BIN=${PBSDIRECT:-$WORK/pbsdirect}
log() { echo "== $*" >&2; }
for tool in tar /usr/bin/time find sort awk; do
  command -v "$tool" >/dev/null || { echo "bench/pxar.sh: $tool missing" >&2; exit 2; }
done
tar --version | head -1 | grep -q 'GNU tar' || { echo "bench/pxar.sh: needs GNU tar" >&2; exit 2; }
if [ "${BENCH_REGEN:-0}" = 1 ]; then rm -rf "$DATA"; fi
mkdir -p "$DATA" "$OUTD"

[ -n "${PBSDIRECT:-}" ] || $GO build -tags "$TAGS" -o "$BIN" ./cmd/pbsdirect

# The tree: regular files and symlinks of /usr/share then /usr/lib, in
# find's order, until MIB MiB of file contents.
if [ ! -e "$TREE.done" ]; then
  rm -rf "$TREE"; mkdir -p "$TREE"
  log "tree: copying up to $MIB MiB of /usr/share, /usr/lib into $TREE"
  find /usr/share /usr/lib -xdev \( -type f -o -type l \) -printf '%s\t%p\n' 2>/dev/null |
    awk -F'\t' -v lim=$((MIB << 20)) 'done { next } tot + $1 > lim { done = 1; next } { tot += $1; print $2 }' > "$DATA/list"
  tar -cf - --no-recursion -T "$DATA/list" 2>/dev/null | tar -xf - -C "$TREE"
  touch "$TREE.done"
fi
if [ ! -e "$TARF.done" ]; then
  log "tar: $TARF"
  tar -cf "$TARF" -C "$TREE" .
  touch "$TARF.done"
fi
if [ ! -e "$STORE.done" ]; then
  rm -rf "$STORE"
  log "backup: pbsdirect backup --pxar-format $FORMAT root.pxar:$TREE"
  "$BIN" backup --store "$STORE" --backup-type host --backup-id bench --backup-time "$SNAP_TIME" \
    --pxar-format "$FORMAT" --progress none "root.pxar:$TREE" >&2
  touch "$STORE.done"
fi
BYTES=$(find "$TREE" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
FILES=$(find "$TREE" -type f | wc -l)
ENTRIES=$(find "$TREE" | wc -l)

DROP=no
if [ "$(id -u)" = 0 ] && (sync; echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then DROP=yes; fi
drop() { if [ "$DROP" = yes ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
# listing DIR: what a restore must reproduce (dirs' mtimes change as they fill: left out).
listing() { (cd "$1" && find . \( -type f -o -type l \) -printf '%p %y %s %m %T@\n' | sort); }
listing "$TREE" > "$WORK/want.list"

tar_t=() pbs_t=()
PBS_OK=yes
for i in $(seq 1 "$RUNS"); do
  for what in tar pbsdirect; do
    T=$OUTD/$what
    rm -rf "$T"; mkdir -p "$T"; drop
    s=$(now)
    if [ $what = tar ]; then
      tar -xf "$TARF" -C "$T"; sync
      tar_t+=("$(echo "$(now) - $s" | bc)")
    else
      if ! "$BIN" restore --store "$STORE" --progress none "$SNAP" root.pxar "$T" > "$WORK/restore.out" 2>&1; then
        echo "bench/pxar.sh: pbsdirect restore to a directory failed:" >&2; sed 's/^/  /' "$WORK/restore.out" >&2
        PBS_OK=no; break 2
      fi
      sync
      pbs_t+=("$(echo "$(now) - $s" | bc)")
    fi
    if [ "$i" = 1 ] && ! listing "$T" | cmp -s - "$WORK/want.list"; then
      echo "bench/pxar.sh: $what's extraction differs from the tree:" >&2
      listing "$T" | diff - "$WORK/want.list" | head -10 >&2
      [ $what = pbsdirect ] && PBS_OK=no
    fi
  done
done
rm -rf "$OUTD"

mib=$(echo "scale=1; $BYTES / 1048576" | bc)
rate() { echo "scale=1; $BYTES / 1048576 / $1" | bc; }
TAR_MED=$(printf '%s\n' "${tar_t[@]}" | median)
echo
echo "pxar extraction: $mib MiB in $FILES files ($ENTRIES entries), $FORMAT archive, $RUNS run(s), page cache dropped: $DROP"
echo
echo "| what | seconds (median) | MiB/s |"
echo "|---|---|---|"
printf '| `tar -xf` (GNU tar) | %.2f | %s |\n' "$TAR_MED" "$(rate "$TAR_MED")"
if [ "$PBS_OK" = yes ] && [ "${#pbs_t[@]}" -gt 0 ]; then
  PBS_MED=$(printf '%s\n' "${pbs_t[@]}" | median)
  printf '| `pbsdirect restore … root.pxar DIR` | %.2f | %s |\n' "$PBS_MED" "$(rate "$PBS_MED")"
  ratio=$(echo "scale=3; $TAR_MED / $PBS_MED" | bc)
  echo
  echo "runs (tar s / pbsdirect s): $(paste <(printf '%s\n' "${tar_t[@]}") <(printf '%s\n' "${pbs_t[@]}") | awk '{printf "%.2f/%.2f ", $1, $2}')"
  if [ "$(echo "$ratio >= 0.80" | bc)" = 1 ]; then verdict=PASS; else verdict=FAIL; fi
  printf 'goal: pbsdirect/tar = %.1f %% (≥ 80 %%): %s\n' "$(echo "$ratio * 100" | bc)" "$verdict"
  [ $verdict = PASS ]
else
  echo
  echo "goal: pbsdirect/tar ≥ 80 %: NOT MEASURED (pbsdirect restore to a directory unavailable or wrong)"
  exit 1
fi
