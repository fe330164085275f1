package snapshot_test

import (
	"context"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestOpeningTime: the time spent opening the key file given (its
// passphrase source, its key derivation) is what OpeningTime reports, for
// the commands to leave out of their timings: at least the opener's wait,
// and none without a key file.
func TestOpeningTime(t *testing.T) {
	const wait = 50 * time.Millisecond
	_, cc := fixture.Key(t, 1)
	slow := func(ctx context.Context, path string) (*crypto.Config, error) {
		time.Sleep(wait)
		return cc, nil
	}
	keys, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{File: "key.json", Open: slow})
	if err != nil {
		t.Fatal(err)
	}
	if got := keys.OpeningTime(); got < wait {
		t.Errorf("OpeningTime %v, want at least the opener's %v", got, wait)
	}
	none, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{Open: slow})
	if err != nil {
		t.Fatal(err)
	}
	if got := none.OpeningTime(); got != 0 {
		t.Errorf("no key opened: OpeningTime %v, want 0", got)
	}
}
