package report

// The public documents' structs, and how the internal types map into them.
// The JSON of --explain and of the report is defined here and only here:
// an internal type may rename or regroup its fields, and the mapping below
// then changes, not the documents (TestDocumentShape pins them).

import (
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/netproxy"
	"sandbox-executable/policy"
	"sandbox-executable/rlimit"
	"sandbox-executable/supervisor"
)

// Explain is what --explain prints: the plan and how this host will
// enforce it (supervisor.Prepared's public part).
type Explain struct {
	Plan         *Plan       `json:"plan"`
	Argv         []string    `json:"program"`
	Candidates   []string    `json:"exec_candidates"`
	Rlimits      []Rlimit    `json:"rlimits"`
	Degradations []string    `json:"degradations,omitempty"`
	Enforcement  Enforcement `json:"enforcement"`
	// Refused is the one line a run would be refused with, when it would
	// be (what only a run tries, foreseen: supervisor.Prepared.Foresee).
	Refused string `json:"refused,omitempty"`
}

// Plan is the public form of policy.Plan.
type Plan struct {
	Policy     string          `json:"policy"`
	PolicyCwd  string          `json:"policy_cwd"`
	Filesystem PlanFilesystem  `json:"filesystem"`
	Network    PlanNetwork     `json:"network"`
	Seccomp    PlanSeccomp     `json:"seccomp"`
	Limits     PlanLimits      `json:"limits"`
	Env        PlanEnvironment `json:"environment"`
	Notes      []string        `json:"notes,omitempty"`
	Settings   []string        `json:"settings,omitempty"`
}

// Rlimit is the public form of rlimit.Limit.
type Rlimit struct {
	Name string `json:"name"`
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
	Why  string `json:"why"`
}

// Enforcement is the public form of supervisor.Enforcement.
type Enforcement struct {
	Filesystem FilesystemReport `json:"filesystem"`
	Network    NetworkReport    `json:"network"`
	Landlock   LandlockReport   `json:"landlock"`
	Seccomp    SeccompReport    `json:"seccomp"`
	Cgroup     CgroupReport     `json:"cgroup"`
	Process    ProcessReport    `json:"process"`
	Timeout    string           `json:"timeout"`
}

// PlanFilesystem is the public form of policy.Filesystem.
type PlanFilesystem struct {
	WritableRoots   []PlanWritablePath `json:"writable_roots"`
	WritableDevices []string           `json:"writable_devices"`
	ReadDenied      []PlanDeniedPath   `json:"read_denied"`
	WriteDenied     []PlanDeniedPath   `json:"write_denied"`
	ScratchCaches   []PlanScratchCache `json:"scratch_caches,omitempty"`
}

// PlanNetwork is the public form of policy.Network.
type PlanNetwork struct {
	Mode      string         `json:"mode"`
	Allowlist []PlanHostPort `json:"allowlist,omitempty"`
	Why       string         `json:"why"`
}

// PlanSeccomp is the public form of policy.Seccomp.
type PlanSeccomp struct {
	Rules               []PlanSyscallRule    `json:"rules"`
	Skipped             []PlanSkippedSyscall `json:"skipped,omitempty"`
	AllowNamespaces     bool                 `json:"allow_namespaces"`
	AllowNetworkSockets bool                 `json:"allow_network_sockets"`
	LogOnly             bool                 `json:"log_only"`
}

// PlanLimits is the public form of policy.Limits.
type PlanLimits struct {
	MemoryBytes    uint64 `json:"memory_bytes"`
	Pids           uint32 `json:"pids"`
	FileSizeBytes  uint64 `json:"file_size_bytes"`
	CPUSeconds     uint64 `json:"cpu_seconds"`
	TimeoutSeconds uint64 `json:"timeout_seconds"`
	TimeoutRule    string `json:"timeout_rule"`
}

// PlanEnvironment is the public form of policy.Environment.
type PlanEnvironment struct {
	Filtered bool     `json:"filtered"`
	Removed  []string `json:"removed,omitempty"`
	Set      []string `json:"set,omitempty"`
}

