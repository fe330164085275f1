package filetarget

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkFiles: the working files WorkFiles names are those a restore
// keeps (JournalPath, the partial name), long names shortened alike, and
// WorkFileKind knows them and no other name.
func TestWorkFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"drive-scsi0.img", strings.Repeat("x", 250)} {
		target := filepath.Join(dir, name)
		partial, journal := WorkFiles(target)
		jp, err := JournalPath(target)
		if err != nil {
			t.Fatal(err)
		}
		if journal != jp || partial != filepath.Join(dir, partialName(name)) {
			t.Errorf("%s: WorkFiles %s, %s; want %s, %s", name, partial, journal, partialName(name), jp)
		}
		if WorkFileKind(partial) != "partial output" || WorkFileKind(journal) != "journal" || WorkFileKind(journal+".new") != "journal" {
			t.Errorf("%s: kinds %q %q %q", name, WorkFileKind(partial), WorkFileKind(journal), WorkFileKind(journal+".new"))
		}
	}
	for _, p := range []string{"/x/drive-scsi0.img", "/x/qemu-server.conf", "/x/a.pbsdirect-partial", "/x/.hidden"} {
		if k := WorkFileKind(p); k != "" {
			t.Errorf("WorkFileKind(%s) = %q, want none", p, k)
		}
	}
}
