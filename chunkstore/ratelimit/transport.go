package ratelimit

import "net/http"

// Transport returns base limited by l: each request waits for the request
// rate before it starts (before any byte is sent, so no watchdog inside
// base runs meanwhile), and the body of each response is read through
// Reader. Request bodies (uploads) are not limited. A nil Limiter returns
// base.
func (l *Limiter) Transport(base http.RoundTripper) http.RoundTripper {
	if l == nil {
		return base
	}
	return &transport{base: base, l: l}
}

type transport struct {
	base http.RoundTripper
	l    *Limiter
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.l.WaitRequest(req.Context()); err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close it, even on errors
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = t.l.Reader(req.Context(), resp.Body)
	return resp, nil
}
