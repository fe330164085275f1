package bucket

import (
	"context"
	"errors"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// keyLister is a bucket of keys for DetectLayout, failing every call with
// err when set; calls counts the calls.
type keyLister struct {
	keys  []string
	err   error
	calls int
}

func (l *keyLister) AnyObject(ctx context.Context, prefix string) (bool, error) {
	l.calls++
	if l.err != nil {
		return false, l.err
	}
	for _, k := range l.keys {
		if strings.HasPrefix(k, prefix) {
			return true, nil
		}
	}
	return false, nil
}

func (l *keyLister) ListLevel(ctx context.Context, prefix string) (dirs, objects []string, err error) {
	l.calls++
	if l.err != nil {
		return nil, nil, l.err
	}
	seen := map[string]bool{}
	for _, k := range l.keys {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		if dir, _, found := strings.Cut(rest, "/"); found {
			if !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir+"/")
			}
		} else {
			objects = append(objects, rest)
		}
	}
	sort.Strings(dirs)
	return dirs, objects, nil
}

var _ Lister = (*keyLister)(nil)

func TestDetectLayout(t *testing.T) {
	chunk := ".chunks/0000/" + strings.Repeat("0", 64)
	for _, c := range []struct {
		name    string
		keys    []string // below the datastore's prefix
		forced  Layout
		create  bool
		want    Layout
		missing bool // an error wrapping ErrNotFound
	}{
		{name: "pbs4", keys: []string{".cnt/vm/100/owner", chunk}, want: LayoutPBS4},
		{name: "plain", keys: []string{"vm/100/owner", chunk}, want: LayoutPlain},
		{name: "plain without content", keys: []string{chunk}, want: LayoutPlain},
		{name: "no datastore", keys: []string{"other/file"}, missing: true},
		{name: "empty", missing: true},
		{name: "forced plain over pbs4", keys: []string{".cnt/vm/100/owner"}, forced: LayoutPlain, want: LayoutPlain},
		{name: "forced pbs4 on empty", forced: LayoutPBS4, want: LayoutPBS4},
		{name: "writer: empty gets pbs4", create: true, want: LayoutPBS4},
		{name: "writer: chunks only gets pbs4", keys: []string{chunk}, create: true, want: LayoutPBS4},
		{name: "writer: keeps pbs4", keys: []string{".cnt/vm/100/owner"}, create: true, want: LayoutPBS4},
		{name: "writer: keeps plain (group dirs)", keys: []string{"vm/100/owner", chunk}, create: true, want: LayoutPlain},
		{name: "writer: keeps plain (.lock)", keys: []string{".lock", chunk}, create: true, want: LayoutPlain},
		{name: "writer: keeps plain (.gc-status)", keys: []string{".gc-status"}, create: true, want: LayoutPlain},
		{name: "writer: other object", keys: []string{"README"}, create: true, want: LayoutPBS4},
	} {
		for _, root := range []string{"", "dc1/store/"} {
			t.Run(c.name+"/"+root, func(t *testing.T) {
				l := &keyLister{}
				for _, k := range c.keys {
					l.keys = append(l.keys, root+k)
				}
				l.keys = append(l.keys, "elsewhere/.cnt/x", "elsewhere/.chunks/0000/x")
				if root == "" {
					l.keys = l.keys[:len(c.keys)] // the whole bucket is the datastore
				}
				got, err := DetectLayout(context.Background(), l, "s3://b/"+path.Clean("/" + root)[1:], root, c.forced, c.create)
				if c.missing {
					if !errors.Is(err, chunkstore.ErrNotFound) || !strings.Contains(err.Error(), "s3://b/") {
						t.Fatalf("DetectLayout = %v, %v; want an error naming the store, wrapping ErrNotFound", got, err)
					}
					return
				}
				if err != nil || got != c.want {
					t.Fatalf("DetectLayout = %v, %v; want %v", got, err, c.want)
				}
			})
		}
	}
}

// TestDetectLayoutListingFails: a listing error is returned naming the
// store, its cause kept for errors.Is, whatever the layout asked for.
func TestDetectLayoutListingFails(t *testing.T) {
	for _, forced := range []Layout{LayoutAuto, LayoutPlain} {
		for _, create := range []bool{false, true} {
			l := &keyLister{err: chunkstore.ErrDenied}
			_, err := DetectLayout(context.Background(), l, "gs://b/p", "p/", forced, create)
			if !errors.Is(err, chunkstore.ErrDenied) || !strings.Contains(err.Error(), "gs://b/p: listing bucket") {
				t.Errorf("forced %v, create %v: %v; want a listing error naming gs://b/p, wrapping ErrDenied", forced, create, err)
			}
			if l.calls != 1 {
				t.Errorf("forced %v, create %v: %d listings after the first failed", forced, create, l.calls)
			}
		}
	}
}
