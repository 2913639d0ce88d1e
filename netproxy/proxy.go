package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("netproxy: proxy closed")

// Defaults for the zero values of Options.
const (
	DefaultDialTimeout    = 30 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	DefaultMaxConns       = 1024
)

// Options configures a Proxy. The zero value is usable.
type Options struct {
	// Dial connects to an address "ip:port" that the proxy has already
	// checked. Default: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolve returns the addresses of a host name. Default: the hosts
	// file, then DNS for the name alone (no search domains).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds name resolution plus connecting. Default 30s.
	DialTimeout time.Duration
	// RequestTimeout bounds reading a request (HTTP request line and
	// headers, or the SOCKS5 handshake), from the connection's accept, or
	// from the first byte of a later request on a kept-alive connection.
	// Default 30s.
	RequestTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive HTTP
	// connection. Default 90s.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request's line and headers, each
	// line counted 200 bytes more (what a field costs parsed), and of a
	// SOCKS5 handshake. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConns bounds the number of client connections open at once; more
	// wait in the listen backlog. Default 1024; negative means unlimited.
	MaxConns int
	// OnEvent, if set, is called for every request (see Event). It is called
	// from connection goroutines, concurrently, and must be quick.
	OnEvent func(Event)
}

// Proxy is the filtering proxy: HTTP CONNECT, plain HTTP with absolute URIs
// and SOCKS5 on the same listener, each request checked against a Matcher.
// Create it with New; it is safe for concurrent use.
type Proxy struct {
	m    *Matcher
	opts Options
	// classify and hostOwn screen the addresses names resolve to (see
	// authorize and dial); fields so that in-package tests can treat
	// their loopback servers as remote.
	classify func(netip.Addr) (addrClass, string)
	hostOwn  func(netip.Addr) (kind string, own bool, err error)
	// public holds the exact names that resolved to a public address in
	// this proxy's life: such a name later resolving into a private range
	// is refused (rebinding). Only exact entries' names: bounded by the
	// allowlist.
	public sync.Map

	ctx      context.Context // canceled by Close
	cancel   context.CancelFunc
	stop     chan struct{} // closed by Close: stop accepting
	stopOnce sync.Once
	slots    chan struct{} // nil when MaxConns is unlimited

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup

	count counters
}

// New returns a Proxy enforcing m with opts.
func New(m *Matcher, opts Options) *Proxy {
	if m == nil {
		m = NewMatcher(nil)
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	if opts.Resolve == nil {
		opts.Resolve = resolveExact
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	p := &Proxy{
		m:         m,
		opts:      opts,
		classify:  classifyAddr,
		hostOwn:   hostAddress,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		stop:      make(chan struct{}),
	}
	if opts.MaxConns > 0 {
		p.slots = make(chan struct{}, opts.MaxConns)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Serve accepts connections on l and serves them until Close,
// then returns ErrClosed; it returns other errors if l fails permanently.
// Errors on one connection never stop it. Serve closes l when it returns.
// It may be called for several listeners at once.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
		l.Close()
	}()

	var backoff time.Duration
	for {
		if p.slots != nil {
			select {
			case p.slots <- struct{}{}:
			case <-p.stop:
				return ErrClosed
			}
		}
		c, err := l.Accept()
		if err != nil {
			p.release()
			if p.isClosing() {
				return ErrClosed
			}
			if !retryableAccept(err) {
				return fmt.Errorf("netproxy: accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-p.stop:
				return ErrClosed
			}
			continue
		}
		backoff = 0
		cn := p.track(c)
		if cn == nil {
			p.release()
			c.Close()
			return ErrClosed
		}
		go cn.serve()
	}
}

func (p *Proxy) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Proxy) release() {
	if p.slots != nil {
		<-p.slots
	}
}

// retryableAccept reports whether an Accept error is transient (resource
// exhaustion, an aborted connection, a deadline).
func retryableAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// track registers a new client connection, or returns nil if the proxy is
// closing.
func (p *Proxy) track(c net.Conn) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	cn := &conn{p: p, c: c, start: time.Now()}
	if ra := c.RemoteAddr(); ra != nil {
		cn.client = ra.String()
	}
	p.conns[cn] = struct{}{}
	p.wg.Add(1)
	p.count.active.Add(1)
	return cn
}

func (p *Proxy) untrack(cn *conn) {
	cn.c.Close()
	p.mu.Lock()
	delete(p.conns, cn)
	p.mu.Unlock()
	p.count.active.Add(-1)
	p.release()
	p.wg.Done()
}

// Close stops the proxy at once: it closes the listeners and every client
// and upstream connection, cancels pending resolutions and dials, and waits
// for all connection goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	p.stopOnce.Do(func() { close(p.stop) })
	for l := range p.listeners {
		l.Close()
	}
	for cn := range p.conns {
		cn.c.Close()
		cn.closeUpstream()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
