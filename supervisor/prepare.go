// Package supervisor decides how a Plan is enforced on this host (Prepare),
// readies the host for it (Ready), lays the decision out for the spawn
// stage's runner, which carries out every run (Recipe), and serves what the
// runner asks of Go while the program runs (Serve): socket mediation, the
// seccomp listener, the allowlist proxy, the figures of the end.
package supervisor

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/fsdeps"
	"sandbox-executable/fsmed"
	"sandbox-executable/hostfacts"
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/policy"
	"sandbox-executable/remedy"
	"sandbox-executable/rlimit"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
	"sandbox-executable/spawn"
)

// Config is one run, as the command line asked for it.
type Config struct {
	Plan *policy.Plan
	// Argv is the program and its arguments; Argv[0] is searched like
	// execvp does, on the program's own PATH.
	Argv []string
	// KeepFDs stay open in the program; every other fd above 2 is closed.
	KeepFDs []int
	// AllowDegraded lets a run go ahead when the kernel cannot enforce part
	// of the policy's boundary; what is missing is then reported.
	AllowDegraded bool
	// LogDenials asks the kernel to log Landlock denials (ABI 7).
	LogDenials bool
	// Grace is how long the tree gets between SIGTERM and SIGKILL on a
	// timeout; 0 means DefaultGrace.
	Grace time.Duration
	// FSMode is FSAuto (the default, also ""), FSExact or FSLandlock; the
	// caller parses its own flag into one of them.
	FSMode string
	// Words renders the remedies that refusals, reasons and degradations
	// advise (the CLI: its flags); nil says them in plain words.
	Words remedy.Words
	// Cwd is the program's working directory (the helper's own).
	Cwd string
	// TempDir is where a private temp dir goes (the helper's own temp
	// dir), and RunID names it there: both are chosen by the caller, so
	// that Prepare decides the whole run from its inputs alone.
	TempDir string
	RunID   string
	// CgroupParent is where the run's cgroup goes (see cgroups.Options);
	// empty picks the host's default.
	CgroupParent string
	// MoveSelf lets the cgroup code move this process into a leaf of its
	// own cgroup to enable controllers there (cgroups.Options.MoveSelf),
	// or into a systemd user scope: the command line, which is the
	// supervisor alone, allows it; a library caller decides for its own
	// process. Without it, a run that needs either is not made ready
	// (Ready fails).
	MoveSelf bool
	// Protect are more paths the program may neither read nor write,
	// whatever its policy, as the helper's state directories: the
	// resident decider's socket.
	Protect []string
	// CPUQuota, in CPUs, caps the tree's CPU bandwidth (cpu.max); 0 sets
	// no cap.
	CPUQuota float64
	// Warn, when set, receives one line for each degradation decided while
	// the run is set up (they are also in the Result).
	Warn func(string)
	// Log receives the supervisor's structured log (nil: none).
	Log *slog.Logger
	// OnDenial, when set, receives every denied operation the supervisor
	// can see: with LogDenials, the seccomp filter's refusals (through user
	// notifications); always, the allowlist proxy's refusals. It is called
	// from the supervisor's goroutines, one call at a time.
	OnDenial func(Denial)
	// Report asks for the cgroup's figures in the Result (Result.Cgroup):
	// they are read after the run only when someone will look at them.
	// With LogDenials, it also has the run read its file denials where it
	// can (FileDenialsReport).
	Report bool
	// Standalone says the policy is the built-in default with the
	// command line's flags composed on it: a file denial's advice names
	// flags (--rw PATH), not the policy's fields.
	Standalone bool
}

// Filesystem modes.
const (
	// FSAuto picks exact mode where a mount namespace can be had, and
	// refuses otherwise unless degradation is allowed.
	FSAuto = "auto"
	// FSExact masks denied paths and makes everything outside the
	// writable roots read-only in a mount namespace, under Landlock.
	FSExact = "exact"
	// FSLandlock uses Landlock alone: denials become narrowing, and
	// metadata changes outside the roots are not stopped.
	FSLandlock = "landlock"
)

// DefaultGrace is the time between SIGTERM and SIGKILL on a timeout.
const DefaultGrace = 2 * time.Second

// Prepared is every decision for a run, made but not yet applied: Ready
// readies the host for it, Recipe lays it out for the runner, which builds
// the kernel objects and carries it out, and Service is what Go serves it
// from. It is what --explain prints.
type Prepared struct {
	Plan       *policy.Plan
	Argv       []string
	Candidates []string
	Landlock   *landlock.Spec
	View       *mountns.View
	Seccomp    *seccomp.Program
	Rlimits    []rlimit.Limit
	// Degradations lists what is not enforced, each with its reason; empty
	// unless AllowDegraded let the run go ahead anyway.
	Degradations []string
	Enforcement  Enforcement

	cfg    Config
	facts  *hostfacts.Facts
	env    []string // the program's environment
	tmpDir string   // the private temp dir the run makes, or ""
	// tmpShared: tmpDir is the shared mount point (hostfacts.SharedTmp),
	// which stays, not a directory of the run's own.
	tmpShared bool
	// audit is whether the run reads its file denials (decideAudit).
	audit FileDenialsReport
	// freshRules are the Landlock rules the child gives again to the
	// mounts it makes new (their inodes are not the host's).
	freshRules []spawn.Op
	fs         fsChoice
	net        netChoice
	sockets    socketChoice
	cgroupPlan cgroupPlan
	// proc is the process world the program gets, procDegraded what of
	// it is lost (decideView); hostRules are the seccomp rules this
	// host's mode added to the Plan's (decideSeccomp).
	proc         ProcessReport
	procDegraded string
	// files is the filesystem mediation of Landlock-only mode's split
	// directories (decideLandlock), or nil.
	files     *fsmed.Config
	hostRules []policy.SyscallRule
	nofile    spawn.Rlimit

	// What Ready made: the cgroup's directories (cgroupReady), a private
	// temp dir of the run's own with its record and lock, the host
	// proxy's listener; and why the recipe must not be stored.
	cgroupDirs   []cgroups.RecipeDir
	cgroupMade   []string
	cgroupReady  bool
	ownTmp       string
	ownTmpRecord string
	tmpLock      *os.File
	hostListener net.Listener
	notStored    string
}

