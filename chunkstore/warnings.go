package chunkstore

import "sync"

// Warnings is where a store says what its listings leave out or disagree
// on: keys it could not decode, entries that name no snapshot, group or
// namespace, members of a chain that lag. Stores embed it; the zero value
// says nothing until WarnTo is called. Safe for concurrent use.
type Warnings struct {
	mu   sync.Mutex
	f    func(msg string)
	said map[string]bool // keys already said
}

// WarnTo sets where warnings go: f gets each as one line without a line
// end, from any goroutine; nil says nothing. Call it before the store is
// used.
func (w *Warnings) WarnTo(f func(msg string)) {
	w.mu.Lock()
	w.f = f
	w.mu.Unlock()
}

// Warn passes msg to the WarnTo function, once per key for a non-empty
// key (a listing repeated in one run warns once), every time for "".
func (w *Warnings) Warn(key, msg string) {
	w.mu.Lock()
	f := w.f
	if f == nil || key != "" && w.said[key] {
		w.mu.Unlock()
		return
	}
	if key != "" {
		if w.said == nil {
			w.said = map[string]bool{}
		}
		w.said[key] = true
	}
	w.mu.Unlock()
	f(msg)
}

// Warn has store s say msg (see Warnings.Warn) when s can say anything
// (it is a Warner, as the bucket stores and the chain are); otherwise msg
// is dropped.
func Warn(s Store, key, msg string) {
	if w, ok := s.(Warner); ok {
		w.Warn(key, msg)
	}
}
