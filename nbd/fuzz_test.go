package nbd_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/nbd"
)

// FuzzServeConn feeds a client's bytes (after the greeting) to a server:
// whatever they are, it answers, never panics, and ends when the client
// goes away.
func FuzzServeConn(f *testing.F) {
	opt := func(o uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, 0x49484156454F5054)
		b = binary.BigEndian.AppendUint32(b, o)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	flags := binary.BigEndian.AppendUint32(nil, 3)
	goDisk := append(binary.BigEndian.AppendUint32(nil, 4), "disk\x00\x00"...)
	req := func(typ uint16, off uint64, n uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0x25609513)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, typ)
		b = binary.BigEndian.AppendUint64(b, 1)
		b = binary.BigEndian.AppendUint64(b, off)
		return binary.BigEndian.AppendUint32(b, n)
	}
	f.Add(flags)
	f.Add(append(append(flags, opt(8, nil)...), opt(3, nil)...))
	f.Add(append(append(append(flags, opt(8, nil)...), opt(7, goDisk)...), req(0, 0, 4096)...))
	f.Add(append(append(flags, opt(7, goDisk)...), req(7, 1<<62, 1<<31)...))
	f.Add(append(append(flags, opt(1, []byte("disk"))...), req(1, 0, 8)...))
	data := bytes.Repeat([]byte{1, 2, 3, 0}, 4096)
	srv := &nbd.Server{Exports: []nbd.Export{{
		Name: "disk", Size: int64(len(data)), Data: bytes.NewReader(data),
		Extents: func(off, n int64) []nbd.Extent { return []nbd.Extent{{Offset: off, Length: n, Zero: off >= 8192}} },
	}}}
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			srv.ServeConn(context.Background(), server)
			close(done)
		}()
		go io.Copy(io.Discard, client) // replies
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server still serving a closed connection")
		}
	})
}
