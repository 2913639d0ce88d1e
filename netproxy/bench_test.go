package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// benchProxy starts a proxy allowing bench.test:port (resolving to
// 127.0.0.1) and returns its address.
func benchProxy(b *testing.B, port uint16) string {
	b.Helper()
	p := New(NewMatcher([]policy.HostPort{hp("bench.test", port)}), Options{
		Resolve: func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{loopback4}, nil },
	})
	asRemote(p)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(l)
	b.Cleanup(func() { p.Close() })
	return l.Addr().String()
}

// dialConnect opens a CONNECT tunnel through the proxy at proxyAddr.
func dialConnect(ctx context.Context, proxyAddr, target string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	// One write for the request; read the 39-byte reply exactly so that no
	// tunnel bytes are consumed by a buffer.
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		c.Close()
		return nil, err
	}
	const ok = "HTTP/1.1 200 Connection Established\r\n\r\n"
	buf := make([]byte, len(ok))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != ok {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %q %v", target, buf, err)
	}
	return c, nil
}

func startBenchHTTP(b *testing.B) (uint16, func()) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "ok")
	})}
	go srv.Serve(l)
	return portOf(b, l.Addr().String()), func() { srv.Close() }
}

// latencyClients returns HTTP clients for the same origin: direct, through
// a CONNECT tunnel, and through plain HTTP forwarding.
func latencyClients(b *testing.B, port uint16, proxyAddr string, keepAlive bool) map[string]*http.Client {
	direct := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}
	tunnel := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialConnect(ctx, proxyAddr, addr)
		}}
	plain := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4,
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr})}
	b.Cleanup(func() { direct.CloseIdleConnections(); tunnel.CloseIdleConnections(); plain.CloseIdleConnections() })
	return map[string]*http.Client{"direct": {Transport: direct}, "connect": {Transport: tunnel}, "plain": {Transport: plain}}
}

func doGet(b *testing.B, c *http.Client, u string) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatal(resp.Status)
	}
}

// BenchmarkLatency measures one small HTTP request: "newconn" opens a new
// connection per request (for "connect" that includes the CONNECT
// handshake), "keepalive" reuses one (for "connect" the tunnel). "direct"
// goes straight to the same loopback server.
func BenchmarkLatency(b *testing.B) {
	port, stop := startBenchHTTP(b)
	defer stop()
	proxyAddr := benchProxy(b, port)
	for _, mode := range []string{"newconn", "keepalive"} {
		clients := latencyClients(b, port, proxyAddr, mode == "keepalive")
		for _, via := range []string{"direct", "connect", "plain"} {
			if mode == "keepalive" && via == "plain" {
				continue // one upstream connection per request by design
			}
			host := "bench.test"
			if via == "direct" {
				host = "127.0.0.1"
			}
			u := fmt.Sprintf("http://%s:%d/", host, port)
			b.Run(mode+"/"+via, func(b *testing.B) {
				c := clients[via]
				doGet(b, c, u) // warm up
				b.ResetTimer()
				for b.Loop() {
					doGet(b, c, u)
				}
			})
		}
	}
}

// BenchmarkAddedLatency alternates direct and CONNECT requests (new
// connection each) and reports both means and their difference.
func BenchmarkAddedLatency(b *testing.B) {
	port, stop := startBenchHTTP(b)
	defer stop()
	proxyAddr := benchProxy(b, port)
	for _, mode := range []string{"newconn", "keepalive"} {
		b.Run(mode, func(b *testing.B) {
			clients := latencyClients(b, port, proxyAddr, mode == "keepalive")
			directURL := fmt.Sprintf("http://127.0.0.1:%d/", port)
			proxyURL := fmt.Sprintf("http://bench.test:%d/", port)
			doGet(b, clients["direct"], directURL)
			doGet(b, clients["connect"], proxyURL)
			var direct, proxied time.Duration
			var diffs []time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				doGet(b, clients["direct"], directURL)
				t1 := time.Now()
				doGet(b, clients["connect"], proxyURL)
				t2 := time.Now()
				direct += t1.Sub(t0)
				proxied += t2.Sub(t1)
				diffs = append(diffs, t2.Sub(t1)-t1.Sub(t0))
				n++
			}
			slices.Sort(diffs)
			b.ReportMetric(float64(direct.Microseconds())/float64(n), "direct-µs/req")
			b.ReportMetric(float64(proxied.Microseconds())/float64(n), "connect-µs/req")
			b.ReportMetric(float64((proxied-direct).Microseconds())/float64(n), "added-µs/req")
			// The median of the pairs: one request delayed by a loaded
			// machine moves the mean, not this.
			b.ReportMetric(float64(diffs[len(diffs)/2].Nanoseconds())/1e3, "added-µs/req-median")
		})
	}
}

