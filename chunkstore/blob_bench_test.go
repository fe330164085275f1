package chunkstore

import (
	stdsha256 "crypto/sha256"
	"testing"

	simdsha256 "github.com/minio/sha256-simd"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Run with: go test -run x -bench . -benchtime 20x ./chunkstore/

const benchChunkSize = 4 << 20 // the PBS default chunk size

// benchChunk is a deterministic 4 MiB text-like chunk that zstd (fastest)
// compresses about 2.9×, like typical file-system data.
func benchChunk() []byte { return textLike(benchChunkSize, 42) }

func BenchmarkDecode4MiB(b *testing.B) {
	data := benchChunk()
	cc := keyA(b)
	e, d := newCodec(b)
	for _, bc := range []struct {
		name string
		cc   *crypto.Config
	}{
		{"compressed", nil},
		{"encrypted-compressed", cc},
	} {
		b.Run(bc.name, func(b *testing.B) {
			blob, err := e.Encode(data, bc.cc, true)
			if err != nil {
				b.Fatal(err)
			}
			if k, _ := Kind(blob); !k.Compressed() {
				b.Fatalf("bench chunk did not compress: %v", k)
			}
			dst := make([]byte, 0, len(data))
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				out, _, err := d.Decode(dst, blob, bc.cc, benchChunkSize)
				if err != nil || len(out) != len(data) {
					b.Fatalf("decode: %d bytes, %v", len(out), err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(len(blob)), "ratio")
		})
	}
}

// BenchmarkChunkDigest4MiB is the digest check after decoding (§2.8).
func BenchmarkChunkDigest4MiB(b *testing.B) {
	data := benchChunk()
	for _, bc := range []struct {
		name string
		cc   *crypto.Config
	}{
		{"plain", nil},
		{"keyed", keyA(b)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_ = bc.cc.ChunkDigest(data)
			}
		})
	}
}

// BenchmarkSHA256_4MiB compares Go's crypto/sha256 (SHA-NI / AVX2 assembly)
// with github.com/minio/sha256-simd.
func BenchmarkSHA256_4MiB(b *testing.B) {
	data := benchChunk()
	want := stdsha256.Sum256(data)
	if simdsha256.Sum256(data) != want {
		b.Fatal("sha256-simd and crypto/sha256 disagree")
	}
	b.Run("crypto-sha256", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_ = stdsha256.Sum256(data)
		}
	})
	b.Run("minio-sha256-simd", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_ = simdsha256.Sum256(data)
		}
	})
}
