package seccomp

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
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
		{"umount", false, true}, // i386, arm... but neither x86_64 nor aarch64
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

// allowAll is a whole seccomp program that allows every call: one
// BPF_RET|BPF_K instruction returning SECCOMP_RET_ALLOW. It is what a
// poisoned cache entry would hold.
var allowAll = []byte{0x06, 0, 0, 0, 0x00, 0x00, 0xff, 0x7f}

func testCache(t *testing.T) *Cache {
	t.Helper()
	key := bytes.Repeat([]byte{0x5a}, 32)
	return &Cache{Dir: t.TempDir(), Key: key}
}

func TestCompileCache(t *testing.T) {
	c := testCache(t)
	s := &policy.Seccomp{Rules: []policy.SyscallRule{{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"}}}
	fresh, err := Compile(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Cache != CacheOff {
		t.Errorf("no cache given: %q", fresh.Cache)
	}
	first, err := Compile(s, Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(c.Dir)
	if len(entries) != 1 || first.Cache != CacheCompiled || !bytes.Equal(first.BPF, fresh.BPF) {
		t.Fatalf("cache holds %d entries, first compile %q", len(entries), first.Cache)
	}
	name := entries[0].Name()
	second, _ := Compile(s, Options{Cache: c})
	if second.Cache != CacheLoaded || !bytes.Equal(second.BPF, fresh.BPF) {
		t.Errorf("second compile: %q, same program %v", second.Cache, bytes.Equal(second.BPF, fresh.BPF))
	}
	// The entry is what is loaded (not a compile that happens to agree):
	// an entry sealed with the key for another program is that program.
	marked := append([]byte(nil), fresh.BPF...)
	marked[len(marked)-1] ^= 0xff
	writeEntry(t, c, name, c.seal(name, marked))
	if p, _ := Compile(s, Options{Cache: c}); !bytes.Equal(p.BPF, marked) || p.Cache != CacheLoaded {
		t.Errorf("a sealed entry was not loaded: %q", p.Cache)
	}
	// A different rule set, or observing, is another entry.
	if p, _ := Compile(s, Options{Cache: c, Notify: true}); bytes.Equal(p.BPF, marked) || len(p.Errnos) != 1 {
		t.Errorf("observed program came from the unobserved entry")
	}
	// A bad rule is refused even when an entry exists for the good ones.
	bad := &policy.Seccomp{Rules: append(append([]policy.SyscallRule(nil), s.Rules...), policy.SyscallRule{Syscall: "nope", Action: policy.ActionLog})}
	if _, err := Compile(bad, Options{Cache: c}); err == nil {
		t.Errorf("bad rule accepted")
	}
}

// TestPoisonedCacheEntriesRejected: an entry that is not exactly what this
// helper wrote with this key is never loaded; the program is compiled
// again, the entry replaced, and the rejection said.
func TestPoisonedCacheEntriesRejected(t *testing.T) {
	s := &policy.Seccomp{Rules: []policy.SyscallRule{{Syscall: "unshare", Action: policy.ActionErrno, Errno: "EPERM"}}}
	fresh, err := Compile(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Compile(&policy.Seccomp{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := cacheKey(s, Options{})
	good := testCache(t).seal(name, fresh.BPF)
	flipped := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 0x01
		return b
	}
	otherKey := &Cache{Key: bytes.Repeat([]byte{0xa5}, 32)}
	otherName := cacheKey(s, Options{Notify: true})
	for _, c := range []struct {
		what  string
		entry []byte
		why   string
	}{
		{"the attack: a bare allow-everything program", allowAll, "not a tag and a whole program"},
		{"allow-everything behind a made-up tag", append(make([]byte, tagSize), allowAll...), "does not verify"},
		{"one byte of the tag flipped", flipped(0), "does not verify"},
		{"one byte of the program flipped", flipped(len(good) - 3), "does not verify"},
		{"sealed with another key", otherKey.seal(name, fresh.BPF), "does not verify"},
		{"another key's allow-everything", otherKey.seal(name, allowAll), "does not verify"},
		{"another entry's, copied under this name", testCache(t).seal(otherName, other.BPF), "does not verify"},
		{"truncated by one instruction", good[:len(good)-8], "does not verify"},
		{"truncated inside an instruction", good[:len(good)-3], "not a tag and a whole program"},
		{"the tag alone", good[:tagSize], "not a tag and a whole program"},
		{"empty", nil, "not a tag and a whole program"},
		{"too long for the kernel", append(append([]byte(nil), good...), make([]byte, maxProgram)...), "not a tag and a whole program"},
	} {
		t.Run(c.what, func(t *testing.T) {
			cache := testCache(t)
			writeEntry(t, cache, name, c.entry)
			p, err := Compile(s, Options{Cache: cache})
			if err != nil {
				t.Fatal(err)
			}
			if p.Cache != CacheRejected || !strings.Contains(p.CacheRejection, c.why) || !strings.Contains(p.CacheRejection, name) {
				t.Errorf("cache %q, rejection %q; want rejected, %q", p.Cache, p.CacheRejection, c.why)
			}
			if !bytes.Equal(p.BPF, fresh.BPF) {
				t.Errorf("the program is not the one compiled from the rules")
			}
			// Rebuilt: the next run loads the replacement.
			if p, _ := Compile(s, Options{Cache: cache}); p.Cache != CacheLoaded || !bytes.Equal(p.BPF, fresh.BPF) {
				t.Errorf("after the rejection: %q", p.Cache)
			}
		})
	}
	t.Run("a symbolic link", func(t *testing.T) {
		cache := testCache(t)
		target := filepath.Join(t.TempDir(), "elsewhere")
		if err := os.WriteFile(target, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(cache.Dir, name)); err != nil {
			t.Fatal(err)
		}
		if p, _ := Compile(s, Options{Cache: cache}); p.Cache != CacheRejected || !bytes.Equal(p.BPF, fresh.BPF) {
			t.Errorf("a link was followed: %q %q", p.Cache, p.CacheRejection)
		}
	})
}

func writeEntry(t *testing.T, c *Cache, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.Dir, name), b, 0o600); err != nil {
		t.Fatal(err)
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

// TestReadOnlyCacheLoadsButNeverStores: --explain's cache reads an entry
// that is there and writes none.
func TestReadOnlyCacheLoadsButNeverStores(t *testing.T) {
	c := testCache(t)
	c.ReadOnly = true
	s := &policy.Seccomp{Rules: []policy.SyscallRule{{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"}}}
	p, err := Compile(s, Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(c.Dir); len(entries) != 0 || p.Cache != CacheCompiled {
		t.Fatalf("a read-only cache holds %d entries after a compile (%q)", len(entries), p.Cache)
	}
	w := *c
	w.ReadOnly = false
	if _, err := Compile(s, Options{Cache: &w}); err != nil {
		t.Fatal(err)
	}
	if p, _ := Compile(s, Options{Cache: c}); p.Cache != CacheLoaded {
		t.Errorf("a read-only cache did not load the entry there: %q", p.Cache)
	}
}

// TestCacheKeyCoversRules: the cache's name for a program changes with
// every field of a rule and of its argument conditions, so that two
// filters never share a cached program. A field added to either type must
// be written by cacheKey, and named here.
func TestCacheKeyCoversRules(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[policy.SyscallRule]():  "Syscall Action Errno Args Why",
		reflect.TypeFor[policy.ArgCondition](): "Index Op Value Mask",
	} {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s has the fields %v; cacheKey writes %s", typ, got, want)
		}
	}
	rule := func() policy.SyscallRule {
		return policy.SyscallRule{Syscall: "ioctl", Action: policy.ActionErrno, Errno: "EPERM", Why: "w",
			Args: []policy.ArgCondition{{Index: 1, Op: "masked_eq", Value: 2, Mask: 3}}}
	}
	key := func(rules ...policy.SyscallRule) string { return cacheKey(&policy.Seccomp{Rules: rules}, Options{}) }
	base := key(rule())
	seen := map[string]string{base: "the rule"}
	for _, c := range []struct {
		what   string
		change func(*policy.SyscallRule)
	}{
		{"Syscall", func(r *policy.SyscallRule) { r.Syscall = "ioctm" }},
		{"Action", func(r *policy.SyscallRule) { r.Action = policy.ActionKillProcess }},
		{"Errno", func(r *policy.SyscallRule) { r.Errno = "EACCES" }},
		{"Why", func(r *policy.SyscallRule) { r.Why = "x" }},
		{"no Args", func(r *policy.SyscallRule) { r.Args = nil }},
		{"two Args", func(r *policy.SyscallRule) { r.Args = append(r.Args, r.Args[0]) }},
		{"Index", func(r *policy.SyscallRule) { r.Args[0].Index = 0 }},
		{"Op", func(r *policy.SyscallRule) { r.Args[0].Op = "eq" }},
		{"Value", func(r *policy.SyscallRule) { r.Args[0].Value = 0 }},
		{"Mask", func(r *policy.SyscallRule) { r.Args[0].Mask = 0 }},
		{"a field's end moved", func(r *policy.SyscallRule) { r.Syscall, r.Errno = "ioctlE", "PERM" }},
	} {
		r := rule()
		c.change(&r)
		k := key(r)
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: the same name as %s", c.what, prev)
		}
		seen[k] = c.what
	}
	if k := key(rule(), rule()); seen[k] != "" {
		t.Errorf("two rules: the same name as %s", seen[k])
	}
	if cacheKey(&policy.Seccomp{Rules: []policy.SyscallRule{rule()}}, Options{Notify: true}) == base {
		t.Error("Notify: the same name")
	}
}
