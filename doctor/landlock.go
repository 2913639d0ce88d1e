package doctor

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/auditlog"
	"sandbox-executable/hostfacts"
	"sandbox-executable/landlock"
)

// helperABI is the newest Landlock ABI whose features the helper uses
// (landlock's ABI table: the newest row without an Unused reason).
var helperABI = func() int {
	n := 0
	for _, r := range landlock.ABITable() {
		if r.Unused == "" {
			n = r.ABI
		}
	}
	return n
}()

// strictABI is the oldest ABI the strict model accepts without a flag: the
// one that handles truncate.
var strictABI = landlock.FeatTruncate.Since()

// abiFeature is one row of landlock's ABI table.
func abiFeature(v int) landlock.ABIInfo { return landlock.ABITable()[v-1] }

// linux is " (Linux 6.15)", or "" when the table records no release.
func linux(r landlock.ABIInfo) string {
	if r.Kernel == "" {
		return ""
	}
	return " (Linux " + r.Kernel + ")"
}

// landlockFacts are what the kernel said (hostfacts.Facts).
type landlockFacts struct {
	abi int
	// abiErr is the errno of the version query when abi is 0.
	abiErr unix.Errno
	errata uint64
	// errataErr is the errno of the errata query, 0 when it answered.
	errataErr unix.Errno
	// filtered: this process already runs under a seccomp filter.
	filtered bool
	// auditRead: this process may read the audit log; audit the kernel's
	// audit state, nil when auditErr says why it could not be asked.
	auditRead bool
	audit     *auditlog.Status
	auditErr  string
}

// landlockFactsOf is the Landlock part of the facts.
func landlockFactsOf(f *hostfacts.Facts, d *hostfacts.Diagnosis) landlockFacts {
	l := landlockFacts{abi: f.LandlockABI, abiErr: f.LandlockErrno, filtered: d.Status.Seccomp == 2,
		auditRead: f.AuditRead, audit: d.Audit, auditErr: d.AuditErr}
	switch {
	case f.LandlockErrata != nil:
		l.errata = *f.LandlockErrata
	case f.LandlockErrataErrno != 0:
		l.errataErr = f.LandlockErrataErrno
	default:
		l.errataErr = unix.EINVAL
	}
	return l
}

// landlockSummary is "filesystem, refer, ..." up to abi.
func landlockSummary(abi int) string {
	var names []string
	known := landlock.KnownABI()
	for v := 1; v <= abi && v <= known; v++ {
		names = append(names, string(abiFeature(v).Feature))
	}
	if abi > known {
		names = append(names, fmt.Sprintf("and ABI %d-%d features unknown to this helper", known+1, abi))
	}
	return strings.Join(names, ", ")
}

// upgradeFix is the kernel upgrade advice.
const upgradeFix = "boot Linux 6.15 or later (Landlock ABI 7; 6.2 is the minimum for ABI 3). Debian 12: echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/backports.list && apt update && apt install -t bookworm-backports linux-image-$(dpkg --print-architecture), then reboot"

func landlockItem(f landlockFacts, h Host) Item {
	it := Item{ID: "landlock", Title: "Landlock filesystem (and network) rules", Strict: true}
	if f.abi == 0 {
		it.Status = StatusMissing
		it.Detail = "no Landlock: landlock_create_ruleset: " + errnoText(f.abiErr) + ": " + landlockWhy(f, h)
		it.Fix = landlockFix(f, h)
		it.Notes = append(it.Notes, lsmNote(h))
		return it
	}
	errata := "n/a"
	if f.errataErr == 0 {
		errata = fmt.Sprintf("%#x", f.errata)
	}
	it.Detail = fmt.Sprintf("ABI %d (errata %s): %s", f.abi, errata, landlockSummary(f.abi))
	it.Status = StatusOK
	if f.abi < strictABI {
		it.Status = StatusDegraded
		it.Fix = upgradeFix + "; until then run with --fs-mode exact (a mount namespace) or accept the gap with --allow-degraded"
		if h.WSL.Version == 2 {
			it.Fix = wslKernelFix
		}
	}
	it.Notes = append(it.Notes, errataNotes(f)...)
	switch {
	case f.abi < helperABI:
		it.Notes = append(it.Notes, fmt.Sprintf("the helper uses up to ABI %d%s; missing here:", helperABI, linux(abiFeature(helperABI))))
		for v := f.abi + 1; v <= helperABI; v++ {
			ft := abiFeature(v)
			it.Notes = append(it.Notes, fmt.Sprintf("  ABI %d %s%s: %s", v, ft.Feature, linux(ft), ft.Missing))
		}
	case f.abi > helperABI:
		var unused []string
		for v := helperABI + 1; v <= f.abi && v <= landlock.KnownABI(); v++ {
			unused = append(unused, fmt.Sprintf("%s (%d)", abiFeature(v).Feature, v))
		}
		it.Notes = append(it.Notes, fmt.Sprintf("the kernel offers ABI %d; the helper uses up to %d (not used: %s)", f.abi, helperABI, strings.Join(unused, ", ")))
	}
	// What the helper does with each feature the kernel has that it knows,
	// from ABI 8 on (the older ones are the model itself).
	for v := 8; v <= f.abi && v <= landlock.KnownABI(); v++ {
		ft := abiFeature(v)
		use := "used"
		if ft.Unused != "" {
			use = "not used: " + ft.Unused
		}
		it.Notes = append(it.Notes, fmt.Sprintf("ABI %d %s: %s", v, ft.Feature, use))
	}
	if landlock.Supports(f.abi, landlock.FeatAudit) {
		it.Notes = append(it.Notes, fileDenialsNote(f))
	}
	it.Notes = append(it.Notes, lsmNote(h))
	return it
}

