package auditlog

import (
	"strings"
	"testing"
	"time"
)

// Records as this kernel (6.18) sent them for a write outside the roots
// and a read of a denied file.
const (
	recAccess  = `audit(1796544110.859:31): domain=1bd26591c blockers=fs.make_reg path="/etc" dev="vda" ino=19`
	recDomain  = `audit(1796544110.859:31): domain=1bd26591c status=allocated mode=enforcing pid=13105 uid=0 exe="/work/old/bin/sandbox-executable" comm="se-0a1b2c3d4e5f"`
	recSyscall = `audit(1796544110.859:31): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=55bf642d9b10 a2=241 a3=1b6 items=0 ppid=13104 pid=13105 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="sh" exe="/usr/bin/dash" subj=sandbox-executable (unconfined) key=(null)`
	recEOE     = `audit(1796544110.859:31): `
	recFree    = `audit(1796544110.939:32): domain=1bd26591c status=deallocated denials=1`
)

func TestParseKernelRecords(t *testing.T) {
	a, err := Parse(TypeLandlockAccess, []byte(recAccess))
	if err != nil {
		t.Fatal(err)
	}
	want := Access{Stamp: Stamp{1796544110, 859, 31}, Domain: 0x1bd26591c, Blockers: []string{"fs.make_reg"}, Path: "/etc", Dev: "vda", Ino: 19, HasIno: true}
	if got := a.(Access); got.Domain != want.Domain || got.Path != want.Path || got.Stamp != want.Stamp || got.Ino != 19 || strings.Join(got.Blockers, ",") != "fs.make_reg" {
		t.Errorf("access: %+v", got)
	}
	d, err := Parse(TypeLandlockDomain, []byte(recDomain))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.(Domain); !got.Allocated || got.Pid != 13105 || got.Comm != "se-0a1b2c3d4e5f" || got.Exe != "/work/old/bin/sandbox-executable" {
		t.Errorf("domain: %+v", got)
	}
	s, err := Parse(TypeSyscall, []byte(recSyscall))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.(Syscall); got.Pid != 13105 || got.Exe != "/usr/bin/dash" || got.Exit != -13 || got.Success || got.Number != 257 {
		t.Errorf("syscall: %+v", got)
	}
	if _, err := Parse(TypeEOE, []byte(recEOE)); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(TypeLandlockDomain, []byte(recFree))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.(Domain); got.Allocated || got.Denials != 1 {
		t.Errorf("deallocated: %+v", got)
	}
}

// A path with a space, a quote or a byte outside ASCII comes hex-encoded:
// it decodes to the path, and cannot add a field.
func TestParseHexPath(t *testing.T) {
	path := `/tmp/a b" domain=1 path="/etc`
	enc := strings.ToUpper(hexOf(path))
	a, err := Parse(TypeLandlockAccess, []byte(`audit(1.000:1): domain=1bd26591c blockers=fs.write_file path=`+enc+` dev="vda" ino=7`))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.(Access); got.Path != path || got.Domain != 0x1bd26591c {
		t.Errorf("got %+v", got)
	}
}

func hexOf(s string) string {
	const digits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}

