package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
)

// backupSummary is the final report of a backup (backup.Summary).
type backupSummary = backup.Summary

func cmdBackup(fs *flag.FlagSet) commandFunc {
	var sf storeFlags
	sf.register(fs)
	sf.progress.register(fs)
	host, _ := os.Hostname()
	btype := fs.String("backup-type", "host", "backup type: vm, ct or host")
	bid := fs.String("backup-id", host, "backup ID, e.g. the VMID 100; the host name by default")
	manDefault(fs, "backup-id", "", "")
	btime := fs.String("backup-time", "", "snapshot time: RFC 3339 (2026-11-29T10:00:00Z) or epoch seconds (default: now)")
	chunkSize := fs.Int("chunk-size", 4096, "chunk size in KiB: 64, 128, 256, 512, 1024, 2048 or 4096")
	cryptMode := fs.String("crypt-mode", "", "none, encrypt or sign-only (default: encrypt with --keyfile or the default key file, else none)")
	jobs := fs.IntP("jobs", "j", 0, "chunks written at once: uploads and existence checks in flight (default: cores, 8×cores for a bucket); compression runs on one encoder per core")
	noPrevious := fs.Bool("no-previous", false, "do not count on the chunks of the group's previous snapshot: ask the store for every chunk and read back each it has (after a verify found damaged chunks in a bucket)")
	pxarFormat := fs.String("pxar-format", "legacy", "directories (NAME.pxar:DIR) as legacy (NAME.pxar.didx + catalog.pcat1.didx; the default, as proxmox-backup-client's) or split (NAME.mpxar.didx + NAME.ppxar.didx) pxar archives")
	includeDev := fs.StringArray("include-dev", nil, "directories: also read the file system of this path (a mount point below DIR), as proxmox-backup-client's flag; may be repeated (otherwise a directory backup stays on DIR's file system and stores other mount points as empty directories)")
	masterPub := fs.String("master-pubkey-file", "", "RSA master public key (PEM, key create-master-key): store the encryption key encrypted under it as rsa-encrypted.key.blob, for recovery with key import-with-master-key")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
		if fs.NArg() == 0 {
			return usagef("want at least one NAME.img:PATH or NAME.pxar:DIR")
		}
		if *pxarFormat != "split" && *pxarFormat != "legacy" {
			return usagef("--pxar-format must be split or legacy, not %q", *pxarFormat)
		}
		if cs := *chunkSize; cs < 64 || cs > 4096 || cs&(cs-1) != 0 {
			return usagef("--chunk-size must be 64, 128, 256, 512, 1024, 2048 or 4096 (KiB), not %d", cs)
		}
		if err := sf.check(); err != nil {
			return err
		}
		var sources []backup.Source
		seen := map[string]bool{}
		for _, a := range fs.Args() {
			s, err := backup.ParseSpec(a)
			if err != nil {
				return usagef("%v", err)
			}
			if seen[s.Name] {
				return usagef("archive %s given twice", s.Name)
			}
			seen[s.Name] = true
			sources = append(sources, s)
		}
		nsa, err := sf.nsArg()
		if err != nil {
			return err
		}
		snap := index.Snapshot{Type: *btype, ID: *bid}
		if *btime != "" {
			if snap.Time, err = backup.ParseTime(*btime); err != nil {
				return usagef("--backup-time %q: %v", *btime, err)
			}
		}
		if _, err := index.ParseSnapshotRef(fmt.Sprintf("%s/%s", snap.Type, snap.ID)); err != nil {
			return usagef("%v", err)
		}
		var cc *crypto.Config
		if len(sf.keyfiles) > 1 {
			return usagef("backup writes with one key: give --keyfile once")
		}
		if *cryptMode != "none" {
			if cc, err = sf.loadKey(ctx, stderr); err != nil {
				return err
			}
		}
		cc, signOnly, err := backup.CheckCrypt(*cryptMode, cc, *masterPub != "")
		if err != nil {
			return err
		}
		var rsaKey []byte
		if *masterPub != "" {
			if rsaKey, err = rsaEncryptedKey(*masterPub, sf.keyfile, cc); err != nil {
				return err
			}
		}
		if *jobs == 0 && sf.remote {
			*jobs = 8 * max(1, runtimeCPUs())
		}
		for _, p := range *includeDev {
			if _, err := os.Stat(p); err != nil {
				return usagef("--include-dev %s: %v", index.DisplayText(p), err)
			}
		}
		if err := backup.CheckSources(sources); err != nil {
			return err
		}
		if !sf.remote {
			if err := checkNewDatastore(sf.store, stderr); err != nil {
				return err
			}
		}
		// As restore: retries are said on their own until the progress
		// report starts, then with it (a stalled store does not hide
		// behind a bar at 100%).
		stopRetryLines := startRetryLines(stderr, sf.progress, "backup", &sf.retries)
		defer stopRetryLines()
		store, err := openBackupStore(ctx, &sf, max(*jobs, 8))
		if err != nil {
			return err
		}
		defer store.Close()
		if snap.NS, err = nsa.resolve(ctx, store, true); err != nil {
			return err
		}
		// Like PBS, refuse a snapshot that is not newer than the group's last.
		if err := backup.CheckOrder(ctx, store, snap, time.Now().Unix()); err != nil {
			return err
		}
		start := time.Now()
		var stats backup.Stats
		var total int64
		for _, s := range sources {
			if st, err := os.Stat(s.Path); err == nil && st.IsDir() {
				total += dirBytes(s.Path)
			} else if err == nil {
				total += st.Size()
			}
		}
		stopRetryLines()
		bar := startProgressWatch(stderr, sf.progress, "backup", total, func() int64 { return int64(stats.ImageBytes.Load()) }, &sf.retries)
		opts := backup.Options{Snapshot: snap, Key: cc, SignOnly: signOnly, ChunkSize: uint64(*chunkSize) << 10, Jobs: *jobs, RSAEncryptedKey: rsaKey, PxarLegacy: *pxarFormat == "legacy", IncludeDev: *includeDev, NoPrevious: *noPrevious}
		if !sf.remote {
			opts.LeaveOut = []string{sf.store}
		}
		res, err := backup.Run(ctx, store, sources, opts, &stats)
		bar.done()
		if err != nil {
			return fmt.Errorf("backup failed, no snapshot written: %w", err)
		}
		for _, n := range res.PreviousNotes {
			fmt.Fprintf(stderr, "pbsdirect backup: note: %s\n", index.DisplayText(n))
		}
		for _, r := range res.Replaced {
			aside := "not kept"
			if r.Aside != "" {
				aside = "kept as " + r.Aside
			}
			fmt.Fprintf(stderr, "pbsdirect backup: warning: chunk %s in the store was damaged (%s): written again; the damaged copy %s\n", r.Digest, index.DisplayText(r.Damage), index.DisplayText(aside))
		}
		for _, u := range res.Meta.UnreadSample {
			fmt.Fprintf(stderr, "pbsdirect backup: warning: %s: stored without it\n", u)
		}
		if more := res.Meta.Unread - len(res.Meta.UnreadSample); more > 0 {
			fmt.Fprintf(stderr, "pbsdirect backup: warning: %d more entries stored without some xattrs, ACLs or file capabilities\n", more)
		}
		for _, p := range res.Meta.Skipped {
			fmt.Fprintf(stderr, "pbsdirect backup: note: %s left out: it is the datastore written to\n", index.DisplayText(p))
		}
		if n := res.Meta.OtherFS; n > 0 {
			more := ""
			if n > len(res.Meta.OtherFSSample) {
				more = fmt.Sprintf(" and %d more", n-len(res.Meta.OtherFSSample))
			}
			fmt.Fprintf(stderr, "pbsdirect backup: note: %d directories on other file systems stored empty, not descended (give --include-dev PATH to read one): %s%s\n", n, index.DisplayText(strings.Join(res.Meta.OtherFSSample, ", ")), more)
		}
		el := time.Since(start)
		sum := backup.Summarize(res, &stats, el, cc, signOnly)
		sum.MiBps = restore.MiBps(sum.ImageBytes, el)
		if sf.json() {
			return writeJSON(stdout, sum)
		}
		fmt.Fprintf(stdout, "backed up %s to %s: %s in %.2fs (%.1f MiB/s)\n", sum.Snapshot, store, humanBytes(sum.ImageBytes), sum.Seconds, sum.MiBps)
		withZero := func(n uint64, zero bool) string { // "5 chunks with data + the zero chunk"
			s := fmt.Sprintf("%d chunks with data", n)
			if zero {
				s += " + the zero chunk"
			}
			return s
		}
		fmt.Fprintf(stdout, "  archives: %s; %d chunks: %d with data (%d repeated in this backup), %d all zeros (%s)\n",
			strings.Join(sum.Archives, ", "), sum.Chunks, sum.Chunks-sum.ZeroChunks, sum.DedupHits, sum.ZeroChunks, humanBytes(sum.ZeroBytes))
		fmt.Fprintf(stdout, "  written to the store: %s (%s); already there: %s\n",
			withZero(sum.Uploaded, sum.ZeroUploaded), humanBytes(sum.UploadedBytes), withZero(sum.Existing, sum.ZeroExisting))
		if sum.Previous != "" || sum.FoundPresent > 0 {
			prev := "no previous snapshot used"
			if sum.Previous != "" {
				prev = fmt.Sprintf("%d known from the previous snapshot %s (not asked for)", sum.KnownPrevious, sum.Previous)
			}
			fmt.Fprintf(stdout, "  of those already there: %s; %d found by an existence check (read back and checked)\n", prev, sum.FoundPresent)
		}
		if hasPxar(sources) {
			fmt.Fprintf(stdout, "  pxar metadata stored: %d entries with xattrs, %d with ACLs, %d with file capabilities", sum.XattrEntries, sum.ACLEntries, sum.FCapsEntries)
			if sum.MetaUnread > 0 {
				fmt.Fprintf(stdout, "; %d whose could not be read (see the warnings)", sum.MetaUnread)
			}
			fmt.Fprintln(stdout)
		}
		if sum.Replaced > 0 {
			fmt.Fprintf(stdout, "  replaced %d damaged chunk(s) found in the store (the damaged copies kept as <digest>.N.bad)\n", sum.Replaced)
		}
		if cc != nil {
			fmt.Fprintf(stdout, "  crypt mode %s, key %s\n", sum.CryptMode, cc.Fingerprint().Short())
		}
		return nil
	}
}

