package seccomp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

func TestTableLookup(t *testing.T) {
	for _, c := range []struct {
		name          string
		native, known bool
	}{
		{"ptrace", true, true},
		{"umount", false, true}, // i386, arm... but not x86_64
		{"custom_syscall", false, false},
		{"", false, false},
	} {
		n, k := Table{}.Lookup(c.name)
		if n != c.native || k != c.known {
			t.Errorf("%q: native %v known %v, want %v %v", c.name, n, k, c.native, c.known)
		}
	}
}

func TestCompile(t *testing.T) {
	s := &policy.Seccomp{Rules: []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"},
		{Syscall: "clone3", Action: policy.ActionErrno, Errno: "ENOSYS"},
		{Syscall: "keyctl", Action: policy.ActionLog},
		{Syscall: "socket", Action: policy.ActionErrno, Errno: "EPERM", Args: []policy.ArgCondition{{Index: 0, Op: "ge", Value: 2}}},
		{Syscall: "ioctl", Action: policy.ActionErrno, Errno: "EPERM", Args: []policy.ArgCondition{{Index: 1, Op: "masked_eq", Mask: 0xffffffff, Value: 0x5412}}},
	}}
	p, err := Compile(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Rules != 5 || len(p.BPF) == 0 || len(p.BPF)%8 != 0 {
		t.Errorf("program %d rules, %d bytes", p.Rules, len(p.BPF))
	}
	for _, bad := range []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EWHATEVER"},
		{Syscall: "ptrace", Action: "allow"},
		{Syscall: "no_such_call", Action: policy.ActionLog},
		{Syscall: "socket", Action: policy.ActionLog, Args: []policy.ArgCondition{{Index: 0, Op: "between"}}},
	} {
		if _, err := Compile(&policy.Seccomp{Rules: []policy.SyscallRule{bad}}, Options{}); err == nil || !strings.Contains(err.Error(), "seccomp: rule 0") {
			t.Errorf("%+v: err %v", bad, err)
		}
	}
}

func TestCompileForObservation(t *testing.T) {
	s := &policy.Seccomp{Rules: []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"},
		{Syscall: "clone3", Action: policy.ActionErrno, Errno: "ENOSYS"},
		{Syscall: "keyctl", Action: policy.ActionLog},
	}}
	p, err := Compile(s, Options{Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Notify || len(p.Errnos) != 2 || p.Errnos[101] != unix.EPERM || p.Errnos[435] != unix.ENOSYS {
		t.Errorf("errnos %v", p.Errnos)
	}
	// Two errnos for one syscall cannot be told apart when answering.
	s.Rules = append(s.Rules, policy.SyscallRule{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EACCES",
		Args: []policy.ArgCondition{{Index: 0, Op: "eq", Value: 1}}})
	if _, err := Compile(s, Options{Notify: true}); err == nil {
		t.Errorf("conflicting errnos accepted")
	}
}

func TestCompileCache(t *testing.T) {
	dir := t.TempDir()
	s := &policy.Seccomp{Rules: []policy.SyscallRule{{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"}}}
	fresh, err := Compile(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Compile(s, Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("cache holds %d entries", len(entries))
	}
	// A second compile reads the entry: make it recognisable.
	marked := append([]byte(nil), first.BPF...)
	marked[len(marked)-1] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, entries[0].Name()), marked, 0o600); err != nil {
		t.Fatal(err)
	}
	second, _ := Compile(s, Options{CacheDir: dir})
	if !bytes.Equal(second.BPF, marked) || !bytes.Equal(first.BPF, fresh.BPF) {
		t.Errorf("the cache was not used, or changed the program")
	}
	// A different rule set, or observing, is another entry.
	if p, _ := Compile(s, Options{CacheDir: dir, Notify: true}); bytes.Equal(p.BPF, marked) || len(p.Errnos) != 1 {
		t.Errorf("observed program came from the unobserved entry")
	}
	// A malformed entry is a miss, not a program.
	if err := os.WriteFile(filepath.Join(dir, entries[0].Name()), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, _ := Compile(s, Options{CacheDir: dir}); !bytes.Equal(p.BPF, fresh.BPF) {
		t.Errorf("a malformed entry was used")
	}
	// A bad rule is refused even when an entry exists for the good ones.
	s.Rules = append(s.Rules, policy.SyscallRule{Syscall: "nope", Action: policy.ActionLog})
	if _, err := Compile(s, Options{CacheDir: dir}); err == nil {
		t.Errorf("bad rule accepted")
	}
}

// TestUnconditionalRuleOverridesRefused: a rule without conditions next to
// another rule for the same call would decide every call alone (libseccomp),
// silently dropping the other: Compile refuses it.
func TestUnconditionalRuleOverridesRefused(t *testing.T) {
	logRule := policy.SyscallRule{Syscall: "unshare", Action: policy.ActionLog}
	deny := policy.SyscallRule{Syscall: "unshare", Action: policy.ActionErrno, Errno: "EPERM",
		Args: []policy.ArgCondition{{Index: 0, Op: "masked_eq", Mask: 0x10000000, Value: 0x10000000}}}
	for _, rules := range [][]policy.SyscallRule{{logRule, deny}, {deny, logRule}} {
		if _, err := Compile(&policy.Seccomp{Rules: rules}, Options{}); err == nil || !strings.Contains(err.Error(), "override") {
			t.Errorf("%v: %v", rules, err)
		}
	}
	other := deny
	other.Args = []policy.ArgCondition{{Index: 0, Op: "masked_eq", Mask: 0x20000, Value: 0x20000}}
	if _, err := Compile(&policy.Seccomp{Rules: []policy.SyscallRule{deny, other}}, Options{}); err != nil {
		t.Errorf("two conditional rules: %v", err)
	}
}

// TestCompileMediated: mediate rules become user notifications the
// watcher hands to the Mediator, and need a listener even unobserved.
func TestCompileMediated(t *testing.T) {
	s := &policy.Seccomp{Rules: []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"},
		{Syscall: "connect", Action: ActionMediate},
		{Syscall: "sendto", Action: ActionMediate, Args: []policy.ArgCondition{{Index: 4, Op: "ne", Value: 0}}},
	}}
	p, err := Compile(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.NeedsListener() || p.Notify || !p.Mediated[unix.SYS_CONNECT] || !p.Mediated[unix.SYS_SENDTO] || len(p.Mediated) != 2 {
		t.Errorf("mediated %v, notify %v", p.Mediated, p.Notify)
	}
	if plain, _ := Compile(&policy.Seccomp{Rules: s.Rules[:1]}, Options{}); plain.NeedsListener() {
		t.Errorf("a filter without mediation or observation needs a listener")
	}
}
