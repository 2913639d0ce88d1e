package netproxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// memConn is an in-memory net.Conn: reads return the given bytes then EOF,
// writes are collected. It never blocks, so a fuzzed connection always ends.
type memConn struct {
	mu     sync.Mutex
	r      *bytes.Reader
	w      bytes.Buffer
	closed bool
}

func newMemConn(b []byte) *memConn { return &memConn{r: bytes.NewReader(b)} }

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	c.mu.Unlock()
	return nil
}

func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

var fuzzAllowedDials = map[string]bool{"192.0.2.1:443": true, "192.0.2.1:80": true, "10.0.0.1:22": true, "[2001:db8::1]:443": true}

// FuzzProxyConn feeds arbitrary client bytes (and an arbitrary upstream
// response) through the protocol sniffing, the HTTP request and CONNECT
// parsing, the SOCKS5 handshake and the matcher. It checks that nothing
// panics or hangs and that only allowlisted destinations are ever dialed.
// Every name resolves to 192.0.2.1.
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

	p := New(NewMatcher([]policy.HostPort{
		hp("*.allowed.test", 443), hp("exact.test", 80), hp("10.0.0.1", 22), hp("2001:db8::1", 443),
	}), Options{
		MaxHeaderBytes: 4096,
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
		},
	})
	defer p.Close()
	f.Fuzz(func(t *testing.T, client, upstream []byte) {
		p.opts.Dial = func(_ context.Context, _, addr string) (net.Conn, error) {
			if !fuzzAllowedDials[addr] {
				t.Errorf("dialed %s", addr)
			}
			return newMemConn(upstream), nil
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