// Forged and malformed records: what a program could only get written if
// the kernel did not encode what it names, and damaged text.
func TestParseRejects(t *testing.T) {
	for _, c := range []struct {
		typ  uint16
		text string
	}{
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/x" domain=2 dev="vda" ino=7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/x y" dev="vda" ino=7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/"x" dev="vda" ino=7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path=2f746d70 dev="vda" ino=7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path=2F746D7 dev="vda" ino=7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/x"  dev="vda"`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/x" dev="vda" ino=-7`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file path="/tmp/x` + "\n" + `" dev="vda"`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1BD26591C blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, `audit(1.000:1): domain=0 blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, `audit(1.000:1): blockers=fs.write_file domain=1bd26591c path="/x"`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.Write path="/x"`},
		{TypeLandlockAccess, `audit(1.000:1): domain=1bd26591c blockers=fs.write_file mode=enforcing`},
		{TypeLandlockAccess, `audit(1.00:1): domain=1bd26591c blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, `audit(1.000:01): domain=1bd26591c blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, `audit(1.000:1) domain=1bd26591c blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, `domain=1bd26591c blockers=fs.write_file path="/x"`},
		{TypeLandlockAccess, ``},
		{TypeLandlockDomain, `audit(1.000:1): domain=1bd26591c status=allocated mode=enforcing pid=1 uid=0 exe="/x" comm="a" pid=2`},
		{TypeLandlockDomain, `audit(1.000:1): domain=1bd26591c status=allocated mode=enforcing pid=1 uid=0 comm="a" exe="/x"`},
		{TypeLandlockDomain, `audit(1.000:1): domain=1bd26591c status=allocated mode=enforcing pid=+1 uid=0 exe="/x" comm="a"`},
		{TypeLandlockDomain, `audit(1.000:1): domain=1bd26591c status=freed denials=1`},
		{TypeLandlockDomain, `audit(1.000:1): domain=1bd26591c status=deallocated denials=1 pid=3`},
		{TypeSyscall, `audit(1.000:1): syscall=257 success=no exit=-13 pid=5 comm="sh"`},
		{TypeSyscall, `audit(1.000:1): syscall=257 success=maybe exit=-13 pid=5 comm="sh" exe="/bin/sh"`},
		{TypeEOE, `audit(1.000:1): pid=3`},
	} {
		if _, err := Parse(c.typ, []byte(c.text)); err == nil {
			t.Errorf("accepted %d %q", c.typ, c.text)
		}
	}
	if _, err := Parse(1100, []byte(recAccess)); err != ErrIgnored {
		t.Errorf("a user message's type: %v", err)
	}
}

// The run's domain is the one its creator made under its name; records of
// another domain, one whose creator had the same pid under another name
// included, are not the run's.
func TestAssemblerAttributes(t *testing.T) {
	var got []Denial
	a := assembler{creator: 13105, comm: "se-0a1b2c3d4e5f", pending: map[Stamp]*event{}, out: func(d Denial) { got = append(got, d) }}
	now := time.Now()
	feed := func(typ uint16, text string) {
		rec, err := Parse(typ, []byte(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		a.add(rec, now)
	}
	// Another domain, made by an earlier process with the same pid.
	feed(TypeLandlockAccess, `audit(1.000:5): domain=1aaaaaaaa blockers=fs.read_file path="/home/u/.ssh/id_rsa" dev="vda" ino=9`)
	feed(TypeLandlockDomain, `audit(1.000:5): domain=1aaaaaaaa status=allocated mode=enforcing pid=13105 uid=0 exe="/usr/bin/sandbox-executable" comm="sandbox-executa"`)
	feed(TypeEOE, `audit(1.000:5): `)
	// The run's.
	feed(TypeLandlockAccess, recAccess)
	feed(TypeLandlockDomain, recDomain)
	feed(TypeSyscall, recSyscall)
	feed(TypeEOE, recEOE)
	// The other domain again, after the run's is known.
	feed(TypeLandlockAccess, `audit(2.000:40): domain=1aaaaaaaa blockers=fs.write_file path="/etc/passwd" dev="vda" ino=3`)
	a.flushOlder(now.Add(time.Hour))
	feed(TypeLandlockDomain, recFree)
	if len(got) != 1 || got[0].Access.Path != "/etc" || got[0].Pid != 13105 || got[0].Exe != "/usr/bin/dash" || got[0].Errno != 13 {
		t.Fatalf("got %+v", got)
	}
	if !a.sum.Attributed || a.sum.Domain != 0x1bd26591c || !a.sum.KernelCounted || a.sum.KernelDenials != 1 {
		t.Errorf("summary %+v", a.sum)
	}
}

// No creator said (the program did not mark its domain): nothing is the
// run's, whatever the names.
func TestAssemblerNoCreator(t *testing.T) {
	var n int
	a := assembler{comm: "", pending: map[Stamp]*event{}, out: func(Denial) { n++ }}
	for _, r := range []struct {
		typ  uint16
		text string
	}{{TypeLandlockAccess, recAccess}, {TypeLandlockDomain, strings.Replace(recDomain, "pid=13105", "pid=0", 1)}, {TypeEOE, recEOE}} {
		rec, err := Parse(r.typ, []byte(r.text))
		if err != nil {
			t.Fatal(err)
		}
		a.add(rec, time.Now())
	}
	if n != 0 || a.sum.Attributed {
		t.Errorf("attributed without a creator: %d %+v", n, a.sum)
	}
}

func TestSplitMessages(t *testing.T) {
	if _, err := splitMessages([]byte{1, 2, 3}); err == nil {
		t.Error("a short header accepted")
	}
	b := make([]byte, 20)
	b[0] = 40 // longer than the datagram
	if _, err := splitMessages(b); err == nil {
		t.Error("an overlong message accepted")
	}
}
