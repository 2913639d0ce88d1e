package netproxy

import (
	"sync/atomic"
	"time"
)

// Event describes one proxied request, allowed or refused, for the sandbox's
// denial log and report.
//
// A refusal is reported as soon as it is decided. An allowed request is
// reported when it ends (the tunnel closes, or the HTTP response has been
// relayed), with its byte counts; if the destination could not be reached
// Allowed is still true (the allowlist allowed it) and Reason says what
// failed. Malformed requests are reported with Allowed false and an empty
// Host.
type Event struct {
	// Time is when the request was read.
	Time time.Time
	// Client is the client's address (inside the sandbox).
	Client string
	// Method is the HTTP method ("CONNECT", "GET", ...) or "SOCKS5".
	Method string
	// Host and Port are the requested destination, Host normalized (lower
	// case, no trailing dot) when it is valid.
	Host string
	Port uint16
	// Allowed is the allowlist's verdict (including the rebinding guard).
	Allowed bool
	// Reason explains the verdict in one line: the entry that matched, why
	// the destination was refused, or why it could not be reached.
	Reason string
	// Remote is the address dialed (empty when nothing was dialed).
	Remote string
	// BytesUp and BytesDown count payload bytes relayed to and from the
	// destination (request and response bodies and headers for plain HTTP).
	BytesUp, BytesDown int64
	// Duration is how long the request took, from Time to its end.
	Duration time.Duration
}

// Stats is a snapshot of a Proxy's counters.
type Stats struct {
	// Allowed counts requests the allowlist allowed (each plain HTTP request
	// on a kept-alive connection counts once).
	Allowed uint64
	// Refused counts requests the allowlist or the rebinding guard refused.
	Refused uint64
	// Failed counts allowed requests whose destination could not be reached
	// (name resolution or connection failure); they are also in Allowed.
	Failed uint64
	// BadRequests counts malformed or unsupported requests.
	BadRequests uint64
	// Active is the number of client connections currently open.
	Active int64
	// BytesUp and BytesDown total the bytes relayed by finished requests.
	BytesUp, BytesDown uint64
}

type counters struct {
	allowed, refused, failed, bad atomic.Uint64
	bytesUp, bytesDown            atomic.Uint64
	active                        atomic.Int64
}

// Stats returns a snapshot of the proxy's counters. It may be called at any
// time, concurrently with Serve.
func (p *Proxy) Stats() Stats {
	return Stats{
		Allowed:     p.count.allowed.Load(),
		Refused:     p.count.refused.Load(),
		Failed:      p.count.failed.Load(),
		BadRequests: p.count.bad.Load(),
		Active:      p.count.active.Load(),
		BytesUp:     p.count.bytesUp.Load(),
		BytesDown:   p.count.bytesDown.Load(),
	}
}

// emit delivers ev to OnEvent, if set, after accounting its bytes.
func (p *Proxy) emit(ev Event) {
	if ev.BytesUp > 0 {
		p.count.bytesUp.Add(uint64(ev.BytesUp))
	}
	if ev.BytesDown > 0 {
		p.count.bytesDown.Add(uint64(ev.BytesDown))
	}
	if p.opts.OnEvent != nil {
		p.opts.OnEvent(ev)
	}
}
