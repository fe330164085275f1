package restore

// FileCheck is what a read-back of an existing target found
// (Journaled.CheckExisting; filetarget.CheckFile for a file): whether it
// holds a plan's image whole.
type FileCheck struct {
	Size     int64  // the target's size, bytes
	Chunks   uint64 // chunk positions read back and checked
	Differ   uint64 // chunk positions whose digest differs from the index
	NotZero  uint64 // zero-range pieces that do not read as zeros
	Mismatch error  // the read-back's error naming the differing ranges; nil when none differ
}

// Whole reports whether the target holds the image exactly: its size, every
// chunk position and every zero range.
func (c FileCheck) Whole(plan *Plan) bool {
	return c.Size == int64(plan.Size) && c.Differ == 0 && c.NotZero == 0
}
