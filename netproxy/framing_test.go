package netproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbox-executable/policy"
)

// seen is what a scripted origin received: the raw bytes of the request
// head and the request as net/http parsed it, body and trailers read.
type seen struct {
	head string
	req  *http.Request
	body string
	err  error
}

// scriptedOrigin serves each connection with serve(conn, reader); the
// default reads one request with net/http (recording it) and writes resp.
type scriptedOrigin struct {
	port  uint16
	seen  chan seen
	conns sync.WaitGroup
}

func startScripted(t *testing.T, serve func(c net.Conn, br *bufio.Reader, o *scriptedOrigin)) *scriptedOrigin {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &scriptedOrigin{port: portOf(t, l.Addr().String()), seen: make(chan seen, 16)}
	t.Cleanup(func() { l.Close(); o.conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			o.conns.Add(1)
			go func() {
				defer o.conns.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				serve(c, bufio.NewReader(c), o)
			}()
		}
	}()
	return o
}

// readSeen reads a request from br the way an origin would and records it.
func (o *scriptedOrigin) readSeen(br *bufio.Reader) seen {
	head, err := readHead(br)
	s := seen{head: head, err: err}
	if err == nil {
		s.req, s.err = http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(head), br)))
	}
	if s.err == nil {
		b, err := io.ReadAll(s.req.Body)
		s.body, s.err = string(b), err
	}
	o.seen <- s
	return s
}

// respondWith returns a serve function that records the request and writes
// resp.
func respondWith(resp string) func(net.Conn, *bufio.Reader, *scriptedOrigin) {
	return func(c net.Conn, br *bufio.Reader, o *scriptedOrigin) {
		o.readSeen(br)
		io.WriteString(c, resp)
	}
}

func (o *scriptedOrigin) next(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-o.seen:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("the origin saw no request")
		return seen{}
	}
}

func scriptedEnv(t *testing.T, o *scriptedOrigin) *env {
	return newEnv(t, envConfig{
		entries: []policy.HostPort{hp("raw.test", o.port)},
		hosts:   map[string]string{"raw.test": "127.0.0.1", "denied.test": "127.0.0.1"},
	})
}

func TestChunkedRequestAndResponse(t *testing.T) {
	o := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\nConnection: X-Hop\r\nX-Hop: 1\r\n\r\n"+
		"3;ext=1\r\nabc\r\n2 ; q=\"x y\"\r\nde\r\n0;last\r\nX-Sum: 5\r\nProxy-Authenticate: Basic\r\nX-Hop: 2\r\nContent-Length: 99\r\n\r\n"))
	e := scriptedEnv(t, o)
	c := e.dial()
	br := bufio.NewReader(c)
	for i := range 2 { // twice on one connection: the framing left it usable
		fmt.Fprintf(c, "POST http://raw.test:%d/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\nConnection: X-Drop\r\nX-Drop: 1\r\n\r\n"+
			"5;name=value;q=\"a b\"\r\nhello\r\n6 ; ext\r\n world\r\n0\r\nX-Checksum: abc\r\nProxy-Authorization: Basic c2VjcmV0\r\n"+
			"X-Drop: 2\r\nContent-Length: 11\r\nHost: evil.test\r\n\r\n", o.port)
		s := o.next(t)
		if s.err != nil || s.body != "hello world" || len(s.req.TransferEncoding) != 1 {
			t.Fatalf("origin: %v %q %v\n%s", s.err, s.body, s.req, s.head)
		}
		if got := fmt.Sprint(s.req.Trailer); got != "map[X-Checksum:[abc]]" {
			t.Errorf("origin trailers %s, want only X-Checksum", got)
		}
		if s.req.Header.Get("X-Drop") != "" || s.req.Host != fmt.Sprintf("raw.test:%d", o.port) || !s.req.Close {
			t.Errorf("origin headers %v host %q", s.req.Header, s.req.Host)
		}
		if strings.Contains(s.head, "name=value") {
			t.Errorf("chunk extensions forwarded: %q", s.head)
		}
		resp := rawResponse(t, br, "POST")
		if body := readBody(t, resp); resp.StatusCode != 200 || body != "abcde" || resp.Close {
			t.Fatalf("request %d: %d %q close=%v", i, resp.StatusCode, body, resp.Close)
		}
		if got := fmt.Sprint(resp.Trailer); got != "map[X-Sum:[5]]" {
			t.Errorf("client trailers %s, want only X-Sum", got)
		}
		if resp.Header.Get("X-Hop") != "" {
			t.Errorf("client headers %v", resp.Header)
		}
	}
	ev := e.waitEvents(2)[1]
	if !ev.Allowed || ev.BytesUp == 0 || ev.BytesDown == 0 || ev.Reason != "matches allowlist entry raw.test:"+fmt.Sprint(o.port) {
		t.Errorf("event %+v", ev)
	}
}

