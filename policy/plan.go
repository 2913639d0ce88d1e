package policy

// Plan is a policy fully resolved for one run: absolute canonical paths,
// the network mode, every seccomp rule with its action, the limits with their
// default rules applied, and the environment the program will get. It holds
// everything the enforcing packages need and nothing they must recompute;
// it is printed by --explain.
//
// A Plan depends on the policy, the process environment and the filesystem
// (paths are canonicalized), never on what the running kernel supports: what
// the kernel can enforce is decided later, when the Plan is translated.
type Plan struct {
	Policy Kind
	// PolicyCwd is --sandbox-policy-cwd (or the process's working directory),
	// canonical. For workspace_write it is also a writable root.
	PolicyCwd  string
	Filesystem Filesystem
	Network    Network
	Seccomp    Seccomp
	Limits     Limits
	Env        Environment
	// Notes records every decision Resolve took that narrows what the policy
	// literally says (never one that widens it), and what the built-in
	// default adds to the program's environment (Environment.Set), one
	// sentence each.
	Notes []string
	// Settings say where a run's settings came from, besides the policy
	// arguments, one line each (the caller's: the CLI names the built-in
	// default and each settings file, used or ignored, and why).
	Settings []string
}

// Filesystem is the resolved filesystem part of a Plan. Reading and executing
// are allowed everywhere except under ReadDenied; writing only beneath
// WritableRoots and to WritableDevices, and never beneath WriteDenied.
type Filesystem struct {
	WritableRoots []WritablePath
	// WritableDevices are device files any program may need to write
	// (/dev/null and friends), allowed in every policy.
	WritableDevices []string
	// ReadDenied paths (and everything beneath them) may be neither read nor
	// written. They need not exist: creating them is denied too.
	ReadDenied []DeniedPath
	// WriteDenied paths (and everything beneath them) may be read but not
	// written, removed, renamed or created. They need not exist.
	WriteDenied []DeniedPath
	// ScratchCaches are the host's build caches the program may write into
	// a throwaway copy of (the built-in default only: Input.Standalone);
	// the host's own directories are never written.
	ScratchCaches []ScratchCache
	// PersistCaches, when set, says where --persist-cache was asked for:
	// what a run that succeeds adds to its scratch caches is written back
	// to the host's (new names only).
	PersistCaches string
	// GitDirs are the git directories --allow-git-commit makes writable
	// (Changes.GitCommit). What git runs or loads in each stays
	// write-denied (WriteDenied), and the enforcement keeps links, FIFOs
	// and sockets out of it: git on the host follows a link in its git
	// directory when it writes there (a reflog, COMMIT_EDITMSG), so one
	// made by the program would have it write wherever the link points.
	GitDirs []GitDir
}

// GitDir is a git directory that --allow-git-commit makes writable.
type GitDir struct {
	// Path is the ".git" directory at the top of Root, canonical.
	Path string
	// Root is the writable root whose repository it is.
	Root string
	// From is where --allow-git-commit was asked for.
	From string
}

// WritablePath is one writable root.
type WritablePath struct {
	// Path is absolute and canonical (symlinks resolved, no "." or "..").
	// A root reached through a symlink that a sandboxed program could have
	// made (inside a writable root, or beneath a world-writable directory)
	// is refused instead.
	Path string
	// Source says where it came from: "writable_roots[N]" or "policy_cwd".
	Source string
	// Given is the path as the policy wrote it, when that differs from Path.
	Given string
	// Create says the root does not exist yet, below a parent that does:
	// the run makes that one directory when it starts, and it stays (it is
	// what the command was granted).
	Create bool
}