// cgroupPlan is the decided cgroup of a run.
type cgroupPlan struct {
	host   *cgroups.Host // nil: no cgroup filesystem to use
	why    string        // why not, when host is nil
	limits cgroups.Limits
}

// Enforcement summarizes how each part of the Plan is enforced on this host.
type Enforcement struct {
	Filesystem FilesystemReport
	Network    NetworkReport
	Landlock   LandlockReport
	Seccomp    SeccompReport
	Cgroup     CgroupReport
	Process    ProcessReport
	Timeout    string
}

// ProcessReport says what process world the program lives in: its own
// namespaces and init, and the capabilities it keeps.
type ProcessReport struct {
	// Namespaces are the namespaces the program gets of its own
	// ("pid", "ipc", "uts", "cgroup", "mount", "user", "network").
	Namespaces []string
	// Init is true when a small init is PID 1 of the program's PID
	// namespace: it forwards signals, reaps, and its end ends the
	// namespace (nothing the program starts outlives it).
	Init bool
	// Proc and Dev say what the program's /proc and /dev are.
	Proc string
	Dev  string
	// Capabilities says what the program keeps: none.
	Capabilities string
	// NotEnforced lists the process isolation this host cannot give.
	NotEnforced []string
}

// noCapabilities is what every program keeps, as the reports say it.
const noCapabilities = "none: effective, permitted, inheritable, ambient and bounding sets empty; SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_NO_CAP_AMBIENT_RAISE set and SECBIT_KEEP_CAPS clear, each locked"

// processReport describes the process world of a run that is isolated
// (namespaces could be had) or not, with view's namespace flags.
func processReport(isolated bool, flags uintptr, netns bool, why string) (ProcessReport, string) {
	r := ProcessReport{Capabilities: noCapabilities}
	if !isolated {
		r.Capabilities = capabilitiesWithoutNamespaces(r.Capabilities)
		r.Namespaces = []string{}
		r.Proc, r.Dev = "the host's", "the host's"
		r.NotEnforced = []string{
			"no PID namespace: the program sees every process on the host and can signal, renice and prlimit the user's other processes and its own supervisor",
			"no IPC namespace: the program reaches the host's SysV IPC and POSIX message queues",
			"no UTS namespace",
			"no private /dev: device nodes are protected by file permissions alone",
		}
		return r, "no PID, IPC or UTS namespace and no private /dev (" + why + "): the program shares the host's process world and devices"
	}
	for _, n := range []struct {
		flag uintptr
		name string
	}{{unix.CLONE_NEWPID, "pid"}, {unix.CLONE_NEWIPC, "ipc"}, {unix.CLONE_NEWUTS, "uts"}, {unix.CLONE_NEWNS, "mount"}, {unix.CLONE_NEWUSER, "user"}, {unix.CLONE_NEWNET, "network"}} {
		if flags&n.flag != 0 {
			r.Namespaces = append(r.Namespaces, n.name)
		}
	}
	r.Namespaces = append(r.Namespaces, "cgroup")
	if netns && flags&unix.CLONE_NEWNET == 0 {
		r.Namespaces = append(r.Namespaces, "network")
	}
	r.Init = true
	r.Proc = "private: a procfs of the program's PID namespace, read-only"
	r.Dev = "private: a read-only tmpfs with " + strings.Join(mountns.Devices, ", ") + " (where the host has them), pts (the host's, for the caller's terminal), ptmx, shm (empty, its own), fd, stdin, stdout, stderr; no block, memory, console or kernel-log device"
	return r, ""
}

// LandlockReport is the Landlock part of Enforcement.
type LandlockReport struct {
	ABI         int
	HandledFS   []string
	HandledNet  []string
	Scoped      []string
	Rules       int
	Narrowed    []landlock.Narrowing
	NotEnforced []landlock.Gap
}

