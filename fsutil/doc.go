// Package fsutil groups small helpers for the local file system that know
// nothing of PBS: mountpoint (configured mount points with nothing mounted)
// and outfile (output files replaced atomically, never through a link, a
// device or a FIFO). It holds no code of its own.
package fsutil
