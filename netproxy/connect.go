package netproxy

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// handleConnect serves an HTTP CONNECT request: refuse with 403, or dial,
// answer 200 and splice until both directions end.
func (cn *conn) handleConnect(req *request, t0 time.Time) {
	host, port, err := splitAuthority(req.target)
	if err != nil {
		cn.badRequest("CONNECT", err.Error())
		cn.replyHTTP(statusBadRequest, "bad CONNECT target: "+err.Error())
		return
	}
	ev := Event{Time: t0, Client: cn.client, Method: "CONNECT", Host: host, Port: port}
	v, up, remote := cn.connectUpstream(host, port)
	ev.Host, ev.Reason, ev.Allowed = v.d.hostOr(host), v.d.reason, !v.refused
	if v.refused {
		cn.p.emit(ev)
		cn.replyHTTP(statusForbidden, v.d.reason)
		return
	}
	if v.err != nil {
		ev.Reason += "; " + v.err.Error()
		ev.Duration = time.Since(t0)
		cn.p.emit(ev)
		cn.replyHTTP(gatewayStatus(v.err), v.err.Error())
		return
	}
	defer up.Close()
	ev.Remote = remote
	rest := cn.takeBuffered()
	if _, err := io.WriteString(cn.c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		ev.Reason += "; client went away"
		ev.Duration = time.Since(t0)
		cn.p.emit(ev)
		return
	}
	ev.BytesUp, ev.BytesDown = splice(cn.c, rest, up)
	ev.Duration = time.Since(t0)
	cn.p.emit(ev)
}

// hostOr returns the normalized target host, or raw when it was invalid.
func (d decision) hostOr(raw string) string {
	if s := d.t.String(); s != "" {
		return s
	}
	return quoteHost(raw)
}

// splitAuthority parses a CONNECT target "host:port" ("[v6]:port").
func splitAuthority(s string) (string, uint16, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s is not host:port", quoteHost(s))
	}
	if host == "" {
		return "", 0, fmt.Errorf("%s has an empty host", quoteHost(s))
	}
	port, err := parsePort(ps)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

// parsePort parses a decimal port 1-65535.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("invalid port %s", quoteHost(s))
	}
	return uint16(n), nil
}

// gatewayStatus maps a resolution or dial error to 504 or 502.
func gatewayStatus(err error) int {
	if isTimeout(err) {
		return statusGatewayTimeout
	}
	return statusBadGateway
}

type closeWriter interface{ CloseWrite() error }

// splice relays client<->up until both directions have ended, first sending
// rest (bytes the client sent after its request) upstream. It uses io.Copy
// between the connections so that *net.TCPConn pairs use splice(2). When one
// direction reaches EOF the other side's write half is closed (half-close
// propagates); when one fails both connections are closed, which ends the
// other direction too. It returns the bytes sent up and down.
func splice(client net.Conn, rest []byte, up net.Conn) (upN, downN int64) {
	if len(rest) > 0 {
		n, err := up.Write(rest)
		upN += int64(n)
		if err != nil {
			return upN, 0
		}
	}
	done := make(chan int64, 1)
	go func() {
		n, err := io.Copy(up, client)
		endDirection(up, client, err)
		done <- n
	}()
	downN, err := io.Copy(client, up)
	endDirection(client, up, err)
	upN += <-done
	return upN, downN
}

// endDirection ends one direction of a tunnel that copied from src to dst:
// after a clean EOF it half-closes dst; after an error (a reset, a closed
// connection) it closes both connections, which also ends the other
// direction.
func endDirection(dst, src net.Conn, err error) {
	if err == nil {
		if cw, ok := dst.(closeWriter); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}
