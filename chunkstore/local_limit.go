package chunkstore

import "github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"

// LimitReads has l's reads wait for lim (--rate, --burst,
// --rate-requests): each chunk read and content file opened is one
// request, and the bytes read count against the byte rate: chunk and
// content files are read in pieces, each waiting for its bytes before it
// is read, so the limit holds from the first byte. A nil lim limits nothing. Call it before l is
// used.
func (l *Local) LimitReads(lim *ratelimit.Limiter) { l.limit = lim }
