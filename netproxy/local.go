package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// hostAddress asks the kernel whether the proxy, dialling a, would connect
// to this host itself: whether the route to a (RTM_GETROUTE, what
// `ip route get` asks) is of type local (an address of any of the host's
// interfaces, all of 127.0.0.0/8, whatever a "local" route claims) or
// broadcast. It is asked when the proxy dials, so an address added after the
// start counts as well, and it is the kernel's answer in the proxy's own
// network namespace, not a list kept here. An address the kernel has no
// route to is not the host's (the dial then fails on its own).
func hostAddress(a netip.Addr) (kind string, own bool, err error) {
	a = a.Unmap()
	family, bits := unix.AF_INET, 32
	if a.Is6() {
		family, bits = unix.AF_INET6, 128
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return "", false, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	seq := routeSeq.Add(1)
	dst := a.AsSlice()
	attrLen := unix.SizeofRtAttr + len(dst)
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofRtMsg+attrLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], unix.RTM_GETROUTE)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(msg[8:], seq)
	rt := msg[unix.SizeofNlMsghdr:]
	rt[0], rt[1] = byte(family), byte(bits) // rtm_family, rtm_dst_len
	attr := rt[unix.SizeofRtMsg:]
	ne.PutUint16(attr[0:], uint16(attrLen))
	ne.PutUint16(attr[2:], unix.RTA_DST)
	copy(attr[unix.SizeofRtAttr:], dst)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return "", false, fmt.Errorf("netlink route request: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return "", false, fmt.Errorf("netlink route reply: %w", err)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // only the kernel answers
		}
		for b := buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(ne.Uint32(b[0:]))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return "", false, errors.New("netlink route reply: truncated")
			}
			typ, body := ne.Uint16(b[4:]), b[unix.SizeofNlMsghdr:l]
			if ne.Uint32(b[8:]) == seq {
				switch {
				case typ == unix.NLMSG_ERROR && len(body) >= 4:
					if code := int32(ne.Uint32(body)); code != 0 {
						return "", false, nil // no route: not the host's
					}
				case typ == unix.RTM_NEWROUTE && len(body) >= unix.SizeofRtMsg:
					switch body[7] { // rtm_type
					case unix.RTN_LOCAL:
						return "an address of this host", true, nil
					case unix.RTN_BROADCAST:
						return "a broadcast address of this host's network", true, nil
					}
					return "", false, nil
				}
			}
			if next := (l + 3) &^ 3; next < len(b) {
				b = b[next:]
			} else {
				break
			}
		}
	}
}

// routeSeq numbers the route requests.
var routeSeq atomic.Uint32