const throughputBytes = 100 << 20

// startBlaster starts a server that sends throughputBytes on each
// connection and closes it.
func startBlaster(b *testing.B) uint16 {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	buf := make([]byte, 1<<20)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for sent := 0; sent < throughputBytes; sent += len(buf) {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return portOf(b, l.Addr().String())
}

func drain(b *testing.B, c net.Conn, buf []byte) {
	defer c.Close()
	total := 0
	for {
		n, err := c.Read(buf)
		total += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if total != throughputBytes {
		b.Fatalf("received %d bytes, want %d", total, throughputBytes)
	}
}

// BenchmarkThroughput downloads 100 MB over one connection, directly and
// through a CONNECT tunnel.
func BenchmarkThroughput(b *testing.B) {
	port := startBlaster(b)
	proxyAddr := benchProxy(b, port)
	buf := make([]byte, 256<<10)
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(throughputBytes)
		for b.Loop() {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				b.Fatal(err)
			}
			drain(b, c, buf)
		}
	})
	b.Run("connect", func(b *testing.B) {
		b.SetBytes(throughputBytes)
		for b.Loop() {
			c, err := dialConnect(context.Background(), proxyAddr, fmt.Sprintf("bench.test:%d", port))
			if err != nil {
				b.Fatal(err)
			}
			drain(b, c, buf)
		}
	})
}

// BenchmarkIdleTunnelFootprint reports what an open, idle CONNECT tunnel
// costs the proxy: goroutines and Go memory (heap and stacks) per tunnel,
// measured against the same number of direct connections to the same
// in-process server (whose share is subtracted). Each tunnel also holds two
// sockets and, while Go's splice(2) path waits for data, two pipes.
func BenchmarkIdleTunnelFootprint(b *testing.B) {
	const n = 500
	_, port := startEcho(b)
	proxyAddr := benchProxy(b, port)
	measure := func(open func() net.Conn) (mem uint64, goroutines int) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = open()
		}
		time.Sleep(200 * time.Millisecond) // let every goroutine reach its steady state
		runtime.GC()
		runtime.ReadMemStats(&after)
		goroutines = runtime.NumGoroutine() - g0
		for _, c := range conns {
			c.Close()
		}
		return (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse), goroutines
	}
	for b.Loop() {
		dmem, dg := measure(func() net.Conn {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				b.Fatal(err)
			}
			return c
		})
		time.Sleep(200 * time.Millisecond)
		tmem, tg := measure(func() net.Conn {
			c, err := dialConnect(context.Background(), proxyAddr, fmt.Sprintf("bench.test:%d", port))
			if err != nil {
				b.Fatal(err)
			}
			return c
		})
		b.ReportMetric(float64(int64(tmem)-int64(dmem))/n, "bytes/tunnel")
		b.ReportMetric(float64(tg-dg)/n, "goroutines/tunnel")
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkProxyCPU downloads throughputBytes over one connection, directly
// and through a CONNECT tunnel, in turn, and reports the tunnel's MB/s and
// the CPU the proxy adds per GB: the process's own CPU time (every thread)
// through the tunnel less the same download's direct, which costs the
// server and the client alike. core-%@125MB/s is the share of one core the
// proxy would take to carry a saturated 1 Gbit/s download.
func BenchmarkProxyCPU(b *testing.B) {
	port := startBlaster(b)
	proxyAddr := benchProxy(b, port)
	buf := make([]byte, 256<<10)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var direct, tunnel, tunnelWall time.Duration
	n := 0
	for b.Loop() {
		c0 := cpu()
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			b.Fatal(err)
		}
		drain(b, c, buf)
		c1 := cpu()
		t0 := time.Now()
		c, err = dialConnect(context.Background(), proxyAddr, fmt.Sprintf("bench.test:%d", port))
		if err != nil {
			b.Fatal(err)
		}
		drain(b, c, buf)
		tunnelWall += time.Since(t0)
		c2 := cpu()
		direct += c1 - c0
		tunnel += c2 - c1
		n++
	}
	gb := float64(n) * throughputBytes / 1e9
	added := (tunnel - direct).Seconds() / gb
	b.ReportMetric(float64(n)*throughputBytes/1e6/tunnelWall.Seconds(), "tunnel-MB/s")
	b.ReportMetric(added, "added-cpu-s/GB")
	b.ReportMetric(added*0.125*100, "core-%@125MB/s")
}