// FilesystemReport is the public form of supervisor.FilesystemReport.
type FilesystemReport struct {
	Mode              string           `json:"mode"`
	Why               string           `json:"why"`
	Masked            []string         `json:"masked,omitempty"`
	ReadOnly          []string         `json:"read_only,omitempty"`
	Placeholders      []string         `json:"placeholders,omitempty"`
	Narrowed          []MountNarrowing `json:"narrowed,omitempty"`
	PrivateTmp        bool             `json:"private_tmp"`
	PrivateTmpBytes   uint64           `json:"private_tmp_bytes,omitempty"`
	PrivateTmpBound   string           `json:"private_tmp_bound,omitempty"`
	ScratchCaches     []string         `json:"scratch_caches,omitempty"`
	ScratchCachesNote string           `json:"scratch_caches_note,omitempty"`
	FreshCaches       []string         `json:"fresh_caches,omitempty"`
	PersistCaches     string           `json:"persist_caches,omitempty"`
	NotEnforced       []string         `json:"not_enforced,omitempty"`
}

// NetworkReport is the public form of supervisor.NetworkReport.
type NetworkReport struct {
	Mode          string   `json:"mode"`
	Mechanism     []string `json:"mechanism"`
	Proxy         string   `json:"proxy,omitempty"`
	DaemonSockets string   `json:"daemon_sockets"`
	NotEnforced   []string `json:"not_enforced,omitempty"`
	// Destinations say what each allowlist entry reaches.
	Destinations []NetworkDestination `json:"destinations,omitempty"`
}

// NetworkDestination is the public form of netproxy.Destination.
type NetworkDestination struct {
	Entry   string `json:"entry"`
	Reaches string `json:"reaches"`
}

// LandlockReport is the public form of supervisor.LandlockReport.
type LandlockReport struct {
	ABI         int                 `json:"abi"`
	HandledFS   []string            `json:"handled_fs"`
	HandledNet  []string            `json:"handled_net,omitempty"`
	Scoped      []string            `json:"scoped,omitempty"`
	Rules       int                 `json:"rules"`
	Narrowed    []LandlockNarrowing `json:"narrowed,omitempty"`
	NotEnforced []LandlockGap       `json:"not_enforced,omitempty"`
}

// SeccompReport is the public form of supervisor.SeccompReport.
type SeccompReport struct {
	Rules           int               `json:"rules"`
	Instructions    int               `json:"bpf_instructions"`
	BadArch         string            `json:"foreign_architecture"`
	Library         string            `json:"libseccomp"`
	NoNewPrivileges bool              `json:"no_new_privs"`
	HostRules       []PlanSyscallRule `json:"host_rules,omitempty"`
	Observed        bool              `json:"observed"`
	Cache           string            `json:"cache"`
	CacheRejected   string            `json:"cache_rejected,omitempty"`
}

// CgroupReport is the public form of supervisor.CgroupReport.
type CgroupReport struct {
	HostMode         string  `json:"host_mode"`
	MemoryBytes      uint64  `json:"memory_bytes,omitempty"`
	Pids             uint32  `json:"pids,omitempty"`
	CPUQuotaCores    float64 `json:"cpu_quota_cores,omitempty"`
	CPUBudgetSeconds uint64  `json:"cpu_budget_seconds,omitempty"`
	Parent           string  `json:"parent,omitempty"`
	Why              string  `json:"why,omitempty"`
}

// ProcessReport is the public form of supervisor.ProcessReport.
type ProcessReport struct {
	Namespaces   []string `json:"namespaces"`
	Init         bool     `json:"init"`
	Proc         string   `json:"proc"`
	Dev          string   `json:"dev"`
	Capabilities string   `json:"capabilities"`
	NotEnforced  []string `json:"not_enforced,omitempty"`
}

