package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// TestRebindingGuard runs with the real guard: the test servers are on
// 127.0.0.1, which names may only reach through "localhost" or an entry
// naming the address.
func TestRebindingGuard(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{
		realGuard: true,
		entries: []policy.HostPort{
			hp("rebind.test", port), hp("*.rebind.test", port), hp("mixed.test", port), hp("v6.test", port),
			hp("meta.test", 80), hp("zero.test", port), hp("mapped.test", port),
			hp("localhost", port), hp("*.localhost", port+1), hp("127.0.0.1", port),
		},
		hosts: map[string]string{
			"rebind.test":   "127.0.0.1",
			"a.rebind.test": "127.0.0.5",
			"mixed.test":    "192.0.2.1,127.0.0.1",
			"v6.test":       "::1",
			"meta.test":     "169.254.169.254",
			"zero.test":     "0.0.0.0",
			"mapped.test":   "::ffff:127.0.0.1",
			"localhost":     "127.0.0.1",
		},
	})
	for _, tc := range []struct {
		target string
		code   int
		reason string
	}{
		{fmt.Sprintf("rebind.test:%d", port), 403, "resolves to 127.0.0.1, a loopback address"},
		{fmt.Sprintf("a.rebind.test:%d", port), 403, "loopback"},
		{fmt.Sprintf("mixed.test:%d", port), 403, "127.0.0.1"},
		{fmt.Sprintf("v6.test:%d", port), 403, "::1"},
		{"meta.test:80", 403, "link-local"},
		{fmt.Sprintf("zero.test:%d", port), 403, "unspecified"},
		{fmt.Sprintf("mapped.test:%d", port), 403, "loopback"},
		{fmt.Sprintf("localhost:%d", port+1), 403, "loopback"}, // matched by *.localhost, not the name
		{fmt.Sprintf("localhost:%d", port), 200, ""},
		{fmt.Sprintf("LocalHost.:%d", port), 200, ""},
		{fmt.Sprintf("127.0.0.1:%d", port), 200, ""},
	} {
		c, _, resp := e.connect(tc.target)
		if resp.StatusCode != tc.code {
			t.Errorf("CONNECT %s: %s, want %d", tc.target, resp.Status, tc.code)
		}
		if tc.code == 403 {
			if body := readBody(t, resp); !strings.Contains(body, tc.reason) {
				t.Errorf("CONNECT %s: body %q, want %q", tc.target, body, tc.reason)
			}
		}
		c.Close()
	}
	// Only allowed connections were dialed, each to an address that was
	// checked, and each name was resolved exactly once.
	close(e.dialed)
	for a := range e.dialed {
		if a != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("dialed %s", a)
		}
	}
	if n := e.resolve.Load(); n != 10 {
		t.Errorf("%d resolutions, want 10 (one per name request)", n)
	}
	if s := e.p.Stats(); s.Refused != 8 || s.Allowed != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestSlowClientsTimedOut(t *testing.T) {
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("web.test", 80)},
		opts:    Options{RequestTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond},
	})
	for _, prefix := range []string{"", "G", "GET http://web.test/ HTTP/1.1\r\nX-Slow: ", "CONNECT web.test:80 HTTP/1.1\r\n", "\x05", "\x05\x01\x00\x05\x01"} {
		t.Run(fmt.Sprintf("%q", prefix), func(t *testing.T) {
			t.Parallel()
			slowClient(t, e, prefix)
		})
	}
}

// slowClient sends prefix, then trickles a byte every 50ms: the proxy must
// drop it once the request timeout (200ms) has passed, whatever it sends.
// The trickle goes on until the proxy ends the connection (a minute at
// most, the read's deadline): how soon that is depends on the host's load,
// that it happens does not.
func slowClient(t *testing.T, e *env, prefix string) {
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, prefix)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1200 {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = io.ReadAll(c)
	took := time.Since(start)
	c.Close()
	<-done
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("connection still held after %v of trickling", took)
	} else if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Errorf("read: %v", err)
	}
}

func TestIdleKeepAliveTimedOut(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("web.test", o.port)},
		hosts:   map[string]string{"web.test": "127.0.0.1"},
		opts:    Options{IdleTimeout: 100 * time.Millisecond},
	})
	c := e.dial()
	br := bufio.NewReader(c)
	// The idle timer starts after the response, so after start: however
	// busy the host, the close comes no sooner than 100ms after it, and
	// it comes (before dial's deadline, 10 s).
	start := time.Now()
	fmt.Fprintf(c, "GET http://web.test:%d/ HTTP/1.1\r\n\r\n", o.port)
	resp := rawResponse(t, br, "GET")
	readBody(t, resp)
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("idle connection closed after %v, before its 100ms", d)
	}
}

