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
			}
			continue
		}
		t, err := parseTarget(e.Host)
		switch {
		case err != nil:
			m.ignore(e, fmt.Sprintf("invalid host: %v", err))
		case t.ip.IsValid():
			m.ips[netip.AddrPortFrom(t.ip.Unmap(), e.Port)] = label
		default:
			m.exact[nameKey{t.name, e.Port}] = label
		}
	}
	return m
}

func (m *Matcher) ignore(e policy.HostPort, reason string) {
	m.ignored = append(m.ignored, IgnoredEntry{Entry: e, Reason: reason})
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

// decision is the outcome of Matcher.decide.
type decision struct {
	ok     bool
	reason string
	t      target
	// local is true when the matching entry permits a loopback, unspecified
	// or link-local destination: an entry naming that IP literal, or the
	// exact name "localhost" (see Proxy's rebinding guard).
	local bool
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
			return decision{ok: true, t: t, local: true, reason: "matches allowlist entry " + e}
		}
		return decision{t: t, reason: hp + " is an IP address not named by any network allowlist entry"}
	}
	if e, ok := m.exact[nameKey{t.name, port}]; ok {
		return decision{ok: true, t: t, local: t.name == "localhost", reason: "matches allowlist entry " + e}
	}
	for s := t.name; ; {
		if e, ok := m.wildcard[nameKey{s, port}]; ok {
			return decision{ok: true, t: t, reason: "matches allowlist entry " + e}
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
