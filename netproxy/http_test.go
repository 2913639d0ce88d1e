package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// origin is a test HTTP server recording what reaches it.
type origin struct {
	*httptest.Server
	port  uint16
	conns atomic.Int64
	mu    sync.Mutex
	reqs  []*http.Request
	body  []string
}

func startOrigin(t *testing.T) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.reqs = append(o.reqs, r)
		o.body = append(o.body, string(b))
		o.mu.Unlock()
		switch r.URL.Path {
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "event %d\n", i)
				w.(http.Flusher).Flush()
			}
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		default:
			fmt.Fprintf(w, "hello %s %s %s", r.Host, r.RequestURI, b)
		}
	}))
	o.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	o.port = portOf(t, o.Listener.Addr().String())
	return o
}

func (o *origin) last() (*http.Request, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reqs[len(o.reqs)-1], o.body[len(o.body)-1]
}

func TestPlainHTTPNetHTTP(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("web.test", o.port)},
		hosts:   map[string]string{"web.test": "127.0.0.1", "other.test": "127.0.0.1"},
	})
	proxyURL := &url.URL{Scheme: "http", Host: e.addr, User: url.UserPassword("user", "secret")}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	req, _ := http.NewRequest("GET", fmt.Sprintf("http://web.test:%d/path?q=1", o.port), nil)
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "hop")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Proxy-Foo", "bar")
	req.Header.Set("X-Kept", "yes")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if want := fmt.Sprintf("hello web.test:%d /path?q=1 ", o.port); body != want {
		t.Errorf("body %q, want %q", body, want)
	}
	got, _ := o.last()
	if got.RequestURI != "/path?q=1" {
		t.Errorf("origin saw request target %q, want origin-form", got.RequestURI)
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Foo", "X-Hop", "Keep-Alive", "Proxy-Connection"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("%s: %q reached the origin", h, v)
		}
	}
	if got.Header.Get("X-Kept") != "yes" || got.Header.Get("User-Agent") != "Go-http-client/1.1" {
		t.Errorf("origin headers %v", got.Header)
	}

	// POST with a body, chunked.
	resp, err = client.Post(fmt.Sprintf("http://web.test:%d/post", o.port), "text/plain", io.MultiReader(strings.NewReader("abc"), strings.NewReader("def")))
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); !strings.HasSuffix(body, "/post abcdef") {
		t.Errorf("POST body %q", body)
	}
	// Streaming response (chunked, flushed by the origin).
	resp, err = client.Get(fmt.Sprintf("http://web.test:%d/stream", o.port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); body != "event 0\nevent 1\nevent 2\n" {
		t.Errorf("stream body %q", body)
	}
	// Refused host.
	resp, err = client.Get(fmt.Sprintf("http://other.test:%d/", o.port))
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != 403 || body != fmt.Sprintf("sandbox-executable: other.test:%d is not in the network allowlist\n", o.port) {
		t.Errorf("refused: %d %q", resp.StatusCode, body)
	}
	if s := e.p.Stats(); s.Allowed != 3 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
	evs := e.waitEvents(4)
	if evs[0].Method != "GET" || !evs[0].Allowed || evs[0].BytesUp == 0 || evs[0].BytesDown == 0 || evs[1].Method != "POST" {
		t.Errorf("events %+v", evs)
	}
}

// rawExchange writes raw requests on one connection and reads responses.
func rawResponse(t *testing.T, br *bufio.Reader, method string) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return resp
}

func TestKeepAliveAndHostSwitch(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("web.test", o.port)},
		hosts:   map[string]string{"web.test": "127.0.0.1", "other.test": "127.0.0.1"},
	})
	c := e.dial()
	br := bufio.NewReader(c)
	for i := range 2 {
		fmt.Fprintf(c, "GET http://web.test:%d/%d HTTP/1.1\r\nHost: spoofed.test\r\n\r\n", o.port, i)
		resp := rawResponse(t, br, "GET")
		if body := readBody(t, resp); resp.StatusCode != 200 || body != fmt.Sprintf("hello web.test:%d /%d ", o.port, i) || resp.Close {
			t.Fatalf("request %d: %d %q close=%v", i, resp.StatusCode, body, resp.Close)
		}
	}
	// HEAD and a body-less status on the same connection.
	fmt.Fprintf(c, "HEAD http://web.test:%d/h HTTP/1.1\r\n\r\nGET http://web.test:%d/teapot HTTP/1.1\r\n\r\n", o.port, o.port)
	if resp := rawResponse(t, br, "HEAD"); resp.StatusCode != 200 {
		t.Fatalf("HEAD: %s", resp.Status)
	}
	resp := rawResponse(t, br, "GET")
	if readBody(t, resp); resp.StatusCode != 418 {
		t.Fatalf("teapot: %s", resp.Status)
	}
	// Same connection, another host: refused and closed.
	fmt.Fprintf(c, "GET http://other.test:%d/ HTTP/1.1\r\n\r\n", o.port)
	resp = rawResponse(t, br, "GET")
	if body := readBody(t, resp); resp.StatusCode != 403 || !strings.Contains(body, "other.test") {
		t.Fatalf("host switch: %d %q", resp.StatusCode, body)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("connection not closed after refusal: %v", err)
	}
	if n := o.conns.Load(); n != 4 {
		t.Errorf("origin saw %d connections, want one per request (4)", n)
	}
	if s := e.p.Stats(); s.Allowed != 4 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestHTTP10AndConnectionClose(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("web.test", o.port)}, hosts: map[string]string{"web.test": "127.0.0.1"}})
	for _, proto := range []string{"HTTP/1.0", "HTTP/1.1\r\nConnection: close"} {
		c := e.dial()
		fmt.Fprintf(c, "GET http://web.test:%d/stream %s\r\n\r\n", o.port, proto)
		got, err := io.ReadAll(c) // the proxy must close
		if err != nil {
			t.Fatal(err)
		}
		s := string(got)
		if !strings.HasPrefix(s, "HTTP/1.1 200 OK\r\n") || !strings.Contains(s, "event 2\n") {
			t.Errorf("%s: %q", proto, s)
		}
		if strings.HasPrefix(proto, "HTTP/1.0") && strings.Contains(s, "chunked") {
			t.Errorf("chunked response to an HTTP/1.0 client: %q", s)
		}
	}
}

