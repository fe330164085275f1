// Package nbd is a read-only Network Block Device server
// (https://github.com/NetworkBlockDevice/nbd, doc/proto.md) over io.ReaderAt
// exports. It speaks fixed newstyle negotiation with NBD_OPT_LIST,
// NBD_OPT_INFO and NBD_OPT_GO (export size, name, description and block
// size hints), NBD_OPT_EXPORT_NAME for old clients, structured replies and
// the base:allocation meta context: NBD_CMD_BLOCK_STATUS reports an
// export's zero extents as holes that read as zeros, and structured reads
// send them as holes instead of bytes. Writes are refused (read-only).
//
// Each connection reads requests in one goroutine and serves up to
// Server.MaxInFlight of them at once, replying out of order; any number of
// connections may read one export (NBD_FLAG_CAN_MULTI_CONN). Memory: the
// read buffers of all connections together, in use and kept for reuse,
// stay within Server.MaxBufferBytes (a request larger than that is served
// alone); requests beyond it wait for buffers, in arrival order, whatever
// the number of connections. While several connections are open, one
// holds at most half of the buffers, and a connection whose replies are
// not read within Server.WriteTimeout is closed, which frees its buffers.
//
// The package knows nothing of what it serves.
package nbd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Extent is a byte range of an export, [Offset, Offset+Length), that either
// reads as zeros without being stored (Zero: a hole) or holds data.
type Extent struct {
	Offset, Length int64
	Zero           bool
}

// Export is one read-only export.
type Export struct {
	// Name is what clients ask for (NBD_OPT_GO); the empty name selects
	// the first export.
	Name string
	// Description is shown by clients (NBD_INFO_DESCRIPTION); optional.
	Description string
	// Size is the export's size in bytes.
	Size int64
	// Data serves reads; it must be safe for concurrent use.
	Data io.ReaderAt
	// Extents, if set, returns the extents covering [off, off+length) in
	// order; Zero extents are reported to base:allocation as holes.
	// Without it the whole export is data.
	Extents func(off, length int64) []Extent
	// PreferredBlockSize is the block size hint in bytes (a power of two
	// from 512 to 32 MiB; default 4096): reads of this size, aligned, are
	// served best.
	PreferredBlockSize uint32
}

// LoggedError is implemented by read errors that their Export's Data has logged
// already; Logged reports whether it did.
type LoggedError interface {
	Logged() bool
}

// Server serves exports over NBD. Its fields must not change once it serves.
type Server struct {
	Exports []Export
	// MaxInFlight is the number of requests served at once per connection;
	// default 8.
	MaxInFlight int
	// Log, if set, receives connection errors and failed reads, one line
	// each, except reads whose error (or an error it wraps) is a LoggedError
	// whose Logged reports true: the Export's Data has logged them itself
	// (an archive reader logs each damaged chunk once, however many reads
	// fail on it).
	Log func(msg string)

	// MaxBufferBytes bounds the bytes of read buffers (each the request's
	// length rounded up to a power of two, at least 4 KiB) that all
	// connections hold together, in use or kept free for reuse: a read
	// waits until its buffer fits, and the reads that came after it wait
	// too (first come, first served). While more than one connection is
	// open, one connection holds at most half of the bound (its first
	// buffer excepted) and its further reads let those of others pass; a
	// lone connection may use the whole bound. A read larger than the
	// bound is served when no other buffer is in use. Default
	// DefaultBufferBytes.
	MaxBufferBytes int64

	// WriteTimeout bounds the time one reply may take to be written (the
	// client must read it): a connection whose reply is not written
	// within it is closed, its requests end and their read buffers go
	// back to the budget, and the closure is logged naming the client.
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration

	budget budget // read buffers shared by all connections
}

// DefaultBufferBytes is the default Server.MaxBufferBytes: 32 MiB, room
// for one read of the largest size a client may ask for (32 MiB) or, say,
// eight of 4 MiB at once.
const DefaultBufferBytes = 32 << 20

// DefaultWriteTimeout is the default Server.WriteTimeout: 60 s, time for a
// reply of the largest size (32 MiB) at about 0.5 MiB/s.
const DefaultWriteTimeout = 60 * time.Second

