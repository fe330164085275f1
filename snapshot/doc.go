// Package snapshot finds and opens the snapshots of a datastore: listing
// (namespaces, unfinished snapshots hidden, §1.3–§1.4), resolving "vm/100" to
// the latest snapshot, loading and checking the manifest (§6), and reading
// blobs with their manifest checks.
//
// Where things go: every command that reads a snapshot (restore, drill,
// verify, mount, serve-nbd, stdout, key import, listings) opens it through
// this package (Reader, Keys): resolving, the manifest, the key and the
// signature policy live here, once. A new key source or policy is a
// KeyOptions field; the terminal prompt stays in the command (KeyOpener).
package snapshot
