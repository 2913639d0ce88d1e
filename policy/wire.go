// Package policy reads the JSON that a caller (VT Code) sends and resolves it
// into a Plan: one flat, fully resolved value that the enforcing packages
// translate into kernel objects.
//
// Decoding follows serde_json's behaviour for VT Code's Rust types field by
// field (CONTRACT §5 and §9), with three deliberate differences, all
// fail-closed: an unknown field is rejected (it would be a restriction this
// helper cannot enforce); the variants danger_full_access and
// external_sandbox are rejected (running them would mean running with no
// sandbox at all); and a struct written as a JSON array, which serde also
// accepts ([1,2] for a ResourceLimits), is rejected (VT Code never writes
// one).
package policy

// Kind names a SandboxPolicy variant, exactly as serde spells its tag.
type Kind string

// The variants of VT Code's SandboxPolicy.
const (
	KindReadOnly         Kind = "read_only"
	KindWorkspaceWrite   Kind = "workspace_write"
	KindDangerFullAccess Kind = "danger_full_access"
	KindExternalSandbox  Kind = "external_sandbox"
)

// SandboxPolicy is the decoded value of --sandbox-policy. Only read_only and
// workspace_write ever decode successfully; the fields that exist only in
// workspace_write are zero for read_only.
type SandboxPolicy struct {
	Kind             Kind
	NetworkAccess    bool
	NetworkAllowlist []NetworkAllowlistEntry

	// workspace_write only.
	WritableRoots []WritableRoot
	// SensitivePaths is nil when the field is missing or null (VT Code then
	// uses its default list) and non-nil, possibly empty, when it is an array
	// (an empty array blocks nothing).
	SensitivePaths      *[]SensitivePath
	ResourceLimits      ResourceLimits
	SeccompProfile      SeccompProfile
	ExcludeTmpdirEnvVar bool
	ExcludeSlashTmp     bool
	// GaveLimits and GaveSeccomp are true when resource_limits and
	// seccomp_profile were in the JSON, not serde's defaults (VT Code
	// always sends them, and the same values again as --resource-limits
	// and --seccomp-profile).
	GaveLimits, GaveSeccomp bool
}

// WritableRoot is one entry of workspace_write's writable_roots.
type WritableRoot struct {
	Root string
}

// NetworkAllowlistEntry is one allowed host pattern and port. Domain may be
// "*.suffix"; Protocol is carried but never compared (CONTRACT §6).
type NetworkAllowlistEntry struct {
	Domain   string
	Port     uint16 // serde default 443
	Protocol string // serde default "tcp"
}

// SensitivePath is one entry of sensitive_paths. Path may start with "~/".
type SensitivePath struct {
	Path       string
	BlockRead  bool // serde default true
	BlockWrite bool // serde default true
}

// ResourceLimits is the decoded value of --resource-limits (and of
// workspace_write's resource_limits). Zero means unlimited for every field
// but TimeoutSecs, where zero means "use the default" (300 s).
type ResourceLimits struct {
	MaxMemoryMB uint64
	MaxPids     uint32
	MaxDiskMB   uint64
	CPUTimeSecs uint64
	TimeoutSecs uint64
}

// SeccompProfile is the decoded value of --seccomp-profile (and of
// workspace_write's seccomp_profile).
type SeccompProfile struct {
	BlockedSyscalls     []string
	AllowNamespaces     bool
	AllowNetworkSockets bool
	LogOnly             bool
}

// BlockedSyscalls is VT Code's BLOCKED_SYSCALLS, in its order and with its
// duplicate "iopl" (CONTRACT §5). It is the default of blocked_syscalls.
var BlockedSyscalls = []string{
	"ptrace", "mount", "umount", "umount2", "init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "bpf", "perf_event_open", "userfaultfd",
	"process_vm_readv", "process_vm_writev", "reboot", "swapon", "swapoff",
	"settimeofday", "clock_settime", "adjtimex", "add_key", "request_key", "keyctl",
	"ioperm", "iopl", "iopl", "acct", "quotactl", "unshare", "setns", "personality",
}

// StrictSeccompProfile returns SeccompProfile::strict() (== Default).
func StrictSeccompProfile() SeccompProfile {
	return SeccompProfile{BlockedSyscalls: append([]string(nil), BlockedSyscalls...)}
}

// DefaultResourceLimits returns ResourceLimits::default(): everything 0 but
// timeout_secs 300.
func DefaultResourceLimits() ResourceLimits {
	return ResourceLimits{TimeoutSecs: DefaultTimeoutSecs}
}

// ConservativeResourceLimits returns ResourceLimits::conservative(), what a
// read_only policy always gets: 512 MB, 64 pids, 1024 MB disk, 60 s CPU, 120 s.
func ConservativeResourceLimits() ResourceLimits {
	return ResourceLimits{MaxMemoryMB: 512, MaxPids: 64, MaxDiskMB: 1024, CPUTimeSecs: 60, TimeoutSecs: 120}
}

// DefaultTimeoutSecs is the wall-clock timeout used when timeout_secs is 0
// (VT Code's effective_timeout_secs).
const DefaultTimeoutSecs = 300

// DerivedResourceLimits is what the caller sends as --resource-limits for this
// policy (SandboxPolicy::resource_limits()): read_only gets the conservative
// limits, workspace_write its embedded copy. Used when the flag is absent.
func (p *SandboxPolicy) DerivedResourceLimits() ResourceLimits {
	if p.Kind == KindReadOnly {
		return ConservativeResourceLimits()
	}
	return p.ResourceLimits
}

// DerivedSeccompProfile is what the caller sends as --seccomp-profile for this
// policy (SandboxPolicy::seccomp_profile()): read_only gets strict, plus
// network sockets when the policy has any network; workspace_write its
// embedded copy. Used when the flag is absent.
func (p *SandboxPolicy) DerivedSeccompProfile() SeccompProfile {
	if p.Kind == KindReadOnly {
		s := StrictSeccompProfile()
		if p.NetworkAccess || len(p.NetworkAllowlist) > 0 {
			s.AllowNetworkSockets = true
		}
		return s
	}
	s := p.SeccompProfile
	s.BlockedSyscalls = append([]string(nil), s.BlockedSyscalls...)
	return s
}
