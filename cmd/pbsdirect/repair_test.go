package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/repair"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// repairCase is a datastore and two mirrors of it: the primary lacks 5
// chunks and holds 3 damaged (bit flips), the first mirror has all of
// them but one, which the second mirror has.
type repairCase struct {
	data             []byte
	primary          string // datastore directory
	mirror1, mirror2 string
	missing, damaged []crypto.Digest
	onlyIn2          crypto.Digest // missing from the primary and from mirror 1
}

// newRepairCase makes a repairCase with the primary at primaryDir (a
// datastore directory, maybe below a bucket's root).
func newRepairCase(t *testing.T, primaryDir string) *repairCase {
	t.Helper()
	c := &repairCase{data: failoverImage()}
	src := fixture.NewStore(t)
	backupImage(t, src, c.data, "--chunk-size", "64")
	c.primary = fixture.CopyDir(t, src, primaryDir)
	c.mirror1 = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "mirror1"))
	c.mirror2 = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "mirror2"))
	_, ds := fixture.Digests(t, filepath.Join(src, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	c.missing = []crypto.Digest{ds[0], ds[3], ds[6], ds[9], ds[12]}
	c.damaged = []crypto.Digest{ds[1], ds[7], ds[14]}
	c.onlyIn2 = ds[6]
	for _, d := range c.missing {
		remove(t, chunkFile(c.primary, d))
	}
	for _, d := range c.damaged {
		flipByte(t, chunkFile(c.primary, d))
	}
	remove(t, chunkFile(c.mirror1, c.onlyIn2))
	return c
}

// bad returns the digests of the chunks the primary lacks or holds damaged.
func (c *repairCase) bad() map[string]string {
	m := map[string]string{}
	for _, d := range c.missing {
		m[d.String()] = repair.ProblemMissing
	}
	for _, d := range c.damaged {
		m[d.String()] = repair.ProblemDamaged
	}
	return m
}

// treeSum returns a digest of every file's name and content below dir.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// repairJSON runs repair with args and JSON output, wanting exit code.
func repairJSON(t *testing.T, code int, args ...string) repair.Report {
	t.Helper()
	r := pbs(t, append([]string{"repair", "--output-format", "json"}, args...)...)
	var rep repair.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("repair JSON: %v: %v", err, r)
	}
	if r.code != code || rep.ExitCode != code {
		t.Fatalf("repair: exit %d, report %d, want %d: %v", r.code, rep.ExitCode, code, r)
	}
	return rep
}

// checkRepaired checks a report of a repair of c: every bad chunk of the
// primary named with its problem, copied from mirror 1 but the one only
// mirror 2 has, damaged ones kept aside.
func checkRepaired(t *testing.T, c *repairCase, rep repair.Report, action string, from1, from2 string) {
	t.Helper()
	bad := c.bad()
	if len(rep.Items) != len(bad) || rep.Chunks != len(c.data)>>16 || rep.Good != rep.Chunks-len(bad) {
		t.Fatalf("report: %d items, %d chunks, %d good; want %d, %d, %d: %+v", len(rep.Items), rep.Chunks, rep.Good, len(bad), len(c.data)>>16, rep.Chunks-len(bad), rep)
	}
	for _, it := range rep.Items {
		src := from1
		if it.Digest == c.onlyIn2.String() {
			src = from2
			if len(it.Tried) != 1 || !strings.HasPrefix(it.Tried[0], from1) {
				t.Errorf("chunk %s: tried %q, want mirror 1 named", it.Digest, it.Tried)
			}
		}
		if it.Problem != bad[it.Digest] || it.Action != action || it.Source != src {
			t.Errorf("item %+v: want problem %q, action %q, source %s", it, bad[it.Digest], action, src)
		}
		if want := action == repair.ActionCopied && it.Problem == repair.ProblemDamaged; want != (it.Aside != "") {
			t.Errorf("item %+v: damaged copy kept aside: %v, want %v", it, it.Aside != "", want)
		}
	}
}

