package hostfacts

import (
	"context"
	"errors"
	"os"
	"sandbox-executable/auditlog"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/cgroups/userscope"
	"sandbox-executable/mountns"
	"sandbox-executable/runstate"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
)

// Everything in this file is doctor's: no run decides from it, so its
// reads are not recorded (fsdeps; the guard test's allowlist says so).

// Diagnosis are the further facts `doctor` shows, probed only when
// Options.Doctor asks: why something is missing, not whether (the run
// path's fields of Facts say that).
type Diagnosis struct {
	// System is the kernel, the machine and the signs of a container.
	System System
	// Status is this process's /proc/self/status; CapLastCap the highest
	// capability the kernel knows (-1 unknown).
	Status     ProcStatus
	CapLastCap int
	// Seccomp is what the kernel says of seccomp.
	Seccomp Seccomp
	// Trials are doctor's own namespace attempts, one kind each (the run
	// path's Facts.Namespaces tries the run's set at once).
	Trials Trials
	// Sysctls are the namespace switches and limits, -1 when absent.
	Sysctls Sysctls
	// CgroupAccess is what this process may do with Facts.Cgroups; nil
	// without one.
	CgroupAccess *CgroupAccess
	// UserManager is what the user's systemd manager said, nil when it was
	// not asked (root, not a unified host, a group can be made without it,
	// or a read-only cgroupfs, which no scope makes writable).
	UserManager *UserManager
	// StateMoved says why the state directory is not in /tmp, where it
	// would be: another user took the name first (runstate.Moved); "" when
	// it was not passed over.
	StateMoved string
	// Audit is the kernel's audit state, which decides whether Landlock
	// records a run's file denials; AuditErr why it could not be asked
	// (no CAP_AUDIT_CONTROL, not the initial PID namespace).
	Audit    *auditlog.Status
	AuditErr string
	// UnixDiagErr is why sock_diag could not list this network namespace's
	// unix sockets, which the mediation of abstract names needs where
	// Landlock cannot scope them (sockmed.DiagError); "" when it could.
	UnixDiagErr string
}

// Seccomp is what the kernel said of seccomp.
type Seccomp struct {
	// Mode is this process's seccomp mode from prctl(PR_GET_SECCOMP): 0
	// none, 1 strict, 2 filter; -1 when the kernel has no seccomp.
	Mode int
	// Actions are the filter return actions asked about, in report order.
	Actions []SeccompAction
	// Library is libseccomp's version.
	Library string
}

// SeccompAction is one filter return action and whether the kernel has it.
type SeccompAction struct {
	Name string
	Ret  uint32
	// Need: the helper's filter uses it.
	Need bool
	// Errno is SECCOMP_GET_ACTION_AVAIL's error, 0 when available.
	Errno unix.Errno
}

// SeccompActions are the actions asked about, none yet answered.
func SeccompActions() []SeccompAction {
	return []SeccompAction{
		{Name: "KILL_PROCESS", Ret: unix.SECCOMP_RET_KILL_PROCESS, Need: true},
		{Name: "ERRNO", Ret: unix.SECCOMP_RET_ERRNO, Need: true},
		{Name: "LOG", Ret: unix.SECCOMP_RET_LOG},
		{Name: "USER_NOTIF", Ret: unix.SECCOMP_RET_USER_NOTIF},
	}
}

// Trials are real namespace creations (mountns.Try), one kind each.
// Without CAP_SYS_ADMIN every attempt goes through a user namespace that
// maps this user to itself, as the helper's does.
type Trials struct {
	Privileged bool
	// User is tried only without CAP_SYS_ADMIN.
	User, Mnt, Net mountns.Attempt
}

// Sysctls are the settings that explain a refused namespace, -1 when
// absent.
type Sysctls struct {
	MaxUserNS, MaxMntNS, MaxNetNS, UnprivClone, AppArmorRestrict int
}

// UserManager is the answer of the user's systemd manager (userscope.Ask):
// whether runs can have a delegated scope from it, as supervisor asks when
// the process's own cgroup cannot be used.
type UserManager struct {
	// Err is why no manager answered, or how it failed; empty when it did.
	Err string
	// NoManager: nobody answered at any address.
	NoManager bool
	// Manager is what it said.
	Manager userscope.Manager
	// Controllers are those its own cgroup has (cgroup.controllers of
	// Manager.ControlGroup), which a scope below it can be given; nil when
	// that could not be read.
	Controllers []string
}

// DefaultTrialTimeout bounds each of doctor's namespace trials when
// Options.TrialTimeout is zero. A trial answers in milliseconds; the bound
// is for a clone that hangs, and is long enough that a busy host is not
// reported as one that cannot make the namespace.
const DefaultTrialTimeout = 2 * time.Second

// managerTimeout bounds doctor's exchange with the user's manager.
const managerTimeout = 3 * time.Second