// FilesystemReport says which filesystem mode runs and why, and what it
// does beyond Landlock.
type FilesystemReport struct {
	Mode string
	Why  string
	// Exact mode: the masked paths, the paths bound read-only, the
	// placeholders created for denied names that do not exist yet.
	Masked       []string
	ReadOnly     []string
	Placeholders []string
	Narrowed     []mountns.Narrowing
	// PrivateTmp is true when the program gets a private temp dir (TMPDIR),
	// because the policy makes neither /tmp nor $TMPDIR writable.
	PrivateTmp bool
	// PrivateTmpBytes is the size of the tmpfs the private temp dir is,
	// when it is one (the run has a mount namespace).
	PrivateTmpBytes uint64
	// PrivateTmpBound says how the private temp dir is bounded, or that it
	// is not.
	PrivateTmpBound string
	// ScratchCaches are the host's build caches the program writes into a
	// throwaway overlay of (the built-in default, exact mode): it reads the
	// warm cache, its writes are gone with the run, the host's directory is
	// never written. ScratchCachesNote says why caches the Plan names stay
	// read-only instead.
	ScratchCaches     []string
	ScratchCachesNote string
	// PersistCaches says how a run's additions to the scratch caches are
	// written back (--persist-cache), or why they cannot be.
	PersistCaches string
	// FreshCaches are the variables that point a tool whose cache does
	// not exist yet at an empty directory of the private temp dir,
	// NAME=VALUE (why).
	FreshCaches []string
	// NotEnforced lists what this mode cannot stop.
	NotEnforced []string
}

// CgroupReport is the planned cgroup: where and what limits. Whether it
// could be made is known only when the run starts (the report says).
type CgroupReport struct {
	HostMode         cgroups.Mode
	MemoryBytes      uint64
	Pids             uint32
	CPUQuotaCores    float64
	CPUBudgetSeconds uint64
	Parent           string
	Why              string
}

// SeccompReport is the seccomp part of Enforcement.
type SeccompReport struct {
	Rules           int
	Instructions    int
	BadArch         string
	Library         string
	NoNewPrivileges bool
	// HostRules are rules this host's mode adds to the Plan's.
	HostRules []policy.SyscallRule
	// Observed is true when denied calls are answered through user
	// notifications, so that each one is seen (--log-denials).
	Observed bool
	// Cache says where the program came from: "loaded" from the compiled-
	// filter cache (its tag verified under this user's key), "compiled"
	// (and stored), "rejected" (an entry failed the checks: it was not
	// loaded, the program was compiled and the entry replaced), or "off"
	// (no state directory).
	Cache string
	// CacheRejected says what was wrong with a rejected entry.
	CacheRejected string
}

// RefusedError is returned when the host cannot enforce what the policy
// asks and degradation was not allowed. Nothing was started.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Prepare makes every decision for cfg from what the host offers (f, probed
// once by hostfacts.Probe), without creating any kernel object, writing
// anything or starting anything: what it returns is what Run carries out.
func Prepare(cfg Config, f *hostfacts.Facts) (*Prepared, error) {
	p := withStateProtected(cfg.Plan, f.StateDirs, cfg.Protect)
	pr := &Prepared{Plan: p, Argv: cfg.Argv, cfg: cfg, facts: f}
	pr.Candidates = execCandidates(cfg.Argv[0], p.Env.Vars)
	// The decisions, in the order each depends on the ones before.
	for _, decide := range []func() error{
		pr.decideFilesystem, // exact or Landlock-only; namespaces; private temp dir
		pr.decideNetwork,    // network mode's mechanism; unix sockets
		pr.decideEnvironment,
		pr.decideView,     // the mount table the child builds; the process world
		pr.decideAudit,    // whether the run reads its file denials
		pr.decideLandlock, // the ruleset, and its rules given again in the child
		pr.decideBoundary, // what is not enforced: refused, or degraded when allowed
		pr.decideSeccomp,  // the filter, compiled or taken from the cache
		pr.decideLimits,   // rlimits and the cgroup's limits
	} {
		if err := decide(); err != nil {
			return nil, err
		}
	}
	pr.Enforcement = pr.enforcementReport()
	return pr, nil
}

func (pr *Prepared) exact() bool    { return pr.fs.Mode == FSExact }
func (pr *Prepared) isolated() bool { return pr.fs.namespaces.OK }

// decideFilesystem chooses the filesystem mode from the namespaces the host
// gives, refusing Landlock-only mode unless degradation is allowed, and
// whether the program gets a private temp dir.
func (pr *Prepared) decideFilesystem() error {
	cfg, f, p := pr.cfg, pr.facts, pr.Plan
	fs, err := chooseFS(cfg, f.Namespaces)
	if err != nil {
		return err
	}
	if !fs.namespaces.OK && !cfg.AllowDegraded {
		// One line: what refused, and the setting that unlocks it.
		return &RefusedError{Reason: "refusing to run: " + fs.namespaces.Why + "; " + fs.namespaces.Fix +
			", or pass --allow-degraded for Landlock-only mode"}
	}
	fs.PrivateTmp = needsPrivateTmp(p)
	if len(existingCaches(p.Filesystem.ScratchCaches)) > 0 && fs.Mode == FSExact {
		fs.overlayOK, fs.overlayWhy = f.OverlayOK, f.OverlayWhy
		if !f.OverlayOK && f.OverlayWhy == "" {
			fs.overlayWhy = "overlayfs was not probed"
		}
	}
	pr.fs = fs
	return nil
}

