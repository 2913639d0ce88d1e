package seccomp

import (
	"testing"

	"sandbox-executable/policy"
)

func TestMediationRules(t *testing.T) {
	plan := []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"},
		{Syscall: "sendmsg", Action: policy.ActionErrno, Errno: "EPERM"}, // blocked_syscalls
		{Syscall: "connect", Action: policy.ActionLog},                   // log_only
	}
	rules, dropped := mediationRules(plan, []string{"connect", "sendto", "sendmsg", "sendmmsg"})
	got := map[string]policy.SyscallRule{}
	for _, r := range rules {
		if r.Action != ActionMediate {
			t.Errorf("%s: action %s", r.Syscall, r.Action)
		}
		got[r.Syscall] = r
	}
	if _, ok := got["sendmsg"]; ok {
		t.Errorf("sendmsg, which the Plan denies, is mediated")
	}
	for _, name := range []string{"connect", "sendto", "sendmmsg"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not mediated", name)
		}
	}
	if a := got["sendto"].Args; len(a) != 1 || a[0].Index != 4 || a[0].Op != "ne" || a[0].Value != 0 {
		t.Errorf("sendto is mediated only with an address: %+v", a)
	}
	if len(dropped) != 1 || dropped[0] != 2 {
		t.Errorf("the log rule for connect is not dropped: %v", dropped)
	}
	if kept := withoutRules(plan, dropped); len(kept) != 2 || kept[1].Syscall != "sendmsg" {
		t.Errorf("kept %+v", kept)
	}
}

// TestFileRules: every file call this architecture has goes to the
// supervisor, the opens only with a flag that may create, truncate or
// write; a call the Plan denies stays denied; and the filter compiles.
func TestFileRules(t *testing.T) {
	plan := []policy.SyscallRule{{Syscall: "symlinkat", Action: policy.ActionErrno, Errno: "EPERM"}}
	all, host := Assemble(plan, Host{MediateFiles: true})
	conds := map[string][]policy.ArgCondition{}
	for _, r := range host {
		if r.Action != ActionMediate {
			t.Errorf("%s: action %s", r.Syscall, r.Action)
		}
		conds[r.Syscall] = append(conds[r.Syscall], r.Args...)
	}
	if _, ok := conds["symlinkat"]; ok {
		t.Error("symlinkat, which the Plan denies, is mediated")
	}
	for _, name := range []string{"mkdirat", "unlinkat", "renameat2", "linkat", "openat2", "truncate"} {
		if c, ok := conds[name]; !ok || len(c) != 0 {
			t.Errorf("%s: %v %v, want an unconditional rule", name, ok, c)
		}
	}
	if c := conds["openat"]; len(c) != 4 || c[0].Index != 2 || c[0].Op != opMaskedEq {
		t.Errorf("openat's conditions: %+v", c)
	}
	if _, err := Compile(&policy.Seccomp{Rules: all}, Options{}); err != nil {
		t.Fatal(err)
	}
}
