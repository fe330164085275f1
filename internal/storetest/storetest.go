// Package storetest is a conformance test suite for the bucket backends of
// chunkstore.Store (s3store, gcsstore), run against real servers. It checks
// both layouts (PBS 4 ".cnt/" and plain copy) with empty, single- and
// multi-level prefixes, chunk and file round trips, listing with
// pagination, missing and empty chunks, damaged chunks replaced and the
// copies kept aside read back.
//
// Test support only: imported by tests and by the other packages under
// internal/, never by a non-test package outside internal/ (TestLayout in
// the module root's layout_test.go checks this).
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// Harness connects the suite to one backend and server.
type Harness struct {
	// Scheme is the URL scheme of store names, "s3" or "gs".
	Scheme string
	// NewBucket creates a new empty bucket and returns its name.
	NewBucket func(t testing.TB) string
	// Open opens the store at bucket/prefix (create: for writing).
	Open func(t testing.TB, bucket, prefix string, create bool) chunkstore.WriteStore
	// Put stores a raw object, bypassing the store.
	Put func(t testing.TB, bucket, key string, data []byte)
	// Get reads a raw object; ok is false if it does not exist.
	Get func(t testing.TB, bucket, key string) (data []byte, ok bool)
	// OpenCounting opens the store at bucket/prefix for reading with a
	// listing page size well below 1100 objects, through a proxy that
	// counts the object listing requests (one per page); pages returns
	// that count so far.
	OpenCounting func(t testing.TB, bucket, prefix string) (s chunkstore.Store, pages func() int)
}

