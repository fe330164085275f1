package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// completions runs cobra's completion request for the command line words
// (the last one being completed) in-process and returns the candidates
// (without descriptions) and the directive line (":4" etc.).
func completions(t *testing.T, words ...string) ([]string, string) {
	t.Helper()
	r := pbs(t, append([]string{"__complete"}, words...)...)
	if r.code != 0 {
		t.Fatalf("completion request failed: %v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	directive := lines[len(lines)-1]
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		cands = append(cands, name)
	}
	return cands, directive
}

// completionStore backs up two groups into a new datastore directory for
// the completion tests: vm/100 at t0str and ct/101 an hour later.
func completionStore(t *testing.T) string {
	t.Helper()
	store := fixture.NewStore(t)
	backupImage(t, store, make([]byte, 1<<20))
	img := filepath.Join(t.TempDir(), "root.img")
	if err := os.WriteFile(img, []byte("ct root"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "pct.conf")
	if err := os.WriteFile(conf, []byte("arch: amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "backup", "--store", store, "--backup-type", "ct", "--backup-id", "101",
		"--backup-time", "2026-11-29T11:00:00Z", "root.img:"+img, "pct.conf:"+conf)
	mustOK(t, "backup", "--store", store, "--ns", "prod/db", "--backup-type", "ct", "--backup-id", "102", "--backup-time", t0str, "root.img:"+img)
	return store
}

// TestCompletion: the shell's completion requests get the commands, the
// values of the fixed-choice flags, the groups and snapshots of --store
// as SNAPSHOT and the snapshot's archives as ARCHIVE; a store that cannot
// be opened offers nothing (an error directive, not an exit code), and
// PROXMOX_OUTPUT_FORMAT adds no JSON to what the shell reads. Then the
// same through the real shells (testCompletionShells).
func TestCompletion(t *testing.T) {
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json")
	store := completionStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hung := ln.Addr().String()
	for _, c := range []struct {
		name      string
		words     []string
		want      []string // exactly these, in this order
		directive string
	}{
		{"commands", []string{"re"}, []string{"repair", "report", "restore", "restore-guest"}, ":4"},
		{"key-commands", []string{"key", "c"}, []string{"change-passphrase", "create", "create-master-key"}, ":4"},
		{"output-format", []string{"verify", "--output-format", ""}, []string{"text", "json", "json-pretty"}, ":4"},
		{"on-missing", []string{"restore", "--on-missing", ""}, []string{"fail", "zero"}, ":4"},
		{"snapshots", []string{"restore", "--store", store, ""},
			[]string{"ct/101", "ct/101/2026-11-29T11:00:00Z", "vm/100", "vm/100/" + t0str}, ":4"},
		{"snapshot-prefix", []string{"verify", "--store", store, "vm/"}, []string{"vm/100", "vm/100/" + t0str}, ":4"},
		{"archives", []string{"restore", "--store", store, "vm/100", ""}, []string{"drive-scsi0.img.fidx"}, ":4"},
		{"archives-of-time", []string{"restore", "--store", store, "ct/101/2026-11-29T11:00:00Z", ""}, []string{"root.img.fidx", "pct.conf.blob"}, ":4"},
		{"drill-images-only", []string{"drill", "--store", store, "ct/101", ""}, []string{"root.img.fidx"}, ":4"},
		{"target-is-a-file", []string{"restore", "--store", store, "vm/100", "drive-scsi0.img.fidx", ""}, nil, ":0"},
		{"namespaces", []string{"snapshots", "--store", store, "--ns", ""}, []string{"prod", "prod/db"}, ":4"},
		{"namespace-snapshots", []string{"verify", "--store", store, "--ns", "prod/db", ""}, []string{"ct/102", "ct/102/" + t0str}, ":4"},
		{"one-snapshot-only", []string{"verify", "--store", store, "vm/100", ""}, nil, ":4"},
		{"mountpoint-is-a-file", []string{"mount", "--store", store, "vm/100", ""}, nil, ":0"},
		{"encrypted-key-snapshot", []string{"key", "import-with-master-key", "--store", store, "v"}, []string{"vm/100", "vm/100/" + t0str}, ":4"},
		{"encrypted-key-file", []string{"key", "import-with-master-key", ""}, nil, ":0"},
		{"no-fourth-argument", []string{"restore", "--store", store, "vm/100", "drive-scsi0.img.fidx", "t", ""}, nil, ":4"},
		// A store that cannot be read offers nothing, not file names.
		{"no-such-store", []string{"restore", "--store", filepath.Join(store, "nosuch"), ""}, nil, ":4"},
		{"no-store", []string{"restore", ""}, nil, ":4"},
		{"no-such-snapshot", []string{"restore", "--store", store, "vm/999", ""}, nil, ":4"},
		// Only the first store is read: a second one that never answers
		// does not hold up the shell.
		{"hung-second-store", []string{"restore", "--store", store, "--store", "s3://b/p", "--s3-endpoint", "http://" + hung, "vm/"},
			[]string{"vm/100", "vm/100/" + t0str}, ":4"},
		{"no-arguments", []string{"snapshots", "--store", store, ""}, nil, ":4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, directive := completions(t, c.words...)
			if !slices.Equal(got, c.want) || directive != c.directive {
				t.Errorf("complete %q: %q %s; want %q %s", c.words, got, directive, c.want, c.directive)
			}
		})
	}
	t.Run("garbage-output-format", func(t *testing.T) {
		t.Setenv("PROXMOX_OUTPUT_FORMAT", "garbage")
		if got, directive := completions(t, "restore", "--store", store, "vm/"); len(got) != 2 || directive != ":4" {
			t.Errorf("with PROXMOX_OUTPUT_FORMAT=garbage: %q %s; want vm/100 and its snapshot", got, directive)
		}
	})
	t.Run("shells", func(t *testing.T) { testCompletionShells(t, store) })
}

// testCompletionShells: the scripts of 'completion bash|zsh|fish' work in
// the real shells with the real binary: bash (with the bash-completion
// package, as distributions set it up) and fish complete a snapshot and an
// archive of store (made by completionStore); zsh loads the script into
// compinit.
func testCompletionShells(t *testing.T, store string) {
	if testing.Short() {
		t.Skip("builds the binary and runs shells")
	}
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	for _, need := range []string{"bash", "zsh", "fish", bashCompletion} {
		if _, err := exec.LookPath(need); err != nil {
			if _, serr := os.Stat(need); serr != nil {
				t.Fatalf("%s is needed (.ci/run installs bash-completion, zsh and fish): %v", need, err)
			}
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pbsdirect")
	if out, err := exec.Command("go", "build", "-tags", "disable_grpc_modules", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "STORE="+store)
	shell := func(t *testing.T, name, script string) string {
		t.Helper()
		cmd := exec.Command(name, "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	t.Run("bash", func(t *testing.T) {
		// COMP_* as bash sets them when TAB is pressed after the words.
		complete := func(words string) string {
			return `
COMP_WORDS=(` + words + ` "")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
__start_pbsdirect pbsdirect "" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"
`
		}
		out := shell(t, "bash", "source "+bashCompletion+"\nsource <(pbsdirect completion bash)\n"+
			complete(`pbsdirect restore --store "$STORE"`)+"echo ==\n"+complete(`pbsdirect restore --store "$STORE" vm/100`))
		want := "ct/101\nct/101/2026-11-29T11:00:00Z\nvm/100\nvm/100/" + t0str + "\n==\ndrive-scsi0.img.fidx\n"
		if out != want {
			t.Errorf("bash completion:\n%s\nwant:\n%s", out, want)
		}
	})
	t.Run("fish", func(t *testing.T) {
		out := shell(t, "fish", `pbsdirect completion fish | source
complete -C "pbsdirect restore --store $STORE "
echo ==
complete -C "pbsdirect restore --store $STORE vm/100 "`)
		want := "ct/101\tthe latest snapshot of the group\nct/101/2026-11-29T11:00:00Z\nvm/100\tthe latest snapshot of the group\nvm/100/" + t0str + "\n==\ndrive-scsi0.img.fidx\n"
		if out != want {
			t.Errorf("fish completion:\n%q\nwant:\n%q", out, want)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "_pbsdirect")
		if out, err := exec.Command(bin, "completion", "zsh").Output(); err != nil {
			t.Fatal(err)
		} else if err := os.WriteFile(script, out, 0o644); err != nil {
			t.Fatal(err)
		}
		shell(t, "zsh", "zsh -n "+script)
		out := shell(t, "zsh", `autoload -U compinit && compinit -u -D
source `+script+`
print -r -- $_comps[pbsdirect]`)
		if strings.TrimSpace(out) != "_pbsdirect" {
			t.Errorf("zsh: pbsdirect completes with %q, want _pbsdirect", out)
		}
	})
}

// TestManPages: 'man DIR' writes a page for pbsdirect and for every
// command, and man renders them without warnings: the restore page has
// its description with the environment variables spelt right (Markdown
// would eat the underscores), its flags and examples; the main page keeps
// the exit code table.
func TestManPages(t *testing.T) {
	// What the pages say must not depend on the machine that makes them.
	t.Setenv("PBSDIRECT_STORE", "/env/store")
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json-pretty")
	host, _ := os.Hostname()
	dir := t.TempDir()
	mustOK(t, "man", dir)
	var want []string
	var walk func(prefix string, specs []commandSpec)
	walk = func(prefix string, specs []commandSpec) {
		for _, s := range specs {
			name := prefix + "-" + strings.Fields(s.use)[0]
			want = append(want, name+".1")
			walk(name, s.sub)
		}
	}
	walk("pbsdirect", commandSpecs())
	want = append(want, "pbsdirect.1", "pbsdirect-completion.1")
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		want = append(want, "pbsdirect-completion-"+sh+".1")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "pbsdirect-restore.1")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("pages must be readable by everyone (0644): %v %v", st.Mode(), err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("man pages %q, want %q", got, want)
	}
	if r := pbs(t, "man", filepath.Join(dir, "nosuch")); r.code != 2 {
		t.Errorf("man into a missing directory: %v; want exit 2", r)
	}
	// A link where a page goes is not written through, and is a usage
	// error; the JSON result says how many pages were written.
	linked := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(victim, filepath.Join(linked, "pbsdirect-restore.1")); err != nil {
		t.Fatal(err)
	}
	if r := pbs(t, "man", linked); r.code != 2 || !strings.Contains(r.err, "is a symbolic link") {
		t.Errorf("man over a link: %v; want exit 2", r)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("man wrote through a link to %s", victim)
	}
	// A FIFO where a page goes is refused at once (not waited on), and a
	// hard link's other name keeps its content: pages are replaced by a
	// rename, never written in place.
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "pbsdirect.1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pbs(t, "man", fifoDir); r.code != 2 || !strings.Contains(r.err, "is a FIFO") {
		t.Errorf("man over a FIFO: %v; want exit 2", r)
	}
	hard := t.TempDir()
	precious := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(precious, filepath.Join(hard, "pbsdirect-verify.1")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "man", hard)
	if b, _ := os.ReadFile(precious); string(b) != "keep" {
		t.Errorf("man wrote through a hard link: %q", b)
	}
	if r := pbs(t, "man", "--output-format", "json", t.TempDir()); r.code != 0 || !strings.Contains(r.out, fmt.Sprintf(`"pages":%d`, len(want))) {
		t.Errorf("man --output-format json: %v; want %d pages", r, len(want))
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Fatalf("man is needed to render the pages (.ci/run installs man-db): %v", err)
	}
	for _, c := range []struct {
		page string
		want []string
	}{
		{"pbsdirect-restore.1", []string{"PBSDIRECT-RESTORE(1)", "pbsdirect restore [flags] SNAPSHOT ARCHIVE TARGET", "PROXMOX_OUTPUT_FORMAT", "PBS_ENCRYPTION_PASSWORD_FD",
			"<account>", "--keyfile", "--on-missing", "EXAMPLE", "pbsdirect restore --store /mnt/datastore/store1 vm/100 drive-scsi0",
			"--store=[]", `--output-format="text"`, "(default: the number of cores)", "(default: max(4, jobs/2))"}},
		{"pbsdirect.1", []string{"  130  interrupted by SIGINT", "pbsdirect-restore(1)"}},
		{"pbsdirect-key-create.1", []string{"pbsdirect key create [flags] [PATH]", "--kdf"}},
		{"pbsdirect-backup.1", []string{`--backup-id=""`}},
		{"pbsdirect-completion-bash.1", []string{"source <(pbsdirect completion bash)", "/etc/bash_completion.d/pbsdirect"}},
	} {
		cmd := exec.Command("man", "--warnings", "-l", "-P", "cat", filepath.Join(dir, c.page))
		cmd.Env = append(os.Environ(), "MANWIDTH=200", "LC_ALL=C.UTF-8")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() != 0 {
			t.Errorf("man %s: %v\n%s", c.page, err, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("man %s lacks %q:\n%s", c.page, w, out)
			}
		}
		for _, machine := range []string{"/env/store", "json-pretty\"", `"` + host + `"`, `\_`, `\<`} {
			if strings.Contains(string(out), machine) {
				t.Errorf("man %s has %q (this machine's, or Markdown escapes):\n%s", c.page, machine, out)
			}
		}
	}
}
