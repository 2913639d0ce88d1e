package netproxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"sandbox-executable/policy"
)

func TestConnectRoundTripAndHalfClose(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("*.allowed.test", port)},
		hosts:   map[string]string{"echo.allowed.test": "127.0.0.1"},
	})
	c, br, resp := e.connect(fmt.Sprintf("Echo.Allowed.Test.:%d", port))
	if resp.StatusCode != 200 || resp.Status != "200 Connection Established" {
		t.Fatalf("status %q", resp.Status)
	}
	for _, msg := range []string{"ping", strings.Repeat("x", 100000)} {
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Fatalf("echo: %v (%d bytes)", err, len(got))
		}
	}
	// Half-close: the server sees EOF, and its reply still comes back.
	c.(*net.TCPConn).CloseWrite()
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "BYE" {
		t.Fatalf("after half-close: %q, %v", rest, err)
	}
	if got := <-e.dialed; got != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Errorf("dialed %q, want the resolved address", got)
	}
	evs := e.waitEvents(1)
	ev := evs[0]
	if !ev.Allowed || ev.Method != "CONNECT" || ev.Host != "echo.allowed.test" || ev.Port != port ||
		ev.BytesUp != 100004 || ev.BytesDown != 100007 || !strings.Contains(ev.Reason, "*.allowed.test") ||
		ev.Remote != fmt.Sprintf("127.0.0.1:%d", port) || ev.Client != c.LocalAddr().String() || ev.Time.IsZero() {
		t.Errorf("event %+v", ev)
	}
	if s := e.p.Stats(); s.Allowed != 1 || s.Refused != 0 || s.BytesUp != 100004 || s.BytesDown != 100007 {
		t.Errorf("stats %+v", s)
	}
}

func TestConnectPipelinedData(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("echo.test", port)},
		hosts:   map[string]string{"echo.test": "127.0.0.1"},
	})
	c := e.dial()
	// The request and the first tunnel bytes in one write.
	fmt.Fprintf(c, "CONNECT echo.test:%d HTTP/1.1\r\n\r\nearly-data", port)
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	want := "HTTP/1.1 200 Connection Established\r\n\r\nearly-dataBYE"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestConnectRefusals(t *testing.T) {
	_, port := startEcho(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("*.allowed.test", port), hp("127.0.0.1", port), hp("denied-port.test", port+1)},
		hosts:   map[string]string{"denied.test": "127.0.0.1", "a.allowed.test": "127.0.0.1", "denied-port.test": "127.0.0.1"},
	})
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{fmt.Sprintf("denied.test:%d", port), 403, fmt.Sprintf("sandbox-executable: denied.test:%d is not in the network allowlist\n", port)},
		{fmt.Sprintf("a.allowed.test:%d", port+1), 403, "is not in the network allowlist"},
		{fmt.Sprintf("denied-port.test:%d", port), 403, "is not in the network allowlist"},
		{fmt.Sprintf("evil-allowed.test:%d", port), 403, "is not in the network allowlist"},
		{fmt.Sprintf("allowed.test.evil:%d", port), 403, "is not in the network allowlist"},
		{fmt.Sprintf("127.0.0.2:%d", port), 403, "is an IP address not named by any network allowlist entry"},
		{fmt.Sprintf("127.1:%d", port+1), 403, "IP address"},
		{fmt.Sprintf("[::1]:%d", port), 403, "IP address"},
		{fmt.Sprintf("2130706434:%d", port), 403, "IP address"},
		{fmt.Sprintf("bad_host!:%d", port), 403, "not a valid host name"},
		{"a.allowed.test", 400, "bad CONNECT target"},
		{"a.allowed.test:0", 400, "invalid port"},
		{"a.allowed.test:99999", 400, "invalid port"},
		{":443", 400, "empty host"},
	} {
		c, _, resp := e.connect(tc.target)
		body := readBody(t, resp)
		if resp.StatusCode != tc.code || !strings.Contains(body, tc.body) || !strings.HasPrefix(body, "sandbox-executable: ") {
			t.Errorf("CONNECT %s: %d %q, want %d %q", tc.target, resp.StatusCode, body, tc.code, tc.body)
		}
		if tc.code == 403 && resp.Header.Get("Proxy-Status") != "sandbox-executable; error=http_request_denied" {
			t.Errorf("CONNECT %s: Proxy-Status %q", tc.target, resp.Header.Get("Proxy-Status"))
		}
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("CONNECT %s: connection not closed after refusal", tc.target)
		}
	}
	// Listed literals are allowed, in every spelling.
	for _, target := range []string{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.1:%d", port), fmt.Sprintf("[::ffff:127.0.0.1]:%d", port)} {
		c, _, resp := e.connect(target)
		if resp.StatusCode != 200 {
			t.Errorf("CONNECT %s: %s", target, resp.Status)
		}
		c.Close()
	}
	if s := e.p.Stats(); s.Refused != 10 || s.BadRequests != 4 || s.Allowed != 3 {
		t.Errorf("stats %+v", s)
	}
	if e.resolve.Load() != 0 {
		t.Errorf("%d resolutions for refused or literal targets", e.resolve.Load())
	}
}

