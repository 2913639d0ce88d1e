package supervisor

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/auditlog"
	"sandbox-executable/landlock"
	"sandbox-executable/seccomp"
	"sandbox-executable/spawn"
)

// FileDenialsReport says whether a run's file denials are recorded: the
// kernel's Landlock audit records of the run's own domain, read while it
// runs, each a DenialFile line with the rule that refused it.
type FileDenialsReport struct {
	// Read: the run reads them (the recipe opens the audit socket).
	Read bool
	// Why says why not, when not.
	Why string
	// Unseen says what the run refuses that no record shows: in exact
	// mode, the mount namespace's own refusals.
	Unseen string
}

// ServiceAudit is what the service needs to read a run's file denials and
// to name the rule of each: made by the decision (Prepared.Service).
type ServiceAudit struct {
	FileDenialsReport
	Rules    AccessRules          `json:"rules"`
	Narrowed []landlock.Narrowing `json:"narrowed,omitempty"`
	// Standalone: the run's policy is the built-in default with flags
	// composed on it; the advice names flags.
	Standalone bool `json:"standalone,omitempty"`
}

// FileDenialsResult is what a run saw of its file denials.
type FileDenialsResult struct {
	// Observed: the kernel's records of the run were read, and Count is
	// how many of its denials they showed.
	Observed bool
	Count    int64
	// KernelCount is how many the kernel counted for the run's domain,
	// recorded or not, when it said (at the domain's end).
	KernelCount *uint64
	// Why says why they were not observed, or what was missed.
	Why string
	// Unseen is FileDenialsReport's.
	Unseen string
}

// exactUnseen is what exact mode refuses before Landlock is asked.
const exactUnseen = "exact mode's own refusals have no record: a write outside the writable roots or to a protected name meets a read-only mount (EROFS) and a masked secret its mask (ENOENT, EACCES) before Landlock is asked; --fs-mode landlock refuses the same through Landlock, which records them"

// decideAudit decides whether the run reads its file denials, before the
// Landlock domain is computed (its restrict flags ask the kernel to log
// the program's denials): when the caller will look at them (a denial log
// or a report), the kernel records Landlock's denials (ABI 7), and this
// process may read the audit log (CAP_AUDIT_READ).
func (pr *Prepared) decideAudit() error {
	cfg, f := pr.cfg, pr.facts
	r := &pr.audit
	if pr.exact() {
		r.Unseen = exactUnseen
	}
	switch {
	case !cfg.LogDenials && !cfg.Report:
		r.Why = "not asked for (--log-denials or a report)"
	case f.LandlockABI == 0:
		r.Why = "no Landlock on this kernel"
	case !landlock.Supports(f.LandlockABI, landlock.FeatAudit):
		r.Why = "Landlock ABI " + strconv.Itoa(f.LandlockABI) + " has no audit records (ABI 7, Linux 6.15)"
	case !f.AuditRead:
		r.Why = "reading the kernel's audit log needs CAP_AUDIT_READ (root): the kernel's own log (auditd, journald, dmesg) has them where its audit is on"
	default:
		r.Read = true
	}
	return nil
}

// serviceAudit is the record the service reads the run's denials from.
func (pr *Prepared) serviceAudit() *ServiceAudit {
	if !pr.cfg.LogDenials && !pr.cfg.Report {
		return nil
	}
	a := &ServiceAudit{FileDenialsReport: pr.audit, Rules: pr.accessRules(), Standalone: pr.cfg.Standalone}
	if pr.Landlock != nil {
		a.Narrowed = pr.Landlock.Narrowed
	}
	return a
}

// auditRun is the service's reading of a run's file denials.
type auditRun struct {
	rec *ServiceAudit
	run *auditlog.Run
	// why says why the records are not read, or what is amiss.
	why string
}

// dealloc is how long the end of a run with denials waits for the
// kernel's count of them (sent once the domain is freed).
const dealloc = 250 * time.Millisecond

// startAudit reads what the runner opened (EventAudit).
func startAudit(rec *ServiceAudit, l spawn.AuditLog, out func(Denial)) *auditRun {
	a := &auditRun{rec: rec}
	switch {
	case l.FD < 0:
		a.why = "the kernel refused the audit socket: " + l.Err.Error()
		return a
	case l.Creator <= 0:
		unix.Close(l.FD)
		a.why = "the program did not say its pid before making its Landlock domain: the run's records cannot be told from others"
		return a
	}
	st, err := auditlog.QueryStatus()
	switch {
	case err == nil && st.Enabled == 0:
		unix.Close(l.FD)
		a.why = "the kernel's audit is off, so Landlock records nothing: `auditctl -e 1` turns it on (a kernel booted with audit=0 cannot)"
		return a
	case err != nil:
		// Not the initial PID namespace, or no CAP_AUDIT_CONTROL: the
		// records may still come.
		a.why = "whether the kernel's audit is on could not be asked (" + err.Error() + "): none may have been written"
	}
	a.run = auditlog.Start(l.FD, l.Creator, l.Comm, func(d auditlog.Denial) { out(rec.denial(d)) })
	return a
}

