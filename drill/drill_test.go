package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pbsdirect/pbsdirect/restore"
)

func TestParseList(t *testing.T) {
	bad := errors.New("bad ref")
	check := func(ref string) error {
		if ref == "x" {
			return bad
		}
		return nil
	}
	for _, tc := range []struct {
		name, in string
		want     []Item
		line     int // a *LineError on this line; 0: none
	}{
		{"pairs", "# fleet\n\nvm/100 drive-scsi0\n  ct/101/2026-01-01T00:00:00Z root.pxar.didx  \n",
			[]Item{{"vm/100", "drive-scsi0.img.fidx"}, {"ct/101/2026-01-01T00:00:00Z", "root.pxar.didx"}}, 0},
		{"one-field", "vm/100 drive-scsi0\nvm/101\n", nil, 2},
		{"three-fields", "vm/100 a b\n", nil, 1},
		{"bad-ref", "\nx drive-scsi0\n", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseList(strings.NewReader(tc.in), check)
			var le *LineError
			if tc.line == 0 {
				if err != nil || !slices.Equal(got, tc.want) {
					t.Fatalf("ParseList = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if !errors.As(err, &le) || le.Line != tc.line || !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", tc.line)) {
				t.Fatalf("ParseList error %v; want a *LineError on line %d", err, tc.line)
			}
			if tc.name == "bad-ref" && !errors.Is(err, bad) {
				t.Errorf("error %v does not wrap the check's", err)
			}
		})
	}
}

func TestSum(t *testing.T) {
	reps := []Report{
		{OK: true, Snapshot: "vm/1/T", Archive: "a", RestoreSeconds: 1, Restore: &restore.Summary{Size: 10}},
		{OK: false, Snapshot: "vm/2/T", Archive: "b", RestoreSeconds: 3, Error: "damaged"},
		{OK: true, Snapshot: "vm/3/T", Archive: "c", RestoreSeconds: 3, Restore: &restore.Summary{Size: 5}},
		{OK: false, Snapshot: "vm/4/T", Archive: "d", RestoreSeconds: 2},
	}
	s := Sum(reps)
	// The slowest is among the restores that completed: not the failed
	// vm/2, whose restore did not.
	if s.Archives != 4 || s.Failed != 2 || s.Bytes != 15 || s.RestoreSeconds != 9 || s.SlowestAt != 2 || s.Slowest != "vm/3/T/c" || s.FirstFailed != 1 {
		t.Errorf("Sum = %+v", s)
	}
	if want := []int{1, 2, 3, 0}; !slices.Equal(s.Order, want) {
		t.Errorf("Order = %v, want %v (longest first, ties in report order)", s.Order, want)
	}
	b, err := json.Marshal(s)
	if want := `{"archives":4,"bytes":15,"failed":2,"restore-seconds":9,"slowest":"vm/3/T/c"}`; err != nil || string(b) != want {
		t.Errorf("JSON %s, %v; want %s", b, err, want)
	}
	if e := Sum(nil); e.SlowestAt != -1 || e.FirstFailed != -1 || e.Slowest != "" {
		t.Errorf("Sum(nil) = %+v", e)
	}
	// Every drill failed before its restore completed: no slowest.
	if f := Sum([]Report{{Snapshot: "vm/1/T", Archive: "a", Error: "missing"}, {Snapshot: "vm/2/T", Archive: "b", Error: "missing"}}); f.SlowestAt != -1 || f.Slowest != "" || f.Failed != 2 {
		t.Errorf("Sum of failures = %+v, want no slowest", f)
	}
}

func TestFleet(t *testing.T) {
	items := []Item{{"vm/100", "drive-scsi0.img.fidx"}, {"vm/101/2026-01-01T00:00:00Z", "drive-scsi1.img.fidx"}, {"ct/5", "?"}}
	for _, parallel := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			var running, most atomic.Int32
			var done []string
			reps := Fleet(context.Background(), items, "/scratch", parallel, func(it Item, target string) Report {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				return Report{Snapshot: it.Ref, Archive: it.Archive, Target: target, OK: true}
			}, func(r Report) { done = append(done, r.Target) })
			want := []string{
				filepath.Join("/scratch", "000-vm_100-drive-scsi0.img"),
				filepath.Join("/scratch", "001-vm_101_2026-01-01T000000Z-drive-scsi1.img"),
				filepath.Join("/scratch", "002-ct_5-?"),
			}
			for i, r := range reps {
				if r.Target != want[i] || r.Snapshot != items[i].Ref {
					t.Errorf("report %d: %+v, want target %s", i, r, want[i])
				}
			}
			slices.Sort(done)
			if !slices.Equal(done, want) {
				t.Errorf("done called for %v", done)
			}
			if most.Load() > int32(parallel) {
				t.Errorf("%d drills ran at once, parallel %d", most.Load(), parallel)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		reps := Fleet(ctx, items, "/scratch", 1, func(Item, string) Report {
			t.Error("a drill started after the context was done")
			return Report{}
		}, func(Report) {})
		if len(reps) != len(items) || reps[0].Target != "" {
			t.Errorf("reports %+v", reps)
		}
	})
}
