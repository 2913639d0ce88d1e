package netproxy

// The HTTP/1.1 message handling the proxy needs (RFC 9112), written here so
// that the package does not import net/http: request and status lines,
// header sections (read with net/textproto), and message body framing.
//
// The proxy never forwards the framing it received: it parses the client's
// (and the origin's) framing completely, refuses what is ambiguous, and
// writes framing of its own on the other side. The rules:
//
//   - A request body is framed by Transfer-Encoding: chunked (HTTP/1.1
//     only), by exactly one valid Content-Length, or is empty. Both headers
//     together, two Content-Length field lines (even equal ones), a value
//     that is not a decimal number, any other transfer coding, and
//     Transfer-Encoding in an HTTP/1.0 request are refused with 400.
//   - A response to HEAD, a 1xx, 204 or 304 response has no body. Otherwise
//     Transfer-Encoding: chunked (which overrides Content-Length), then
//     Content-Length (repeated field lines must agree), else the body ends
//     when the origin closes. Transfer-Encoding in an HTTP/1.0 response
//     makes the body end at close whatever the Content-Length says; any
//     transfer coding other than chunked is refused with 502.
//   - Chunked bodies are decoded strictly: hex sizes with optional
//     extensions (dropped), CRLF line ends, CRLF after each chunk's data, a
//     bounded size line and trailer section, and a bounded share of
//     framing bytes over data bytes. They are re-encoded with one chunk per
//     piece of data relayed; trailer fields are relayed except the
//     hop-by-hop, Proxy-* and framing ones.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Status codes the proxy sends or inspects.
const (
	statusSwitchingProtocols = 101
	statusNoContent          = 204
	statusNotModified        = 304
	statusBadRequest         = 400
	statusForbidden          = 403
	statusHeaderTooLarge     = 431
	statusBadGateway         = 502
	statusGatewayTimeout     = 504
)

// statusText returns the reason phrase for the statuses the proxy sends.
func statusText(code int) string {
	switch code {
	case statusBadRequest:
		return "Bad Request"
	case statusForbidden:
		return "Forbidden"
	case statusHeaderTooLarge:
		return "Request Header Fields Too Large"
	case statusBadGateway:
		return "Bad Gateway"
	case statusGatewayTimeout:
		return "Gateway Timeout"
	}
	return "Error"
}

// framingError is a message whose body framing is invalid or ambiguous. Its
// text is fixed (never client input), so it may be shown to the client.
type framingError struct{ msg string }

func (e *framingError) Error() string { return e.msg }

// malformed returns an error for a malformed message; what is quoted.
func malformed(what, s string) error {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return errors.New(what + " " + strconv.Quote(s))
}

// request is a request head: line, header section and body framing.
type request struct {
	method string
	target string   // the request-target as received
	url    *url.URL // target parsed (authority form for CONNECT: no scheme)
	minor  int      // HTTP/1.minor
	header textproto.MIMEHeader
	// contentLength is the body's length, or -1 when it is chunked.
	contentLength int64
	// close: the client does not want the connection kept alive
	// ("Connection: close", or HTTP/1.0).
	close bool
}

func (r *request) chunked() bool { return r.contentLength < 0 }

// fieldCost is what a line of a head costs beyond its bytes: net/http's
// measure of a parsed field (a map entry and its strings). A head's budget
// is charged with it, so that a head of many tiny fields ("a:\r\n", over
// and over) does not parse into a map many times its size.
const fieldCost = 200

// errHeadTooLarge says a head or trailer section went past its budget.
var errHeadTooLarge = errors.New("header section too large")

// headReader reads a message head from br line by line, within budget
// bytes (each line charged fieldCost more), and parses its header section
// only once the whole section has been read within the budget.
type headReader struct {
	br     *bufio.Reader
	budget int
	buf    []byte
}