// TestChunkedResponseToHTTP10: a chunked response is de-chunked and ended
// by closing for an HTTP/1.0 client; trailers are dropped.
func TestChunkedResponseToHTTP10(t *testing.T) {
	o := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3\r\nabc\r\n2;e\r\nde\r\n0\r\nX-Sum: 5\r\n\r\n"))
	e := scriptedEnv(t, o)
	c := e.dial()
	fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.0\r\n\r\n", o.port)
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(got), "\r\n\r\n")
	if body != "abcde" || !strings.Contains(head, "\r\nConnection: close") || strings.Contains(head, "Transfer-Encoding") ||
		strings.Contains(head, "Trailer") || strings.Contains(head, "Content-Length") {
		t.Errorf("got %q", got)
	}
}

// TestFramingRefused: ambiguous or unsupported request framing is refused
// with 400 before anything is dialed.
func TestFramingRefused(t *testing.T) {
	e := newEnv(t, envConfig{entries: []policy.HostPort{hp("web.test", 80)}, hosts: map[string]string{"web.test": "127.0.0.1"}})
	for _, tc := range []struct{ head, reason string }{
		{"Content-Length: 5\r\nTransfer-Encoding: chunked", "both Transfer-Encoding and Content-Length"},
		{"Transfer-Encoding: chunked\r\nContent-Length: 5", "both Transfer-Encoding and Content-Length"},
		{"Content-Length: 5\r\nContent-Length: 6", "more than one Content-Length"},
		{"Content-Length: 5\r\nContent-Length: 5", "more than one Content-Length"},
		{"Content-Length: 5, 6", "invalid Content-Length"},
		{"Content-Length: -5", "invalid Content-Length"},
		{"Content-Length: 99999999999999999999", "invalid Content-Length"},
		{"Transfer-Encoding: gzip, chunked", "unsupported Transfer-Encoding"},
		{"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "unsupported Transfer-Encoding"},
		{"Transfer-Encoding: chun\u212aed", "unsupported Transfer-Encoding"},
		{"Transfer-Encoding : chunked", "malformed HTTP request"},
	} {
		c := e.dial()
		fmt.Fprintf(c, "POST http://web.test/ HTTP/1.1\r\n%s\r\n\r\n0\r\n\r\nhello", tc.head)
		resp := rawResponse(t, bufio.NewReader(c), "POST")
		body := readBody(t, resp)
		if resp.StatusCode != 400 || body != "sandbox-executable: malformed HTTP request: "+tc.reason+"\n" && !strings.Contains(body, tc.reason) ||
			!resp.Close {
			t.Errorf("%q: %d %q", tc.head, resp.StatusCode, body)
		}
	}
	// HTTP/1.0 with Transfer-Encoding.
	c := e.dial()
	io.WriteString(c, "POST http://web.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	resp := rawResponse(t, bufio.NewReader(c), "POST")
	if body := readBody(t, resp); resp.StatusCode != 400 || !strings.Contains(body, "HTTP/1.0") {
		t.Errorf("HTTP/1.0 with Transfer-Encoding: %d %q", resp.StatusCode, body)
	}
	if s := e.p.Stats(); s.BadRequests != 12 || s.Allowed+s.Refused != 0 {
		t.Errorf("stats %+v", s)
	}
	select {
	case a := <-e.dialed:
		t.Errorf("dialed %s for a refused request", a)
	default:
	}
}

// TestSmugglingShapedBodies: what a body contains is relayed as data, and
// what follows a body on the connection is a new request, checked again.
func TestSmugglingShapedBodies(t *testing.T) {
	o := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	e := scriptedEnv(t, o)
	inner := "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n"
	for _, tc := range []struct{ name, req, body string }{
		{"content-length", fmt.Sprintf("POST http://raw.test:%d/ HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", o.port, len(inner), inner), inner},
		{"chunked", fmt.Sprintf("POST http://raw.test:%d/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", o.port, len(inner), inner), inner},
		{"chunked-then-request", fmt.Sprintf("POST http://raw.test:%d/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n%s", o.port, inner), ""},
		{"get-with-length", fmt.Sprintf("GET http://raw.test:%d/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello%s", o.port, inner), "hello"},
	} {
		c := e.dial()
		br := bufio.NewReader(c)
		io.WriteString(c, tc.req)
		s := o.next(t)
		if s.err != nil || s.body != tc.body {
			t.Errorf("%s: origin got %q, %v", tc.name, s.body, s.err)
		}
		resp := rawResponse(t, br, "POST")
		if body := readBody(t, resp); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("%s: %d %q", tc.name, resp.StatusCode, body)
		}
		if tc.body == inner {
			continue
		}
		// The pipelined request is read as a request, and refused.
		resp = rawResponse(t, br, "GET")
		if body := readBody(t, resp); resp.StatusCode != 403 || !strings.Contains(body, "denied.test:80 is not in the network allowlist") {
			t.Errorf("%s: pipelined request got %d %q", tc.name, resp.StatusCode, body)
		}
	}
}

// TestBodylessResponses: responses to HEAD and 1xx/204/304 responses carry
// no body, whatever framing the origin announced, and leave the client
// connection usable.
func TestBodylessResponses(t *testing.T) {
	responses := map[string]string{
		"/head-cl":      "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
		"/head-chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/head-none":    "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n",
		"/204":          "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nX-A: 1\r\n\r\n",
		"/204-chunked":  "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/304":          "HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n",
		"/304-chunked":  "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/after":        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone",
	}
	o := startScripted(t, func(c net.Conn, br *bufio.Reader, o *scriptedOrigin) {
		s := o.readSeen(br)
		if s.err == nil {
			io.WriteString(c, responses[s.req.URL.Path])
		}
	})
	e := scriptedEnv(t, o)
	c := e.dial()
	br := bufio.NewReader(c)
	for _, tc := range []struct {
		method, path, framing string
		code                  int
	}{
		{"HEAD", "/head-cl", "Content-Length: 1234", 200},
		{"HEAD", "/head-chunked", "Transfer-Encoding: chunked", 200},
		{"HEAD", "/head-none", "", 200},
		{"GET", "/204", "", 204},
		{"GET", "/204-chunked", "", 204},
		{"GET", "/304", "", 304},
		{"GET", "/304-chunked", "", 304},
	} {
		fmt.Fprintf(c, "%s http://raw.test:%d%s HTTP/1.1\r\n\r\n", tc.method, o.port, tc.path)
		o.next(t)
		var head []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			if line == "\r\n" {
				break
			}
			if strings.HasPrefix(line, "Content-Length") || strings.HasPrefix(line, "Transfer-Encoding") || strings.HasPrefix(line, "Connection") {
				head = append(head, strings.TrimSpace(line))
			}
		}
		if got := strings.Join(head, "|"); got != tc.framing {
			t.Errorf("%s %s: framing %q, want %q", tc.method, tc.path, got, tc.framing)
		}
	}
	// Nothing was sent after those heads: the next response follows at once.
	fmt.Fprintf(c, "GET http://raw.test:%d/after HTTP/1.1\r\n\r\n", o.port)
	resp := rawResponse(t, br, "GET")
	if body := readBody(t, resp); resp.StatusCode != 200 || body != "done" {
		t.Errorf("after body-less responses: %d %q", resp.StatusCode, body)
	}
}

