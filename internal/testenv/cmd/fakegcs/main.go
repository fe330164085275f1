// Command fakegcs runs fake-gcs-server's in-process server (as
// testenv.StartGCS does) standalone, for benchmarks, holding one directory
// tree as objects of one bucket:
//
//	go run ./internal/testenv/cmd/fakegcs -bucket bench -prefix vm-plain -dir build/bench/stores/bench/vm-plain
//
// Every file below -dir becomes object "PREFIX/REL" (in memory). It prints
// "fakegcs listening on http://ADDR" on stdout once ready, for
// STORAGE_EMULATOR_HOST, and serves until SIGINT/SIGTERM.
//
// Test and benchmark support only (bench/*.sh build it), like everything
// under internal/.
package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func main() {
	bucket := flag.String("bucket", "bench", "bucket name")
	prefix := flag.String("prefix", "", "object name prefix of the tree")
	dir := flag.String("dir", "", "directory tree to serve (required)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "fakegcs: -dir is required")
		os.Exit(2)
	}
	var objs []fakestorage.Object
	err := filepath.WalkDir(*dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(*dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if *prefix != "" {
			name = *prefix + "/" + name
		}
		objs = append(objs, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: *bucket, Name: name}, Content: b})
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakegcs:", err)
		os.Exit(1)
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		InitialObjects: objs,
		Scheme:         "http",
		Host:           "127.0.0.1",
		PublicHost:     "127.0.0.1",
		Writer:         io.Discard,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakegcs:", err)
		os.Exit(1)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: *bucket})
	fmt.Printf("fakegcs listening on %s\n", srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Stop()
}
