#!/usr/bin/env bash
# make-vm-image.sh IMAGE SIZE_MIB [FILL_PERCENT]
# Builds a realistic VM disk image: an ext4 filesystem created with
# `mkfs.ext4 -d` from real files of this machine (/usr/share, /usr/lib, …)
# filling about FILL_PERCENT (default 55) of the image, the rest unused and
# zeroed, as on a freshly installed guest disk.
set -euo pipefail
IMG=$1
SIZE_MIB=$2
FILL=${3:-55}
command -v mkfs.ext4 >/dev/null || { echo "mkfs.ext4 missing: apt-get install e2fsprogs" >&2; exit 1; }
budget=$(( SIZE_MIB * 1024 * 1024 * FILL / 100 ))
stage=$(mktemp -d "${TMPDIR:-/tmp}/pbsdirect-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
used=0
# Copy whole top-level directories of these trees until the budget is used.
for tree in /usr/share /usr/lib /usr/bin /usr/include; do
  [ -d "$tree" ] || continue
  for d in "$tree"/*; do
    [ -e "$d" ] || continue
    sz=$(du -sb "$d" 2>/dev/null | cut -f1 || echo 0)
    [ "$sz" -gt 0 ] || continue
    if [ $((used + sz)) -le "$budget" ]; then
      mkdir -p "$stage$tree"
      cp -al "$d" "$stage$tree/" 2>/dev/null || cp -a "$d" "$stage$tree/" 2>/dev/null || true
      used=$((used + sz))
    fi
  done
done
rm -f "$IMG"
truncate -s "${SIZE_MIB}M" "$IMG"
mkfs.ext4 -q -F -L vm-100-root -E lazy_itable_init=0,lazy_journal_init=0 -d "$stage" "$IMG"
echo "made $IMG: ${SIZE_MIB} MiB ext4 with $((used >> 20)) MiB of files from this machine"
