package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/verify"
)

// storesLeftOut returns the stores of a chain (several --store) that a run
// could not read: left out when opened (storeFlags.leftOut) or when listed
// (chunkstore.PartialLister), each once, in that order. What only they hold
// was not seen.
func storesLeftOut(sf *storeFlags, s chunkstore.Store) []string {
	out := slices.Clone(sf.leftOut)
	if p, ok := s.(chunkstore.PartialLister); ok {
		for _, name := range p.Unlisted() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// sayLeftOut prints, escaped, the warnings for the stores of a chain left
// out when opened.
func sayLeftOut(stderr io.Writer, sf *storeFlags) {
	for _, w := range sf.skipped {
		fmt.Fprintln(stderr, index.DisplayText(w))
	}
}

// listingIncomplete returns, for a listing printed from a chain some of
// whose stores could not be read, the error that makes it exit 3 (a cause
// outside the data: what those stores hold was not listed, and retrying
// when they are reachable can help); nil when every store answered.
func listingIncomplete(sf *storeFlags, s chunkstore.Store) error {
	left := storesLeftOut(sf, s)
	if len(left) == 0 {
		return nil
	}
	return &outsideError{fmt.Errorf("%w: the listing is incomplete: --store %s could not be listed; what the other stores hold is listed",
		chunkstore.ErrUnavailable, index.DisplayText(strings.Join(left, ", --store ")))}
}

// printVerifyGaps prints, after a verify summary, what the run did not
// cover: its note (a namespace with no snapshot) and the stores it left
// out, escaped.
func printVerifyGaps(w io.Writer, rep *verify.Report) {
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", index.DisplayText(rep.Note))
	}
	if len(rep.StoresLeftOut) > 0 {
		fmt.Fprintf(w, "not everything could be verified: --store %s could not be read\n", index.DisplayText(strings.Join(rep.StoresLeftOut, ", --store ")))
	}
}
