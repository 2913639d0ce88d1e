package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"
)

// conn is one client connection.
type conn struct {
	p      *Proxy
	c      net.Conn
	client string
	start  time.Time

	lr io.LimitedReader // bounds the request phase; br reads from it
	br *bufio.Reader

	upMu sync.Mutex
	up   net.Conn // current upstream connection, closed by Close

	lingered bool // lingerClose ran: the write side is closed
}

// setUpstream records the current upstream connection so that Close can
// interrupt it; it returns false (and closes up) if the proxy is closed.
func (cn *conn) setUpstream(up net.Conn) bool {
	cn.upMu.Lock()
	defer cn.upMu.Unlock()
	if up != nil && cn.p.ctx.Err() != nil {
		up.Close()
		return false
	}
	cn.up = up
	return true
}

func (cn *conn) closeUpstream() {
	cn.upMu.Lock()
	if cn.up != nil {
		cn.up.Close()
	}
	cn.upMu.Unlock()
}

var bufioReaders sync.Pool

const unlimited = math.MaxInt64

// serve sniffs the first byte and hands the connection to the protocol.
func (cn *conn) serve() {
	defer cn.p.untrack(cn)
	defer cn.closeUpstream()
	cn.c.SetReadDeadline(cn.start.Add(cn.p.opts.RequestTimeout))
	cn.lr = io.LimitedReader{R: cn.c, N: int64(cn.p.opts.MaxHeaderBytes)}
	if v, ok := bufioReaders.Get().(*bufio.Reader); ok {
		v.Reset(&cn.lr)
		cn.br = v
	} else {
		cn.br = bufio.NewReaderSize(&cn.lr, 4096)
	}
	defer cn.releaseReader()

	b, err := cn.br.Peek(1)
	if err != nil {
		return // closed or timed out before sending anything
	}
	switch c := b[0]; {
	case c == socks5Version:
		cn.serveSOCKS5()
	case c == 4:
		cn.badRequest("", "SOCKS4 is not supported (use SOCKS5, e.g. socks5h://)")
		cn.c.Write([]byte{0, 0x5b, 0, 0, 0, 0, 0, 0})
		cn.lingerClose()
	case c >= 'A' && c <= 'Z':
		cn.serveHTTP()
	case c == 0x16:
		cn.badRequest("", "TLS to the proxy itself is not supported (use an http:// proxy URL)")
	default:
		cn.badRequest("", fmt.Sprintf("unrecognized protocol (first byte 0x%02x)", c))
	}
}

// releaseReader returns the bufio.Reader to the pool.
func (cn *conn) releaseReader() {
	if cn.br != nil {
		cn.br.Reset(nil)
		bufioReaders.Put(cn.br)
		cn.br = nil
	}
}

// endRequestPhase lifts the header size limit and the read deadline.
func (cn *conn) endRequestPhase() {
	cn.lr.N = unlimited
	cn.c.SetReadDeadline(time.Time{})
}

// takeBuffered returns (a copy of) what the client sent beyond the request
// and releases the reader: from now on the connection is read directly.
func (cn *conn) takeBuffered() []byte {
	var rest []byte
	if n := cn.br.Buffered(); n > 0 {
		b, _ := cn.br.Peek(n)
		rest = append([]byte(nil), b...)
	}
	cn.releaseReader()
	return rest
}

// badRequest counts and reports a malformed or unsupported request.
func (cn *conn) badRequest(method, reason string) {
	cn.p.count.bad.Add(1)
	cn.p.emit(Event{Time: time.Now(), Client: cn.client, Method: method, Reason: "bad request: " + reason})
}

// lingerClose half-closes the connection and discards what the client still
// sends for a short while, so that an error reply is not lost to a reset
// caused by unread data. The caller closes the connection afterwards. A
// second call does nothing (the linger has been served).
func (cn *conn) lingerClose() {
	if cn.lingered {
		return
	}
	cn.lingered = true
	if cw, ok := cn.c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	cn.c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
	io.CopyN(io.Discard, cn.c, 256<<10)
}
