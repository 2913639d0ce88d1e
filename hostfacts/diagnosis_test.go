package hostfacts

import (
	"testing"

	"sandbox-executable/cgroups"
)

// TestNeedsUserManager: the manager is asked exactly where a run would ask
// it for a scope (supervisor's cgroupInUserScope), and nowhere else.
func TestNeedsUserManager(t *testing.T) {
	unified := func(ctl ...string) *cgroups.Host {
		return &cgroups.Host{Mode: cgroups.Unified, V2: &cgroups.Hierarchy{Controllers: ctl, Mount: "/sys/fs/cgroup", Root: "/", Own: "/user.slice/user-1000.slice/session-3.scope"}}
	}
	denied := CgroupAccess{Denied: []string{"x (EACCES)"}}
	for _, c := range []struct {
		name string
		euid int
		host *cgroups.Host
		a    CgroupAccess
		want bool
	}{
		{"session scope", 1000, unified("cpu", "memory", "pids"), denied, true},
		{"root", 0, unified("cpu", "memory", "pids"), denied, false},
		{"delegated already", 1000, unified("cpu", "memory", "pids"), CgroupAccess{Creatable: true}, false},
		{"read-only cgroupfs", 1000, unified("cpu", "memory", "pids"), CgroupAccess{Denied: []string{"x (EROFS)"}, ReadOnly: true}, false},
		{"no pids at the root", 1000, unified("cpu", "memory"), denied, false},
		{"hybrid", 1000, &cgroups.Host{Mode: cgroups.Hybrid, V2: &cgroups.Hierarchy{Controllers: []string{"cpu", "memory", "pids"}}}, denied, false},
	} {
		f := &Facts{EUID: c.euid, Cgroups: c.host}
		if got := needsUserManager(f, c.a); got != c.want {
			t.Errorf("%s: needsUserManager = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUserManagerLacks(t *testing.T) {
	if l := (&UserManager{}).Lacks(); l != nil {
		t.Errorf("unknown controllers: lacks %v", l)
	}
	if l := (&UserManager{Controllers: []string{"cpu"}}).Lacks(); len(l) != 2 || l[0] != "memory" || l[1] != "pids" {
		t.Errorf("cpu only: lacks %v", l)
	}
	if l := (&UserManager{Controllers: []string{"memory", "pids"}}).Lacks(); len(l) != 0 {
		t.Errorf("both: lacks %v", l)
	}
}
