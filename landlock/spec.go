package landlock

import (
	"path/filepath"
	"sort"
	"strings"

	"sandbox-executable/policy"
)

// Options choose how a Plan becomes a ruleset.
type Options struct {
	// ABI is the running kernel's Landlock ABI (see ABI).
	ABI int
	// Exact is true when the Plan's read- and write-denied paths are
	// enforced by a mount namespace (masks and read-only binds). Landlock
	// then grants whole subtrees. When false ("Landlock-only"), the denials
	// are expressed in Landlock itself by granting, along each path from the
	// root of a grant down to a denied path, every sibling but the one on
	// the path: the directories on those paths are narrowed (see Narrowing).
	Exact bool
	// ReadOnlyOutsideRoots is true when everything outside the writable
	// roots is mounted read-only for the program (exact mode does this), so
	// that rights the kernel cannot restrict there (truncate on ABI < 3) are
	// still stopped.
	ReadOnlyOutsideRoots bool
	// ReadsByMounts, with Exact, leaves reading, listing, executing and
	// truncating to the mount view: exact mode grants the first three on /
	// anyway, and read-only mounts stop truncation outside the roots, so
	// handling them would restrict nothing and cost a walk up the path on
	// every open. Only sound when the program cannot change its mounts
	// (no CAP_SYS_ADMIN over its mount namespace, or the mount system calls
	// denied by seccomp): a detached clone of a mount would otherwise read
	// around a mask.
	ReadsByMounts bool
	// LogDenials asks the kernel (ABI 7) to log denials of the program after
	// its exec, for the audit log.
	LogDenials bool
	// LateReadDenied, with Exact, are read-denied paths that did not exist
	// when the mount view was decided and that no mount covers (they lie
	// outside the writable roots, so only someone outside the sandbox can
	// create them: the user, a tool, a daemon). Landlock then handles reads
	// whatever ReadsByMounts says, and the directories above each are split
	// as in Landlock-only mode: their existing entries are granted one by
	// one, so a name created in them during the run cannot be read or run.
	// Listing them stays allowed (names only: the masks keep the existing
	// denied directories unlistable).
	LateReadDenied []string
	// MaskedFiles, with Exact, are read-denied files the mounts mask. A
	// mask covers the directory entry it was mounted on: a file replaced
	// on the host during the run (renamed over, as editors and npm write
	// files) is a new entry it does not cover. Landlock then handles reads
	// as for LateReadDenied, and the directories above each are split, so
	// the name stays unreadable whatever stands there.
	MaskedFiles []string
	// LateWriteDenied, with Exact, are write-denied paths no mount
	// covers (mountns.View.LateWriteDenied: in a root holding a writable
	// git directory): the directories above each are split as in
	// Landlock-only mode, so that they cannot be written, made or
	// replaced.
	LateWriteDenied []string
	// Errata is the kernel's errata mask (Errata), nil when the kernel did
	// not answer the query: unfixed errata that widen access become gaps.
	Errata *uint64
	// ResolveUnix (ABI 9) handles LANDLOCK_ACCESS_FS_RESOLVE_UNIX and
	// grants it where writing is granted: a pathname unix socket can then
	// be connected to, or sent to, only beneath the writable roots.
	ResolveUnix bool
}

// Rule grants Access on the file or directory at Path and, for a directory,
// on everything beneath it.
type Rule struct {
	Path   string
	Access AccessFS
	// Required rules fail the build when their path cannot be opened; the
	// others (the entries of a split directory, devices) are skipped when
	// they vanished.
	Required bool
	// Entries makes the rule one per entry of the directory at Path
	// instead, as the directory is listed when the run starts, except the
	// names in Except and symbolic links (following one lands on its
	// target, whose own ancestors decide): how a directory with a denied
	// path beneath it is split. The listing is the run's, not the
	// decision's, so a name made there later changes no decision, and
	// only what exists at the start is granted.
	Entries bool
	// Except are the names of a split directory's entries on the way to a
	// denied path (or a limited one): they are denied, or split or granted
	// less by rules of their own.
	Except []string
}

// Narrowing is a directory where Landlock-only mode grants less than the
// policy says, because a denied path lies beneath it.
type Narrowing struct {
	Dir string `json:"dir"`
	// Effect says what the program cannot do there.
	Effect string `json:"effect"`
}

// Gap is something the policy asks for that this kernel's Landlock cannot
// enforce.
type Gap struct {
	Right  string `json:"right"`
	Effect string `json:"effect"`
	// WriteBoundary is true when the gap lets a program change files outside
	// the writable roots (or read denied ones) and nothing else stops it:
	// such a run is refused unless degradation was allowed.
	WriteBoundary bool `json:"write_boundary"`
}