// startDiagnosis starts the namespace trials (forks, in parallel) and
// returns a function that waits for them and gathers the rest; f's run
// path fields must be filled by then.
func startDiagnosis(o Options) func(f *Facts) *Diagnosis {
	timeout := o.TrialTimeout
	if timeout <= 0 {
		timeout = DefaultTrialTimeout
	}
	e := liveEnv()
	st := e.status()
	var tr Trials
	var wg sync.WaitGroup
	wg.Go(func() { tr = trials(st.HasCap(capSysAdmin), timeout) })
	return func(f *Facts) *Diagnosis {
		d := &Diagnosis{Status: st, CapLastCap: e.capLastCap()}
		d.System = e.system()
		fillSystemLive(&d.System)
		d.Seccomp = seccompNow(st)
		d.Sysctls = e.sysctls()
		d.StateMoved = runstate.Moved()
		if st, err := auditlog.QueryStatus(); err == nil {
			d.Audit = &st
		} else {
			d.AuditErr = err.Error()
		}
		if err := sockmed.DiagError(); err != nil {
			d.UnixDiagErr = err.Error()
		}
		if f.Cgroups != nil {
			a := CgroupAccessOf(f.Cgroups, f.EUID, writable)
			d.CgroupAccess = &a
			if needsUserManager(f, a) {
				d.UserManager = askUserManager(f.Cgroups)
			}
		}
		wg.Wait()
		d.Trials = tr
		return d
	}
}

// capSysAdmin is CAP_SYS_ADMIN's bit.
const capSysAdmin = 21

func trials(privileged bool, timeout time.Duration) Trials {
	t := Trials{Privileged: privileged}
	var wg sync.WaitGroup
	run := func(dst *mountns.Attempt, flags uintptr) {
		wg.Go(func() { *dst = mountns.Try(flags, !privileged, timeout) })
	}
	if privileged {
		run(&t.Mnt, unix.CLONE_NEWNS)
		run(&t.Net, unix.CLONE_NEWNET)
	} else {
		run(&t.User, unix.CLONE_NEWUSER)
		run(&t.Mnt, unix.CLONE_NEWUSER|unix.CLONE_NEWNS)
		run(&t.Net, unix.CLONE_NEWUSER|unix.CLONE_NEWNET)
	}
	wg.Wait()
	return t
}

func (e env) sysctls() Sysctls {
	get := func(name string) int {
		v, ok := e.readInt("/proc/sys/" + name)
		if !ok {
			return -1
		}
		return v
	}
	return Sysctls{
		MaxUserNS:        get("user/max_user_namespaces"),
		MaxMntNS:         get("user/max_mnt_namespaces"),
		MaxNetNS:         get("user/max_net_namespaces"),
		UnprivClone:      get("kernel/unprivileged_userns_clone"),
		AppArmorRestrict: get("kernel/apparmor_restrict_unprivileged_userns"),
	}
}

func seccompNow(st ProcStatus) Seccomp {
	s := Seccomp{Library: seccomp.LibraryVersion()}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	switch {
	case err == nil:
		s.Mode = mode
	case st.Seccomp >= 0:
		s.Mode = st.Seccomp
	default:
		s.Mode = -1
	}
	s.Actions = SeccompActions()
	for i := range s.Actions {
		a := s.Actions[i].Ret
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&a)))
		s.Actions[i].Errno = errno
	}
	return s
}

// needsUserManager is true where a run would ask the user's manager for a
// scope (supervisor's cgroupInUserScope): not root, a unified host whose
// root has the strict controllers, a cgroup of its own it cannot use, and
// a writable cgroupfs.
func needsUserManager(f *Facts, a CgroupAccess) bool {
	h := f.Cgroups
	if f.EUID == 0 || h.Mode != cgroups.Unified || h.V2 == nil || a.Creatable || a.ReadOnly {
		return false
	}
	for _, c := range StrictControllers {
		if !h.V2.Has(c) {
			return false
		}
	}
	return true
}

// askUserManager asks, reads and leaves: no scope is made.
func askUserManager(h *cgroups.Host) *UserManager {
	ctx, cancel := context.WithTimeout(context.Background(), managerTimeout)
	defer cancel()
	m, err := userscope.Ask(ctx, userscope.Options{})
	if err != nil {
		return &UserManager{Err: strings.TrimPrefix(err.Error(), "userscope: "), NoManager: errors.Is(err, userscope.ErrNoManager)}
	}
	um := &UserManager{Manager: m}
	if m.ControlGroup != "" {
		if dir, err := h.V2.Dir(m.ControlGroup); err == nil {
			if b, err := os.ReadFile(dir + "/cgroup.controllers"); err == nil {
				um.Controllers = strings.Fields(string(b))
				if um.Controllers == nil {
					um.Controllers = []string{}
				}
			}
		}
	}
	return um
}

// Lacks are the strict controllers the manager's cgroup does not have
// (nil when its controllers are unknown).
func (u *UserManager) Lacks() []string {
	if u.Controllers == nil {
		return nil
	}
	var out []string
	for _, c := range StrictControllers {
		if !slices.Contains(u.Controllers, c) {
			out = append(out, c)
		}
	}
	return out
}
