#!/usr/bin/env bash
# make demo: a realistic VM disk (ext4 made with mkfs.ext4 -d from real files
# on this machine, then unused zeroed space) is backed up with
# `pbsdirect backup` into a local datastore, restored with
# `pbsdirect restore`, and proven byte-identical with sha256.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/pbsdirect}
DEMO_DIR=${DEMO_DIR:-build/demo}
SIZE_MIB=${DEMO_SIZE_MIB:-1024}
IMG="$DEMO_DIR/vm-100-disk-0.raw"
STORE="$DEMO_DIR/datastore"
OUT="$DEMO_DIR/restored.raw"
SNAP=vm/100/2026-11-29T10:00:00Z

mkdir -p "$DEMO_DIR"
if [ ! -s "$IMG" ] || [ "$(stat -c %s "$IMG")" != $((SIZE_MIB << 20)) ]; then
  bash scripts/make-vm-image.sh "$IMG" "$SIZE_MIB"
fi

echo "== backup: $IMG -> $STORE ($SNAP)"
rm -rf "$STORE" "$OUT"
"$BIN" backup --store "$STORE" --backup-type vm --backup-id 100 --backup-time 2026-11-29T10:00:00Z \
  "drive-scsi0.img:$IMG"

echo "== snapshots"
"$BIN" snapshots --store "$STORE"

echo "== restore: $SNAP drive-scsi0.img.fidx -> $OUT"
"$BIN" restore --store "$STORE" "$SNAP" drive-scsi0.img.fidx "$OUT"

echo "== verify"
"$BIN" verify --store "$STORE" "$SNAP"

echo "== compare"
a=$(sha256sum "$IMG" | cut -d' ' -f1)
b=$(sha256sum "$OUT" | cut -d' ' -f1)
echo "original  $a"
echo "restored  $b"
if [ "$a" != "$b" ]; then
  echo "DEMO FAILED: restored image differs" >&2
  exit 1
fi
echo "DEMO OK: restored image is byte-identical"