// PlanWritablePath is the public form of policy.WritablePath.
type PlanWritablePath struct {
	Path   string `json:"path"`
	Source string `json:"source"`
	Given  string `json:"given,omitempty"`
	Create bool   `json:"create,omitempty"`
}

// PlanDeniedPath is the public form of policy.DeniedPath.
type PlanDeniedPath struct {
	Path   string `json:"path"`
	Source string `json:"source"`
	Given  string `json:"given,omitempty"`
	Exists bool   `json:"exists"`
}

// PlanScratchCache is the public form of policy.ScratchCache.
type PlanScratchCache struct {
	Path   string `json:"path"`
	Tool   string `json:"tool"`
	EnvVar string `json:"env_var,omitempty"`
	Exists bool   `json:"exists"`
}

// PlanHostPort is the public form of policy.HostPort.
type PlanHostPort struct {
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Protocol string `json:"protocol"`
}

// PlanSyscallRule is the public form of policy.SyscallRule.
type PlanSyscallRule struct {
	Syscall string             `json:"syscall"`
	Action  string             `json:"action"`
	Errno   string             `json:"errno,omitempty"`
	Args    []PlanArgCondition `json:"args,omitempty"`
	Why     string             `json:"why"`
}

// PlanSkippedSyscall is the public form of policy.SkippedSyscall.
type PlanSkippedSyscall struct {
	Syscall string `json:"syscall"`
	Why     string `json:"why"`
}

// MountNarrowing is the public form of mountns.Narrowing.
type MountNarrowing struct {
	Path   string `json:"path"`
	Effect string `json:"effect"`
}

// LandlockNarrowing is the public form of landlock.Narrowing.
type LandlockNarrowing struct {
	Dir    string `json:"dir"`
	Effect string `json:"effect"`
}

// LandlockGap is the public form of landlock.Gap.
type LandlockGap struct {
	Right         string `json:"right"`
	Effect        string `json:"effect"`
	WriteBoundary bool   `json:"write_boundary"`
}

// PlanArgCondition is the public form of policy.ArgCondition.
type PlanArgCondition struct {
	Index uint   `json:"index"`
	Op    string `json:"op"`
	Value uint64 `json:"value"`
	Mask  uint64 `json:"mask,omitempty"`
}

// NewExplain maps a prepared run into the --explain document.
func NewExplain(pr *supervisor.Prepared) *Explain {
	e := fromExplain(*pr)
	return &e
}

func fromExplain(v supervisor.Prepared) Explain {
	return Explain{
		Plan:         fromPtrPlan(v.Plan),
		Argv:         v.Argv,
		Candidates:   v.Candidates,
		Rlimits:      mapSlice(v.Rlimits, fromRlimit),
		Degradations: v.Degradations,
		Enforcement:  fromEnforcement(v.Enforcement),
	}
}

func fromPlan(v policy.Plan) Plan {
	return Plan{
		Policy:     string(v.Policy),
		PolicyCwd:  v.PolicyCwd,
		Filesystem: fromPlanFilesystem(v.Filesystem),
		Network:    fromPlanNetwork(v.Network),
		Seccomp:    fromPlanSeccomp(v.Seccomp),
		Limits:     fromPlanLimits(v.Limits),
		Env:        fromPlanEnvironment(v.Env),
		Notes:      v.Notes,
		Settings:   v.Settings,
	}
}

func fromRlimit(v rlimit.Limit) Rlimit {
	return Rlimit{
		Name: v.Name,
		Soft: v.Cur,
		Hard: v.Max,
		Why:  v.Why,
	}
}

func fromEnforcement(v supervisor.Enforcement) Enforcement {
	return Enforcement{
		Filesystem: fromFilesystemReport(v.Filesystem),
		Network:    fromNetworkReport(v.Network),
		Landlock:   fromLandlockReport(v.Landlock),
		Seccomp:    fromSeccompReport(v.Seccomp),
		Cgroup:     fromCgroupReport(v.Cgroup),
		Process:    fromProcessReport(v.Process),
		Timeout:    v.Timeout,
	}
}