// raw reads one line, with its line end. It returns io.EOF if the
// connection ended before the line, io.ErrUnexpectedEOF if within it.
func (h *headReader) raw() ([]byte, error) {
	start := len(h.buf)
	for {
		chunk, err := h.br.ReadSlice('\n')
		h.budget -= len(chunk)
		if h.budget < 0 {
			return nil, errHeadTooLarge
		}
		h.buf = append(h.buf, chunk...)
		switch {
		case err == nil:
			if h.budget -= fieldCost; h.budget < 0 {
				return nil, errHeadTooLarge
			}
			return h.buf[start:], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(h.buf) > start:
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// line reads the start line, without its line end (CRLF or LF, as
// textproto's ReadLine takes it).
func (h *headReader) line() (string, error) {
	l, err := h.raw()
	if err != nil {
		return "", err
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	h.buf = h.buf[:0]
	return string(l), nil
}

// header reads a header section to its empty line, then parses it with
// textproto.
func (h *headReader) header() (textproto.MIMEHeader, error) {
	h.buf = h.buf[:0]
	for {
		l, err := h.raw()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if len(l) == 1 || len(l) == 2 && l[0] == '\r' {
			break
		}
	}
	return textproto.NewReader(bufio.NewReader(bytes.NewReader(h.buf))).ReadMIMEHeader()
}

// readRequest reads a request head from br. It returns io.EOF if the
// connection ended before the first line, io.ErrUnexpectedEOF if it ended
// within the head, and other errors for malformed requests.
func readRequest(br *bufio.Reader, max int) (*request, error) {
	h := headReader{br: br, budget: max}
	line, err := h.line()
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return nil, malformed("malformed request line", line)
	}
	if !isToken(method) {
		return nil, malformed("invalid method", method)
	}
	req := &request{method: method, target: target}
	if req.minor, ok1 = parseVersion(proto); !ok1 {
		return nil, malformed("malformed HTTP version", proto)
	}
	// CONNECT names an authority ("host:port"); every other method here
	// must use an absolute URI, checked by forward. The authority is
	// parsed as a URL's so that what a URL parser rejects is refused.
	raw := target
	authority := method == "CONNECT" && !strings.HasPrefix(target, "/")
	if authority {
		raw = "http://" + target
	}
	if req.url, err = url.ParseRequestURI(raw); err != nil {
		return nil, err
	}
	if authority {
		req.url.Scheme = ""
	}
	if req.header, err = h.header(); err != nil {
		return nil, err
	}
	for name := range req.header {
		if !isToken(name) {
			// textproto keeps names with a space before the colon;
			// RFC 9112 §5.1 requires a 400.
			return nil, malformed("invalid header field name", name)
		}
	}
	if len(req.header["Host"]) > 1 {
		return nil, errors.New("too many Host headers")
	}
	req.close = req.minor == 0 || hasToken(req.header["Connection"], "close")
	if req.contentLength, err = requestFraming(req.header, req.minor); err != nil {
		return nil, err
	}
	return req, nil
}

// requestFraming returns the length of a request's body, or -1 if it is
// chunked. See the rules at the top of this file.
func requestFraming(h textproto.MIMEHeader, minor int) (int64, error) {
	te, hasTE := h["Transfer-Encoding"]
	cl, hasCL := h["Content-Length"]
	switch {
	case hasTE && hasCL:
		return 0, &framingError{"both Transfer-Encoding and Content-Length"}
	case hasTE:
		if minor == 0 {
			return 0, &framingError{"Transfer-Encoding in an HTTP/1.0 request"}
		}
		if !isChunked(te) {
			return 0, &framingError{"unsupported Transfer-Encoding (only chunked is)"}
		}
		return -1, nil
	case hasCL:
		if len(cl) != 1 {
			return 0, &framingError{"more than one Content-Length"}
		}
		n, ok := parseContentLength(cl[0])
		if !ok {
			return 0, &framingError{"invalid Content-Length"}
		}
		return n, nil
	}
	return 0, nil
}

// response is a response head.
type response struct {
	minor  int
	code   int
	reason string
	header textproto.MIMEHeader
}

// readResponseHead reads a status line and header section. Header fields
// whose names are not tokens are dropped (RFC 9112 §5.1 asks a proxy to
// repair or remove them).
func readResponseHead(br *bufio.Reader, max int) (*response, error) {
	h := headReader{br: br, budget: max}
	line, err := h.line()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok {
		return nil, malformed("malformed status line", line)
	}
	resp := &response{}
	if resp.minor, ok = parseVersion(proto); !ok {
		return nil, malformed("malformed HTTP version", proto)
	}
	status = strings.TrimLeft(status, " ")
	code, reason, _ := strings.Cut(status, " ")
	if len(code) != 3 || code[0] < '1' || code[0] > '9' || !isDigits(code) {
		return nil, malformed("malformed status code", code)
	}
	resp.code, _ = strconv.Atoi(code)
	for i := 0; i < len(reason); i++ {
		if c := reason[i]; c < ' ' && c != '\t' || c == 0x7f {
			return nil, malformed("malformed reason phrase", reason)
		}
	}
	resp.reason = reason
	if resp.header, err = h.header(); err != nil {
		return nil, err
	}
	for name := range resp.header {
		if !isToken(name) {
			delete(resp.header, name)
		}
	}
	return resp, nil
}

// bodyAllowed reports whether a response to method with this status has a
// body (RFC 9112 §6.3, rules 1 and 2).
func (r *response) bodyAllowed(method string) bool {
	return method != "HEAD" && r.code >= 200 && r.code != statusNoContent && r.code != statusNotModified
}

// framing returns how the response's body is delimited: its length, or -1
// with chunked set, or -1 when it ends at close. It validates the framing
// headers even when there is no body.
func (r *response) framing() (n int64, chunked bool, err error) {
	n = -1
	if cl, ok := r.header["Content-Length"]; ok {
		first := textproto.TrimString(cl[0])
		for _, v := range cl[1:] {
			if textproto.TrimString(v) != first {
				return 0, false, &framingError{"different Content-Length values"}
			}
		}
		if n, ok = parseContentLength(first); !ok {
			return 0, false, &framingError{"invalid Content-Length"}
		}
	}
	if te, ok := r.header["Transfer-Encoding"]; ok {
		if r.minor == 0 {
			// RFC 9112 §6.1: the framing is faulty; the body ends at
			// close, whatever Content-Length says.
			return -1, false, nil
		}
		if !isChunked(te) {
			return 0, false, &framingError{"unsupported Transfer-Encoding (only chunked is)"}
		}
		return -1, true, nil
	}
	return n, false, nil
}

// parseVersion parses "HTTP/1.x" and returns x.
func parseVersion(s string) (minor int, ok bool) {
	if len(s) != len("HTTP/1.1") || !strings.HasPrefix(s, "HTTP/1.") || s[7] < '0' || s[7] > '9' {
		return 0, false
	}
	return int(s[7] - '0'), true
}

// parseContentLength parses a Content-Length value: decimal digits only
// (no sign, no list), at most 2^63-1.
func parseContentLength(s string) (int64, bool) {
	s = textproto.TrimString(s)
	if s == "" || !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// isChunked reports whether Transfer-Encoding field lines say exactly
// "chunked" (one field line, ASCII case-insensitive).
func isChunked(te []string) bool {
	return len(te) == 1 && asciiEqualFold(textproto.TrimString(te[0]), "chunked")
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token (methods, field names).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// asciiEqualFold compares ASCII case-insensitively. strings.EqualFold
// would also fold Unicode (U+212A KELVIN SIGN equals 'k'), which would let
// "chun\u212aed" pass for "chunked".
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// hasToken reports whether comma-separated field values contain token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			if asciiEqualFold(textproto.TrimString(f), token) {
				return true
			}
		}
	}
	return false
}

// hopHeaders are removed from forwarded requests and responses, along with
// every header named in Connection and every Proxy-* header. Trailer is
// kept only when the body is forwarded chunked (see writeFraming).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders removes the hop-by-hop and Proxy-* fields from h. It
// returns the (canonical) names that Connection listed, which apply to the
// message's trailer section too.
func removeHopHeaders(h textproto.MIMEHeader) (named []string) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				f = textproto.CanonicalMIMEHeaderKey(f)
				delete(h, f)
				named = append(named, f)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
	for k := range h {
		if isProxyHeader(k) {
			delete(h, k)
		}
	}
	return named
}