// Spec is a computed ruleset, ready to be built into a kernel object.
type Spec struct {
	ABI           int
	HandledFS     AccessFS
	HandledNet    uint64
	Scoped        uint64
	Rules         []Rule
	Ports         []uint16
	RestrictFlags uint32
	Narrowed      []Narrowing
	Gaps          []Gap
	// WriteSplits are the directories of the writable roots that
	// Landlock-only mode splits for a denied path beneath them (see
	// Narrowing): their entries are granted one by one, so the program
	// alone cannot make, remove or rename an entry directly in them.
	WriteSplits []Split
}

// WriteSplitEffect is what a directory split on the write side loses.
const WriteSplitEffect = "entries directly in it cannot be created, removed or renamed"

// Split is a directory split on the write side, and the names in it that
// lead to a denied path: the denied entries themselves and the directories
// above denied paths. Whatever else is made in it, nothing of those may be.
// Git says it lies in a writable git directory (policy.GitDir), where no
// link, FIFO or socket may be made and nothing moved in or out.
type Split struct {
	Dir   string
	Names []string
	Git   bool
}

// GitWithheld are the rights a writable git directory (policy.GitDir)
// never grants beneath it: a symbolic link there would be followed by git
// on the host when it writes the file (a reflog is appended to through
// one, COMMIT_EDITMSG written through one), a FIFO or a socket would hang
// or fail it, and a file or directory moved in (Refer) could bring links
// along.
const GitWithheld = MakeSym | MakeFifo | MakeSock | MakeChar | MakeBlock | Refer

// ReadWrite is every right the sandbox ever grants on a directory: for a
// directory the supervisor created for the program alone.
const ReadWrite = readRights | ReadDir | writeRights | ResolveUnx

// WithRule returns a copy of s with one more rule.
func (s *Spec) WithRule(r Rule) *Spec {
	c := *s
	c.Rules = append(append([]Rule(nil), s.Rules...), r)
	return &c
}

// WithPort returns a copy of s that restricts TCP connect to the ports
// allowed so far and port (on ABI 4 and later).
//
// From ABI 10 it also handles UDP bind and connect/send with no rule: with
// the proxy on the host's loopback (no network namespace), UDP would
// otherwise reach any host.
func (s *Spec) WithPort(port uint16) *Spec {
	c := *s
	if Supports(s.ABI, FeatTCP) {
		c.HandledNet |= netConnectTCP
		c.Ports = append(append([]uint16(nil), s.Ports...), port)
	}
	if Supports(s.ABI, FeatUDP) {
		c.HandledNet |= netBindUDP | netConnectSendUDP
	}
	return &c
}

// Compute turns the Plan into a Spec for the given kernel. It reads
// nothing: a split directory's entries are listed by the run (Rule.Entries).
func Compute(p *policy.Plan, opt Options) *Spec {
	s := &Spec{ABI: opt.ABI}
	s.Gaps = gaps(p, opt)
	if opt.ABI < 1 {
		return s
	}
	s.HandledFS = fsRightsAt(opt.ABI)
	if opt.ResolveUnix {
		s.HandledFS |= optionalFSAt(opt.ABI) & ResolveUnx
	}
	late := opt.Exact && len(opt.LateReadDenied)+len(opt.MaskedFiles) > 0
	if opt.Exact && opt.ReadsByMounts {
		s.HandledFS &^= Truncate
		if !late {
			s.HandledFS &^= readRights | ReadDir
		}
	}

	var readDenied, writeDenied, gitDirs []string
	for _, g := range p.Filesystem.GitDirs {
		gitDirs = append(gitDirs, g.Path)
	}
	for _, d := range p.Filesystem.ReadDenied {
		readDenied = append(readDenied, d.Path)
		writeDenied = append(writeDenied, d.Path)
	}
	for _, d := range p.Filesystem.WriteDenied {
		writeDenied = append(writeDenied, d.Path)
	}
	if opt.Exact {
		// The mounts deny what exists; Landlock what may appear, and the
		// names of masked files, which may be replaced; and, around a
		// writable git directory, what the mounts leave to it.
		readDenied, writeDenied = append(append([]string(nil), opt.LateReadDenied...), opt.MaskedFiles...), opt.LateWriteDenied
	}

	read := &walker{denied: sortedUnique(readDenied), access: (readRights | ReadDir) & s.HandledFS, listSplit: opt.Exact}
	if read.access != 0 {
		read.grant("/", true)
	}
	for _, d := range read.split {
		effect := "cannot be listed, and entries created in it after the start cannot be read"
		if opt.Exact {
			effect = "entries created in it after the start cannot be read (a denied path that does not exist yet, or a denied file that may be replaced, lies beneath it)"
		}
		s.Narrowed = append(s.Narrowed, Narrowing{Dir: d, Effect: effect})
	}
	write := &walker{denied: sortedUnique(writeDenied), access: (writeRights | ResolveUnx) & s.HandledFS, limited: gitDirs, withheld: GitWithheld}
	for _, r := range p.Filesystem.WritableRoots {
		write.grant(r.Path, true)
	}
	for _, d := range write.split {
		s.Narrowed = append(s.Narrowed, Narrowing{Dir: d, Effect: WriteSplitEffect})
		s.WriteSplits = append(s.WriteSplits, Split{Dir: d, Names: write.namesBelow(d), Git: within(d, gitDirs)})
	}
	s.Rules = append(read.rules, write.rules...)
	for _, dev := range p.Filesystem.WritableDevices {
		s.Rules = append(s.Rules, Rule{Path: dev, Access: deviceRights & s.HandledFS})
	}

	switch p.Network.Mode {
	case policy.NetworkNone:
		// TCP (ABI 4) and UDP (ABI 10) rights handled with no rule: no
		// bind, connect or send at all (seccomp refuses the sockets too).
		s.HandledNet = netRightsAt(opt.ABI)
	case policy.NetworkAllowlist:
		// In a namespace with only loopback, connect reaches nothing
		// but the proxy and the program's own servers: restricting it
		// there would only break the latter. Without one, the caller
		// confines connect to the proxy's port (WithPort).
	}
	s.Scoped = scopesAt(opt.ABI)
	s.RestrictFlags = flagsAt(opt.ABI)
	if opt.LogDenials && Supports(opt.ABI, FeatAudit) {
		s.RestrictFlags |= logNewExecOn
	}
	return s
}

