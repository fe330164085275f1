package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// catalogName is the catalog that legacy pxar backups write beside their
// archives.
const catalogName = "catalog.pcat1.didx"

// catalogLine is one entry of catalog dump: the archive's index file it
// belongs to, its path below the archive's root ("" for the archive's
// root), type (the catalog's letter: d f l h b c p s) and, for files,
// size in bytes and mtime in seconds since the epoch.
type catalogLine struct {
	Archive string  `json:"archive"`
	Path    string  `json:"path"`
	Type    string  `json:"type"`
	Size    *uint64 `json:"size,omitempty"`
	MTime   *int64  `json:"mtime,omitempty"`
}

// catalogCommand is 'pbsdirect catalog'.
func catalogCommand() commandSpec {
	return commandSpec{
		use:   "catalog COMMAND",
		short: "list the files of a snapshot's pxar archives",
		long: `Work with the file listings of container and host backups (pxar archives):
dump lists every entry, as proxmox-backup-client catalog dump prints it.`,
		example: `  pbsdirect catalog dump --store /mnt/datastore/store1 ct/200`,
		sub:     []commandSpec{catalogDumpCommand()},
	}
}

// catalogDumpCommand is 'pbsdirect catalog dump'.
func catalogDumpCommand() commandSpec {
	return commandSpec{
		use:   "dump [flags] SNAPSHOT [ARCHIVE]",
		short: "list every entry of a snapshot's pxar archives",
		long: `List every entry of the pxar archives of SNAPSHOT (only ARCHIVE's, e.g.
root.pxar, when given), one a line as proxmox-backup-client catalog dump prints
them: the type letter (d directory, f file, l symlink, h hardlink, b/c block or
character device, p FIFO, s socket) and the quoted path below
./ARCHIVE-INDEX; files add their size in bytes and mtime (local time, written
with a Z suffix as proxmox-backup-client writes it). Control and other
invisible characters in names are escaped (\n, \u{202e}, \xff).

A legacy archive (NAME.pxar.didx) is listed from the snapshot's catalog
(catalog.pcat1.didx); a split archive (NAME.mpxar.didx + NAME.ppxar.didx,
proxmox-backup-client 3.2.5 and later) from its metadata stream alone: no
chunk of the payload stream is fetched. --output-format json writes one
array of {archive, path, type, size, mtime} with raw names.`,
		example: `  pbsdirect catalog dump --store /mnt/datastore/store1 ct/200
  pbsdirect catalog dump --store s3://backups/pbs --keyfile enc.key host/web1/2026-11-29T10:00:00Z root.pxar`,
		build:    cmdCatalogDump,
		complete: completeSnapshotArchive,
	}
}

func cmdCatalogDump(fs *flag.FlagSet) commandFunc {
	var af accessFlags
	af.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() < 1 || fs.NArg() > 2 {
			return usagef("want SNAPSHOT [ARCHIVE], got %d argument(s)", fs.NArg())
		}
		if err := af.check(); err != nil {
			return err
		}
		if err := checkSnapshotRef(fs.Arg(0)); err != nil {
			return err
		}
		var only string
		if fs.NArg() == 2 {
			only = index.NormalizeArchiveName(fs.Arg(1))
			if !archive.IsPxar(only) {
				return usagef("ARCHIVE %s: not a pxar archive (.pxar)", index.DisplayText(fs.Arg(1)))
			}
		}
		sf := &af.sf
		fetchers := af.pf.fetchersFor(sf.fetchSpec())
		ns, keys, store, err := sf.openAll(ctx, stderr, keyPolicy{}, fetchers)
		if err != nil {
			return err
		}
		defer store.Close()
		src, err := snapshot.Open(ctx, store, ns, fs.Arg(0), keys)
		if err != nil {
			return err
		}
		opts := archive.Options{Fetchers: fetchers, CacheSize: af.cache, Salvaged: salvageNote(stderr, "pbsdirect")}
		var lines []catalogLine
		emit := func(l catalogLine) error {
			if sf.json() {
				lines = append(lines, l)
				return nil
			}
			_, err := io.WriteString(stdout, catalogText(l))
			return err
		}
		if err := dumpCatalog(ctx, src, only, opts, emit); err != nil {
			return err
		}
		if sf.json() {
			if lines == nil {
				lines = []catalogLine{}
			}
			return writeJSON(stdout, lines)
		}
		return nil
	}
}

// dumpCatalog calls emit for every entry of the pxar archives of src (only
// archive only's when set): legacy archives from the catalog, split ones
// from their metadata streams, in the order of their index names.
func dumpCatalog(ctx context.Context, src *snapshot.Reader, only string, opts archive.Options, emit func(catalogLine) error) error {
	m := src.Manifest()
	var legacy, split []string // index names: NAME.pxar.didx, NAME.mpxar.didx
	if only != "" {
		meta, payload, ok := archive.PxarNames(m, only)
		if !ok {
			_, err := archive.OpenPxar(ctx, src, only, opts) // names the archives the snapshot has
			return usagef("%v", err)
		}
		if payload == "" {
			legacy = append(legacy, meta)
		} else {
			split = append(split, meta)
		}
	} else {
		for _, f := range m.Files {
			switch {
			case strings.HasSuffix(f.Filename, ".pxar.didx"):
				legacy = append(legacy, f.Filename)
			case strings.HasSuffix(f.Filename, ".mpxar.didx"):
				split = append(split, f.Filename)
			}
		}
		slices.Sort(legacy)
		slices.Sort(split)
		if len(legacy)+len(split) == 0 {
			_, err := archive.OpenPxar(ctx, src, "root.pxar", opts)
			return usagef("%v", err)
		}
	}
	if len(legacy) > 0 {
		if err := dumpFromCatalog(ctx, src, legacy, opts, emit); err != nil {
			return err
		}
	}
	for _, meta := range split {
		if err := dumpMetadata(ctx, src, meta, opts, emit); err != nil {
			return err
		}
	}
	return nil
}

