package netproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxResponseHeaderBytes bounds an upstream response's status line and
// headers.
const maxResponseHeaderBytes = 1 << 20

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
		req, err := http.ReadRequest(cn.br)
		if err != nil {
			switch {
			case cn.lr.N <= 0:
				cn.badRequest("", "request headers too large")
				cn.replyHTTP(http.StatusRequestHeaderFieldsTooLarge, "request headers larger than "+strconv.Itoa(cn.p.opts.MaxHeaderBytes)+" bytes")
			case isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
				// Client gone, or too slow to send its request: drop it.
			default:
				cn.badRequest("", "malformed HTTP request: "+err.Error())
				cn.replyHTTP(http.StatusBadRequest, "malformed HTTP request")
			}
			return
		}
		cn.endRequestPhase()
		if req.Method == http.MethodConnect {
			cn.handleConnect(req, t0)
			return
		}
		if !cn.forward(req, t0) || cn.p.draining.Load() {
			// Closing with unread pipelined requests would reset the
			// connection and could destroy the response in flight.
			cn.lingerClose()
			return
		}
		cn.idle.Store(true)
		cn.c.SetReadDeadline(time.Now().Add(cn.p.opts.IdleTimeout))
		_, err = cn.br.Peek(1)
		cn.idle.Store(false)
		if err != nil || cn.p.draining.Load() {
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
	b.WriteString(http.StatusText(code))
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
	case http.StatusForbidden:
		return "http_request_denied"
	case http.StatusGatewayTimeout:
		return "connection_timeout"
	case http.StatusBadGateway:
		return "destination_unavailable"
	default:
		return "http_request_error"
	}
}

