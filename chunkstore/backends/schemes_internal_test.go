package backends

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// readOnlyStore is a read-only backend: a Store without writes.
type readOnlyStore struct{ chunkstore.Store }

// TestReadOnlyScheme shows that a backend with no writes is reached for
// reading through the scheme table alone and refused for writing, and that
// IsRemote and CheckSpec follow the same table.
func TestReadOnlyScheme(t *testing.T) {
	ctx := context.Background()
	opened := errors.New("opened")
	table := append(schemes(), scheme{name: "ro", open: func(ctx context.Context, spec string, opts Options) (chunkstore.Store, error) {
		return readOnlyStore{}, opened
	}})
	if _, err := openIn(ctx, table, "ro://bucket/p", Options{}); !errors.Is(err, opened) {
		t.Errorf("Open(ro://) = %v, want the read-only backend's opener", err)
	}
	if _, err := openWriteIn(ctx, table, "ro://bucket/p", Options{}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("OpenWrite(ro://) = %v, want refused as read-only", err)
	}
	for _, b := range schemes() {
		spec := b.name + "://bucket/prefix"
		if !IsRemote(spec) || CheckSpec(spec) != nil {
			t.Errorf("%s: IsRemote %v, CheckSpec %v", spec, IsRemote(spec), CheckSpec(spec))
		}
		if b.open == nil || b.openWrite == nil {
			t.Errorf("%s: the bucket backends can be read and written", b.name)
		}
		if err := CheckSpec(strings.ToUpper(b.name) + "://bucket"); err == nil {
			t.Errorf("%s: upper-case scheme accepted", b.name)
		}
	}
}