// Serve accepts connections on l until ctx is done or l fails, serving
// each in its own goroutine, and returns after every connection ended. It
// closes l when ctx is done and returns nil then.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var err error
	for {
		c, aerr := l.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = aerr
			}
			break
		}
		wg.Go(func() {
			if err := s.ServeConn(ctx, c); err != nil {
				s.logf("%s", connError(c.RemoteAddr(), err))
			}
		})
	}
	wg.Wait()
	return err
}

// connError is the one log line for a connection that ended with err: a
// client that went away without NBD_CMD_DISC (broken pipe, reset) is said
// as a disconnect, other errors as they are; remote names the client, or
// "client" for an unnamed Unix socket peer ("@" or "").
func connError(remote net.Addr, err error) string {
	who := "client"
	if remote != nil {
		if a := remote.String(); a != "" && a != "@" {
			who = "client " + a
		}
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return who + " disconnected without NBD_CMD_DISC"
	}
	return fmt.Sprintf("%s: %v", who, err)
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// ServeConn negotiates with the client on c and serves its requests until it
// disconnects, ctx is done or the connection fails; it closes c. A clean
// disconnect (NBD_CMD_DISC, NBD_OPT_ABORT) returns nil.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) error {
	defer c.Close()
	cn := &conn{s: s, c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10), dead: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { cn.fail(context.Cause(ctx)) })
	defer stop()
	ex, err := cn.negotiate()
	if err != nil || ex == nil {
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil
		}
		return err
	}
	err = cn.transmit(ex)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// conn is one client connection.
type conn struct {
	s          *Server
	c          net.Conn
	r          *bufio.Reader
	w          *bufio.Writer
	wmu        sync.Mutex // serializes replies in transmission
	structured bool       // NBD_OPT_STRUCTURED_REPLY was acknowledged
	allocation bool       // base:allocation was selected
	noZeroes   bool
	share      *bufShare // its part of the read buffers, in transmission

	failMu  sync.Mutex
	failErr error         // why the connection was closed by fail
	dead    chan struct{} // closed by fail
}

// fail closes the connection for err (not nil) unless it was closed so
// before: the reads waiting for buffers end, and so does the request loop.
func (cn *conn) fail(err error) {
	cn.failMu.Lock()
	defer cn.failMu.Unlock()
	if cn.failErr != nil {
		return
	}
	cn.failErr = err
	close(cn.dead)
	cn.c.Close()
}

// failed returns the error given to fail, or nil.
func (cn *conn) failed() error {
	cn.failMu.Lock()
	defer cn.failMu.Unlock()
	return cn.failErr
}

// errRepliesNotRead is wrapped by the error of a connection closed because
// a reply was not written within Server.WriteTimeout.
var errRepliesNotRead = errors.New("replies not read")

// lockWrite takes the right to write a reply, which must be written
// within the write timeout; unlock with cn.wmu.Unlock.
func (cn *conn) lockWrite() {
	cn.wmu.Lock()
	wt := cn.s.WriteTimeout
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	cn.c.SetWriteDeadline(time.Now().Add(wt))
}

// flush ends a reply, sending what is buffered. A reply not written
// within the write timeout returns an error wrapping errRepliesNotRead.
// cn.wmu is held.
func (cn *conn) flush() error {
	err := cn.w.Flush()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		wt := cn.s.WriteTimeout
		if wt <= 0 {
			wt = DefaultWriteTimeout
		}
		return fmt.Errorf("%w within %v: connection closed, its read buffers released", errRepliesNotRead, wt)
	}
	return err
}

// export returns the export called name ("" = the first), or nil.
func (s *Server) export(name string) *Export {
	for i := range s.Exports {
		if s.Exports[i].Name == name || (name == "" && i == 0) {
			return &s.Exports[i]
		}
	}
	return nil
}

// errProtocol is wrapped by errors for clients that break the protocol.
var errProtocol = errors.New("nbd protocol error")

