package filetarget_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// TestLargerDeviceNoteOnlyWhenAccepted: the note that a block device is
// larger than the image is said only once the device is accepted: not when
// it is refused for the signature it holds, nor when the Locked hook
// refuses it; with --force (the signature accepted) it is said once.
func TestLargerDeviceNoteOnlyWhenAccepted(t *testing.T) {
	dev, _ := fixture.LoopDevice(t, 4<<20, nil)
	writeAt(t, dev, 512, []byte("LABELONE\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x20\x00\x00\x00LVM2 001"))
	refuse := errors.New("refused by the hook")
	for _, c := range []struct {
		name     string
		force    bool
		locked   func() error
		wantNote bool
	}{
		{"signature refused", false, nil, false},
		{"hook refuses", true, func() error { return refuse }, false},
		{"accepted", true, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var notes []string
			tg, err := filetarget.Open(dev, 1<<20, filetarget.Options{Force: c.force, Locked: c.locked, Note: func(m string) { notes = append(notes, m) }})
			if err == nil {
				tg.Close(false)
			}
			if (err == nil) != c.wantNote {
				t.Fatalf("open: %v", err)
			}
			said := 0
			for _, n := range notes {
				if strings.Contains(n, "larger than the image") {
					said++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[c.wantNote]; said != want {
				t.Errorf("the larger-device note said %d times, want %d: %q (open: %v)", said, want, notes, err)
			}
		})
	}
}
