package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
)

// printFellThrough prints, under a store's line of printStores, the chunks
// that store could not serve: digest, why, and which store served it.
func printFellThrough(w io.Writer, m chunkstore.MemberStats) {
	for _, f := range m.FellThrough {
		by := "no store had a good copy"
		if f.ServedBy != "" {
			by = "served by " + index.DisplayText(f.ServedBy)
		}
		why := f.Reason
		if f.Reason != chunkstore.ReasonMissing {
			why += " (" + index.DisplayText(f.Error) + ")"
		}
		fmt.Fprintf(w, "    fell through: chunk %s %s, %s\n", f.Digest, why, by)
	}
	if m.FellThroughUnlisted > 0 {
		fmt.Fprintf(w, "    and %d more fell through, not listed (the first %d of all stores are)\n", m.FellThroughUnlisted, chunkstore.MaxFellThrough)
	}
}

// fellThroughLine is a line of --damaged-list for a chunk one store of
// several could not serve: told from a damaged chunk's line
// (verify.DamagedChunk) by its "fell_through" field.
type fellThroughLine struct {
	Store       string `json:"store"`
	Digest      string `json:"digest"`
	FellThrough string `json:"fell-through"` // chunkstore.ReasonMissing, ReasonDamaged or ReasonUnreadable
	Error       string `json:"error"`
	ServedBy    string `json:"served-by"` // "" when no store had a good copy
}

// lockedWriter serializes writes to w from several goroutines.
type lockedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// Write writes p to w whole, under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err != nil && l.err == nil {
		l.err = err
	}
	return n, err
}

// listFellThrough has a chain of stores write every chunk a store of it
// could not serve to list as a fellThroughLine; the first write error is
// kept in list.
func listFellThrough(store chunkstore.Store, list *lockedWriter) {
	c, ok := store.(chunkstore.FellThroughRecorder)
	if !ok || list == nil {
		return
	}
	c.FellThroughTo(func(name string, f chunkstore.FellThrough) {
		// Strings only: Marshal cannot fail; a write error is kept in list.
		b, _ := json.Marshal(fellThroughLine{Store: name, Digest: f.Digest, FellThrough: f.Reason, Error: f.Error, ServedBy: f.ServedBy})
		list.Write(append(b, '\n'))
	})
}