func isProxyHeader(k string) bool {
	return len(k) >= 6 && asciiEqualFold(k[:6], "proxy-")
}

// filterTrailer removes from a trailer section the fields that must not be
// relayed: hop-by-hop ones (including those the message's Connection
// named), Proxy-*, and those that frame or route the message.
func filterTrailer(t textproto.MIMEHeader, named []string) {
	removeHopHeaders(t)
	for _, k := range named {
		delete(t, k)
	}
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Trailer", "Host"} {
		delete(t, k)
	}
	for k := range t {
		if !isToken(k) {
			delete(t, k)
		}
	}
}

// writeFields writes header fields sorted by name, one line per value.
// Values come from textproto, which refuses CR, LF and NUL in them; they
// are checked again so that no line can ever be injected.
func writeFields(w *bufio.Writer, h textproto.MIMEHeader) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			w.WriteString(k)
			w.WriteString(": ")
			if strings.ContainsAny(v, "\r\n\x00") {
				v = strings.Map(func(r rune) rune {
					if r == '\r' || r == '\n' || r == 0 {
						return ' '
					}
					return r
				}, v)
			}
			w.WriteString(textproto.TrimString(v))
			w.WriteString("\r\n")
		}
	}
}

// Chunked coding limits.
const (
	// maxChunkLine bounds a chunk-size line, extensions included.
	maxChunkLine = 4096
	// A sender may spend chunkAllowance framing bytes per chunk plus twice
	// the chunk's data; beyond that, maxFramingDebt bytes of framing are
	// tolerated in all before the body is refused (tiny chunks loaded
	// with extensions would otherwise cost the proxy work for no data).
	chunkAllowance = 16
	maxFramingDebt = 16 << 10
)

var (
	errChunkLineTooLong = &framingError{"chunk-size line too long"}
	errTrailerTooLarge  = &framingError{"trailer section too large"}
)

