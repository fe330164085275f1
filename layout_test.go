// Package pbsdirect_test holds TestLayout, the dependency test of the package
// layout. It lives in the module root, in a package of its own with no
// non-test code, because it is about the whole module rather than any one
// package: it lists every package of the module with `go list` and checks
// each import between two of them against the arrows below.
//
// The arrows run downward only:
//
//	cmd → restore, verify, archive, backup → snapshot → chunkstore (+ bucket, backends), index → crypto
//	cmd/pbsdirect → cmd/internal/cli → (progress, fsutil)
//
// cmd parses flags and prints; restore (one Restore call), verify and
// archive (mount, NBD, stdout) are the engine's entry points and open
// snapshots through snapshot (its reader and key policy); snapshot reads
// through chunkstore's Store and index's formats; chunkstore and index are
// peers that use only crypto. A target package (restore/filetarget: file
// and block-device targets with their checks, locks and placement) sits
// below restore's target interface and beside the pipeline:
//
//	cmd → restore/filetarget → restore (Target, its capabilities, Sink)
//	cmd → restore (Restore, given the sink cmd built)
//
// It imports restore for the interface it implements, and what restore may
// import; the pipeline (restore and its other packages) never imports it, so
// a second target kind is added as another package under restore/ without
// touching the pipeline or this test. drill (reports and the fleet drill) sits above
// restore, whose Drill does one drill's work, and verify, whose Select picks
// a fleet's snapshots. Beside the entry points, keys (key files, master
// keys; it reads a snapshot's rsa-encrypted.key.blob through snapshot) and
// metrics (metrics of verify's report and of drills) serve cmd;
// progress and fsutil (mount points, output files replaced by rename) are
// leaves that know nothing of PBS. cmd/internal/cli is the command layer's
// generic machinery (command tree, help, output formats, exit codes, man
// pages, completion plumbing): the commands import it, and it knows nothing
// of PBS, so it imports none of the engines or stores. In rules:
//
//   - no package outside internal/ imports internal/… (test support only;
//     tests may import it, and so may the packages under internal/);
//   - fusefs and nbd import no package of ours;
//   - chunkstore and index import only crypto, and crypto nothing of ours:
//     never restore, verify, archive, backup, snapshot or cmd;
//   - snapshot imports only chunkstore, index and crypto;
//   - restore, archive, backup and verify use what is below them, not each
//     other, except verify, which runs restore's pipeline;
//   - every package under restore/ but restore itself (and notTargets) is a
//     target package; a target package placed elsewhere is told to move;
//   - no package of ours imports a target package but cmd and the
//     other top groups: the pipeline gets its target from its caller; a
//     target package imports restore and what restore may import, never
//     another target package, verify, archive or backup;
//   - nothing imports cmd, and only cmd imports cmd/internal/cli;
//   - a new top-level package must be placed in the layout (mayImport) first.
//
// Checking the direct imports of every package of ours is enough: each rule
// names what a package may import, so a forbidden dependency through another
// package of ours breaks a rule at one of the edges on its way.
// Known exceptions are listed in allowed with their reason; one that no longer
// occurs fails the test, so the list shrinks as the layout is reached.
package pbsdirect_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is the module path; packages under it are "ours".
const module = "github.com/pbsdirect/pbsdirect"

