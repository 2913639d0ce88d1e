package netproxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"sandbox-executable/policy"
)

// TestScreenByEntryKind: what a name may reach depends on the entry that
// matched it. A wildcard reaches public addresses only; an exact name
// reaches private ones too, unless its answer mixes public and private or
// it moved from public to private during the run; no name reaches an
// address the kernel says is the host's own, which is asked on the address
// dialled, when it is dialled; a literal entry reaches its address without
// any of that. Every dial goes to a local echo server, whatever address the
// proxy chose.
func TestScreenByEntryKind(t *testing.T) {
	echo, port := startEcho(t)
	var mu sync.Mutex
	asked := map[netip.Addr]int{} // the host-address questions
	own := netip.MustParseAddr("198.51.100.7")
	e := newEnv(t, envConfig{
		realGuard: true,
		entries: []policy.HostPort{
			hp("corp.test", port), hp("*.wild.test", port), hp("mix.test", port), hp("flip.test", port),
			hp("own.test", port), hp("10.1.2.3", port), hp("198.51.100.7", port),
		},
		hosts: map[string]string{
			"corp.test":   "10.1.1.1",
			"a.wild.test": "10.1.1.2",
			"b.wild.test": "100.64.0.1",
			"c.wild.test": "fd00::5",
			"d.wild.test": "203.0.113.9",
			"mix.test":    "203.0.113.1,10.0.0.1",
			"flip.test":   "203.0.113.7",
			"own.test":    "203.0.113.8,198.51.100.7",
		},
		opts: Options{Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, echo)
		}},
	})
	e.p.hostOwn = func(a netip.Addr) (string, bool, error) {
		mu.Lock()
		asked[a]++
		mu.Unlock()
		return "an address of this host", a == own, nil
	}
	try := func(host string, code int, reason string) {
		t.Helper()
		target := fmt.Sprintf("%s:%d", host, port)
		c, _, resp := e.connect(target)
		defer c.Close()
		if resp.StatusCode != code {
			t.Errorf("CONNECT %s: %s, want %d", target, resp.Status, code)
		}
		if code == 403 {
			if body := readBody(t, resp); !strings.Contains(body, reason) {
				t.Errorf("CONNECT %s: body %q, want %q", target, body, reason)
			}
		}
	}
	try("corp.test", 200, "")
	try("a.wild.test", 403, "matches allowlist entry *.wild.test")
	try("a.wild.test", 403, "a name matched only by a wildcard reaches public addresses only")
	try("b.wild.test", 403, "CGNAT")
	try("c.wild.test", 403, "unique local")
	try("d.wild.test", 200, "")
	try("mix.test", 403, "a rebinding answer")
	try("flip.test", 200, "")
	e.hosts["flip.test"] = []netip.Addr{netip.MustParseAddr("10.9.9.9")}
	try("flip.test", 403, "after resolving to a public one earlier in this run")
	try("own.test", 403, "198.51.100.7, an address of this host")
	try("10.1.2.3", 200, "")
	try("198.51.100.7", 200, "")

	mu.Lock()
	defer mu.Unlock()
	if asked[netip.MustParseAddr("10.1.2.3")] != 0 || asked[own] != 1 {
		t.Errorf("host-address questions %v: a literal entry's address is never asked about, a name's each time it is dialled", asked)
	}
	// The refusals are events with their reasons (the denial log's).
	var refused int
	for _, ev := range e.waitEvents(12) {
		if !ev.Allowed {
			refused++
			if ev.Reason == "" || ev.Remote != "" {
				t.Errorf("refusal without a reason, or with a dial: %+v", ev)
			}
		}
	}
	if refused != 7 {
		t.Errorf("%d refusals, want 7", refused)
	}
	if s := e.p.Stats(); s.Refused != 7 || s.Allowed != 5 {
		t.Errorf("stats %+v", s)
	}
}

// TestHostAddressAsksTheKernel: the kernel's route to an address of the
// host's, loopback's whole /8 included, is local; to an address it does not
// have, it is not.
func TestHostAddressAsksTheKernel(t *testing.T) {
	var mine []netip.Addr
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && !ip.Unmap().IsLinkLocalUnicast() {
					mine = append(mine, ip.Unmap())
				}
			}
		}
	}
	for _, a := range append(mine, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.3.2.1"), netip.MustParseAddr("::ffff:127.0.0.1")) {
		if kind, own, err := hostAddress(a); err != nil || !own || kind == "" {
			t.Errorf("hostAddress(%s) = %q %v %v, want the host's", a, kind, own, err)
		}
	}
	for _, a := range []netip.Addr{netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ffff::1")} {
		if kind, own, err := hostAddress(a); err != nil || own {
			t.Errorf("hostAddress(%s) = %q %v %v, want not the host's", a, kind, own, err)
		}
	}
}
