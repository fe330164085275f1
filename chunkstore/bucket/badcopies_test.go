package bucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// TestListBadCopiesPaged: the copies of a chunk kept aside are found on a
// later page behind other keys, only exact "<digest>.<0-9>.bad" names
// count, and a listing longer than MaxBadCopyPages fails as cut short
// (outside the data) after exactly that many requests.
func TestListBadCopiesPaged(t *testing.T) {
	k := Keys{Prefix: "store"}
	d := crypto.Digest{1, 2, 3}
	prefix := k.BadCopyPrefix(d)
	for _, tc := range []struct {
		name  string
		pages int // pages of junk before the last page
		want  []string
		cut   bool
	}{
		{"one page", 0, []string{chunkstore.BadName(d, 2), chunkstore.BadName(d, 9)}, false},
		{"behind junk", MaxBadCopyPages - 1, []string{chunkstore.BadName(d, 2), chunkstore.BadName(d, 9)}, false},
		{"cut short", MaxBadCopyPages, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := k.ListBadCopies(context.Background(), d, "test list", "s3://b/"+prefix, func(_ context.Context, token, _ string, _ bool) ([]string, bool, string, error) {
				calls++
				if calls <= tc.pages {
					var keys []string
					for i := range 3 {
						keys = append(keys, fmt.Sprintf("%s0junk%02d%d", prefix, calls, i))
					}
					return keys, true, fmt.Sprint("t", calls), nil
				}
				return []string{prefix + "2.bad", prefix + "9.bad", prefix + "9.bad.tmp", prefix + "10.bad", prefix + "x.bad"}, false, "", nil
			})
			if tc.cut {
				if !errors.Is(err, ErrBadCopySearchCut) || !chunkstore.Outside(err) || chunkstore.Proven(err) || calls != MaxBadCopyPages {
					t.Fatalf("%v after %d request(s); want cut short after %d", err, calls, MaxBadCopyPages)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
