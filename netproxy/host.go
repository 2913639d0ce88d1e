package netproxy

import (
	"errors"
	"net/netip"
	"strings"
)

// target is a requested destination host after normalization: either a name
// (lower-case ASCII, no trailing dot, LDH and '_' only) or an IP literal.
type target struct {
	name string     // the normalized name; empty for IP literals
	ip   netip.Addr // valid for IP literals only
}

// String returns the normalized host: the name, or the textual address.
func (t target) String() string {
	if t.ip.IsValid() {
		return t.ip.String()
	}
	return t.name
}

const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// parseTarget normalizes a requested host. IPv6 literals may be bracketed;
// anything whose last label is numeric must be an IPv4 literal under the
// permissive inet_aton(3) rules ("127.1", "0x7f.1", "2130706433") and is
// returned as such, so that no resolver can read a "name" as an address the
// allowlist never named.
func parseTarget(host string) (target, error) {
	if host == "" {
		return target{}, errors.New("empty host")
	}
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return target{}, errors.New("unbalanced brackets")
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() {
			return target{}, errors.New("bracketed host is not an IPv6 address")
		}
		return target{ip: a}, checkZone(a.Zone())
	}
	if strings.IndexByte(host, ':') >= 0 {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return target{}, errors.New("host contains ':' but is not an IPv6 address")
		}
		return target{ip: a}, checkZone(a.Zone())
	}
	name := asciiLower(host)
	name = strings.TrimSuffix(name, ".")
	if name == "" {
		return target{}, errors.New("empty host")
	}
	last := name[strings.LastIndexByte(name, '.')+1:]
	if numericLabel(last) {
		a, ok := parseInetAton(name)
		if !ok {
			return target{}, errors.New("numeric host that is not a valid IPv4 address")
		}
		return target{ip: a}, nil
	}
	if err := checkLDH(name); err != nil {
		return target{}, err
	}
	return target{name: name}, nil
}

// checkZone accepts an IPv6 zone only if it could be an interface name or
// index (netip accepts any bytes there, control characters included).
func checkZone(z string) error {
	if len(z) > 15 {
		return errors.New("IPv6 zone longer than an interface name")
	}
	for i := 0; i < len(z); i++ {
		c := z[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return errors.New("IPv6 zone is not an interface name")
		}
	}
	return nil
}

// asciiLower lower-cases ASCII letters only. strings.ToLower would apply
// Unicode case folding, which maps for example U+212A KELVIN SIGN to 'k';
// non-ASCII bytes must survive so that checkLDH rejects them.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

// checkLDH reports whether name (already lower-cased, no trailing dot) is a
// sequence of 1-63 byte labels of letters, digits, '-' and '_'.
func checkLDH(name string) error {
	if len(name) > maxNameLen {
		return errors.New("name longer than 253 bytes")
	}
	label := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return errors.New("empty label")
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return errors.New("character outside letters, digits, '-', '_' and '.'")
		}
		label++
		if label > maxLabelLen {
			return errors.New("label longer than 63 bytes")
		}
	}
	if label == 0 {
		return errors.New("empty label")
	}
	return nil
}

// numericLabel reports whether a label looks like a number: all decimal
// digits, or "0x" followed by hex digits (WHATWG's "ends in a number").
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseInetAton parses s as inet_aton(3) does: one to four parts separated by
// dots, each decimal, octal (leading 0) or hex (leading 0x); the last part
// fills all remaining bytes ("127.1" is 127.0.0.1, "2130706433" too).
func parseInetAton(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		if n == 4 {
			return netip.Addr{}, false
		}
		end := strings.IndexByte(s, '.')
		part := s
		if end >= 0 {
			part = s[:end]
		}
		v, ok := parseAtonPart(part)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if end < 0 {
			break
		}
		s = s[end+1:]
	}
	var v uint64
	for i := 0; i < n-1; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
		v |= parts[i] << (24 - 8*i)
	}
	lastBits := 32 - 8*(n-1)
	if parts[n-1] >= 1<<lastBits {
		return netip.Addr{}, false
	}
	v |= parts[n-1]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseAtonPart parses one inet_aton part. It must start with a digit; "0x"
// with no digits is zero, as in glibc.
func parseAtonPart(p string) (uint64, bool) {
	if p == "" || p[0] < '0' || p[0] > '9' {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}
