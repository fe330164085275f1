// Package restore is the restore pipeline (DESIGN.md): plan the chunks of a
// fixed index, read each unique non-zero chunk once with bounded read-ahead
// (fetchers), let jobs decode and verify it (CRC, AES-256-GCM, zstd,
// digest), and writers write it to every offset it fills with positioned,
// out-of-order writes. Verify runs the same pipeline into a Discard target;
// drill reads the target back (ReadBackTarget, through the target's
// ReadBacker capability).
//
// Where things go: Restore is the one call that restores an archive of an
// opened snapshot (snapshot.Reader) into a Sink; drill is Restore followed
// by a read-back. A new target kind (an NBD client, a qcow2 writer)
// implements Target (write at, zero a range, sync, close) and the optional
// capabilities it has (ReadBacker makes it readable back and resumable), in
// its own package below this one's interface, as restore/filetarget does
// for files and block devices; its Sink is built by the command and given
// to Restore, and no package of the pipeline imports it. Every package
// under restore/ is taken for a target package by layout_test.go without
// being listed there (a pipeline package below restore would be listed in
// its notTargets); a target package placed elsewhere fails that test with
// a hint to move it. A new damage or resume policy is an Options value,
// not code in the command.
package restore