// hasPxar reports whether sources include a pxar archive.
func hasPxar(sources []backup.Source) bool {
	for _, s := range sources {
		if strings.HasSuffix(s.Name, ".pxar") {
			return true
		}
	}
	return false
}

// dirBytes returns the bytes of the regular files under dir (symlinks not
// followed; unreadable parts skipped): about what a pxar archive of it
// holds, for the progress report's total.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// backupCommand is 'pbsdirect backup'.
func backupCommand() commandSpec {
	return commandSpec{
		use:   "backup [flags] NAME.img:PATH|NAME.pxar:DIR [NAME.conf:PATH ...]",
		short: "back up images, directories (and blobs) into a new snapshot of a datastore",
		long: `Back up disk images (NAME.img:PATH, from a file or block device), directories
(NAME.pxar:DIR, as a pxar archive cut into content-defined chunks; split or
legacy with --pxar-format) and blobs (NAME.conf:PATH, NAME.log:PATH) into a
new snapshot of a datastore, as proxmox-backup-client does. The chunks of the
group's previous snapshot (same crypt mode and key) are counted on without
compressing, reading or uploading them, once their write time says they were
not rewritten since (--no-previous: not counted on); any other chunk is asked
for before it is compressed, and one the store has is not written again, once
read back and checked (decoded, digest): a damaged one is kept aside as
<digest>.N.bad, as PBS's verify keeps it, and written again. With --keyfile
(or the default key file) archives are encrypted;
--master-pubkey-file also stores the key encrypted under an RSA master key.`,
		example: `  pbsdirect backup --store /mnt/ds --backup-type vm --backup-id 100 drive-scsi0.img:/dev/vg0/vm-100-disk-0
  pbsdirect backup --store /mnt/ds --backup-type host --backup-id web1 root.pxar:/
  pbsdirect backup --store s3://backups/pbs --keyfile enc.key --master-pubkey-file master-public.pem root.img:/var/tmp/root.raw`,
		build: cmdBackup,
	}
}
