package netproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxResponseHeaderBytes bounds an upstream response's status line and
// headers, each line counted fieldCost bytes more: what one connection's
// head may take of the supervisor's memory (outside the run's cgroup), a
// thousand times over with MaxConns. Origins and their proxies send far
// less (nginx's buffer for a proxied head is 4 or 8 KiB).
const maxResponseHeaderBytes = 256 << 10

// serveHTTP reads HTTP requests on the connection. A CONNECT request turns
// the connection into a tunnel. Plain requests (absolute-form URIs) are
// forwarded one at a time; the client connection is kept alive between them
// when HTTP/1.1 framing allows, and every request is checked against the
// allowlist on its own (a client may switch hosts mid-connection). Each
// request gets its own upstream connection ("Connection: close"), so no
// upstream connection is ever shared between destinations.
func (cn *conn) serveHTTP() {
	for {
		t0 := time.Now()
		cn.lr.N = int64(cn.p.opts.MaxHeaderBytes) + 4096 // + one buffer of read-ahead
		req, err := readRequest(cn.br, cn.p.opts.MaxHeaderBytes)
		if err != nil {
			switch {
			case cn.lr.N <= 0 || errors.Is(err, errHeadTooLarge):
				cn.badRequest("", "request headers too large")
				cn.replyHTTP(statusHeaderTooLarge, "request headers larger than "+strconv.Itoa(cn.p.opts.MaxHeaderBytes)+" bytes")
			case isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
				// Client gone, or too slow to send its request: drop it.
			default:
				cn.badRequest("", "malformed HTTP request: "+err.Error())
				msg := "malformed HTTP request"
				var fe *framingError
				if errors.As(err, &fe) {
					msg += ": " + fe.msg
				}
				cn.replyHTTP(statusBadRequest, msg)
			}
			return
		}
		cn.endRequestPhase()
		if req.method == "CONNECT" {
			cn.handleConnect(req, t0)
			return
		}
		if !cn.forward(req, t0) {
			// Closing with unread pipelined requests would reset the
			// connection and could destroy the response in flight.
			cn.lingerClose()
			return
		}
		cn.c.SetReadDeadline(time.Now().Add(cn.p.opts.IdleTimeout))
		_, err = cn.br.Peek(1)
		if err != nil {
			return
		}
		cn.c.SetReadDeadline(time.Now().Add(cn.p.opts.RequestTimeout))
	}
}

// replyHTTP sends a complete error response with a one-line plain-text body
// ("sandbox-executable: <msg>") and closes the write side.
func (cn *conn) replyHTTP(code int, msg string) {
	body := "sandbox-executable: " + msg + "\n"
	var b strings.Builder
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(statusText(code))
	b.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\nProxy-Status: sandbox-executable; error=")
	b.WriteString(proxyStatusError(code))
	b.WriteString("\r\nConnection: close\r\n\r\n")
	b.WriteString(body)
	cn.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(cn.c, b.String())
	cn.lingerClose()
}

// proxyStatusError returns the RFC 9209 error type for an error status.
func proxyStatusError(code int) string {
	switch code {
	case statusForbidden:
		return "http_request_denied"
	case statusGatewayTimeout:
		return "connection_timeout"
	case statusBadGateway:
		return "destination_unavailable"
	default:
		return "http_request_error"
	}
}