// decideNetwork chooses how the network mode is enforced, and with it how
// unix sockets are.
func (pr *Prepared) decideNetwork() error {
	cfg, f, abi, isolated := pr.cfg, pr.facts, pr.facts.LandlockABI, pr.isolated()
	nw, err := chooseNetwork(pr.Plan, pr.exact() && pr.fs.namespaces.Network, abi, cfg.AllowDegraded, netnsWhy(f.Namespaces), cfg.Words,
		func(netns bool) socketChoice {
			return chooseSockets(abi, isolated, netns, f.SocketMediation)
		})
	if err != nil {
		return err
	}
	pr.net, pr.sockets = nw, nw.sockets
	return nil
}

// decideEnvironment names the private temp dir and gives the program its
// environment: TMPDIR, and the proxy's address where it has one.
func (pr *Prepared) decideEnvironment() error {
	pr.env = pr.Plan.Env.Vars
	if pr.fs.PrivateTmp {
		// With a mount namespace the host directory is only where the
		// run's tmpfs is mounted: every run can use the same one.
		if pr.exact() && pr.facts.SharedTmp != "" {
			pr.tmpDir, pr.tmpShared = pr.facts.SharedTmp, true
		} else {
			pr.tmpDir = filepath.Join(pr.cfg.TempDir, tmpPrefix+pr.cfg.RunID)
		}
		pr.env = withEnv(pr.env, "TMPDIR", pr.tmpDir)
		for _, c := range pr.Plan.Filesystem.ScratchCaches {
			if c.Exists || c.EnvVar == "" {
				continue
			}
			// A fresh HOME: the tool would fail to make its cache in
			// the read-only home; an empty one in the private temp dir
			// is gone with the run, as a scratch cache's writes are.
			dir := filepath.Join(pr.tmpDir, "cache", filepath.Base(c.Path))
			pr.env = withEnv(pr.env, c.EnvVar, dir)
			pr.fs.FreshCaches = append(pr.fs.FreshCaches, c.EnvVar+"="+dir+" ("+c.Tool+": "+c.Path+" does not exist)")
		}
	}
	if pr.net.proxy && !pr.net.hostProxy {
		pr.env = proxyEnv(pr.env, "127.0.0.1:"+strconv.Itoa(ProxyPort))
	}
	return nil
}

// decideView builds the mount table of the program's namespace (the whole
// view in exact mode; only the process world's in Landlock-only mode with
// namespaces), what becomes of the scratch caches, how the private temp
// dir is bounded, and the process world the program gets.
func (pr *Prepared) decideView() error {
	p, fs, exact := pr.Plan, &pr.fs, pr.exact()
	if exact {
		view, err := mountns.Build(p, pr.viewOptions())
		if err != nil {
			return err
		}
		pr.View = view
		fs.Masked, fs.ReadOnly, fs.Placeholders, fs.Narrowed = view.Masked, view.ReadOnly, view.Placeholders, view.Narrowed
	}
	if p.Filesystem.PersistCaches != "" {
		fs.PersistCaches = "nothing to write back: no scratch cache is overlaid in this run"
	}
	if sc := existingCaches(p.Filesystem.ScratchCaches); len(sc) > 0 {
		switch {
		case exact && fs.PrivateTmp && !fs.overlayOK:
			fs.ScratchCachesNote = "the build caches stay read-only: " + fs.overlayWhy
		case exact && fs.PrivateTmp:
			for _, c := range sc {
				fs.ScratchCaches = append(fs.ScratchCaches, c.Path)
			}
			if p.Filesystem.PersistCaches != "" {
				fs.PersistCaches = "when the program exits with status 0, what it added to each scratch cache (new names only: directories and regular files, without set-id bits) is written back to the host's cache (" + p.Filesystem.PersistCaches + ")"
			}
		case exact:
			fs.ScratchCachesNote = "the build caches stay read-only: their throwaway layers live on the private temp dir's tmpfs, and this policy has none"
		default:
			fs.ScratchCachesNote = "the build caches stay read-only: a throwaway overlay needs the exact filesystem mode (a mount namespace)"
		}
	}
	if !exact && pr.isolated() {
		view, err := mountns.Isolation(pr.viewOptions())
		if err != nil {
			return err
		}
		pr.View = view
	}
	var nsFlags uintptr
	if pr.View != nil {
		nsFlags = pr.View.NamespaceFlags
	}
	if fs.PrivateTmp {
		if pr.View != nil {
			size, why := privateTmpSize(p.Limits, pr.tmpfsMounts())
			fs.PrivateTmpBytes = size
			fs.PrivateTmpBound = fmt.Sprintf("a tmpfs of %d MiB (%s) in the program's mount namespace: writing more fails with ENOSPC; its pages are memory, charged to the memory cgroup of the process that writes them (the run's); nothing reaches the host's directory", size>>20, why)
		} else {
			fs.PrivateTmpBound = "not bounded: without a mount namespace the private temp dir is a directory on the host's filesystem, and max_disk_mb limits each file only"
			fs.NotEnforced = append(fs.NotEnforced, "the private TMPDIR's size: no mount namespace for a tmpfs (max_disk_mb limits each file only)")
		}
	}
	pr.proc, pr.procDegraded = processReport(pr.isolated(), nsFlags, pr.net.netns, fs.namespaces.Why)
	return nil
}

