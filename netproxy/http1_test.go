package netproxy

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net/textproto"
	"strings"
	"testing"
)

// decodeChunked runs a chunkedReader over in and returns the data, the
// trailer, what is left unread and the error (nil at a clean end).
func decodeChunked(in string, maxTrailer int64) (data string, trailer textproto.MIMEHeader, rest string, err error) {
	lim := &io.LimitedReader{R: strings.NewReader(in), N: math.MaxInt64}
	br := bufio.NewReaderSize(lim, 4096)
	cr := newChunkedReader(br, lim, maxTrailer)
	b, err := io.ReadAll(cr)
	r, _ := io.ReadAll(br)
	return string(b), cr.trailer, string(r), err
}

func TestChunkedReader(t *testing.T) {
	for _, tc := range []struct {
		in, data, rest, trailer, err string
	}{
		{in: "0\r\n\r\n"},
		{in: "5\r\nhello\r\n0\r\n\r\nNEXT", data: "hello", rest: "NEXT"},
		{in: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", data: "hello world"},
		{in: "A\r\n0123456789\r\n0\r\n\r\n", data: "0123456789"},
		{in: "00005\r\nhello\r\n000\r\n\r\n", data: "hello"},
		// Extensions (RFC 9112 §7.1.1), BWS before ';', and on the last chunk.
		{in: "5;a=b;c=\"x y\"\r\nhello\r\n5 ;d\r\nworld\r\n0;e=f\r\n\r\n", data: "helloworld"},
		{in: "5\t;a\r\nhello\r\n0\r\n\r\n", data: "hello"},
		{in: "5 \r\nhello\r\n0\r\n\r\n", data: "hello"},
		// Trailers.
		{in: "3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Other: a b\r\n\r\nNEXT", data: "abc", trailer: "X-Other=a b;X-Sum=1", rest: "NEXT"},
		{in: "0\r\nX-Sum: 1\n\r\n", trailer: "X-Sum=1"},
		// Malformed.
		{in: "", err: "unexpected EOF"},
		{in: "5\r\nhel", data: "hel", err: "unexpected EOF"},
		{in: "5\r\nhello", data: "hello", err: "unexpected EOF"},
		{in: "5\r\nhello\r\n0\r\n", data: "hello", err: "unexpected EOF"},
		{in: "5\r\nhelloXX0\r\n\r\n", data: "hello", err: "chunk data not followed by CRLF"},
		{in: "5\r\nhello\n0\r\n\r\n", data: "hello", err: "chunk data not followed by CRLF"},
		{in: "5\nhello\r\n0\r\n\r\n", err: "not ended by CRLF"},
		{in: "5\r\r\nhello\r\n0\r\n\r\n", err: "invalid chunk size"},
		{in: "\r\n", err: "invalid chunk size"},
		{in: " 5\r\nhello\r\n0\r\n\r\n", err: "invalid chunk size"},
		{in: "+5\r\nhello\r\n0\r\n\r\n", err: "invalid chunk size"},
		{in: "-1\r\n", err: "invalid chunk size"},
		{in: "0x5\r\nhello\r\n0\r\n\r\n", err: "invalid chunk size"},
		{in: "5 x\r\nhello\r\n0\r\n\r\n", err: "invalid chunk size"},
		{in: "5;a\x00b\r\nhello\r\n0\r\n\r\n", err: "control character"},
		{in: "5;a\rb\r\nhello\r\n0\r\n\r\n", err: "control character"},
		{in: "fffffffffffffffff\r\n", err: "chunk size too large"},
		{in: "8000000000000000\r\n", err: "chunk size too large"},
		{in: "5;" + strings.Repeat("e", 5000) + "\r\nhello\r\n0\r\n\r\n", err: "chunk-size line too long"},
		{in: "5;" + strings.Repeat("e", 4093) + "\r\nhello\r\n0\r\n\r\n", err: "chunk-size line too long"},
		{in: "0\r\nBad Header\r\n\r\n", err: "malformed MIME header"},
		{in: "0\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n", err: "trailer section too large"},
		{in: "0\r\n" + strings.Repeat("A:\r\n", 100) + "\r\n", err: "trailer section too large"},
		{in: "0\r\nX: a\r\n", err: "unexpected EOF"},
	} {
		data, trailer, rest, err := decodeChunked(tc.in, 4096)
		name := tc.in
		if len(name) > 40 {
			name = name[:40]
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", name, err, tc.err)
			continue
		}
		if data != tc.data {
			t.Errorf("%q: data %q, want %q", name, data, tc.data)
		}
		if tc.err == "" && rest != tc.rest {
			t.Errorf("%q: left %q unread, want %q", name, rest, tc.rest)
		}
		var got []string
		for _, k := range sortedKeys(trailer) {
			got = append(got, k+"="+strings.Join(trailer[k], ","))
		}
		if s := strings.Join(got, ";"); s != tc.trailer {
			t.Errorf("%q: trailer %q, want %q", name, s, tc.trailer)
		}
	}
	// A chunk-size line just under the limit passes.
	if data, _, _, err := decodeChunked("5;"+strings.Repeat("e", 4000)+"\r\nhello\r\n0\r\n\r\n", 4096); err != nil || data != "hello" {
		t.Errorf("long extension under the limit: %q %v", data, err)
	}
}

func sortedKeys(h textproto.MIMEHeader) []string {
	var keys []string
	for k := range h {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// TestChunkedFramingDebt: tiny chunks loaded with extensions are refused;
// tiny chunks without them are fine (streaming a byte at a time is
// legitimate), and so are short extensions on real data.
func TestChunkedFramingDebt(t *testing.T) {
	var b strings.Builder
	for range 1000 {
		b.WriteString("1\r\nx\r\n")
	}
	b.WriteString("0\r\n\r\n")
	if data, _, _, err := decodeChunked(b.String(), 4096); err != nil || len(data) != 1000 {
		t.Errorf("one-byte chunks: %d bytes, %v", len(data), err)
	}
	b.Reset()
	for range 1000 {
		b.WriteString("100;sig=0123456789abcdef\r\n" + strings.Repeat("x", 256) + "\r\n")
	}
	b.WriteString("0\r\n\r\n")
	if data, _, _, err := decodeChunked(b.String(), 4096); err != nil || len(data) != 256000 {
		t.Errorf("extensions on real data: %d bytes, %v", len(data), err)
	}
	b.Reset()
	for range 1000 {
		b.WriteString("1;" + strings.Repeat("e", 200) + "\r\nx\r\n")
	}
	b.WriteString("0\r\n\r\n")
	if _, _, _, err := decodeChunked(b.String(), 4096); err == nil || !strings.Contains(err.Error(), "too much framing") {
		t.Errorf("extension-loaded one-byte chunks: %v", err)
	}
}

func TestChunkWriter(t *testing.T) {
	var out strings.Builder
	w := bufio.NewWriter(&out)
	cw := chunkWriter{w}
	cw.Write([]byte("hello"))
	cw.Write(nil) // must not end the body
	cw.Write([]byte(strings.Repeat("x", 26)))
	writeLastChunk(w, textproto.MIMEHeader{"X-Sum": {"1"}})
	w.Flush()
	want := "5\r\nhello\r\n1a\r\n" + strings.Repeat("x", 26) + "\r\n0\r\nX-Sum: 1\r\n\r\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	// And it reads back.
	if data, tr, _, err := decodeChunked(out.String(), 4096); err != nil || data != "hello"+strings.Repeat("x", 26) || tr.Get("X-Sum") != "1" {
		t.Errorf("round trip: %q %v %v", data, tr, err)
	}
}

func TestRequestFraming(t *testing.T) {
	for _, tc := range []struct {
		head string
		n    int64
		err  string
	}{
		{head: "GET http://a.test/ HTTP/1.1\r\n\r\n", n: 0},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n", n: 5},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length:  007 \r\n\r\n", n: 7},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", n: -1},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", n: -1},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\n", n: math.MaxInt64},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", err: "both"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n", err: "both"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", err: "more than one"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", err: "more than one"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length:\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n", err: "invalid Content-Length"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chun\u212aed\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", err: "HTTP/1.0"},
		{head: "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", err: "invalid header field name"},
		{head: "POST http://a.test/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n", err: "invalid header field name"},
		{head: "GET http://a.test/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", err: "too many Host"},
		{head: "GET http://a.test/ HTTP/2.0\r\n\r\n", err: "malformed HTTP version"},
		{head: "GET http://a.test/ HTTP/1.1 \r\n\r\n", err: "malformed HTTP version"},
		{head: "G\x00T http://a.test/ HTTP/1.1\r\n\r\n", err: "invalid method"},
		{head: "GET http://a.test/\x01 HTTP/1.1\r\n\r\n", err: "invalid control character"},
	} {
		req, err := readRequest(bufio.NewReader(strings.NewReader(tc.head)), DefaultMaxHeaderBytes)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.head, err, tc.err)
			}
			continue
		}
		if err != nil || req.contentLength != tc.n {
			t.Errorf("%q: %v, length %v, want %d", tc.head, err, req, tc.n)
		}
	}
}