// TestCloseDelimitedResponse: a response without length is relayed until
// the origin closes, and the client connection is closed after it.
func TestCloseDelimitedResponse(t *testing.T) {
	for _, tc := range []struct{ name, resp, body string }{
		{"http11", "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nbody until close", "body until close"},
		{"http10", "HTTP/1.0 200 OK\r\n\r\nbody until close", "body until close"},
		// Transfer-Encoding in HTTP/1.0 makes the framing faulty: to close.
		{"http10-te", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
	} {
		o := startScripted(t, respondWith(tc.resp))
		e := scriptedEnv(t, o)
		c := e.dial()
		fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.1\r\n\r\nGET http://raw.test:%d/never HTTP/1.1\r\n\r\n", o.port, o.port)
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		head, body, _ := strings.Cut(string(got), "\r\n\r\n")
		if body != tc.body || !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.Contains(head, "\r\nConnection: close") ||
			strings.Contains(head, "Content-Length") || strings.Contains(head, "Transfer-Encoding") {
			t.Errorf("%s: got %q", tc.name, got)
		}
		o.next(t)
		select {
		case s := <-o.seen:
			t.Errorf("%s: the pipelined request was forwarded: %v", tc.name, s.req)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestShortResponseBody: an origin that closes before its Content-Length
// is reached leaves the client with a truncated response and a closed
// connection, never a response it would take as complete.
func TestShortResponseBody(t *testing.T) {
	o := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"))
	e := scriptedEnv(t, o)
	c := e.dial()
	fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.1\r\n\r\n", o.port)
	got, _ := io.ReadAll(c)
	if !strings.HasSuffix(string(got), "\r\n\r\nshort") || !strings.Contains(string(got), "Content-Length: 10") {
		t.Errorf("got %q", got)
	}
	if ev := e.waitEvents(1)[0]; !strings.Contains(ev.Reason, "relaying the response: unexpected EOF") {
		t.Errorf("event %+v", ev)
	}
}

// TestExpectContinueRaw: the head goes upstream alone, the origin's 100
// comes back, then the (chunked) body follows.
func TestExpectContinueRaw(t *testing.T) {
	o := startScripted(t, func(c net.Conn, br *bufio.Reader, o *scriptedOrigin) {
		head, err := readHead(br)
		if err != nil {
			o.seen <- seen{err: err}
			return
		}
		if br.Buffered() > 0 {
			o.seen <- seen{head: head, err: fmt.Errorf("body bytes arrived before 100 Continue")}
			return
		}
		io.WriteString(c, "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n")
		req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(head), br)))
		if err != nil {
			o.seen <- seen{head: head, err: err}
			return
		}
		b, err := io.ReadAll(req.Body)
		o.seen <- seen{head: head, req: req, body: string(b), err: err}
		io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
	})
	e := scriptedEnv(t, o)
	c := e.dial()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "PUT http://raw.test:%d/f HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n", o.port)
	interim := rawResponse(t, br, "PUT")
	if interim.StatusCode != 100 || interim.Header.Get("X-Interim") != "1" {
		t.Fatalf("interim %d %v", interim.StatusCode, interim.Header)
	}
	io.WriteString(c, "5\r\nhello\r\n0\r\n\r\n")
	resp := rawResponse(t, br, "PUT")
	if body := readBody(t, resp); resp.StatusCode != 201 || body != "ok" || resp.Close {
		t.Errorf("final %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	s := o.next(t)
	if s.err != nil || s.body != "hello" || s.req.Header.Get("Expect") != "100-continue" {
		t.Errorf("origin: %v %q %v", s.err, s.body, s.req)
	}
}

// TestExpectRefused: an origin that answers without reading the body ends
// the client connection (the unread body cannot be told from a request).
func TestExpectRefused(t *testing.T) {
	o := startScripted(t, func(c net.Conn, br *bufio.Reader, o *scriptedOrigin) {
		readHead(br)
		io.WriteString(c, "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n")
		time.Sleep(100 * time.Millisecond)
	})
	e := scriptedEnv(t, o)
	c := e.dial()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "PUT http://raw.test:%d/f HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", o.port)
	resp := rawResponse(t, br, "PUT")
	if readBody(t, resp); resp.StatusCode != 417 {
		t.Errorf("status %d", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("connection kept after an unread body: %v", err)
	}
}

func readHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), err
		}
		if line == "\r\n" {
			return b.String(), nil
		}
	}
}

