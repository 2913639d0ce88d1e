package netproxy

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"sandbox-executable/policy"
)

// socksRequestBytes builds a greeting plus a request.
func socksRequestBytes(cmd, atyp byte, host string, port uint16) []byte {
	b := []byte{5, 1, 0, 5, cmd, 0, atyp}
	switch atyp {
	case socksAtypDomain:
		b = append(b, byte(len(host)))
		b = append(b, host...)
	default:
		a := netip.MustParseAddr(host)
		b = append(b, a.AsSlice()...)
	}
	return binary.BigEndian.AppendUint16(b, port)
}

// socksDo sends a request and returns the reply code and the connection.
func socksDo(t *testing.T, e *env, req []byte) (byte, net.Conn) {
	t.Helper()
	c := e.dial()
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var method [2]byte
	if _, err := io.ReadFull(c, method[:]); err != nil {
		t.Fatalf("method reply: %v", err)
	}
	if method != [2]byte{5, 0} {
		t.Fatalf("method reply %v", method)
	}
	var reply [10]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if reply[0] != 5 || reply[2] != 0 || reply[3] != 1 {
		t.Fatalf("malformed reply %v", reply)
	}
	return reply[1], c
}

func TestSOCKS5(t *testing.T) {
	_, port := startEcho(t)
	closed := closedPort(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("*.allowed.test", port), hp("127.0.0.1", port), hp("::1", port),
			hp("closed.test", closed), hp("nxdomain.test", port)},
		hosts: map[string]string{"echo.allowed.test": "127.0.0.1", "denied.test": "127.0.0.1", "closed.test": "127.0.0.1"},
	})
	// Allowed by name, with data round trip and half-close.
	code, c := socksDo(t, e, socksRequestBytes(socksCmdConnect, socksAtypDomain, "ECHO.allowed.test", port))
	if code != socksSucceeded {
		t.Fatalf("reply %d", code)
	}
	io.WriteString(c, "socks ping")
	c.(*net.TCPConn).CloseWrite()
	if got, _ := io.ReadAll(c); string(got) != "socks pingBYE" {
		t.Errorf("got %q", got)
	}
	ev := e.waitEvents(1)[0]
	if ev.Method != "SOCKS5" || ev.Host != "echo.allowed.test" || !ev.Allowed || ev.BytesUp != 10 || ev.BytesDown != 13 {
		t.Errorf("event %+v", ev)
	}

	ipv6ok := true
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		ipv6ok = false
	} else {
		l.Close()
	}
	for _, tc := range []struct {
		name string
		req  []byte
		code byte
	}{
		{"IPv4 listed", socksRequestBytes(socksCmdConnect, socksAtypIPv4, "127.0.0.1", port), socksSucceeded},
		{"IPv4 unlisted", socksRequestBytes(socksCmdConnect, socksAtypIPv4, "127.0.0.2", port), socksNotAllowed},
		{"IPv6 unlisted", socksRequestBytes(socksCmdConnect, socksAtypIPv6, "::2", port), socksNotAllowed},
		{"IPv4-mapped listed", socksRequestBytes(socksCmdConnect, socksAtypIPv6, "::ffff:127.0.0.1", port), socksSucceeded},
		{"literal as domain", socksRequestBytes(socksCmdConnect, socksAtypDomain, "127.1", port), socksSucceeded},
		{"literal as domain unlisted", socksRequestBytes(socksCmdConnect, socksAtypDomain, "0x7f000002", port), socksNotAllowed},
		{"denied name", socksRequestBytes(socksCmdConnect, socksAtypDomain, "denied.test", port), socksNotAllowed},
		{"evil suffix", socksRequestBytes(socksCmdConnect, socksAtypDomain, "evil-allowed.test", port), socksNotAllowed},
		{"denied port", socksRequestBytes(socksCmdConnect, socksAtypDomain, "echo.allowed.test", port+1), socksNotAllowed},
		{"empty name", socksRequestBytes(socksCmdConnect, socksAtypDomain, "", port), socksNotAllowed},
		{"bad name", socksRequestBytes(socksCmdConnect, socksAtypDomain, "a\x00b.allowed.test", port), socksNotAllowed},
		{"BIND", socksRequestBytes(socksCmdBind, socksAtypDomain, "echo.allowed.test", port), socksCmdNotSupported},
		{"UDP ASSOCIATE", socksRequestBytes(socksCmdUDPAssociate, socksAtypIPv4, "0.0.0.0", 0), socksCmdNotSupported},
		{"refused port", socksRequestBytes(socksCmdConnect, socksAtypDomain, "closed.test", closed), socksConnRefused},
		{"nxdomain", socksRequestBytes(socksCmdConnect, socksAtypDomain, "nxdomain.test", port), socksHostUnreachable},
		{"bad atyp", append([]byte{5, 1, 0, 5, 1, 0, 9}, make([]byte, 6)...), socksAtypNotSupported},
	} {
		code, c := socksDo(t, e, tc.req)
		if code != tc.code {
			t.Errorf("%s: reply %#x, want %#x", tc.name, code, tc.code)
		}
		if code != socksSucceeded {
			if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
				t.Errorf("%s: connection not closed", tc.name)
			}
		}
		c.Close()
	}
	if ipv6ok {
		code, c := socksDo(t, e, socksRequestBytes(socksCmdConnect, socksAtypIPv6, "::1", port))
		if code != socksConnRefused { // allowed; the echo server listens on IPv4 only
			t.Errorf("IPv6 listed: reply %#x", code)
		}
		c.Close()
	} else {
		t.Log("no IPv6 loopback here: the allowed IPv6 literal case is not run")
	}
	// Only "username/password" offered: no acceptable method.
	c = e.dial()
	c.Write([]byte{5, 1, 2})
	if got, _ := io.ReadAll(c); string(got) != "\x05\xff" {
		t.Errorf("no acceptable method: %q", got)
	}
	// SOCKS4 gets a SOCKS4 rejection.
	c = e.dial()
	c.Write([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
	if got, _ := io.ReadAll(c); len(got) != 8 || got[1] != 0x5b {
		t.Errorf("SOCKS4: %q", got)
	}
	evs := e.waitEvents(19)
	var reasons []string
	for _, ev := range evs {
		reasons = append(reasons, ev.Reason)
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"UDP ASSOCIATE is not supported", "BIND is not supported", "no acceptable authentication", "SOCKS4 is not supported", "denied.test:"} {
		if !strings.Contains(all, want) {
			t.Errorf("no event reason mentions %q:\n%s", want, all)
		}
	}
}
