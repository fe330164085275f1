package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// deltaPair is a store holding two snapshots of vm/100, the older image
// (old, at fixture.T0) and the newer (new, an hour later): 2 % of the data
// chunks changed, two data chunks turned into zero chunks, a zero chunk
// turned into data, and the size changed by grow bytes (negative: shrunk).
type deltaPair struct {
	dir              string
	old, new         []byte
	oldRef, newRef   string
	oldDig, newDig   []crypto.Digest
	zeroDigest       crypto.Digest
	cc               *crypto.Config
	oldTime, newTime int64
}

func newDeltaPair(t *testing.T, grow int, cc *crypto.Config) *deltaPair {
	t.Helper()
	old := fixture.Build(5, fixture.Region{Kind: fixture.Random, Len: 100 * cs}, fixture.Region{Kind: fixture.Zero, Len: 30 * cs},
		fixture.Region{Kind: fixture.Text, Len: 70*cs + 1000})
	nw := append([]byte(nil), old...)
	for i, pos := range []int{3, 50, 150, 170} { // 2 % of 200 chunks
		copy(nw[pos*cs:(pos+1)*cs], storetest.Noise(cs, uint64(100+i)))
	}
	clear(nw[10*cs : 12*cs])                        // data chunks that became zero
	copy(nw[105*cs:106*cs], storetest.Noise(cs, 7)) // a zero chunk that became data
	if grow >= 0 {
		nw = append(nw, storetest.Noise(grow, 9)...)
	} else {
		nw = nw[:len(nw)+grow]
	}
	p := &deltaPair{dir: fixture.NewStore(t), old: old, new: nw, cc: cc, oldTime: fixture.T0, newTime: fixture.T0 + 3600}
	for _, v := range []struct {
		data []byte
		when int64
		ref  *string
		dig  *[]crypto.Digest
	}{{old, p.oldTime, &p.oldRef, &p.oldDig}, {nw, p.newTime, &p.newRef, &p.newDig}} {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", v.data)
		snap := fixture.Snap(t, "", "vm", "100", v.when)
		fixture.Backup(t, p.dir, snap, backup.Options{ChunkSize: cs, Key: cc}, backup.Source{Name: "drive-scsi0.img", Path: img})
		*v.ref = snap.String()
		_, *v.dig = fixture.Digests(t, fixture.SnapPath(p.dir, snap, "drive-scsi0.img.fidx"))
	}
	p.zeroDigest = fixture.ZeroDigest(cs, cc)
	return p
}