// DeniedPath is one read- or write-denied path.
type DeniedPath struct {
	// Path is absolute; its existing prefix is canonical, the rest (if the
	// path does not exist yet) is appended lexically. When a write-denied
	// path is itself a symlink, its target is denied and, in a second entry
	// whose Source ends in "(the symlink itself)", the link too (its parent
	// canonical), so that it cannot be swapped for a real directory.
	Path string
	// Source says where it came from: "sensitive_paths[N]",
	// "default_sensitive_paths", "protected_metadata", "protected_metadata (gitdir of /ws/.git)",
	// "protected_metadata (core.hooksPath of the repository at /ws, set in /ws/.git/config)",
	// "protected_metadata (core.fsmonitor of the repository at /ws, set in /ws/.git/config)"
	// (any variable of gitKeys: a program, script or file git runs or loads),
	// "protected_metadata (hooks of the repository at /ws)" (a symlinked hooks directory's target),
	// "protected_metadata (target of the hook /ws/.git/hooks/pre-commit)",
	// "protected_metadata (git config included by /ws/.git/config)"; a symlink
	// inside a root on the way to one of these is denied too, its Source
	// ending in "(a symbolic link on the way)".
	Source string
	// Given is the path as written (for example "~/.ssh"), when that differs.
	Given string
	// Exists says whether the path existed when the Plan was made.
	Exists bool
}

// NetworkMode is one of the three network modes of CONTRACT §6.
type NetworkMode string

// Network modes.
const (
	NetworkNone      NetworkMode = "none"
	NetworkFull      NetworkMode = "full"
	NetworkAllowlist NetworkMode = "allowlist"
	// NetworkLoopback is a network namespace of the run's own with only
	// its loopback: the program's own servers and clients reach each
	// other, nothing else is reachable. No policy JSON says it: the
	// built-in default and --net loopback do.
	NetworkLoopback NetworkMode = "loopback"
)

// Network is the resolved network part of a Plan.
type Network struct {
	Mode NetworkMode
	// Allowlist holds the entries when Mode is allowlist, normalized
	// (host lower-cased, de-duplicated, in policy order).
	Allowlist []HostPort
	// Why says which policy fields decided the mode.
	Why string
}

// HostPort is one allowlist entry: Host is an exact name, an IP literal, or
// "*.suffix" (which matches suffix itself and any name ending in ".suffix").
type HostPort struct {
	Host     string
	Port     uint16
	Protocol string
}

// Action is what a seccomp rule does when it matches.
type Action string

// Seccomp actions.
const (
	ActionErrno       Action = "errno"        // fail the call with Errno
	ActionLog         Action = "log"          // allow and log (log_only profiles)
	ActionKillProcess Action = "kill_process" // kill the whole process
)

// Seccomp is the resolved seccomp part of a Plan. Calls that match no rule
// are allowed; calls of a foreign architecture (i386 int 0x80 and x32 on
// x86_64, AArch32 on arm64) are killed whatever the rules say.
type Seccomp struct {
	Rules []SyscallRule
	// Skipped lists blocked_syscalls names that exist on some architecture
	// but not this one, so nothing needs blocking here (and, likewise,
	// system calls of the strict model's rules that are not native here).
	Skipped []SkippedSyscall
	// The profile flags, as given.
	AllowNamespaces     bool
	AllowNetworkSockets bool
	LogOnly             bool
	// Blocked are the calls the profile blocks (blocked_syscalls, checked
	// against the syscall table, without repeats): the intent that
	// seccomp.StrictModel turns into Rules, with the strict model's.
	Blocked []BlockedSyscall
}

// BlockedSyscall is one call of blocked_syscalls.
type BlockedSyscall struct {
	Name string
	// At is where the profile lists it ("blocked_syscalls[3]").
	At string
	// Native: the call exists on this architecture (not only on others).
	Native bool
}

// SyscallRule is one seccomp rule: when Syscall is called and every one of
// Args matches, Action is taken.
// Its JSON form (and ArgCondition's) keys the seccomp package's cache of
// compiled filters; the documents' form is package report's.
type SyscallRule struct {
	Syscall string         `json:"syscall"`
	Action  Action         `json:"action"`
	Errno   string         `json:"errno,omitempty"` // "EPERM", "ENOSYS", ... for ActionErrno
	Args    []ArgCondition `json:"args,omitempty"`
	Why     string         `json:"why"`
}