// walker grants access on subtrees, except on denied paths: a directory with
// a denied path beneath it is split into its entries, recursively.
type walker struct {
	denied []string // sorted, clean, absolute
	access AccessFS
	// listSplit grants ReadDir (when in access) on each split directory
	// itself: listing, not reading, what is beneath it. Only where mounts
	// keep the denied directories that exist unlistable (exact mode).
	listSplit bool
	// limited are directories beneath which a rule grants access less
	// withheld (the writable git directories): a grant above one is
	// split on the way to it, since Landlock adds up the rights of every
	// rule above a file.
	limited  []string
	withheld AccessFS
	rules    []Rule
	split    []string
}

// covers reports whether p is denied or beneath a denied path, and whether
// some denied path lies strictly beneath p.
func (w *walker) classify(p string) (covered, below bool) {
	for _, d := range w.denied {
		if policy.Within(p, d) {
			return true, false
		}
		if policy.Beneath(d, p) {
			below = true
		}
	}
	return false, below
}

// grant grants w.access on p, split where a denied path lies beneath it:
// then each entry of p gets the access, as the run finds them at its start,
// but the names on the way to a denied or limited path, which are granted
// (or split) here in turn.
func (w *walker) grant(p string, required bool) {
	covered, below := w.classify(p)
	if covered {
		return
	}
	access := w.access
	if within(p, w.limited) {
		access &^= w.withheld
	} else if w.access&w.withheld != 0 && holds(p, w.limited) {
		below = true
	}
	if !below {
		w.rules = append(w.rules, Rule{Path: p, Access: access, Required: required})
		return
	}
	w.split = append(w.split, p)
	if w.listSplit && w.access&ReadDir != 0 {
		w.rules = append(w.rules, Rule{Path: p, Access: ReadDir, Required: required})
	}
	// Beneath a limited directory every entry is limited too, so the
	// entries' access is p's own.
	names := w.namesBelow(p)
	w.rules = append(w.rules, Rule{Path: p, Access: access, Required: required, Entries: true, Except: names})
	for _, n := range names {
		w.grant(filepath.Join(p, n), false)
	}
}

// namesBelow are the names of the entries of dir on the way to a denied
// path (the first component of each denied path beneath it), sorted.
func (w *walker) namesBelow(dir string) []string {
	var names []string
	for _, d := range append(append([]string(nil), w.denied...), w.limited...) {
		if !policy.Beneath(d, dir) {
			continue
		}
		rel := strings.TrimPrefix(d, dir)
		rel = strings.TrimPrefix(rel, "/")
		name, _, _ := strings.Cut(rel, "/")
		if name != "" && (len(names) == 0 || names[len(names)-1] != name) {
			names = append(names, name)
		}
	}
	return sortedUnique(names)
}

// within reports whether p is one of dirs or lies beneath one.
func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if policy.Within(p, d) {
			return true
		}
	}
	return false
}

// holds reports whether one of dirs lies strictly beneath p.
func holds(p string, dirs []string) bool {
	for _, d := range dirs {
		if policy.Beneath(d, p) {
			return true
		}
	}
	return false
}

func sortedUnique(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, p := range in {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
