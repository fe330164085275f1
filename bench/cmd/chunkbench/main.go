// Command chunkbench is a helper of the benchmark suite (bench/run.sh). It
// works on a local datastore and one fixed or dynamic index archive of a
// snapshot:
//
//	chunkbench decode -store DIR [-keyfile K] SNAPSHOT ARCHIVE
//	    decodes the archive's own unique non-zero chunks single-threaded
//	    (CRC, AES-256-GCM, zstd, SHA-256 digest check: the restore
//	    pipeline's per-chunk work) and prints one JSON object with the
//	    plaintext throughput in MB/s (10^6 bytes per second) and the CPU
//	    time the decoding took (user + system of this process, getrusage)
//	    in nanoseconds per plaintext byte. The chunks are read into memory
//	    first (not timed); at most -max-mib of them.
//
//	chunkbench touch -jobs J -writers W -fetchers F [-encrypted] [-max-chunk BYTES]
//	    maps the buffers of a restore with these settings (the jobs,
//	    writers and fetchers of its JSON summary) exactly as the restore
//	    pipeline does, touches every page of them once and prints one JSON
//	    object with the bytes touched and the CPU time it took (getrusage):
//	    the fixed cost per run of first-touching the restore's buffers,
//	    which the decode above never pays (its buffers are warm).
//
//	chunkbench list -store DIR [-keyfile K] SNAPSHOT ARCHIVE
//	    prints the datastore-relative path of every unique non-zero chunk
//	    (".chunks/abcd/abcd…"), one a line, e.g. to download exactly those
//	    chunks with another tool.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chunkbench decode|list -store DIR [-keyfile K] SNAPSHOT ARCHIVE | touch -jobs J -writers W -fetchers F")
		os.Exit(2)
	}
	cmd := os.Args[1]
	if cmd == "touch" {
		if err := touch(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "chunkbench:", err)
			os.Exit(1)
		}
		return
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	store := fs.String("store", "", "datastore directory (required)")
	keyfile := fs.String("keyfile", "", "key file (unprotected, --kdf none) for an encrypted archive")
	maxMiB := fs.Int("max-mib", 1024, "decode: load at most this many MiB of encoded chunks")
	minSecs := fs.Float64("min-seconds", 2, "decode: repeat the pass over the chunks until at least this long")
	fs.Parse(os.Args[2:])
	if *store == "" || fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: chunkbench decode|list -store DIR [-keyfile K] SNAPSHOT ARCHIVE")
		os.Exit(2)
	}
	if err := run(cmd, *store, *keyfile, fs.Arg(0), index.NormalizeArchiveName(fs.Arg(1)), *maxMiB, *minSecs); err != nil {
		fmt.Fprintln(os.Stderr, "chunkbench:", err)
		os.Exit(1)
	}
}

