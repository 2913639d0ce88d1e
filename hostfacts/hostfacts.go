// Package hostfacts probes, once per run, what this host offers a sandbox:
// the Landlock ABI, whether the program can have namespaces of its own, the
// cgroup filesystem, whether the supervisor can mediate unix sockets, the
// limits the helper was started with, and the helper's state directory.
// Everything the supervisor decides is decided from these Facts
// (supervisor.Prepare), so that the decisions can be made, printed
// (--explain) and tested without touching the host again. `doctor` renders
// the same Facts, with a further part (Options.Doctor, Facts.Doctor) that
// says why something is missing.
package hostfacts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/fsdeps"
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/runstate"
	"sandbox-executable/seccomp"
	"sandbox-executable/spawn"
)

// Facts is what Probe found. The zero value is a host that offers nothing
// (no Landlock, no namespaces, no cgroups, no state directory): tests make
// the Facts they need by hand.
type Facts struct {
	// UID and GID are the helper's real ids, EUID its effective uid.
	UID, GID, EUID int
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock;
	// LandlockErrno is then the version query's error (which tells "not
	// enabled at boot" from "not built" and "filtered").
	LandlockABI   int
	LandlockErrno unix.Errno
	// LandlockErrata are the errata the kernel says it has fixed (bit N-1
	// for erratum N), nil when it did not answer; LandlockErrataErrno is
	// then the query's error (before 6.15: EINVAL).
	LandlockErrata      *uint64
	LandlockErrataErrno unix.Errno
	// Namespaces says whether the program can have namespaces of its own,
	// and whether a user namespace is needed for them.
	Namespaces mountns.Availability
	// NamespacesAssumed says Namespaces was assumed, not tried
	// (Options.AssumeNamespaces): a run whose child fails before its
	// program starts is decided again from Retry's facts.
	NamespacesAssumed bool
	// OverlayOK says whether the scratch caches' overlays can be mounted,
	// and OverlayWhy why not; probed only when Options.Overlay asks.
	OverlayOK  bool
	OverlayWhy string
	// Cgroups is the host's cgroup filesystem; nil when there is none to
	// use, and CgroupsWhy then says why.
	Cgroups    *cgroups.Host
	CgroupsWhy string
	// SocketMediation says whether the supervisor can carry out a
	// sandboxed process's socket calls (see MediationWorks).
	SocketMediation bool
	// FileMediation says whether the supervisor can carry out the file
	// calls of Landlock-only mode's split directories (see
	// FileMediationWorks).
	FileMediation bool
	// AuditRead says whether this process may read the kernel's audit
	// log (CAP_AUDIT_READ): the run's file denials, Landlock's records.
	AuditRead bool
	// Nofile is the RLIMIT_NOFILE the helper was started with (the Go
	// runtime raises its own soft limit).
	Nofile spawn.Rlimit
	// StateDirs are the helper's state directories, which every sandbox is
	// denied (runstate.Protected; runstate.Locations when ReadOnly).
	StateDirs []string
	// SharedTmp is the mount point every run of this user with a mount
	// namespace mounts its private temp dir's tmpfs on (see
	// SharedTmpPath), when it is fit for that or can be made there; ""
	// when it is not (SharedTmpWhy says why), and each run then makes a
	// directory of its own.
	SharedTmp    string
	SharedTmpWhy string
	// FilterCache is the compiled-filter cache, or nil when the state
	// directory or its key cannot be had (FilterCacheWhy says why).
	FilterCache    *seccomp.Cache
	FilterCacheWhy string
	// Doctor are the facts only `doctor` shows; nil unless Options.Doctor.
	Doctor *Diagnosis
}