// TestRepairDirectory: a directory datastore missing 5 chunks and holding
// 3 damaged is repaired from two mirrors (the second for the chunk the
// first lacks): a dry run says what it would copy and writes nothing; the
// repair copies each chunk, keeps the damaged copies as <digest>.0.bad;
// verify of the primary alone then passes, and a second repair finds
// nothing to do. A chunk no store has in good shape fails with exit 1.
func TestRepairDirectory(t *testing.T) {
	c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
	mustFail(t, 1, nil, "verify", "--store", c.primary, snap0)
	args := []string{"--store", c.primary, "--from", c.mirror1, "--from", c.mirror2}

	before := treeSum(t, c.primary)
	rep := repairJSON(t, 0, append(args, "--dry-run")...)
	checkRepaired(t, c, rep, repair.ActionWouldCopy, c.mirror1, c.mirror2)
	if !rep.DryRun || rep.Would != 8 || treeSum(t, c.primary) != before {
		t.Fatalf("dry run wrote into the primary, or counts %+v", rep.Counts)
	}
	r := mustOK(t, append([]string{"repair", "--dry-run"}, args...)...)
	if strings.Count(r.out, "would copy from ") != 8 || !strings.Contains(r.out, "would copy from "+c.mirror2) {
		t.Errorf("dry run text: %v", r)
	}

	r = mustOK(t, append([]string{"repair"}, args...)...)
	if strings.Count(r.out, ": copied from ") != 8 || !strings.Contains(r.out, "8 copied") || !strings.Contains(r.out, "kept as ") {
		t.Errorf("repair text: %v", r)
	}
	for _, d := range c.damaged {
		if _, err := os.Stat(filepath.Join(filepath.Dir(chunkFile(c.primary, d)), chunkstore.BadName(d, 0))); err != nil {
			t.Errorf("damaged chunk %s not kept aside: %v", d, err)
		}
	}
	mustOK(t, "verify", "--store", c.primary, snap0)
	target := filepath.Join(t.TempDir(), "r.raw")
	mustOK(t, "restore", "--store", c.primary, snap0, "drive-scsi0", target)
	fixture.Equal(t, target, c.data)
	rep = repairJSON(t, 0, args...)
	if len(rep.Items) != 0 || rep.Good != rep.Chunks {
		t.Errorf("second repair: %+v", rep)
	}

	// A chunk in no store in good shape: listed, exit 1; the others
	// repaired.
	c = newRepairCase(t, filepath.Join(t.TempDir(), "primary2"))
	remove(t, chunkFile(c.mirror2, c.onlyIn2))
	flipByte(t, chunkFile(c.mirror1, c.damaged[0]))
	remove(t, chunkFile(c.mirror2, c.damaged[0]))
	rep = repairJSON(t, 1, "--store", c.primary, "--from", c.mirror1, "--from", c.mirror2)
	if rep.NoCopy != 2 || rep.Repaired != 6 || rep.OK {
		t.Errorf("counts %+v, want 2 without a good copy and 6 copied", rep.Counts)
	}
	for _, it := range rep.Items {
		if it.Digest == c.onlyIn2.String() || it.Digest == c.damaged[0].String() {
			if it.Action != repair.ActionNoCopy || len(it.Tried) != 2 {
				t.Errorf("item %+v: want no good copy, both stores tried", it)
			}
		}
	}
	// Usage errors.
	// Without --from only the store's own .bad copies are tried: none.
	mustFail(t, 1, nil, "repair", "--store", c.primary)
	mustFail(t, 2, []string{"--from"}, "repair", "--store", c.primary, "--from", c.primary)
	mustFail(t, 2, []string{"--store"}, "repair", "--store", c.primary, "--store", c.mirror1, "--from", c.mirror2)
	// A mirror that is not there, a primary that cannot be reached: exit 3.
	mustFail(t, 3, []string{"--from"}, "repair", "--store", c.primary, "--from", filepath.Join(t.TempDir(), "none"))
	bktSetEnv(t, "127.0.0.1:1")
	mustFail(t, 3, []string{"s3://pbkt/ds"}, "repair", "--store", "s3://pbkt/ds", "--s3-endpoint", "http://127.0.0.1:1", "--from", c.mirror1)
}

