package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// refusedEndpoint returns an http:// endpoint nothing listens on.
func refusedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestListingStoreLeftOut: a listing over several --store of which one
// cannot be reached prints what the others hold, warns on stderr naming
// the store left out, and exits 3 (the listing is incomplete, a cause
// outside the data); in JSON the listing is kept under "result". In either
// store order, for snapshots, groups and namespaces.
func TestListingStoreLeftOut(t *testing.T) {
	bktSetEnv(t, "")
	ds := nsStore(t, map[string][]byte{"": fixture.Mixed(64<<10, 1)})
	bkt := "s3://bkt/store1"
	ep := []string{"--s3-endpoint", refusedEndpoint(t), "--retry-for", "1s"}
	for _, order := range [][]string{{ds, bkt}, {bkt, ds}} {
		for _, cmd := range []string{"snapshots", "groups", "namespaces"} {
			args := append([]string{cmd, "--store", order[0], "--store", order[1]}, ep...)
			r := pbs(t, args...)
			if r.code != exitOutside {
				t.Errorf("%v: want exit 3, got %v", order, r)
			}
			if !strings.Contains(r.err, "--store "+bkt) || !strings.Contains(r.err, "warning") {
				t.Errorf("%v: no warning naming %s: %v", order, bkt, r)
			}
			if want := map[string]string{"snapshots": "vm/100/", "groups": "vm/100", "namespaces": "(root)"}[cmd]; !strings.Contains(r.out, want) {
				t.Errorf("%v: the reachable store's listing is missing: %v", order, r)
			}
			r = pbs(t, append(args, "--output-format", "json")...)
			var res struct {
				OK     bool            `json:"ok"`
				Code   int             `json:"exit-code"`
				Error  string          `json:"error"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(r.out), &res); err != nil || res.OK || res.Code != exitOutside || !strings.Contains(res.Error, bkt) || len(res.Result) < 3 {
				t.Errorf("%v json: %v: %v", order, err, r)
			}
		}
	}
}
