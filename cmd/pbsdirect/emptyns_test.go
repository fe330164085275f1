package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// TestNamespaceEmpty: a namespace directory with no snapshot (PBS's
// namespace create) is listed by 'namespaces', and 'snapshots' and
// 'groups' of it list nothing with exit 0; a namespace without a
// directory stays "no such namespace" (exit 1).
func TestNamespaceEmpty(t *testing.T) {
	store := nsStore(t, map[string][]byte{"prod": fixture.Mixed(64<<10, 1)})
	if err := os.MkdirAll(filepath.Join(store, "ns", "empty2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := mustOK(t, "namespaces", "--store", store); !strings.Contains(r.out, "\nempty2\n") {
		t.Errorf("namespaces does not list empty2: %v", r)
	}
	if r := mustOK(t, "snapshots", "--store", store, "--ns", "empty2", "--output-format", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("snapshots --ns empty2: want [], got %v", r)
	}
	if r := mustOK(t, "groups", "--store", store, "--ns", "empty2", "--output-format", "json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("groups --ns empty2: want [], got %v", r)
	}
	mustFail(t, exitData, []string{"no such namespace"}, "snapshots", "--store", store, "--ns", "missing")
}
