// Command manychunks is a helper of bench/fleet.sh: it writes a datastore
// with one snapshot, host/many/<time>, whose one dynamic index archive
// (root.pxar.didx) holds N distinct tiny chunks, all present and valid: a
// store with millions of distinct chunks without gigabytes of data, to
// measure what verify's memory grows with. With -snapshots N it writes N
// snapshots vm/1000 … of one 64 KiB chunk each instead (drive-scsi0.img.fidx,
// distinct random chunks): a fleet of tiny snapshots, where what counts is
// the requests per snapshot, not the bytes.
//
//	manychunks -store DIR -n 1000000 [-size 256]
//	manychunks -store DIR -snapshots 500
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
)

func main() {
	store := flag.String("store", "", "datastore directory (created)")
	n := flag.Int("n", 1_000_000, "distinct chunks")
	size := flag.Int("size", 256, "bytes per chunk")
	snaps := flag.Int("snapshots", 0, "write this many one-chunk snapshots instead")
	flag.Parse()
	var err error
	if *snaps > 0 {
		err = fleet(*store, *snaps)
	} else {
		err = run(*store, *n, *size)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manychunks:", err)
		os.Exit(1)
	}
}

func chunk(i, size int) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b, uint64(i))
	copy(b[8:], "pbsdirect manychunks benchmark chunk")
	return b
}

func run(dir string, n, size int) error {
	if dir == "" || n < 1 || size < 16 {
		return fmt.Errorf("want -store DIR, -n >= 1, -size >= 16")
	}
	st, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	var cc *crypto.Config
	// Chunks, written by one goroutine per core.
	var wg sync.WaitGroup
	errs := make(chan error, runtime.NumCPU())
	for w := range runtime.NumCPU() {
		wg.Go(func() {
			enc, err := chunkstore.NewEncoder()
			if err != nil {
				errs <- err
				return
			}
			defer enc.Close()
			for i := w; i < n; i += runtime.NumCPU() {
				data := chunk(i, size)
				blob, err := enc.Encode(data, nil, true)
				if err == nil {
					// Written directly, without the store's fsync per
					// chunk: benchmark data, made again if lost.
					p := filepath.Join(dir, filepath.FromSlash(chunkstore.ChunkRelPath(cc.ChunkDigest(data))))
					if err = os.WriteFile(p, blob, 0o640); errors.Is(err, fs.ErrNotExist) {
						if err = os.MkdirAll(filepath.Dir(p), 0o750); err == nil {
							err = os.WriteFile(p, blob, 0o640)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	// The index and the manifest.
	var idx bytes.Buffer
	dw, err := index.NewDynamicWriter(&idx, index.DynamicHeader{CTime: 1795946400})
	if err != nil {
		return err
	}
	for i := range n {
		if err := dw.Add(uint64(i+1)*uint64(size), cc.ChunkDigest(chunk(i, size))); err != nil {
			return err
		}
	}
	if err := dw.Close(); err != nil {
		return err
	}
	snap := index.Snapshot{Type: "host", ID: "many", Time: 1795946400}
	if err := st.WriteFile(ctx, snap.Dir()+"/root.pxar.didx", idx.Bytes()); err != nil {
		return err
	}
	m := &index.Manifest{BackupType: snap.Type, BackupID: snap.ID, BackupTime: snap.Time,
		Files: []index.FileInfo{{Filename: "root.pxar.didx", CryptMode: index.CryptNone, Size: dw.Size(), Csum: dw.Csum()}}}
	js, err := m.Marshal()
	if err != nil {
		return err
	}
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		return err
	}
	defer enc.Close()
	blob, err := enc.Encode(js, nil, true)
	if err != nil {
		return err
	}
	if err := st.WriteFile(ctx, snap.Dir()+"/index.json.blob", blob); err != nil {
		return err
	}
	fmt.Printf("%s: snapshot %s, %d distinct chunks of %d bytes\n", dir, snap, n, size)
	return nil
}

// fleet writes n snapshots of one distinct random 64 KiB chunk each.
func fleet(dir string, n int) error {
	st, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	enc, err := chunkstore.NewEncoder()
	if err != nil {
		return err
	}
	defer enc.Close()
	var cc *crypto.Config
	const cs = 64 << 10
	data := make([]byte, cs)
	for i := range n {
		if _, err := rand.Read(data); err != nil {
			return err
		}
		d := cc.ChunkDigest(data)
		blob, err := enc.Encode(data, nil, true)
		if err != nil {
			return err
		}
		if _, err := st.WriteChunk(ctx, d, blob); err != nil {
			return err
		}
		raw, err := index.BuildFixed(index.FixedHeader{Size: cs, ChunkSize: cs, CTime: 1795946400}, []crypto.Digest{d})
		if err != nil {
			return err
		}
		snap := index.Snapshot{Type: "vm", ID: fmt.Sprint(1000 + i), Time: 1795946400}
		if err := st.WriteFile(ctx, snap.Dir()+"/drive-scsi0.img.fidx", raw); err != nil {
			return err
		}
		m := &index.Manifest{BackupType: snap.Type, BackupID: snap.ID, BackupTime: snap.Time,
			Files: []index.FileInfo{{Filename: "drive-scsi0.img.fidx", CryptMode: index.CryptNone, Size: cs, Csum: sha256.Sum256(d[:])}}}
		js, err := m.Marshal()
		if err != nil {
			return err
		}
		mb, err := enc.Encode(js, nil, true)
		if err != nil {
			return err
		}
		if err := st.WriteFile(ctx, snap.Dir()+"/index.json.blob", mb); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d snapshots of one 64 KiB chunk\n", dir, n)
	return nil
}
