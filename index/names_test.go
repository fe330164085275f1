package index

import (
	"strings"
	"testing"
)

func TestParseNamespace(t *testing.T) {
	long := strings.Repeat("a", 256)
	for _, c := range []struct {
		in   string
		ok   bool
		path string
	}{
		{"", true, ""},
		{"prod", true, "ns/prod"},
		{"prod/db", true, "ns/prod/ns/db"},
		{"_x/A.b-c/9", true, "ns/_x/ns/A.b-c/ns/9"},
		{"a/b/c/d/e/f/g", true, "ns/a/ns/b/ns/c/ns/d/ns/e/ns/f/ns/g"},
		{long, true, "ns/" + long},
		{"a/b/c/d/e/f/g/h", false, ""}, // depth 8
		{long + "a", false, ""},        // 257 bytes
		{strings.Repeat("abcdefghi/", 25) + "abcdef", false, ""},
		{"/a", false, ""},
		{"a/", false, ""},
		{"a//b", false, ""},
		{".a", false, ""},
		{"-a", false, ""},
		{"a b", false, ""},
		{"a:b", false, ""},
		{"ü", false, ""},
		{"..", false, ""},
	} {
		ns, err := ParseNamespace(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseNamespace(%q): err %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if !c.ok {
			wantErr(t, err, ErrBadName)
			continue
		}
		if ns.Path() != c.path || ns.String() != c.in || ns.IsRoot() != (c.in == "") {
			t.Errorf("ParseNamespace(%q): path %q string %q", c.in, ns.Path(), ns.String())
		}
	}
}

func TestTime(t *testing.T) {
	for _, c := range []struct {
		s     string
		epoch int64
		ok    bool
	}{
		{"2020-06-26T13:56:05Z", 1593179765, true},
		{"1970-01-01T00:00:00Z", 0, true},
		{"2026-11-29T10:00:00Z", 1795946400, true},
		{"1969-12-31T23:59:59Z", -1, true},
		{"2020-06-26T13:56:05", 0, false},
		{"2020-06-26T13:56:05+00:00", 0, false},
		{"2020-06-26T13:56:05.5Z", 0, false},
		{"2020-06-26 13:56:05Z", 0, false},
		{"2020-06-26t13:56:05z", 0, false},
		{"2020-02-30T00:00:00Z", 0, false},
		{"2020-06-26T24:00:00Z", 0, false},
		{"2020-06-26T13:56:60Z", 0, false},
		{"+020-06-26T13:56:05Z", 0, false},
		{"2020-6-26T13:56:05ZZ", 0, false},
	} {
		got, err := ParseTime(c.s)
		if (err == nil) != c.ok || (c.ok && got != c.epoch) {
			t.Errorf("ParseTime(%q) = %d, %v; want %d ok=%v", c.s, got, err, c.epoch, c.ok)
		}
		if !c.ok {
			wantErr(t, err, ErrBadName)
		} else if f := FormatTime(c.epoch); f != c.s {
			t.Errorf("FormatTime(%d) = %q, want %q", c.epoch, f, c.s)
		}
	}
}

func TestSnapshotRefs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Snapshot
		ok   bool
	}{
		{"vm/100/2026-11-29T10:00:00Z", Snapshot{Type: "vm", ID: "100", Time: 1795946400}, true},
		{"vm/100", Snapshot{Type: "vm", ID: "100"}, true},
		{"host/elsa/2020-06-26T13:56:05Z", Snapshot{Type: "host", ID: "elsa", Time: 1593179765}, true},
		{"ns/prod/ns/db/ct/my_ct.1/2020-06-26T13:56:05Z", Snapshot{NS: Namespace{"prod", "db"}, Type: "ct", ID: "my_ct.1", Time: 1593179765}, true},
		{"ns/prod/vm/100", Snapshot{NS: Namespace{"prod"}, Type: "vm", ID: "100"}, true},
		{"VM/100", Snapshot{}, false},
		{"lxc/100", Snapshot{}, false},
		{"vm", Snapshot{}, false},
		{"vm/", Snapshot{}, false},
		{"vm/100/", Snapshot{}, false},
		{"/vm/100", Snapshot{}, false},
		{"vm/-1", Snapshot{}, false},
		{"vm/100/latest", Snapshot{}, false},
		{"vm/100/2026-11-29T10:00:00Z/index.json.blob", Snapshot{}, false},
		{"ns/prod", Snapshot{}, false},
		{"ns/.bad/vm/100", Snapshot{}, false},
		{"ns/a/ns/b/ns/c/ns/d/ns/e/ns/f/ns/g/ns/h/vm/1", Snapshot{}, false},
		{"", Snapshot{}, false},
	} {
		got, err := ParseSnapshotRef(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseSnapshotRef(%q): %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if !c.ok {
			wantErr(t, err, ErrBadName)
			continue
		}
		if got.String() != c.in || got.Type != c.want.Type || got.ID != c.want.ID || got.Time != c.want.Time || got.NS.String() != c.want.NS.String() {
			t.Errorf("ParseSnapshotRef(%q) = %+v (%s), want %+v", c.in, got, got, c.want)
		}
		// Directory round trips.
		if c.want.Time != 0 {
			if d, ok := ParseSnapshotDir(got.Dir()); !ok || d.Dir() != c.in {
				t.Errorf("ParseSnapshotDir(%q) = %+v, %v", got.Dir(), d, ok)
			}
			if _, ok := ParseGroupDir(got.Dir()); ok {
				t.Errorf("ParseGroupDir accepted snapshot dir %q", got.Dir())
			}
		} else {
			if g, ok := ParseGroupDir(got.GroupDir()); !ok || g.GroupDir() != c.in || !g.IsGroup() {
				t.Errorf("ParseGroupDir(%q) = %+v, %v", got.GroupDir(), g, ok)
			}
			if _, ok := ParseSnapshotDir(got.GroupDir()); ok {
				t.Errorf("ParseSnapshotDir accepted group dir %q", got.GroupDir())
			}
		}
	}
	s := Snapshot{NS: Namespace{"prod", "db"}, Type: "vm", ID: "100", Time: 1795946400}
	if s.Dir() != "ns/prod/ns/db/vm/100/2026-11-29T10:00:00Z" || s.GroupDir() != "ns/prod/ns/db/vm/100" {
		t.Errorf("Dir %q GroupDir %q", s.Dir(), s.GroupDir())
	}
	if m := (&Manifest{BackupType: "vm", BackupID: "100", BackupTime: 1795946400}); m.Snapshot(s.NS).Dir() != s.Dir() {
		t.Error("Manifest.Snapshot")
	}
}