// decideLandlock computes the Landlock ruleset, with the private temp
// dir's rule, and the rules the child gives again to the mounts it makes.
func (pr *Prepared) decideLandlock() error {
	p, exact, abi := pr.Plan, pr.exact(), pr.facts.LandlockABI
	// In exact mode the mounts enforce the read side; Landlock need only
	// handle it where the program could clone a mount around a mask:
	// as root with the mount system calls allowed (allow_namespaces).
	// Read-denied paths that do not exist yet outside the roots have no
	// mount: Landlock keeps them unreadable should they appear; and a
	// masked file's mask covers only the directory entry it was mounted
	// on: Landlock keeps the name unreadable should the file be replaced.
	readsByMounts := exact && (!pr.fs.namespaces.Privileged || !p.Seccomp.AllowNamespaces)
	var late, maskedFiles, lateWrite []string
	if exact {
		late, maskedFiles, lateWrite = pr.View.LateReadDenied, pr.View.MaskedFiles, pr.View.LateWriteDenied
	}
	spec := landlock.Compute(p, landlock.Options{ABI: abi, Exact: exact, ReadOnlyOutsideRoots: exact, ReadsByMounts: readsByMounts,
		LogDenials: pr.cfg.LogDenials || pr.audit.Read, LateReadDenied: late, MaskedFiles: maskedFiles, LateWriteDenied: lateWrite,
		ResolveUnix: pr.net.sockets.landlock, Errata: pr.facts.LandlockErrata})
	if pr.tmpDir != "" && !pr.tmpShared {
		// A fresh private directory: reading it is as safe as writing it.
		// (The shared mount point's rule is given only to the tmpfs on it,
		// in the child: freshRules.)
		spec = spec.WithRule(landlock.Rule{Path: pr.tmpDir, Access: landlock.ReadWrite, Required: true})
	}
	pr.Landlock = spec
	pr.freshRules = freshRules(spec, pr.View, pr.tmpDir)
	pr.decideFiles()
	if g := p.Filesystem.GitDirs; len(g) > 0 && pr.files == nil {
		// The git directory's top level is split: without the
		// supervisor making its entries (index.lock, ORIG_HEAD) no
		// commit could be made, and without Landlock nothing would keep
		// its hooks and links out.
		why := "this kernel has no Landlock, which keeps what git runs or loads, and any link, out of " + g[0].Path
		if abi >= 1 {
			why = "the supervisor cannot make the entries of " + g[0].Path + " for the program on this host (it needs to read the program's memory, which Yama's ptrace_scope forbids here, and openat2's RESOLVE_IN_ROOT)"
		}
		return &RefusedError{Reason: "refusing to run: " + g[0].From + ": " + why + "; drop " + g[0].From + " and commit outside the sandbox"}
	}
	return nil
}

// decideFiles has the supervisor make, remove and rename the entries of the
// directories Landlock-only mode splits for the program (package fsmed),
// where this host lets it: a root's top level then works as it would
// without the sandbox, but for its protected names.
func (pr *Prepared) decideFiles() {
	spec := pr.Landlock
	// Exact mode splits only for a writable git directory (its own top
	// level, and the root's above it).
	if (pr.exact() && len(pr.Plan.Filesystem.GitDirs) == 0) || len(spec.WriteSplits) == 0 || spec.ABI < 1 || !pr.facts.FileMediation {
		return
	}
	c := &fsmed.Config{ABI: spec.ABI}
	for _, r := range pr.Plan.Filesystem.WritableRoots {
		c.Roots = append(c.Roots, r.Path)
	}
	if pr.tmpDir != "" {
		c.Roots = append(c.Roots, pr.tmpDir)
	}
	effect := map[string]string{}
	for _, sp := range spec.WriteSplits {
		d := fsmed.Dir{Path: sp.Dir, Names: sp.Names, Git: sp.Git}
		if fi, err := fsdeps.Lstat(sp.Dir); err == nil {
			d.Dev, d.Ino = fi.Dev(), fi.Ino()
		}
		c.Dirs = append(c.Dirs, d)
		effect[sp.Dir] = "the supervisor makes, removes and renames entries directly in it for the program, never " + strings.Join(sp.Names, ", ")
		if sp.Git {
			effect[sp.Dir] += "; in this writable git directory no link, FIFO or socket is made, nor anything moved in or out"
		}
	}
	narrowed := slices.Clone(spec.Narrowed)
	for i, n := range narrowed {
		if e, ok := effect[n.Dir]; ok && n.Effect == landlock.WriteSplitEffect {
			narrowed[i].Effect = e
		}
	}
	s := *spec
	s.Narrowed = narrowed
	pr.Landlock, pr.files = &s, c
}

// decideBoundary gathers what of the write boundary and the process world
// is not enforced here: a refusal, unless degradation is allowed, which
// then lists each loss.
func (pr *Prepared) decideBoundary() error {
	var boundary []string
	for _, g := range pr.Landlock.Gaps {
		if g.WriteBoundary {
			if g.Right == "landlock" { // the whole of Landlock: its effect says so
				boundary = append(boundary, g.Effect)
				continue
			}
			boundary = append(boundary, fmt.Sprintf("landlock %s: %s", g.Right, g.Effect))
		}
	}
	if pr.fs.degraded != "" {
		boundary = append(boundary, pr.fs.degraded)
	}
	if pr.procDegraded != "" {
		boundary = append(boundary, pr.procDegraded)
	}
	if len(boundary) > 0 {
		if !pr.cfg.AllowDegraded {
			return &RefusedError{Reason: "refusing to run: " + strings.Join(boundary, "; ") +
				" (Landlock ABI " + fmt.Sprint(pr.facts.LandlockABI) + "; " + pr.cfg.Words.Say(remedy.AllowDegraded) + " runs anyway and reports it)"}
		}
		pr.Degradations = append(pr.Degradations, boundary...)
	}
	if pr.net.degraded != "" {
		pr.Degradations = append(pr.Degradations, pr.net.degraded)
	}
	return nil
}

