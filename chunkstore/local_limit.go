package chunkstore

import "github.com/pbsdirect/pbsdirect/chunkstore/ratelimit"

// LimitReads has l's reads wait for lim (--rate, --burst,
// --rate-requests): each chunk read and content file opened is one
// request, and the bytes read count against the byte rate (a content
// file's as they are read). A nil lim limits nothing. Call it before l is
// used.
func (l *Local) LimitReads(lim *ratelimit.Limiter) { l.limit = lim }
