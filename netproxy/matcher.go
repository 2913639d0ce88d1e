package netproxy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"sandbox-executable/policy"
)

// Matcher decides whether a destination host and port are in the network
// allowlist (CONTRACT §6). It is immutable and safe for concurrent use.
//
// The rules: the port must be equal; an entry "*.example.com" matches
// "example.com" and every name ending in ".example.com"; any other name entry
// matches that exact name. Names are compared case-insensitively (ASCII only)
// and a trailing dot on the requested name is ignored. A requested IP literal
// (IPv4 in any inet_aton(3) form, IPv6, bracketed IPv6, IPv4-mapped IPv6) is
// allowed only by an entry naming the same address. Names with characters
// other than letters, digits, '-', '_' and '.' are refused. Entry protocols
// are never compared.
type Matcher struct {
	exact    map[nameKey]string
	wildcard map[nameKey]string
	ips      map[netip.AddrPort]string
	ignored  []IgnoredEntry
	reach    []Destination // per usable entry, in the allowlist's order
}

// Destination says what the addresses an allowlist entry lets the proxy
// connect to are (see Matcher.Destinations).
type Destination struct {
	Entry, Reaches string
}

// IgnoredEntry is an allowlist entry NewMatcher could not use; it matches
// nothing (the allowlist fails closed, it is never widened).
type IgnoredEntry struct {
	Entry  policy.HostPort
	Reason string
}

type nameKey struct {
	name string
	port uint16
}

// NewMatcher builds a Matcher from allowlist entries. Malformed entries
// ("*", "*.", "foo bar", "*.10.0.0.1", ...) are ignored and listed by
// Ignored.
func NewMatcher(entries []policy.HostPort) *Matcher {
	m := &Matcher{
		exact:    make(map[nameKey]string),
		wildcard: make(map[nameKey]string),
		ips:      make(map[netip.AddrPort]string),
	}
	for _, e := range entries {
		label := entryString(e)
		if suffix, ok := strings.CutPrefix(e.Host, "*."); ok {
			t, err := parseTarget(suffix)
			switch {
			case err != nil:
				m.ignore(e, fmt.Sprintf("invalid wildcard suffix: %v", err))
			case t.ip.IsValid():
				m.ignore(e, "a wildcard cannot apply to an IP address")
			default:
				m.wildcard[nameKey{t.name, e.Port}] = label
				m.reach = append(m.reach, Destination{label, byWildcard.reaches()})
			}
			continue
		}
		t, err := parseTarget(e.Host)
		switch {
		case err != nil:
			m.ignore(e, fmt.Sprintf("invalid host: %v", err))
		case t.ip.IsValid():
			m.ips[netip.AddrPortFrom(t.ip.Unmap(), e.Port)] = label
			m.reach = append(m.reach, Destination{label, byLiteral.reaches()})
		default:
			m.exact[nameKey{t.name, e.Port}] = label
			m.reach = append(m.reach, Destination{label, exactKind(t.name).reaches()})
		}
	}
	return m
}

// Destinations says, for each entry the matcher uses, what the proxy may
// connect to through it (--explain shows it): the rule the proxy applies to
// the addresses a name resolves to, and to the address it dials.
func (m *Matcher) Destinations() []Destination {
	return append([]Destination(nil), m.reach...)
}

func (m *Matcher) ignore(e policy.HostPort, reason string) {
	m.ignored = append(m.ignored, IgnoredEntry{Entry: e, Reason: reason})
}

// decision is the outcome of Matcher.decide.
type decision struct {
	ok     bool
	reason string
	t      target
	// by is how the entry that matched names the destination, which
	// decides what its addresses may be (see matchKind).
	by matchKind
}

// matchKind is how an allowlist entry matched a destination. It decides
// which addresses the proxy may connect to (see Proxy.authorize):
//
//   - an IP literal entry: that address, whatever it is (the host's own,
//     loopback and link-local included): the user named it;
//   - the exact name "localhost": loopback addresses only;
//   - any other exact name: public addresses, and private ones (RFC 1918,
//     CGNAT, unique local) when the whole answer is private and the name
//     has not resolved to a public address earlier in the run (a name
//     that moves from the internet into the private network is
//     rebinding, not moving);
//   - a name matched only by a wildcard: public addresses only. A wildcard
//     covers names nobody reviewed (any subdomain, whoever runs its DNS),
//     so it never leads into a private network.
//
// A name never reaches the host's own addresses (any address of any of its
// interfaces, asked of the kernel when the proxy dials), loopback, the
// unspecified address or link-local (169.254.0.0/16, where clouds serve
// instance metadata, and fe80::/10).
type matchKind int

const (
	byNone matchKind = iota
	byLiteral
	byLocalhost
	byExact
	byWildcard
)

// exactKind is the kind of an exact entry for name.
func exactKind(name string) matchKind {
	if name == "localhost" {
		return byLocalhost
	}
	return byExact
}

// reaches is what an entry of kind k lets the proxy connect to, in words.
func (k matchKind) reaches() string {
	const never = "never the host's own addresses (any of its interfaces', checked on the address dialled when it is dialled), loopback, 0.0.0.0/8, :: link-local (169.254.0.0/16, fe80::/10) or the cloud metadata addresses outside it (fd00:ec2::254, 168.63.129.16, 100.100.100.200, 192.0.0.192)"
	switch k {
	case byLiteral:
		return "that address only, as the entry names it (an address of the host, loopback or link-local included)"
	case byLocalhost:
		return "the loopback addresses the name resolves to (127.0.0.0/8, ::1), and nothing else of the host"
	case byExact:
		return "the name's public addresses, and private ones (" + privateRanges + ") when all of its addresses are private and it has not resolved to a public one earlier in the run; " + never
	case byWildcard:
		return "public addresses only: a name matched by a wildcard never reaches private ranges (" + privateRanges + "); " + never
	}
	return "nothing"
}

func (m *Matcher) decide(host string, port uint16) decision {
	if port == 0 {
		return decision{reason: fmt.Sprintf("%s:0 has no valid port", quoteHost(host))}
	}
	t, err := parseTarget(host)
	if err != nil {
		return decision{reason: fmt.Sprintf("%s is not a valid host name (%v)", quoteHost(host), err)}
	}
	hp := joinHostPort(t.String(), port)
	if t.ip.IsValid() {
		if e, ok := m.ips[netip.AddrPortFrom(t.ip.Unmap(), port)]; ok {
			return decision{ok: true, t: t, by: byLiteral, reason: "matches allowlist entry " + e}
		}
		return decision{t: t, reason: hp + " is an IP address not named by any network allowlist entry"}
	}
	if e, ok := m.exact[nameKey{t.name, port}]; ok {
		return decision{ok: true, t: t, by: exactKind(t.name), reason: "matches allowlist entry " + e}
	}
	for s := t.name; ; {
		if e, ok := m.wildcard[nameKey{s, port}]; ok {
			return decision{ok: true, t: t, by: byWildcard, reason: "matches allowlist entry " + e}
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	return decision{t: t, reason: hp + " is not in the network allowlist"}
}

func entryString(e policy.HostPort) string {
	return joinHostPort(e.Host, e.Port)
}

func joinHostPort(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10))
}

// quoteHost returns host for use in a message: as is when it is printable
// ASCII without spaces or quotes, Go-quoted otherwise (client input must not
// inject lines or control characters into replies and logs).
func quoteHost(host string) string {
	if len(host) > 300 {
		host = host[:300] + "..."
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.Quote(host)
		}
	}
	return host
}