// reader opens snapshot ref of the pair's store through s (the store
// itself when nil).
func (p *deltaPair) reader(t *testing.T, ref string, s chunkstore.Store) *snapshot.Reader {
	t.Helper()
	if s == nil {
		s = fixture.OpenStore(t, p.dir)
	}
	o := snapshot.KeyOptions{}
	if p.cc != nil {
		o.File = "key"
		o.Open = func(context.Context, string) (*crypto.Config, error) { return p.cc, nil }
	}
	keys, err := snapshot.NewKeys(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(context.Background(), s, nil, ref, keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// restoreTo restores ref to target (force: over an existing file) with
// delta, reading through s; it returns the result (target closed) or the
// error.
func (p *deltaPair) restoreTo(t *testing.T, ref, target string, s chunkstore.Store, delta *restore.Delta) (*restore.Result, error) {
	t.Helper()
	sink := &filetarget.Sink{Path: target, Options: filetarget.Options{Force: true}}
	res, err := restore.Restore(context.Background(), p.reader(t, ref, s), "drive-scsi0.img.fidx", sink,
		restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Delta: delta})
	if err != nil {
		return nil, err
	}
	if err := res.Target.Close(false); err != nil {
		t.Fatal(err)
	}
	return res, nil
}

// changed returns the digests of the new index at the positions whose
// digest differs from the old one's (past its end included) and are not
// zero chunks, plus those of the positions extra names.
func (p *deltaPair) changed(extra ...int) map[crypto.Digest]bool {
	want := map[crypto.Digest]bool{}
	for i, d := range p.newDig {
		if d != p.zeroDigest && (i >= len(p.oldDig) || p.oldDig[i] != d) {
			want[d] = true
		}
	}
	for _, i := range extra {
		want[p.newDig[i]] = true
	}
	return want
}

// damage overwrites chunk position pos of target with noise.
func damage(t *testing.T, target string, pos ...int) {
	t.Helper()
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range pos {
		if _, err := f.WriteAt(storetest.Noise(cs, uint64(1000+p)), int64(p*cs)); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFetched fails unless counts holds exactly the digests of want, each
// fetched once.
func checkFetched(t *testing.T, counts map[crypto.Digest]int, want map[crypto.Digest]bool) {
	t.Helper()
	for d, n := range counts {
		if !want[d] || n != 1 {
			t.Errorf("chunk %s fetched %d time(s), want %d", d, n, map[bool]int{true: 1}[want[d]])
		}
	}
	for d := range want {
		if counts[d] == 0 {
			t.Errorf("changed chunk %s not fetched", d)
		}
	}
}

// TestRestoreBase: restoring snapshot N onto a target holding N-1 with
// Base (the record vouching for it) is byte-identical to a full restore
// and fetches exactly the chunks of the changed positions, each once; data
// chunks that became zero are zeroed, and the grown or shrunk size is
// taken. Before, there was no differential restore: every chunk was
// fetched.
func TestRestoreBase(t *testing.T) {
	for _, tc := range []struct {
		name string
		grow int
	}{{"grown", 2*cs + 512}, {"shrunk", -(20*cs + 1000)}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newDeltaPair(t, tc.grow, nil)
			target := filepath.Join(t.TempDir(), "disk.raw")
			if _, err := p.restoreTo(t, p.oldRef, target, nil, nil); err != nil {
				t.Fatal(err)
			}
			count := fixture.NewCountingStore(fixture.OpenStore(t, p.dir))
			res, err := p.restoreTo(t, p.newRef, target, count, &restore.Delta{Base: p.reader(t, p.oldRef, nil)})
			if err != nil {
				t.Fatal(err)
			}
			fixture.Equal(t, target, p.new)
			checkFetched(t, count.Counts(), p.changed())
			if res.Delta == nil || res.Delta.Checked != 0 || res.Delta.ZeroedBytes < 2*cs {
				t.Errorf("delta result %+v: want nothing read back and the two chunks that became zero zeroed", res.Delta)
			}
			// The record now names N: the next run with N as base
			// fetches nothing.
			count = fixture.NewCountingStore(fixture.OpenStore(t, p.dir))
			if _, err := p.restoreTo(t, p.newRef, target, count, &restore.Delta{Base: p.reader(t, p.newRef, nil)}); err != nil {
				t.Fatal(err)
			}
			if n := len(count.Counts()); n != 0 {
				t.Errorf("restoring N over N fetched %d chunks", n)
			}
			fixture.Equal(t, target, p.new)
		})
	}
}

// TestRestoreBaseUntrusted: a base the target's record does not vouch
// for (the file changed since, no record at all, an incomplete restore,
// another snapshot) is refused (ErrRefused) without VerifyBase, leaving
// the target as it was; with VerifyBase the target is read back and only
// the ranges matching the base are skipped: the result is byte-identical
// and the damaged range is fetched too, a zero range that was damaged is
// zeroed. Encrypted archives check keyed digests.
func TestRestoreBaseUntrusted(t *testing.T) {
	_, key := fixture.Key(t, 3)
	for _, tc := range []struct {
		name  string
		cc    *crypto.Config
		spoil func(t *testing.T, p *deltaPair, target string)
		extra []int // positions fetched beyond the changed ones
	}{
		{"changed", nil, func(t *testing.T, p *deltaPair, target string) { damage(t, target, 60, 120) }, []int{60}},
		{"changed-encrypted", key, func(t *testing.T, p *deltaPair, target string) { damage(t, target, 60, 120) }, []int{60}},
		{"changed-mtime-kept", nil, func(t *testing.T, p *deltaPair, target string) {
			// Edited, its modification time set back: only the change
			// time (kept in the record's stamp) shows it.
			st, err := os.Stat(target)
			if err != nil {
				t.Fatal(err)
			}
			damage(t, target, 60, 120)
			if err := os.Chtimes(target, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, []int{60}},
		{"no-record", nil, func(t *testing.T, p *deltaPair, target string) {
			b, _ := os.ReadFile(target)
			os.Remove(target)
			if err := os.WriteFile(target, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"incomplete", nil, func(t *testing.T, p *deltaPair, target string) {
			// A restore of N-1 again that stops on a chunk gone from the
			// store leaves the record incomplete (its journal put away).
			chunk := fixture.ChunkPath(p.dir, p.oldDig[150])
			if err := os.Rename(chunk, chunk+".away"); err != nil {
				t.Fatal(err)
			}
			defer os.Rename(chunk+".away", chunk)
			if _, err := p.restoreTo(t, p.oldRef, target, nil, nil); err == nil {
				t.Fatal("the restore with a chunk gone did not fail")
			}
			jpath, _ := filetarget.JournalPath(target)
			os.Remove(jpath)
			rec, err := restore.TargetRecord(&filetarget.Sink{Path: target})
			if err != nil || rec.Complete || rec.Snapshot != p.oldRef {
				t.Fatalf("record after a stopped restore: %+v, %v; want %s incomplete", rec, err, p.oldRef)
			}
		}, []int{150}},
		{"other-snapshot", nil, func(t *testing.T, p *deltaPair, target string) {
			// The target holds N already: the record names N, not N-1.
			if _, err := p.restoreTo(t, p.newRef, target, nil, nil); err != nil {
				t.Fatal(err)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newDeltaPair(t, cs, tc.cc)
			target := filepath.Join(t.TempDir(), "disk.raw")
			if _, err := p.restoreTo(t, p.oldRef, target, nil, nil); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, p, target)
			before, _ := os.ReadFile(target)
			count := fixture.NewCountingStore(fixture.OpenStore(t, p.dir))
			_, err := p.restoreTo(t, p.newRef, target, count, &restore.Delta{Base: p.reader(t, p.oldRef, nil)})
			if !errors.Is(err, restore.ErrRefused) {
				t.Fatalf("untrusted base: %v, want ErrRefused", err)
			}
			fixture.Equal(t, target, before)
			if n := len(count.Counts()); n != 0 {
				t.Errorf("the refused restore fetched %d chunks", n)
			}
			res, err := p.restoreTo(t, p.newRef, target, count, &restore.Delta{Base: p.reader(t, p.oldRef, nil), VerifyBase: true})
			if err != nil {
				t.Fatal(err)
			}
			fixture.Equal(t, target, p.new)
			want := p.changed(tc.extra...)
			checkFetched(t, count.Counts(), want)
			if res.Delta == nil || res.Delta.Checked == 0 {
				t.Errorf("delta result %+v: want ranges read back", res.Delta)
			}
		})
	}
}

// TestRestoreInPlace: an in-place restore (no base) onto a target holding
// the image with random damage (data ranges, a zero range, plain and
// encrypted) fetches exactly the damaged data chunks, writes exactly their
// bytes and zeroes exactly the damaged zero range.
func TestRestoreInPlace(t *testing.T) {
	_, key := fixture.Key(t, 4)
	for _, tc := range []struct {
		name string
		cc   *crypto.Config
	}{{"plain", nil}, {"encrypted", key}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newDeltaPair(t, 0, tc.cc)
			target := filepath.Join(t.TempDir(), "disk.raw")
			if _, err := p.restoreTo(t, p.newRef, target, nil, nil); err != nil {
				t.Fatal(err)
			}
			data := []int{0, 37, 99, 140, 199}
			damage(t, target, append(data, 115)...) // 115: a zero chunk
			count := fixture.NewCountingStore(fixture.OpenStore(t, p.dir))
			res, err := p.restoreTo(t, p.newRef, target, count, &restore.Delta{InPlace: true})
			if err != nil {
				t.Fatal(err)
			}
			fixture.Equal(t, target, p.new)
			want := map[crypto.Digest]bool{}
			for _, i := range data {
				want[p.newDig[i]] = true
			}
			checkFetched(t, count.Counts(), want)
			if got := res.Stats.DataBytes.Load(); got != uint64(len(data)*cs) {
				t.Errorf("wrote %d bytes, want the %d damaged bytes", got, len(data)*cs)
			}
			if res.Delta.ZeroedBytes != cs {
				t.Errorf("zeroed %d bytes, want the damaged zero chunk's %d", res.Delta.ZeroedBytes, cs)
			}
			if res.Delta.Written != uint64(len(data)) {
				t.Errorf("delta result %+v: want %d positions written", res.Delta, len(data))
			}
		})
	}
}

// TestRestoreGuestBase: a guest restored with Base onto the targets that
// hold its older snapshot (restored and recorded by RestoreGuest) ends
// byte-identical to the newer one, fetching only the chunks of changed
// positions (a chunk that became another disk's too, once); one disk
// changed since is refused without VerifyBase and corrected with it.
func TestRestoreGuestBase(t *testing.T) {
	ctx := context.Background()
	chunk := func(seed uint64) []byte { return fixture.Build(seed, fixture.Region{Kind: fixture.Random, Len: cs}) }
	oldImgs := guestImages()
	g1, g2 := chunk(41), chunk(42)
	z := make([]byte, cs)
	newImgs := [][]byte{
		append(append(append([]byte(nil), oldImgs[0][:2*cs]...), g1...), oldImgs[0][3*cs:]...), // c → g1
		append(append([]byte(nil), oldImgs[1][:2*cs]...), g1...),                               // a → g1
		append(append(append([]byte(nil), z...), z...), g2[:999]...),                           // e → zero, f → g2
	}
	dir := fixture.NewStore(t)
	for k, imgs := range [][][]byte{oldImgs, newImgs} {
		src := t.TempDir()
		var sources []backup.Source
		for i, img := range imgs {
			name := guestArchives[i][:len(guestArchives[i])-len(".fidx")]
			sources = append(sources, backup.Source{Name: name, Path: fixture.WriteFile(t, src, name, img)})
		}
		fixture.Backup(t, dir, fixture.Snap(t, "", "vm", "100", fixture.T0+int64(k)*3600), backup.Options{ChunkSize: cs}, sources...)
	}
	p := &deltaPair{dir: dir}
	oldRef, newRef := fixture.Snap(t, "", "vm", "100", fixture.T0).String(), fixture.Snap(t, "", "vm", "100", fixture.T0+3600).String()
	out := t.TempDir()
	disks := func() []restore.GuestDisk {
		var ds []restore.GuestDisk
		for _, a := range guestArchives {
			ds = append(ds, restore.GuestDisk{Archive: a, Sink: &filetarget.Sink{Path: filepath.Join(out, a+".img"), Options: filetarget.Options{Force: true}}})
		}
		return ds
	}
	run := func(ref string, s chunkstore.Store, delta *restore.Delta) error {
		t.Helper()
		g, err := restore.RestoreGuest(ctx, p.reader(t, ref, s), disks(), restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true, Delta: delta})
		if err != nil {
			return err
		}
		for _, r := range g.Disks {
			if r != nil && r.Target != nil {
				r.Target.Close(false)
			}
		}
		return g.Err()
	}
	if err := run(oldRef, nil, nil); err != nil {
		t.Fatal(err)
	}
	count := fixture.NewCountingStore(fixture.OpenStore(t, dir))
	if err := run(newRef, count, &restore.Delta{Base: p.reader(t, oldRef, nil)}); err != nil {
		t.Fatal(err)
	}
	for i, img := range newImgs {
		fixture.Equal(t, filepath.Join(out, guestArchives[i]+".img"), img)
	}
	sum := func(b []byte) crypto.Digest { return (*crypto.Config)(nil).ChunkDigest(b) }
	checkFetched(t, count.Counts(), map[crypto.Digest]bool{sum(g1): true, sum(g2[:999]): true})

	// Back to the old snapshot, then one disk changed: refused, then
	// verified.
	if err := run(oldRef, nil, nil); err != nil {
		t.Fatal(err)
	}
	damage(t, filepath.Join(out, guestArchives[1]+".img"), 1) // d
	if err := run(newRef, nil, &restore.Delta{Base: p.reader(t, oldRef, nil)}); !errors.Is(err, restore.ErrRefused) {
		t.Fatalf("guest over a changed disk: %v, want ErrRefused", err)
	}
	count = fixture.NewCountingStore(fixture.OpenStore(t, dir))
	if err := run(newRef, count, &restore.Delta{Base: p.reader(t, oldRef, nil), VerifyBase: true}); err != nil {
		t.Fatal(err)
	}
	for i, img := range newImgs {
		fixture.Equal(t, filepath.Join(out, guestArchives[i]+".img"), img)
	}
	checkFetched(t, count.Counts(), map[crypto.Digest]bool{sum(g1): true, sum(g2[:999]): true, sum(oldImgs[1][cs : 2*cs]): true})
}

// TestRestoreBaseDevice: onto a block device (a loop device) holding N-1,
// restored and recorded (the record beside the device's journal), Base
// fetches exactly the changed chunks and leaves the device holding N,
// the chunks that became zero zeroed; a record of another device
// number is refused.
func TestRestoreBaseDevice(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := newDeltaPair(t, cs, nil)
	dev, backing := fixture.LoopDevice(t, int64((len(p.new)/cs+4)*cs), []byte{0xa5})
	if _, err := p.restoreTo(t, p.oldRef, dev, nil, nil); err != nil {
		t.Fatal(err)
	}
	count := fixture.NewCountingStore(fixture.OpenStore(t, p.dir))
	res, err := p.restoreTo(t, p.newRef, dev, count, &restore.Delta{Base: p.reader(t, p.oldRef, nil)})
	if err != nil {
		t.Fatal(err)
	}
	checkFetched(t, count.Counts(), p.changed())
	got, err := os.ReadFile(backing)
	if err != nil {
		t.Fatal(err)
	}
	fixture.EqualBytes(t, dev, got[:len(p.new)], p.new)
	if res.Delta.Mode != "base" || res.Delta.Checked != 0 {
		t.Errorf("delta result %+v: want a trusted base, nothing read back", res.Delta)
	}
	// The record names N now; one forged for another device is refused.
	jpath, err := filetarget.JournalPath(dev)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := restore.ReadRecord(restore.RecordPath(jpath))
	if err != nil || !rec.Complete || rec.Snapshot != p.newRef || rec.Target.Finished.IsZero() {
		t.Fatalf("device record %+v, %v: want %s complete, its target's finish time set", rec, err, p.newRef)
	}
	rec.Target.Rdev++
	if err := restore.WriteRecord(restore.RecordPath(jpath), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := p.restoreTo(t, p.newRef, dev, nil, &restore.Delta{Base: p.reader(t, p.newRef, nil)}); !errors.Is(err, restore.ErrRefused) {
		t.Fatalf("a record of another device: %v, want ErrRefused", err)
	}
}

// TestDrillFailedReadBackDistrusts: a drill with Base onto a device whose
// record vouches for N-1 but one of whose unchanged chunk ranges was
// written since (nothing a device's identity shows) fails its read-back;
// the record is then marked incomplete, naming the failed read-back, so
// the next drill with Base is refused (ErrRefused) instead of trusting
// the target again and failing the same way every night. Before, the
// record stayed complete and the next drill failed the read-back again.
func TestDrillFailedReadBackDistrusts(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := newDeltaPair(t, 0, nil)
	dev, _ := fixture.LoopDevice(t, int64((len(p.new)/cs+4)*cs), []byte{0xa5})
	drill := func(ref string, delta *restore.Delta) error {
		t.Helper()
		sink := &filetarget.Sink{Path: dev, Options: filetarget.Options{Force: true}}
		_, err := restore.Drill(context.Background(), p.reader(t, ref, nil), "drive-scsi0.img.fidx", sink,
			restore.DrillOptions{Jobs: 2, Restore: restore.RestoreOptions{Delta: delta}})
		return err
	}
	if err := drill(p.oldRef, nil); err != nil {
		t.Fatal(err)
	}
	damage(t, dev, 60) // the same chunk in both snapshots
	err := drill(p.newRef, &restore.Delta{Base: p.reader(t, p.oldRef, nil)})
	if !errors.Is(err, restore.ErrReadBackMismatch) {
		t.Fatalf("drill onto a spoilt unchanged range: %v, want a read-back mismatch", err)
	}
	jpath, err := filetarget.JournalPath(dev)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := restore.ReadRecord(restore.RecordPath(jpath))
	if err != nil || rec.Complete || rec.Failed == "" || rec.Snapshot != p.newRef {
		t.Fatalf("record after the failed read-back %+v, %v: want %s incomplete, naming the failure", rec, err, p.newRef)
	}
	err = drill(p.newRef, &restore.Delta{Base: p.reader(t, p.newRef, nil)})
	if !errors.Is(err, restore.ErrRefused) || !strings.Contains(err.Error(), "does not hold what was restored") {
		t.Fatalf("the next drill with Base: %v, want refused naming the failed drill", err)
	}
	// --in-place heals it.
	if err := drill(p.newRef, &restore.Delta{InPlace: true}); err != nil {
		t.Fatalf("in place: %v", err)
	}
}

// TestDeltaReadBackCountsRead: what a differential restore says it read
// back is what the target held: --in-place onto a file half the image's
// size reads at most that half, and --verify-base onto a target that is
// not there reads nothing; both leave the image whole. Before, every
// position was counted as read (the file is first extended to the image's
// size, sparse).
func TestDeltaReadBackCountsRead(t *testing.T) {
	p := newDeltaPair(t, cs, nil)
	half := filepath.Join(t.TempDir(), "half.raw")
	if _, err := p.restoreTo(t, p.oldRef, half, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(half, int64(len(p.old)/2)); err != nil {
		t.Fatal(err)
	}
	res, err := p.restoreTo(t, p.newRef, half, nil, &restore.Delta{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	fixture.Equal(t, half, p.new)
	if got := res.Delta.ReadBytes; got == 0 || got > uint64(len(p.old)/2) {
		t.Errorf("--in-place onto a file of %d bytes read back %d bytes", len(p.old)/2, got)
	}
	none := filepath.Join(t.TempDir(), "none.raw")
	res, err = p.restoreTo(t, p.newRef, none, nil, &restore.Delta{Base: p.reader(t, p.oldRef, nil), VerifyBase: true})
	if err != nil {
		t.Fatal(err)
	}
	fixture.Equal(t, none, p.new)
	if res.Delta.ReadBytes != 0 || res.Delta.Checked != 0 {
		t.Errorf("--verify-base onto a new file read back %d bytes, %d positions; want none", res.Delta.ReadBytes, res.Delta.Checked)
	}
}
