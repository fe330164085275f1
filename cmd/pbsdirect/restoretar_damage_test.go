package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
)

// TestRestorePxarTarDamage: in tar mode a damaged chunk fails with exit 1
// naming the snapshot and the stream's index ("SNAPSHOT/root.ppxar.didx:")
// as directory mode does, and an archive whose entry a tar extractor must
// not follow (a hardlink to a file written only after it) fails with
// exit 1 "damaged archive", naming the snapshot, index, entry and offset,
// saying the stream written so far is out; nothing of the refused entry
// or after it is in the stream.
func TestRestorePxarTarDamage(t *testing.T) {
	s := fixture.Snap(t, "", "ct", "200", fixture.T0)
	store := fixture.NewStore(t)
	fixture.PxarSnapshot(t, store, s, pxTree(0), fixture.PxarOptions{Split: true})
	raw, err := os.ReadFile(fixture.SnapPath(store, s, "root.ppxar.didx"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := index.ParseDynamic(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range x.Entries[1:] {
		p := fixture.ChunkPath(store, e.Digest)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustFail(t, exitData, []string{s.String() + "/root.ppxar.didx: ", "chunk ", "payload stream offset", "tar stream stops"},
		"restore", "--store", store, s.String(), "root.pxar", "-", "--format", "tar")

	md := pxar.Metadata{Mode: 0o755, MTimeSec: 1700000000}
	file := func(name string) *pxar.Node {
		return &pxar.Node{Name: name, Kind: pxar.KindFile, Metadata: pxar.Metadata{Mode: 0o644, MTimeSec: 1700000000}, Data: []byte(name)}
	}
	tree := &pxar.Node{Kind: pxar.KindDir, Metadata: md, Children: []*pxar.Node{
		{Name: "d", Kind: pxar.KindDir, Metadata: md, Children: []*pxar.Node{file("f")}},
		{Name: "h", Kind: pxar.KindHardlink, LinkTarget: "d/f"},
		{Name: "z", Kind: pxar.KindDir, Metadata: md, Children: []*pxar.Node{file("f")}},
	}}
	var m bytes.Buffer
	if err := pxar.Encode(&m, nil, tree); err != nil {
		t.Fatal(err)
	}
	meta := m.Bytes()
	copy(meta[bytes.Index(meta, []byte("d/f\x00")):], "z") // the hardlink now points to z/f, written after it
	store2 := fixture.NewStore(t)
	fixture.PxarStreams(t, store2, s, meta, nil, nil, fixture.PxarOptions{})
	r := mustFail(t, exitData, []string{"damaged archive: " + s.String() + "/root.pxar.didx: ", `"h"`, "archive stream offset", `hardlink to "z/f"`, "tar stream stops before this entry"},
		"restore", "--store", store2, s.String(), "root.pxar", "-", "--format", "tar")
	if strings.Contains(r.out, "./h") || strings.Contains(r.out, "./z/") || !strings.Contains(r.out, "./d/f") {
		t.Errorf("the stream holds the refused entry or what follows, or not what precedes it")
	}
}