func TestResponseHead(t *testing.T) {
	for _, tc := range []struct {
		head    string
		code    int
		reason  string
		n       int64
		chunked bool
		err     string
	}{
		{head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", code: 200, reason: "OK", n: 5},
		{head: "HTTP/1.1 200\r\n\r\n", code: 200, n: -1},
		{head: "HTTP/1.1  404 Not  Found\r\n\r\n", code: 404, reason: "Not  Found", n: -1},
		{head: "HTTP/1.0 200 OK\r\n\r\n", code: 200, reason: "OK", n: -1},
		{head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", code: 200, reason: "OK", n: 5},
		{head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", code: 200, reason: "OK", n: -1, chunked: true},
		// HTTP/1.0 with Transfer-Encoding: faulty framing, read to close.
		{head: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", code: 200, reason: "OK", n: -1},
		// Names with a space before the colon are dropped, not used.
		{head: "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n", code: 200, reason: "OK", n: -1},
		{head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", err: "different Content-Length"},
		{head: "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", err: "invalid Content-Length"},
		{head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", err: "unsupported Transfer-Encoding"},
		{head: "HTTP/1.1 099 Odd\r\n\r\n", err: "malformed status code"},
		{head: "HTTP/1.1 20 OK\r\n\r\n", err: "malformed status code"},
		{head: "HTTP/1.1 2000 OK\r\n\r\n", err: "malformed status code"},
		{head: "HTTP/1.1 200 OK\rX-Injected: 1\r\n\r\n", err: "malformed reason phrase"},
		{head: "HTTP/2 200 OK\r\n\r\n", err: "malformed HTTP version"},
		{head: "HTTP/1.1\r\n\r\n", err: "malformed status line"},
		{head: "HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", err: "malformed MIME header"},
	} {
		resp, err := readResponseHead(bufio.NewReader(strings.NewReader(tc.head)), maxResponseHeaderBytes)
		var n int64
		var chunked bool
		if err == nil {
			n, chunked, err = resp.framing()
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.head, err, tc.err)
			}
			continue
		}
		if err != nil || resp.code != tc.code || resp.reason != tc.reason || n != tc.n || chunked != tc.chunked {
			t.Errorf("%q: %v %+v n=%d chunked=%v", tc.head, err, resp, n, chunked)
		}
	}
	if _, err := readResponseHead(bufio.NewReader(strings.NewReader("")), maxResponseHeaderBytes); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("empty response: %v", err)
	}
}

func TestRemoveHopHeaders(t *testing.T) {
	h := textproto.MIMEHeader{
		"Connection":          {"x-a, X-B", "close"},
		"X-A":                 {"1"},
		"X-B":                 {"1"},
		"Keep-Alive":          {"1"},
		"Proxy-Authorization": {"Basic c2VjcmV0"},
		"Proxy-Anything":      {"1"},
		"Te":                  {"trailers"},
		"Upgrade":             {"h2c"},
		"Transfer-Encoding":   {"chunked"},
		"Trailer":             {"X-Sum"},
		"X-Kept":              {"1"},
	}
	named := removeHopHeaders(h)
	if len(h) != 2 || h.Get("X-Kept") != "1" || h.Get("Trailer") != "X-Sum" {
		t.Errorf("left %v", h)
	}
	if strings.Join(named, ",") != "X-A,X-B,Close" {
		t.Errorf("named %v", named)
	}
	tr := textproto.MIMEHeader{"X-Sum": {"1"}, "X-A": {"1"}, "Proxy-Authorization": {"x"}, "Content-Length": {"1"},
		"Host": {"evil"}, "Trailer": {"x"}, "Transfer-Encoding": {"x"}, "Bad Name": {"x"}, "Connection": {"x"}}
	filterTrailer(tr, named)
	if len(tr) != 1 || tr.Get("X-Sum") != "1" {
		t.Errorf("trailer left %v", tr)
	}
}

func TestHostHeader(t *testing.T) {
	for in, want := range map[string]string{
		"web.test":              "web.test",
		"web.test:8080":         "web.test:8080",
		"[::1]:80":              "[::1]:80",
		"[fe80::1%eth0]:80":     "[fe80::1]:80",
		"[fe80::1%eth0]":        "[fe80::1]",
		"192.0.2.1:80":          "192.0.2.1:80",
		"[2001:db8::1%25x]:443": "[2001:db8::1]:443",
	} {
		if got := hostHeader(in); got != want {
			t.Errorf("hostHeader(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHeadFieldsAreCharged: a head's budget is charged for each line beyond
// its bytes, so a head of many tiny fields, small in bytes, is refused
// before it is parsed into a map many times its size.
func TestHeadFieldsAreCharged(t *testing.T) {
	tiny := strings.Repeat("A:\r\n", 2000) + "\r\n" // 8 KB, 2000 fields
	if _, err := readRequest(bufio.NewReader(strings.NewReader("GET http://a.test/ HTTP/1.1\r\n"+tiny)), DefaultMaxHeaderBytes); !errors.Is(err, errHeadTooLarge) {
		t.Errorf("request of 2000 tiny fields: %v", err)
	}
	if _, err := readResponseHead(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\n"+tiny)), 64<<10); !errors.Is(err, errHeadTooLarge) {
		t.Errorf("response of 2000 tiny fields: %v", err)
	}
	few := strings.Repeat("A-Field: some value\r\n", 50) + "\r\n"
	if r, err := readRequest(bufio.NewReader(strings.NewReader("GET http://a.test/ HTTP/1.1\r\n"+few)), DefaultMaxHeaderBytes); err != nil || len(r.header["A-Field"]) != 50 {
		t.Errorf("request of 50 fields: %v", err)
	}
}