// forward relays one plain HTTP request and its response. It reports
// whether the client connection may carry another request.
func (cn *conn) forward(req *request, t0 time.Time) (keepAlive bool) {
	u := req.url
	if !u.IsAbs() || u.Host == "" {
		cn.badRequest(req.method, "request target "+quoteHost(req.target)+" is not an absolute http:// URI")
		cn.replyHTTP(statusBadRequest, "this is a proxy: requests must use an absolute URI (GET http://host/path)")
		return false
	}
	if !asciiEqualFold(u.Scheme, "http") {
		cn.badRequest(req.method, "scheme "+quoteHost(u.Scheme)+" cannot be proxied as a plain request")
		cn.replyHTTP(statusBadRequest, "only http:// URIs can be forwarded; use CONNECT for "+quoteHost(u.Scheme))
		return false
	}
	host, port := u.Hostname(), uint16(80)
	if ps := u.Port(); ps != "" {
		p, err := parsePort(ps)
		if err != nil {
			cn.badRequest(req.method, err.Error())
			cn.replyHTTP(statusBadRequest, err.Error())
			return false
		}
		port = p
	}
	ev := Event{Time: t0, Client: cn.client, Method: req.method, Host: host, Port: port}
	v, up, remote := cn.connectUpstream(host, port)
	ev.Host, ev.Reason, ev.Allowed = v.d.hostOr(host), v.d.reason, !v.refused
	if v.refused {
		cn.p.emit(ev)
		cn.replyHTTP(statusForbidden, v.d.reason)
		return false
	}
	if v.err != nil {
		ev.Reason += "; " + v.err.Error()
		ev.Duration = time.Since(t0)
		cn.p.emit(ev)
		cn.replyHTTP(gatewayStatus(v.err), v.err.Error())
		return false
	}
	ev.Remote = remote
	keepAlive, err := cn.exchange(req, up, &ev)
	cn.setUpstream(nil)
	up.Close()
	if err != nil {
		ev.Reason += "; " + err.Error()
	}
	ev.Duration = time.Since(t0)
	cn.p.emit(ev)
	return keepAlive
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// bodyState records how reading a request body ended: at its end (eof), or
// with an error from the client connection or its framing (failed).
type bodyState struct {
	eof, failed atomic.Bool
}

// copyBody copies src to dst, which writes into w. Before a read from src
// that may block it flushes w: what was buffered (the head, earlier data)
// goes out before the relay waits for more, so that streamed bodies are
// not held back, while a head and a body already received leave in one
// write. A read may block unless src reads straight from br (which may be
// nil) and br holds data. It tells read errors (src) from write errors.
func copyBody(w *bufio.Writer, dst io.Writer, src io.Reader, br *bufio.Reader) (readErr, writeErr error) {
	bp := getCopyBuf()
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		if w.Buffered() > 0 && (br == nil || br.Buffered() == 0) {
			if err := w.Flush(); err != nil {
				return nil, err
			}
		}
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
}

var copyBufs sync.Pool

func getCopyBuf() *[]byte {
	if b, ok := copyBufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, relayBufSize)
	return &b
}

var (
	bufWriters sync.Pool
	bufReaders sync.Pool
)

const relayBufSize = 32 << 10

func getWriter(w io.Writer) *bufio.Writer {
	if b, ok := bufWriters.Get().(*bufio.Writer); ok {
		b.Reset(w)
		return b
	}
	return bufio.NewWriterSize(w, relayBufSize)
}

func putWriter(b *bufio.Writer) {
	b.Reset(nil)
	bufWriters.Put(b)
}

func getReader(r io.Reader) *bufio.Reader {
	if b, ok := bufReaders.Get().(*bufio.Reader); ok {
		b.Reset(r)
		return b
	}
	return bufio.NewReaderSize(r, relayBufSize)
}

func putReader(b *bufio.Reader) {
	b.Reset(nil)
	bufReaders.Put(b)
}

var aLongTimeAgo = time.Unix(1, 0)

// stateReader records in st how reading a request body ended.
type stateReader struct {
	r  io.Reader
	st *bodyState
}

func (s stateReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	switch {
	case err == io.EOF:
		s.st.eof.Store(true)
	case err != nil:
		s.st.failed.Store(true)
	}
	return n, err
}

// writeRequest writes req upstream in origin form: "Host" from the URI,
// "Connection: close", framing of its own (chunked stays chunked, with
// the trailer fields that may be relayed), then the body read from the
// client. named lists the fields the client's Connection header named.
func (cn *conn) writeRequest(w *bufio.Writer, req *request, named []string, st *bodyState) error {
	h := req.header
	delete(h, "Host")
	delete(h, "Content-Length")
	if !req.chunked() {
		delete(h, "Trailer")
	}
	w.WriteString(req.method)
	w.WriteByte(' ')
	w.WriteString(req.url.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(hostHeader(req.url.Host))
	w.WriteString("\r\nConnection: close\r\n")
	switch {
	case req.chunked():
		w.WriteString("Transfer-Encoding: chunked\r\n")
	case req.contentLength > 0 || req.method != "GET" && req.method != "HEAD":
		// Many servers want a length for other methods, even 0.
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.FormatInt(req.contentLength, 10))
		w.WriteString("\r\n")
	}
	writeFields(w, h)
	w.WriteString("\r\n")

	var readErr, writeErr error
	switch {
	case req.chunked():
		cr := newChunkedReader(cn.br, &cn.lr, int64(cn.p.opts.MaxHeaderBytes))
		readErr, writeErr = copyBody(w, chunkWriter{w}, stateReader{cr, st}, nil)
		if readErr == nil && writeErr == nil {
			filterTrailer(cr.trailer, named)
			writeLastChunk(w, cr.trailer)
		}
	case req.contentLength > 0:
		readErr, writeErr = copyBody(w, w, stateReader{&fixedReader{cn.br, req.contentLength}, st}, cn.br)
	default:
		st.eof.Store(true)
	}
	switch {
	case readErr != nil:
		return readErr
	case writeErr != nil:
		return writeErr
	}
	return w.Flush()
}