// Options say what to probe.
type Options struct {
	// ReadOnly probes without writing anything: the state directory and its
	// key are looked up, not made, and the filter cache is only read
	// (--explain).
	ReadOnly bool
	// Overlay probes for overlayfs (only runs with scratch caches use it).
	Overlay bool
	// TempDir is where a private temp dir goes (see SharedTmp); "" probes
	// no shared mount point.
	TempDir string
	// AssumeNamespaces takes the namespaces as available where nothing
	// suggests otherwise (mountns.Assume) instead of trying them first: the
	// run's own child is then the trial, and the caller that sees it fail
	// before the program starts asks Retry. It saves a run the trial's
	// clone (about a millisecond); --explain and doctor try.
	AssumeNamespaces bool
	// Doctor probes also what `doctor` shows (Facts.Doctor): namespace
	// trials of each kind, seccomp's actions, the cgroup permissions, the
	// user's systemd manager. It makes nothing (no scope, no group).
	Doctor bool
	// TrialTimeout bounds each of doctor's namespace trials; 0 means
	// DefaultTrialTimeout.
	TrialTimeout time.Duration
}

// cgroupfsMissing is CgroupsWhy when no cgroup filesystem is mounted.
const cgroupfsMissing = "no cgroup filesystem is mounted"

// CgroupfsMissing reports whether f has no cgroups because none is
// mounted (rather than because the layout could not be read).
func (f *Facts) CgroupfsMissing() bool { return f.Cgroups == nil && f.CgroupsWhy == cgroupfsMissing }

// Probe looks at this host once.
func Probe(o Options) *Facts { return Start(o).Finish(o) }

// Pending is a probe Start began.
type Pending struct {
	done     chan struct{}
	f        *Facts
	diagnose func(*Facts) *Diagnosis
}

// Start begins to probe, on a goroutine of its own, what no run's plan
// changes (the kernel's features, the namespaces, the cgroups): a run
// starts it before it resolves its policy, which it then overlaps. It
// reads and tries, and makes nothing. o's AssumeNamespaces, Doctor and
// TrialTimeout count here; the rest is Finish's.
func Start(o Options) *Pending {
	p := &Pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.f, p.diagnose = probeHost(o)
	}()
	return p
}

// Finish waits for what Start began and completes it with what depends on
// the run (o's Overlay and TempDir), then the state directories, which a
// run that is not ReadOnly makes.
func (p *Pending) Finish(o Options) *Facts {
	<-p.done
	f := p.f
	if o.Overlay {
		f.OverlayOK, f.OverlayWhy = mountns.OverlayAvailable(f.Namespaces.Privileged)
	}
	if o.TempDir != "" {
		f.SharedTmp = SharedTmpPath(o.TempDir, f.EUID)
		if err := CheckSharedTmp(f.SharedTmp, f.EUID, true); err != nil {
			f.SharedTmp, f.SharedTmpWhy = "", err.Error()
		}
	}
	f.StateDirs, f.FilterCache, f.FilterCacheWhy = stateDirs(o.ReadOnly)
	if p.diagnose != nil {
		f.Doctor = p.diagnose(f)
	}
	return f
}

// probeHost is Start's work.
func probeHost(o Options) (*Facts, func(*Facts) *Diagnosis) {
	f := &Facts{UID: os.Getuid(), GID: os.Getgid(), EUID: os.Geteuid()}
	// What the kernel itself answers (the Landlock ABI and errata, the
	// calls MediationWorks tries, the seccomp actions) holds for this boot:
	// its id, recorded by content, ties the decision to it.
	fsdeps.ReadFile("/proc/sys/kernel/random/boot_id")
	var diagnose func(*Facts) *Diagnosis
	if o.Doctor {
		// Its forks first, in parallel with the rest.
		diagnose = startDiagnosis(o)
	}
	f.LandlockABI = landlock.ABI()
	if f.LandlockABI == 0 {
		_, _, f.LandlockErrno = unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	} else if v, err := landlock.Errata(); err != nil {
		if !errors.As(err, &f.LandlockErrataErrno) {
			f.LandlockErrataErrno = unix.EINVAL
		}
	} else {
		f.LandlockErrata = &v
	}
	if o.AssumeNamespaces {
		f.Namespaces, f.NamespacesAssumed = mountns.Assume()
	}
	if !f.NamespacesAssumed {
		f.Namespaces = mountns.Probe()
	}
	if host, err := cgroups.Detect(); err != nil {
		f.CgroupsWhy = err.Error()
	} else if host.Mode == cgroups.Unavailable {
		f.CgroupsWhy = cgroupfsMissing
	} else {
		f.Cgroups = host
	}
	f.SocketMediation = MediationWorks()
	f.FileMediation = FileMediationWorks()
	f.AuditRead = effectiveCap(unix.CAP_AUDIT_READ)
	_, _, f.Nofile = spawn.InitialState()
	return f, diagnose
}