func TestExpectContinue(t *testing.T) {
	o := startOrigin(t)
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("web.test", o.port)}, hosts: map[string]string{"web.test": "127.0.0.1"}})
	c := e.dial()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST http://web.test:%d/upload HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", o.port)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim response %q, %v", line, err)
	}
	if l, _ := br.ReadString('\n'); l != "\r\n" {
		t.Fatalf("interim response continues with %q", l)
	}
	io.WriteString(c, "hello")
	resp := rawResponse(t, br, "POST")
	if body := readBody(t, resp); !strings.HasSuffix(body, "/upload hello") {
		t.Errorf("body %q", body)
	}
}

func TestHTTPBadRequests(t *testing.T) {
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("web.test", 80)}, opts: Options{MaxHeaderBytes: 1024}})
	for _, tc := range []struct {
		req  string
		code int
		body string
	}{
		{"GET /relative HTTP/1.1\r\nHost: web.test\r\n\r\n", 400, "absolute URI"},
		{"GET https://web.test/ HTTP/1.1\r\n\r\n", 400, "use CONNECT"},
		{"GET ftp://web.test/ HTTP/1.1\r\n\r\n", 400, "only http://"},
		{"GET http://web.test:0/ HTTP/1.1\r\n\r\n", 400, "invalid port"},
		{"GET http://web.test:70000/ HTTP/1.1\r\n\r\n", 400, "invalid port"},
		{"GET http://web.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 8000) + "\r\n\r\n", 431, "too large"},
		// 400 bytes, but 100 fields: each costs more parsed than sent.
		{"GET http://web.test/ HTTP/1.1\r\n" + strings.Repeat("A:\r\n", 100) + "\r\n", 431, "too large"},
		{"GARBAGE\r\n\r\n", 400, "malformed"},
		{"GET http://web.test/ HTTP/1.1\r\nBad Header\r\n\r\n", 400, "malformed"},
		{"GET http://web.test/ HTTP/x.y\r\n\r\n", 400, "malformed"},
	} {
		c := e.dial()
		io.WriteString(c, tc.req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("%q: %v", tc.req[:20], err)
			continue
		}
		if body := readBody(t, resp); resp.StatusCode != tc.code || !strings.Contains(body, tc.body) && !strings.Contains(body, "headers larger") {
			t.Errorf("%q: %d %q, want %d %q", tc.req[:20], resp.StatusCode, body, tc.code, tc.body)
		}
	}
	if s := e.p.Stats(); s.BadRequests != 10 || s.Allowed+s.Refused != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestResponseHopHeaders uses a raw origin: Go's server would rewrite the
// Connection header of a "Connection: close" request.
func TestResponseHopHeaders(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil || !req.Close || req.Header.Get("User-Agent") != "" || req.Header["User-Agent"] != nil {
			io.WriteString(c, "HTTP/1.1 500 Bad\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: X-Secret-Hop, keep-alive\r\nX-Secret-Hop: x\r\n"+
			"Keep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\nUpgrade: foo\r\nX-Kept: 1\r\nContent-Length: 2\r\n\r\nok")
	}()
	port := portOf(t, l.Addr().String())
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("raw.test", port)}, hosts: map[string]string{"raw.test": "127.0.0.1"}})
	c := e.dial()
	fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.1\r\n\r\n", port)
	resp := rawResponse(t, bufio.NewReader(c), "GET")
	if body := readBody(t, resp); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	for _, h := range []string{"Connection", "X-Secret-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
		if v := resp.Header.Get(h); v != "" {
			t.Errorf("%s: %q reached the client", h, v)
		}
	}
	if resp.Header.Get("X-Kept") != "1" {
		t.Errorf("headers %v", resp.Header)
	}
}

// TestClientGoneWhileOriginThinks: a client that disconnects while the
// origin has not answered yet (after its request, or in the middle of its
// upload) must not pin the upstream connection.
func TestClientGoneWhileOriginThinks(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed := make(chan struct{}, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c) // never answers; returns when the proxy closes
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	port := portOf(t, l.Addr().String())
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("slow.test", port)}, hosts: map[string]string{"slow.test": "127.0.0.1"}})
	for _, req := range []string{
		"GET http://slow.test:%d/ HTTP/1.1\r\n\r\n",
		"POST http://slow.test:%d/ HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
	} {
		c := e.dial()
		fmt.Fprintf(c, req, port)
		time.Sleep(50 * time.Millisecond)
		c.Close()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: upstream connection still open after the client left", req[:4])
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.p.Stats().Active != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a := e.p.Stats().Active; a != 0 {
		t.Errorf("%d active connections", a)
	}
}
