package sockmed

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// Sizes and limits of the calls, as the kernel has them (the same on
// x86_64 and arm64: both LP64, with the same struct layouts).
const (
	sizeofMsghdr  = 56
	sizeofMmsghdr = 64
	uioMaxIOV     = 1024
	maxRW         = 0x7ffff000 // MAX_RW_COUNT
	// maxDatagram bounds what is read for one datagram, with the socket's
	// send buffer (a unix datagram is at most that, 208 KiB by default; a
	// UDP one 64 KiB): larger ones are refused with EMSGSIZE as the kernel
	// would. The supervisor's memory is not the sandbox's cgroup's: what
	// one call makes it hold stays small, and the calls in flight are at
	// most the program's threads.
	maxDatagram = 4 << 20
	// streamChunk is how much of a stream send is read and sent at once.
	streamChunk = 256 << 10
	// maxControl bounds ancillary data (the kernel's optmem_max).
	maxControl = 1 << 20
)

// connect carries out connect(fd, addr, len).
func (m *Mediator) connect(c *seccomp.Call, t *task) (int64, unix.Errno) {
	n := int(int32(c.Args[2]))
	if n < 0 || n > maxAddr {
		return 0, unix.EINVAL
	}
	addr, errno := t.read(c.Args[1], n)
	if errno != 0 {
		return 0, errno
	}
	if !c.Valid() {
		return 0, unix.ESRCH
	}
	d, errno := m.destination(c, t, addr, true)
	if errno != 0 {
		return 0, errno
	}
	defer d.close()
	// Waited for in the background even on a non-blocking socket: the
	// program can clear O_NONBLOCK (on the open file the supervisor's copy
	// shares) once it was looked at, and connect has no flag of its own
	// that keeps it from waiting.
	return m.run(c, d, true, func() (int64, unix.Errno) { return rawConnect(t.sock, d.addr) })
}

// sendto carries out sendto(fd, buf, len, flags, addr, addrlen); the filter
// sends only the calls with an address.
func (m *Mediator) sendto(c *seccomp.Call, t *task) (int64, unix.Errno) {
	alen := int(int32(c.Args[5]))
	if alen < 0 || alen > maxAddr {
		return 0, unix.EINVAL
	}
	addr, errno := t.read(c.Args[4], alen)
	if errno != 0 {
		return 0, errno
	}
	n := min(c.Args[2], maxRW)
	p := &payload{iovs: []unix.RemoteIovec{{Base: uintptr(c.Args[1]), Len: int(n)}}, total: int(n)}
	return m.send(c, t, addr, p, nil, int(int32(c.Args[3])))
}

// sendmsg carries out sendmsg(fd, msg, flags).
func (m *Mediator) sendmsg(c *seccomp.Call, t *task) (int64, unix.Errno) {
	return m.sendOne(c, t, c.Args[1], int(int32(c.Args[2])))
}

// sendmmsg carries out sendmmsg(fd, vec, vlen, flags): each message as
// sendmsg, its length written back into the program's vector.
func (m *Mediator) sendmmsg(c *seccomp.Call, t *task) (int64, unix.Errno) {
	vec, vlen, flags := c.Args[1], min(uint32(c.Args[2]), uioMaxIOV), int(int32(c.Args[3]))
	var sent int64
	for i := uint32(0); i < vlen; i++ {
		hdr := vec + uint64(i)*sizeofMmsghdr
		n, errno := m.sendOne(c, t, hdr, flags)
		if errno != 0 {
			if sent > 0 {
				break // the kernel too returns what it sent
			}
			return 0, errno
		}
		if !c.Valid() {
			return 0, unix.ESRCH
		}
		var l [4]byte
		binary.NativeEndian.PutUint32(l[:], uint32(n))
		if errno := t.write(hdr+sizeofMsghdr, l[:]); errno != 0 {
			return 0, errno
		}
		sent++
	}
	return sent, 0
}

// sendOne carries out one sendmsg of the msghdr at hdr.
func (m *Mediator) sendOne(c *seccomp.Call, t *task, hdr uint64, flags int) (int64, unix.Errno) {
	h, errno := t.read(hdr, sizeofMsghdr)
	if errno != 0 {
		return 0, errno
	}
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(h[off:]) }
	namePtr, nameLen := u64(0), int(int32(binary.NativeEndian.Uint32(h[8:])))
	iovPtr, iovLen := u64(16), u64(24)
	ctlPtr, ctlLen := u64(32), u64(40)
	var addr []byte
	if namePtr != 0 && nameLen != 0 {
		if nameLen < 0 {
			return 0, unix.EINVAL
		}
		if addr, errno = t.read(namePtr, min(nameLen, maxAddr)); errno != 0 {
			return 0, errno
		}
	}
	if iovLen > uioMaxIOV {
		return 0, unix.EMSGSIZE
	}
	p := &payload{}
	if iovLen > 0 {
		raw, errno := t.read(iovPtr, int(iovLen)*16)
		if errno != 0 {
			return 0, errno
		}
		for i := 0; i < int(iovLen); i++ {
			base, l := binary.NativeEndian.Uint64(raw[16*i:]), binary.NativeEndian.Uint64(raw[16*i+8:])
			if l > maxRW || uint64(p.total)+l > maxRW {
				return 0, unix.EINVAL
			}
			if l > 0 {
				p.iovs = append(p.iovs, unix.RemoteIovec{Base: uintptr(base), Len: int(l)})
				p.total += int(l)
			}
		}
	}
	var ctl []byte
	if ctlLen > 0 {
		if ctlLen > maxControl {
			return 0, unix.ENOBUFS
		}
		if ctl, errno = t.read(ctlPtr, int(ctlLen)); errno != 0 {
			return 0, errno
		}
	}
	return m.send(c, t, addr, p, ctl, flags)
}