func TestArchiveNames(t *testing.T) {
	for _, c := range []struct {
		in, want string
		kind     ArchiveKind
	}{
		{"drive-scsi0", "drive-scsi0.img.fidx", KindFixed},
		{"drive-scsi0.img", "drive-scsi0.img.fidx", KindFixed},
		{"drive-scsi0.img.fidx", "drive-scsi0.img.fidx", KindFixed},
		{"root.pxar", "root.pxar.didx", KindDynamic},
		{"root.mpxar", "root.mpxar.didx", KindDynamic},
		{"root.ppxar", "root.ppxar.didx", KindDynamic},
		{"catalog.pcat1", "catalog.pcat1.didx", KindDynamic},
		{"root.pxar.didx", "root.pxar.didx", KindDynamic},
		{"qemu-server.conf", "qemu-server.conf.blob", KindBlob},
		{"fw.conf", "fw.conf.blob", KindBlob},
		{"index.json", "index.json.blob", KindBlob},
		{"qemu-server.conf.blob", "qemu-server.conf.blob", KindBlob},
	} {
		got := NormalizeArchiveName(c.in)
		if got != c.want || KindOf(got) != c.kind || KindOf(got).String() != c.want[strings.LastIndexByte(c.want, '.')+1:] {
			t.Errorf("NormalizeArchiveName(%q) = %q kind %v, want %q %v", c.in, got, KindOf(got), c.want, c.kind)
		}
	}
	if KindOf("x.img") != KindUnknown || KindUnknown.String() != "unknown" {
		t.Error("KindOf unknown")
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"drive-scsi0.img.fidx", true}, {"ü.blob", true}, {"", false}, {".", false}, {"..", false},
		{"a/b.blob", false}, {`a\b.blob`, false}, {"a\x00.blob", false}, {"a\n.blob", false}, {"\xff.blob", false},
		// C1 controls (U+009B starts a terminal escape) and bidi overrides
		// would reach the terminal in listings and completion.
		{"a\u009b31m.blob", false}, {"a\u202egpj.blob", false}, {"a\u200b.blob", false},
		{"a\u2028.blob", false}, {"a\u2029.blob", false}, {"a\u034f.blob", false}, {"a\u115f.blob", false},
		{"a\u3164.blob", false}, {"a\ue000.blob", false}, {"a\ufe0f.blob", false}, {"日本.img.fidx", true}, {"é.blob", true},
	} {
		if err := ValidArchiveName(c.name); (err == nil) != c.ok {
			t.Errorf("ValidArchiveName(%q) = %v, want ok=%v", c.name, err, c.ok)
		} else if err != nil {
			wantErr(t, err, ErrBadName)
		}
	}
}
