package pxar

import (
	"bytes"
	"errors"
	"testing"
)

// TestOpenMetadata: a split archive opened without its payload stream
// walks like the whole archive, and file contents fail with ErrNoPayload.
func TestOpenMetadata(t *testing.T) {
	root := fullTree()
	meta, payload := encode(t, root, true)
	whole, err := open(meta, payload)
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenMetadata(bytes.NewReader(meta), int64(len(meta)), int64(len(payload)))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	list := func(a *Archive, out *[]string) {
		if err := a.Walk(func(e *Entry) error {
			*out = append(*out, e.Path+" "+e.Kind.String()+" "+string(rune('0'+e.Size%10)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	list(whole, &want)
	list(a, &got)
	if len(got) != len(want) || len(got) < 2000 {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d: %q, want %q", i, got[i], want[i])
		}
	}
	e, err := a.LookupPath("plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Open(); !errors.Is(err, ErrNoPayload) {
		t.Fatalf("Open: %v, want ErrNoPayload", err)
	}
}