// mayImport maps each top-level package group below cmd (the first element
// of the package path under the module) to the groups of ours it may import
// (besides its own subtree). Groups absent here are the top: cmd, the bench
// and deploy tools, and internal/ (test support).
var mayImport = map[string][]string{
	"crypto":     {},
	"index":      {"crypto"},
	"chunkstore": {"crypto"},
	"snapshot":   {"chunkstore", "index", "crypto"},
	"restore":    {"snapshot", "chunkstore", "index", "crypto"},
	"archive":    {"snapshot", "chunkstore", "index", "crypto", "pxar"},
	"backup":     {"snapshot", "chunkstore", "index", "crypto", "fsutil", "pxar"},
	"verify":     {"restore", "snapshot", "chunkstore", "index", "crypto"},
	"fusefs":     {},
	"nbd":        {},
	"paperkey":   {"crypto"},
	// progress draws a run's bar or lines from a byte count: nothing of PBS.
	"progress": {},
	// drill holds drill reports and the fleet drill (the newest images of
	// a namespace, chosen with verify's Select, each drilled by
	// restore.Drill): above restore and verify, below cmd.
	"drill": {"restore", "verify", "snapshot", "chunkstore", "index", "crypto", "bootcheck"},
	// bootcheck boots disk images in QEMU (a drill's boot check, the
	// boot-check command): an external program behind a small API,
	// nothing of PBS.
	"bootcheck": {},
	// metrics makes the metrics of verify and drill runs (a textfile, a
	// Pushgateway push): above verify's report, beside cmd's printing of
	// it; index names an archive's namespace and group.
	"metrics": {"verify", "index"},
	// repair copies good chunks of the snapshots in scope from mirrors
	// into a store: it reads the indexes as restore plans them.
	"repair": {"restore", "snapshot", "chunkstore", "index", "crypto"},
	// keys manages key files and master keys; it reads a snapshot's
	// rsa-encrypted.key.blob through snapshot, beside restore and verify.
	"keys": {"snapshot", "chunkstore", "index", "crypto", "paperkey"},
	// fsutil holds local file system helpers (mount points, output files
	// replaced by rename): nothing of PBS.
	"fsutil": {},
	// pxar decodes and encodes pxar archives and catalogs over
	// io.ReaderAt and io.Writer: no I/O of its own, nothing of ours.
	"pxar": {},
	// pxarfs serves a pxar archive as a fusefs tree (mount's browsing):
	// the adapter between the two leaves, nothing of PBS.
	"pxarfs": {"fusefs", "pxar"},
	// pxartar writes a pxar archive as a POSIX (PAX) tar stream.
	"pxartar": {"pxar"},
	// extract writes a pxar archive's tree into a directory: the decoder
	// below it, the file system beside it, nothing of PBS's stores.
	"extract": {"pxar"},
	// cmd/internal/cli is the commands' generic machinery (command tree,
	// output formats, exit codes, man pages): below cmd's commands, and
	// nothing of PBS below it; the program's exit-code classification of
	// engine errors stays in cmd/pbsdirect.
	cliLayer: {"progress", "fsutil"},
}

// cliLayer is the command layer's generic machinery: a group of its own
// below the rest of cmd (see group).
const cliLayer = "cmd/internal/cli"

// notTargets lists the packages under restore/ that are part of the
// pipeline rather than target packages (none yet). Every other package
// under restore/ is a target package: an implementation of restore's
// Target that cmd constructs and hands to restore.Restore (see the package
// doc), recognized without being listed here.
var notTargets = []string{}

// targetRoot returns the target package rel is or lies below
// ("restore/filetarget" for "restore/filetarget/x"), and false when rel
// is not in a target package.
func targetRoot(rel string) (string, bool) {
	below, ok := strings.CutPrefix(rel, "restore/")
	if !ok {
		return "", false
	}
	first, _, _ := strings.Cut(below, "/")
	root := "restore/" + first
	if slices.Contains(notTargets, root) {
		return "", false
	}
	return root, true
}

// isTarget reports whether rel is a target package or lies below one.
func isTarget(rel string) bool {
	_, ok := targetRoot(rel)
	return ok
}

// misplacedTarget reports whether rel looks like a target package placed
// outside restore/ (its last element ends in "target"), for the hint
// that target packages go under restore/.
func misplacedTarget(rel string) bool {
	return strings.HasSuffix(rel[strings.LastIndex(rel, "/")+1:], "target") && !isTarget(rel) && !slices.Contains(top, group(rel))
}

// targetHint is added to a violation by a package misplacedTarget finds.
const targetHint = " (a target kind goes under restore/, e.g. restore/nulltarget, where it is a target package without further listing)"

// top lists the groups that may import any package of ours except cmd (and,
// outside internal/, except internal/).
var top = []string{"cmd", "bench", "deploy", "internal"}

// edge is one import of a package of ours by another, both as paths relative
// to the module (e.g. "archive" imports "restore").
type edge struct{ from, to string }

