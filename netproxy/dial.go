package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
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

// authorize applies the allowlist and, for names, resolves them and applies
// the rebinding guard. It updates the Allowed/Refused/Failed counters.
//
// Rebinding guard: the proxy runs in the host's network namespace, so a name
// that resolves to a loopback, unspecified, link-local (which includes the
// cloud metadata service 169.254.169.254) or 0.0.0.0/8 address would reach
// the host's own services. Such a resolution is refused unless the entry
// that matched is the exact name "localhost"; IP literal targets are only
// ever allowed by an entry naming that address, so they need no guard. If
// any resolved address is refused the whole resolution is refused (a mixed
// answer is a rebinding attempt, not a reason to try the other addresses).
func (p *Proxy) authorize(ctx context.Context, host string, port uint16) verdict {
	v := verdict{d: p.m.decide(host, port)}
	if !v.d.ok {
		v.refused = true
		p.count.refused.Add(1)
		return v
	}
	if v.d.t.ip.IsValid() {
		v.addrs = []netip.Addr{v.d.t.ip.Unmap()} // as the entry names it: ::ffff:a.b.c.d is dialed as IPv4
		p.count.allowed.Add(1)
		return v
	}
	addrs, err := p.opts.Resolve(ctx, v.d.t.name)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		v.err = &resolveError{host: v.d.t.name, err: err}
		p.count.allowed.Add(1)
		p.count.failed.Add(1)
		return v
	}
	unmapped := make([]netip.Addr, len(addrs)) // the resolver's slice is not ours
	for i, a := range addrs {
		unmapped[i] = a.Unmap() // dial IPv4 as IPv4
	}
	addrs = unmapped
	if !v.d.local {
		for _, a := range addrs {
			if kind, bad := p.internal(a); bad {
				v.refused = true
				v.d.reason = fmt.Sprintf("%s resolves to %s, a %s address of the host outside the sandbox; only an allowlist entry naming that address (or \"localhost\") allows it",
					joinHostPort(v.d.t.name, port), a, kind)
				p.count.refused.Add(1)
				return v
			}
		}
	}
	v.addrs = addrs
	p.count.allowed.Add(1)
	return v
}

// internalAddr classifies the addresses the rebinding guard refuses.
func internalAddr(a netip.Addr) (kind string, internal bool) {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case a.IsLoopback():
		return "loopback", true
	case a.IsUnspecified():
		return "unspecified", true
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local", true
	case a.Is4() && a.As4()[0] == 0:
		return "\"this network\" (0.0.0.0/8)", true
	case a == awsMetadataV6:
		return "cloud metadata", true
	}
	return "", false
}

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")
)

// resolveError is a failure to resolve an allowed name.
type resolveError struct {
	host string
	err  error
}

func (e *resolveError) Error() string { return fmt.Sprintf("resolving %s: %v", e.host, e.err) }
func (e *resolveError) Unwrap() error { return e.err }

// dial connects to the first of addrs that answers, never re-resolving: the
// addresses dialed are the ones authorize checked. The time left is shared
// among the addresses not yet tried, as net.Dialer does.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, string, error) {
	var firstErr error
	for i, a := range addrs {
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
			return c, addr, nil
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("connecting to %s: %w", addr, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", firstErr
}

// connectUpstream authorizes host:port and dials it. On success the
// upstream connection is registered with cn so that Close interrupts it.
func (cn *conn) connectUpstream(host string, port uint16) (v verdict, up net.Conn, remote string) {
	ctx, cancel := context.WithTimeout(cn.p.ctx, cn.p.opts.DialTimeout)
	defer cancel()
	v = cn.p.authorize(ctx, host, port)
	if v.refused || v.err != nil {
		return v, nil, ""
	}
	up, remote, err := cn.p.dial(ctx, v.addrs, port)
	if err == nil && !cn.setUpstream(up) {
		err = ErrClosed
	}
	if err != nil {
		cn.p.count.failed.Add(1)
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
