package doctor

import (
	"slices"
	"strconv"
	"strings"

	"sandbox-executable/cgroups"
	"sandbox-executable/hostfacts"
	"sandbox-executable/remedy"
)

// strictControllers are the limits the strict model puts on every run.
var strictControllers = hostfacts.StrictControllers

// cgroupFacts are what the facts say of cgroups.
type cgroupFacts struct {
	mode string
	// detectErr is why the layout could not be read, if it could not.
	detectErr string
	hostfacts.CgroupAccess
	euid int
	// manager is the user's systemd manager's answer, nil when it was not
	// asked.
	manager *hostfacts.UserManager
}

func cgroupFactsOf(f *hostfacts.Facts, d *hostfacts.Diagnosis) cgroupFacts {
	c := cgroupFacts{mode: string(cgroups.Unavailable), euid: f.EUID, manager: d.UserManager}
	if f.Cgroups == nil {
		if !f.CgroupfsMissing() {
			c.detectErr = f.CgroupsWhy
		}
		return c
	}
	c.mode = string(f.Cgroups.Mode)
	if d.CgroupAccess != nil {
		c.CgroupAccess = *d.CgroupAccess
	}
	return c
}

func cgroupsItem(f cgroupFacts, h Host, w remedy.Words) Item {
	it := Item{ID: "cgroups", Title: "cgroup for memory, pids and CPU accounting", Strict: true}
	if f.mode == string(cgroups.Unavailable) {
		it.Status = StatusMissing
		it.Detail = "no cgroup filesystem mounted"
		if f.detectErr != "" {
			it.Detail = "cannot read the cgroup layout: " + f.detectErr
		}
		it.Fix = "mount cgroup2: mount -t cgroup2 none /sys/fs/cgroup (or run where one is mounted)"
		return it
	}
	var parts []string
	var absent []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if w, ok := f.Where[c]; ok {
			parts = append(parts, c+" "+w)
		} else {
			absent = append(absent, c)
		}
	}
	it.Detail = f.mode + ": " + strings.Join(parts, ", ")
	if len(absent) > 0 {
		it.Detail += "; no " + strings.Join(absent, ", ")
	}
	if f.CPUUsage == "" {
		it.Notes = append(it.Notes, "CPU usage: no accounting (neither cgroup2 cpu.stat nor a v1 cpuacct hierarchy)")
	} else {
		it.Notes = append(it.Notes, "CPU usage from "+f.CPUUsage+"; kill: "+f.Kill)
	}
	if _, ok := f.Where["cpu"]; !ok {
		it.Notes = append(it.Notes, "no cpu controller: --cpu-quota cannot be enforced")
	}

	var missingCtl []string
	for _, c := range strictControllers {
		if _, ok := f.Where[c]; !ok {
			missingCtl = append(missingCtl, c)
		}
	}
	switch {
	case len(missingCtl) > 0:
		it.Status = StatusMissing
		it.Notes = append(it.Notes, "the "+strings.Join(missingCtl, " and ")+" controller is in no mounted hierarchy")
		it.Fix = "boot a kernel with CONFIG_MEMCG=y and CONFIG_CGROUP_PIDS=y and without cgroup_disable= on its command line; on cgroup2 enable them: echo '+memory +pids' > /sys/fs/cgroup/cgroup.subtree_control"
	case !f.Creatable:
		it.Status = StatusMissing
		who := "root"
		if f.euid != 0 {
			who = "uid " + strconv.Itoa(f.euid)
		}
		var why []string
		if len(f.Denied) > 0 {
			why = append(why, "not writable: "+strings.Join(f.Denied, ", "))
		}
		if len(f.NotDelegated) > 0 {
			why = append(why, "controllers not delegated to its cgroup: "+strings.Join(f.NotDelegated, ", "))
		}
		if f.manager != nil && f.manager.Err == "" {
			// A run asks this manager for a delegated scope and makes its
			// group there (supervisor's cgroupInUserScope).
			it.Notes = append(it.Notes, who+" cannot create a group in its own cgroup: "+strings.Join(why, "; "))
			userScopeVerdict(&it, f.manager)
			break
		}
		it.Notes = append(it.Notes, who+" cannot create a group: "+strings.Join(why, "; "))
		if f.ReadOnly {
			it.Notes = append(it.Notes, "the cgroup filesystem is read-only here (a container's)")
		}
		if f.manager != nil {
			it.Notes = append(it.Notes, "no delegated scope from a systemd user manager either: "+f.manager.Err)
		}
		it.Fix = hostfacts.CgroupAdvice(hostfacts.CgroupAdviceFacts{EUID: f.euid, ReadOnly: f.ReadOnly, V1Limits: !f.V2Limits, Systemd: h.Systemd}, w)
	case f.CPUUsage == "":
		it.Status = StatusDegraded
		it.Fix = "mount the v1 cpuacct hierarchy (mount -t cgroup -o cpuacct cpuacct /sys/fs/cgroup/cpuacct) or cgroup2"
	default:
		it.Status = StatusOK
		who := "as root"
		if f.euid != 0 {
			who = "delegated to uid " + strconv.Itoa(f.euid)
		}
		it.Notes = append(it.Notes, "a group can be created ("+who+")")
	}
	return it
}

// delegateFix gives user managers the strict controllers.
const delegateFix = "delegate them to user managers: mkdir -p /etc/systemd/system/user@.service.d && printf '[Service]\\nDelegate=cpu memory pids\\n' > /etc/systemd/system/user@.service.d/delegate.conf && systemctl daemon-reload, then log in again; or run as root (sudo sandbox-executable ...)"

// userScopeVerdict is the answer where the user's systemd manager answered:
// runs get their group in a transient scope from it (Delegate=yes), which
// has the strict controllers when the manager's own cgroup has them. No
// scope is made to find out: where the manager's cgroup cannot be read,
// that is tried at run time.
func userScopeVerdict(it *Item, m *hostfacts.UserManager) {
	at := "the systemd user manager at " + m.Manager.Via
	if m.Manager.Version != "" {
		at += " (systemd " + m.Manager.Version + ")"
	}
	switch lacks := m.Lacks(); {
	case m.Controllers == nil:
		it.Status = StatusOK
		it.Notes = append(it.Notes, "limits will be enforced through a transient systemd user scope (Delegate=yes) from "+at+
			"; whether it has the memory and pids controllers will be tried at run time (its cgroup's controllers could not be read)")
	case len(lacks) > 0:
		it.Status = StatusMissing
		it.Notes = append(it.Notes, at+" answered, but its cgroup "+m.Manager.ControlGroup+" lacks "+strings.Join(lacks, " and ")+
			": a scope from it cannot have these limits")
		it.Fix = delegateFix
	default:
		it.Status = StatusOK
		it.Notes = append(it.Notes, "limits will be enforced through a transient systemd user scope (Delegate=yes) from "+at+
			", below its cgroup "+m.Manager.ControlGroup+" (controllers: "+strings.Join(m.Controllers, " ")+")")
		if !slices.Contains(m.Controllers, "cpu") {
			it.Notes = append(it.Notes, "no cpu controller in its cgroup: --cpu-quota cannot be enforced there")
		}
	}
}