// TestRepairBucket: the same with the primary in an S3 bucket (versitygw):
// the damaged copies are kept as <digest>.0.bad objects, and verify of the
// bucket alone passes after.
func TestRepairBucket(t *testing.T) {
	root := t.TempDir()
	c := newRepairCase(t, filepath.Join(root, "pbkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "127.0.0.1:1")
	primary := "s3://pbkt/ds"
	endpoint := []string{"--s3-endpoint", s3.Endpoint}
	mustFail(t, 1, nil, append([]string{"verify", "--store", primary, snap0}, endpoint...)...)
	args := append([]string{"--store", primary, "--from", c.mirror1, "--from", c.mirror2}, endpoint...)

	before := treeSum(t, c.primary)
	rep := repairJSON(t, 0, append(args, "--dry-run")...)
	checkRepaired(t, c, rep, repair.ActionWouldCopy, c.mirror1, c.mirror2)
	if treeSum(t, c.primary) != before {
		t.Fatal("dry run wrote into the bucket")
	}
	rep = repairJSON(t, 0, args...)
	checkRepaired(t, c, rep, repair.ActionCopied, c.mirror1, c.mirror2)
	for _, d := range c.damaged {
		if _, err := os.Stat(filepath.Join(filepath.Dir(chunkFile(c.primary, d)), chunkstore.BadName(d, 0))); err != nil {
			t.Errorf("damaged chunk %s not kept aside in the bucket: %v", d, err)
		}
	}
	mustOK(t, append([]string{"verify", "--store", primary, snap0}, endpoint...)...)
}

// TestRepairUnderRestore: restores from the primary while it is repaired
// from a slow mirror (an S3 bucket behind a proxy capped at 128 KiB/s)
// see every chunk whole: a chunk that was missing reads as missing until
// it is there whole, never as damaged (a half-written file would be); a
// chunk that was good is never reported. After the repair a restore is
// byte-exact.
func TestRepairUnderRestore(t *testing.T) {
	root := t.TempDir()
	c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
	fixture.CopyDir(t, c.mirror2, filepath.Join(root, "mbkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "127.0.0.1:1")
	proxy, err := faultproxy.Start("127.0.0.1:0", s3.Endpoint, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxy.SetBandwidth(128 << 10)

	bad := c.bad()
	snap, err := index.ParseSnapshotRef(snap0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One restore of the archive from the primary: what it found wrong,
	// chunk by chunk.
	restoreOnce := func() (map[string]error, error) {
		st, err := chunkstore.OpenLocal(c.primary, false)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		src, err := snapshot.OpenSnapshot(ctx, st, snap, nil)
		if err != nil {
			return nil, err
		}
		plan, _, err := restore.PlanOf(ctx, src, "drive-scsi0.img.fidx")
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		found := map[string]error{}
		err = restore.Run(ctx, st, plan, restore.Discard{}, restore.Options{KeepGoing: true, Jobs: 2, Damaged: func(ce *restore.ChunkError) {
			mu.Lock()
			found[ce.Digest.String()] = ce.Err
			mu.Unlock()
		}}, nil)
		var de *restore.DamagedError
		if err != nil && !errors.As(err, &de) {
			return nil, err
		}
		return found, nil
	}
	var (
		wg       sync.WaitGroup
		restores int
		problems []string
	)
	done := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			found, err := restoreOnce()
			if err != nil {
				problems = append(problems, err.Error())
				return
			}
			restores++
			for d, e := range found {
				switch {
				case bad[d] == "":
					problems = append(problems, fmt.Sprintf("good chunk %s reported: %v", d, e))
				case bad[d] == repair.ProblemMissing && !chunkstore.Missing(e):
					problems = append(problems, fmt.Sprintf("chunk %s, missing before, read as not missing: %v", d, e))
				}
			}
		}
	})
	r := pbs(t, "repair", "--jobs", "2", "--store", c.primary, "--from", "s3://mbkt/ds", "--s3-endpoint", proxy.URL)
	close(done)
	wg.Wait()
	if r.code != 0 || strings.Count(r.out, ": copied from ") != 8 {
		t.Fatalf("repair: %v", r)
	}
	if len(problems) > 0 {
		t.Errorf("restores during the repair saw half-written chunks:\n%s", strings.Join(slices.Compact(problems), "\n"))
	}
	if restores < 2 {
		t.Logf("only %d restores ran during the repair", restores)
	}
	found, err := restoreOnce()
	if err != nil || len(found) != 0 {
		t.Errorf("restore after the repair: %v, %v", found, err)
	}
}

// TestRepairEncrypted: an encrypted datastore is repaired with its key
// (chunks decrypted and their digests checked), and without it by
// structure and CRC with --crc-only, as verify --crc-only checks.
func TestRepairEncrypted(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no default key file
	key := filepath.Join(t.TempDir(), "enc.key")
	mustOK(t, "key", "create", "--kdf", "none", key)
	data := failoverImage()
	primary := fixture.NewStore(t)
	backupImage(t, primary, data, "--chunk-size", "64", "--keyfile", key)
	mirror := fixture.CopyDir(t, primary, filepath.Join(t.TempDir(), "mirror"))
	_, ds := fixture.Digests(t, filepath.Join(primary, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	for _, keyArgs := range [][]string{{"--keyfile", key}, {"--crc-only"}} {
		remove(t, chunkFile(primary, ds[2]))
		flipByte(t, chunkFile(primary, ds[5]))
		rep := repairJSON(t, 0, append([]string{"--store", primary, "--from", mirror}, keyArgs...)...)
		if rep.Repaired != 2 || len(rep.Items) != 2 {
			t.Errorf("%v: counts %+v, items %+v", keyArgs, rep.Counts, rep.Items)
		}
		mustOK(t, "verify", "--keyfile", key, "--store", primary, snap0)
	}
}

// filesCase is a datastore of one snapshot with two disks of random data
// (from seed) and a config blob, and a mirror of it.
func filesCase(t *testing.T, seed uint64) (primary, mirror, snapDir string) {
	t.Helper()
	dir := t.TempDir()
	d0 := fixture.WriteFile(t, dir, "d0.raw", fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: 1 << 20}))
	d1 := fixture.WriteFile(t, dir, "d1.raw", fixture.Build(seed+1, fixture.Region{Kind: fixture.Random, Len: 1 << 20}))
	conf := fixture.WriteFile(t, dir, "qemu-server.conf", []byte("memory: 512\nscsi0: local:vm-100-disk-0\n"))
	src := fixture.NewStore(t)
	mustOK(t, "backup", "--store", src, "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", "64",
		"drive-scsi0.img:"+d0, "drive-scsi1.img:"+d1, "qemu-server.conf:"+conf)
	primary = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "primary"))
	mirror = fixture.CopyDir(t, src, filepath.Join(t.TempDir(), "mirror"))
	return primary, mirror, filepath.Join("vm", "100", t0str)
}

// TestRepairFiles: repair mends a snapshot's files, not only its chunks:
// an index the primary lacks and a blob it holds damaged are copied from
// the mirror (kind index, blob), after which verify of the primary alone
// passes; a missing manifest is copied from mirrors that agree, not from
// mirrors that hold different ones, and a primary's manifest that does
// not read is never replaced. Whatever cannot be mended exits 1, listed.
func TestRepairFiles(t *testing.T) {
	primary, mirror, sd := filesCase(t, 21)
	remove(t, filepath.Join(primary, sd, "drive-scsi1.img.fidx"))
	flipByte(t, filepath.Join(primary, sd, "qemu-server.conf.blob"))
	mustFail(t, 1, nil, "verify", "--store", primary)
	rep := repairJSON(t, 0, "--store", primary, "--from", mirror)
	kinds := map[string]string{}
	for _, it := range rep.Items {
		kinds[it.Kind] = it.Problem + " " + it.Action + " " + it.Source + " " + it.File
	}
	want := map[string]string{
		repair.KindIndex: "missing copied " + mirror + " " + path.Join(filepath.ToSlash(sd), "drive-scsi1.img.fidx"),
		repair.KindBlob:  "damaged copied " + mirror + " " + path.Join(filepath.ToSlash(sd), "qemu-server.conf.blob"),
	}
	if len(rep.Items) != 2 || kinds[repair.KindIndex] != want[repair.KindIndex] || kinds[repair.KindBlob] != want[repair.KindBlob] || rep.Files.Repaired != 2 {
		t.Fatalf("items %+v, files %+v; want %q", rep.Items, rep.Files, want)
	}
	mustOK(t, "verify", "--store", primary)

	// The file in no store: exit 1, listed; verify still fails, as it must.
	primary, mirror, sd = filesCase(t, 21)
	remove(t, filepath.Join(primary, sd, "drive-scsi1.img.fidx"))
	// The mirror's copy damaged in its digests (the index header's middle
	// is reserved space no check reads).
	idx := filepath.Join(mirror, sd, "drive-scsi1.img.fidx")
	b := must(os.ReadFile(idx))
	b[len(b)-1] ^= 0x55
	if err := os.WriteFile(idx, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := pbs(t, "repair", "--store", primary, "--from", mirror)
	if r.code != 1 || !strings.Contains(r.out, "index "+path.Join(filepath.ToSlash(sd), "drive-scsi1.img.fidx")+" missing in "+primary+": NO STORE HAS A GOOD COPY: tried "+mirror+": ") {
		t.Errorf("want exit 1, the index listed: %v", r)
	}

	// A missing manifest: copied, last, from mirrors that agree.
	primary, mirror, sd = filesCase(t, 21)
	mirror2 := fixture.CopyDir(t, mirror, filepath.Join(t.TempDir(), "mirror2"))
	remove(t, filepath.Join(primary, sd, "index.json.blob"))
	remove(t, filepath.Join(primary, sd, "drive-scsi0.img.fidx"))
	rep = repairJSON(t, 0, "--store", primary, "--from", mirror, "--from", mirror2)
	if n := len(rep.Items); n != 2 || rep.Items[1].Kind != repair.KindManifest || rep.Items[1].Action != repair.ActionCopied {
		t.Fatalf("items %+v; want the index, then the manifest copied", rep.Items)
	}
	mustOK(t, "verify", "--store", primary, snap0)

	// Mirrors that disagree on the manifest: none copied, exit 1.
	primary, mirror, sd = filesCase(t, 21)
	other, _, _ := filesCase(t, 31) // the same snapshot name, other content
	remove(t, filepath.Join(primary, sd, "index.json.blob"))
	data, err := os.ReadFile(filepath.Join(other, sd, "index.json.blob"))
	if err != nil {
		t.Fatal(err)
	}
	mirror2 = fixture.CopyDir(t, mirror, filepath.Join(t.TempDir(), "mirror2"))
	if err := os.WriteFile(filepath.Join(mirror2, sd, "index.json.blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(data) == sha256.Sum256(must(os.ReadFile(filepath.Join(mirror, sd, "index.json.blob")))) {
		t.Skip("the two backups wrote the same manifest")
	}
	mustFail(t, 1, nil, "repair", "--store", primary, "--from", mirror, "--from", mirror2)
	if _, err := os.Stat(filepath.Join(primary, sd, "index.json.blob")); err == nil {
		t.Error("a manifest was copied from mirrors that disagree")
	}
	if r := pbs(t, "repair", "--store", primary, "--from", mirror, "--from", mirror2); !strings.Contains(r.out, "different manifests") {
		t.Errorf("the disagreement is not named: %v", r)
	}

	// A primary's manifest that does not read: never replaced.
	primary, mirror, sd = filesCase(t, 21)
	flipByte(t, filepath.Join(primary, sd, "index.json.blob"))
	before := must(os.ReadFile(filepath.Join(primary, sd, "index.json.blob")))
	rep = repairJSON(t, 1, "--store", primary, "--from", mirror)
	if rep.Files.NotReplaced != 1 || !slices.Equal(before, must(os.ReadFile(filepath.Join(primary, sd, "index.json.blob")))) {
		t.Errorf("files %+v; want the manifest left as it is", rep.Files)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRepairFromBadCopies: a chunk intact only as "<digest>.0.bad" is
// put back under its name from that copy, the copy left as it is: the
// primary's own (repair --store P alone), or a mirror's when the primary
// lacks it; then verify of the primary alone passes. The lines name the
// digest once and each store tried with what it said.
func TestRepairFromBadCopies(t *testing.T) {
	for _, inMirror := range []bool{false, true} {
		c := newRepairCase(t, filepath.Join(t.TempDir(), "primary"))
		// Only the chunks missing in the primary stay broken: the damaged
		// ones are made good again.
		for _, d := range c.damaged {
			data := must(os.ReadFile(chunkFile(c.mirror1, d)))
			if err := os.WriteFile(chunkFile(c.primary, d), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d := c.missing[0]
		holder, args := c.primary, []string{"repair", "--store", c.primary}
		if inMirror {
			holder, args = c.mirror1, append(args, "--from", c.mirror1)
		}
		// Every other missing chunk put back, so that only d needs the .bad copy.
		for _, o := range c.missing[1:] {
			data := must(os.ReadFile(chunkFile(c.mirror2, o)))
			if err := os.WriteFile(chunkFile(c.primary, o), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bad := filepath.Join(filepath.Dir(chunkFile(holder, d)), chunkstore.BadName(d, 0))
		if inMirror {
			if err := os.Rename(chunkFile(holder, d), bad); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(bad, must(os.ReadFile(chunkFile(c.mirror1, d))), 0o644); err != nil {
			t.Fatal(err)
		}
		mustFail(t, 1, nil, "verify", "--store", c.primary, snap0)
		r := mustOK(t, args...)
		wantSrc := holder + " (.bad copy " + chunkstore.BadName(d, 0) + ")"
		if !strings.Contains(r.out, "copied from "+wantSrc) || strings.Count(r.out, d.String()) != 2 /* the digest, the copy's name */ {
			t.Errorf("inMirror %v: want %q, the digest named once: %v", inMirror, wantSrc, r)
		}
		if inMirror && !strings.Contains(r.out, "tried first "+c.mirror1+": ") {
			t.Errorf("the line does not say what %s said: %v", c.mirror1, r)
		}
		if _, err := os.Stat(bad); err != nil {
			t.Errorf("the .bad copy was not left as it is: %v", err)
		}
		mustOK(t, "verify", "--store", c.primary, snap0)
	}
}

// TestRepairFilesBucket: the same in an S3 bucket (versitygw): the index
// the bucket lacks and the blob it holds damaged are PUT from the mirror,
// and verify of the bucket alone passes after.
func TestRepairFilesBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw")
	}
	src, mirror, sd := filesCase(t, 51)
	root := t.TempDir()
	pdir := fixture.CopyDir(t, src, filepath.Join(root, "pbkt", "ds"))
	remove(t, filepath.Join(pdir, sd, "drive-scsi0.img.fidx"))
	flipByte(t, filepath.Join(pdir, sd, "qemu-server.conf.blob"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	bktSetEnv(t, "127.0.0.1:1")
	endpoint := []string{"--s3-endpoint", s3.Endpoint}
	mustFail(t, 1, nil, append([]string{"verify", "--store", "s3://pbkt/ds"}, endpoint...)...)
	rep := repairJSON(t, 0, append([]string{"--store", "s3://pbkt/ds", "--from", mirror}, endpoint...)...)
	if rep.Files.Repaired != 2 {
		t.Errorf("files %+v, items %+v; want 2 repaired", rep.Files, rep.Items)
	}
	mustOK(t, append([]string{"verify", "--store", "s3://pbkt/ds"}, endpoint...)...)
}