func fromPlanFilesystem(v policy.Filesystem) PlanFilesystem {
	return PlanFilesystem{
		WritableRoots:   mapSlice(v.WritableRoots, fromPlanWritablePath),
		WritableDevices: v.WritableDevices,
		ReadDenied:      mapSlice(v.ReadDenied, fromPlanDeniedPath),
		WriteDenied:     mapSlice(v.WriteDenied, fromPlanDeniedPath),
		ScratchCaches:   mapSlice(v.ScratchCaches, fromPlanScratchCache),
	}
}

func fromPlanNetwork(v policy.Network) PlanNetwork {
	return PlanNetwork{
		Mode:      string(v.Mode),
		Allowlist: mapSlice(v.Allowlist, fromPlanHostPort),
		Why:       v.Why,
	}
}

func fromPlanSeccomp(v policy.Seccomp) PlanSeccomp {
	return PlanSeccomp{
		Rules:               mapSlice(v.Rules, fromPlanSyscallRule),
		Skipped:             mapSlice(v.Skipped, fromPlanSkippedSyscall),
		AllowNamespaces:     v.AllowNamespaces,
		AllowNetworkSockets: v.AllowNetworkSockets,
		LogOnly:             v.LogOnly,
	}
}

func fromPlanLimits(v policy.Limits) PlanLimits {
	return PlanLimits{
		MemoryBytes:    v.MemoryBytes,
		Pids:           v.Pids,
		FileSizeBytes:  v.FileSizeBytes,
		CPUSeconds:     v.CPUSeconds,
		TimeoutSeconds: v.TimeoutSeconds,
		TimeoutRule:    v.TimeoutRule,
	}
}

func fromPlanEnvironment(v policy.Environment) PlanEnvironment {
	return PlanEnvironment{
		Filtered: v.Filtered,
		Removed:  v.Removed,
		Set:      v.Set,
	}
}

func fromFilesystemReport(v supervisor.FilesystemReport) FilesystemReport {
	return FilesystemReport{
		Mode:              v.Mode,
		Why:               v.Why,
		Masked:            v.Masked,
		ReadOnly:          v.ReadOnly,
		Placeholders:      v.Placeholders,
		Narrowed:          mapSlice(v.Narrowed, fromMountNarrowing),
		PrivateTmp:        v.PrivateTmp,
		PrivateTmpBytes:   v.PrivateTmpBytes,
		PrivateTmpBound:   v.PrivateTmpBound,
		ScratchCaches:     v.ScratchCaches,
		ScratchCachesNote: v.ScratchCachesNote,
		FreshCaches:       v.FreshCaches,
		PersistCaches:     v.PersistCaches,
		NotEnforced:       v.NotEnforced,
	}
}

func fromNetworkReport(v supervisor.NetworkReport) NetworkReport {
	return NetworkReport{
		Mode:          string(v.Mode),
		Mechanism:     v.Mechanism,
		Proxy:         v.Proxy,
		DaemonSockets: v.DaemonSockets,
		NotEnforced:   v.NotEnforced,
		Destinations:  fromDestinations(v.Destinations),
	}
}

func fromDestinations(v []netproxy.Destination) []NetworkDestination {
	var out []NetworkDestination
	for _, d := range v {
		out = append(out, NetworkDestination{Entry: d.Entry, Reaches: d.Reaches})
	}
	return out
}

func fromLandlockReport(v supervisor.LandlockReport) LandlockReport {
	return LandlockReport{
		ABI:         v.ABI,
		HandledFS:   v.HandledFS,
		HandledNet:  v.HandledNet,
		Scoped:      v.Scoped,
		Rules:       v.Rules,
		Narrowed:    mapSlice(v.Narrowed, fromLandlockNarrowing),
		NotEnforced: mapSlice(v.NotEnforced, fromLandlockGap),
	}
}

