package restore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/restoretest"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestStartOverWording: a rerun over a stopped restore that left durable
// chunks says why they are discarded: a drill (no KeepWork) without
// --restart says it starts over and that --resume continues it instead,
// never naming --restart (not given); with Restart it names --restart.
func TestStartOverWording(t *testing.T) {
	ctx := context.Background()
	data := fixture.Mixed(40*cs+1234, 17)
	dir, snap := restoretest.SnapshotOf(t, data, nil)
	putBack := stopOnLastChunk(t, dir, fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	defer putBack()
	for _, tc := range []struct {
		name      string
		o         restore.RestoreOptions
		want, not []string
	}{
		{"drill", restore.RestoreOptions{}, []string{"an interrupted restore of", "durable chunks; starting over, they are discarded (give --resume to continue it instead)"}, []string{"--restart"}},
		{"restart", restore.RestoreOptions{KeepWork: true, Restart: true}, []string{"--restart: the", "durable chunks"}, []string{"give --resume"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "disk.raw")
			sink := &filetarget.Sink{Path: target}
			o := restore.RestoreOptions{Pipeline: restore.Options{Jobs: 2}, KeepWork: true}
			_, err := restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o)
			var se *restore.StoppedError
			if !errors.As(err, &se) || se.Durable == 0 {
				t.Fatalf("stopped restore: %v", err)
			}
			var notes []string
			o = tc.o
			o.Pipeline = restore.Options{Jobs: 2}
			o.Note = func(m string) { notes = append(notes, m) }
			restore.Restore(ctx, src(t, dir, "vm/100"), "drive-scsi0.img.fidx", sink, o) // stops again on the missing chunk
			all := strings.Join(notes, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("notes %q lack %q", all, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(all, w) {
					t.Errorf("notes %q say %q", all, w)
				}
			}
		})
	}
}