// TestMalformedChunkedBodies: a request whose chunked body breaks the
// framing gets 400 and its upstream connection is closed; a response whose
// body does is cut off and the client connection closed.
func TestMalformedChunkedBodies(t *testing.T) {
	o := startScripted(t, func(c net.Conn, br *bufio.Reader, o *scriptedOrigin) {
		o.readSeen(br) // returns when the proxy closes the connection
	})
	e := scriptedEnv(t, o)
	for _, tc := range []struct{ name, body, reason string }{
		{"long-size-line", "5;" + strings.Repeat("e", 5000) + "\r\nhello\r\n0\r\n\r\n", "chunk-size line too long"},
		{"no-crlf-after-data", "5\r\nhelloXX0\r\n\r\n", "chunk data not followed by CRLF"},
		{"bad-size", "5x\r\nhello\r\n0\r\n\r\n", "invalid chunk size"},
		{"huge-trailer", "0\r\nX: " + strings.Repeat("a", 100<<10) + "\r\n\r\n", "trailer section too large"},
	} {
		c := e.dial()
		fmt.Fprintf(c, "POST http://raw.test:%d/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%s", o.port, tc.body)
		resp := rawResponse(t, bufio.NewReader(c), "POST")
		if body := readBody(t, resp); resp.StatusCode != 400 || body != "sandbox-executable: malformed request body: "+tc.reason+"\n" {
			t.Errorf("%s: %d %q", tc.name, resp.StatusCode, body)
		}
		if s := o.next(t); s.err == nil {
			t.Errorf("%s: the origin got a complete request: %q", tc.name, s.body)
		}
	}

	for _, tc := range []struct{ name, body, reason string }{
		{"long-size-line", "3\r\nabc\r\n5;" + strings.Repeat("e", 5000) + "\r\nhello\r\n0\r\n\r\n", "chunk-size line too long"},
		{"no-crlf-after-data", "3\r\nabcXX0\r\n\r\n", "chunk data not followed by CRLF"},
		{"truncated", "3\r\nabc\r\n5\r\nhe", "unexpected EOF"},
	} {
		o2 := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body))
		e2 := scriptedEnv(t, o2)
		c := e2.dial()
		fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.1\r\n\r\n", o2.port)
		got, _ := io.ReadAll(c)
		if !strings.Contains(string(got), "Transfer-Encoding: chunked") || strings.HasSuffix(string(got), "0\r\n\r\n") {
			t.Errorf("%s: got %q", tc.name, got)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
		}
		if err == nil {
			t.Errorf("%s: the client read a complete response", tc.name)
		}
		if ev := e2.waitEvents(1)[0]; !strings.Contains(ev.Reason, tc.reason) {
			t.Errorf("%s: event %+v", tc.name, ev)
		}
	}
}

// TestResponseHeaderSpaceBeforeColon: a response field whose name has a
// space before the colon is dropped, never taken as framing.
func TestResponseHeaderSpaceBeforeColon(t *testing.T) {
	o := startScripted(t, respondWith("HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nX-A: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	e := scriptedEnv(t, o)
	c := e.dial()
	fmt.Fprintf(c, "GET http://raw.test:%d/ HTTP/1.1\r\n\r\n", o.port)
	got, _ := io.ReadAll(c)
	head, body, _ := strings.Cut(string(got), "\r\n\r\n")
	if strings.Contains(head, "Transfer-Encoding") || !strings.Contains(head, "X-A: 1") || body != "3\r\nabc\r\n0\r\n\r\n" {
		t.Errorf("got %q", got)
	}
}
