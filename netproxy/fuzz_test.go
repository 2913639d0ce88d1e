package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// memConn is an in-memory net.Conn: reads return the given bytes then EOF,
// writes are collected. It never blocks, so a fuzzed connection always ends
// — unless it has a gate: then reads wait until gate accepts what was
// written so far, or the connection is closed.
type memConn struct {
	mu     sync.Mutex
	cond   *sync.Cond
	r      *bytes.Reader
	w      bytes.Buffer
	gate   func(written []byte) bool
	closed bool
}

func newMemConn(b []byte) *memConn {
	c := &memConn{r: bytes.NewReader(b)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.gate != nil && !c.closed && !c.gate(c.w.Bytes()) {
		c.cond.Wait()
	}
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.r.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	defer c.cond.Broadcast()
	return c.w.Write(p)
}

func (c *memConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.w.Bytes()...)
}

func (c *memConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

// requestComplete reports whether b holds a complete HTTP request, body
// included: a fuzzed origin answers once it has read one.
func requestComplete(b []byte) bool {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzAllowedDials are the dials the allowlist permits: exact.test
// (192.0.2.1) on 80, *.allowed.test (192.0.2.2) on 443, and two literals.
var fuzzAllowedDials = map[string]bool{"192.0.2.1:80": true, "192.0.2.2:443": true, "10.0.0.1:22": true, "[2001:db8::1]:443": true}

// fuzzResolve gives each allowlisted name an address of its own and every
// other name one that no allowed dial uses, so that a matcher letting a
// wrong name or port through shows as a dial outside fuzzAllowedDials.
func fuzzResolve(_ context.Context, name string) ([]netip.Addr, error) {
	name = strings.ToLower(name)
	switch {
	case name == "exact.test":
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	case strings.HasSuffix(name, ".allowed.test"):
		return []netip.Addr{netip.MustParseAddr("192.0.2.2")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("198.51.100.99")}, nil
}

// FuzzProxyConn feeds arbitrary client bytes (and an arbitrary upstream
// response) through the protocol sniffing, the HTTP request and CONNECT
// parsing, the SOCKS5 handshake, the HTTP/1.1 framing and the matcher. It
// checks that nothing panics or hangs, that only allowlisted destinations
// are ever dialed, and that what reaches an origin is one well-formed
// request (checkUpstreamRequest). Names resolve with fuzzResolve. The
// upstream answers once it has received a complete request (or is
// closed), or at once if its bytes start with "early:".
func FuzzProxyConn(f *testing.F) {
	f.Add([]byte("CONNECT a.allowed.test:443 HTTP/1.1\r\nHost: x\r\n\r\nhello"), []byte("world"))
	f.Add([]byte("CONNECT 10.0.0.1:22 HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("CONNECT evil-allowed.test:443 HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("GET http://exact.test/x HTTP/1.1\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\n\r\nGET http://exact.test/y HTTP/1.1\r\n\r\n"),
		[]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
		[]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.0\r\n\r\n"), []byte("HTTP/1.0 200 OK\r\n\r\nbody until close"))
	f.Add([]byte("HEAD http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 204 No Content\r\n\r\n"))
	f.Add([]byte("GET /relative HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x03\x0ea.allowed.test\x01\xbbdata"), []byte("reply"))
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x01\x0a\x00\x00\x01\x00\x16"), []byte{})
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x04\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\xbb"), []byte{})
	f.Add([]byte("\x05\x02\x00\x02\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"), []byte{})
	f.Add([]byte("\x04\x01\x00\x50\x7f\x00\x00\x01\x00"), []byte{})
	// Chunked bodies, extensions and trailers, both ways.
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5;a=b;c=\"d e\"\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Sum: 1\r\nProxy-Authorization: Basic c2VjcmV0\r\nContent-Length: 3\r\n\r\n"),
		[]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3;e\r\nabc\r\n0\r\nX-T: 1\r\nProxy-Authenticate: Basic\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.0\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;"+strings.Repeat("e", 5000)+"\r\nhello\r\n0\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\n\r\n"))
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff1\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	// Smuggling shapes: CL.TE, TE.CL, duplicated and odd framing headers,
	// and requests hidden in bodies or after them.
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nCONNECT 10.0.0.1:22 HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 37\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), []byte{})
	f.Add([]byte("POST http://exact.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n"),
		[]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte(fmt.Sprintf("POST http://exact.test/ HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", len(smuggled), smuggled)),
		[]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	// Responses: framing the proxy must get right or refuse.
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\nGET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("HEAD http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\rSet-Cookie: a=b\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: "+strings.Repeat("a", 5000)+"\r\n\r\n"))
	f.Add([]byte("PUT http://exact.test/ HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello"),
		[]byte("HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("PUT http://exact.test/ HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\nhello"),
		[]byte("early:HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("GET http://exact.test/ HTTP/1.1\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: X-A\r\nX-A: 1\r\n\r\n"),
		[]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))

	p := New(NewMatcher([]policy.HostPort{
		hp("*.allowed.test", 443), hp("exact.test", 80), hp("10.0.0.1", 22), hp("2001:db8::1", 443),
	}), Options{
		MaxHeaderBytes: 4096,
		Resolve:        fuzzResolve,
	})
	// Whether an address is the host's is the kernel's to say: not this
	// test's (its addresses are TEST-NET ones, which a host may have).
	p.hostOwn = func(netip.Addr) (string, bool, error) { return "", false, nil }
	defer p.Close()
	f.Fuzz(func(t *testing.T, client, upstream []byte) {
		var ups []*memConn
		var methods []string // of the requests that dialed, in order
		p.opts.OnEvent = func(ev Event) {
			if ev.Remote != "" {
				methods = append(methods, ev.Method)
			}
		}
		p.opts.Dial = func(_ context.Context, _, addr string) (net.Conn, error) {
			if !fuzzAllowedDials[addr] {
				t.Errorf("dialed %s", addr)
			}
			var c *memConn
			if rest, ok := bytes.CutPrefix(upstream, []byte("early:")); ok {
				c = newMemConn(rest)
			} else {
				c = newMemConn(upstream)
				c.gate = requestComplete
			}
			ups = append(ups, c)
			return c, nil
		}
		c := newMemConn(client)
		p.slots <- struct{}{} // as Serve does before Accept
		cn := p.track(c)
		done := make(chan struct{})
		go func() {
			cn.serve()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("connection not finished after 10s")
		}
		if len(methods) != len(ups) {
			t.Fatalf("%d dials, %d events with a remote address", len(ups), len(methods))
		}
		for i, up := range ups {
			if methods[i] != "CONNECT" && methods[i] != "SOCKS5" {
				checkUpstreamRequest(t, up.output())
			}
		}
		out := c.output()
		if len(out) > 0 && len(client) > 0 {
			switch {
			case client[0] == 5:
				if out[0] != 5 {
					t.Errorf("SOCKS5 client got %q", out)
				}
			case client[0] >= 'A' && client[0] <= 'Z':
				if !bytes.HasPrefix(out, []byte("HTTP/1.1 ")) {
					t.Errorf("HTTP client got %q", out)
				}
			}
		}
	})
}

// smuggled is a request hidden in a body, for FuzzProxyConn's seeds.
const smuggled = "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n"

// checkUpstreamRequest checks what the proxy wrote on the upstream
// connection of a plain HTTP request: nothing (the client left first), or
// exactly one request that net/http parses, asks for the connection to be
// closed, carries no Proxy-* or hop-by-hop field in its header or trailer
// section and no ambiguous framing, and whose body is complete or cut off
// (the client's was), never followed by anything.
func checkUpstreamRequest(t *testing.T, out []byte) {
	if len(out) == 0 {
		return
	}
	br := bufio.NewReader(bytes.NewReader(out))
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatalf("upstream request does not parse: %v\n%q", err, out)
	}
	if !req.Close || req.Host == "" {
		t.Errorf("upstream request close=%v host=%q:\n%q", req.Close, req.Host, out)
	}
	for k := range req.Header {
		if isProxyHeader(k) || k == "Proxy-Connection" || k == "Keep-Alive" || k == "Upgrade" || k == "Te" {
			t.Errorf("%s forwarded upstream:\n%q", k, out)
		}
	}
	head, _, _ := bytes.Cut(out, []byte("\r\n\r\n"))
	if bytes.Count(head, []byte("\r\nContent-Length:"))+bytes.Count(head, []byte("\r\nTransfer-Encoding:")) > 1 {
		t.Errorf("ambiguous framing upstream:\n%q", out)
	}
	if _, err := io.ReadAll(req.Body); err != nil {
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("upstream body: %v\n%q", err, out)
		}
		return
	}
	for k := range req.Trailer {
		if isProxyHeader(k) || k == "Content-Length" || k == "Host" {
			t.Errorf("trailer %s forwarded upstream:\n%q", k, out)
		}
	}
	if rest, _ := io.ReadAll(br); len(rest) > 0 {
		t.Errorf("bytes after the upstream request: %q\nin %q", rest, out)
	}
}

// FuzzMatcher checks the matcher's invariants on arbitrary hosts: an allowed
// name is one of the entries or under the wildcard's suffix, an allowed IP
// literal is the listed address, and reasons are single printable lines.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{"a.allowed.test", "allowed.test", "evil-allowed.test", "allowed.test.evil", "EXACT.TEST.",
		"127.1", "0x7f.0.0.1", "2130706433", "[::1]", "::ffff:10.0.0.1", "10.0.0.1", "012.0.0.1", "a..b", "\u212Aexact.test",
		"exact.test\r\n", "1.2.3.4.5", "0x", "0x.0x.0x.0x"} {
		f.Add(s, uint16(443))
	}
	m := NewMatcher([]policy.HostPort{hp("*.allowed.test", 443), hp("exact.test", 443), hp("10.0.0.1", 443), hp("::1", 443)})
	f.Fuzz(func(t *testing.T, host string, port uint16) {
		ok, reason := m.Allows(host, port)
		if strings.ContainsAny(reason, "\r\n\x00") || reason == "" {
			t.Fatalf("Allows(%q) reason %q", host, reason)
		}
		if !ok {
			return
		}
		if port != 443 {
			t.Fatalf("Allows(%q, %d) with no entry for that port", host, port)
		}
		tg, err := parseTarget(host)
		if err != nil {
			t.Fatalf("Allows(%q) but parseTarget fails: %v", host, err)
		}
		if tg.ip.IsValid() {
			a := tg.ip.Unmap()
			if a != netip.MustParseAddr("10.0.0.1") && a != netip.MustParseAddr("::1") {
				t.Fatalf("Allows(%q) = address %v", host, a)
			}
			return
		}
		n := tg.name
		if n != "exact.test" && n != "allowed.test" && !strings.HasSuffix(n, ".allowed.test") {
			t.Fatalf("Allows(%q) = name %q", host, n)
		}
		if strings.ToLower(strings.TrimSuffix(host, ".")) != n {
			t.Fatalf("Allows(%q): normalized %q is not the host lower-cased", host, n)
		}
		for _, c := range []byte(n) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				t.Fatalf("Allows(%q) with byte %q", host, c)
			}
		}
	})
}

// TestMemConnEOF keeps memConn honest: reads end with io.EOF.
func TestMemConnEOF(t *testing.T) {
	c := newMemConn([]byte("x"))
	if b, err := io.ReadAll(c); err != nil || string(b) != "x" {
		t.Fatal(b, err)
	}
}
