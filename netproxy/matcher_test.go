package netproxy

import (
	"net/netip"
	"strings"
	"testing"

	"sandbox-executable/policy"
)

func hp(host string, port uint16) policy.HostPort {
	return policy.HostPort{Host: host, Port: port, Protocol: "tcp"}
}

func TestMatcherAllows(t *testing.T) {
	m := NewMatcher([]policy.HostPort{
		hp("*.allowed.test", 443),
		hp("exact.test", 443),
		hp("exact.test", 8080),
		hp("localhost", 3000),
		hp("127.0.0.1", 8000),
		hp("::1", 8001),
		hp("[2001:db8::5]", 443),
		hp("10.1.2.3", 22),
		hp("under_score.test", 80),
		hp("*.Mixed.Case.TEST", 80),
		hp("udp.test", 53), // protocol is never compared
	})
	tests := []struct {
		host string
		port uint16
		ok   bool
		why  string // substring of the reason
	}{
		// Wildcards.
		{"allowed.test", 443, true, "*.allowed.test:443"},
		{"a.allowed.test", 443, true, ""},
		{"a.b.c.allowed.test", 443, true, ""},
		{"evil-allowed.test", 443, false, "not in the network allowlist"},
		{"allowed.test.evil", 443, false, ""},
		{"xallowed.test", 443, false, ""},
		{"allowed.test", 80, false, ""},
		{"a.allowed.test", 444, false, ""},
		{"test", 443, false, ""},
		{".allowed.test", 443, false, "empty label"},
		{"a..allowed.test", 443, false, "empty label"},
		{"x.mixed.case.test", 80, true, ""},
		// Exact names.
		{"exact.test", 443, true, ""},
		{"exact.test", 8080, true, ""},
		{"exact.test", 80, false, ""},
		{"a.exact.test", 443, false, ""},
		{"EXACT.Test", 443, true, ""},
		{"exact.test.", 443, true, ""},
		{"A.ALLOWED.TEST.", 443, true, ""},
		{"exact.test..", 443, false, ""},
		{"under_score.test", 80, true, ""},
		{"udp.test", 53, true, ""},
		{"exact.test", 0, false, "no valid port"},
		// Unicode case folding must not turn K (U+212A KELVIN SIGN) into k.
		{"\u212Aexact.test", 443, false, "not a valid host name"},
		{"ex\u0430ct.test", 443, false, "not a valid host name"},
		// Characters outside LDH.
		{"exact.test/", 443, false, "not a valid host name"},
		{"exact test", 443, false, ""},
		{"exact.test\x00", 443, false, ""},
		{"exact.test\r\nX: y", 443, false, ""},
		{"user@exact.test", 443, false, ""},
		{"exact.test%00", 443, false, ""},
		{"*.allowed.test", 443, false, ""},
		{"", 443, false, "empty host"},
		{".", 443, false, "empty host"},
		{strings.Repeat("a", 64) + ".allowed.test", 443, false, "label longer"},
		{strings.Repeat("a.", 130) + "allowed.test", 443, false, "longer than 253"},
		// IP literals: only by an entry naming the same address.
		{"127.0.0.1", 8000, true, "127.0.0.1:8000"},
		{"127.0.0.1", 8001, false, "IP address"},
		{"127.1", 8000, true, ""},
		{"0x7f.1", 8000, true, ""},
		{"0x7f.0.0.1", 8000, true, ""},
		{"0177.0.0.1", 8000, true, ""},
		{"2130706433", 8000, true, ""},
		{"0x7f000001", 8000, true, ""},
		{"017700000001", 8000, true, ""},
		{"127.0.0.1.", 8000, true, ""},
		{"::ffff:127.0.0.1", 8000, true, ""},
		{"[::ffff:7f00:1]", 8000, true, ""},
		{"127.0.0.2", 8000, false, "IP address"},
		{"127.2", 8000, false, ""},
		{"::1", 8001, true, ""},
		{"[::1]", 8001, true, ""},
		{"0:0:0:0:0:0:0:1", 8001, true, ""},
		{"::1", 8000, false, ""},
		{"2001:db8::5", 443, true, ""},
		{"[2001:DB8:0::5]", 443, true, ""},
		{"10.1.2.3", 22, true, ""},
		{"10.1.2.3", 23, false, ""},
		{"1.2.3.4", 443, false, "IP address"},
		{"0x01020304", 443, false, "IP address"},
		{"16909060", 443, false, "IP address"},
		{"0", 443, false, "IP address"},
		// Malformed numbers are never names.
		{"127.0.0.256", 8000, false, "not a valid IPv4"},
		{"1.2.3.4.5", 443, false, "not a valid IPv4"},
		{"08.1", 443, false, "not a valid IPv4"},
		{"4294967296", 443, false, "not a valid IPv4"},
		{"0x100000000", 443, false, "not a valid IPv4"},
		{"a.123", 443, false, "not a valid IPv4"},
		{"exact.0x1g", 443, false, "not in the network allowlist"}, // not numeric: a name
		{"[127.0.0.1]", 8000, false, "not an IPv6"},
		{"[::1", 8001, false, "unbalanced"},
		{"::1:", 8001, false, "not an IPv6"},
		{"1.2.3.4:80", 443, false, ""},
		{"::%\r", 443, false, "zone"},
		{"[fe80::1%eth0\n]", 443, false, "zone"},
		{"fe80::1%" + strings.Repeat("a", 16), 443, false, "zone"},
		// Names containing digits are still names.
		{"123.allowed.test", 443, true, ""},
		{"0x7f.allowed.test", 443, true, ""},
		// localhost by name.
		{"localhost", 3000, true, ""},
		{"LOCALHOST.", 3000, true, ""},
		{"localhost", 3001, false, ""},
	}
	for _, tc := range tests {
		ok, why := m.Allows(tc.host, tc.port)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("Allows(%q, %d) = %v, %q; want %v, reason containing %q", tc.host, tc.port, ok, why, tc.ok, tc.why)
		}
		if strings.ContainsAny(why, "\r\n") {
			t.Errorf("Allows(%q, %d) reason has a line break: %q", tc.host, tc.port, why)
		}
	}
}

