package policy

import "testing"

func TestSeccompUnknownName(t *testing.T) {
	e := newTestEnv(t)
	const why = " is not a system call on any architecture; refusing because a misspelled name would silently weaken the filter"
	for _, tt := range []struct {
		from Source
		list []string
		want string
	}{
		{SourceUnset, []string{"ptrace", "custom_syscall"}, `--seccomp-profile: blocked_syscalls[1]: "custom_syscall"` + why},
		{SourceSeccompProfile, []string{"ptrce"}, `--seccomp-profile: blocked_syscalls[0]: "ptrce"` + why},
		{SourcePolicy, []string{"custom_syscall"}, `--sandbox-policy: seccomp_profile.blocked_syscalls[0]: "custom_syscall"` + why},
		{SourcePolicy, []string{"a", "custom_syscall"}, `--sandbox-policy: seccomp_profile.blocked_syscalls[0]: "a"` + why},
		{SourceUnset, []string{""}, `--seccomp-profile: blocked_syscalls[0]: ""` + why},
		{SourceUnset, []string{"x\ny"}, `--seccomp-profile: blocked_syscalls[0]: "x\ny"` + why},
	} {
		in := e.input(SandboxPolicy{Kind: KindReadOnly})
		in.Seccomp = SeccompProfile{BlockedSyscalls: tt.list}
		in.SeccompFrom = tt.from
		if got := resolveError(t, in); got != tt.want {
			t.Errorf("%v %q:\n got %s\nwant %s", tt.from, tt.list, got, tt.want)
		}
	}
}