// negotiate runs the fixed newstyle handshake and option haggling and
// returns the export to transmit, or nil when the client aborted.
func (cn *conn) negotiate() (*Export, error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], magicNBD)
	binary.BigEndian.PutUint64(hello[8:], magicOpt)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	if _, err := cn.w.Write(hello[:]); err != nil {
		return nil, err
	}
	if err := cn.w.Flush(); err != nil {
		return nil, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(cn.r, cf[:]); err != nil {
		return nil, err
	}
	flags := binary.BigEndian.Uint32(cf[:])
	if flags&flagFixedNewstyle == 0 {
		return nil, fmt.Errorf("%w: client does not speak fixed newstyle (flags %#x)", errProtocol, flags)
	}
	cn.noZeroes = flags&flagNoZeroes != 0
	for {
		var h [16]byte
		if _, err := io.ReadFull(cn.r, h[:]); err != nil {
			return nil, err
		}
		if m := binary.BigEndian.Uint64(h[:]); m != magicOpt {
			return nil, fmt.Errorf("%w: option magic %#x", errProtocol, m)
		}
		opt := binary.BigEndian.Uint32(h[8:])
		n := binary.BigEndian.Uint32(h[12:])
		if n > maxOptionLen {
			return nil, fmt.Errorf("%w: option %d of %d bytes", errProtocol, opt, n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(cn.r, data); err != nil {
			return nil, err
		}
		ex, done, err := cn.option(opt, data)
		if err != nil {
			return nil, err
		}
		if err := cn.w.Flush(); err != nil {
			return nil, err
		}
		if done {
			return ex, nil
		}
	}
}

// option answers one option; done ends negotiation (with ex, or nil after
// NBD_OPT_ABORT).
func (cn *conn) option(opt uint32, data []byte) (ex *Export, done bool, err error) {
	switch opt {
	case optExportName:
		ex := cn.s.export(string(data))
		if ex == nil {
			return nil, false, fmt.Errorf("client asked for unknown export %q", data)
		}
		var b [10 + zeroPadAfterExport]byte
		binary.BigEndian.PutUint64(b[0:], uint64(ex.Size))
		binary.BigEndian.PutUint16(b[8:], cn.transmissionFlags())
		n := 10
		if !cn.noZeroes {
			n += zeroPadAfterExport
		}
		_, err := cn.w.Write(b[:n])
		return ex, true, err
	case optAbort:
		return nil, true, cn.reply(opt, repAck, nil)
	case optList:
		if len(data) != 0 {
			return nil, false, cn.reply(opt, repErrInvalid, []byte("NBD_OPT_LIST takes no data"))
		}
		for _, e := range cn.s.Exports {
			b := binary.BigEndian.AppendUint32(nil, uint32(len(e.Name)))
			b = append(b, e.Name...)
			b = append(b, e.Description...)
			if err := cn.reply(opt, repServer, b); err != nil {
				return nil, false, err
			}
		}
		return nil, false, cn.reply(opt, repAck, nil)
	case optStartTLS:
		return nil, false, cn.reply(opt, repErrPolicy, []byte("TLS is not offered: use a Unix socket or a loopback address"))
	case optStructuredReply:
		if len(data) != 0 {
			return nil, false, cn.reply(opt, repErrInvalid, []byte("NBD_OPT_STRUCTURED_REPLY takes no data"))
		}
		cn.structured = true
		return nil, false, cn.reply(opt, repAck, nil)
	case optListMetaContext, optSetMetaContext:
		return nil, false, cn.metaContext(opt, data)
	case optInfo, optGo:
		return cn.infoGo(opt, data)
	}
	return nil, false, cn.reply(opt, repErrUnsup, fmt.Appendf(nil, "option %d is not supported", opt))
}

// reply writes one option reply.
func (cn *conn) reply(opt, typ uint32, data []byte) error {
	var h [20]byte
	binary.BigEndian.PutUint64(h[0:], magicOptReply)
	binary.BigEndian.PutUint32(h[8:], opt)
	binary.BigEndian.PutUint32(h[12:], typ)
	binary.BigEndian.PutUint32(h[16:], uint32(len(data)))
	if _, err := cn.w.Write(h[:]); err != nil {
		return err
	}
	_, err := cn.w.Write(data)
	return err
}

// cutString reads a 32-bit length and that many bytes from b.
func cutString(b []byte) (string, []byte, bool) {
	if len(b) < 4 {
		return "", nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return "", nil, false
	}
	return string(b[4 : 4+n]), b[4+n:], true
}

func (cn *conn) transmissionFlags() uint16 {
	f := uint16(flagHasFlags | flagReadOnly | flagSendFlush | flagCanMultiConn | flagSendCache)
	if cn.structured {
		f |= flagSendDF
	}
	return f
}

// infoGo answers NBD_OPT_INFO and NBD_OPT_GO (which then ends negotiation).
func (cn *conn) infoGo(opt uint32, data []byte) (*Export, bool, error) {
	name, rest, ok := cutString(data)
	if !ok || len(rest) < 2 {
		return nil, false, cn.reply(opt, repErrInvalid, []byte("malformed request"))
	}
	nreq := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != 2*nreq {
		return nil, false, cn.reply(opt, repErrInvalid, []byte("malformed information requests"))
	}
	ex := cn.s.export(name)
	if ex == nil {
		return nil, false, cn.reply(opt, repErrUnknown, fmt.Appendf(nil, "no export %q", name))
	}
	b := binary.BigEndian.AppendUint16(nil, infoExport)
	b = binary.BigEndian.AppendUint64(b, uint64(ex.Size))
	b = binary.BigEndian.AppendUint16(b, cn.transmissionFlags())
	if err := cn.reply(opt, repInfo, b); err != nil {
		return nil, false, err
	}
	blockSize := false
	for i := range nreq {
		var b []byte
		switch binary.BigEndian.Uint16(rest[2*i:]) {
		case infoBlockSize:
			blockSize = true
		case infoName:
			b = binary.BigEndian.AppendUint16(nil, infoName)
			b = append(b, ex.Name...)
		case infoDescription:
			b = binary.BigEndian.AppendUint16(nil, infoDescription)
			b = append(b, ex.Description...)
		}
		if b != nil {
			if err := cn.reply(opt, repInfo, b); err != nil {
				return nil, false, err
			}
		}
	}
	if blockSize {
		// Block size hints: minimum 1 byte, the preferred size, requests
		// up to 32 MiB.
		pref := ex.PreferredBlockSize
		if pref < 512 || pref > maxPayload || pref&(pref-1) != 0 {
			pref = defaultPreferred
		}
		b = binary.BigEndian.AppendUint16(nil, infoBlockSize)
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint32(b, pref)
		b = binary.BigEndian.AppendUint32(b, maxPayload)
		if err := cn.reply(opt, repInfo, b); err != nil {
			return nil, false, err
		}
	}
	if err := cn.reply(opt, repAck, nil); err != nil {
		return nil, false, err
	}
	if opt == optGo {
		return ex, true, nil
	}
	return nil, false, nil
}

// metaContext answers NBD_OPT_LIST_META_CONTEXT and
// NBD_OPT_SET_META_CONTEXT; base:allocation is the one context.
func (cn *conn) metaContext(opt uint32, data []byte) error {
	if !cn.structured {
		return cn.reply(opt, repErrInvalid, []byte("negotiate NBD_OPT_STRUCTURED_REPLY first"))
	}
	name, rest, ok := cutString(data)
	if !ok || len(rest) < 4 {
		return cn.reply(opt, repErrInvalid, []byte("malformed request"))
	}
	if cn.s.export(name) == nil {
		return cn.reply(opt, repErrUnknown, fmt.Appendf(nil, "no export %q", name))
	}
	n := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	var queries []string
	for range n {
		var q string
		if q, rest, ok = cutString(rest); !ok {
			return cn.reply(opt, repErrInvalid, []byte("malformed query"))
		}
		queries = append(queries, q)
	}
	match := opt == optListMetaContext && n == 0
	for _, q := range queries {
		if q == baseAllocation || (opt == optListMetaContext && q == "base:") {
			match = true
		}
	}
	if opt == optSetMetaContext {
		cn.allocation = match
	}
	if match {
		b := binary.BigEndian.AppendUint32(nil, baseAllocationID)
		b = append(b, baseAllocation...)
		if err := cn.reply(opt, repMetaContext, b); err != nil {
			return err
		}
	}
	return cn.reply(opt, repAck, nil)
}

// request is one transmission request.
type request struct {
	flags, typ uint16
	cookie     uint64
	off        uint64
	length     uint32
}

// transmit serves requests for ex until the client disconnects. A
// connection closed because a request failed returns that request's error.
func (cn *conn) transmit(ex *Export) error {
	cn.share = cn.s.joinBudget()
	defer cn.s.leaveBudget()
	var wg sync.WaitGroup
	err := cn.requests(ex, &wg)
	wg.Wait()
	if ferr := cn.failed(); ferr != nil && (err != nil || errors.Is(ferr, errRepliesNotRead)) {
		return ferr
	}
	return err
}

// requests reads requests and starts serving them, in wg, until the
// client disconnects or the connection fails.
func (cn *conn) requests(ex *Export, wg *sync.WaitGroup) error {
	inflight := make(chan struct{}, max(cn.s.MaxInFlight, 1))
	if cn.s.MaxInFlight <= 0 {
		inflight = make(chan struct{}, 8)
	}
	for {
		var h [28]byte
		if _, err := io.ReadFull(cn.r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m := binary.BigEndian.Uint32(h[:]); m != magicRequest {
			return fmt.Errorf("%w: request magic %#x", errProtocol, m)
		}
		rq := request{
			flags:  binary.BigEndian.Uint16(h[4:]),
			typ:    binary.BigEndian.Uint16(h[6:]),
			cookie: binary.BigEndian.Uint64(h[8:]),
			off:    binary.BigEndian.Uint64(h[16:]),
			length: binary.BigEndian.Uint32(h[24:]),
		}
		switch rq.typ {
		case cmdDisc:
			return nil
		case cmdWrite:
			// The data follows the request: skip it, then refuse.
			if _, err := io.CopyN(io.Discard, cn.r, int64(rq.length)); err != nil {
				return err
			}
			if err := cn.sendError(rq, errEPERM, "read-only export"); err != nil {
				cn.fail(err)
				return err
			}
			continue
		}
		inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inflight }()
			if err := cn.serve(ex, rq); err != nil {
				cn.fail(err) // the request loop ends with the connection
			}
		})
	}
}