// dumpFromCatalog lists the legacy archives names from the snapshot's
// catalog.
func dumpFromCatalog(ctx context.Context, src *snapshot.Reader, names []string, opts archive.Options, emit func(catalogLine) error) error {
	if _, err := src.Manifest().File(catalogName); err != nil {
		return fmt.Errorf("%s has no %s to list %s from: %w", src.Snapshot(), catalogName, strings.Join(names, ", "), err)
	}
	r, err := archive.OpenSnapshot(ctx, src, catalogName, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	c, err := pxar.OpenCatalog(r, r.Size())
	if err != nil {
		return pxarError(fmt.Errorf("%s/%s: %w", src.Snapshot(), catalogName, err))
	}
	err = c.Walk(func(e pxar.CatalogEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		top, rest, _ := strings.Cut(e.Path, "/")
		if !slices.Contains(names, top) {
			return pxar.SkipDir
		}
		l := catalogLine{Archive: top, Path: rest, Type: string(rune(e.Type))}
		if e.Type == pxar.CatalogFile {
			l.Size, l.MTime = &e.Size, &e.MTime
		}
		return emit(l)
	})
	return pxarError(err)
}

// dumpMetadata lists split archive meta from its metadata stream, never
// reading its payload stream.
func dumpMetadata(ctx context.Context, src *snapshot.Reader, meta string, opts archive.Options, emit func(catalogLine) error) error {
	payloadName := strings.TrimSuffix(meta, ".mpxar.didx") + ".ppxar.didx"
	mr, err := archive.OpenSnapshot(ctx, src, meta, opts)
	if err != nil {
		return err
	}
	defer mr.Close()
	// The payload's index gives its size (references are checked against
	// it); none of its chunks is read.
	pr, err := archive.OpenSnapshot(ctx, src, payloadName, opts)
	if err != nil {
		return err
	}
	payloadSize := pr.Size()
	pr.Close()
	a, err := pxar.OpenMetadata(mr, mr.Size(), payloadSize)
	if err != nil {
		return pxarError(fmt.Errorf("%s/%s: %w", src.Snapshot(), meta, err))
	}
	err = a.Walk(func(e *pxar.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := catalogLine{Archive: meta, Type: string(rune(entryType(e)))}
		if e.Path != "." {
			l.Path = e.Path
		}
		if e.Kind == pxar.KindFile {
			size, mtime := e.Size, e.MTimeSec
			l.Size, l.MTime = &size, &mtime
		}
		return emit(l)
	})
	if err != nil {
		return pxarError(fmt.Errorf("%s/%s: %w", src.Snapshot(), meta, err))
	}
	return nil
}

// entryType is the catalog's type letter of an archive entry.
func entryType(e *pxar.Entry) byte {
	switch e.Kind {
	case pxar.KindDir:
		return pxar.CatalogDir
	case pxar.KindFile:
		return pxar.CatalogFile
	case pxar.KindSymlink:
		return pxar.CatalogSymlink
	case pxar.KindHardlink:
		return pxar.CatalogHardlink
	case pxar.KindDevice:
		if e.Mode&0o170000 == 0o060000 {
			return pxar.CatalogBlockDevice
		}
		return pxar.CatalogCharDevice
	case pxar.KindFIFO:
		return pxar.CatalogFIFO
	}
	return pxar.CatalogSocket
}

// catalogText is l's line as proxmox-backup-client catalog dump prints it:
// `d "./root.pxar.didx/etc"`, `f "./root.pxar.didx/etc/hosts" 180 2026-11-29T10:00:00Z`.
func catalogText(l catalogLine) string {
	p := "./" + l.Archive
	if l.Path != "" {
		p += "/" + l.Path
	}
	if l.Size == nil {
		return fmt.Sprintf("%s %s\n", l.Type, quotePath(p))
	}
	return fmt.Sprintf("%s %s %d %s\n", l.Type, quotePath(p), *l.Size, time.Unix(*l.MTime, 0).Format("2006-01-02T15:04:05Z"))
}

// quotePath quotes an archive path as Rust's Debug of a path does, which
// is safe on a terminal: in double quotes, with \" \\ \n \r \t \0,
// characters that do not print (controls, format characters such as bidi
// overrides, unassigned) as \u{hex} and bytes that are no UTF-8 as \xNN.
func quotePath(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == 0:
			b.WriteString(`\0`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\u{%x}`, r)
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}