// allowed are the known exceptions to the rules, each with its reason.
var allowed = map[edge]string{
	// archive.Reader loads its plan with restore.LoadPlan and reports damaged
	// chunks as restore.ChunkError. This arrow goes once plan loading moves
	// down to snapshot (a snapshot.Reader) and the chunk check and its error
	// to chunkstore.
	{"archive", "restore"}: "plan loading and ChunkError still live in restore",
}

// pkg is one package of ours: its path relative to the module ("" for the
// module root) and the packages of ours its non-test files import.
type pkg struct {
	path    string
	imports []string
}

// group is the first element of a relative package path, or cliLayer for
// the packages under it.
func group(rel string) string {
	if rel == cliLayer || strings.HasPrefix(rel, cliLayer+"/") {
		return cliLayer
	}
	g, _, _ := strings.Cut(rel, "/")
	return g
}

// rule returns why the import of package to by package from breaks the
// layout, or "" if it does not.
func rule(from, to string) string {
	fg, tg := group(from), group(to)
	switch {
	case tg == "cmd":
		return "nothing imports cmd"
	case tg == cliLayer && fg != "cmd" && fg != cliLayer:
		return "only the commands (cmd/…) import " + cliLayer
	case tg == "internal" && fg != "internal":
		return "internal/ is test support only: only tests and internal/ import it"
	case isTarget(from) && !sameTarget(from, to):
		if to == "restore" || slices.Contains(mayImport["restore"], tg) {
			return ""
		}
		return "a target package imports only restore (its interface) and what restore may import"
	case isTarget(to) && !slices.Contains(top, fg) && !sameTarget(from, to):
		return "the pipeline never imports a target package: cmd constructs the target and passes it to restore.Restore"
	case fg == tg:
		return ""
	case fg == "fusefs" || fg == "nbd":
		return fg + " imports no package of ours"
	case slices.Contains(top, fg):
		return ""
	}
	may, ok := mayImport[fg]
	switch {
	case !ok:
		return unplaced(fg)
	case slices.Contains(may, tg):
		return ""
	case fg == "chunkstore" || fg == "index" || fg == "crypto":
		return fg + " is below " + tg + ": arrows point down"
	default:
		return "sideways or upward arrow: " + fg + " may import only " + strings.Join(may, ", ")
	}
}

// sameTarget reports whether from and to lie in the same target package's
// subtree.
func sameTarget(from, to string) bool {
	f, ok := targetRoot(from)
	t, ok2 := targetRoot(to)
	return ok && ok2 && f == t
}

// unplaced says that package group g is missing from the layout.
func unplaced(g string) string {
	return "package group " + g + " is not in the layout: add it to mayImport in layout_test.go"
}

