package landlock

import (
	"fmt"

	"sandbox-executable/policy"
)

// The Landlock ABI table: every fact the helper knows about a Landlock ABI
// version lives in one row of abiTable (what it added, from which mainline
// release, what a sandbox lacks without it, what the helper does with it)
// and every decision that depends on the version asks the table
// (Supports, the rights Compute handles, the gaps it reports, the doctor's
// list). Adding an ABI is adding a row.
//
// Sources: the kernel's include/uapi/linux/landlock.h and
// Documentation/userspace-api/landlock.rst, as shipped by Debian's
// trixie-backports 7.3.4 (linux-libc-dev and linux-doc-7.3 7.3.4-1~bpo13+1),
// whose kernel reports ABI 11. Values from that header:
//
//	LANDLOCK_ACCESS_FS_REFER            (1ULL << 13)  ABI 2
//	LANDLOCK_ACCESS_FS_TRUNCATE         (1ULL << 14)  ABI 3
//	LANDLOCK_ACCESS_NET_BIND_TCP        (1ULL << 0)   ABI 4
//	LANDLOCK_ACCESS_NET_CONNECT_TCP     (1ULL << 1)   ABI 4
//	LANDLOCK_ACCESS_FS_IOCTL_DEV        (1ULL << 15)  ABI 5
//	LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)   ABI 6
//	LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)   ABI 6
//	LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF  (1U << 0)  ABI 7
//	LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON    (1U << 1)  ABI 7
//	LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)  ABI 7
//	LANDLOCK_CREATE_RULESET_ERRATA      (1U << 1)     (ABI 7 and backports)
//	LANDLOCK_RESTRICT_SELF_TSYNC        (1U << 3)     ABI 8
//	LANDLOCK_ACCESS_FS_RESOLVE_UNIX     (1ULL << 16)  ABI 9
//	LANDLOCK_ACCESS_NET_BIND_UDP        (1ULL << 2)   ABI 10
//	LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP (1ULL << 3)  ABI 10
//	LANDLOCK_ADD_RULE_QUIET             (1U << 0)     ABI 10, with the
//	    quiet_access_fs, quiet_access_net, quiet_scoped fields of
//	    struct landlock_ruleset_attr
//	LANDLOCK_RESTRICT_SELF_NO_NEW_PRIVS (1U << 4)     ABI 11

// Feature names one thing a Landlock ABI version added.
type Feature string

// The features, one per ABI version (the row of abiTable says which).
const (
	FeatFilesystem Feature = "filesystem"
	FeatRefer      Feature = "refer"
	FeatTruncate   Feature = "truncate"
	FeatTCP        Feature = "TCP"
	FeatIoctlDev   Feature = "ioctl_dev"
	FeatScoping    Feature = "scoping"
	FeatAudit      Feature = "audit logging"
	FeatTSync      Feature = "tsync"
	FeatUnixSocket Feature = "unix sockets"
	FeatUDP        Feature = "UDP"
	FeatNoNewPrivs Feature = "no_new_privs flag"
)

// Restriction flags (landlock_restrict_self) the helper sets.
const (
	logNewExecOn  = 0x2 // LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
	restrictTSync = 0x8 // LANDLOCK_RESTRICT_SELF_TSYNC (1U << 3)
)

// ABIInfo is one row of the table: what one Landlock ABI version added.
type ABIInfo struct {
	ABI     int
	Feature Feature
	// Kernel is the first mainline release with it ("" when not recorded).
	Kernel string
	// Missing is what a sandbox lacks on a kernel below this ABI (the
	// doctor's wording).
	Missing string
	// Unused is "" when the helper uses what this ABI added, else why not
	// (the doctor shows it).
	Unused string

	// fs are the filesystem rights this ABI added that Compute handles
	// whenever the kernel has them; optFS those it handles only on request.
	fs, optFS AccessFS
	// net and scoped are the network rights and scopes it added.
	net, scoped uint64
	// flags are restriction flags it added that every ruleset gets.
	flags uint32
	// gap is what Compute reports when the kernel is below this ABI and
	// the plan needs the feature; nil for none.
	gap func(p *policy.Plan, opt Options) *Gap
}