// forward relays one plain HTTP request and its response. It reports
// whether the client connection may carry another request.
func (cn *conn) forward(req *http.Request, t0 time.Time) (keepAlive bool) {
	u := req.URL
	if !u.IsAbs() || u.Host == "" {
		cn.badRequest(req.Method, "request target "+quoteHost(req.RequestURI)+" is not an absolute http:// URI")
		cn.replyHTTP(http.StatusBadRequest, "this is a proxy: requests must use an absolute URI (GET http://host/path)")
		return false
	}
	if !strings.EqualFold(u.Scheme, "http") {
		cn.badRequest(req.Method, "scheme "+quoteHost(u.Scheme)+" cannot be proxied as a plain request")
		cn.replyHTTP(http.StatusBadRequest, "only http:// URIs can be forwarded; use CONNECT for "+quoteHost(u.Scheme))
		return false
	}
	host, port := u.Hostname(), uint16(80)
	if ps := u.Port(); ps != "" {
		p, err := parsePort(ps)
		if err != nil {
			cn.badRequest(req.Method, err.Error())
			cn.replyHTTP(http.StatusBadRequest, err.Error())
			return false
		}
		port = p
	}
	ev := Event{Time: t0, Client: cn.client, Method: req.Method, Host: host, Port: port}
	v, up, remote := cn.connectUpstream(host, port)
	ev.Host, ev.Reason, ev.Allowed = v.d.hostOr(host), v.d.reason, !v.refused
	if v.refused {
		cn.p.emit(ev)
		cn.replyHTTP(http.StatusForbidden, v.d.reason)
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

// hopHeaders are removed from forwarded requests and responses, along with
// every header named in Connection and every Proxy-* header.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
	for k := range h {
		if len(k) >= 6 && strings.EqualFold(k[:6], "proxy-") {
			delete(h, k)
		}
	}
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

// plainWriter hides bufio.Writer's ReadFrom, which reads straight into the
// buffer and so must not be combined with flushingBody (a flush during the
// read would move the buffer under it). It keeps WriteByte so that
// Request.Write does not add a buffer of its own.
type plainWriter struct{ b *bufio.Writer }

func (w plainWriter) Write(p []byte) (int, error)       { return w.b.Write(p) }
func (w plainWriter) WriteString(s string) (int, error) { return w.b.WriteString(s) }
func (w plainWriter) WriteByte(c byte) error            { return w.b.WriteByte(c) }

// flushingBody flushes w whenever the body is about to be read: what was
// buffered goes out before the relay may block waiting for more, so that
// streamed bodies are not held back while headers and small chunks still
// leave in one write. If st is set, it records how reading ended.
type flushingBody struct {
	io.ReadCloser
	w  *bufio.Writer
	st *bodyState
}

// bodyState records how reading a request body ended: at its end (eof), or
// with an error from the client connection (failed).
type bodyState struct {
	eof, failed atomic.Bool
}

func (f flushingBody) Read(p []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := f.ReadCloser.Read(p)
	if f.st != nil {
		switch {
		case err == io.EOF:
			f.st.eof.Store(true)
		case err != nil:
			f.st.failed.Store(true)
		}
	}
	return n, err
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

// exchange writes req upstream (origin-form, hop-by-hop and Proxy-* headers
// removed, "Connection: close") while reading the response, relays 1xx
// interim responses to HTTP/1.1 clients, then the final response. The
// request is written concurrently so that "Expect: 100-continue" works. It
// reports whether the client connection may be kept alive.
func (cn *conn) exchange(req *http.Request, up net.Conn, ev *Event) (bool, error) {
	http11 := req.ProtoAtLeast(1, 1)
	clientClose := req.Close || !http11

	removeHopHeaders(req.Header)
	req.Host = req.URL.Host
	req.URL.User = nil
	req.RequestURI = ""
	req.Close = true
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go from adding its own
	}
	upCount := &countWriter{w: up}
	upW := getWriter(upCount)
	defer putWriter(upW)
	var body bodyState
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = flushingBody{req.Body, upW, &body}
	} else {
		body.eof.Store(true)
	}
	werr := make(chan error, 1)
	watchDone := make(chan struct{})
	var watchStop atomic.Bool
	go func() {
		defer close(watchDone)
		err := req.Write(plainWriter{upW})
		if err == nil {
			err = upW.Flush()
		}
		if err != nil && body.failed.Load() {
			up.Close() // the client went away mid-upload: the origin would wait forever
		}
		werr <- err
		if err != nil {
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

	// ReadResponse only needs the method; a copy keeps it from sharing req
	// with the writer goroutine.
	rreq := &http.Request{Method: req.Method, URL: req.URL, Header: http.Header{}}
	var resp *http.Response
	for {
		upLR.N = maxResponseHeaderBytes
		var err error
		resp, err = http.ReadResponse(upR, rreq)
		if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
			err = errors.New("upstream switched protocols without an Upgrade request")
		}
		if err != nil {
			finish()
			msg := "reading the response from " + ev.Remote + ": " + err.Error()
			cn.replyHTTP(http.StatusBadGateway, msg)
			return false, errors.New(msg)
		}
		upLR.N = unlimited
		if resp.StatusCode >= 200 {
			break
		}
		if http11 { // 1xx: relay to HTTP/1.1 clients only
			removeHopHeaders(resp.Header)
			cw.WriteString("HTTP/1.1 " + resp.Status + "\r\n")
			resp.Header.Write(cw)
			cw.WriteString("\r\n")
			if err := cw.Flush(); err != nil {
				finish()
				return false, errors.New("client went away")
			}
		}
	}

	removeHopHeaders(resp.Header)
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	if !http11 && chunked {
		resp.TransferEncoding, chunked = nil, false // HTTP/1.0: end the body by closing
	}
	switch {
	case req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		if resp.ContentLength < 0 {
			resp.ContentLength = 0 // no body follows: keep the connection usable
		}
	case resp.ContentLength < 0 && !chunked:
		clientClose = true // the body ends when the connection does
	}
	resp.Close = clientClose
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = flushingBody{resp.Body, cw, nil}
	}
	err := resp.Write(plainWriter{cw})
	if err == nil {
		err = cw.Flush()
	}
	if resp.Body != nil {
		resp.Body.Close()
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