func fromSeccompReport(v supervisor.SeccompReport) SeccompReport {
	return SeccompReport{
		Rules:           v.Rules,
		Instructions:    v.Instructions,
		BadArch:         v.BadArch,
		Library:         v.Library,
		NoNewPrivileges: v.NoNewPrivileges,
		HostRules:       mapSlice(v.HostRules, fromPlanSyscallRule),
		Observed:        v.Observed,
		Cache:           v.Cache,
		CacheRejected:   v.CacheRejected,
	}
}

func fromCgroupReport(v supervisor.CgroupReport) CgroupReport {
	return CgroupReport{
		HostMode:         string(v.HostMode),
		MemoryBytes:      v.MemoryBytes,
		Pids:             v.Pids,
		CPUQuotaCores:    v.CPUQuotaCores,
		CPUBudgetSeconds: v.CPUBudgetSeconds,
		Parent:           v.Parent,
		Why:              v.Why,
	}
}

func fromProcessReport(v supervisor.ProcessReport) ProcessReport {
	return ProcessReport{
		Namespaces:   v.Namespaces,
		Init:         v.Init,
		Proc:         v.Proc,
		Dev:          v.Dev,
		Capabilities: v.Capabilities,
		NotEnforced:  v.NotEnforced,
	}
}

func fromPlanWritablePath(v policy.WritablePath) PlanWritablePath {
	return PlanWritablePath{
		Path:   v.Path,
		Source: v.Source,
		Given:  v.Given,
		Create: v.Create,
	}
}

func fromPlanDeniedPath(v policy.DeniedPath) PlanDeniedPath {
	return PlanDeniedPath{
		Path:   v.Path,
		Source: v.Source,
		Given:  v.Given,
		Exists: v.Exists,
	}
}

func fromPlanScratchCache(v policy.ScratchCache) PlanScratchCache {
	return PlanScratchCache{
		Path:   v.Path,
		Tool:   v.Tool,
		EnvVar: v.EnvVar,
		Exists: v.Exists,
	}
}

func fromPlanHostPort(v policy.HostPort) PlanHostPort {
	return PlanHostPort{
		Host:     v.Host,
		Port:     v.Port,
		Protocol: v.Protocol,
	}
}

func fromPlanSyscallRule(v policy.SyscallRule) PlanSyscallRule {
	return PlanSyscallRule{
		Syscall: v.Syscall,
		Action:  string(v.Action),
		Errno:   v.Errno,
		Args:    mapSlice(v.Args, fromPlanArgCondition),
		Why:     v.Why,
	}
}

func fromPlanSkippedSyscall(v policy.SkippedSyscall) PlanSkippedSyscall {
	return PlanSkippedSyscall{
		Syscall: v.Syscall,
		Why:     v.Why,
	}
}

func fromMountNarrowing(v mountns.Narrowing) MountNarrowing {
	return MountNarrowing{
		Path:   v.Path,
		Effect: v.Effect,
	}
}

func fromLandlockNarrowing(v landlock.Narrowing) LandlockNarrowing {
	return LandlockNarrowing{
		Dir:    v.Dir,
		Effect: v.Effect,
	}
}

func fromLandlockGap(v landlock.Gap) LandlockGap {
	return LandlockGap{
		Right:         v.Right,
		Effect:        v.Effect,
		WriteBoundary: v.WriteBoundary,
	}
}

func fromPlanArgCondition(v policy.ArgCondition) PlanArgCondition {
	return PlanArgCondition{
		Index: v.Index,
		Op:    v.Op,
		Value: v.Value,
		Mask:  v.Mask,
	}
}

func fromPtrPlan(v *policy.Plan) *Plan {
	if v == nil {
		return nil
	}
	c := fromPlan(*v)
	return &c
}

// mapSlice maps every element of v with f; nil stays nil (null in JSON),
// empty stays empty ([]).
func mapSlice[T, R any](v []T, f func(T) R) []R {
	if v == nil {
		return nil
	}
	out := make([]R, len(v))
	for i, e := range v {
		out[i] = f(e)
	}
	return out
}