// serve answers one request other than write and disconnect.
func (cn *conn) serve(ex *Export, rq request) error {
	end := rq.off + uint64(rq.length)
	inRange := end >= rq.off && end <= uint64(ex.Size)
	switch rq.typ {
	case cmdRead:
		if !inRange {
			return cn.sendError(rq, errEINVAL, "read beyond the end of the export")
		}
		if rq.length > maxPayload {
			return cn.sendError(rq, errEOVERFLOW, "read larger than 32 MiB")
		}
		return cn.read(ex, rq)
	case cmdBlockStatus:
		if !cn.structured || !cn.allocation {
			return cn.sendError(rq, errEINVAL, "no meta context selected")
		}
		if !inRange || rq.length == 0 {
			return cn.sendError(rq, errEINVAL, "block status beyond the end of the export")
		}
		return cn.blockStatus(ex, rq)
	case cmdFlush, cmdCache:
		if rq.typ == cmdCache && !inRange {
			return cn.sendError(rq, errEINVAL, "cache beyond the end of the export")
		}
		return cn.sendError(rq, 0, "")
	case cmdTrim, cmdWriteZeroes:
		return cn.sendError(rq, errEPERM, "read-only export")
	}
	return cn.sendError(rq, errEINVAL, "unknown command")
}

// read answers NBD_CMD_READ: a simple reply with the data, or structured
// replies sending zero extents as holes (one data chunk with
// NBD_CMD_FLAG_DF). A failed read returns EIO for the request only.
func (cn *conn) read(ex *Export, rq request) error {
	off, n := int64(rq.off), int64(rq.length)
	var extents []Extent
	switch {
	case n == 0:
	case cn.structured && rq.flags&cmdFlagDF == 0 && ex.Extents != nil:
		extents = ex.Extents(off, n)
	default:
		extents = []Extent{{Offset: off, Length: n}}
	}
	buf, err := cn.s.getBuf(cn.share, int(n), cn.dead)
	if err != nil {
		return err
	}
	defer cn.s.putBuf(cn.share, buf)
	for _, e := range extents {
		if e.Zero {
			continue
		}
		p := buf[e.Offset-off : e.Offset-off+e.Length]
		if k, err := ex.Data.ReadAt(p, e.Offset); err != nil && !(errors.Is(err, io.EOF) && k == len(p)) {
			if l := LoggedError(nil); !(errors.As(err, &l) && l.Logged()) {
				cn.s.logf("export %s: read of %d bytes at %d: %v", ex.Name, n, off, err)
			}
			return cn.sendErrorAt(rq, errEIO, "read failed (see the server's log)", uint64(e.Offset)+uint64(k))
		}
	}
	cn.lockWrite()
	defer cn.wmu.Unlock()
	if !cn.structured {
		var h [16]byte
		binary.BigEndian.PutUint32(h[0:], magicSimple)
		binary.BigEndian.PutUint64(h[8:], rq.cookie)
		cn.w.Write(h[:])
		cn.w.Write(buf)
		return cn.flush()
	}
	for i, e := range extents {
		flags := uint16(0)
		if i == len(extents)-1 {
			flags = replyFlagDone
		}
		if e.Zero {
			var b [12]byte
			binary.BigEndian.PutUint64(b[0:], uint64(e.Offset))
			binary.BigEndian.PutUint32(b[8:], uint32(e.Length))
			cn.chunkHeader(flags, replyOffsetHole, rq.cookie, 12)
			cn.w.Write(b[:])
			continue
		}
		cn.chunkHeader(flags, replyOffsetData, rq.cookie, 8+uint32(e.Length))
		cn.w.Write(binary.BigEndian.AppendUint64(nil, uint64(e.Offset)))
		cn.w.Write(buf[e.Offset-off : e.Offset-off+e.Length])
	}
	if len(extents) == 0 { // a zero-length read
		cn.chunkHeader(replyFlagDone, 0, rq.cookie, 0)
	}
	return cn.flush()
}

