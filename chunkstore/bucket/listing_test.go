package bucket

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// fakeLister answers listing requests over keys (sorted) in pages of size,
// with a quirk: "" (by the book), "strip-token" (truncated, no token),
// "ignore-token" (a token request gets page 1 again, token included),
// "no-start-after" (start-after ignored too), "outside" (a key outside the
// prefix on page 2), "walk-order" (keys in directory-walk order, not byte
// order: "vm/web/…" before "vm/web-2/…"; tokens are positions).
type fakeLister struct {
	keys     []string
	size     int
	quirk    string
	requests int
}

func (f *fakeLister) page(token, after string, useAfter bool) (keys []string, truncated bool, next string) {
	f.requests++
	from := 0
	switch {
	case useAfter && f.quirk != "no-start-after":
		from = sort.SearchStrings(f.keys, after)
		if from < len(f.keys) && f.keys[from] == after {
			from++
		}
	case token != "" && f.quirk != "ignore-token" && f.quirk != "no-start-after":
		fmt.Sscanf(token, "t%d", &from)
	}
	end := min(from+f.size, len(f.keys))
	keys = append([]string(nil), f.keys[from:end]...)
	if f.quirk == "outside" && from > 0 {
		keys[0] = "elsewhere/" + keys[0]
	}
	truncated = end < len(f.keys)
	if truncated && f.quirk != "strip-token" {
		next = fmt.Sprintf("t%d", end)
		if f.quirk == "ignore-token" || f.quirk == "no-start-after" {
			next = fmt.Sprintf("t%d", f.size)
		}
	}
	return keys, truncated, next
}

func runListing(f *fakeLister, prefix string) ([]string, error) {
	if f.quirk == "walk-order" {
		// Swap neighbours so that keys come out of byte order within and
		// across pages.
		for i := 0; i+1 < len(f.keys); i += 2 {
			f.keys[i], f.keys[i+1] = f.keys[i+1], f.keys[i]
		}
		defer sort.Strings(f.keys)
	}
	l := Listing{Provider: "test", Where: "test://b/" + prefix, Prefix: prefix}
	var got []string
	for {
		token, after, useAfter := l.Request()
		keys, truncated, next := f.page(token, after, useAfter)
		for _, k := range keys {
			keep, err := l.Key(k)
			if err != nil {
				return nil, err
			}
			if keep {
				got = append(got, k)
			}
		}
		more, err := l.EndPage(truncated, next)
		if err != nil {
			return nil, err
		}
		if !more {
			return got, nil
		}
		if f.requests > 10000 {
			return nil, errors.New("listing does not end")
		}
	}
}

func TestListingQuirks(t *testing.T) {
	var keys []string
	for i := range 1210 {
		keys = append(keys, fmt.Sprintf("p/vm/%04d", i))
	}
	for _, tc := range []struct {
		quirk   string
		wantErr string // "" = complete listing
		maxReq  int
	}{
		{"", "", 3},
		{"strip-token", "", 3},
		{"ignore-token", "", 4},
		{"no-start-after", "repeating", 4},
		{"outside", "outside the requested prefix", 2},
		{"walk-order", "", 3},
	} {
		t.Run(tc.quirk, func(t *testing.T) {
			f := &fakeLister{keys: keys, size: 1000, quirk: tc.quirk}
			got, err := runListing(f, "p/")
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrListing) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrListing with %q", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				sort.Strings(got)
				if strings.Join(got, ",") != strings.Join(keys, ",") {
					t.Fatalf("got %d keys, want all %d in order", len(got), len(keys))
				}
			}
			if f.requests > tc.maxReq {
				t.Errorf("%d requests, want at most %d", f.requests, tc.maxReq)
			}
		})
	}
}

func TestListingEmptyPages(t *testing.T) {
	l := Listing{Provider: "test", Where: "w", Prefix: ""}
	for i := range MaxEmptyPages {
		if more, err := l.EndPage(true, fmt.Sprintf("t%d", i)); !more || err != nil {
			t.Fatalf("empty page %d: more %v err %v", i, more, err)
		}
	}
	if _, err := l.EndPage(true, "t-last"); !errors.Is(err, ErrListing) {
		t.Fatalf("after %d empty pages: err %v, want ErrListing", MaxEmptyPages+1, err)
	}
}

func TestListingFirstPageNoToken(t *testing.T) {
	// Nothing seen yet: start-after has nothing to start after.
	l := Listing{Provider: "test", Where: "w", Prefix: ""}
	if _, err := l.EndPage(true, ""); !errors.Is(err, ErrListing) || !strings.Contains(err.Error(), "without a continuation token") {
		t.Fatalf("err = %v", err)
	}
}
