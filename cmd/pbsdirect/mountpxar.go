package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pbsdirect/pbsdirect/archive"
	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxarfs"
)

// mountFiles is what mount shows of the chunk index archives names
// (opened as readers): each pxar archive, legacy (NAME.pxar.didx) or
// split (NAME.mpxar.didx and NAME.ppxar.didx), as a directory NAME.pxar
// browsed lazily (pxarfs); every other archive as a file. A pxar archive
// whose start does not decode (damaged, or a split one missing a stream)
// is shown as its stream files instead, with a note on stderr. Errors met
// while browsing (entries that do not decode, names met twice in a
// directory, of which the first is shown) are noted on stderr once each.
func mountFiles(names []string, readers []*archive.Reader, when time.Time, stderr io.Writer) []fusefs.File {
	type streams struct {
		meta, payload *archive.Reader
		split         bool // meta is a .mpxar stream
	}
	var files []fusefs.File
	pxars := map[string]*streams{}
	var order []string
	for i, name := range names {
		if !archive.IsPxar(name) {
			files = append(files, fusefs.File{Name: archive.FileName(name), Size: readers[i].Size(), Data: readers[i], ModTime: when})
			continue
		}
		base := strings.TrimSuffix(name, ".didx")
		ext := base[strings.LastIndexByte(base, '.'):]
		base = strings.TrimSuffix(base, ext)
		s := pxars[base]
		if s == nil {
			s = &streams{}
			pxars[base] = s
			order = append(order, base)
		}
		if ext == ".ppxar" {
			s.payload = readers[i]
		} else {
			s.meta, s.split = readers[i], ext == ".mpxar"
		}
	}
	for _, base := range order {
		s := pxars[base]
		var err error
		switch {
		case s.meta == nil:
			err = fmt.Errorf("no metadata stream %s.mpxar.didx beside the payload stream", base)
		case s.split && s.payload == nil:
			err = fmt.Errorf("no payload stream %s.ppxar.didx beside the metadata stream", base)
		default:
			var pr io.ReaderAt
			var ps int64
			if s.payload != nil {
				pr, ps = s.payload, s.payload.Size()
			}
			var a *pxar.Archive
			if a, err = pxar.Open(s.meta, s.meta.Size(), pr, ps); err == nil {
				name := base + ".pxar"
				logf := func(msg string) {
					fmt.Fprintf(stderr, "pbsdirect mount: %s: %s\n", index.DisplayText(name), index.DisplayText(msg))
				}
				files = append(files, fusefs.File{Name: name, Node: pxarfs.NewRoot(a, pxarfs.Options{Log: logf})})
				continue
			}
		}
		fmt.Fprintf(stderr, "pbsdirect mount: %s.pxar: cannot browse it: %s; serving its stream(s) as files\n", index.DisplayText(base), index.DisplayText(err.Error()))
		for i, name := range names {
			if archive.IsPxar(name) && (readers[i] == s.meta || readers[i] == s.payload) {
				files = append(files, fusefs.File{Name: archive.FileName(name), Size: readers[i].Size(), Data: readers[i], ModTime: when})
			}
		}
	}
	return files
}
