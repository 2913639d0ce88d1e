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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandbox-executable/policy"
)

var loopback4 = netip.MustParseAddr("127.0.0.1")

// env is a proxy under test with a fake resolver and an event log.
type env struct {
	t       *testing.T
	p       *Proxy
	addr    string
	hosts   map[string][]netip.Addr
	resolve atomic.Int64 // resolutions performed
	dialed  chan string  // addresses passed to Dial

	mu     sync.Mutex
	events []Event
	served chan error
}

type envConfig struct {
	entries   []policy.HostPort
	hosts     map[string]string // name -> comma-separated addresses
	realGuard bool              // keep the rebinding guard as is
	opts      Options
}

// newEnv starts a proxy on 127.0.0.1. Unless realGuard is set, 127.0.0.1
// counts as a remote address for the rebinding guard, so that names can map
// to the loopback test servers; every other loopback address stays guarded.
func newEnv(t *testing.T, cfg envConfig) *env {
	t.Helper()
	e := &env{t: t, hosts: make(map[string][]netip.Addr), dialed: make(chan string, 100), served: make(chan error, 1)}
	for name, list := range cfg.hosts {
		for a := range strings.SplitSeq(list, ",") {
			e.hosts[name] = append(e.hosts[name], netip.MustParseAddr(a))
		}
	}
	opts := cfg.opts
	opts.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
		e.resolve.Add(1)
		if a, ok := e.hosts[host]; ok {
			return a, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	dial := opts.Dial // the test's own, when it has one
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	opts.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case e.dialed <- addr:
		default:
		}
		return dial(ctx, network, addr)
	}
	userEvent := opts.OnEvent
	opts.OnEvent = func(ev Event) {
		e.mu.Lock()
		e.events = append(e.events, ev)
		e.mu.Unlock()
		if userEvent != nil {
			userEvent(ev)
		}
	}
	e.p = New(NewMatcher(cfg.entries), opts)
	if !cfg.realGuard {
		asRemote(e.p)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = l.Addr().String()
	go func() { e.served <- e.p.Serve(l) }()
	t.Cleanup(func() {
		e.p.Close()
		select {
		case err := <-e.served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve returned %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return e
}

// asRemote makes p take 127.0.0.1 for a remote public address (the test
// servers listen there); every other address is screened as ever. The
// kernel is still asked about it, about an address that stands for it, so
// that benchmarks pay what a real dial pays.
func asRemote(p *Proxy) {
	p.classify = func(a netip.Addr) (addrClass, string) {
		if a == loopback4 {
			return classPublic, ""
		}
		return classifyAddr(a)
	}
	p.hostOwn = func(a netip.Addr) (string, bool, error) {
		if a == loopback4 {
			_, _, err := hostAddress(netip.MustParseAddr("192.0.2.1"))
			return "", false, err
		}
		return hostAddress(a)
	}
}

// waitEvents waits until at least n events were emitted and returns them.
func (e *env) waitEvents(n int) []Event {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.mu.Lock()
		evs := append([]Event(nil), e.events...)
		e.mu.Unlock()
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("got %d events, want %d: %+v", len(evs), n, evs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) dial() net.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// connect opens a CONNECT tunnel and returns the connection, a reader
// positioned after the response headers, and the response.
func (e *env) connect(target string) (net.Conn, *bufio.Reader, *http.Response) {
	e.t.Helper()
	c := e.dial()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		e.t.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, br, resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func portOf(t testing.TB, addr string) uint16 {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return ap.Port()
}

// startEcho starts a TCP server that echoes what it reads and, once the
// client half-closes, writes "BYE" and closes.
func startEcho(t testing.TB) (addr string, port uint16) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if _, err := io.Copy(c, c); err == nil {
					c.Write([]byte("BYE"))
				}
			}()
		}
	}()
	return l.Addr().String(), portOf(t, l.Addr().String())
}

// closedPort returns a loopback port with nothing listening on it.
func closedPort(t testing.TB) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := portOf(t, l.Addr().String())
	l.Close()
	return p
}

// checkNoLeak waits for the goroutine count to fall back to base.
func checkNoLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want <= %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Ignored returns the entries NewMatcher ignored because they were malformed.
func (m *Matcher) Ignored() []IgnoredEntry {
	return append([]IgnoredEntry(nil), m.ignored...)
}

// Allows reports whether host:port is in the allowlist, with a one-line
// reason: the entry that matched, or why the destination is refused. host
// may be a name, an IP literal or a bracketed IPv6 literal.
func (m *Matcher) Allows(host string, port uint16) (ok bool, reason string) {
	d := m.decide(host, port)
	return d.ok, d.reason
}
