// Package chunkstore knows where PBS bytes live: the Store interface and its
// local, S3 and GCS backends, the key and path layout rules (FORMAT.md §1.2,
// §8.1) and the DataBlob codec (§2).
//
// Where things go: a new backend (another object store, a mirror, a
// cache) is a package below chunkstore, as s3store and gcsstore are: it
// implements Store (reads) and, if backups may write to it, WriteStore,
// with compile-time assertions; what it can do beyond that is one of the
// small named capability interfaces declared beside Store, never an
// anonymous assertion. Bucket backends share bucket (retries, timeouts,
// layout detection); --store URLs are mapped to backends in backends. A
// read-only combination of stores (Chain) implements Store only. Nothing
// here knows snapshots, restores or commands.
package chunkstore
