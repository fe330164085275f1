// Command zstdcgo measures whether a cgo libzstd decoder would be worth
// offering beside klauspost/compress, the pure-Go decoder pbsdirect uses:
// it decodes the zstd frames of a datastore's compressed chunks with both,
// single-threaded, into a reused 4 MiB buffer, alternating rounds, and
// prints MB/s of plaintext and the ratio. It lives in its own module so the
// main module never links cgo or libzstd.
//
//	cd bench/zstdcgo && go run . -rounds 5 ../../build/demo/datastore
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	ddzstd "github.com/DataDog/zstd"
	"github.com/klauspost/compress/zstd"
)

func main() {
	rounds := flag.Int("rounds", 5, "alternating measurement rounds")
	maxChunks := flag.Int("chunks", 200, "compressed chunks to use at most")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zstdcgo [-rounds N] [-chunks N] DATASTORE_DIR")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(flag.Arg(0), ".chunks", "*", "*"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sort.Strings(files)
	var frames [][]byte
	var compressed int
	for _, f := range files {
		b, err := os.ReadFile(f)
		// Unencrypted zstd-compressed blobs only: magic 31b958426fb6a37f, 12-byte header.
		if err != nil || len(b) <= 12 || string(b[:8]) != "\x31\xb9\x58\x42\x6f\xb6\xa3\x7f" {
			continue
		}
		frames = append(frames, b[12:])
		compressed += len(b) - 12
		if len(frames) == *maxChunks {
			break
		}
	}
	if len(frames) == 0 {
		fmt.Fprintln(os.Stderr, "no compressed plain chunks found")
		os.Exit(1)
	}
	dst := make([]byte, 0, 16<<20)
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	cctx := ddzstd.NewCtx()
	goDecode := func() int {
		n := 0
		for _, f := range frames {
			out, err := kd.DecodeAll(f, dst[:0])
			if err != nil {
				panic(err)
			}
			n += len(out)
		}
		return n
	}
	cgoDecode := func() int {
		n := 0
		for _, f := range frames {
			out, err := cctx.Decompress(dst[:cap(dst)], f)
			if err != nil {
				panic(err)
			}
			n += len(out)
		}
		return n
	}
	measure := func(fn func() int) float64 {
		t := time.Now()
		n := fn()
		return float64(n) / time.Since(t).Seconds() / 1e6
	}
	var goBest, cgoBest float64
	for r := 0; r < *rounds; r++ {
		goBest = max(goBest, measure(goDecode))
		cgoBest = max(cgoBest, measure(cgoDecode))
	}
	fmt.Printf("%d chunks, %.1f MB compressed\n", len(frames), float64(compressed)/1e6)
	fmt.Printf("klauspost/compress (pure Go): %7.0f MB/s\n", goBest)
	fmt.Printf("libzstd via cgo (DataDog):    %7.0f MB/s\n", cgoBest)
	fmt.Printf("cgo / pure Go:                %7.2f×\n", cgoBest/goBest)
}
