package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) constants.
const (
	socks5Version = 5

	socksAuthNone         = 0x00
	socksAuthNoAcceptable = 0xff

	socksCmdConnect      = 1
	socksCmdBind         = 2
	socksCmdUDPAssociate = 3

	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02
	socksNetUnreachable   = 0x03
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksTTLExpired       = 0x06
	socksCmdNotSupported  = 0x07
	socksAtypNotSupported = 0x08
)

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	cmd  byte
	host string // a name for ATYP domain, the textual address otherwise
	port uint16
}

// readSOCKS5Greeting reads the method negotiation and reports whether the
// client offered "no authentication".
func readSOCKS5Greeting(r io.Reader) (bool, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return false, err
	}
	if hdr[0] != socks5Version {
		return false, fmt.Errorf("SOCKS version %d", hdr[0])
	}
	if hdr[1] == 0 {
		return false, errors.New("SOCKS5 greeting offers no methods")
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksAuthNone {
			return true, nil
		}
	}
	return false, nil
}

// errSOCKSAtyp marks an unsupported address type.
var errSOCKSAtyp = errors.New("unsupported SOCKS5 address type")

// readSOCKS5Request reads a request: VER CMD RSV ATYP DST.ADDR DST.PORT.
func readSOCKS5Request(r io.Reader) (socksRequest, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return socksRequest{}, err
	}
	if hdr[0] != socks5Version {
		return socksRequest{}, fmt.Errorf("SOCKS version %d in request", hdr[0])
	}
	req := socksRequest{cmd: hdr[1]}
	switch hdr[3] {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		req.host = netip.AddrFrom4(b).String()
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		req.host = netip.AddrFrom16(b).String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return req, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return req, err
		}
		req.host = string(b)
	default:
		return req, fmt.Errorf("%w %d", errSOCKSAtyp, hdr[3])
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return req, err
	}
	req.port = binary.BigEndian.Uint16(p[:])
	return req, nil
}

// socksReply returns a reply with the given code. The bound address is
// always 0.0.0.0:0: the host-side address means nothing inside the sandbox.
func socksReply(code byte) []byte {
	return []byte{socks5Version, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// serveSOCKS5 serves a SOCKS5 connection: no authentication, CONNECT only.
// Domain names are matched by name, IPv4/IPv6 targets by the IP literal
// rule. Refusals get reply 0x02 (connection not allowed by ruleset), BIND
// and UDP ASSOCIATE 0x07 (command not supported).
func (cn *conn) serveSOCKS5() {
	t0 := time.Now()
	ok, err := readSOCKS5Greeting(cn.br)
	if err != nil {
		cn.socksFail(err)
		return
	}
	cn.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if !ok {
		cn.badRequest("SOCKS5", "the client offered no acceptable authentication method (only \"no authentication\" is supported)")
		cn.c.Write([]byte{socks5Version, socksAuthNoAcceptable})
		cn.lingerClose()
		return
	}
	if _, err := cn.c.Write([]byte{socks5Version, socksAuthNone}); err != nil {
		return
	}
	req, err := readSOCKS5Request(cn.br)
	if err != nil {
		cn.socksFail(err)
		if errors.Is(err, errSOCKSAtyp) {
			cn.c.Write(socksReply(socksAtypNotSupported))
			cn.lingerClose()
		}
		return
	}
	cn.endRequestPhase()
	cn.c.SetWriteDeadline(time.Time{})
	ev := Event{Time: t0, Client: cn.client, Method: "SOCKS5", Host: quoteHost(req.host), Port: req.port}
	if req.cmd != socksCmdConnect {
		name := map[byte]string{socksCmdBind: "BIND", socksCmdUDPAssociate: "UDP ASSOCIATE"}[req.cmd]
		if name == "" {
			name = fmt.Sprintf("command %d", req.cmd)
		}
		ev.Reason = "SOCKS5 " + name + " is not supported (only CONNECT)"
		cn.p.count.refused.Add(1)
		cn.p.emit(ev)
		cn.c.Write(socksReply(socksCmdNotSupported))
		cn.lingerClose()
		return
	}
	v, up, remote := cn.connectUpstream(req.host, req.port)
	ev.Host, ev.Reason, ev.Allowed = v.d.hostOr(req.host), v.d.reason, !v.refused
	if v.refused {
		cn.p.emit(ev)
		cn.c.Write(socksReply(socksNotAllowed))
		cn.lingerClose()
		return
	}
	if v.err != nil {
		ev.Reason += "; " + v.err.Error()
		ev.Duration = time.Since(t0)
		cn.p.emit(ev)
		cn.c.Write(socksReply(socksErrorCode(v.err)))
		cn.lingerClose()
		return
	}
	defer up.Close()
	ev.Remote = remote
	rest := cn.takeBuffered()
	if _, err := cn.c.Write(socksReply(socksSucceeded)); err != nil {
		ev.Reason += "; client went away"
	} else {
		ev.BytesUp, ev.BytesDown = splice(cn.c, rest, up)
	}
	ev.Duration = time.Since(t0)
	cn.p.emit(ev)
}

// socksFail reports a handshake that failed, unless the client just went
// away or timed out.
func (cn *conn) socksFail(err error) {
	if isTimeout(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		if cn.lr.N > 0 {
			return
		}
		err = errors.New("handshake too large")
	}
	cn.badRequest("SOCKS5", err.Error())
}

// socksErrorCode maps a resolution or dial error to a SOCKS5 reply code.
func socksErrorCode(err error) byte {
	var re *resolveError
	switch {
	case errors.As(err, &re):
		return socksHostUnreachable
	case isTimeout(err):
		return socksTTLExpired
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
