package backup_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestCheckOrder: a snapshot not after its group's last one is refused,
// and so is one taken now when the group's last lies in the future; one
// already there is ErrSnapshotExists, not a refusal; other groups and
// later times pass.
func TestCheckOrder(t *testing.T) {
	dir := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 1))
	fixture.Backup(t, dir, fixture.Snap(t, "", "vm", "100", fixture.T0), backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	store := fixture.OpenStore(t, dir)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		id      string
		time    int64
		now     int64
		refused bool
		exists  bool
	}{
		{"same time", "100", fixture.T0, fixture.T0 + 10, false, true},
		{"earlier", "100", fixture.T0 - 60, fixture.T0 + 10, true, false},
		{"later", "100", fixture.T0 + 60, fixture.T0 + 10, false, false},
		{"now, last in the past", "100", 0, fixture.T0 + 10, false, false},
		{"now, last in the future", "100", 0, fixture.T0 - 10, true, false},
		{"another group", "101", fixture.T0 - 60, fixture.T0 + 10, false, false},
	} {
		snap := fixture.Snap(t, "", "vm", c.id, fixture.T0)
		snap.Time = c.time
		err := backup.CheckOrder(ctx, store, snap, c.now)
		if errors.Is(err, backup.ErrRefused) != c.refused || errors.Is(err, backup.ErrSnapshotExists) != c.exists || (err != nil && !c.refused && !c.exists) {
			t.Errorf("%s: %v, want refused %v, exists %v", c.name, err, c.refused, c.exists)
		}
	}
}

// TestCheckSources: a missing path and a character device are refused
// before anything is written; a regular file passes.
func TestCheckSources(t *testing.T) {
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", []byte("x"))
	if err := backup.CheckSources([]backup.Source{{Name: "a.img", Path: img}}); err != nil {
		t.Errorf("regular file: %v", err)
	}
	for _, p := range []string{filepath.Join(t.TempDir(), "missing"), "/dev/null"} {
		if err := backup.CheckSources([]backup.Source{{Name: "a.img", Path: img}, {Name: "b.img", Path: p}}); !errors.Is(err, backup.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", p, err)
		}
	}
	// A pxar source must be a directory; an image source must not be one.
	d := t.TempDir()
	if err := backup.CheckSources([]backup.Source{{Name: "root.pxar", Path: d}}); err != nil {
		t.Errorf("directory as root.pxar: %v", err)
	}
	for _, s := range []backup.Source{{Name: "root.pxar", Path: img}, {Name: "a.img", Path: d}} {
		if err := backup.CheckSources([]backup.Source{s}); !errors.Is(err, backup.ErrRefused) {
			t.Errorf("%s from %s: %v, want ErrRefused", s.Name, s.Path, err)
		}
	}
}

// TestCheckCrypt: the crypt mode against the key there is; refusals are
// ErrRefused.
func TestCheckCrypt(t *testing.T) {
	_, cc := fixture.Key(t, 1)
	for _, c := range []struct {
		mode       string
		key        *crypto.Config
		master     bool
		wantKey    bool
		wantSign   bool
		wantRefuse bool
	}{
		{"", cc, false, true, false, false},
		{"", nil, false, false, false, false},
		{"none", cc, false, false, false, false},
		{"encrypt", cc, true, true, false, false},
		{"sign-only", cc, false, true, true, false},
		{"encrypt", nil, false, false, false, true},
		{"sign-only", cc, true, false, false, true},
		{"none", cc, true, false, false, true},
		{"aes", cc, false, false, false, true},
	} {
		key, sign, err := backup.CheckCrypt(c.mode, c.key, c.master)
		if (key != nil) != c.wantKey || sign != c.wantSign || errors.Is(err, backup.ErrRefused) != c.wantRefuse || (err != nil) != c.wantRefuse {
			t.Errorf("CheckCrypt(%q, key %v, master %v) = key %v, sign-only %v, %v", c.mode, c.key != nil, c.master, key != nil, sign, err)
		}
	}
}
