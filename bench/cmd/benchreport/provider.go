package main

import (
	"strings"
)

// capSuffix marks the variant of a provider-shaped endpoint that caps each
// connection ("plain/s3-tls+20ms+50MiB/s/conn"); the same name without it
// is the same endpoint uncapped.
const capSuffix = "MiB/s/conn"

// minConnsUnderCap is the fewest connections a default restore must open
// against an endpoint that caps each connection.
const minConnsUnderCap = 8

// providerChecks adds the goal lines of the provider-shaped endpoints
// (bench/run.sh run_provider): against an endpoint capping each connection,
// a default restore opens at least minConnsUnderCap connections and takes
// at most 1.5 × the same restore through the endpoint uncapped; and through
// every S3 endpoint it reaches 90 % of the best raw download of the same
// chunk objects (rclone).
func providerChecks(rows []Row, add func(bool, string, ...any), skip func(string, ...any)) {
	for _, ds := range datasetOrder {
		for _, v := range variants(rows) {
			crypt, where, _ := strings.Cut(v, "/")
			if !strings.Contains(where, "-tls") {
				continue
			}
			pbs := findRow(rows, ds, v, refConfig)
			if pbs == nil {
				continue
			}
			if i := strings.LastIndex(where, "+"); strings.HasSuffix(where, capSuffix) && i > 0 {
				opened, ok := connsOpened(pbs)
				if !ok {
					skip("connections under a per-connection cap, %s %s: not in the summary", ds, v)
				} else {
					add(opened >= minConnsUnderCap, "connections opened by a default restore under a per-connection cap ≥ %d, %s %s: %d",
						minConnsUnderCap, ds, v, opened)
				}
				if un := findRow(rows, ds, crypt+"/"+where[:i], refConfig); un != nil {
					add(pbs.Wall <= 1.5*un.Wall, "default restore under a per-connection cap ≤ 1.5 × uncapped through the same endpoint, %s %s: %.2fs vs %.2fs (%.2f×)",
						ds, v, pbs.Wall, un.Wall, pbs.Wall/un.Wall)
				}
			}
			var best *Row
			for i := range rows {
				r := &rows[i]
				if r.Dataset == ds && r.Variant == v && r.Tool == "rclone" && (best == nil || r.Wall < best.Wall) {
					best = r
				}
			}
			if best != nil {
				pct := 100 * best.Wall / pbs.Wall
				add(pct >= 90, "bucket restore ≥ 90 %% of the best raw download of the same chunks (%s), %s %s: %.0f %% (%.2fs vs %.2fs)",
					best.Config, ds, v, pct, pbs.Wall, best.Wall)
				// Where the restore is bound by decoding and writing, not
				// by the network, the local restore is its floor.
				if local := findRow(rows, ds, crypt+"/local", refConfig); local != nil && local.Wall > best.Wall {
					pct := 100 * local.Wall / pbs.Wall
					add(pct >= 90, "bucket restore ≥ 90 %% of the local restore (its floor: slower here than the raw download), %s %s: %.0f %% (%.2fs vs %.2fs)",
						ds, v, pct, pbs.Wall, local.Wall)
				}
			}
		}
	}
}

// connsOpened returns the connections a run's summary says it opened
// ("bucket-requests" → "connections" → "opened").
func connsOpened(r *Row) (int64, bool) {
	q, _ := r.Summary["bucket-requests"].(map[string]any)
	c, _ := q["connections"].(map[string]any)
	n, ok := c["opened"].(float64)
	return int64(n), ok
}