// blockStatus answers NBD_CMD_BLOCK_STATUS for base:allocation: zero
// extents are holes reading as zeros (NBD_STATE_HOLE | NBD_STATE_ZERO).
func (cn *conn) blockStatus(ex *Export, rq request) error {
	off, n := int64(rq.off), int64(rq.length)
	extents := []Extent{{Offset: off, Length: n}}
	if ex.Extents != nil {
		extents = ex.Extents(off, n)
	}
	b := binary.BigEndian.AppendUint32(nil, baseAllocationID)
	for _, e := range extents {
		for e.Length > 0 {
			l := min(e.Length, maxExtentDescriptor)
			st := uint32(0)
			if e.Zero {
				st = stateHole | stateZero
			}
			b = binary.BigEndian.AppendUint32(b, uint32(l))
			b = binary.BigEndian.AppendUint32(b, st)
			e.Length -= l
			if rq.flags&cmdFlagReqOne != 0 {
				break
			}
		}
		if rq.flags&cmdFlagReqOne != 0 {
			break
		}
	}
	cn.lockWrite()
	defer cn.wmu.Unlock()
	cn.chunkHeader(replyFlagDone, replyBlockStatus, rq.cookie, uint32(len(b)))
	cn.w.Write(b)
	return cn.flush()
}

