// Package pxar reads and writes Proxmox file archives (pxar): the legacy
// single-stream form (format version 1, file contents inline) and the split
// form (format version 2: a metadata stream whose regular files carry
// PAYLOAD_REF items into a separate payload stream).
//
// The package does no I/O of its own: a Decoder reads through io.ReaderAt
// values (in pbsdirect, the archive reader over a dynamic index), and the
// Encoder writes to io.Writer values. Every length, offset and count read
// from an archive is checked against the stream size and the limits below
// before anything is allocated; errors are *Error values naming the path
// inside the archive, the stream and the byte offset.
package pxar

import (
	"encoding/binary"
	"math/bits"
)

// Item type values (the first 8 bytes of every item header). Each is the
// SipHash-2-4 (keys hashKey1, hashKey2) of a fixed "__PROXMOX_FORMAT_…__"
// string.
const (
	typeFormatVersion     uint64 = 0x730f6c75df16a40d
	typeEntry             uint64 = 0xd5956474e588acef
	typeEntryV1           uint64 = 0x11da850a1c1cceff
	typePrelude           uint64 = 0xe309d79d9f7b771b
	typeFilename          uint64 = 0x16701121063917b3
	typeSymlink           uint64 = 0x27f971e7dbf5dc5f
	typeDevice            uint64 = 0x9fc9e906586d5ce9
	typeXattr             uint64 = 0x0dab0229b57dcd03
	typeACLUser           uint64 = 0x2ce8540a457d55b8
	typeACLGroup          uint64 = 0x136e3eceb04c03ab
	typeACLGroupObj       uint64 = 0x10868031e9582876
	typeACLDefault        uint64 = 0xbbbb13415a6896f5
	typeACLDefaultUser    uint64 = 0xc89357b40532cd1f
	typeACLDefaultGroup   uint64 = 0xf90a8a5816038ffe
	typeFCaps             uint64 = 0x2da9dd9db5f7fb67
	typeQuotaProjID       uint64 = 0xe07540e82f7d1cbb
	typeHardlink          uint64 = 0x51269c8422bd7275
	typePayload           uint64 = 0x28147a1b0b7c1a25
	typePayloadRef        uint64 = 0x419d3d6bc4ba977e
	typeGoodbye           uint64 = 0x2fec4fa642d5731d
	goodbyeTailMarker     uint64 = 0xef5eed5b753e1555
	typePayloadStartMark  uint64 = 0x834c68c2194a4ed2
	typePayloadTailMarker uint64 = 0x6c72b78b984c81b5
)

// The goodbye table's name hash keys (the first 16 bytes of the SHA-1 of
// "PROXMOX ARCHIVE FORMAT").
const (
	hashKey1 uint64 = 0x83ac3f1cfbb450db
	hashKey2 uint64 = 0xaa4f1b6879369fbd
)

// Sizes of the fixed structures, in bytes.
const (
	headerSize      = 16 // type u64, full size u64 (header included)
	goodbyeItemSize = 24 // hash u64, offset u64, size u64
	statSize        = 40 // mode, flags u64; uid, gid u32; mtime secs i64, nanos u32, pad u32
	statV1Size      = 32 // mode, flags u64; uid, gid u32; mtime u64 nanoseconds
)

// Limits of the format and of this decoder.
const (
	// MaxNameLen is the longest file name (and hardlink or symlink
	// target) in bytes the format allows, without its NUL terminator.
	MaxNameLen = 4096
	// MaxXattrLen is the largest XATTR or FCAPS item content in bytes
	// (name, NUL and value).
	MaxXattrLen = 255 + 64*1024
	// MaxMetadataBytes bounds the xattr, ACL and fcaps bytes of one entry.
	MaxMetadataBytes = 16 << 20
	// MaxDirEntries bounds the entries of one directory (its goodbye
	// table is read whole: 24 bytes an entry).
	MaxDirEntries = 1 << 20
	// MaxDepth is the deepest directory nesting Walk and the decoder
	// accept (the root's children are at depth 1).
	MaxDepth = 1024
)

// Linux file type bits of Entry.Mode, fixed by the format.
const (
	modeTypeMask = 0o170000
	modeSocket   = 0o140000
	modeSymlink  = 0o120000
	modeRegular  = 0o100000
	modeBlock    = 0o060000
	modeDir      = 0o040000
	modeChar     = 0o020000
	modeFIFO     = 0o010000
)

// hashName is the goodbye table hash of a file name: SipHash-2-4 keyed
// with hashKey1 and hashKey2.
func hashName(name []byte) uint64 {
	return sipHash24(hashKey1, hashKey2, name)
}

// sipHash24 is SipHash-2-4 of msg under the 128-bit key (k0, k1).
func sipHash24(k0, k1 uint64, msg []byte) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := binary.LittleEndian.Uint64(msg)
		v3 ^= m
		round()
		round()
		v0 ^= m
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}

// bstOrder returns the permutation that lays a sorted array of n items out
// as an implicit binary search tree (item i's left child at 2i+1, right
// child at 2i+2), the goodbye table order: perm[dest] = src. Balanced as
// casync and pxar do: the left subtree is filled up to a complete tree
// first.
func bstOrder(n int) []int {
	perm := make([]int, n)
	if n == 0 {
		return perm
	}
	var place func(n, o, e, i int)
	place = func(n, o, e, i int) {
		p := 1 << e
		t := p + p>>1 - 1
		var m int
		if n > t {
			m = p - 1
		} else {
			m = p - 1 - (t - n)
		}
		perm[i] = o + m
		if m > 0 {
			place(m, o, e-1, 2*i+1)
		}
		if m+1 < n {
			place(n-m-1, o+m+1, e-1, 2*i+2)
		}
	}
	place(n, 0, bits.Len(uint(n))-1, 0)
	return perm
}
