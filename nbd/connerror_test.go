package nbd

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestConnError: a client gone without NBD_CMD_DISC (EPIPE, ECONNRESET) is
// logged as one disconnect line, not as the socket error; an unnamed Unix
// peer is "client"; other errors keep their text.
func TestConnError(t *testing.T) {
	unix := &net.UnixAddr{Name: "@", Net: "unix"}
	tcp := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	write := func(e syscall.Errno) error {
		return &net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("write", e)}
	}
	for _, c := range []struct {
		remote net.Addr
		err    error
		want   string
	}{
		{unix, write(syscall.EPIPE), "client disconnected without NBD_CMD_DISC"},
		{tcp, write(syscall.ECONNRESET), "client 127.0.0.1:4242 disconnected without NBD_CMD_DISC"},
		{unix, errors.New("bad magic"), "client: bad magic"},
		{nil, errors.New("x"), "client: x"},
	} {
		if got := connError(c.remote, c.err); got != c.want {
			t.Errorf("connError(%v, %v) = %q, want %q", c.remote, c.err, got, c.want)
		}
	}
}
