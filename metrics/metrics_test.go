package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/verify"
)

// TestLastSuccessCarried: a failed run keeps the last-success time of the
// run before it; a good run sets it to its own end.
func TestLastSuccessCarried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pbsdirect.prom")
	const name = "pbsdirect_drill_last_success_timestamp_seconds"
	if err := WriteDrill(path, []Drill{{Snapshot: "vm/100/x", Archive: "a", OK: true, RestoreSeconds: 2}}, time.Unix(1000, 0)); err != nil {
		t.Fatal(err)
	}
	if err := WriteDrill(path, []Drill{{Snapshot: "vm/100/x", Archive: "a"}}, time.Unix(2000, 0)); err != nil {
		t.Fatal(err)
	}
	if got := LastValue(path, name); got != 1000 {
		t.Errorf("after a failed run: last success %v, want 1000", got)
	}
	if err := WriteVerify(path, verify.Report{OK: true, Store: "/ds"}, 3, time.Unix(3000, 0)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `pbsdirect_verify_retries{shard="",store="/ds"} 3`) || LastValue(path, "pbsdirect_verify_last_success_timestamp_seconds") != 3000 {
		t.Errorf("verify metrics:\n%s", b)
	}
}

// TestVerifyWithoutKey: snapshots no key opens have their own gauge, apart
// from the damaged chunks.
func TestVerifyWithoutKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pbsdirect.prom")
	rep := verify.Report{Store: "/ds", WithoutKey: 2}
	if err := WriteVerify(path, rep, 0, time.Unix(3000, 0)); err != nil {
		t.Fatal(err)
	}
	if got := LastValue(path, "pbsdirect_verify_snapshots_without_key"); got != 2 {
		t.Errorf("snapshots without key: %v, want 2", got)
	}
	if got := LastValue(path, "pbsdirect_verify_damaged_chunks"); got != 0 {
		t.Errorf("damaged chunks: %v, want 0", got)
	}
}