// SharedTmpPath is the shared mount point of uid's private temp dirs in
// tempDir: a directory that stays, empty on the host, for the runs that
// mount a tmpfs of their own on it in their mount namespace. One
// directory for every run instead of one each saves every run a mkdir and
// an rmdir on the host's filesystem (and their journal writes), which is
// most of what a private temp dir costs at start-up.
func SharedTmpPath(tempDir string, uid int) string {
	return filepath.Join(tempDir, "sandbox-executable-tmp-uid"+strconv.Itoa(uid))
}

// CheckSharedTmp checks that dir is fit to be the shared mount point of
// uid's private temp dirs (spawn.JudgeSharedTmp, which the runner judges
// with again at the run): mounted over in every run's view, its host side
// is never written, but a directory another user planted (to see what a
// run leaves, or to swap it) must not be used. A name that is not there
// yet is fit when missing is (the run makes it). What it reads is
// recorded.
func CheckSharedTmp(dir string, uid int, missing bool) error {
	facts := func(fi fsdeps.Info, err error) spawn.FileFacts {
		if err != nil {
			var errno syscall.Errno
			if !errors.As(err, &errno) {
				errno = syscall.EIO
			}
			return spawn.FileFacts{Err: errno}
		}
		return spawn.FileFacts{UID: fi.UID(), Mode: fi.RawMode()}
	}
	parentInfo, parentErr := fsdeps.Stat(filepath.Dir(dir))
	parent, self := facts(parentInfo, parentErr), spawn.FileFacts{Err: syscall.ENOENT}
	var selfErr error
	if parentErr == nil {
		var selfInfo fsdeps.Info
		selfInfo, selfErr = fsdeps.Lstat(dir)
		self = facts(selfInfo, selfErr)
	}
	switch spawn.JudgeSharedTmp(parent, self, uint32(uid), missing) {
	case spawn.TmpFit:
		return nil
	case spawn.TmpParentUnread:
		return fmt.Errorf("shared temp dir mount point %s: %w", dir, parentErr)
	case spawn.TmpParentUnfit:
		return fmt.Errorf("shared temp dir mount point %s: its parent is not root's or uid %d's, or others can rename in it", dir, uid)
	case spawn.TmpUnread:
		return fmt.Errorf("shared temp dir mount point %s: %w", dir, selfErr)
	default:
		return fmt.Errorf("shared temp dir mount point %s: not a directory of uid %d with mode 0700 (%#o)", dir, uid, self.Mode)
	}
}

// Retry is f with its namespaces tried, for a run whose child failed
// before its program started while its namespaces were assumed
// (NamespacesAssumed), and whether trying changed them: when it did, the
// run is to be decided again from the facts Retry returns; when it did
// not, the failure was not the namespaces' and stands.
func (f *Facts) Retry() (*Facts, bool) {
	if !f.NamespacesAssumed {
		return f, false
	}
	tried := *f
	tried.Namespaces, tried.NamespacesAssumed = mountns.Probe(), false
	changed := tried.Namespaces.OK != f.Namespaces.OK || tried.Namespaces.Network != f.Namespaces.Network ||
		tried.Namespaces.Privileged != f.Namespaces.Privileged
	return &tried, changed
}

