// Package seccomp translates a Plan's syscall rules into a seccomp BPF
// program with libseccomp. Calls that match no rule are allowed; system calls
// of a foreign architecture on this one (i386 through int 0x80 and x32 on
// x86_64, AArch32 on arm64) kill the process, whatever the rules say. The
// program is exported as bytes for the spawn stage, which loads it in the
// child just before exec; this package never filters the calling process.
package seccomp

import (
	"fmt"
	"os"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Table is the policy.SyscallTable of libseccomp's syscall tables.
type Table struct{}

// Lookup implements policy.SyscallTable. libseccomp resolves a name absent
// from the native architecture but present on another to a negative
// pseudo-number, and a name it knows nowhere to an error.
func (Table) Lookup(name string) (native, known bool) {
	if name == "" {
		return false, false
	}
	nr, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		return false, false
	}
	return nr >= 0, true
}

// LibraryVersion is libseccomp's version, for reports.
func LibraryVersion() string {
	a, b, c := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

// Program is a compiled filter.
type Program struct {
	// BPF is the struct sock_filter array.
	BPF []byte
	// Rules is the number of rules that went into it.
	Rules int
	// Notify is set when the errno rules were compiled to user
	// notifications: Errnos then says, per native syscall number, which
	// errno the supervisor must answer with.
	Notify bool
	Errnos map[int32]unix.Errno
	// Cache says where the program came from: CacheOff, CacheLoaded,
	// CacheCompiled or CacheRejected. With CacheRejected, CacheRejection
	// says what was wrong with the entry that was not loaded.
	Cache          string
	CacheRejection string
	// Mediated are the native syscall numbers of ActionMediate rules: the
	// supervisor carries those calls out itself (see Mediator).
	Mediated map[int32]bool
}

// ActionMediate is a host rule's action (never a Plan's): the call goes to
// the supervisor as a user notification, and the supervisor carries it out
// for the program, or refuses it (seccomp.Mediator).
const ActionMediate policy.Action = "mediate"

// NeedsListener reports whether the filter must be loaded with a
// user-notification listener for the supervisor.
func (p *Program) NeedsListener() bool { return p.Notify || len(p.Mediated) > 0 }

// Options tune Compile.
type Options struct {
	// Notify compiles every errno rule to SECCOMP_RET_USER_NOTIF, so that
	// the supervisor sees each denied call (syscall, pid) and answers it
	// with the rule's errno: observed, and still denied.
	Notify bool
	// Cache, when set, keeps compiled programs, named by everything that
	// goes into them and authenticated: compiling with libseccomp costs
	// about half a millisecond of every start, reading the result back and
	// checking its tag a few microseconds.
	Cache *Cache
}

// Compile builds the filter for s.
func Compile(s *policy.Seccomp, opt Options) (*Program, error) {
	p := &Program{Rules: len(s.Rules), Notify: opt.Notify, Cache: CacheOff}
	if opt.Notify {
		p.Errnos = map[int32]unix.Errno{}
	}
	// Every rule is checked (and the answers for observed calls worked
	// out) whether or not the program comes from the cache.
	for i, r := range s.Rules {
		if _, _, _, err := p.check(r); err != nil {
			return nil, fmt.Errorf("seccomp: rule %d (%s): %w", i, r.Syscall, err)
		}
	}
	if err := checkOverrides(s.Rules); err != nil {
		return nil, err
	}
	var name string
	if c := opt.Cache; c != nil {
		name = cacheKey(s, opt)
		bpf, err := c.load(name)
		if err == nil {
			p.BPF, p.Cache = bpf, CacheLoaded
			return p, nil
		}
		p.Cache = CacheCompiled
		if err != errMissing {
			p.Cache, p.CacheRejection = CacheRejected, err.Error()
		}
	}
	bpf, err := p.build(s)
	if err != nil {
		return nil, err
	}
	p.BPF = bpf
	if name != "" {
		opt.Cache.store(name, bpf)
	}
	return p, nil
}

// build compiles the rules with libseccomp.
func (p *Program) build(s *policy.Seccomp) ([]byte, error) {
	f, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	// Foreign-architecture calls kill the process (NewFilter's default,
	// asserted so a library change cannot relax it silently).
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	// The spawn stage sets no_new_privs itself, before Landlock.
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp: no_new_privs bit: %w", err)
	}
	// A binary search over the syscall numbers instead of a list: every
	// system call of the program runs the filter, and most match no rule.
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: optimize: %w", err)
	}
	for i, r := range s.Rules {
		nr, act, conds, err := p.check(r)
		if err == nil {
			if len(conds) == 0 {
				err = f.AddRule(nr, act)
			} else {
				err = f.AddRuleConditional(nr, act, conds)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("seccomp: rule %d (%s): %w", i, r.Syscall, err)
		}
	}
	return export(f)
}