// chunkedReader decodes a chunked body (RFC 9112 §7.1) read from r and
// returns its data. After the last chunk it reads the trailer section
// into trailer and returns io.EOF; it never reads past the body. lim,
// which feeds r, bounds the trailer section to maxTrailer bytes (plus r's
// read-ahead).
type chunkedReader struct {
	r          *bufio.Reader
	lim        *io.LimitedReader
	maxTrailer int64

	left    int64 // data bytes left in the current chunk
	inChunk bool  // a chunk's data is being read; CRLF follows it
	debt    int64 // framing bytes not paid for by data
	trailer textproto.MIMEHeader
	err     error
}

func newChunkedReader(r *bufio.Reader, lim *io.LimitedReader, maxTrailer int64) *chunkedReader {
	return &chunkedReader{r: r, lim: lim, maxTrailer: maxTrailer}
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.err == nil {
		if c.left > 0 {
			if len(p) == 0 {
				return 0, nil
			}
			if int64(len(p)) > c.left {
				p = p[:c.left]
			}
			n, err := c.r.Read(p)
			c.left -= int64(n)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			c.err = err
			return n, err
		}
		if c.inChunk {
			c.inChunk = false
			if c.err = c.readCRLF(); c.err != nil {
				break
			}
		}
		c.err = c.nextChunk()
	}
	return 0, c.err
}

// readCRLF reads the CRLF that ends a chunk's data.
func (c *chunkedReader) readCRLF() error {
	b, err := c.r.Peek(2)
	if len(b) == 2 && b[0] == '\r' && b[1] == '\n' {
		c.r.Discard(2)
		return nil
	}
	switch {
	case err == io.EOF:
		return io.ErrUnexpectedEOF
	case err != nil:
		return err
	}
	return &framingError{"chunk data not followed by CRLF"}
}

// nextChunk reads a chunk-size line; for the last chunk, it reads the
// trailer section and returns io.EOF.
func (c *chunkedReader) nextChunk() error {
	line, err := c.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > maxChunkLine:
		return errChunkLineTooLong
	case err == io.EOF:
		return io.ErrUnexpectedEOF
	case err != nil:
		return err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return &framingError{"chunk-size line not ended by CRLF"}
	}
	size, err := parseChunkSize(line[:len(line)-2])
	if err != nil {
		return err
	}
	// size < 2^59: no overflow.
	c.debt = max(c.debt+int64(len(line))+2-chunkAllowance-2*size, 0)
	if c.debt > maxFramingDebt {
		return &framingError{"chunked body with too much framing for its data"}
	}
	if size == 0 {
		if err := c.readTrailer(); err != nil {
			return err
		}
		return io.EOF
	}
	c.left, c.inChunk = size, true
	return nil
}

// parseChunkSize parses "1*HEXDIG [ BWS ; chunk-ext ]" (a line without its
// CRLF). Extensions are checked for control characters and dropped.
func parseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line) && isHex(line[i]); i++ {
		if n >= 1<<59 {
			return 0, &framingError{"chunk size too large"}
		}
		n = n<<4 | int64(hexVal(line[i]))
	}
	if i == 0 {
		return 0, &framingError{"invalid chunk size"}
	}
	rest := line[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] != ';' {
		return 0, &framingError{"invalid chunk size"}
	}
	for _, b := range rest {
		if b < ' ' && b != '\t' || b == 0x7f {
			return 0, &framingError{"control character in a chunk extension"}
		}
	}
	return n, nil
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// readTrailer reads the trailer section that ends a chunked body.
func (c *chunkedReader) readTrailer() error {
	saved := c.lim.N
	c.lim.N = c.maxTrailer
	h := headReader{br: c.r, budget: int(c.maxTrailer)}
	t, err := h.header()
	exhausted := c.lim.N <= 0 || errors.Is(err, errHeadTooLarge)
	c.lim.N = saved
	switch {
	case err == nil:
		c.trailer = t
		return nil
	case exhausted:
		return errTrailerTooLarge
	}
	return err
}

// chunkWriter writes each Write as one chunk.
type chunkWriter struct{ w *bufio.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var b [18]byte
	c.w.Write(strconv.AppendInt(b[:0], int64(len(p)), 16))
	c.w.WriteString("\r\n")
	n, err := c.w.Write(p)
	if err != nil {
		return n, err
	}
	_, err = c.w.WriteString("\r\n")
	return n, err
}

// writeLastChunk ends a chunked body with the given trailer fields.
func writeLastChunk(w *bufio.Writer, trailer textproto.MIMEHeader) {
	w.WriteString("0\r\n")
	writeFields(w, trailer)
	w.WriteString("\r\n")
}

// fixedReader reads exactly n bytes from r: an early EOF is
// io.ErrUnexpectedEOF.
type fixedReader struct {
	r io.Reader
	n int64
}

func (f *fixedReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	if err == io.EOF && f.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