func TestConnectDialFailures(t *testing.T) {
	port := closedPort(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("closed.test", port), hp("nxdomain.test", 443)},
		hosts:   map[string]string{"closed.test": "127.0.0.1"},
	})
	_, _, resp := e.connect(fmt.Sprintf("closed.test:%d", port))
	if body := readBody(t, resp); resp.StatusCode != 502 || !strings.Contains(body, "connection refused") {
		t.Errorf("closed port: %d %q", resp.StatusCode, body)
	}
	_, _, resp = e.connect("nxdomain.test:443")
	if body := readBody(t, resp); resp.StatusCode != 502 || !strings.Contains(body, "resolving nxdomain.test") {
		t.Errorf("nxdomain: %d %q", resp.StatusCode, body)
	}
	evs := e.waitEvents(2)
	for _, ev := range evs {
		if !ev.Allowed || !strings.Contains(ev.Reason, "matches allowlist entry") {
			t.Errorf("event %+v", ev)
		}
	}
	if s := e.p.Stats(); s.Allowed != 2 || s.Failed != 2 || s.Refused != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestConnectNetHTTP drives a TLS request through CONNECT with net/http.
func TestConnectNetHTTP(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("Proxy-Authorization reached the origin")
		}
		fmt.Fprintf(w, "hello %s", r.Host)
	}))
	defer srv.Close()
	port := portOf(t, srv.Listener.Addr().String())
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("secure.test", port)},
		hosts:   map[string]string{"secure.test": "127.0.0.1", "other.test": "127.0.0.1"},
	})
	proxyURL := &url.URL{Scheme: "http", Host: e.addr, User: url.UserPassword("user", "secret")}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get(fmt.Sprintf("https://secure.test:%d/x", port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); body != fmt.Sprintf("hello secure.test:%d", port) {
		t.Errorf("body %q", body)
	}
	_, err = client.Get(fmt.Sprintf("https://other.test:%d/x", port))
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("other.test: err %v, want Forbidden", err)
	}
}

func TestClientDisconnectMidSplice(t *testing.T) {
	// A server that streams forever.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serverDone := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			serverDone <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				serverDone <- err
				return
			}
		}
	}()
	port := portOf(t, l.Addr().String())
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("stream.test", port)}, hosts: map[string]string{"stream.test": "127.0.0.1"}})
	c, br, resp := e.connect(fmt.Sprintf("stream.test:%d", port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if _, err := io.CopyN(io.Discard, br, 1<<20); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetLinger(0) // reset, not a clean close
	c.Close()
	select {
	case <-serverDone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream not closed after the client went away")
	}
	ev := e.waitEvents(1)[0]
	if !ev.Allowed || ev.BytesDown < 1<<20 {
		t.Errorf("event %+v", ev)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.p.Stats().Active != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a := e.p.Stats().Active; a != 0 {
		t.Errorf("%d active connections", a)
	}
	// The proxy still serves.
	_, _, resp = e.connect("nope.test:1")
	if resp.StatusCode != 403 {
		t.Errorf("after disconnect: %s", resp.Status)
	}
}
