package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestListings: snapshots carry comment (notes' first line), verification
// (verify_state), protected and owner; groups and namespaces are listed;
// --ns takes a/b, a/b/, ns/a/ns/b and PBS_NAMESPACE; an unknown namespace
// is an error.
func TestListings(t *testing.T) {
	store := fixture.NewStore(t)
	data := zeroMiddle(71)
	backupImage(t, store, data)
	backupImage(t, store, data, "--backup-time", "2026-11-29T11:00:00Z")
	backupImage(t, store, data, "--ns", "prod/db", "--backup-id", "200")
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) {
		m.Unprotected["notes"] = json.RawMessage(`"nightly before upgrade\nsecond line"`)
		m.Unprotected["verify_state"] = json.RawMessage(`{"upid":"UPID:pbs:1","state":"ok"}`)
	})
	fixture.WriteFile(t, filepath.Join(store, "vm", "100", t0str), ".protected", nil)
	fixture.WriteFile(t, filepath.Join(store, "vm", "100"), "notes", []byte("db server\nmore"))

	var list []snapshotEntry
	r := mustOK(t, "snapshots", "--store", store, "--output-format", "json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 2 {
		t.Fatalf("snapshots: %v: %v", err, r)
	}
	if e := list[0]; e.Comment != "nightly before upgrade" || e.Verified != "ok" || !e.Protected || e.Owner != "root@pam" {
		t.Errorf("first snapshot's fields: %+v", e)
	}
	if e := list[1]; e.Comment != "" || e.Verified != "" || e.Protected || e.Owner != "root@pam" {
		t.Errorf("second snapshot's fields: %+v", e)
	}
	r = mustOK(t, "snapshots", "--store", store)
	for _, w := range []string{"verified", "protected", "nightly before upgrade", " ok ", " yes "} {
		if !strings.Contains(r.out, w) {
			t.Errorf("text listing lacks %q:\n%s", w, r.out)
		}
	}

	for _, ns := range []string{"prod/db", "prod/db/"} {
		r := mustOK(t, "snapshots", "--store", store, "--ns", ns)
		if !strings.Contains(r.out, "ns/prod/ns/db/vm/200/") {
			t.Errorf("--ns %s: %v", ns, r)
		}
	}
	t.Setenv("PBS_NAMESPACE", "prod/db")
	if r := mustOK(t, "groups", "--store", store); !strings.Contains(r.out, "ns/prod/ns/db/vm/200") {
		t.Errorf("PBS_NAMESPACE: %v", r)
	}
	os.Unsetenv("PBS_NAMESPACE")

	// The path form of an existing namespace whose name as written does
	// not exist: refused, naming the name to write.
	mustFail(t, 2, []string{"ambiguous", "write prod/db"}, "snapshots", "--store", store, "--ns", "ns/prod/ns/db")
	mustFail(t, 1, []string{"no such namespace", "nosuch"}, "snapshots", "--store", store, "--ns", "nosuch")
	mustFail(t, 1, []string{"no such namespace"}, "groups", "--store", store, "--ns", "prod/nosuch")
	mustFail(t, 2, []string{"--ns"}, "snapshots", "--store", store, "--ns", "a//b")

	var groups []groupEntry
	r = mustOK(t, "groups", "--store", store, "--output-format", "json")
	if err := json.Unmarshal([]byte(r.out), &groups); err != nil || len(groups) != 1 {
		t.Fatalf("groups: %v: %v", err, r)
	}
	if g := groups[0]; g.Group != "vm/100" || g.Count != 2 || g.Owner != "root@pam" || g.Comment != "db server" || index.FormatTime(g.LastBackup) != "2026-11-29T11:00:00Z" {
		t.Errorf("group: %+v", g)
	}

	var nss []namespaceEntry
	r = mustOK(t, "namespaces", "--store", store, "--output-format", "json")
	if err := json.Unmarshal([]byte(r.out), &nss); err != nil || len(nss) != 3 || nss[0].Namespace != "" || nss[1].Namespace != "prod" || nss[2].Namespace != "prod/db" {
		t.Fatalf("namespaces: %v: %v", err, r)
	}
	r = mustOK(t, "namespaces", "--store", store, "--max-depth", "1", "--output-format", "json")
	if err := json.Unmarshal([]byte(r.out), &nss); err != nil || len(nss) != 2 {
		t.Fatalf("namespaces --max-depth 1: %v: %v", err, r)
	}
	r = mustOK(t, "snapshots", "--store", store, "--max-depth", "-1", "--output-format", "json")
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 3 || list[2].Namespace != "prod/db" {
		t.Fatalf("snapshots --max-depth -1: %v: %v", err, r)
	}
}

// TestSnapshotsJSONNames: the JSON of snapshots names its fields as PBS's
// snapshot list does (fingerprint, verification, protected, owner, comment),
// so scripts written for proxmox-backup-client read them.
func TestSnapshotsJSONNames(t *testing.T) {
	store := fixture.NewStore(t)
	key, cc := fixture.Key(t, 9)
	kf := fixture.KeyFile(t, t.TempDir(), "k.json", key, crypto.KDFNone, "")
	backupImage(t, store, zeroMiddle(5), "--keyfile", kf)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	fixture.RewriteManifest(t, store, snap, func(m *index.Manifest) {
		m.Unprotected["notes"] = json.RawMessage(`"nightly"`)
		m.Unprotected["verify_state"] = json.RawMessage(`{"upid":"UPID:pbs:1","state":"ok"}`)
	})
	fixture.WriteFile(t, filepath.Join(store, "vm", "100", t0str), ".protected", nil)
	r := mustOK(t, "snapshots", "--store", store, "--output-format", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.out), &list); err != nil || len(list) != 1 {
		t.Fatalf("snapshots: %v: %v", err, r)
	}
	want := map[string]any{"fingerprint": cc.Fingerprint().String(), "verification": "ok", "protected": true, "owner": "root@pam", "comment": "nightly"}
	for name, v := range want {
		if list[0][name] != v {
			t.Errorf("%q = %v, want %v (all: %v)", name, list[0][name], v, list[0])
		}
	}
}
