package sockmed

import (
	"encoding/binary"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// Ancillary data (control messages) of a mediated send. The supervisor
// forwards only what it decided to: what an unprivileged program sends for
// itself and the kernel checks the same whoever sends it. Anything else is
// refused with EPERM, the kernel's answer to a program without the
// capability such data needs (SO_MARK, a priority above 6, IPv6 extension
// headers), recorded; data at a level the socket's family ignores is
// dropped, as the kernel would ignore it. The call itself is made without
// capabilities (deputy.AsProgram) too, but a capability check is made against the
// socket's network namespace, where the supervisor may have capabilities
// the program lacks (it owns the user namespace of a run's own network
// namespace): the list, not the thread, is what keeps them out.

// cmsgHdr is the size of struct cmsghdr (len, level, type), also the
// alignment of each message (LP64).
const cmsgHdr = 16

// Levels and types not in golang.org/x/sys/unix.
const (
	scmTSOptID    = 78 // SCM_TS_OPT_ID (Linux 6.13)
	tcPrioMaxUser = 6  // TC_PRIO_INTERACTIVE: the highest SO_PRIORITY without CAP_NET_ADMIN
)

// forwardable reports what becomes of one control message on a socket of
// family: forward it, drop it (the kernel ignores it there), or refuse it.
// val is the message's data, for the checks that depend on it.
func forwardable(family int, level, typ int32, val []byte) (forward, drop bool) {
	switch family {
	case unix.AF_UNIX, unix.AF_NETLINK:
		// SCM_RIGHTS and SCM_CREDENTIALS are the caller's to handle
		// (control); unix and netlink sockets ignore other levels.
		return false, level != unix.SOL_SOCKET
	case unix.AF_INET, unix.AF_INET6:
	default:
		return false, false
	}
	switch level {
	case unix.SOL_SOCKET:
		switch typ {
		case unix.SCM_RIGHTS, unix.SCM_CREDENTIALS:
			return false, true // semantically SOL_UNIX: ignored on these sockets
		case unix.SO_TIMESTAMPING_OLD, unix.SCM_TXTIME, scmTSOptID:
			return true, false
		case unix.SO_PRIORITY:
			return len(val) == 4 && binary.NativeEndian.Uint32(val) <= tcPrioMaxUser, false
		}
		return false, false // SO_MARK among them
	case unix.SOL_IP:
		// QUIC and DNS stacks: the source address and interface, ECN,
		// the TTL.
		return typ == unix.IP_PKTINFO || typ == unix.IP_TOS || typ == unix.IP_TTL, false
	case unix.SOL_IPV6:
		return typ == unix.IPV6_PKTINFO || typ == unix.IPV6_TCLASS || typ == unix.IPV6_HOPLIMIT || typ == unix.IPV6_DONTFRAG, false
	case unix.SOL_UDP:
		return typ == unix.UDP_SEGMENT, false // UDP GSO
	}
	return false, true
}

// cmsgName names a control message for a denial.
func cmsgName(level, typ int32) string {
	names := map[[2]int32]string{
		{unix.SOL_SOCKET, unix.SO_MARK}: "SO_MARK", {unix.SOL_SOCKET, unix.SO_PRIORITY}: "SO_PRIORITY",
		{unix.SOL_SOCKET, unix.SCM_CREDENTIALS}: "SCM_CREDENTIALS", {unix.SOL_IP, unix.IP_RETOPTS}: "IP_RETOPTS",
		{unix.SOL_IPV6, unix.IPV6_HOPOPTS}: "IPV6_HOPOPTS", {unix.SOL_IPV6, unix.IPV6_RTHDR}: "IPV6_RTHDR",
		{unix.SOL_IPV6, unix.IPV6_DSTOPTS}: "IPV6_DSTOPTS",
	}
	if n, ok := names[[2]int32{level, typ}]; ok {
		return n
	}
	return "level " + strconv.Itoa(int(level)) + " type " + strconv.Itoa(int(typ))
}

// control returns the ancillary data for the supervisor's send of the
// program's ctl on its socket t: on a unix socket, the descriptors of
// SCM_RIGHTS (the program's numbers) replaced by the supervisor's copies of
// the same files (returned, to be closed after the send), and credentials
// (SCM_CREDENTIALS) only when they are the program's own, claimed then as
// the supervisor's (the kernel checks a claim against its sender); on
// other sockets what forwardable allows.
func (m *Mediator) control(c *seccomp.Call, t *task, ctl []byte) ([]byte, []int, unix.Errno) {
	if len(ctl) == 0 {
		return ctl, nil, 0
	}
	out := make([]byte, 0, len(ctl))
	var dups []int
	for off := 0; off+cmsgHdr <= len(ctl); {
		clen := int(binary.NativeEndian.Uint64(ctl[off:]))
		level, typ := int32(binary.NativeEndian.Uint32(ctl[off+8:])), int32(binary.NativeEndian.Uint32(ctl[off+12:]))
		if clen < cmsgHdr || clen > len(ctl)-off {
			return nil, dups, unix.EINVAL
		}
		msg := append([]byte(nil), ctl[off:off+clen]...)
		next := off + (clen+7)&^7
		off = next
		if level == unix.SOL_SOCKET && (t.domain == unix.AF_UNIX || t.domain == unix.AF_NETLINK) {
			switch typ {
			case unix.SCM_RIGHTS:
				if t.domain != unix.AF_UNIX {
					continue // netlink passes no descriptors
				}
				for i := cmsgHdr; i+4 <= clen; i += 4 {
					fd := int(int32(binary.NativeEndian.Uint32(msg[i:])))
					dup, err := unix.PidfdGetfd(t.pidfd, fd, 0)
					if err != nil {
						return nil, dups, unix.EBADF
					}
					dups = append(dups, dup)
					binary.NativeEndian.PutUint32(msg[i:], uint32(dup))
				}
			case unix.SCM_CREDENTIALS:
				if errno := m.ownCredentials(c, t, msg); errno != 0 {
					return nil, dups, errno
				}
			default:
				return nil, dups, unix.EINVAL // what these sockets say of any other
			}
		} else if forward, drop := forwardable(t.domain, level, typ, msg[cmsgHdr:]); drop {
			continue
		} else if !forward {
			return nil, dups, m.deny(c, "control message "+cmsgName(level, typ), "", unix.EPERM,
				"ancillary data the supervisor does not forward (it may need a capability the program lacks)")
		}
		out = append(out, msg...)
		for len(out)%8 != 0 {
			out = append(out, 0)
		}
	}
	return out, dups, 0
}

// ownCredentials checks the credentials msg (SCM_CREDENTIALS) claims for
// the program's calling thread t and rewrites them in place as the
// supervisor's: a claim of its own pid (as it sees it, in its PID
// namespace) and of one of its own user and group ids, which the kernel
// grants any sender. Anything else is EPERM, the kernel's answer to a
// program that claims another's without CAP_SYS_ADMIN or CAP_SETUID. The
// receiver sees the supervisor's pid, as SO_PEERCRED shows it; the user and
// group ids are the program's, which are the supervisor's (the helper maps
// its user to itself).
func (m *Mediator) ownCredentials(c *seccomp.Call, t *task, msg []byte) unix.Errno {
	if len(msg) != cmsgHdr+12 { // CMSG_LEN(sizeof(struct ucred))
		return unix.EINVAL
	}
	pid := int32(binary.NativeEndian.Uint32(msg[cmsgHdr:]))
	uid, gid := binary.NativeEndian.Uint32(msg[cmsgHdr+4:]), binary.NativeEndian.Uint32(msg[cmsgHdr+8:])
	own, err := readCreds(t.pid)
	if err != nil || !c.Valid() {
		return unix.ESRCH
	}
	if pid != own.nsTgid || !own.hasUID(uid) || !own.hasGID(gid) {
		return m.deny(c, "control message SCM_CREDENTIALS", "", unix.EPERM, "credentials that are not the program's own")
	}
	binary.NativeEndian.PutUint32(msg[cmsgHdr:], uint32(os.Getpid()))
	return 0
}
