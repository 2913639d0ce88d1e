package doctor

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/cgroups/userscope"
	"sandbox-executable/hostfacts"
	"sandbox-executable/mountns"
)

// healthyFacts are hand-made facts of a host that offers the whole strict
// model to uid 1000: no kernel is asked.
func healthyFacts() *hostfacts.Facts {
	errata := uint64(0xf)
	v2 := &cgroups.Hierarchy{Controllers: []string{"cpu", "memory", "pids"}, Mount: "/sys/fs/cgroup", Root: "/", Own: "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope"}
	return &hostfacts.Facts{
		UID: 1000, GID: 1000, EUID: 1000,
		LandlockABI:    7,
		LandlockErrata: &errata,
		Namespaces:     mountns.Availability{OK: true, Network: true, Why: "a user namespace that maps the user to itself, and the run's namespaces in it (tried)"},
		Cgroups:        &cgroups.Host{Mode: cgroups.Unified, V2: v2},
		Doctor: &hostfacts.Diagnosis{
			System:     hostfacts.System{Kernel: "6.18.44", Arch: "x86_64", GoArch: "amd64", Systemd: true, RootFS: "ext4", LSMs: []string{"landlock", "yama"}},
			Status:     hostfacts.ProcStatus{HaveCapEff: true, NoNewPrivs: 0, Seccomp: 0, SeccompFilters: 0},
			CapLastCap: 40,
			Seccomp:    hostfacts.Seccomp{Mode: 0, Actions: hostfacts.SeccompActions(), Library: "2.5.4"},
			Trials: hostfacts.Trials{
				User: mountns.Attempt{Flags: unix.CLONE_NEWUSER, OK: true},
				Mnt:  mountns.Attempt{Flags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS, OK: true},
				Net:  mountns.Attempt{Flags: unix.CLONE_NEWUSER | unix.CLONE_NEWNET, OK: true},
			},
			Sysctls: hostfacts.Sysctls{MaxUserNS: 15000, MaxMntNS: 15000, MaxNetNS: 15000, UnprivClone: -1, AppArmorRestrict: -1},
			CgroupAccess: &hostfacts.CgroupAccess{
				Where:    map[string]string{"memory": "v2 /sys/fs/cgroup", "pids": "v2 /sys/fs/cgroup", "cpu": "v2 /sys/fs/cgroup"},
				V2Limits: true, CPUUsage: "v2 cpu.stat", Kill: "cgroup.kill", Creatable: true,
			},
		},
	}
}

// sessionScope makes f a login session's: its own cgroup is root's.
func sessionScope(f *hostfacts.Facts) {
	a := f.Doctor.CgroupAccess
	a.Denied = []string{"/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope (EACCES)", "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cgroup.procs (EACCES)"}
	a.Creatable = false
}

func userManager(controllers ...string) *hostfacts.UserManager {
	return &hostfacts.UserManager{
		Manager:     userscopeManager(),
		Controllers: controllers,
	}
}

