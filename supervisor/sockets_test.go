package supervisor

import (
	"testing"

	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
)

func TestMediationRules(t *testing.T) {
	plan := []policy.SyscallRule{
		{Syscall: "ptrace", Action: policy.ActionErrno, Errno: "EPERM"},
		{Syscall: "sendmsg", Action: policy.ActionErrno, Errno: "EPERM"}, // blocked_syscalls
		{Syscall: "connect", Action: policy.ActionLog},                   // log_only
	}
	rules, dropped := mediationRules(plan)
	got := map[string]policy.SyscallRule{}
	for _, r := range rules {
		if r.Action != seccomp.ActionMediate {
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

func TestChooseSockets(t *testing.T) {
	if c := chooseSockets(9, false, false, true); c.how != socketsByLandlock {
		t.Errorf("ABI 9 without namespaces: %+v", c)
	}
	if c := chooseSockets(7, false, false, true); c.how != socketsDenied {
		t.Errorf("no init: %+v", c)
	}
	if c := chooseSockets(7, true, false, false); c.how != socketsDenied {
		t.Errorf("an init, but a kernel that cannot mediate: %+v", c)
	}
	for _, c := range []struct {
		abi   int
		netns bool
		want  sockmed.AbstractMode
	}{{7, true, sockmed.AbstractDirect}, {5, true, sockmed.AbstractDirect}, {7, false, sockmed.AbstractOwned}, {5, false, sockmed.AbstractOwned}} {
		got := chooseSockets(c.abi, true, c.netns, true)
		if got.how != socketsMediated || got.abstract != c.want {
			t.Errorf("ABI %d, netns %v: %+v, want abstract %d", c.abi, c.netns, got, c.want)
		}
	}
}
