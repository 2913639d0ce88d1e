// Package netproxy is the filtering proxy that enforces a network allowlist
// (CONTRACT §6) for a sandboxed program.
//
// In allowlist mode the program runs in a network namespace with only
// loopback; the supervisor runs a Proxy outside it, serving a listener that
// was created inside the program's namespace, and points HTTP_PROXY,
// HTTPS_PROXY and ALL_PROXY at it. The proxy resolves names itself and dials
// from the host's namespace, so every destination it reaches has passed the
// Matcher.
//
// One listener serves three protocols, told apart by the first byte:
//
//   - HTTP CONNECT host:port: a tunnel, spliced with splice(2) between TCP
//     connections, half-close propagated; refusals get 403 with a one-line
//     plain-text reason.
//   - Plain HTTP with an absolute URI (GET http://host/path): forwarded in
//     origin form with hop-by-hop and Proxy-* headers removed, one upstream
//     connection per request; the client connection is kept alive when
//     HTTP/1.1 framing allows, and each request on it is checked again.
//     Other request targets get 400; https:// URIs must use CONNECT. A
//     client that closes (even half-closes) its connection before the
//     response arrives is taken as gone, as by net/http's server, and the
//     upstream connection is closed. Message framing is parsed here
//     (http1.go) and never passed through: a request body must be chunked
//     or have exactly one valid Content-Length (both, or any other
//     transfer coding, get 400), and the proxy writes its own framing on
//     each side.
//   - SOCKS5 without authentication, CONNECT only (domain, IPv4 and IPv6
//     targets); refusals get reply 0x02, BIND and UDP ASSOCIATE 0x07.
//
// What a name may reach depends on the entry that matched it (matchKind):
// a name matched only by a wildcard reaches public addresses only; an exact
// name reaches private ones (RFC 1918, CGNAT, unique local, the
// special-purpose 192.0.0.0/24 and 240.0.0.0/4) too, unless its answer
// mixes public and private addresses or it resolved to a public one
// earlier in the run (rebinding); no name reaches loopback, the unspecified
// address, link-local (cloud metadata), the cloud metadata addresses
// outside it (metadataAddrs) or 0.0.0.0/8, nor any address the
// kernel says is the host's own, asked on each address right before it is
// dialled, unless the entry is the exact name "localhost" (loopback only).
// IP literals are allowed only by an entry naming that address, and reach
// it whatever it is. The addresses checked are the ones dialed: nothing is
// resolved twice. Matcher.Destinations says all of this per entry
// (--explain).
package netproxy