// finish stops the reading and says what it saw.
func (a *auditRun) finish() *FileDenialsResult {
	res := &FileDenialsResult{Why: a.why, Unseen: a.rec.Unseen}
	if a.run == nil {
		return res
	}
	s := a.run.Finish(dealloc)
	res.Observed, res.Count = s.Err == nil, s.Denials
	var missed []string
	if s.Err != nil {
		missed = append(missed, "reading stopped: "+s.Err.Error())
	}
	if s.KernelCounted {
		n := s.KernelDenials
		res.KernelCount = &n
		if n > uint64(s.Denials) {
			missed = append(missed, strconv.FormatUint(n-uint64(s.Denials), 10)+" denied requests the kernel counted have no record (its audit backlog or rate limit dropped them, or an audit rule excluded them)")
		}
	}
	if s.Overruns > 0 {
		missed = append(missed, "records were lost: the audit socket's buffer overflowed")
	}
	if s.Malformed > 0 {
		missed = append(missed, strconv.Itoa(s.Malformed)+" records were not of the kernel's form and were not read")
	}
	if s.Conflicts > 0 {
		missed = append(missed, "another domain named the run's creator: only the first was taken")
	}
	if len(missed) > 0 {
		if res.Why != "" {
			missed = append([]string{res.Why}, missed...)
		}
		res.Why = strings.Join(missed, "; ")
	}
	return res
}

// notRead is the result of a run whose records are not read at all.
func (a *ServiceAudit) notRead() *FileDenialsResult {
	why := a.Why
	if a.Read {
		why = "the runner did not open the audit log"
	}
	return &FileDenialsResult{Why: why, Unseen: a.Unseen}
}

// Write rights: any of them makes a denial a write.
var writeBlockers = map[string]bool{
	"fs.write_file": true, "fs.truncate": true, "fs.refer": true,
	"fs.remove_dir": true, "fs.remove_file": true,
	"fs.make_char": true, "fs.make_dir": true, "fs.make_reg": true, "fs.make_sock": true,
	"fs.make_fifo": true, "fs.make_block": true, "fs.make_sym": true,
}

// denial is the line of one of the run's Landlock denials: a file denial
// with the rule that refused it and what would allow it, or another of
// Landlock's (a TCP port, a signal or abstract socket out of scope).
func (a *ServiceAudit) denial(d auditlog.Denial) Denial {
	x := d.Access
	ops := make([]string, len(x.Blockers))
	file := true
	for i, b := range x.Blockers {
		ops[i] = strings.TrimPrefix(b, "fs.")
		file = file && strings.HasPrefix(b, "fs.")
	}
	out := Denial{Time: d.Time, Kind: DenialFile, Pid: d.Pid, Exe: d.Exe, Operation: strings.Join(ops, ","),
		Path: x.Path}
	if out.Path == "" {
		out.Path = x.Name
	}
	if d.Syscall != 0 {
		out.Syscall = syscallName(d.Syscall)
	}
	if d.Errno != 0 {
		out.Errno = unix.ErrnoName(d.Errno)
	}
	if !file {
		out.Kind = DenialLandlock
		out.Rule = "outside what the network mode and Landlock's scoping allow"
		return out
	}
	out.Rule, out.Source, out.Allow = a.explain(x)
	return out
}

// explain names the rule that refused x and what would allow it, from the
// run's decision: the verdict of the path for the denial's operation, or,
// where the decision allows the path, the narrowed directory that
// refused it (a name that was not there when the run started).
func (a *ServiceAudit) explain(x auditlog.Access) (rule, source, allow string) {
	op, dirOp := "read", false
	for _, b := range x.Blockers {
		switch {
		case writeBlockers[b]:
			op = "write"
		case b == "fs.execute" && op != "write":
			op = "execute"
		case b == "fs.change_topology":
			return "no mount changes in a sandbox", "", ""
		case b == "fs.ioctl_dev":
			return "an ioctl on a device the run may not use so", "", ""
		}
		// make_*, remove_* and refer name the directory they change.
		dirOp = dirOp || strings.HasPrefix(b, "fs.make_") || strings.HasPrefix(b, "fs.remove_") || b == "fs.refer" || b == "fs.read_dir"
	}
	path := x.Path
	if path == "" || !filepath.IsAbs(path) {
		return "refused by Landlock", "", ""
	}
	dir := path
	if !dirOp {
		dir = filepath.Dir(path)
	}
	acc := a.Rules.Access(path)
	v := acc.Read
	switch op {
	case "write":
		v = acc.Write
	case "execute":
		v = acc.Execute
	}
	if v.Allowed {
		for _, n := range a.Narrowed {
			if n.Dir == dir || n.Dir == path {
				return "a narrowed directory: " + n.Dir + " (" + n.Effect + ")", "", narrowedAdvice
			}
		}
		return "refused by Landlock where the decision allows it (" + v.Rule + ")", "", ""
	}
	rule = v.Rule
	if v.Entry != "" && v.Entry != path {
		rule += ": " + v.Entry
	}
	return rule, v.Source, v.Advice(op, path, dir, a.Standalone)
}

// narrowedAdvice is what allows a name a narrowed directory refuses.
const narrowedAdvice = "only the entries there when the run started are granted: make it before the run"

// syscallName names a call by its number on this architecture.
func syscallName(nr int) string {
	if name, _ := seccomp.SyscallName(int32(nr)); name != "" {
		return name
	}
	return strconv.Itoa(nr)
}