// hostHeader returns the Host field for an authority: as in the URI, less
// any IPv6 zone ("[fe80::1%eth0]:80" is "[fe80::1]:80"), which means
// nothing to the origin.
func hostHeader(host string) string {
	if !strings.HasPrefix(host, "[") {
		return host
	}
	i := strings.IndexByte(host, '%')
	j := strings.LastIndexByte(host, ']')
	if i < 0 || j < i {
		return host
	}
	return host[:i] + host[j:]
}

// Ways a response body is relayed to the client.
const (
	bodyNone      = iota // HEAD, 204, 304
	bodyLength           // Content-Length: n
	bodyChunked          // chunked to chunked (HTTP/1.1 client)
	bodyDechunked        // chunked to close-delimited (HTTP/1.0 client)
	bodyToClose          // close-delimited
)

// exchange writes req upstream (origin-form, hop-by-hop and Proxy-* headers
// removed, "Connection: close") while reading the response, relays 1xx
// interim responses to HTTP/1.1 clients, then the final response. The
// request is written concurrently so that "Expect: 100-continue" works. It
// reports whether the client connection may be kept alive.
func (cn *conn) exchange(req *request, up net.Conn, ev *Event) (bool, error) {
	http11 := req.minor >= 1
	clientClose := req.close

	named := removeHopHeaders(req.header)
	upCount := &countWriter{w: up}
	upW := getWriter(upCount)
	defer putWriter(upW)
	var body bodyState
	werr := make(chan error, 1)
	watchDone := make(chan struct{})
	var watchStop atomic.Bool
	go func() {
		defer close(watchDone)
		err := cn.writeRequest(upW, req, named, &body)
		werr <- err // before closing up, so that a reader woken by the close finds it
		if err != nil {
			if body.failed.Load() {
				up.Close() // the client went away mid-upload, or its body was malformed: the origin would wait forever
			}
			return
		}
		// The request is out. Like net/http's server, watch the client
		// while the origin answers: if it goes away (EOF or error), close
		// the upstream connection rather than wait for an answer nobody
		// will read. Peek consumes nothing: pipelined requests stay queued.
		if _, err := cn.br.Peek(1); err != nil && !watchStop.Load() {
			up.Close()
		}
	}()
	// stopWatch ends the client watch before the connection is read again.
	stopWatch := func() {
		watchStop.Store(true)
		cn.c.SetReadDeadline(aLongTimeAgo)
		<-watchDone
		cn.c.SetReadDeadline(time.Time{})
	}
	// finish waits for the request writer. If it is still reading the
	// client's body (the origin answered before reading all of it), it is
	// interrupted and the client connection cannot be reused; if it is only
	// finishing its writes upstream, it gets a moment to do so. It also
	// stops the client watch.
	finish := func() error {
		defer stopWatch()
		select {
		case err := <-werr:
			return err
		default:
		}
		if !body.eof.Load() {
			cn.c.SetReadDeadline(aLongTimeAgo)
			up.Close()
			<-werr
			return errors.New("request body not fully relayed")
		}
		t := time.AfterFunc(time.Second, func() { up.Close() })
		err := <-werr
		t.Stop()
		return err
	}
	defer func() { ev.BytesUp = upCount.n }()

	upLR := &io.LimitedReader{R: up, N: maxResponseHeaderBytes}
	upR := getReader(upLR)
	defer putReader(upR)
	downCount := &countWriter{w: cn.c}
	cw := getWriter(downCount)
	defer putWriter(cw)
	defer func() { ev.BytesDown = downCount.n }()

	resp, length, chunked, err := cn.finalResponse(upR, upLR, cw, http11, finish, &body, ev.Remote)
	if err != nil {
		return false, err
	}
	respNamed := removeHopHeaders(resp.header)
	f := relayFraming(resp, req.method, length, chunked, http11)
	clientClose = clientClose || f.close
	writeResponseHead(cw, resp, f, clientClose)
	readErr, writeErr := relayBody(cw, upR, upLR, f.mode, length, respNamed)
	err = readErr
	if err == nil {
		err = writeErr
	}
	if err == nil {
		err = cw.Flush()
	}
	werrV := finish()
	switch {
	case err != nil:
		return false, errors.New("relaying the response: " + err.Error())
	case werrV != nil:
		return false, nil
	}
	return !clientClose, nil
}