// check returns one line per import that breaks the layout and is not in
// exceptions, and one per exception that no longer occurs, sorted.
func check(pkgs []pkg, exceptions map[edge]string) []string {
	var bad []string
	seen := map[edge]bool{}
	for _, p := range pkgs {
		if g := group(p.path); p.path != "" && !slices.Contains(top, g) {
			if _, ok := mayImport[g]; !ok {
				bad = append(bad, fmt.Sprintf("%s: %s", p.path, unplaced(g)))
				if misplacedTarget(p.path) {
					bad[len(bad)-1] += targetHint
				}
				continue
			}
		}
		for _, to := range p.imports {
			e := edge{p.path, to}
			why := rule(p.path, to)
			if why == "" {
				continue
			}
			if _, ok := exceptions[e]; ok {
				seen[e] = true
				continue
			}
			if misplacedTarget(p.path) {
				why += targetHint
			}
			bad = append(bad, fmt.Sprintf("%s imports %s: %s", p.path, to, why))
		}
	}
	for e := range exceptions {
		if !seen[e] {
			bad = append(bad, fmt.Sprintf("%s no longer imports %s against the layout: remove the exception from allowed", e.from, e.to))
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad)
}

// listPackages runs `go list` on the module (with the build's tags, see the
// Makefile) and returns its packages with their imports of ours.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	gocmd, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	cmd := exec.Command(gocmd, "list", "-tags", "disable_grpc_modules", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var lp struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&lp); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		rel, ok := relative(lp.ImportPath)
		if !ok {
			t.Fatalf("go list ./... listed %s, outside module %s", lp.ImportPath, module)
		}
		p := pkg{path: rel}
		for _, imp := range lp.Imports {
			if r, ok := relative(imp); ok {
				p.imports = append(p.imports, r)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// relative returns the path of a package of ours relative to the module, and
// false for a package that is not ours.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}

// TestLayout checks the imports between the module's packages against the
// layout (see the package doc).
func TestLayout(t *testing.T) {
	pkgs := listPackages(t)
	// The listing must see the packages the rules are about, or it proves nothing.
	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p.path)
	}
	for _, want := range []string{"cmd/pbsdirect", "cmd/internal/cli", "chunkstore", "index", "crypto", "restore", "restore/filetarget", "archive", "fusefs", "nbd", "internal/fixture"} {
		if !slices.Contains(paths, want) {
			t.Fatalf("go list did not list %s (listed: %v)", want, paths)
		}
	}
	for _, v := range check(pkgs, allowed) {
		t.Error(v)
	}
}

// TestLayoutRules shows that check catches each kind of forbidden import, on
// made-up package graphs.
func TestLayoutRules(t *testing.T) {
	clean := []pkg{
		{"cmd/pbsdirect", []string{"verify", "restore", "restore/filetarget", "archive", "fusefs", "nbd", "chunkstore/backends", "cmd/internal/cli"}},
		{"cmd/internal/cli", []string{"progress", "fsutil/outfile"}},
		{"restore/filetarget", []string{"restore", "chunkstore", "index", "crypto"}},
		{"verify", []string{"restore", "snapshot", "chunkstore"}},
		{"restore", []string{"snapshot", "chunkstore", "index", "crypto"}},
		{"snapshot", []string{"chunkstore", "index"}},
		{"chunkstore/backends", []string{"chunkstore/s3store", "chunkstore/bucket", "chunkstore"}},
		{"chunkstore", []string{"crypto"}},
		{"index", []string{"crypto"}},
		{"internal/testenv", []string{"internal/fixture"}},
		{"internal/fixture", []string{"backup", "chunkstore"}},
		{"bench/cmd/chunkbench", []string{"restore", "snapshot"}},
		{"fusefs", nil},
		{"", nil},
	}
	tests := []struct {
		name       string
		extra      pkg
		exceptions map[edge]string
		want       string // substring of the only violation; "" for none
	}{
		{"clean", pkg{}, nil, ""},
		{"library imports internal", pkg{"restore", []string{"internal/fixture"}}, nil, "restore imports internal/fixture: internal/ is test support only"},
		{"binary imports internal", pkg{"cmd/pbsdirect", []string{"internal/faultproxy"}}, nil, "cmd/pbsdirect imports internal/faultproxy: internal/ is test support only"},
		{"bench tool imports internal", pkg{"bench/cmd/x", []string{"internal/testenv"}}, nil, "internal/ is test support only"},
		{"fusefs imports ours", pkg{"fusefs", []string{"index"}}, nil, "fusefs imports index: fusefs imports no package of ours"},
		{"nbd imports ours", pkg{"nbd", []string{"archive"}}, nil, "nbd imports archive: nbd imports no package of ours"},
		{"chunkstore imports restore", pkg{"chunkstore/s3store", []string{"restore"}}, nil, "chunkstore/s3store imports restore: chunkstore is below restore"},
		{"index imports snapshot", pkg{"index", []string{"snapshot"}}, nil, "index imports snapshot: index is below snapshot"},
		{"crypto imports index", pkg{"crypto", []string{"index"}}, nil, "crypto imports index: crypto is below index"},
		{"crypto imports cmd", pkg{"crypto", []string{"cmd/pbsdirect"}}, nil, "crypto imports cmd/pbsdirect: nothing imports cmd"},
		{"tool imports cmd", pkg{"internal/fixture", []string{"cmd/pbsdirect"}}, nil, "nothing imports cmd"},
		{"cli imports an engine", pkg{"cmd/internal/cli", []string{"restore"}}, nil, "cmd/internal/cli imports restore: sideways or upward arrow: cmd/internal/cli may import only progress, fsutil"},
		{"cli imports a store", pkg{"cmd/internal/cli/x", []string{"chunkstore"}}, nil, "cmd/internal/cli/x imports chunkstore: sideways or upward arrow"},
		{"cli imports the commands", pkg{"cmd/internal/cli", []string{"cmd/pbsdirect"}}, nil, "cmd/internal/cli imports cmd/pbsdirect: nothing imports cmd"},
		{"engine imports cli", pkg{"verify", []string{"cmd/internal/cli"}}, nil, "verify imports cmd/internal/cli: only the commands (cmd/…) import cmd/internal/cli"},
		{"bench tool imports cli", pkg{"bench/cmd/x", []string{"cmd/internal/cli"}}, nil, "only the commands (cmd/…) import cmd/internal/cli"},
		{"sideways", pkg{"archive", []string{"restore"}}, nil, "archive imports restore: sideways or upward arrow"},
		{"upward", pkg{"snapshot", []string{"verify"}}, nil, "snapshot imports verify: sideways or upward arrow"},
		{"exception", pkg{"archive", []string{"restore"}}, map[edge]string{{"archive", "restore"}: "known"}, ""},
		{"stale exception", pkg{}, map[edge]string{{"archive", "restore"}: "known"}, "archive no longer imports restore"},
		{"new group", pkg{"widget", []string{"chunkstore"}}, nil, "package group widget is not in the layout"},
		{"chunkstore imports index", pkg{"chunkstore", []string{"index"}}, nil, "chunkstore imports index: chunkstore is below index"},
		{"index imports chunkstore", pkg{"index", []string{"chunkstore"}}, nil, "index imports chunkstore: index is below chunkstore"},
		{"snapshot imports restore", pkg{"snapshot", []string{"restore"}}, nil, "snapshot imports restore: sideways or upward arrow"},
		{"restore imports verify", pkg{"restore", []string{"verify"}}, nil, "restore imports verify: sideways or upward arrow"},
		{"restore imports archive", pkg{"restore", []string{"archive"}}, nil, "restore imports archive: sideways or upward arrow"},
		{"pipeline imports the file target", pkg{"restore", []string{"restore/filetarget"}}, nil, "restore imports restore/filetarget: the pipeline never imports a target package"},
		{"verify imports the file target", pkg{"verify", []string{"restore/filetarget"}}, nil, "verify imports restore/filetarget: the pipeline never imports a target package"},
		{"file target imports verify", pkg{"restore/filetarget", []string{"verify"}}, nil, "restore/filetarget imports verify: a target package imports only restore"},
		{"file target imports archive", pkg{"restore/filetarget", []string{"archive"}}, nil, "restore/filetarget imports archive: a target package imports only restore"},
		{"file target imports a pipeline package", pkg{"restore/filetarget", []string{"restore/stage"}}, nil, "restore/filetarget imports restore/stage: a target package imports only restore"},
		{"a new target package needs no listing", pkg{"restore/nulltarget", []string{"restore", "chunkstore"}}, nil, ""},
		{"verify imports a new target package", pkg{"verify", []string{"restore/nulltarget"}}, nil, "verify imports restore/nulltarget: the pipeline never imports a target package"},
		{"a target imports another", pkg{"restore/nulltarget", []string{"restore/filetarget"}}, nil, "restore/nulltarget imports restore/filetarget: a target package imports only restore"},
		{"a target placed at the top", pkg{"nulltarget", []string{"restore"}}, nil, "package group nulltarget is not in the layout: add it to mayImport in layout_test.go (a target kind goes under restore/"},
		{"a target placed under chunkstore", pkg{"chunkstore/nulltarget", []string{"restore"}}, nil, "chunkstore/nulltarget imports restore: chunkstore is below restore: arrows point down (a target kind goes under restore/"},
		{"backend imports snapshot", pkg{"chunkstore/gcsstore", []string{"snapshot"}}, nil, "chunkstore/gcsstore imports snapshot: chunkstore is below snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pkgs := slices.Clone(clean)
			if tc.extra.path != "" {
				pkgs = append(pkgs, tc.extra)
			}
			got := check(pkgs, tc.exceptions)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("violations %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("violations %q, want one containing %q", got, tc.want)
			}
		})
	}
}
