package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// verdict is the outcome of authorize: a refusal (reason), a failure to
// resolve (err), or the addresses to dial.
type verdict struct {
	d       decision
	refused bool
	addrs   []netip.Addr
	err     error // resolution failure of an allowed name
}

// authorize applies the allowlist and, for names, resolves them and screens
// the addresses they resolve to by the kind of entry that matched (see
// matchKind): the proxy dials from the host's network namespace, so a name
// that resolves to loopback, the unspecified address, link-local (the cloud
// metadata service 169.254.169.254 among them) or 0.0.0.0/8 would reach the
// host's own services, and one that resolves into a private range would
// reach the host's network. IP literal targets are only ever allowed by an
// entry naming that address, so they need no screening. If any resolved
// address is refused the whole resolution is refused (a mixed answer is a
// rebinding attempt, not a reason to try the other addresses). Whether an
// address is one of the host's own is asked when it is dialled (dial).
func (p *Proxy) authorize(ctx context.Context, host string, port uint16) verdict {
	v := verdict{d: p.m.decide(host, port)}
	if !v.d.ok {
		v.refused = true
		return v
	}
	if v.d.by == byLiteral {
		v.addrs = []netip.Addr{v.d.t.ip.Unmap()} // as the entry names it: ::ffff:a.b.c.d is dialed as IPv4
		return v
	}
	addrs, err := p.opts.Resolve(ctx, v.d.t.name)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		v.err = &resolveError{host: v.d.t.name, err: err}
		return v
	}
	unmapped := make([]netip.Addr, len(addrs)) // the resolver's slice is not ours
	for i, a := range addrs {
		unmapped[i] = a.Unmap() // dial IPv4 as IPv4
	}
	if why := p.screen(v.d, unmapped, port); why != "" {
		v.refused, v.d.reason = true, why
		return v
	}
	v.addrs = unmapped
	return v
}

// screen applies what an entry of d's kind may reach to the addresses its
// name resolved to, and says why they are refused ("" when they are not).
func (p *Proxy) screen(d decision, addrs []netip.Addr, port uint16) string {
	hp := joinHostPort(d.t.name, port)
	var public, private netip.Addr
	for _, a := range addrs {
		class, kind := p.classify(a)
		switch {
		case d.by == byLocalhost && !a.IsLoopback():
			return fmt.Sprintf("%s resolves to %s, not a loopback address; an entry \"localhost\" reaches loopback only", hp, a)
		case d.by == byLocalhost:
		case class == classInternal:
			return fmt.Sprintf("%s resolves to %s, a %s address of the host outside the sandbox; only an allowlist entry naming that address allows it", hp, a, kind)
		case class == classPrivate && d.by == byWildcard:
			return fmt.Sprintf("%s resolves to %s, a %s address, and %s: a name matched only by a wildcard reaches public addresses only", hp, a, kind, d.reason)
		case class == classPrivate:
			private = a
		default:
			public = a
		}
	}
	if d.by != byExact {
		return ""
	}
	switch {
	case private.IsValid() && public.IsValid():
		return fmt.Sprintf("%s resolves to a public address (%s) and a private one (%s) at once: a rebinding answer", hp, public, private)
	case private.IsValid() && p.wasPublic(d.t.name):
		return fmt.Sprintf("%s resolves to %s, a private address, after resolving to a public one earlier in this run: DNS rebinding", hp, private)
	case public.IsValid():
		p.public.Store(d.t.name, true)
	}
	return ""
}

// wasPublic reports whether the exact name resolved to a public address
// earlier in the proxy's life (its run).
func (p *Proxy) wasPublic(name string) bool {
	_, ok := p.public.Load(name)
	return ok
}

// addrClass is what an address is to the proxy's screening.
type addrClass int

const (
	classPublic   addrClass = iota
	classPrivate            // a private network's: exact names only
	classInternal           // the host's own services': literal entries only
)

// privateRanges names the private ranges, for messages and --explain.
const privateRanges = "RFC 1918, CGNAT 100.64.0.0/10, unique local fc00::/7, special-purpose 192.0.0.0/24 and 240.0.0.0/4"

// classifyAddr classifies a by its range, and names the range. Whether it
// is an address of one of the host's interfaces is the kernel's to say, at
// dial time (hostAddress).
func classifyAddr(a netip.Addr) (addrClass, string) {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case a.IsLoopback():
		return classInternal, "loopback"
	case a.IsUnspecified():
		return classInternal, "unspecified"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return classInternal, "link-local"
	case a.Is4() && a.As4()[0] == 0:
		return classInternal, "\"this network\" (0.0.0.0/8)"
	case slices.Contains(metadataAddrs, a):
		return classInternal, "cloud metadata"
	case a.Is4() && (ietfProtocol.Contains(a) || reserved4.Contains(a)):
		return classPrivate, "special-purpose (192.0.0.0/24, 240.0.0.0/4)"
	case cgnat.Contains(a):
		return classPrivate, "CGNAT (100.64.0.0/10)"
	case a.Is6() && siteLocal.Contains(a):
		return classPrivate, "site-local (fec0::/10)"
	case a.IsPrivate() && a.Is4():
		return classPrivate, "private (RFC 1918)"
	case a.IsPrivate():
		return classPrivate, "unique local (fc00::/7)"
	}
	return classPublic, ""
}

