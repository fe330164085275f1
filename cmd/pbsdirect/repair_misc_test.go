package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/repair"
)

// TestRepairFromSpecNamed: a malformed bucket URL given to --from is a
// usage error naming --from, not --store.
func TestRepairFromSpecNamed(t *testing.T) {
	for _, spec := range []string{"s3://bkt/./ds1", "s3:/bkt/ds1", "S3://bkt/ds1"} {
		r := mustFail(t, exitUsage, []string{"--from"}, "repair", "--store", t.TempDir(), "--from", spec)
		if strings.Contains(r.err, "--store") {
			t.Errorf("--from %s: the error names --store: %s", spec, r.err)
		}
	}
}

// TestRepairRecreatesOwner: a snapshot recreated in a group the primary
// lost whole gets the group's owner file from the mirror whose manifest
// recreated it (an item of kind owner); a group that has an owner keeps
// it as it is.
func TestRepairRecreatesOwner(t *testing.T) {
	primary, mirror, sd := filesCase(t, 41)
	group := filepath.Dir(sd)
	want, err := os.ReadFile(filepath.Join(mirror, group, "owner"))
	if err != nil {
		t.Fatalf("the mirror's group has no owner: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(primary, group)); err != nil {
		t.Fatal(err)
	}
	dry := repairJSON(t, 0, "--store", primary, "--from", mirror, "--dry-run")
	if !hasItem(dry.Items, repair.KindOwner, repair.ActionWouldCopy) {
		t.Errorf("dry run: no owner item: %+v", dry.Items)
	}
	if _, err := os.Stat(filepath.Join(primary, group, "owner")); err == nil {
		t.Error("dry run wrote the owner")
	}
	rep := repairJSON(t, 0, "--store", primary, "--from", mirror)
	if !hasItem(rep.Items, repair.KindOwner, repair.ActionCopied) {
		t.Errorf("no owner item copied: %+v", rep.Items)
	}
	if got, err := os.ReadFile(filepath.Join(primary, group, "owner")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("owner %q, %v; want %q", got, err, want)
	}
	mustOK(t, "verify", "--store", primary)

	// An owner there is never replaced.
	primary, mirror, sd = filesCase(t, 41)
	remove(t, filepath.Join(primary, sd, "index.json.blob"))
	mine := []byte("alice@pbs\n")
	if err := os.WriteFile(filepath.Join(primary, group, "owner"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	rep = repairJSON(t, 0, "--store", primary, "--from", mirror)
	if hasItem(rep.Items, repair.KindOwner, "") {
		t.Errorf("an owner item for a group that has one: %+v", rep.Items)
	}
	if got := must(os.ReadFile(filepath.Join(primary, group, "owner"))); !bytes.Equal(got, mine) {
		t.Errorf("the owner there was replaced: %q", got)
	}
}

// hasItem reports whether items hold one of kind with action (any action
// when "").
func hasItem(items []repair.Item, kind, action string) bool {
	return slices.ContainsFunc(items, func(it repair.Item) bool { return it.Kind == kind && (action == "" || it.Action == action) })
}

// TestRepairNotReplacedSaid: a primary's damaged manifest, not replaced by
// design, is said as such with the mirror that holds a good copy, not as
// a file in no store in good shape.
func TestRepairNotReplacedSaid(t *testing.T) {
	primary, mirror, sd := filesCase(t, 43)
	flipByte(t, filepath.Join(primary, sd, "index.json.blob"))
	r := mustFail(t, 1, []string{"1 manifest not replaced (damaged on the primary; a good copy exists on " + mirror + "; replace it by hand after checking)"},
		"repair", "--store", primary, "--from", mirror)
	if strings.Contains(r.err, "in no store in good shape") || strings.Contains(r.out, "in no store in good shape") {
		t.Errorf("the manifest is called in no store in good shape: %v", r)
	}
	rep := repairJSON(t, 1, "--store", primary, "--from", mirror)
	if !hasItem(rep.Items, repair.KindManifest, repair.ActionNotReplaced) || rep.Items[0].Source != mirror {
		t.Errorf("items %+v; want the manifest not replaced, the mirror named", rep.Items)
	}
}

// TestRepairInterruptedCounts: a repair interrupted (SIGINT) says what it
// did so far, in JSON and in text, with exit 130: the chunks copied are
// counted, not lost.
func TestRepairInterruptedCounts(t *testing.T) {
	fixture.SkipIfShort(t)
	data := fixture.Mixed(2<<20, 23) // 32 chunks of 64 KiB
	local := fixture.NewStore(t)
	backupImage(t, local, data, "--chunk-size", "64")
	root := t.TempDir()
	fixture.CopyDir(t, local, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	s3.AdoptFiles(t)
	p, err := faultproxy.Start("127.0.0.1:0", s3.Endpoint, 100*time.Millisecond, faultproxy.Rule{Method: "GET", PathContains: "/.chunks/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	bktSetEnv(t, "")
	primary := fixture.CopyDir(t, local, filepath.Join(t.TempDir(), "primary"))
	chunks := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(primary, ".chunks"), func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.Type().IsRegular() && len(de.Name()) == 64 {
				n++
			}
			return nil
		})
		return n
	}
	filepath.WalkDir(filepath.Join(primary, ".chunks"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			os.Remove(p)
		}
		return nil
	})
	interrupt := func(format string) result {
		t.Helper()
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		from := chunks()
		go func() {
			for chunks() < from+3 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			cancel(&cli.InterruptedError{Sig: syscall.SIGINT})
		}()
		args := []string{"repair", "--store", primary, "--from", "s3://bkt/ds", "--s3-endpoint", p.URL, "--jobs", "1", "--output-format", format}
		var out, errb bytes.Buffer
		r := result{code: run(ctx, args, &out, &errb), out: out.String(), err: errb.String(), args: args}
		if r.code != 130 {
			t.Fatalf("want exit 130: %v", r)
		}
		return r
	}
	r := interrupt("json")
	var rep repair.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("JSON: %v: %v", err, r)
	}
	if rep.ExitCode != 130 || !rep.Interrupted || rep.Repaired < 3 || rep.Chunks < 3 || rep.Unfinished == 0 || !strings.Contains(r.out, `"error":"interrupted (SIGINT)`) {
		t.Errorf("JSON after the interruption: %+v: %s", rep.Counts, r.out)
	}
	r = interrupt("text")
	if !strings.Contains(r.out, "copied") || !strings.Contains(r.out, "not checked (interrupted): INTERRUPTED") || !strings.Contains(r.err, "interrupted (SIGINT)") {
		t.Errorf("text after the interruption: %v", r)
	}
}

// TestRepairWarningNamesFrom: the warning that the stores disagree (the
// primary lacks a snapshot's manifest a mirror holds) names each store
// with the flag it was given with: --store for the primary, --from for the
// mirror.
func TestRepairWarningNamesFrom(t *testing.T) {
	primary, mirror, sd := filesCase(t, 21)
	remove(t, filepath.Join(primary, sd, "index.json.blob"))
	r := pbs(t, "repair", "--store", primary, "--from", mirror)
	if want := "--store " + primary + " lacks 1 snapshot(s) that --from " + mirror + " holds"; !strings.Contains(r.err, want) {
		t.Errorf("want the warning %q: %v", want, r)
	}
}
