package restore

import (
	"context"
	"fmt"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// ImageHead returns the first n bytes of plan's image (fewer for a smaller
// image): the chunks holding them are read from store and pass the
// restore's check (crypt mode, decryption with key when encrypted, length,
// digest), or failing that a copy kept aside as damaged that passes it
// (chunkstore.Salvage); zero ranges read as zeros. It returns nil, nil when plan no
// longer covers the image (a resume dropped chunks). Errors name the
// chunk's digest and offset.
func ImageHead(ctx context.Context, store chunkstore.Store, plan *Plan, n int, encrypted bool, key *crypto.Config) ([]byte, error) {
	if plan.dropped {
		return nil, nil
	}
	head := make([]byte, min(uint64(n), plan.Size))
	var dec *chunkstore.Decoder
	for i := range plan.Chunks {
		c := &plan.Chunks[i]
		for _, off := range plan.Offsets(c) {
			if off >= uint64(len(head)) {
				continue
			}
			if dec == nil {
				var err error
				if dec, err = chunkstore.NewDecoderLimit(max(plan.maxChunk(), 8<<20)); err != nil {
					return nil, err
				}
				defer dec.Close()
			}
			var data []byte
			raw, err := store.ReadChunk(ctx, c.Digest, nil, chunkstore.ChunkLimit(c.Length))
			if err == nil {
				data, err = dec.DecodeChunk(nil, raw, c.Digest, c.Length, encrypted, key)
			}
			if chunkstore.Proven(err) {
				// As the restore itself: a .bad copy that passes.
				_, _, err = chunkstore.Salvage(ctx, store, c.Digest, err, nil, chunkstore.ChunkLimit(c.Length), func(raw []byte) error {
					var derr error
					data, derr = dec.DecodeChunk(nil, raw, c.Digest, c.Length, encrypted, key)
					return derr
				})
			}
			if err != nil {
				return nil, fmt.Errorf("chunk %s at offset %d: %w", c.Digest, off, err)
			}
			copy(head[off:], data)
		}
	}
	return head, nil
}
