package policy

// HostSize is what the built-in default's limits scale with: the CPUs this
// process may run on and the machine's memory (0: unknown).
type HostSize struct {
	CPUs        int
	MemoryBytes uint64
}

// The built-in default's limits: generous enough for a real build on the
// machine it runs on (go build -p $(nproc) with a large GOMAXPROCS: every
// thread is a task the pids limit counts; cargo build, npm ci, a test
// suite that starts local servers), tight enough that a runaway or a fork
// bomb stops long before the machine does.
const (
	// standaloneTimeoutSecs is ten minutes of wall-clock time.
	standaloneTimeoutSecs = 600
	// standaloneCPUPerCore is the CPU-time budget per CPU: half of the
	// timeout with every CPU busy.
	standaloneCPUPerCore = 300
	// standalonePidsMin and standalonePidsPerCore: at least 4096 tasks
	// (16 compilers of 20 threads each are a few hundred), more on
	// larger machines.
	standalonePidsMin     = 4096
	standalonePidsPerCore = 256
	// standaloneMemoryMinMB is the floor of half the machine's memory.
	standaloneMemoryMinMB = 512
	// standaloneDiskMB is the largest file (RLIMIT_FSIZE) and the
	// private TMPDIR's size where memory allows it.
	standaloneDiskMB = 4096
)

// StandaloneLimits are the built-in default's limits for a host of size
// h: half its memory (at least 512 MB), 256 tasks per CPU (at least 4096),
// 300 CPU-seconds per CPU, 10 minutes of wall-clock time, files of up to
// 4 GB. Each has its flag (--memory, --pids, --cpu, --timeout).
func StandaloneLimits(h HostSize) ResourceLimits {
	cpus := h.CPUs
	if cpus < 1 {
		cpus = 1
	}
	mem := uint64(standaloneMemoryMinMB)
	if half := h.MemoryBytes / 2 >> 20; half > mem {
		mem = half
	}
	pids := uint32(standalonePidsMin)
	if n := uint64(cpus) * standalonePidsPerCore; n > uint64(pids) && n <= pidMaxLimit {
		pids = uint32(n)
	}
	return ResourceLimits{MaxMemoryMB: mem, MaxPids: pids, MaxDiskMB: standaloneDiskMB,
		CPUTimeSecs: uint64(cpus) * standaloneCPUPerCore, TimeoutSecs: standaloneTimeoutSecs}
}

// DefaultStandalone is the policy used when no --sandbox-policy is given:
// what a careful person would pick to run an untrusted build or script in
// dir on a host of size h. dir (the working directory) is the only
// writable root, VT Code's default secrets are unreadable, the limits are
// StandaloneLimits and the seccomp profile is the strict one; /tmp and
// $TMPDIR are not writable (the program gets a private temp dir). Its
// network, loopback only, is no policy's: StandaloneNet says it.
func DefaultStandalone(dir string, h HostSize) *SandboxPolicy {
	return &SandboxPolicy{
		Kind:                KindWorkspaceWrite,
		WritableRoots:       []WritableRoot{{Root: dir}},
		ResourceLimits:      StandaloneLimits(h),
		SeccompProfile:      StrictSeccompProfile(),
		ExcludeTmpdirEnvVar: true,
		ExcludeSlashTmp:     true,
	}
}

// StandaloneNet is the built-in default's network: loopback only, in a
// network namespace of the run's own, so that a test's local server and
// its client reach each other and nothing else is reachable.
func StandaloneNet() *NetChange {
	return &NetChange{Mode: NetworkLoopback, From: "the built-in default"}
}
