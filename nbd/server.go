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
// alone); requests beyond it wait for buffers, whatever the number of
// connections.
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
	"sync"
	"syscall"
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
	// waits until its buffer fits. A read larger than the bound is served
	// when no other buffer is in use. Default DefaultBufferBytes.
	MaxBufferBytes int64

	bufOnce  sync.Once
	bufMu    sync.Mutex
	bufCond  *sync.Cond   // signalled when a buffer is returned
	bufs     [14][][]byte // free read buffers by capacity class, 4 KiB << class
	bufHeld  int64        // bytes of buffers in use and free
	bufInUse int64        // bytes of buffers in use
	bufFree  int64        // bytes of free buffers kept
}

// DefaultBufferBytes is the default Server.MaxBufferBytes: 32 MiB, room
// for one read of the largest size a client may ask for (32 MiB) or, say,
// eight of 4 MiB at once.
const DefaultBufferBytes = 32 << 20

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
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	cn := &conn{s: s, c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}
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

// transmit serves requests for ex until the client disconnects.
func (cn *conn) transmit(ex *Export) error {
	inflight := make(chan struct{}, max(cn.s.MaxInFlight, 1))
	if cn.s.MaxInFlight <= 0 {
		inflight = make(chan struct{}, 8)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
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
				return err
			}
			continue
		}
		inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inflight }()
			if err := cn.serve(ex, rq); err != nil {
				cn.c.Close() // the reader loop ends with the connection
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

// bufClass returns the capacity class of a read buffer of n bytes: its
// capacity is 4096 << class.
func bufClass(n int) int {
	cl := 0
	for 4096<<cl < n {
		cl++
	}
	return cl
}

// getBuf returns a read buffer of n bytes (n ≤ 32 MiB), reusing a free one
// of its capacity class (reads make no garbage once the buffers exist). It
// waits while the buffers held by all connections leave no room for it
// under MaxBufferBytes, dropping free buffers of other classes first. A
// buffer larger than the bound is handed out when no other is in use.
func (s *Server) getBuf(n int) []byte {
	s.bufOnce.Do(func() { s.bufCond = sync.NewCond(&s.bufMu) })
	limit := s.MaxBufferBytes
	if limit <= 0 {
		limit = DefaultBufferBytes
	}
	cl := bufClass(n)
	size := int64(4096) << cl
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	for {
		if k := len(s.bufs[cl]); k > 0 {
			b := s.bufs[cl][k-1]
			s.bufs[cl] = s.bufs[cl][:k-1]
			s.bufFree -= size
			s.bufInUse += size
			return b[:n]
		}
		for s.bufHeld+size > limit && s.dropFree() {
		}
		if s.bufHeld+size <= limit || s.bufInUse == 0 {
			s.bufHeld += size
			s.bufInUse += size
			return make([]byte, n, size)
		}
		s.bufCond.Wait()
	}
}

// dropFree lets one free buffer go (the largest class first) and reports
// whether there was one. s.bufMu is held.
func (s *Server) dropFree() bool {
	for cl := len(s.bufs) - 1; cl >= 0; cl-- {
		if k := len(s.bufs[cl]); k > 0 {
			s.bufs[cl][k-1] = nil
			s.bufs[cl] = s.bufs[cl][:k-1]
			size := int64(4096) << cl
			s.bufFree -= size
			s.bufHeld -= size
			return true
		}
	}
	return false
}

// putBuf returns a buffer from getBuf: it is kept for reuse, still counted
// against MaxBufferBytes, and the reads waiting for room are woken.
func (s *Server) putBuf(b []byte) {
	cl := bufClass(cap(b))
	size := int64(4096) << cl
	s.bufMu.Lock()
	defer s.bufMu.Unlock()
	s.bufInUse -= size
	s.bufs[cl] = append(s.bufs[cl], b)
	s.bufFree += size
	s.bufCond.Broadcast()
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
	buf := cn.s.getBuf(int(n))
	defer cn.s.putBuf(buf)
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
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if !cn.structured {
		var h [16]byte
		binary.BigEndian.PutUint32(h[0:], magicSimple)
		binary.BigEndian.PutUint64(h[8:], rq.cookie)
		cn.w.Write(h[:])
		cn.w.Write(buf)
		return cn.w.Flush()
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
	return cn.w.Flush()
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
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.chunkHeader(replyFlagDone, replyBlockStatus, rq.cookie, uint32(len(b)))
	cn.w.Write(b)
	return cn.w.Flush()
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
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if !cn.structured || errno == 0 {
		if cn.structured {
			cn.chunkHeader(replyFlagDone, 0, rq.cookie, 0)
			return cn.w.Flush()
		}
		var h [16]byte
		binary.BigEndian.PutUint32(h[0:], magicSimple)
		binary.BigEndian.PutUint32(h[4:], errno)
		binary.BigEndian.PutUint64(h[8:], rq.cookie)
		cn.w.Write(h[:])
		return cn.w.Flush()
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
	return cn.w.Flush()
}
