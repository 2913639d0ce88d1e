package supervisor

import (
	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
	"sandbox-executable/sockmed"
)

// How daemons' unix sockets are kept out of reach (socketChoice.how).
const (
	// socketsByLandlock: Landlock (ABI 9) handles resolve_unix, granted
	// only beneath the writable roots; the kernel checks every connect and
	// send in the program itself.
	socketsByLandlock = "landlock"
	// socketsMediated: the filter sends the socket calls to the
	// supervisor, which carries them out (package sockmed).
	socketsMediated = "mediated"
	// socketsDenied: no socket(AF_UNIX) at all.
	socketsDenied = "denied"
)

// socketChoice is how a run keeps daemons' unix sockets out of reach.
type socketChoice struct {
	how      string
	abstract sockmed.AbstractMode
	// landlock: resolve_unix is handled too (ABI 9), under mediation a
	// second layer should a call reach the kernel from the program itself.
	landlock bool
}

// chooseSockets decides it: mediation where the program has an init (the
// seccomp listener then reaches the supervisor without the program's own
// sendmsg) and the kernel has what mediation needs, with Landlock's
// resolve_unix (ABI 9) underneath where the kernel has it; else Landlock
// alone (ABI 9); else no unix sockets but socketpair's. Mediation comes
// first: Landlock grants a socket by where its name is, so a hard link to a
// daemon's socket made inside a writable root would be reached, and its
// refusals are not recorded. Abstract sockets, where the host's network
// namespace is shared: held by the supervisor for the call (the kernel's
// Landlock scoping cannot decide for it: see sockmed.AbstractHeld).
func chooseSockets(abi int, isolated, netns, mediation bool) socketChoice {
	resolve := landlock.Supports(abi, landlock.FeatUnixSocket)
	switch {
	case isolated && mediation:
		c := socketChoice{how: socketsMediated, abstract: sockmed.AbstractHeld, landlock: resolve}
		if netns {
			c.abstract = sockmed.AbstractDirect
		}
		return c
	case resolve:
		return socketChoice{how: socketsByLandlock, landlock: true}
	}
	return socketChoice{how: socketsDenied}
}

// mediatorConfig is the mediation policy of a run: sockets may be reached
// beneath the writable roots and the private temp dir, except beneath the
// denied paths; TCP connect keeps Landlock's port rule. Members and
// OnDenial are the server's to fill in (Serve).
func (pr *Prepared) mediatorConfig() sockmed.Config {
	p, tmp := pr.Plan, pr.tmpDir
	c := sockmed.Config{Abstract: pr.sockets.abstract}
	for _, r := range p.Filesystem.WritableRoots {
		c.Roots = append(c.Roots, r.Path)
	}
	if tmp != "" {
		c.Roots = append(c.Roots, tmp)
	}
	for _, d := range p.Filesystem.WriteDenied {
		c.Denied = append(c.Denied, d.Path)
	}
	for _, d := range p.Filesystem.ReadDenied {
		c.Denied = append(c.Denied, d.Path)
	}
	if pr.Landlock.HandledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP != 0 {
		c.TCPRestricted, c.TCPPorts = true, pr.Landlock.Ports
	}
	c.UDPDenied = pr.Landlock.HandledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP != 0
	return c
}