func TestRenderFromFacts(t *testing.T) {
	type want struct {
		id, status string
		has        []string // in the item's detail, notes or fix
		lacks      []string
	}
	for _, c := range []struct {
		name  string
		facts func(*hostfacts.Facts)
		ok    bool
		items []want
	}{
		{"healthy", func(*hostfacts.Facts) {}, true, []want{
			{"landlock", "ok", []string{"ABI 7 (errata 0xf)"}, nil},
			{"cgroups", "ok", []string{"a group can be created (delegated to uid 1000)", "kill: cgroup.kill"}, []string{"systemd user scope"}},
			{"mountns", "ok", []string{"uid 1000 mapped to itself"}, nil},
		}},
		{"ABI 2, erratum 3 not fixed", func(f *hostfacts.Facts) {
			none := uint64(0)
			f.LandlockABI, f.LandlockErrata = 2, &none
		}, false, []want{
			{"landlock", "degraded", []string{"ABI 2 (errata 0x0): filesystem, refer", "erratum 3 (disconnected directory handling) NOT fixed", "--fs-mode exact"}, []string{"erratum 1 "}},
		}},
		{"ABI 2, no errata query", func(f *hostfacts.Facts) {
			f.LandlockABI, f.LandlockErrata, f.LandlockErrataErrno = 2, nil, unix.EINVAL
		}, false, []want{
			{"landlock", "degraded", []string{"ABI 2 (errata n/a)", "errata: not reported by this kernel (EINVAL"}, nil},
		}},
		{"no Landlock, disabled at boot", func(f *hostfacts.Facts) {
			f.LandlockABI, f.LandlockErrata, f.LandlockErrno = 0, nil, unix.EOPNOTSUPP
		}, false, []want{
			{"landlock", "missing", []string{"EOPNOTSUPP", "lsm=landlock,yama"}, nil},
		}},
		{"no user namespaces", func(f *hostfacts.Facts) {
			d := f.Doctor
			eperm := func(fl uintptr) mountns.Attempt {
				return mountns.Attempt{Flags: fl, Step: "clone", Errno: unix.EPERM, Err: "clone: operation not permitted"}
			}
			d.Trials.User, d.Trials.Mnt, d.Trials.Net = eperm(unix.CLONE_NEWUSER), eperm(unix.CLONE_NEWUSER|unix.CLONE_NEWNS), eperm(unix.CLONE_NEWUSER|unix.CLONE_NEWNET)
			d.Sysctls.MaxUserNS = 0
			f.Namespaces = mountns.Availability{Why: "no namespaces: clone(CLONE_NEW{USER,NS}): EPERM (user.max_user_namespaces is 0)"}
		}, false, []want{
			{"userns", "missing", []string{"clone(CLONE_NEWUSER) failed: EPERM", "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"}, nil},
			{"mountns", "missing", []string{"user.max_user_namespaces is 0", "only Landlock-only mode runs"}, []string{"pre-check"}},
			{"netns", "missing", []string{"user.max_user_namespaces is 0"}, nil},
		}},
		{"read-only cgroupfs", func(f *hostfacts.Facts) {
			a := f.Doctor.CgroupAccess
			a.Denied, a.ReadOnly, a.Creatable = []string{"/sys/fs/cgroup/user.slice (EROFS)"}, true, false
		}, false, []want{
			{"cgroups", "missing", []string{"uid 1000 cannot create a group: not writable: /sys/fs/cgroup/user.slice (EROFS)", "cgroup filesystem is read-only here"}, []string{"systemd user scope"}},
		}},
		{"not delegated, user manager delegates memory and pids", func(f *hostfacts.Facts) {
			sessionScope(f)
			f.Doctor.UserManager = userManager("cpu", "memory", "pids")
		}, true, []want{
			{"cgroups", "ok", []string{"cannot create a group in its own cgroup: not writable", "limits will be enforced through a transient systemd user scope (Delegate=yes) from the systemd user manager at unix:path=/run/user/1000/systemd/private (systemd 252.30-1~deb12u2), below its cgroup /user.slice/user-1000.slice/user@1000.service"}, []string{"tried at run time", "--cpu-quota"}},
		}},
		{"not delegated, user manager without cpu", func(f *hostfacts.Facts) {
			sessionScope(f)
			f.Doctor.UserManager = userManager("memory", "pids")
		}, true, []want{
			{"cgroups", "ok", []string{"systemd user scope", "no cpu controller in its cgroup: --cpu-quota cannot be enforced there"}, nil},
		}},
		{"not delegated, user manager's controllers unknown", func(f *hostfacts.Facts) {
			sessionScope(f)
			f.Doctor.UserManager = userManager()
		}, true, []want{
			{"cgroups", "ok", []string{"transient systemd user scope", "will be tried at run time"}, nil},
		}},
		{"not delegated, user manager lacks pids", func(f *hostfacts.Facts) {
			sessionScope(f)
			f.Doctor.UserManager = userManager("cpu", "memory")
		}, false, []want{
			{"cgroups", "missing", []string{"lacks pids: a scope from it cannot have these limits", "Delegate=cpu memory pids"}, nil},
		}},
		{"not delegated, no user manager", func(f *hostfacts.Facts) {
			sessionScope(f)
			f.Doctor.UserManager = &hostfacts.UserManager{NoManager: true, Err: "no systemd user manager answered at unix:path=/run/user/1000/systemd/private or unix:path=/run/user/1000/bus (connect: no such file or directory)"}
		}, false, []want{
			{"cgroups", "missing", []string{"uid 1000 cannot create a group: not writable", "no delegated scope from a systemd user manager either: no systemd user manager answered", "systemd-run --user --scope -p Delegate=yes"}, []string{"will be enforced"}},
		}},
		{"no cgroupfs", func(f *hostfacts.Facts) {
			f.Cgroups, f.CgroupsWhy, f.Doctor.CgroupAccess = nil, "no cgroup filesystem is mounted", nil
			f.Doctor.UserManager = userManager("cpu", "memory", "pids") // not asked there; ignored if it were
		}, false, []want{
			{"cgroups", "missing", []string{"no cgroup filesystem mounted", "mount -t cgroup2"}, []string{"cannot read"}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := healthyFacts()
			c.facts(f)
			r := Render(f, Options{Words: cliWords})
			if r.OK != c.ok {
				t.Errorf("OK = %v, want %v\n%s", r.OK, c.ok, r.Text())
			}
			if r.Host.CgroupMode == "" || r.Host.LandlockABI != f.LandlockABI || r.Host.EUID != 1000 {
				t.Errorf("host: %+v", r.Host)
			}
			for _, w := range c.items {
				it := mustItem(t, r, w.id)
				all := it.Detail + "\n" + notes(it) + "\n" + it.Fix
				if string(it.Status) != w.status {
					t.Errorf("%s is %s, want %s: %s", w.id, it.Status, w.status, all)
				}
				for _, s := range w.has {
					if !strings.Contains(all, s) {
						t.Errorf("%s lacks %q:\n%s", w.id, s, all)
					}
				}
				for _, s := range w.lacks {
					if strings.Contains(all, s) {
						t.Errorf("%s has %q:\n%s", w.id, s, all)
					}
				}
			}
		})
	}
}

// TestRenderWithoutDiagnosis: run-path facts alone (no Doctor part) render
// without a panic, and say nothing is known rather than ok.
func TestRenderWithoutDiagnosis(t *testing.T) {
	f := healthyFacts()
	f.Doctor = nil
	r := Render(f, Options{Words: cliWords})
	if r.OK {
		t.Errorf("facts without a diagnosis must not be whole:\n%s", r.Text())
	}
	if ll := mustItem(t, r, "landlock"); ll.Status != StatusOK {
		t.Errorf("landlock comes from the run-path facts: %+v", ll)
	}
}

func userscopeManager() userscope.Manager {
	return userscope.Manager{Via: "unix:path=/run/user/1000/systemd/private", Version: "252.30-1~deb12u2", ControlGroup: "/user.slice/user-1000.slice/user@1000.service"}
}
