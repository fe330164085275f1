package restore_test

import (
	"fmt"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/restore"
)

// TestProvenKeyNotOpened: a key file, paper key or master key that was not
// opened (a wrong passphrase, a fingerprint claim its key belies, a paper
// key cut short, a master key that does not parse) proves no damage of the
// data; a key that does not open the data (another key, authentication
// failed) and a damaged chunk do.
func TestProvenKeyNotOpened(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		proven bool
	}{
		{"wrong passphrase", fmt.Errorf("key file k.json: %w", crypto.ErrWrongPassphrase), false},
		{"wrong passphrase, named", keys.NotOpened("key file k.json", crypto.ErrWrongPassphrase), false},
		{"fingerprint claim belied", keys.NotOpened("key file k.json", crypto.ErrKeyFingerprint), false},
		{"paper key cut short", fmt.Errorf("key file k.txt: %w", crypto.ErrPaperKey), false},
		{"wrong master key passphrase", fmt.Errorf("master.pem: %w", crypto.ErrMasterKeyPassphrase), false},
		{"master key does not parse", fmt.Errorf("master.pem: %w", crypto.ErrMasterKeyFormat), false},
		{"another key", fmt.Errorf("manifest: %w", index.ErrWrongKey), true},
		{"authentication failed", fmt.Errorf("chunk ab: %w", crypto.ErrAuth), true},
		{"damaged chunk", fmt.Errorf("chunk ab: %w", chunkstore.ErrDamaged), true},
	} {
		if got := restore.Proven(c.err); got != c.proven {
			t.Errorf("%s: Proven(%v) = %v, want %v", c.name, c.err, got, c.proven)
		}
	}
}
