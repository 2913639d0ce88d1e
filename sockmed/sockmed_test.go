package sockmed

import (
	"encoding/binary"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReachable(t *testing.T) {
	m := New(Config{Roots: []string{"/ws", "/tmp/private"}, Denied: []string{"/ws/.git"}})
	for path, want := range map[string]bool{
		"/ws/s.sock": true, "/ws/src/a/b.sock": true, "/tmp/private/x": true,
		"/ws/.git/hooks.sock": false, "/ws/.git": false, "/wsx/s.sock": false, "/run/docker.sock": false, "/tmp/s": false,
	} {
		if got := m.reachable(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

// cmsg builds one control message.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, cmsgHdr, cmsgHdr+len(data)+8)
	binary.NativeEndian.PutUint64(b, uint64(cmsgHdr+len(data)))
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	b = append(b, data...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// TestControlForwardsOnlyWhatItShould: on an internet socket the ancillary
// data QUIC and DNS stacks send goes as it is, SO_MARK and other data that
// needs a capability is refused with EPERM, and what the kernel ignores
// there is dropped; on a unix socket only SCM_RIGHTS and the program's own
// credentials go, other SOL_SOCKET data gets the kernel's EINVAL.
func TestControlForwardsOnlyWhatItShould(t *testing.T) {
	m := New(Config{})
	inet := &task{domain: unix.AF_INET6, typ: unix.SOCK_DGRAM, pidfd: -1, sock: -1}
	quic := append(append(append(cmsg(unix.SOL_IPV6, unix.IPV6_TCLASS, u32(2)), cmsg(unix.SOL_UDP, unix.UDP_SEGMENT, []byte{0xb0, 0x04})...),
		cmsg(unix.SOL_IP, unix.IP_PKTINFO, make([]byte, 12))...), cmsg(unix.SOL_SOCKET, unix.SO_PRIORITY, u32(6))...)
	out, _, errno := m.control(nil, inet, quic)
	if errno != 0 || string(out) != string(quic) {
		t.Errorf("QUIC's ancillary data: %v, %x, want it as it is", errno, out)
	}
	for name, ctl := range map[string][]byte{
		"SO_MARK":            cmsg(unix.SOL_SOCKET, unix.SO_MARK, u32(42)),
		"SO_PRIORITY 7":      cmsg(unix.SOL_SOCKET, unix.SO_PRIORITY, u32(7)),
		"IPV6_HOPOPTS":       cmsg(unix.SOL_IPV6, unix.IPV6_HOPOPTS, make([]byte, 8)),
		"IP_RETOPTS":         cmsg(unix.SOL_IP, unix.IP_RETOPTS, make([]byte, 4)),
		"after a good one":   append(cmsg(unix.SOL_IP, unix.IP_TOS, u32(1)), cmsg(unix.SOL_SOCKET, unix.SO_MARK, u32(1))...),
		"an unknown SOL_UDP": cmsg(unix.SOL_UDP, 1, u32(1)),
	} {
		if _, _, errno := m.control(nil, inet, ctl); errno != unix.EPERM {
			t.Errorf("%s: %v, want EPERM", name, errno)
		}
	}
	ignored := append(cmsg(unix.SOL_TCP, 1, u32(1)), cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, u32(0))...)
	if out, _, errno := m.control(nil, inet, ignored); errno != 0 || len(out) != 0 {
		t.Errorf("data the socket ignores: %v, %x, want dropped", errno, out)
	}
	if _, _, errno := m.control(nil, inet, cmsg(unix.SOL_IP, unix.IP_TOS, u32(1))[:cmsgHdr+2]); errno != unix.EINVAL {
		t.Errorf("a message longer than the buffer: %v, want EINVAL", errno)
	}
	local := &task{domain: unix.AF_UNIX, typ: unix.SOCK_STREAM, pidfd: -1, sock: -1}
	if _, _, errno := m.control(nil, local, cmsg(unix.SOL_SOCKET, unix.SO_MARK, u32(1))); errno != unix.EINVAL {
		t.Errorf("SO_MARK on a unix socket: %v, want EINVAL", errno)
	}
	if out, _, errno := m.control(nil, local, cmsg(unix.SOL_IP, unix.IP_TOS, u32(1))); errno != 0 || len(out) != 0 {
		t.Errorf("SOL_IP on a unix socket: %v, %x, want dropped", errno, out)
	}
}

// TestDiagAbstract: sock_diag finds a listening abstract socket by its
// exact name and type, and for a stream type only the listener, not a
// datagram socket of the same name, nor a name one byte longer.
func TestDiagAbstract(t *testing.T) {
	name := "se-sockmed-test-" + strconv.Itoa(os.Getpid()) + "\nx"
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		t.Fatal(err)
	}
	b, err := diagAbstract([]byte(name), unix.SOCK_STREAM)
	if err != nil {
		t.Fatal(err)
	}
	if !b.found || b.ino != 0 {
		t.Errorf("bound, not listening: %+v, want found with no inode", b)
	}
	if err := unix.Listen(l, 1); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(l, &st); err != nil {
		t.Fatal(err)
	}
	if b, err = diagAbstract([]byte(name), unix.SOCK_STREAM); err != nil || b.ino != uint32(st.Ino) {
		t.Errorf("listening: %+v %v, want inode %d", b, err, st.Ino)
	}
	if !isBoundSocket(l, b.ino, unix.SOCK_STREAM, []byte(name)) || isBoundSocket(l, b.ino, unix.SOCK_STREAM, []byte(name+"y")) ||
		isBoundSocket(l, b.ino, unix.SOCK_DGRAM, []byte(name)) {
		t.Errorf("isBoundSocket does not tell the listener")
	}
	for typ, n := range map[int]string{unix.SOCK_DGRAM: name, unix.SOCK_SEQPACKET: name} {
		if b, err := diagAbstract([]byte(n), typ); err != nil || b.found {
			t.Errorf("type %d: %+v %v, want nothing", typ, b, err)
		}
	}
	if b, err := diagAbstract([]byte(name+"y"), unix.SOCK_STREAM); err != nil || b.found {
		t.Errorf("a longer name: %+v %v, want nothing", b, err)
	}
}
