// Package filetarget is the restore target for regular files and block
// devices: restore.Target and its capabilities (Allocator, DirectWriter,
// Committer, ReadBacker, Identified, ZeroReporter, Remover) on an open
// file, with the checks made before anything is written (symlink policy,
// lock and holder, disk-image formats, loop-device backing, record locks,
// free and shared space, the datastore itself, a device's signatures and
// sector size), the placement of a new file (a partial output beside it,
// renamed into place) and the resume journal's place (JournalPath).
//
// Where it sits: cmd builds a Sink and passes it to restore.Restore; this
// package imports restore for the interface it implements (and the target
// errors cmd maps to exit codes), and no package of the pipeline imports it
// (layout_test.go). Read-back and resume read the file through
// Target.ReadBack (an O_DIRECT descriptor on the same file where the file
// system allows it), never by its path again.
package filetarget