// decideSeccomp compiles the filter: the Plan's rules (the strict model
// carries out its intent), plus what this host's mode adds: with
// mediation, the socket calls go to the supervisor (where the Plan only
// logs one, it is mediated instead); without it or Landlock, no unix
// sockets at all.
func (pr *Prepared) decideSeccomp() error {
	p, cfg := pr.Plan, pr.cfg
	if err := seccomp.StrictModel(&p.Seccomp, p.Network.Mode, seccomp.Table{}); err != nil {
		return err
	}
	host := seccomp.Host{DenyUnixSockets: pr.net.denyUnix, MediateFiles: pr.files != nil}
	if pr.net.sockets.how == socketsMediated {
		host.Mediate = sockmed.Syscalls
	}
	all, hostRules := seccomp.Assemble(p.Seccomp.Rules, host)
	prog, err := seccomp.Compile(&policy.Seccomp{Rules: all}, seccomp.Options{Notify: cfg.LogDenials, Cache: pr.facts.FilterCache})
	if err != nil {
		return err
	}
	pr.Seccomp, pr.hostRules = prog, hostRules
	if prog.Cache == seccomp.CacheRejected && cfg.Log != nil {
		cfg.Log.Warn("seccomp cache entry rejected: compiled again and replaced", "why", prog.CacheRejection)
	}
	if pr.facts.FilterCache == nil && cfg.Log != nil {
		cfg.Log.Warn("no seccomp cache", "error", pr.facts.FilterCacheWhy)
	}
	return nil
}

// decideLimits gives the program its rlimits and the cgroup its limits and
// host.
func (pr *Prepared) decideLimits() error {
	l, f := pr.Plan.Limits, pr.facts
	pr.nofile = f.Nofile
	pr.Rlimits = rlimit.For(l, rlimit.Options{NofileCur: pr.nofile.Cur, NofileMax: pr.nofile.Max})
	pr.cgroupPlan.limits = cgroups.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUQuotaCores: pr.cfg.CPUQuota,
		CPUAccounting: l.CPUSeconds > 0}
	if f.Cgroups == nil {
		pr.cgroupPlan.why = f.CgroupsWhy
	} else {
		pr.cgroupPlan.host = f.Cgroups
	}
	return nil
}

// enforcementReport is what the decisions enforce, as --explain and the
// report print it.
func (pr *Prepared) enforcementReport() Enforcement {
	p, cfg, spec, prog := pr.Plan, pr.cfg, pr.Landlock, pr.Seccomp
	cg := CgroupReport{MemoryBytes: p.Limits.MemoryBytes, Pids: p.Limits.Pids, CPUQuotaCores: cfg.CPUQuota,
		CPUBudgetSeconds: p.Limits.CPUSeconds, Parent: cfg.CgroupParent, HostMode: cgroups.Unavailable, Why: pr.cgroupPlan.why}
	if h := pr.cgroupPlan.host; h != nil {
		cg.HostMode = h.Mode
	}
	return Enforcement{
		Filesystem: pr.fs.FilesystemReport,
		Network:    pr.net.NetworkReport,
		Landlock: LandlockReport{
			ABI:         pr.facts.LandlockABI,
			HandledFS:   spec.HandledFS.Names(),
			HandledNet:  landlock.NetNames(spec.HandledNet),
			Scoped:      landlock.ScopeNames(spec.Scoped),
			Rules:       len(spec.Rules) + len(spec.Ports),
			Narrowed:    spec.Narrowed,
			NotEnforced: coveredGaps(spec.Gaps, pr.isolated(), pr.net.netns, pr.net.sockets),
		},
		Seccomp: SeccompReport{
			Rules:           prog.Rules,
			Instructions:    len(prog.BPF) / 8,
			BadArch:         "kill_process",
			Library:         seccomp.LibraryVersion(),
			NoNewPrivileges: true,
			HostRules:       pr.hostRules,
			Observed:        prog.Notify,
			Cache:           prog.Cache,
			CacheRejected:   prog.CacheRejection,
		},
		Cgroup:  cg,
		Process: pr.proc,
		Timeout: fmt.Sprintf("%d s wall clock for the whole tree (SIGTERM, %s grace, SIGKILL; exit 124)", p.Limits.TimeoutSeconds, grace(cfg)),
	}
}

// coveredGaps returns Landlock's gaps with what another layer covers said
// in each: without signal scoping (ABI < 6), no process outside the PID
// namespace can be named, so none can be signalled; abstract unix sockets
// are per network namespace, or refused by the supervisor's mediation.
func coveredGaps(gaps []landlock.Gap, pidns, netns bool, sockets socketChoice) []landlock.Gap {
	out := make([]landlock.Gap, 0, len(gaps))
	for _, g := range gaps {
		if g.Right == "scope" && pidns {
			g.Effect = "no Landlock scoping: signals are covered by the PID namespace (no process outside it can be named)"
			switch {
			case netns:
				g.Effect += ", abstract unix sockets by the network namespace"
			case sockets.how == socketsMediated:
				g.Effect += ", abstract unix sockets by the supervisor, which connects only to the sandbox's own"
			default:
				g.Effect += "; abstract unix datagram sockets outside the sandbox are reachable from a socketpair socket"
			}
		}
		out = append(out, g)
	}
	return out
}

