package doctor

import (
	"slices"
	"strings"
	"testing"

	"sandbox-executable/hostfacts"
)

// root's status, as hostfacts parses it: every capability but
// SYS_RESOURCE (bit 24) of 41, no no_new_privs, one seccomp filter.
var statusRoot = hostfacts.ProcStatus{CapEff: 0x1fffeffffff, HaveCapEff: true, NoNewPrivs: 0, Seccomp: 2, SeccompFilters: 1}

func TestCapNames(t *testing.T) {
	if got := capList(1<<capSysAdmin | 1<<capNetAdmin | 1<<capSysPtrace); !slices.Equal(got, []string{"NET_ADMIN", "SYS_PTRACE", "SYS_ADMIN"}) {
		t.Errorf("capList = %v", got)
	}
	if capName(40) != "CHECKPOINT_RESTORE" || capName(41) != "CAP_41" {
		t.Errorf("capName(40), capName(41) = %s, %s", capName(40), capName(41))
	}
	it := privilegesItem(statusRoot, 40)
	if it.Status != StatusOK || it.Strict {
		t.Errorf("privileges item must be informational and ok: %+v", it)
	}
	for _, want := range []string{"no_new_privs 0", "CapEff 0x1fffeffffff", "+SYS_ADMIN +NET_ADMIN +SYS_PTRACE", "40 of 41", "lacking SYS_RESOURCE"} {
		if !strings.Contains(it.Detail, want) {
			t.Errorf("detail %q lacks %q", it.Detail, want)
		}
	}
	user := privilegesItem(hostfacts.ProcStatus{HaveCapEff: true, NoNewPrivs: 1, Seccomp: -1, SeccompFilters: -1}, 40)
	if !strings.Contains(user.Detail, "-SYS_ADMIN -NET_ADMIN -SYS_PTRACE") || !strings.Contains(user.Detail, "no capabilities") || len(user.Notes) != 1 {
		t.Errorf("unprivileged item: %+v", user)
	}
}

// TestStateItem: where the state lies, and that it moved (degraded, with a
// fix) when another user took the /tmp place; missing when it could go
// nowhere. Never strict: a run refuses on its own.
func TestStateItem(t *testing.T) {
	moved := "/tmp/sandbox-executable-1000 is another user's (uid 1001)"
	for _, tc := range []struct {
		dirs   []string
		moved  string
		status Status
		detail string
	}{
		{[]string{"/tmp/sandbox-executable-1000", "/home/u/.local/state/sandbox-executable"}, "", StatusOK, "/tmp/sandbox-executable-1000"},
		{[]string{"/home/u/.local/state/sandbox-executable"}, moved, StatusDegraded, "in the home directory: " + moved},
		{[]string{"/run/user/1000/sandbox-executable", "/home/u/.local/state/sandbox-executable"}, moved, StatusOK, "/run/user/1000/sandbox-executable"},
		{nil, moved + ", and the user has no home directory in /etc/passwd", StatusMissing, "none can be had: " + moved},
	} {
		it := stateItem(&hostfacts.Facts{StateDirs: tc.dirs}, &hostfacts.Diagnosis{StateMoved: tc.moved})
		if it.Strict || it.Status != tc.status || !strings.Contains(it.Detail, tc.detail) || (tc.status != StatusOK) != (it.Fix != "") {
			t.Errorf("%v, %q: %+v", tc.dirs, tc.moved, it)
		}
	}
}