// abiTable has one row per ABI version, in order (row i is ABI i+1).
var abiTable = []ABIInfo{
	{ABI: 1, Feature: FeatFilesystem, Kernel: "5.13", Missing: "no Landlock at all",
		fs: Execute | WriteFile | ReadFile | ReadDir | RemoveDir | RemoveFile | MakeChar |
			MakeDir | MakeReg | MakeSock | MakeFifo | MakeBlock | MakeSym,
		gap: func(_ *policy.Plan, opt Options) *Gap {
			if opt.Exact {
				return &Gap{Right: "landlock", WriteBoundary: true,
					Effect: "the kernel has no Landlock (Linux 5.13 or later with landlock in its LSM list): only the mount view stops writes outside the writable roots and reads of denied paths, so a denied path created outside the roots during the run, or a mount the program may change, is not covered"}
			}
			return &Gap{Right: "landlock", WriteBoundary: true,
				Effect: "the kernel has no Landlock (Linux 5.13 or later with landlock in its LSM list): writes outside the writable roots and reads of denied paths are not stopped"}
		}},
	{ABI: 2, Feature: FeatRefer, Kernel: "5.19", Missing: "renames and links across directories are always refused (EXDEV) inside the sandbox",
		fs: Refer,
		gap: func(*policy.Plan, Options) *Gap {
			return &Gap{Right: "refer", Effect: "renaming or linking a file into another directory is always denied (Landlock ABI 1)"}
		}},
	{ABI: 3, Feature: FeatTruncate, Kernel: "6.2", Missing: "truncate(2) and O_TRUNC outside the writable roots are not stopped",
		fs: Truncate,
		gap: func(_ *policy.Plan, opt Options) *Gap {
			g := &Gap{Right: "truncate", Effect: "truncate(2) can shorten files outside the writable roots"}
			if opt.ReadOnlyOutsideRoots {
				g.Effect += " only where a read-only mount does not stop it (everything outside the roots is read-only here)"
			} else {
				g.WriteBoundary = true
			}
			return g
		}},
	{ABI: 4, Feature: FeatTCP, Kernel: "6.7", Missing: "no TCP bind/connect rules (the helper's network allowlist uses a network namespace instead)",
		net: netBindTCP | netConnectTCP,
		gap: func(p *policy.Plan, _ Options) *Gap {
			if p.Network.Mode == policy.NetworkFull || p.Network.Mode == policy.NetworkLoopback {
				return nil // loopback runs only in a network namespace of its own
			}
			return &Gap{Right: "net", Effect: "TCP bind and connect are not restricted by Landlock; the seccomp filter's socket rules still apply"}
		}},
	{ABI: 5, Feature: FeatIoctlDev, Kernel: "6.10", Missing: "ioctl(2) on device files is not restricted (seccomp still refuses TIOCSTI)",
		fs: IoctlDev,
		gap: func(*policy.Plan, Options) *Gap {
			return &Gap{Right: "ioctl_dev", Effect: "ioctl on device files the program opens is not restricted"}
		}},
	{ABI: 6, Feature: FeatScoping, Kernel: "6.12", Missing: "abstract UNIX sockets and signals to processes outside the sandbox are not scoped",
		scoped: scopeAbstractUnix | scopeSignal,
		gap: func(*policy.Plan, Options) *Gap {
			return &Gap{Right: "scope", Effect: "abstract unix sockets and signals to processes outside the sandbox are not restricted"}
		}},
	{ABI: 7, Feature: FeatAudit, Kernel: "6.15", Missing: "--log-denials has no effect (no Landlock audit records)"},
	{ABI: 8, Feature: FeatTSync, Missing: "the ruleset is enforced on the calling thread only (the spawn stage is single-threaded, so nothing is lost)",
		flags: restrictTSync},
	{ABI: 9, Feature: FeatUnixSocket, Missing: "no rules for pathname UNIX sockets (the helper mediates connect/send or refuses unix sockets instead)",
		optFS: ResolveUnx},
	// ABI 10's quiet-logging flags (LANDLOCK_ADD_RULE_QUIET and the quiet_*
	// fields) are not used: they only silence audit records.
	{ABI: 10, Feature: FeatUDP, Missing: "no UDP bind/connect/send rules (seccomp's socket rules and the network namespace still apply)",
		net: netBindUDP | netConnectSendUDP},
	{ABI: 11, Feature: FeatNoNewPrivs, Missing: "no_new_privs is set with prctl(2) before the ruleset (what the helper does anyway)",
		Unused: "the spawn stage sets no_new_privs itself before landlock_restrict_self"},
}

// KnownABI is the newest Landlock ABI this helper knows.
func KnownABI() int { return len(abiTable) }

// ABITable returns the table's rows, oldest first.
func ABITable() []ABIInfo { return append([]ABIInfo(nil), abiTable...) }