// freshRules are the Landlock rules the child gives again, in its own view,
// to the directories its mounts make new: the private /proc and /dev, the
// private temp dir's tmpfs (a rule names an inode, and a mount over a
// directory hides the rules given to the one below), and the scratch
// caches' overlays, which are the program's to write (their upper layer is
// a throwaway tmpfs: mountns.View.scratchCaches).
func freshRules(spec *landlock.Spec, v *mountns.View, tmp string) []spawn.Op {
	if v == nil || spec.ABI < 1 {
		return nil
	}
	var ops []spawn.Op
	if v.Init {
		for _, r := range spec.DirRulesWithin([]string{"/dev", "/proc"}) {
			ops = append(ops, spawn.LandlockRule(r.Path, uint64(r.Access), "landlock rule for the private "+r.Path).Taking(spawn.AnyIdent, spawn.Ident{}))
		}
	}
	if tmp != "" {
		// Made by the run, so not there to look at yet; nothing is
		// beneath it but what the program makes.
		ops = append(ops, spawn.LandlockRule(tmp, uint64(landlock.ReadWrite&spec.HandledFS), "landlock rule for the private "+tmp).Taking(spawn.AnyIdent, spawn.Ident{}))
	}
	for _, dir := range v.ScratchCaches {
		ops = append(ops, spawn.LandlockRule(dir, uint64(landlock.ReadWrite&spec.HandledFS), "landlock rule for the scratch cache "+dir).Taking(spawn.AnyIdent, spawn.Ident{}))
	}
	return ops
}

// withStateProtected returns p with the helper's state directories (the
// compiled-filter cache, the key that authenticates it, the placeholder
// locks; see runstate.Protected) denied for reading and writing wherever
// they are, not only where they lie in a writable root: every later run
// trusts what is in them and the key must stay secret, so no sandboxed
// program may read, change or replace them, whatever its own policy. Exact
// mode masks each; Landlock-only mode leaves them out of its rules, which
// narrows the directories on the way to them like any denied path. p itself
// is not changed. Without a state directory there is nothing to protect
// (the cache is off, and the runs that need placeholders fail on their own).
// more are the caller's further paths (Config.Protect), denied alike.
func withStateProtected(p *policy.Plan, dirs, more []string) *policy.Plan {
	c := *p // a copy in any case: Prepare fills in its seccomp rules
	c.Notes = slices.Clone(p.Notes)
	c.Filesystem.ReadDenied = append([]policy.DeniedPath(nil), p.Filesystem.ReadDenied...)
	deny := func(path, src string) {
		_, err := fsdeps.Lstat(path)
		c.Filesystem.ReadDenied = append(c.Filesystem.ReadDenied, policy.DeniedPath{Path: path, Source: src, Exists: err == nil})
	}
	for i, dir := range dirs {
		src := "sandbox-executable's state directory"
		if i > 0 {
			src += " (where it would move to, made in advance)"
		}
		deny(dir, src)
	}
	for _, path := range more {
		deny(path, "sandbox-executable's resident decider")
	}
	return &c
}

// onHostPty reports whether a standard descriptor of the helper, and so of
// the program, is a pty of the host's devpts: the Plan's writable devices
// hold the terminals on descriptors 0-2 (policy.Inputs.TerminalDevices).
func onHostPty(p *policy.Plan) bool {
	return slices.ContainsFunc(p.Filesystem.WritableDevices, func(d string) bool { return strings.HasPrefix(d, "/dev/pts/") })
}

// viewOptions are the mount namespace's options for this run, the private
// temp dir and the proxy's listener included.
func (pr *Prepared) viewOptions() mountns.Options {
	o := mountns.Options{Privileged: pr.fs.namespaces.Privileged, UID: pr.facts.UID, GID: pr.facts.GID, Cwd: pr.cfg.Cwd,
		Network: pr.net.netns, Isolate: pr.fs.namespaces.OK, PrivateTmp: pr.tmpDir, Terminal: onHostPty(pr.Plan)}
	o.PrivateTmpBytes, _ = privateTmpSize(pr.Plan.Limits, pr.tmpfsMounts())
	if pr.net.proxy && !pr.net.hostProxy {
		o.Proxy = &mountns.ProxyListener{Port: ProxyPort}
	}
	if pr.fs.Mode == FSExact {
		if pr.fs.PrivateTmp && pr.fs.overlayOK {
			for _, c := range existingCaches(pr.Plan.Filesystem.ScratchCaches) {
				o.ScratchCaches = append(o.ScratchCaches, c.Path)
			}
			o.KeepLayers = pr.Plan.Filesystem.PersistCaches != "" && len(o.ScratchCaches) > 0
		}
	}
	return o
}

