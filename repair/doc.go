// Package repair copies, into a datastore that lost or damaged chunks, good
// copies of them from other copies of the datastore (mirrors): Collect
// lists the distinct chunks of the snapshots in scope, Repairer.Run checks
// each in the primary store (read, decode, digest, as verify does) and
// copies a copy that passes the same check from the first mirror that has
// one. A chunk is written atomically (a temporary file renamed into place;
// one PUT on a bucket), a good chunk is never replaced, and a damaged one
// is kept aside as "<digest>.N.bad", as PBS does. When no mirror has a
// good copy, the copies kept aside as "<digest>.N.bad" (the primary's
// own, then the mirrors') are tried too. Repairer.Files does the same
// for the snapshots' files (indexes, blobs, a missing manifest).
package repair