// fileDenialsNote says whether a run's file denials (Landlock's audit
// records) can be observed here: --log-denials and the report.
func fileDenialsNote(f landlockFacts) string {
	const what = "file denials (--log-denials, the report): "
	switch {
	case !f.auditRead:
		return what + "not observed: reading the kernel's audit log needs CAP_AUDIT_READ (root); its own log has them where its audit is on"
	case f.audit == nil:
		return what + "whether the kernel's audit is on could not be asked (" + f.auditErr + ")"
	case f.audit.Enabled == 0:
		return what + "not observed: the kernel's audit is off, so Landlock records nothing; `auditctl -e 1` turns it on (a kernel booted with audit=0 cannot)"
	}
	return what + "observed: the kernel's audit is on and this process reads it (exact mode's own refusals, EROFS and masks, have no record)"
}

// errataNotes says which known errata that concern this ABI are fixed.
func errataNotes(f landlockFacts) []string {
	if f.errataErr != 0 {
		return []string{"errata: not reported by this kernel (" + errnoText(f.errataErr) + "; the query exists from Linux 6.15 and in backports)"}
	}
	var fixed []string
	var notes []string
	for _, e := range landlock.KnownErrata() {
		if f.abi < e.MinABI {
			continue
		}
		if f.errata&(1<<(e.N-1)) != 0 {
			fixed = append(fixed, fmt.Sprintf("%d %s", e.N, e.Name))
		} else {
			notes = append(notes, fmt.Sprintf("erratum %d (%s) NOT fixed: %s; update to a kernel release that carries the fix", e.N, e.Name, e.Effect))
		}
	}
	known := uint64(0)
	for _, e := range landlock.KnownErrata() {
		known |= 1 << (e.N - 1)
	}
	var unknown []string
	for b := range 64 {
		if f.errata&^known&(1<<b) != 0 {
			unknown = append(unknown, fmt.Sprint(b+1))
		}
	}
	head := "errata fixed: none"
	if len(fixed) > 0 {
		head = "errata fixed: " + strings.Join(fixed, ", ")
	}
	if len(unknown) > 0 {
		head += "; also " + strings.Join(unknown, ", ") + " (unknown to this helper)"
	}
	return append([]string{head}, notes...)
}

// lsmNote says what the LSM list and lsm= say; informational only.
func lsmNote(h Host) string {
	var s string
	switch {
	case h.LSMs == nil:
		s = "active LSMs: not readable (securityfs not mounted at /sys/kernel/security)"
	case slices.Contains(h.LSMs, "landlock"):
		s = "active LSMs: " + strings.Join(h.LSMs, ",")
	default:
		s = "active LSMs: " + strings.Join(h.LSMs, ",") + " (no landlock)"
	}
	if h.BootLSM != "" {
		s += "; boot parameter lsm=" + h.BootLSM
	} else {
		s += "; no lsm= boot parameter (the kernel's CONFIG_LSM order applies)"
	}
	return s
}

func landlockWhy(f landlockFacts, h Host) string {
	switch {
	case h.WSL.Version == 1:
		return "WSL 1 has no Linux kernel"
	case f.abiErr == unix.EOPNOTSUPP:
		return "Landlock is built into the kernel but not enabled at boot (not in the LSM list)"
	case f.filtered && (f.abiErr == unix.ENOSYS || f.abiErr == unix.EPERM):
		return "a seccomp filter on this process (a container's?) may be blocking the call, or the kernel has no Landlock"
	case f.abiErr == unix.ENOSYS:
		return "the kernel has no Landlock (before 5.13, or built without CONFIG_SECURITY_LANDLOCK)"
	default:
		return "unexpected answer"
	}
}

const wslKernelFix = `WSL 2: build a kernel with CONFIG_SECURITY_LANDLOCK=y and landlock in CONFIG_LSM, set kernel=C:\\path\\to\\bzImage under [wsl2] in %UserProfile%\.wslconfig, then run wsl --shutdown`

func landlockFix(f landlockFacts, h Host) string {
	switch {
	case h.WSL.Version == 1:
		return "convert the distribution to WSL 2 (wsl --set-version <distro> 2), then see this check again"
	case h.WSL.Detected:
		return wslKernelFix
	case f.abiErr == unix.EOPNOTSUPP:
		list := "<the current list>"
		if h.LSMs != nil {
			var others []string
			for _, m := range h.LSMs {
				if m != "landlock" && m != "capability" {
					others = append(others, m)
				}
			}
			list = strings.Join(others, ",")
		}
		return "add lsm=landlock," + list + " to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot"
	case f.filtered && (f.abiErr == unix.ENOSYS || f.abiErr == unix.EPERM):
		return "run the container with a seccomp profile that allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (docker/podman run --security-opt seccomp=PROFILE.json), on a host kernel with Landlock"
	default:
		return upgradeFix
	}
}

// errnoText is "EPERM (operation not permitted)".
func errnoText(e unix.Errno) string {
	if e == 0 {
		return "no error"
	}
	if name := errnoName(e); name != "" {
		return name + " (" + e.Error() + ")"
	}
	return e.Error()
}

// errnoName is unix.ErrnoName, but with the name the system call manuals
// use for EOPNOTSUPP (ENOTSUP on Linux has the same number).
func errnoName(e unix.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	return unix.ErrnoName(e)
}