// fsChoice is the filesystem mode decided for a run.
type fsChoice struct {
	FilesystemReport
	// namespaces says whether the child can have namespaces of its own
	// (whatever the filesystem mode), and whether it needs a user
	// namespace for them.
	namespaces mountns.Availability
	// degraded is set when the mode leaves part of the write boundary
	// unenforced and nobody chose that explicitly.
	degraded string
	// overlayOK says the scratch caches' overlays can be mounted, and
	// overlayWhy why not (mountns.OverlayAvailable).
	overlayOK  bool
	overlayWhy string
}

// metadataGap is what Landlock alone cannot stop.
const metadataGap = "chmod, chown, utimes and extended attributes of files outside the writable roots"

func chooseFS(cfg Config, avail mountns.Availability) (fsChoice, error) {
	mode := cfg.FSMode
	if mode == "" {
		mode = FSAuto
	}
	switch mode {
	case FSLandlock:
		return fsChoice{FilesystemReport: FilesystemReport{Mode: FSLandlock, Why: cfg.Words.Say(remedy.FSLandlock),
			NotEnforced: []string{metadataGap}}, namespaces: avail}, nil
	case FSExact:
		if !avail.OK {
			return fsChoice{}, &RefusedError{Reason: "refusing to run: " + cfg.Words.Say(remedy.FSExact) + " needs a mount namespace: " + avail.Why + "; " + avail.Fix}
		}
		return fsChoice{FilesystemReport: FilesystemReport{Mode: FSExact, Why: cfg.Words.Say(remedy.FSExact) + "; " + avail.Why}, namespaces: avail}, nil
	case FSAuto:
		if avail.OK {
			return fsChoice{FilesystemReport: FilesystemReport{Mode: FSExact, Why: avail.Why}, namespaces: avail}, nil
		}
		return fsChoice{
			FilesystemReport: FilesystemReport{Mode: FSLandlock, Why: "no mount namespace: " + avail.Why, NotEnforced: []string{metadataGap}},
			degraded:         "no mount namespace (" + avail.Why + "), and Landlock alone does not stop " + metadataGap + " (" + cfg.Words.Say(remedy.FSLandlock) + " accepts that)",
			namespaces:       avail,
		}, nil
	}
	return fsChoice{}, fmt.Errorf("supervisor: filesystem mode %q is not one of auto, exact, landlock", mode)
}

// needsPrivateTmp reports whether the program gets a private temp dir:
// real programs (compilers, npm, pip) need one, and the policy leaves the
// temp dir the program would use ($TMPDIR, else /tmp) unwritable.
func needsPrivateTmp(p *policy.Plan) bool {
	tmp := "/tmp"
	for _, kv := range p.Env.Vars {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && filepath.IsAbs(v) {
			tmp = filepath.Clean(v)
			break
		}
	}
	if real, err := fsdeps.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	for _, r := range p.Filesystem.WritableRoots {
		if policy.Within(tmp, r.Path) {
			return false
		}
	}
	return true
}

// defaultTmpBytes bounds a private temp dir when max_disk_mb is 0
// (unlimited): 1 GiB, what VT Code's conservative limits give max_disk_mb.
// A tmpfs is memory that cannot be reclaimed without swap, so an unbounded
// one would let a run without a memory limit take the host's memory.
const defaultTmpBytes = 1 << 30

// privateTmpSize is the size of each of the run's n tmpfs mounts (the
// private temp dir, and the scratch caches' layers when there are any) and
// where it comes from: max_disk_mb, else the default; and, under a memory
// limit, at most half of it shared between the n: their pages are charged
// to the run's memory cgroup, so filling them all leaves the program half
// its memory and ends in ENOSPC, not in an OOM kill of the whole run.
func privateTmpSize(l policy.Limits, n int) (uint64, string) {
	size, why := uint64(defaultTmpBytes), "max_disk_mb is 0: the default, so that memory it takes stays bounded"
	if l.FileSizeBytes > 0 {
		size, why = l.FileSizeBytes, "max_disk_mb"
	}
	if n < 1 {
		n = 1
	}
	if share := l.MemoryBytes / 2 / uint64(n); l.MemoryBytes > 0 && share < size {
		size, why = share, "half the memory limit it is charged to"
		if n > 1 {
			size, why = share, fmt.Sprintf("half the memory limit it is charged to, shared by %d tmpfs mounts (the scratch caches' layers)", n)
		}
	}
	// Whole MiB, and never 0: a tmpfs of size 0 is unbounded.
	return max(size&^(1<<20-1), 1<<20), why
}

// existingCaches are the scratch caches that exist (an overlay's lower
// layer); the others get a fresh directory (decideEnvironment).
func existingCaches(all []policy.ScratchCache) []policy.ScratchCache {
	var out []policy.ScratchCache
	for _, c := range all {
		if c.Exists {
			out = append(out, c)
		}
	}
	return out
}

// tmpfsMounts is how many tmpfs mounts of privateTmpSize the run makes:
// the private temp dir's, and the scratch caches' layers'.
func (pr *Prepared) tmpfsMounts() int {
	if pr.fs.Mode == FSExact && pr.fs.PrivateTmp && pr.fs.overlayOK && len(existingCaches(pr.Plan.Filesystem.ScratchCaches)) > 0 {
		return 2
	}
	return 1
}

func grace(cfg Config) time.Duration {
	if cfg.Grace > 0 {
		return cfg.Grace
	}
	return DefaultGrace
}