var (
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// metadataAddrs are the cloud platforms' instance metadata and host
	// services outside the link-local ranges: AWS's IPv6 endpoint,
	// Azure's WireServer, Alibaba Cloud's and Oracle Cloud Classic's
	// metadata (a name's answer can be any of them).
	metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("168.63.129.16"),
		netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("192.0.0.192")}
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal    = netip.MustParsePrefix("fec0::/10")
	ietfProtocol = netip.MustParsePrefix("192.0.0.0/24")
	reserved4    = netip.MustParsePrefix("240.0.0.0/4")
)

// resolveError is a failure to resolve an allowed name.
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string { return fmt.Sprintf("resolving %s: %v", e.host, e.err) }
func (e *resolveError) Unwrap() error { return e.err }

// dial connects to the first of addrs that answers, never re-resolving: the
// addresses dialed are the ones authorize checked. Unless the entry named
// the address (a literal, or "localhost" for loopback), none may be one of
// the host's own: all are asked about before the first dial (one refuses
// the whole answer, as in authorize), and each again right before it is
// dialled. A refusal comes back as refused. The time left is shared among
// the addresses not yet tried, as net.Dialer does.
func (p *Proxy) dial(ctx context.Context, d decision, addrs []netip.Addr, port uint16) (net.Conn, string, string, error) {
	ask := d.by != byLiteral && d.by != byLocalhost // named as such (localhost: loopback only, screened)
	if ask {
		for _, a := range addrs {
			if why := p.ownAddress(d, a, port); why != "" {
				return nil, "", why, nil
			}
		}
	}
	var firstErr error
	for i, a := range addrs {
		if ask && i > 0 {
			if why := p.ownAddress(d, a, port); why != "" {
				return nil, "", why, nil
			}
		}
		attempt := ctx
		if dl, ok := ctx.Deadline(); ok {
			share := time.Until(dl) / time.Duration(len(addrs)-i)
			if share < 2*time.Second {
				share = 2 * time.Second
			}
			var cancel context.CancelFunc
			attempt, cancel = context.WithTimeout(ctx, share)
			defer cancel()
		}
		addr := netip.AddrPortFrom(a, port).String()
		c, err := p.opts.Dial(attempt, "tcp", addr)
		if err == nil {
			return c, addr, "", nil
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("connecting to %s: %w", addr, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", "", firstErr
}

// ownAddress says why a, which d's name resolved to, is refused as an
// address of the host, or "" when it is not one. A question the kernel
// does not answer refuses too.
func (p *Proxy) ownAddress(d decision, a netip.Addr, port uint16) string {
	kind, own, err := p.hostOwn(a)
	hp := joinHostPort(d.t.String(), port)
	switch {
	case err != nil:
		return fmt.Sprintf("%s resolves to %s, which could not be told apart from the host's own addresses (%v)", hp, a, err)
	case own:
		return fmt.Sprintf("%s resolves to %s, %s (outside the sandbox); only an allowlist entry naming that address allows it", hp, a, kind)
	}
	return ""
}

// connectUpstream authorizes host:port and dials it, and counts the
// outcome. On success the upstream connection is registered with cn so that
// Close interrupts it.
func (cn *conn) connectUpstream(host string, port uint16) (v verdict, up net.Conn, remote string) {
	ctx, cancel := context.WithTimeout(cn.p.ctx, cn.p.opts.DialTimeout)
	defer cancel()
	count := &cn.p.count
	v = cn.p.authorize(ctx, host, port)
	if v.refused {
		count.refused.Add(1)
		return v, nil, ""
	}
	if v.err != nil {
		count.allowed.Add(1)
		count.failed.Add(1)
		return v, nil, ""
	}
	up, remote, refused, err := cn.p.dial(ctx, v.d, v.addrs, port)
	if refused != "" {
		v.refused, v.d.reason = true, refused
		count.refused.Add(1)
		return v, nil, ""
	}
	count.allowed.Add(1)
	if err == nil && !cn.setUpstream(up) {
		err = ErrClosed
	}
	if err != nil {
		count.failed.Add(1)
		v.err = err
		return v, nil, ""
	}
	return v, up, remote
}

// isTimeout reports whether err is a timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
