package auditlog

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds Parse any text under each type it reads: it must never
// panic, and what it accepts must be of the kernel's form: no decoded
// field may bring a token of its own (the untrusted ones may hold any
// byte, but only as the kernel encoded them), and an access must name a
// domain and its blockers.
func FuzzParse(f *testing.F) {
	for _, s := range []string{recAccess, recDomain, recSyscall, recEOE, recFree,
		`audit(1.000:1): domain=1bd26591c blockers=fs.ioctl_dev path="/dev/tty" dev="devtmpfs" ino=9 ioctlcmd=0x5401`,
		`audit(1.000:1): domain=1bd26591c blockers=scope.signal opid=1 ocomm="systemd"`,
		`audit(1.000:1): domain=1bd26591c blockers=fs.refer,fs.make_reg path=2F746D702F6120622022 dev="vda" ino=365`,
		`audit(1.000:1): domain=1bd26591c blockers=fs.change_topology name="x" dev="tmpfs" ino=2`,
	} {
		for _, typ := range []uint16{TypeLandlockAccess, TypeLandlockDomain, TypeSyscall, TypeEOE} {
			f.Add(typ, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, typ uint16, data []byte) {
		rec, err := Parse(typ, data)
		if err != nil {
			return
		}
		switch x := rec.(type) {
		case Access:
			if x.Domain == 0 || len(x.Blockers) == 0 {
				t.Fatalf("an access without domain or blockers: %q", data)
			}
			for _, b := range x.Blockers {
				if !validBlocker(b) {
					t.Fatalf("blocker %q", b)
				}
			}
			if strings.ContainsAny(x.Dev+x.IoctlCmd, " \"") && !strings.Contains(string(data), "dev=") {
				t.Fatalf("a field from nowhere: %q", data)
			}
		case Domain:
			if x.ID == 0 {
				t.Fatalf("domain 0: %q", data)
			}
		case Syscall, EOE:
		default:
			t.Fatalf("a record of type %T", rec)
		}
	})
}

// FuzzAssembler feeds the run's assembler a datagram of any messages: it
// must never panic, and attribute nothing without its creator's record.
func FuzzAssembler(f *testing.F) {
	var seed []byte
	for _, m := range []struct {
		typ  uint16
		text string
	}{{TypeLandlockAccess, recAccess}, {TypeLandlockDomain, recDomain}, {TypeSyscall, recSyscall}, {TypeEOE, recEOE}, {TypeLandlockDomain, recFree}} {
		seed = append(seed, nlmsg(m.typ, m.text)...)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, datagram []byte) {
		msgs, _ := splitMessages(datagram)
		a := assembler{creator: 13105, comm: "se-0a1b2c3d4e5f", pending: map[Stamp]*event{}}
		for _, m := range msgs {
			a.message(m, time.Now())
		}
		a.flushOlder(time.Now().Add(time.Hour))
		if a.sum.Denials > 0 && !strings.Contains(string(datagram), `comm="se-0a1b2c3d4e5f"`) && !strings.Contains(string(datagram), "73652D306131623263336434653566") {
			t.Fatalf("denials attributed without the creator's record")
		}
		if len(a.pending) != 0 || len(a.order) != 0 {
			t.Fatalf("events left after a flush")
		}
	})
}

// nlmsg is one netlink message of the audit socket.
func nlmsg(typ uint16, text string) []byte {
	n := 16 + len(text)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint32(b[0:4], uint32(n))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	copy(b[16:], text)
	return b
}
