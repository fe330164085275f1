package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/drill"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// perStoreEnv is a chain of three stores that each need settings of their
// own: two versitygw servers with other endpoints and root accounts, and
// fake-gcs-server reached without STORAGE_EMULATOR_HOST.
type perStoreEnv struct {
	data         []byte
	s3a, s3b     *testenv.S3Server
	gcs          *testenv.GCSServer
	credFile     string // AWS credentials file with the profile "mirror" (server b's account)
	storeA       string // endpoint from --s3-endpoint, credentials from PBSA_*
	storeB       string // endpoint, region, path style and credentials file of its own
	storeG       string // GCS endpoint of its own, no credentials
	named        string // storeB as a named store of the stores file
	chunks       int
	fromA, fromB int // chunks that a serves, and that b serves (a lacks them)
	secretA      string
	secretB      string
	flags        []string // --s3-endpoint (server a's) and --stores-config
}

// TestPerStoreSettings: a chain of two S3 servers with different endpoints
// and credentials and a GCS emulator, each with settings of its own given
// as query parameters of its --store or in the stores file (--store
// @NAME/PATH), restores byte-exact with every store serving some chunks; the command line's flags (--s3-endpoint) stay the
// default of a store that does not override them, and the environment's
// AWS credentials (which neither server takes) are not used where a store
// names its own. A wrong setting names its store, without a secret: exit
// 2 for a parameter that is unknown or does not parse, 3 for credentials
// refused or missing and an endpoint that does not answer.
func TestPerStoreSettings(t *testing.T) {
	e := &perStoreEnv{data: failoverImage(), secretA: "secret-of-server-a-0123", secretB: "secret-of-server-b-4567"}
	local := fixture.NewStore(t)
	backupImage(t, local, e.data, "--chunk-size", "64")
	_, ds := fixture.Digests(t, filepath.Join(local, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	e.chunks = len(ds)

	rootA, rootB := t.TempDir(), t.TempDir()
	dirA := fixture.CopyDir(t, local, filepath.Join(rootA, "pbsa", "ds"))
	dirB := fixture.CopyDir(t, local, filepath.Join(rootB, "pbsb", "ds"))
	// Chunk i is in a when i%3 == 0, else in b when i%3 == 1, else only
	// in GCS: each store must serve some.
	for i, d := range ds {
		switch i % 3 {
		case 0:
			e.fromA++
		case 1:
			e.fromB++
			remove(t, chunkFile(dirA, d))
		case 2:
			remove(t, chunkFile(dirA, d))
			remove(t, chunkFile(dirB, d))
		}
	}
	e.s3a = testenv.StartS3Creds(t, rootA, "access-a", e.secretA)
	e.s3b = testenv.StartS3Creds(t, rootB, "access-b", e.secretB)
	e.s3a.AdoptFiles(t)
	e.s3b.AdoptFiles(t)
	e.gcs = testenv.StartGCS(t, "gmirror")
	bktUploadGCS(t, e.gcs.Server, "gmirror", "ds", local)
	// AWS_* name the default test account, which neither server has; no
	// STORAGE_EMULATOR_HOST.
	bktSetEnv(t, "")
	t.Setenv("PBSA_ACCESS_KEY_ID", "access-a")
	t.Setenv("PBSA_SECRET_ACCESS_KEY", e.secretA)
	t.Setenv("WRONG_ACCESS_KEY_ID", "access-b")
	t.Setenv("WRONG_SECRET_ACCESS_KEY", "not-the-secret-8901")
	e.credFile = fixture.WriteFile(t, t.TempDir(), "credentials", []byte("[mirror]\naws_access_key_id = access-b\naws_secret_access_key = "+e.secretB+"\n"))

	e.storeA = "s3://pbsa/ds?env=PBSA"
	e.storeB = "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&region=us-east-1&path-style=true&profile=mirror&credentials-file=" + e.credFile
	e.storeG = "gs://gmirror/ds?endpoint=" + e.gcs.URL + "&anonymous"
	storesFile := fixture.WriteFile(t, t.TempDir(), "stores.conf", []byte("[mirror]\nurl = s3://pbsb\nendpoint = "+e.s3b.Endpoint+
		"\nregion = us-east-1\npath-style = true\nprofile = mirror\ncredentials-file = "+e.credFile+"\n"))
	e.named = "@mirror/ds"
	e.flags = []string{"--s3-endpoint", e.s3a.Endpoint, "--stores-config", storesFile}

	t.Run("chain", e.testChain)
	t.Run("wrong", e.testWrong)
	t.Run("datastores", e.testDatastores)
	t.Run("repair from", func(t *testing.T) {
		// A --from that cannot be opened is named once, with its settings.
		from := "s3://pbsa/ds?endpoint=http://127.0.0.1:1&env=PBSA"
		r := mustFail(t, 3, []string{"--from " + from + ": "}, append([]string{"repair", "--store", local, "--from", from, "--retry-for", "0"}, e.flags...)...)
		if strings.Count(r.err, "s3://pbsa/ds") != 1 {
			t.Errorf("the --from store is not named exactly once: %v", r)
		}
	})
	t.Run("backup", e.testBackup)
}

// testDatastores finds and counts the datastores of a bucket with its own
// settings (the command line's endpoint is server a's, the environment's
// credentials no server's): each location found carries the settings, so
// that it counts and opens as --store the store the walk listed.
func (e *perStoreEnv) testDatastores(t *testing.T) {
	settings := "?endpoint=" + e.s3b.Endpoint + "&profile=mirror&credentials-file=" + e.credFile
	for _, c := range []struct{ location, want string }{
		{"s3://pbsb" + settings, "s3://pbsb/ds" + settings},
		{"@mirror", backends.DisplaySpec(strings.Replace(must(expandNamed(t, e, "@mirror")), "s3://pbsb?", "s3://pbsb/ds?", 1))},
	} {
		r := mustOK(t, append([]string{"datastores", "--output-format", "json", c.location}, e.flags...)...)
		var rep datastoresReport
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("datastores JSON: %v\n%v", err, r)
		}
		if len(rep.Datastores) != 1 || rep.Datastores[0].Location != c.want || rep.Datastores[0].Snapshots != 1 || rep.Datastores[0].Error != "" {
			t.Fatalf("datastores %s: %+v, want %s with 1 snapshot", c.location, rep.Datastores, c.want)
		}
		if !strings.HasPrefix(rep.Location, backends.BaseSpec(rep.Location)+"?endpoint=") {
			t.Errorf("datastores %s: location %q lacks its settings", c.location, rep.Location)
		}
		// The location found opens as --store.
		mustOK(t, append([]string{"snapshots", "--store", rep.Datastores[0].Location}, e.flags...)...)
	}
}

// expandNamed returns the specification the stores file of e gives name.
func expandNamed(t *testing.T, e *perStoreEnv, name string) (string, error) {
	t.Helper()
	sf := storeFlags{storesConfig: e.flags[3]}
	return sf.expandStore("--store", name)
}

// testBackup backs up into a new prefix of server b with that store's own
// settings (the command line's endpoint is server a's) and restores it.
func (e *perStoreEnv) testBackup(t *testing.T) {
	store := "s3://pbsb/written?endpoint=" + e.s3b.Endpoint + "&profile=mirror&credentials-file=" + e.credFile
	backupImage(t, store, e.data, append([]string{"--chunk-size", "64"}, e.flags...)...)
	if _, err := os.Stat(filepath.Join(e.s3b.Root, "pbsb", "written", ".cnt")); err != nil {
		t.Fatalf("the backup is not in server b's bucket: %v", err)
	}
	target := filepath.Join(t.TempDir(), "restored.raw")
	restoreJSON(t, append([]string{"--store", store}, append(e.flags, snap0, "drive-scsi0", target)...)...)
	fixture.Equal(t, target, e.data)
}

// testChain restores through the three stores and checks each one's share;
// the second store is named in the stores file.
func (e *perStoreEnv) testChain(t *testing.T) {
	stores := append([]string{"--store", e.storeA, "--store", e.named, "--store", e.storeG}, e.flags...)
	target := filepath.Join(t.TempDir(), "restored.raw")
	s := restoreJSON(t, append(stores, snap0, "drive-scsi0", target)...)
	fixture.Equal(t, target, e.data)
	if len(s.Stores) != 3 {
		t.Fatalf("summary has %d stores, want 3: %+v", len(s.Stores), s.Stores)
	}
	want := []int64{int64(e.fromA), int64(e.fromB), int64(e.chunks - e.fromA - e.fromB)}
	// A store at an endpoint of its own is named with it: the stores of
	// a chain may share a bucket's name and prefix.
	names := []string{"s3://pbsa/ds", "s3://pbsb/ds (" + hostOf(e.s3b.Endpoint) + ")", "gs://gmirror/ds (" + hostOf(e.gcs.URL) + ")"}
	for i, w := range want {
		if got := s.Stores[i]; got.Chunks != w || got.Store != names[i] {
			t.Errorf("store %d: %+v, want %s serving %d chunks", i+1, got, names[i], w)
		}
	}
	// verify takes the same chain; its report names the first store with
	// its settings.
	if code, rep := bktVerify(t, append(stores, snap0)...); code != 0 || rep.Store != e.storeA {
		t.Errorf("verify: exit %d, store %q, want 0 and %q", code, rep.Store, e.storeA)
	}

	// One store's credentials refused: it is left out, named, and the
	// others serve (GCS has every chunk).
	badB := "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&env=WRONG"
	r := mustOK(t, append([]string{"restore", "--store", e.storeA, "--store", badB, "--store", e.storeG, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw")}, e.flags...)...)
	if !strings.Contains(r.err, "--store "+badB+" left out") || strings.Contains(r.err, "not-the-secret") {
		t.Errorf("the store with refused credentials is not named (or its secret shown): %v", r)
	}
	// Named once: the warning does not repeat the store before its cause.
	if line, _, _ := strings.Cut(r.err[strings.Index(r.err, "--store "+badB+" left out"):], "\n"); strings.Count(line, "s3://pbsb/ds") != 1 {
		t.Errorf("the warning names the store more than once: %q", line)
	}
	// A store whose endpoint takes no bucket of its name (400
	// InvalidBucketName) is left out as well.
	badName := "s3://192.168.1.1/ds?endpoint=" + e.s3a.Endpoint + "&env=PBSA&path-style"
	r = mustOK(t, append([]string{"restore", "--store", badName, "--store", e.storeG, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw")}, e.flags...)...)
	if !strings.Contains(r.err, "--store "+badName+" left out") {
		t.Errorf("the store of an invalid bucket name is not left out: %v", r)
	}
	// restore's JSON names it as verify's does.
	sum := restoreJSON(t, append([]string{"--store", e.storeA, "--store", badB, "--store", e.storeG, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw")}, e.flags...)...)
	if len(sum.StoresLeftOut) != 1 || sum.StoresLeftOut[0] != badB {
		t.Errorf("restore JSON stores-left-out = %q, want [%s]", sum.StoresLeftOut, badB)
	}
	// drill's JSON too.
	r = mustOK(t, append([]string{"drill", "--output-format", "json", "--store", e.storeA, "--store", badB, "--store", e.storeG, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "t.raw")}, e.flags...)...)
	var dr drill.Report
	if err := json.Unmarshal([]byte(r.out), &dr); err != nil || len(dr.StoresLeftOut) != 1 || dr.StoresLeftOut[0] != badB {
		t.Errorf("drill JSON stores-left-out = %q (%v), want [%s]", dr.StoresLeftOut, err, badB)
	}
}

// hostOf is the host:port of the URL u.
func hostOf(u string) string {
	_, hp, _ := strings.Cut(u, "://")
	host, _, _ := strings.Cut(hp, "/")
	return host
}

// testWrong runs a command against one store with a wrong setting.
func (e *perStoreEnv) testWrong(t *testing.T) {
	missingFile := filepath.Join(t.TempDir(), "none.json")
	for _, c := range []struct {
		name, store string
		code        int
		want        []string
	}{
		{"unknown parameter", "s3://pbsa/ds?env=PBSA&secret-key=hunter2", 2, []string{"--store s3://pbsa/ds?env=PBSA&secret-key=xxxxx", `parameter "secret-key": unknown`}},
		{"value does not parse", "s3://pbsb/ds?path-style=sometimes", 2, []string{"--store s3://pbsb/ds?path-style=sometimes", `parameter "path-style"`}},
		{"region that does not sign", "s3://pbsa/ds?env=PBSA&region=us%20east", 2, []string{"--store s3://pbsa/ds?env=PBSA&region=us+east", `parameter "region": want a region`}},
		{"endpoint with a query", "s3://pbsa/ds?env=PBSA&endpoint=" + e.s3a.Endpoint + "?x=1", 2, []string{`parameter "endpoint": an endpoint URL has no query`}},
		{"GCS parameter unknown", "gs://gmirror/ds?region=auto", 2, []string{"--store gs://gmirror/ds?region=xxxxx", `parameter "region": unknown; gs:// stores take`}},
		{"credentials refused", "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&env=WRONG", 3, []string{"s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&env=WRONG: listing bucket: access denied"}},
		{"credentials of the command line", "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint, 3, []string{"s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + ": "}},
		{"environment prefix not set", "s3://pbsa/ds?env=NOSUCH", 3, []string{"s3://pbsa/ds?env=NOSUCH: access denied: ", "NOSUCH_ACCESS_KEY_ID and NOSUCH_SECRET_ACCESS_KEY must both be set"}},
		{"profile not in the file", "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&profile=nosuch&credentials-file=" + e.credFile, 3, []string{"s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&profile=nosuch", "nosuch"}},
		{"endpoint not answering", "s3://pbsa/ds?endpoint=http://127.0.0.1:1&env=PBSA", 3, []string{"s3://pbsa/ds?endpoint=http://127.0.0.1:1&env=PBSA: "}},
		{"credentials in the bucket URL", "s3://AKA:hunter2@pbsa/ds?endpoint=" + e.s3a.Endpoint, 2, []string{"--store s3://AKA:xxxxx@pbsa/ds?endpoint=" + e.s3a.Endpoint + ": a bucket URL carries no credentials"}},
		{"credentials in the GCS bucket URL", "gs://u:hunter2@gmirror/ds", 2, []string{"--store gs://u:xxxxx@gmirror/ds: "}},
		{"named store's setting overridden", e.named + "?profile=nosuch", 3, []string{"profile=nosuch", "nosuch"}},
		{"no such named store", "@nosuch", 2, []string{"--store \"@nosuch\": ", "stores.conf names only mirror"}},
		{"S3 credentials file missing", "s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&credentials-file=" + missingFile, 3, []string{"s3://pbsb/ds?endpoint=" + e.s3b.Endpoint + "&credentials-file=" + missingFile + ": ", "credentials file " + missingFile + " cannot be read"}},
		{"environment and profile", "s3://pbsa/ds?env=PBSA&profile=mirror", 2, []string{`parameter "env": takes the credentials from the environment; give it or profile/credentials-file, not both`}},
		{"anonymous with a credentials file", "gs://gmirror/ds?anonymous&credentials-file=" + missingFile, 2, []string{`parameter "anonymous": sends no credentials`}},
		{"GCS credentials file missing", "gs://gmirror/ds?endpoint=" + e.gcs.URL + "&credentials-file=" + missingFile, 3, []string{"gs://gmirror/ds?endpoint=" + e.gcs.URL + "&credentials-file=" + missingFile + ": ", "credentials file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mustFail(t, c.code, c.want, append([]string{"snapshots", "--store", c.store, "--retry-for", "0"}, e.flags...)...)
			for _, secret := range []string{"hunter2", e.secretA, e.secretB, "not-the-secret"} {
				if strings.Contains(r.err+r.out, secret) {
					t.Errorf("the output shows a secret: %v", r)
				}
			}
		})
	}
	// The same store with its own settings right opens, also named with
	// parameters of its own over the section's.
	mustOK(t, append([]string{"snapshots", "--store", e.storeB}, e.flags...)...)
	mustOK(t, append([]string{"snapshots", "--store", e.named + "?region=us-east-1&path-style"}, e.flags...)...)
	if _, err := os.Stat(missingFile); err == nil {
		t.Fatal("the missing credentials file exists")
	}
}