func run(cmd, root, keyfile, ref, archive string, maxMiB int, minSecs float64) error {
	ctx := context.Background()
	var cc *crypto.Config
	if keyfile != "" {
		data, err := os.ReadFile(keyfile)
		if err != nil {
			return err
		}
		kf, err := crypto.ParseKeyFile(data)
		if err != nil {
			return err
		}
		if _, cc, err = kf.Open(ctx, nil); err != nil {
			return fmt.Errorf("key file %s (must be created with --kdf none): %w", keyfile, err)
		}
	}
	store, err := chunkstore.OpenLocal(root, false)
	if err != nil {
		return err
	}
	defer store.Close()
	snap, err := snapshot.Resolve(ctx, store, nil, ref)
	if err != nil {
		return err
	}
	m, err := snapshot.LoadManifest(ctx, store, snap, cc)
	if err != nil {
		return err
	}
	plan, fi, err := restore.LoadPlan(ctx, store, snap.Dir(), m, archive, cc)
	if err != nil {
		return err
	}
	switch cmd {
	case "list":
		w := os.Stdout
		for _, c := range plan.Chunks {
			if _, err := fmt.Fprintln(w, chunkstore.ChunkRelPath(c.Digest)); err != nil {
				return err
			}
		}
		return nil
	case "decode":
	default:
		return fmt.Errorf("unknown command %q (want decode or list)", cmd)
	}

	encrypted := fi.CryptMode == index.CryptEncrypt
	if !encrypted {
		cc = nil
	}
	type loaded struct {
		raw    []byte
		digest crypto.Digest
		length int
	}
	var chunks []loaded
	var encBytes int64
	for _, c := range plan.Chunks {
		if encBytes >= int64(maxMiB)<<20 {
			break
		}
		raw, err := store.ReadChunk(ctx, c.Digest, nil, chunkstore.ChunkLimit(c.Length))
		if err != nil {
			return err
		}
		chunks = append(chunks, loaded{raw: raw, digest: c.Digest, length: c.Length})
		encBytes += int64(len(raw))
	}
	if len(chunks) == 0 {
		return writeJSON(map[string]any{"chunks": 0, "mb-per-second": 0})
	}
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		return err
	}
	defer dec.Close()
	// As in the pipeline: the blob is decoded where it lies (decrypted over
	// itself, an uncompressed chunk's plaintext left in place), a
	// compressed one into a reused buffer; the digest is checked. Decoding
	// in place consumes the blob, so each decode gets a fresh copy in a
	// work buffer with room for the tag, made outside the CPU time counted.
	out := make([]byte, 0, plan.ChunkSize+1)
	work := make([]byte, 0, plan.ChunkSize+chunkstore.EncryptedHeaderSize+crypto.TagSize+1)
	var plain int64
	var cpu time.Duration
	passes := 0
	start := time.Now()
	for {
		for _, c := range chunks {
			work = append(work[:0], c.raw...)
			cpu0, err := cpuTime()
			if err != nil {
				return err
			}
			data, err := dec.DecodeChunkInPlace(out, work, c.digest, c.length, encrypted, cc)
			cpu1, terr := cpuTime()
			if err != nil {
				return fmt.Errorf("chunk %s: %w", c.digest, err)
			}
			if terr != nil {
				return terr
			}
			cpu += cpu1 - cpu0
			plain += int64(len(data))
		}
		passes++
		if time.Since(start).Seconds() >= minSecs {
			break
		}
	}
	el := time.Since(start).Seconds()
	var unique int64
	for _, c := range plan.Chunks {
		unique += int64(c.Length)
	}
	return writeJSON(map[string]any{
		"chunks":          len(chunks),
		"encoded-bytes":   encBytes,
		"passes":          passes,
		"plain-bytes":     plain,
		"seconds":         el,
		"mb-per-second":   float64(plain) / 1e6 / el,
		"cpu-seconds":     cpu.Seconds(),
		"cpu-ns-per-byte": float64(cpu.Nanoseconds()) / float64(plain),
		"encrypted":       encrypted,
		"cores":           runtime.NumCPU(),
		"chunks-in-index": len(plan.Chunks),
		"unique-bytes":    unique,
	})
}

// cpuTime returns the user + system CPU time this process has used so far
// (getrusage RUSAGE_SELF), or the system call's error.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func writeJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	return enc.Encode(v)
}

// touch runs the touch command with its arguments.
func touch(args []string) error {
	fs := flag.NewFlagSet("touch", flag.ExitOnError)
	jobs := fs.Int("jobs", 0, "the restore's jobs (its JSON summary's \"jobs\")")
	writers := fs.Int("writers", 0, "the restore's writers")
	fetchers := fs.Int("fetchers", 0, "the restore's fetchers")
	encrypted := fs.Bool("encrypted", false, "an encrypted archive")
	maxChunk := fs.Int("max-chunk", 4<<20, "the largest chunk in bytes")
	fs.Parse(args)
	if *jobs <= 0 || *fetchers <= 0 || fs.NArg() != 0 {
		return fmt.Errorf("usage: chunkbench touch -jobs J -writers W -fetchers F [-encrypted] [-max-chunk BYTES]")
	}
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := restore.FirstTouch(restore.Options{Jobs: *jobs, Writers: *writers, Fetchers: *fetchers, Encrypted: *encrypted}, *maxChunk)
	if err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	return writeJSON(map[string]any{
		"bytes":       n,
		"seconds":     el,
		"cpu-seconds": (cpu1 - cpu0).Seconds(),
	})
}