// Chunk returns a valid encoded chunk for data and its digest.
func Chunk(t testing.TB, data []byte) (crypto.Digest, []byte) {
	t.Helper()
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := enc.Encode(data, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return crypto.Digest(sha256.Sum256(data)), bytes.Clone(blob)
}

// Noise returns n incompressible pseudo-random bytes determined by seed.
func Noise(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}

func join(prefix, rel string) string {
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

const snap = "vm/100/2026-11-29T10:00:00Z"

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	for _, layout := range []bucket.Layout{bucket.LayoutPBS4, bucket.LayoutPlain} {
		for _, prefix := range []string{"", "store", "a/b/c"} {
			t.Run(fmt.Sprintf("%s/prefix=%q", layout, prefix), func(t *testing.T) {
				t.Parallel()
				roundTrip(t, h, layout, prefix)
			})
		}
	}
	t.Run("ReplaceDamaged", func(t *testing.T) {
		t.Parallel()
		replaceDamaged(t, h)
	})
	t.Run("ReplaceNoFreeBadName", func(t *testing.T) {
		t.Parallel()
		replaceNoFreeBadName(t, h)
	})
	t.Run("BadCopies", func(t *testing.T) {
		t.Parallel()
		badCopies(t, h)
	})
	t.Run("BadCopiesPaged", func(t *testing.T) {
		t.Parallel()
		badCopiesPaged(t, h)
	})
	t.Run("Pagination", func(t *testing.T) {
		t.Parallel()
		pagination(t, h)
	})
}

func roundTrip(t *testing.T, h Harness, layout bucket.Layout, prefix string) {
	ctx := context.Background()
	bkt := h.NewBucket(t)
	content := func(rel string) string {
		if layout == bucket.LayoutPBS4 {
			return join(prefix, ".cnt/"+rel)
		}
		return join(prefix, rel)
	}
	var chunks []crypto.Digest
	blobs := map[crypto.Digest][]byte{}
	for i := range 3 {
		d, b := Chunk(t, bytes.Repeat([]byte{byte(i + 1), 7, 9}, 1000*(i+1)))
		chunks = append(chunks, d)
		blobs[d] = b
	}
	files := map[string][]byte{
		snap + "/index.json.blob":                           []byte("manifest"),
		snap + "/drive-scsi0.img.fidx":                      bytes.Repeat([]byte("fidx"), 5000),
		"vm/100/owner":                                      []byte("root@pam\n"),
		"ns/prod/vm/7/2026-01-01T00:00:00Z/index.json.blob": []byte("other"),
	}

	var s chunkstore.WriteStore
	switch layout {
	case bucket.LayoutPBS4:
		s = h.Open(t, bkt, prefix, true)
		if got := s.(bucket.LayoutReporter).Layout(); got != bucket.LayoutPBS4 {
			t.Fatalf("empty prefix opened for writing: layout %v, want pbs4", got)
		}
		for _, d := range chunks {
			existed, err := s.WriteChunk(ctx, d, blobs[d])
			if err != nil || existed {
				t.Fatalf("WriteChunk new: existed=%v err=%v", existed, err)
			}
		}
		for rel, data := range files {
			if err := s.WriteFile(ctx, rel, data); err != nil {
				t.Fatalf("WriteFile %s: %v", rel, err)
			}
		}
		s.Close()
		// The objects sit where PBS 4 puts them (§8.1).
		for _, d := range chunks {
			if got, ok := h.Get(t, bkt, join(prefix, chunkstore.ChunkRelPath(d))); !ok || !bytes.Equal(got, blobs[d]) {
				t.Fatalf("chunk object %s missing or different", d)
			}
		}
		for rel, data := range files {
			if got, ok := h.Get(t, bkt, content(rel)); !ok || !bytes.Equal(got, data) {
				t.Fatalf("content object %s missing or different", content(rel))
			}
		}
	case bucket.LayoutPlain:
		for _, d := range chunks {
			h.Put(t, bkt, join(prefix, chunkstore.ChunkRelPath(d)), blobs[d])
		}
		for rel, data := range files {
			h.Put(t, bkt, content(rel), data)
		}
		h.Put(t, bkt, join(prefix, ".lock"), nil)
	}

	// Reopen for reading: the layout is detected.
	s = h.Open(t, bkt, prefix, false)
	defer s.Close()
	if got := s.(bucket.LayoutReporter).Layout(); got != layout {
		t.Fatalf("detected layout %v, want %v", got, layout)
	}
	wantName := h.Scheme + "://" + bkt
	if prefix != "" {
		wantName += "/" + prefix
	}
	if s.String() != wantName {
		t.Errorf("String() = %q, want %q", s.String(), wantName)
	}
	if loc := s.ChunkLocation(chunks[0]); loc != h.Scheme+"://"+bkt+"/"+join(prefix, chunkstore.ChunkRelPath(chunks[0])) {
		t.Errorf("ChunkLocation = %q", loc)
	}

	// ReadChunk, reusing the caller's buffer.
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1<<20)
	for _, d := range chunks {
		got, err := s.ReadChunk(ctx, d, buf, 0)
		if err != nil {
			t.Fatalf("ReadChunk: %v", err)
		}
		if !bytes.Equal(got, blobs[d]) {
			t.Fatalf("ReadChunk %s: wrong bytes", d)
		}
		if &got[:1][0] != &buf[:1][0] {
			t.Errorf("ReadChunk did not reuse the buffer's capacity")
		}
		if _, _, err := dec.Decode(nil, got, nil, 0); err != nil {
			t.Fatalf("decode read chunk: %v", err)
		}
	}
	// Files.
	for rel, data := range files {
		r, size, err := s.OpenFile(ctx, rel)
		if err != nil {
			t.Fatalf("OpenFile %s: %v", rel, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) || size != int64(len(data)) {
			t.Fatalf("OpenFile %s: size %d err %v, equal %v", rel, size, err, bytes.Equal(got, data))
		}
	}
	list := func(dir string) []string {
		t.Helper()
		fis, err := s.ListFiles(ctx, dir)
		if err != nil {
			t.Fatalf("ListFiles(%q): %v", dir, err)
		}
		var out []string
		for _, fi := range fis {
			if int64(len(files[fi.Path])) != fi.Size {
				t.Errorf("ListFiles(%q): %s has size %d, want %d", dir, fi.Path, fi.Size, len(files[fi.Path]))
			}
			out = append(out, fi.Path)
		}
		slices.Sort(out)
		return out
	}
	if got, want := list("vm"), []string{snap + "/drive-scsi0.img.fidx", snap + "/index.json.blob", "vm/100/owner"}; !slices.Equal(got, want) {
		t.Errorf("ListFiles(vm) = %q, want %q", got, want)
	}
	if got := list(snap); len(got) != 2 {
		t.Errorf("ListFiles(snapshot) = %q", got)
	}
	if got := list("ns/prod"); len(got) != 1 {
		t.Errorf("ListFiles(ns/prod) = %q", got)
	}
	if got := list("ct"); len(got) != 0 {
		t.Errorf("ListFiles(ct) = %q, want none", got)
	}
	for _, bad := range []string{"", ".chunks", "../x", "vm//100"} {
		if _, err := s.ListFiles(ctx, bad); err == nil {
			t.Errorf("ListFiles(%q) succeeded", bad)
		}
	}

	// Missing chunk and file: ErrNotFound naming the key and digest.
	missing, _ := Chunk(t, []byte("never stored"))
	_, err = s.ReadChunk(ctx, missing, nil, 0)
	if !errors.Is(err, chunkstore.ErrNotFound) {
		t.Fatalf("missing chunk: err %v, want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.Contains(msg, missing.String()) || !strings.Contains(msg, s.ChunkLocation(missing)) {
		t.Errorf("missing-chunk error does not name digest and key: %v", err)
	}
	if _, _, err := s.OpenFile(ctx, snap+"/nope.blob"); !errors.Is(err, chunkstore.ErrNotFound) || !strings.Contains(err.Error(), content(snap+"/nope.blob")) {
		t.Errorf("missing file: %v", err)
	}

	// A chunk larger than the read's limit is refused by its size, naming
	// the object and the size; at the limit it is read.
	n := len(blobs[chunks[0]])
	if _, err := s.ReadChunk(ctx, chunks[0], nil, n-1); !errors.Is(err, chunkstore.ErrTooLarge) ||
		!strings.Contains(err.Error(), s.ChunkLocation(chunks[0])) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", n)) {
		t.Errorf("chunk over the limit: %v, want ErrTooLarge naming the object and its %d bytes", err, n)
	}
	if got, err := s.ReadChunk(ctx, chunks[0], nil, n); err != nil || !bytes.Equal(got, blobs[chunks[0]]) {
		t.Errorf("chunk at the limit: %v", err)
	}

	// A 0-byte chunk object is not data; writing the chunk replaces it.
	empty, emptyBlob := Chunk(t, []byte("evicted"))
	h.Put(t, bkt, join(prefix, chunkstore.ChunkRelPath(empty)), nil)
	if _, err := s.ReadChunk(ctx, empty, buf, 0); !errors.Is(err, chunkstore.ErrEmpty) {
		t.Errorf("0-byte chunk: err %v, want ErrEmpty", err)
	}
	if existed, err := s.WriteChunk(ctx, empty, emptyBlob); err != nil || existed {
		t.Errorf("WriteChunk over 0-byte object: existed=%v err=%v", existed, err)
	}
	if got, err := s.ReadChunk(ctx, empty, buf, 0); err != nil || !bytes.Equal(got, emptyBlob) {
		t.Errorf("chunk after replacing 0-byte object: %v", err)
	}

	// Writing through a reader-opened store: existing chunks are kept,
	// files are replaced, in the detected layout.
	for _, d := range chunks {
		existed, err := s.WriteChunk(ctx, d, []byte("must not overwrite"))
		if err != nil || !existed {
			t.Fatalf("WriteChunk existing: existed=%v err=%v", existed, err)
		}
	}
	if got, err := s.ReadChunk(ctx, chunks[0], nil, 0); err != nil || !bytes.Equal(got, blobs[chunks[0]]) {
		t.Fatalf("existing chunk was modified: %v", err)
	}
	if err := s.WriteFile(ctx, "vm/100/owner", []byte("user@pbs\n")); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.Get(t, bkt, content("vm/100/owner")); !ok || string(got) != "user@pbs\n" {
		t.Errorf("WriteFile did not replace %s", content("vm/100/owner"))
	}
	if err := s.WriteFile(ctx, "../escape", nil); err == nil {
		t.Errorf("WriteFile(../escape) succeeded")
	}
	claims(t, h, s, bkt, content)

	if layout == bucket.LayoutPlain {
		// A writer opening an existing plain copy keeps it plain.
		w := h.Open(t, bkt, prefix, true)
		defer w.Close()
		if got := w.(bucket.LayoutReporter).Layout(); got != bucket.LayoutPlain {
			t.Errorf("writer on a plain copy: layout %v", got)
		}
	}
}

// claims: a snapshot claim creates its marker, a second claim of the same
// snapshot fails with ErrSnapshotBusy while the first holds it, release
// removes the marker, and the snapshot can be claimed again.
func claims(t *testing.T, h Harness, s chunkstore.Store, bkt string, content func(string) string) {
	ctx := context.Background()
	cl, ok := s.(chunkstore.SnapshotClaimer)
	if !ok {
		t.Fatalf("%T cannot claim snapshots", s)
	}
	dir := "vm/300/2026-01-01T00:00:00Z"
	marker := content(dir + "/" + chunkstore.ClaimMarker)
	release, err := cl.ClaimSnapshot(ctx, dir)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if _, ok := h.Get(t, bkt, marker); !ok {
		t.Errorf("claim marker %s not written", marker)
	}
	if _, err := cl.ClaimSnapshot(ctx, dir); !errors.Is(err, chunkstore.ErrSnapshotBusy) {
		t.Errorf("second claim while the first holds it: %v, want ErrSnapshotBusy", err)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, ok := h.Get(t, bkt, marker); ok {
		t.Errorf("claim marker %s left after release", marker)
	}
	again, err := cl.ClaimSnapshot(ctx, dir)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	if err := again(); err != nil {
		t.Fatal(err)
	}
}

// pagination lists 1100 objects, more than one listing page, and checks
// that more than one page was read.
func pagination(t *testing.T, h Harness) {
	ctx := context.Background()
	bucket := h.NewBucket(t)
	const n = 1100
	want := make([]string, 0, n)
	for i := range n {
		rel := fmt.Sprintf("vm/%d/2026-11-29T10:00:00Z/index.json.blob", i)
		h.Put(t, bucket, join("p", ".cnt/"+rel), []byte{byte(i)})
		want = append(want, rel)
	}
	d, b := Chunk(t, []byte("x"))
	h.Put(t, bucket, join("p", chunkstore.ChunkRelPath(d)), b)
	s, pages := h.OpenCounting(t, bucket, "p")
	defer s.Close()
	before := pages()
	fis, err := s.ListFiles(ctx, "vm")
	if err != nil {
		t.Fatal(err)
	}
	if got := pages() - before; got < 2 {
		t.Errorf("ListFiles of %d objects read %d listing page(s), want more than one", n, got)
	}
	got := make([]string, 0, len(fis))
	for _, fi := range fis {
		got = append(got, fi.Path)
		if fi.Size != 1 {
			t.Fatalf("%s: size %d", fi.Path, fi.Size)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ListFiles returned %d files, want %d", len(got), len(want))
	}
}