// Since is the ABI version that added f.
func (f Feature) Since() int {
	for _, r := range abiTable {
		if r.Feature == f {
			return r.ABI
		}
	}
	panic(fmt.Sprintf("landlock: unknown feature %q", f))
}

// Supports reports whether a kernel of the given ABI has f.
func Supports(abi int, f Feature) bool { return abi >= f.Since() }

// rows are the table's rows up to abi.
func rows(abi int) []ABIInfo {
	if abi > len(abiTable) {
		abi = len(abiTable)
	}
	if abi < 0 {
		abi = 0
	}
	return abiTable[:abi]
}

// fsRightsAt is every filesystem right a kernel of the given ABI handles and
// the helper handles by default. ResolveUnx (ABI 9) is handled only on
// request (Options.ResolveUnix), with its grants: handling it without them
// would break every local socket.
func fsRightsAt(abi int) AccessFS {
	var a AccessFS
	for _, r := range rows(abi) {
		a |= r.fs
	}
	return a
}

// optionalFSAt is the rights of ABIs up to abi handled only on request.
func optionalFSAt(abi int) AccessFS {
	var a AccessFS
	for _, r := range rows(abi) {
		a |= r.optFS
	}
	return a
}

// netRightsAt is every network right a kernel of the given ABI handles.
func netRightsAt(abi int) uint64 {
	var n uint64
	for _, r := range rows(abi) {
		n |= r.net
	}
	return n
}

// scopesAt is every scope a kernel of the given ABI has.
func scopesAt(abi int) uint64 {
	var s uint64
	for _, r := range rows(abi) {
		s |= r.scoped
	}
	return s
}

// flagsAt is the restriction flags every ruleset on that ABI gets.
func flagsAt(abi int) uint32 {
	var f uint32
	for _, r := range rows(abi) {
		f |= r.flags
	}
	return f
}

// gaps lists what the kernel cannot enforce of p: one per missing ABI row
// that has a gap for p; without Landlock only that one.
func gaps(p *policy.Plan, opt Options) []Gap {
	var g []Gap
	for _, r := range abiTable {
		if opt.ABI >= r.ABI || r.gap == nil {
			continue
		}
		if x := r.gap(p, opt); x != nil {
			g = append(g, *x)
		}
		if r.ABI == 1 {
			break
		}
	}
	return append(g, errataGaps(opt)...)
}

// Erratum is a Landlock fix reported by LANDLOCK_CREATE_RULESET_ERRATA: bit
// N-1 of the mask set means erratum N is fixed in the running kernel.
type Erratum struct {
	N int
	// MinABI: the erratum concerns kernels from this ABI on.
	MinABI int
	// Name is the kernel's title.
	Name string
	// Effect is what an unfixed kernel does.
	Effect string
	// Hole is true when an unfixed kernel grants more than the rules say
	// (Compute then reports it as a gap); false when it only refuses more.
	Hole bool
}

// knownErrata are those documented in the kernel's
// security/landlock/errata/abi-*.h (7.3: errata 1 to 4).
var knownErrata = []Erratum{
	{N: 1, MinABI: 4, Name: "TCP socket identification", Effect: "TCP rules also restrict other IPv4/IPv6 stream protocols (SMC, MPTCP, SCTP)"},
	{N: 2, MinABI: 6, Name: "scoped signal handling", Effect: "signal scoping refuses signals between threads of one process in different domains"},
	{N: 3, MinABI: 1, Name: "disconnected directory handling", Effect: "rename or link through a directory moved out of a bind mount can widen access rights past refer restrictions", Hole: true},
	{N: 4, MinABI: 1, Name: "creation of whiteout objects", Effect: "creating an overlayfs whiteout needs make_char instead of make_reg (fuse-overlayfs in the sandbox is refused)"},
}

// KnownErrata returns the errata the helper knows, by number.
func KnownErrata() []Erratum { return append([]Erratum(nil), knownErrata...) }

// errataGaps reports the unfixed errata that let a program do more than its
// rules say, when the kernel answered the errata query (Options.Errata).
func errataGaps(opt Options) []Gap {
	if opt.Errata == nil || opt.ABI < 1 {
		return nil
	}
	var g []Gap
	for _, e := range knownErrata {
		if e.Hole && opt.ABI >= e.MinABI && *opt.Errata&(1<<(e.N-1)) == 0 {
			g = append(g, Gap{Right: fmt.Sprintf("erratum %d", e.N), Effect: "Landlock erratum " + fmt.Sprint(e.N) + " (" + e.Name + ") is not fixed in this kernel: " + e.Effect})
		}
	}
	return g
}