// payload is the data of a send, in the program's memory.
type payload struct {
	iovs  []unix.RemoteIovec
	total int
}

// read copies bytes [off, off+n) of the payload out of the program.
func (p *payload) read(t *task, off, n int) ([]byte, unix.Errno) {
	if n == 0 {
		return nil, 0
	}
	var remote []unix.RemoteIovec
	for _, v := range p.iovs {
		if off >= v.Len {
			off -= v.Len
			continue
		}
		take := min(v.Len-off, n)
		remote = append(remote, unix.RemoteIovec{Base: v.Base + uintptr(off), Len: take})
		off = 0
		if n -= take; n == 0 {
			break
		}
	}
	size := 0
	for _, r := range remote {
		size += r.Len
	}
	buf := make([]byte, size)
	got, err := unix.ProcessVMReadv(t.pid, []unix.Iovec{{Base: &buf[0], Len: uint64(size)}}, remote, 0)
	if err != nil || got != size {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// send sends the payload with ancillary data ctl to addr (none: the
// socket's peer) on the program's socket, from the supervisor: one call
// for a datagram, chunk by chunk for a stream (stopping where the kernel
// sends less, as it would return then).
func (m *Mediator) send(c *seccomp.Call, t *task, addr []byte, p *payload, ctl []byte, flags int) (int64, unix.Errno) {
	if t.typ != unix.SOCK_STREAM {
		limit := maxDatagram
		// Unix and netlink datagrams are refused beyond the send buffer
		// by the kernel too (UDP ones beyond 64 KiB).
		if t.domain == unix.AF_UNIX || t.domain == unix.AF_NETLINK {
			if b, err := unix.GetsockoptInt(t.sock, unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil && b > 0 {
				limit = min(limit, b)
			}
		}
		if p.total > limit {
			return 0, unix.EMSGSIZE
		}
	}
	ctl, dups, errno := m.control(c, t, ctl)
	defer func() {
		for _, fd := range dups {
			unix.Close(fd)
		}
	}()
	if errno != 0 {
		return 0, errno
	}
	first := p.total
	if t.typ == unix.SOCK_STREAM {
		first = min(p.total, streamChunk)
	}
	data, errno := p.read(t, 0, first)
	if errno != 0 {
		return 0, errno
	}
	if !c.Valid() {
		return 0, unix.ESRCH
	}
	d, errno := m.destination(c, t, addr, flags&unix.MSG_FASTOPEN != 0)
	if errno != 0 {
		return 0, errno
	}
	defer d.close()
	noSignal := flags&unix.MSG_NOSIGNAL != 0
	flags |= unix.MSG_NOSIGNAL
	to := d
	var sent int64
	wait := !t.nonblock && flags&unix.MSG_DONTWAIT == 0
	if !wait {
		// Kept from waiting by the call's own flag: the program can clear
		// O_NONBLOCK on the open file once it was looked at.
		flags |= unix.MSG_DONTWAIT
	}
	for {
		n, errno := m.run(c, to, wait, func() (int64, unix.Errno) {
			var addr []byte
			if to != nil {
				addr = to.addr
			}
			return rawSendmsg(t.sock, addr, data, ctl, flags)
		})
		if errno != 0 {
			if sent > 0 {
				return sent, 0
			}
			if errno == unix.EPIPE && !noSignal {
				t.sigpipe()
			}
			return 0, errno
		}
		sent += n
		if int(n) < len(data) || int(sent) >= p.total {
			return sent, 0
		}
		// The rest of a stream: connected now, the ancillary data sent.
		ctl, to = nil, nil
		flags &^= unix.MSG_FASTOPEN
		if data, errno = p.read(t, int(sent), min(p.total-int(sent), streamChunk)); errno != 0 || !c.Valid() {
			return sent, 0
		}
	}
}

// rawSendmsg is sendmsg(2) with the address, data and ancillary data as
// bytes.
func rawSendmsg(fd int, addr, data, ctl []byte, flags int) (int64, unix.Errno) {
	var h unix.Msghdr
	var iov unix.Iovec
	if len(addr) > 0 {
		h.Name = &addr[0]
		h.Namelen = uint32(len(addr))
	}
	if len(data) > 0 {
		iov.Base = &data[0]
		iov.SetLen(len(data))
		h.Iov = &iov
		h.SetIovlen(1)
	}
	if len(ctl) > 0 {
		h.Control = &ctl[0]
		h.SetControllen(len(ctl))
	}
	n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&h)), uintptr(flags))
	return int64(n), e
}
