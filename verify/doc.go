// Package verify is the verify engine: it checks snapshots of a datastore
// (manifest, blobs, and every chunk of every index archive through the
// restore pipeline into a Discard target) and reports what is damaged, by
// snapshot, archive, digest and byte range. Chunks shared between archives
// and snapshots are read and checked once per Verifier.
//
// Where things go: a new check of a snapshot goes in this package, run
// through restore's pipeline; shards (Shard), merging shard reports
// (Merge) and the incremental state (State) are its own and are tested
// here. A new report field is added to Report with its version; damage is
// carried as data, never matched in a message.
package verify
