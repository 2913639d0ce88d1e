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
