package pxar

import (
	"slices"
	"testing"
)

// TestTypeHashes checks the siphash against the format's item types, which
// are hashes of fixed strings.
func TestTypeHashes(t *testing.T) {
	for _, c := range []struct {
		s    string
		want uint64
	}{
		{"__PROXMOX_FORMAT_VERSION__", typeFormatVersion},
		{"__PROXMOX_FORMAT_ENTRY_V2__", typeEntry},
		{"__PROXMOX_FORMAT_ENTRY__", typeEntryV1},
		{"__PROXMOX_FORMAT_FILENAME__", typeFilename},
		{"__PROXMOX_FORMAT_ACL_DEFAULT_GROUP__", typeACLDefaultGroup},
		{"__PROXMOX_FORMAT_GOODBYE__", typeGoodbye},
		{"__PROXMOX_FORMAT_PXAR_PAYLOAD_REF__", typePayloadRef},
	} {
		if got := hashName([]byte(c.s)); got != c.want {
			t.Errorf("hash(%q) = %#x, want %#x", c.s, got, c.want)
		}
	}
}

// TestBSTOrder checks the goodbye table permutation against the format's
// documented example (n=5: 3,1,4,0,2) and the search property.
func TestBSTOrder(t *testing.T) {
	if got := bstOrder(5); !slices.Equal(got, []int{3, 1, 4, 0, 2}) {
		t.Fatalf("bstOrder(5) = %v", got)
	}
	for n := 0; n < 300; n++ {
		p := bstOrder(n)
		seen := make([]bool, n)
		for _, s := range p {
			seen[s] = true
		}
		for i := range n {
			if !seen[i] {
				t.Fatalf("n=%d: %d missing", n, i)
			}
			if l := 2*i + 1; l < n && p[l] >= p[i] {
				t.Fatalf("n=%d: left child not smaller at %d", n, i)
			}
			if r := 2*i + 2; r < n && p[r] <= p[i] {
				t.Fatalf("n=%d: right child not larger at %d", n, i)
			}
		}
	}
}