// checkOverrides refuses a syscall with an unconditional rule and any other
// rule: libseccomp lets the unconditional one decide every call, so the
// other would be dropped without a word (a log rule over a denial would
// allow what the denial stops).
func checkOverrides(rules []policy.SyscallRule) error {
	first := map[string]int{} // syscall -> index of its first rule
	for i, r := range rules {
		j, seen := first[r.Syscall]
		if !seen {
			first[r.Syscall] = i
			continue
		}
		if len(r.Args) == 0 || len(rules[j].Args) == 0 {
			return fmt.Errorf("seccomp: rules %d and %d are both for %s and one has no conditions: it would override the other", j, i, r.Syscall)
		}
	}
	return nil
}

// check turns one rule into libseccomp's terms, and records the errno an
// observed call must be answered with.
func (p *Program) check(r policy.SyscallRule) (libseccomp.ScmpSyscall, libseccomp.ScmpAction, []libseccomp.ScmpCondition, error) {
	nr, err := libseccomp.GetSyscallFromName(r.Syscall)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("unknown system call %q", r.Syscall)
	}
	if r.Action == ActionMediate {
		if p.Mediated == nil {
			p.Mediated = map[int32]bool{}
		}
		p.Mediated[int32(nr)] = true
		conds, err := conditions(r.Args)
		return nr, libseccomp.ActNotify, conds, err
	}
	act, err := action(r)
	if err != nil {
		return 0, 0, nil, err
	}
	if p.Notify && r.Action == policy.ActionErrno {
		e := errnos[r.Errno]
		if prev, ok := p.Errnos[int32(nr)]; ok && prev != e {
			return 0, 0, nil, fmt.Errorf("rules for %s answer both %s and %s: one errno per syscall when observing", r.Syscall, prev, e)
		}
		p.Errnos[int32(nr)] = e
		act = libseccomp.ActNotify
	}
	conds, err := conditions(r.Args)
	return nr, act, conds, err
}

func conditions(args []policy.ArgCondition) ([]libseccomp.ScmpCondition, error) {
	conds := make([]libseccomp.ScmpCondition, 0, len(args))
	for _, a := range args {
		c, err := condition(a)
		if err != nil {
			return nil, err
		}
		conds = append(conds, c)
	}
	return conds, nil
}

func action(r policy.SyscallRule) (libseccomp.ScmpAction, error) {
	switch r.Action {
	case policy.ActionErrno:
		e, ok := errnos[r.Errno]
		if !ok {
			return 0, fmt.Errorf("unknown errno %q", r.Errno)
		}
		return libseccomp.ActErrno.SetReturnCode(int16(e)), nil
	case policy.ActionLog:
		return libseccomp.ActLog, nil
	case policy.ActionKillProcess:
		return libseccomp.ActKillProcess, nil
	}
	return 0, fmt.Errorf("unknown action %q", r.Action)
}

// errnos are the error numbers a rule may return.
var errnos = map[string]unix.Errno{
	"EPERM": unix.EPERM, "EACCES": unix.EACCES, "ENOSYS": unix.ENOSYS,
	"EAFNOSUPPORT": unix.EAFNOSUPPORT, "EINVAL": unix.EINVAL, "ENOTSUP": unix.ENOTSUP,
}

func condition(a policy.ArgCondition) (libseccomp.ScmpCondition, error) {
	switch a.Op {
	case "eq":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareEqual, a.Value)
	case "ne":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareNotEqual, a.Value)
	case "lt":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareLess, a.Value)
	case "le":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareLessOrEqual, a.Value)
	case "gt":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareGreater, a.Value)
	case "ge":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareGreaterEqual, a.Value)
	case "masked_eq":
		return libseccomp.MakeCondition(a.Index, libseccomp.CompareMaskedEqual, a.Mask, a.Value)
	}
	return libseccomp.ScmpCondition{}, fmt.Errorf("unknown comparison %q", a.Op)
}

// export writes the BPF through a memfd: Debian's libseccomp 2.5 has no
// seccomp_export_bpf_mem.
func export(f *libseccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "seccomp-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	size, err := file.Seek(0, 1)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	bpf := make([]byte, size)
	if _, err := file.ReadAt(bpf, 0); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	return bpf, nil
}
