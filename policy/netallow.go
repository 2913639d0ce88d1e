package policy

import (
	"net/netip"
	"strconv"
	"strings"
)

// network fills Plan.Network (CONTRACT §6): a non-empty allowlist governs
// whatever network_access says; otherwise network_access chooses between
// full and none. A seccomp profile without network sockets then narrows any
// mode to none: the stricter of the two wins, never the wider.
func (r *resolver) network() error {
	pol := &r.in.Policy
	net := &r.plan.Network
	switch ch := r.in.Changes; {
	case ch != nil && ch.Net != nil:
		net.Mode = ch.Net.Mode
		net.Allowlist = ch.Net.Allow
		net.Why = ch.Net.From
		switch ch.Net.Mode {
		case NetworkLoopback:
			net.Why += ": loopback only (the run's own network namespace; nothing outside it is reachable)"
		case NetworkAllowlist:
			net.Why += ": the hosts and ports listed"
		case NetworkFull:
			net.Why += ": the host's network"
		default:
			net.Why += ": no network"
		}
	case len(pol.NetworkAllowlist) > 0:
		list, err := r.allowlist()
		if err != nil {
			return err
		}
		net.Mode = NetworkAllowlist
		net.Allowlist = list
		net.Why = "network_allowlist has " + plural(len(pol.NetworkAllowlist), "entry", "entries") +
			", so it governs (network_access, " + strconv.FormatBool(pol.NetworkAccess) + ", is ignored)"
	case pol.NetworkAccess:
		net.Mode = NetworkFull
		net.Why = "network_access is true and network_allowlist is empty"
	default:
		net.Mode = NetworkNone
		net.Why = "network_access is false and network_allowlist is empty"
	}
	if net.Mode != NetworkNone && !r.in.Seccomp.AllowNetworkSockets {
		r.note("The policy allows " + string(net.Mode) + " network access but the seccomp profile (" +
			r.seccomp.where() + ") has allow_network_sockets false, so the stricter wins and network access is none.")
		net.Why += "; narrowed to none because allow_network_sockets is false"
		net.Mode = NetworkNone
		net.Allowlist = nil
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// allowlist validates and normalizes the policy's allowlist entries,
// de-duplicated in policy order.
func (r *resolver) allowlist() ([]HostPort, error) {
	var out []HostPort
	seen := map[HostPort]bool{}
	for i, e := range r.in.Policy.NetworkAllowlist {
		at := "network_allowlist[" + strconv.Itoa(i) + "]"
		host, err := normalizeHost(e.Domain)
		if err != nil {
			return nil, r.policyErr(at+".domain", quote(e.Domain)+": "+err.Error())
		}
		if e.Port == 0 {
			return nil, r.policyErr(at+".port", "port 0 cannot be connected to; give the port the host is reached on (443 for https)")
		}
		if !strings.EqualFold(e.Protocol, "tcp") {
			return nil, r.policyErr(at+".protocol", quote(e.Protocol)+": only \"tcp\" can be enforced (allowed hosts are reached through a proxy, which carries TCP only)")
		}
		hp := HostPort{Host: host, Port: e.Port, Protocol: "tcp"}
		if !seen[hp] {
			seen[hp] = true
			out = append(out, hp)
		}
	}
	return out, nil
}

// hostError is a reason a domain is not usable.
type hostError string

func (e hostError) Error() string { return string(e) }

// normalizeHost checks an allowlist domain and returns it normalized: ASCII
// white space trimmed, lower-cased, one trailing dot dropped. It must be an
// IP literal (IPv6 optionally in brackets, no zone), a hostname of
// letter-digit-hyphen labels, or "*." followed by such a hostname.
func normalizeHost(domain string) (string, error) {
	h := strings.Trim(domain, " \t\r\n\v\f")
	if h == "" {
		return "", hostError("empty domain")
	}
	h = asciiLower(h)
	h = strings.TrimSuffix(h, ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", hostError("not a valid IPv6 address in brackets")
		}
		return a.String(), nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", hostError("an IPv6 zone cannot be allowed")
		}
		return a.String(), nil
	}
	name := h
	wildcard := strings.HasPrefix(h, "*.")
	if wildcard {
		name = h[2:]
	}
	if err := checkHostname(name); err != nil {
		return "", err
	}
	return h, nil
}

// checkHostname accepts LDH hostnames: 1 to 253 characters, labels of 1 to
// 63 letters, digits and hyphens, no label starting or ending with a hyphen.
// A name whose last label is all digits is refused: resolvers may read it as
// an IPv4 address in a non-standard form ("127.1", "0x7f.1").
func checkHostname(name string) error {
	if name == "" {
		return hostError("a wildcard needs a hostname after \"*.\"")
	}
	if len(name) > 253 {
		return hostError("hostname longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return hostError("not a hostname: every label must have 1 to 63 characters")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return hostError("not a hostname: a label cannot start or end with a hyphen")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c == '*' {
				return hostError("\"*\" is only allowed as the whole first label (\"*.example.com\")")
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return hostError("not a hostname: only letters, digits, hyphens and dots are allowed")
			}
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" || isHexNumber(last) {
		return hostError("looks like an IP address in a non-standard form; write the address itself")
	}
	return nil
}

// isHexNumber reports whether s is "0x" followed by hex digits, which
// inet_aton reads as a number.
func isHexNumber(s string) bool {
	if !strings.HasPrefix(s, "0x") {
		return false
	}
	return strings.Trim(s[2:], "0123456789abcdef") == ""
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ParseHostPort reads one allowlist entry written HOST[:PORT] (an IPv6
// address in brackets when a port follows: "[::1]:8080"), checked and
// normalized as the policy's network_allowlist entries are; the port is
// 443 when none is given, as serde's default.
func ParseHostPort(s string) (HostPort, error) {
	host, port := s, uint16(443)
	if i := strings.LastIndexByte(s, ':'); i >= 0 && (strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") && s[i-1] == ']') {
		n, err := strconv.ParseUint(s[i+1:], 10, 16)
		if err != nil || n == 0 {
			return HostPort{}, hostError(quote(s[i+1:]) + " is not a port (1-65535)")
		}
		host, port = s[:i], uint16(n)
	}
	h, err := normalizeHost(host)
	if err != nil {
		return HostPort{}, err
	}
	return HostPort{Host: h, Port: port, Protocol: "tcp"}, nil
}