// finalResponse reads the response head from upstream, relaying 1xx
// interim responses to HTTP/1.1 clients, until the final one, and returns
// it with its framing. An error has been answered to the client (400 for
// its own malformed body, 502 otherwise); finish waits for the request
// writer.
func (cn *conn) finalResponse(upR *bufio.Reader, upLR *io.LimitedReader, cw *bufio.Writer, http11 bool, finish func() error, body *bodyState, remote string) (*response, int64, bool, error) {
	for {
		upLR.N = maxResponseHeaderBytes
		resp, err := readResponseHead(upR, maxResponseHeaderBytes)
		var length int64
		var chunked bool
		switch {
		case err != nil && (upLR.N <= 0 || errors.Is(err, errHeadTooLarge)):
			err = errors.New("response header section larger than " + strconv.Itoa(maxResponseHeaderBytes) + " bytes")
		case err == nil:
			length, chunked, err = resp.framing()
			if err == nil && resp.code == statusSwitchingProtocols {
				err = errors.New("upstream switched protocols without an Upgrade request")
			}
		}
		if err != nil {
			var fe *framingError
			if werrV := finish(); body.failed.Load() && errors.As(werrV, &fe) {
				// The client's body was malformed: the writer closed the
				// upstream connection, hence err.
				msg := "malformed request body: " + fe.msg
				cn.replyHTTP(statusBadRequest, msg)
				return nil, 0, false, errors.New(msg)
			}
			msg := "reading the response from " + remote + ": " + err.Error()
			cn.replyHTTP(statusBadGateway, msg)
			return nil, 0, false, errors.New(msg)
		}
		upLR.N = unlimited
		if resp.code >= 200 {
			return resp, length, chunked, nil
		}
		if http11 { // 1xx: relay to HTTP/1.1 clients only
			removeHopHeaders(resp.header)
			delete(resp.header, "Content-Length")
			delete(resp.header, "Trailer")
			writeStatusLine(cw, resp)
			writeFields(cw, resp.header)
			cw.WriteString("\r\n")
			if err := cw.Flush(); err != nil {
				finish()
				return nil, 0, false, errors.New("client went away")
			}
		}
	}
}

// framing is how a response is relayed to the client: its body's way
// (bodyNone...), the Content-Length or chunked encoding the client is told,
// and whether the body can only end with the connection.
type framing struct {
	mode       int
	outLength  int64 // -1: none
	outChunked bool
	close      bool
}

// relayFraming decides the framing of the response to a method request
// whose upstream framing is length or chunked, for an HTTP/1.1 client or
// not.
func relayFraming(resp *response, method string, length int64, chunked, http11 bool) framing {
	f := framing{mode: bodyNone, outLength: -1}
	switch {
	case !resp.bodyAllowed(method):
		if method == "HEAD" { // the framing a GET's body would have
			if chunked {
				f.outChunked = http11
			} else {
				f.outLength = length
			}
		}
	case chunked && http11:
		f.mode, f.outChunked = bodyChunked, true
	case chunked:
		f.mode, f.close = bodyDechunked, true // HTTP/1.0: end the body by closing
	case length >= 0:
		f.mode, f.outLength = bodyLength, length
	default:
		f.mode, f.close = bodyToClose, true // the body ends when the connection does
	}
	return f
}

// writeResponseHead writes the final response's status line and header
// (hop-by-hop fields removed already) with the framing f.
func writeResponseHead(cw *bufio.Writer, resp *response, f framing, clientClose bool) {
	h := resp.header
	delete(h, "Content-Length")
	if !f.outChunked {
		delete(h, "Trailer")
	}
	writeStatusLine(cw, resp)
	if clientClose {
		cw.WriteString("Connection: close\r\n")
	}
	switch {
	case f.outChunked:
		cw.WriteString("Transfer-Encoding: chunked\r\n")
	case f.outLength >= 0:
		cw.WriteString("Content-Length: ")
		cw.WriteString(strconv.FormatInt(f.outLength, 10))
		cw.WriteString("\r\n")
	}
	writeFields(cw, h)
	cw.WriteString("\r\n")
}

// relayBody copies the response body from upstream to the client in mode,
// a chunked body's trailer filtered of the fields respNamed names.
func relayBody(cw *bufio.Writer, upR *bufio.Reader, upLR *io.LimitedReader, mode int, length int64, respNamed []string) (readErr, writeErr error) {
	switch mode {
	case bodyLength:
		return copyBody(cw, cw, &fixedReader{upR, length}, upR)
	case bodyChunked:
		cr := newChunkedReader(upR, upLR, maxResponseHeaderBytes)
		readErr, writeErr = copyBody(cw, chunkWriter{cw}, cr, nil)
		if readErr == nil && writeErr == nil {
			filterTrailer(cr.trailer, respNamed)
			writeLastChunk(cw, cr.trailer)
		}
		return readErr, writeErr
	case bodyDechunked:
		return copyBody(cw, cw, newChunkedReader(upR, upLR, maxResponseHeaderBytes), nil)
	case bodyToClose:
		return copyBody(cw, cw, upR, upR)
	}
	return nil, nil
}

// writeStatusLine writes "HTTP/1.1 code reason" (the origin's reason).
func writeStatusLine(w *bufio.Writer, resp *response) {
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(resp.code))
	w.WriteByte(' ')
	w.WriteString(resp.reason)
	w.WriteString("\r\n")
}