// chunkHeader writes a structured reply chunk header. cn.wmu is held.
func (cn *conn) chunkHeader(flags, typ uint16, cookie uint64, length uint32) {
	var h [20]byte
	binary.BigEndian.PutUint32(h[0:], magicStructure)
	binary.BigEndian.PutUint16(h[4:], flags)
	binary.BigEndian.PutUint16(h[6:], typ)
	binary.BigEndian.PutUint64(h[8:], cookie)
	binary.BigEndian.PutUint32(h[16:], length)
	cn.w.Write(h[:])
}

// sendError answers rq with errno (0: success without data).
func (cn *conn) sendError(rq request, errno uint32, msg string) error {
	return cn.sendErrorAt(rq, errno, msg, ^uint64(0))
}

// sendErrorAt answers rq with errno, naming the failing offset in a
// structured reply when at is not ^0.
func (cn *conn) sendErrorAt(rq request, errno uint32, msg string, at uint64) error {
	cn.lockWrite()
	defer cn.wmu.Unlock()
	if !cn.structured || errno == 0 {
		if cn.structured {
			cn.chunkHeader(replyFlagDone, 0, rq.cookie, 0)
			return cn.flush()
		}
		var h [16]byte
		binary.BigEndian.PutUint32(h[0:], magicSimple)
		binary.BigEndian.PutUint32(h[4:], errno)
		binary.BigEndian.PutUint64(h[8:], rq.cookie)
		cn.w.Write(h[:])
		return cn.flush()
	}
	typ, size := uint16(replyError), uint32(6+len(msg))
	if at != ^uint64(0) {
		typ, size = replyErrorOffset, size+8
	}
	cn.chunkHeader(replyFlagDone, typ, rq.cookie, size)
	b := binary.BigEndian.AppendUint32(nil, errno)
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	b = append(b, msg...)
	if at != ^uint64(0) {
		b = binary.BigEndian.AppendUint64(b, at)
	}
	cn.w.Write(b)
	return cn.flush()
}