// stateDirs are the protected state directories, as canonical paths, and
// the filter cache in them.
func stateDirs(readOnly bool) ([]string, *seccomp.Cache, string) {
	var dirs []string
	if readOnly {
		dirs = runstate.Locations()
	} else if d, err := runstate.Protected(); err == nil {
		dirs = d
	}
	for i, d := range dirs {
		dirs[i] = canonical(d)
	}
	var dir string
	var key []byte
	var err error
	if readOnly {
		if dir, err = runstate.Lookup("bpf"); err == nil {
			key, err = runstate.LookupKey()
		}
	} else if dir, err = runstate.Dir("bpf"); err == nil {
		key, err = runstate.Key()
	}
	if err != nil {
		return dirs, nil, err.Error()
	}
	return dirs, &seccomp.Cache{Dir: dir, Key: key, ReadOnly: readOnly}, ""
}

// canonical is path with its symbolic links resolved (the Plan's paths are
// canonical), as far as it exists.
func canonical(path string) string {
	if real, err := fsdeps.EvalSymlinks(path); err == nil {
		return real
	}
	if parent, err := fsdeps.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(parent, filepath.Base(path))
	}
	return path
}

// mediation and fileMediation are MediationWorks' and
// FileMediationWorks' answers in this decision (they read ptrace_scope).
var mediation, fileMediation fsdeps.Memo[bool]

// openat2InRoot reports whether the kernel (and whatever filter the helper
// runs under) has openat2 with RESOLVE_IN_ROOT: a feature probe on "/",
// whose answer is the kernel's (the boot's), not a file's.
func openat2InRoot() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// FileMediationWorks reports whether the supervisor can read a sandboxed
// process's memory (process_vm_readv) and look its paths up in its root
// (openat2 RESOLVE_IN_ROOT, 5.6): what the filesystem mediation needs
// (package fsmed), besides the seccomp listener. Unlike the socket
// mediation it takes no descriptor out of the program (pidfd_getfd, which
// Docker's default profile refuses): it opens the program's directories
// through /proc.
func FileMediationWorks() bool {
	return fileMediation.Get(func() bool {
		if b, err := fsdeps.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
			if v := strings.TrimSpace(string(b)); v == "3" || (v == "2" && !effectiveCap(unix.CAP_SYS_PTRACE)) {
				return false
			}
		}
		if !openat2InRoot() {
			return false
		}
		src, dst := [1]byte{1}, [1]byte{}
		_, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0)
		return err == nil && dst[0] == 1
	})
}

// effectiveCap reports whether this thread holds capability c.
func effectiveCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if unix.Capget(&hdr, &d[0]) != nil {
		return false
	}
	return d[c/32].Effective&(1<<(c%32)) != 0
}

// MediationWorks reports whether this kernel (and whatever filter the
// helper itself runs under) lets the supervisor take a process's socket
// (pidfd_open, pidfd_getfd, 5.6), read its memory and resolve paths in its
// root (openat2 RESOLVE_IN_ROOT, 5.6).
func MediationWorks() bool {
	return mediation.Get(func() bool {
		// Yama's ptrace_scope 2 keeps pidfd_getfd and process_vm_readv
		// to CAP_SYS_PTRACE, 3 from everyone: every call would then be
		// refused (the supervisor is the program's ancestor, which scope
		// 1 allows).
		if b, err := fsdeps.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
			if v := strings.TrimSpace(string(b)); v == "3" || (v == "2" && os.Geteuid() != 0) {
				return false
			}
		}
		pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err != nil {
			return false
		}
		defer unix.Close(pidfd)
		fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
		if err != nil {
			return false
		}
		unix.Close(fd)
		if !openat2InRoot() {
			return false
		}
		src, dst := [1]byte{1}, [1]byte{}
		_, err = unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &dst[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0)
		return err == nil && dst[0] == 1
	})
}
