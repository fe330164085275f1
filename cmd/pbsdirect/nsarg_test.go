package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// nsStore returns a datastore with vm/100 at T0 in each namespace of
// images (namespace → image), written without the command line.
func nsStore(t *testing.T, images map[string][]byte) string {
	t.Helper()
	store := fixture.NewStore(t)
	for ns, data := range images {
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
		fixture.Backup(t, store, fixture.Snap(t, ns, "vm", "100", fixture.T0), backup.Options{},
			backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	return store
}

// TestNamespaceNamedNS: "ns" is a valid namespace name, so "--ns ns/prod"
// (namespace ns → prod, as 'namespaces' prints it) is also the datastore
// path of namespace prod. The name as listed wins whenever it exists; an
// argument whose listed reading does not exist while its path reading does
// is refused naming both, never read as the other namespace.
func TestNamespaceNamedNS(t *testing.T) {
	imgA, imgB := fixture.Mixed(200<<10, 1), fixture.Mixed(200<<10, 2)
	both := nsStore(t, map[string][]byte{"prod": imgA, "ns/prod": imgB})
	onlyNested := nsStore(t, map[string][]byte{"ns/prod": imgB})
	onlyTop := nsStore(t, map[string][]byte{"prod": imgA})
	if r := mustOK(t, "namespaces", "--store", both); !strings.Contains(r.out, "\nns/prod\n") {
		t.Fatalf("namespaces does not list ns/prod: %v", r)
	}
	for _, c := range []struct {
		name, store, ns string
		want            []byte // nil: refused
		path            string // the path reading a refusal names
	}{
		{"both-listed-form", both, "ns/prod", imgB, ""},
		{"both-other", both, "prod", imgA, ""},
		{"both-path-of-nested", both, "ns/ns/ns/prod", nil, "ns/prod"},
		{"nested-only", onlyNested, "ns/prod", imgB, ""},
		{"top-only-path-form", onlyTop, "ns/prod", nil, "prod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "out.raw")
			args := []string{"--store", c.store, "--ns", c.ns, "vm/100", "drive-scsi0", target}
			if c.want == nil {
				mustFail(t, exitUsage, []string{"ambiguous", "namespace " + c.ns, "namespace " + c.path}, append([]string{"restore"}, args...)...)
				noFile(t, target)
				mustFail(t, exitUsage, []string{"ambiguous"}, "snapshots", "--store", c.store, "--ns", c.ns)
				return
			}
			restoreJSON(t, args...)
			fixture.Equal(t, target, c.want)
		})
	}
}

// TestBackupNamespaceNamedNS: backup never writes an ambiguous --ns into
// the path form's namespace; when neither reading exists it creates the
// namespace as written, parents included.
func TestBackupNamespaceNamedNS(t *testing.T) {
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 3))
	bk := func(store, ns string) result {
		return pbs(t, "backup", "--store", store, "--ns", ns, "--backup-type", "vm", "--backup-id", "200", "--backup-time", t0str, "drive-scsi0.img:"+img)
	}
	// Only "ns" exists: "ns/ns" is its child (to be created) or its path.
	store := nsStore(t, map[string][]byte{"ns": fixture.Mixed(64<<10, 4)})
	if r := bk(store, "ns/ns"); r.code != exitUsage || !strings.Contains(r.err, "ambiguous") {
		t.Errorf("backup --ns ns/ns with namespace ns only: want a refusal, got %v", r)
	}
	if r := mustOK(t, "groups", "--store", store, "--ns", "ns"); strings.Contains(r.out, "vm/200") {
		t.Errorf("backup --ns ns/ns wrote into namespace ns: %s", r.out)
	}
	// Neither exists: the namespace as written, ns → prod, is created.
	empty := fixture.NewStore(t)
	if r := bk(empty, "ns/prod"); r.code != 0 {
		t.Errorf("backup --ns ns/prod into an empty store: %v", r)
	}
	if r := mustOK(t, "namespaces", "--store", empty); !strings.Contains(r.out, "\nns/prod\n") {
		t.Errorf("backup --ns ns/prod did not create namespace ns/prod: %s", r.out)
	}
	// ns/prod exists: backup writes into it, as named.
	store = nsStore(t, map[string][]byte{"ns/prod": fixture.Mixed(64<<10, 4), "prod": fixture.Mixed(64<<10, 5)})
	if r := bk(store, "ns/prod"); r.code != 0 {
		t.Fatalf("backup --ns ns/prod with ns/prod existing: %v", r)
	}
	if r := mustOK(t, "groups", "--store", store, "--ns", "ns/prod"); !strings.Contains(r.out, "vm/200") {
		t.Errorf("backup --ns ns/prod did not write into namespace ns/prod: %s", r.out)
	}
	// Unambiguous forms are taken as written.
	if r := bk(fixture.NewStore(t), "ns/prod/db"); r.code != 0 {
		t.Errorf("backup --ns ns/prod/db: %v", r)
	}
}