// ArgCondition compares one syscall argument. Op is one of "eq", "ne",
// "lt", "le", "gt", "ge" (Value) or "masked_eq" ((arg & Mask) == Value).
type ArgCondition struct {
	Index uint   `json:"index"`
	Op    string `json:"op"`
	Value uint64 `json:"value"`
	Mask  uint64 `json:"mask,omitempty"`
}

// SkippedSyscall is a blocked_syscalls name that was not turned into a rule.
type SkippedSyscall struct {
	Syscall string
	Why     string
}

// Limits is the resolved resource part of a Plan. Zero means unlimited, for
// every field but TimeoutSeconds, which is always set.
type Limits struct {
	MemoryBytes uint64
	Pids        uint32
	// FileSizeBytes comes from max_disk_mb; the kernel can only enforce it per
	// file (RLIMIT_FSIZE), not for the whole sandbox.
	FileSizeBytes  uint64
	CPUSeconds     uint64
	TimeoutSeconds uint64
	// TimeoutRule says how TimeoutSeconds was reached.
	TimeoutRule string
}

// Environment is the environment the program will get.
type Environment struct {
	// Filtered is true when VT Code's should_filter_env_var filter was applied.
	Filtered bool
	// Removed lists the names the filter removed (values are never printed).
	Removed []string
	// Set lists what the built-in default adds or changes, NAME=VALUE,
	// each with its reason in Notes.
	Set []string
	// Vars is the program's environment, KEY=VALUE, in the original order.
	Vars []string
}

// SyscallTable answers which system call names exist. The seccomp package
// provides the real one (from libseccomp's tables).
type SyscallTable interface {
	// Lookup reports whether name is a system call on the running
	// architecture (native) and whether it is one on any architecture known.
	Lookup(name string) (native, known bool)
}

// Input is everything Resolve reads. Nothing else (no global state, no
// environment variables of the helper's own process) is consulted, apart from
// the filesystem for canonicalizing paths.
type Input struct {
	Policy SandboxPolicy
	// Seccomp and Limits are the effective --seccomp-profile and
	// --resource-limits (derived from Policy when the flags are absent).
	Seccomp SeccompProfile
	Limits  ResourceLimits
	// SeccompFrom and LimitsFrom say where they came from, for error
	// messages: given on their own (unset), the copy embedded in the
	// policy (SourcePolicy, at seccomp_profile / resource_limits) or
	// derived from a read_only policy.
	SeccompFrom Source
	LimitsFrom  Source
	// Names says how the caller names a Source in errors and notes (the
	// CLI: its flags); nil uses Source.String.
	Names func(Source) string
	// PolicyCwd is the policy's working directory as given ("" when absent); a relative
	// value is taken relative to ProcessCwd.
	PolicyCwd  string
	ProcessCwd string
	// Environ is the helper's environment (os.Environ()).
	Environ []string
	// KeepEnv skips VT Code's secret filter.
	KeepEnv bool
	// TerminalDevices are the canonical paths of the terminals on the
	// helper's file descriptors 0-2 (computed by the CLI). They become
	// writable devices, after /dev/null, /dev/zero, /dev/full and /dev/tty.
	TerminalDevices []string
	// Syscalls resolves syscall names.
	Syscalls SyscallTable
	// PasswdHome returns the current user's home directory from the password
	// database; used when $HOME is unset, empty or relative.
	PasswdHome func() (string, error)
	// Standalone is set for the built-in default (no --sandbox-policy),
	// never for a caller's policy: the build caches become scratch caches
	// (Plan.Filesystem.ScratchCaches) and Go is told not to stamp VCS
	// information from a placeholder .git (Environment.Set).
	Standalone bool
	// Changes are a person's changes on top of Policy (the CLI's
	// composing flags and project files); nil: none.
	Changes *Changes
}
