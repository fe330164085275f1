package chunkstore

import "github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"

// LimitReads has l's reads wait for lim (--rate, --burst,
// --rate-requests): each chunk read and content file opened is one
// request, and the bytes read count against the byte rate: a chunk file
// is read in pieces, each waiting for its bytes before it is read, a
// content file's bytes as they are read. A nil lim limits nothing. Call it before l is
// used.
func (l *Local) LimitReads(lim *ratelimit.Limiter) { l.limit = lim }