func TestErrorsDoNotStopTheProxy(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("echo.test", port)}, hosts: map[string]string{"echo.test": "127.0.0.1"}})
	for _, junk := range []string{"\x00\x01\x02", "\x16\x03\x01\x00", "\xff", "GET\r\n\r\n", "\x05\x00", "\x05\x01\x00\x04\x01\x00\x01"} {
		c := e.dial()
		io.WriteString(c, junk)
		io.ReadAll(c)
		c.Close()
	}
	// Connections dropped at once, and reset.
	for range 20 {
		c := e.dial()
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	c, _, resp := e.connect(fmt.Sprintf("echo.test:%d", port))
	if resp.StatusCode != 200 {
		t.Fatalf("after junk: %s", resp.Status)
	}
	c.Close()
	if s := e.p.Stats(); s.BadRequests < 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestEventsAndCounters(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("web.test", o.port)},
		hosts:   map[string]string{"web.test": "127.0.0.1"},
	})
	c := e.dial()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET http://web.test:%d/x HTTP/1.1\r\n\r\n", o.port)
	readBody(t, rawResponse(t, br, "GET"))
	fmt.Fprintf(c, "POST http://denied.test:%d/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", o.port)
	readBody(t, rawResponse(t, br, "POST"))
	evs := e.waitEvents(2)
	a, r := evs[0], evs[1]
	if !a.Allowed || a.Method != "GET" || a.Host != "web.test" || a.Port != o.port || a.BytesUp == 0 || a.BytesDown == 0 ||
		a.Remote == "" || a.Duration <= 0 || a.Client != c.LocalAddr().String() {
		t.Errorf("allowed event %+v", a)
	}
	if r.Allowed || r.Method != "POST" || r.Host != "denied.test" || r.Port != o.port || r.BytesUp != 0 || r.Remote != "" ||
		r.Reason != fmt.Sprintf("denied.test:%d is not in the network allowlist", o.port) {
		t.Errorf("refused event %+v", r)
	}
	s := e.p.Stats()
	if s.Allowed != 1 || s.Refused != 1 || s.BytesUp != uint64(a.BytesUp) || s.BytesDown != uint64(a.BytesDown) {
		t.Errorf("stats %+v", s)
	}
}

// TestNoGoroutineLeak leaves connections in every state, then Closes the
// proxy: all its goroutines must end although the clients stay connected.
func TestNoGoroutineLeak(t *testing.T) {
	_, echoPort := startEcho(t)
	o := startOrigin(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	base := runtime.NumGoroutine()

	p := New(NewMatcher([]policy.HostPort{hp("echo.test", echoPort), hp("web.test", o.port), hp("slow.test", 9)}), Options{
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "slow.test" {
				<-ctx.Done() // a resolver that hangs until canceled
				return nil, ctx.Err()
			}
			return []netip.Addr{loopback4}, nil
		},
	})
	asRemote(p)
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	addr := l.Addr().String()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// An open CONNECT tunnel.
	c1 := dial()
	fmt.Fprintf(c1, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n", echoPort)
	br1 := bufio.NewReader(c1)
	if resp := rawResponse(t, br1, "CONNECT"); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	// An open SOCKS5 tunnel.
	c2 := dial()
	c2.Write(socksRequestBytes(socksCmdConnect, socksAtypDomain, "echo.test", echoPort))
	io.ReadFull(c2, make([]byte, 12))
	// An idle kept-alive HTTP connection.
	c3 := dial()
	br3 := bufio.NewReader(c3)
	fmt.Fprintf(c3, "GET http://web.test:%d/ HTTP/1.1\r\n\r\n", o.port)
	readBody(t, rawResponse(t, br3, "GET"))
	// A half-sent request, a silent connection, a stuck resolution.
	io.WriteString(dial(), "GET http://web.te")
	dial()
	fmt.Fprintf(dial(), "CONNECT slow.test:9 HTTP/1.1\r\n\r\n")
	// An HTTP request whose upload is in progress.
	c4 := dial()
	fmt.Fprintf(c4, "POST http://web.test:%d/ HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc", o.port)

	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Active != 7 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a := p.Stats().Active; a != 7 {
		t.Fatalf("%d active connections, want 7", a)
	}
	time.Sleep(50 * time.Millisecond) // let the stuck resolution and the upload start
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve: %v", err)
	}
	if a := p.Stats().Active; a != 0 {
		t.Errorf("%d active connections after Close", a)
	}
	// Serve on a closed proxy returns at once.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := p.Serve(l2); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	checkNoLeak(t, base)
}

func TestMaxConns(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("echo.test", port)},
		hosts:   map[string]string{"echo.test": "127.0.0.1"},
		opts:    Options{MaxConns: 2},
	})
	a, _, _ := e.connect(fmt.Sprintf("echo.test:%d", port))
	e.connect(fmt.Sprintf("echo.test:%d", port))
	// The third waits in the backlog until a slot frees.
	c := e.dial()
	fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\n", port)
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("third connection served beyond MaxConns")
	}
	a.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("third connection after a slot freed: %v %v", resp, err)
	}
}