func TestMatcherIgnoresMalformedEntries(t *testing.T) {
	m := NewMatcher([]policy.HostPort{
		hp("*", 443), hp("*.", 443), hp("", 443), hp("bad host", 443),
		hp("*.10.0.0.1", 443), hp("*.*.x.test", 443), hp("x.*.test", 443),
		hp("*x.test", 443), hp("300.1.1.1", 443), hp("[::1", 443),
		hp("good.test", 443),
	})
	if got := len(m.Ignored()); got != 10 {
		t.Errorf("Ignored() has %d entries, want 10: %+v", got, m.Ignored())
	}
	for _, h := range []string{"x.test", "a.x.test", "10.0.0.1", "a.10.0.0.1", "bad host", "*", "300.1.1.1", "0.0.0.0", "::1"} {
		if ok, why := m.Allows(h, 443); ok {
			t.Errorf("Allows(%q) = true (%s) with only malformed entries for it", h, why)
		}
	}
	if ok, _ := m.Allows("good.test", 443); !ok {
		t.Error("good.test refused")
	}
	if ok, _ := NewMatcher(nil).Allows("x.test", 443); ok {
		t.Error("empty matcher allowed x.test")
	}
}

func TestMatcherKinds(t *testing.T) {
	m := NewMatcher([]policy.HostPort{hp("localhost", 80), hp("*.localhost", 81), hp("*.svc.test", 80), hp("127.0.0.1", 80), hp("svc.test", 81)})
	for _, tc := range []struct {
		host string
		port uint16
		by   matchKind
	}{
		{"localhost", 80, byLocalhost},
		{"LocalHost.", 80, byLocalhost},
		{"localhost", 81, byWildcard}, // via the wildcard: not the exact name
		{"a.localhost", 81, byWildcard},
		{"x.svc.test", 80, byWildcard},
		{"svc.test", 80, byWildcard},
		{"svc.test", 81, byExact},
		{"127.0.0.1", 80, byLiteral},
	} {
		d := m.decide(tc.host, tc.port)
		if !d.ok || d.by != tc.by {
			t.Errorf("decide(%q, %d) = ok %v by %d, want ok by %d", tc.host, tc.port, d.ok, d.by, tc.by)
		}
	}
	// Each usable entry says what it reaches, in the allowlist's order.
	ds := m.Destinations()
	if len(ds) != 5 || ds[0].Entry != "localhost:80" || ds[3].Entry != "127.0.0.1:80" {
		t.Fatalf("Destinations() = %+v", ds)
	}
	for i, want := range []string{"loopback", "public addresses only", "public addresses only", "that address only", "private ones"} {
		if !strings.Contains(ds[i].Reaches, want) {
			t.Errorf("%s reaches %q, want it to say %q", ds[i].Entry, ds[i].Reaches, want)
		}
	}
}

func TestParseInetAton(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4": "1.2.3.4", "1.2.3": "1.2.0.3", "1.2": "1.0.0.2", "1": "0.0.0.1",
		"1.2.65535": "1.2.255.255", "1.16777215": "1.255.255.255", "4294967295": "255.255.255.255",
		"0x.1": "0.0.0.1", "0X10.0": "16.0.0.0", "010.0.0.1": "8.0.0.1", "00": "0.0.0.0",
	} {
		a, ok := parseInetAton(in)
		if !ok || a != netip.MustParseAddr(want) {
			t.Errorf("parseInetAton(%q) = %v, %v; want %s", in, a, ok, want)
		}
	}
	for _, in := range []string{"", ".", "1.", ".1", "1..2", "256.1", "1.2.65536", "1.16777216", "4294967296",
		"1.2.3.4.5", "09", "0x1g", "a", "1.2.3.a", "-1", "+1", "1 .2", "0xffffffffff"} {
		if a, ok := parseInetAton(in); ok {
			t.Errorf("parseInetAton(%q) = %v, want failure", in, a)
		}
	}
}

func TestClassifyAddr(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.255.0.9", "::1", "0.0.0.0", "::", "169.254.169.254", "fe80::1",
		"::ffff:127.0.0.1", "::ffff:169.254.1.1", "0.1.2.3", "64:ff9b::7f00:1", "fd00:ec2::254", "ff02::1",
		"168.63.129.16", "100.100.100.200", "192.0.0.192", "::ffff:168.63.129.16", "64:ff9b::a83f:8110"} {
		if c, _ := classifyAddr(netip.MustParseAddr(s)); c != classInternal {
			t.Errorf("classifyAddr(%s) = %d, want internal", s, c)
		}
	}
	for _, s := range []string{"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.254",
		"fd00::1", "fc00::1", "fec0::1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "192.0.0.8", "240.0.0.1", "250.1.2.3"} {
		if c, kind := classifyAddr(netip.MustParseAddr(s)); c != classPrivate || kind == "" {
			t.Errorf("classifyAddr(%s) = %d %q, want private", s, c, kind)
		}
	}
	for _, s := range []string{"1.1.1.1", "172.32.0.1", "100.128.0.1", "192.0.2.1", "2001:db8::1", "64:ff9b::101:101", "2606:4700::1111"} {
		if c, kind := classifyAddr(netip.MustParseAddr(s)); c != classPublic {
			t.Errorf("classifyAddr(%s) = %d %q, want public", s, c, kind)
		}
	}
}
