package cgroups

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultV2Parent is the directory name, under the cgroup2 mount, of the
// subtree a root supervisor puts its groups in. It is shared by every
// supervisor and never removed.
const DefaultV2Parent = "sandbox-executable"

// New creates the group of one sandbox run, sets lim, and returns it. It is
// safe for concurrent use with the same Host.
//
// Where the group goes:
//
//   - Each limit goes to the hierarchy that has its controller: cgroup2 where
//     the controller is available there (unified host), else the v1
//     hierarchy bound to it (hybrid and legacy hosts). A limit no hierarchy
//     can enforce is an *UnavailableError.
//   - cgroup2 (every host that has it, limits or not: placement with
//     CLONE_INTO_CGROUP, tracking, cgroup.kill, CPU figures): under
//     Options.Parent; else, as root, under <mount>/sandbox-executable (made
//     on demand); else, as another user, inside this process's own cgroup,
//     which must be delegated to it. Controllers a limit needs are enabled
//     down to the parent. A cgroup with processes cannot enable controllers
//     (no-internal-processes rule): when the cgroup is this process's own,
//     the process moves itself into a leaf child named
//     NamePrefix+"supervisor" and the groups become its siblings; when other
//     processes are in it too, New fails with an *UnavailableError naming
//     them (they are not ours to move).
//   - v1 (only the hierarchies a limit needs; on a legacy host also the
//     freezer, for the kill, and cpuacct, for CPU figures): under
//     Options.Parent, else inside this process's own cgroup of that
//     hierarchy.
//
// The group's name is Options.Name or NamePrefix+"<pid>-<start>-<random>".
func New(h *Host, lim Limits, opt Options) (Group, error) {
	if math.IsNaN(lim.CPUQuotaCores) || math.IsInf(lim.CPUQuotaCores, 0) || lim.CPUQuotaCores < 0 {
		return nil, errors.New("cgroups: invalid CPUQuotaCores " + strconv.FormatFloat(lim.CPUQuotaCores, 'g', -1, 64))
	}
	if h == nil || h.Mode == Unavailable {
		return nil, &UnavailableError{
			Mode:    Unavailable,
			Missing: "a mounted cgroup filesystem (none in /proc/self/mountinfo)",
			Hint:    "mount cgroup2 on /sys/fs/cgroup, or run where one is mounted",
		}
	}
	if opt.Name != "" && !validName(opt.Name) {
		return nil, errors.New("cgroups: invalid group name " + strconv.Quote(opt.Name))
	}
	p, err := route(h, lim)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		name := opt.Name
		if name == "" {
			name = newName()
		}
		g, err := create(h, lim, opt, p, name)
		if err == nil {
			return g, nil
		}
		if opt.Name != "" || attempt == 3 || !errors.Is(err, unix.EEXIST) {
			return nil, err
		}
	}
}

func validName(n string) bool {
	return n != "." && n != ".." && len(n) <= 255 && !strings.ContainsAny(n, "/\x00\n")
}

// plan says which hierarchy gets which controller.
type plan struct {
	v2ctrls []string
	v1      []v1Need
}

type v1Need struct {
	hier  *Hierarchy
	ctrls []string // limits to set there (none for freezer, cpuacct)
}

func (p *plan) addV1(hier *Hierarchy, c string) {
	for i := range p.v1 {
		if p.v1[i].hier == hier {
			if c != "" {
				p.v1[i].ctrls = append(p.v1[i].ctrls, c)
			}
			return
		}
	}
	n := v1Need{hier: hier}
	if c != "" {
		n.ctrls = []string{c}
	}
	p.v1 = append(p.v1, n)
}

// route decides where each limit goes. Pure apart from reading h.
func route(h *Host, lim Limits) (plan, error) {
	var p plan
	var need []string
	if lim.MemoryBytes > 0 {
		need = append(need, "memory")
	}
	if lim.Pids > 0 {
		need = append(need, "pids")
	}
	if lim.CPUQuotaCores > 0 {
		need = append(need, "cpu")
	}
	for _, c := range need {
		if h.V2 != nil && h.V2.Has(c) {
			p.v2ctrls = append(p.v2ctrls, c)
		} else if v := h.V1For(c); v != nil {
			p.addV1(v, c)
		} else {
			return p, &UnavailableError{
				Mode:    h.Mode,
				Missing: "the " + c + " controller (not available in any mounted cgroup hierarchy)",
				Hint:    "enable it in the kernel and the cgroup2 root's cgroup.subtree_control, or mount its v1 hierarchy; or run without a " + c + " limit",
			}
		}
	}
	if h.V2 == nil {
		// Legacy: the freezer for the kill, cpuacct for CPU figures.
		if v := h.V1For("freezer"); v != nil {
			p.addV1(v, "")
		}
		if v := h.V1For("cpuacct"); v != nil {
			p.addV1(v, "")
		} else if lim.CPUAccounting {
			return p, &UnavailableError{
				Mode:    h.Mode,
				Missing: "the cpuacct controller (the tree's CPU time cannot be counted for its CPU budget)",
				Hint:    "mount the v1 cpuacct hierarchy, or cgroup2; or run without cpu_time_secs",
			}
		}
		if len(p.v1) == 0 {
			return p, &UnavailableError{
				Mode:    h.Mode,
				Missing: "a v1 hierarchy to track the sandbox's processes in (no freezer, cpuacct, memory, pids or cpu hierarchy)",
				Hint:    "mount the v1 freezer hierarchy, or cgroup2",
			}
		}
	}
	return p, nil
}

// create makes the directories of one group; on failure it removes what it
// made.
func create(h *Host, lim Limits, opt Options, p plan, name string) (*group, error) {
	g := &group{mode: h.Mode}
	ok := false
	defer func() {
		if !ok {
			g.Remove()
		}
	}()
	if h.V2 != nil {
		if err := g.createV2(h, lim, opt, p.v2ctrls, name); err != nil {
			return nil, err
		}
	}
	for _, n := range p.v1 {
		if err := g.createV1(h, lim, opt, n, name); err != nil {
			return nil, err
		}
	}
	ok = true
	return g, nil
}

func (g *group) createV2(h *Host, lim Limits, opt Options, ctrls []string, name string) error {
	hier := h.V2
	pl, err := PlaceV2(hier, opt.Parent, os.Geteuid())
	if err != nil {
		return err
	}
	parent, top, shared, delegated := pl.Parent, pl.Top, pl.Shared, pl.Delegated
	if pl.Explicit {
		made, err := mkdirAll(top, parent)
		g.made = append(made, g.made...)
		if err != nil {
			return g.permErr(h, parent, err, AdvisePrivilege)
		}
	}
	advice := AdvisePrivilege
	if delegated {
		advice = AdviseDelegate
	}
	if len(ctrls) > 0 {
		if shared {
			if err := mkdir(parent); err != nil && !errors.Is(err, unix.EEXIST) {
				return g.permErr(h, parent, err, advice)
			}
		}
		if err := enableControllers(hier, top, parent, ctrls, h.Mode, opt.MoveSelf); err != nil {
			return g.permErr(h, parent, err, advice)
		}
	}
	dir := parent + "/" + name
	err = mkdir(dir)
	if shared && errors.Is(err, unix.ENOENT) {
		if err = mkdir(parent); err == nil || errors.Is(err, unix.EEXIST) {
			err = mkdir(dir)
		}
	}
	if err != nil {
		return g.permErr(h, parent, err, advice)
	}
	g.v2 = &v2Dir{path: dir, fd: -1}
	g.pending = append(g.pending, dir)
	if err := setV2Limits(dir, lim, ctrls); err != nil {
		return unavailable(err, h.Mode)
	}
	g.v2.fd, err = openV2(dir)
	return err
}

func (g *group) createV1(h *Host, lim Limits, opt Options, n v1Need, name string) error {
	pl, err := PlaceV1(n.hier, opt.Parent)
	if err != nil {
		return err
	}
	parent := pl.Parent
	if pl.Explicit {
		made, err := mkdirAll(n.hier.Mount, parent)
		g.made = append(made, g.made...)
		if err != nil {
			return g.permErr(h, parent, err, AdvisePrivilege)
		}
	}
	dir := parent + "/" + name
	if err := mkdir(dir); err != nil {
		return g.permErr(h, parent, err, AdvisePrivilege)
	}
	d := &v1Dir{path: dir, hier: n.hier, ctrls: n.ctrls}
	g.v1 = append(g.v1, d)
	g.pending = append(g.pending, dir)
	if err := setV1Limits(dir, lim, n.ctrls); err != nil {
		return unavailable(err, h.Mode)
	}
	// The child joins through tasks, not cgroup.procs: it is one thread
	// then, so moving the thread moves the process, and a thread move of
	// the writer itself takes no cgroup_threadgroup_rwsem, whose write
	// side waits out an RCU grace period (median 6.4 ms on this host's
	// 6.18 after a quiet moment, against some 20 us). Equivalent on every
	// kernel with cgroup v1 (a tasks write has moved exactly one thread
	// since 2.6.24, and the only thread is the whole process, its memcg
	// charge owner included); cheap from 5.16 on, where a write of "0"
	// (the writer itself) to tasks skips the rwsem ("cgroup: Optimize
	// single thread migration"); before that both files take it.
	fd, err := openRetry(dir+"/tasks", unix.O_WRONLY|unix.O_CLOEXEC)
	if err != nil {
		return pathErr("open", dir+"/tasks", err)
	}
	g.joinFDs = append(g.joinFDs, fd)
	g.answersFor(d)
	return nil
}

// answersFor makes d, a v1 directory of the group, the one that answers
// for each controller of its hierarchy (its figures, its kill).
func (g *group) answersFor(d *v1Dir) {
	for _, c := range d.hier.Controllers {
		switch c {
		case "memory":
			g.mem = d
		case "pids":
			g.pids = d
		case "cpuacct":
			g.cpuacct = d
		case "freezer":
			g.freezer = d
		}
	}
}

// permErr turns a permission failure into an *UnavailableError that says
// where and how to fix it; other errors pass unchanged.
func (g *group) permErr(h *Host, parent string, err error, advice Advice) error {
	return permError(h, parent, err, advice)
}

// permError is permErr's answer.
func permError(h *Host, parent string, err error, advice Advice) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		return &UnavailableError{
			Mode:    h.Mode,
			Missing: "permission to create and configure cgroups in " + parent + " (uid " + strconv.Itoa(os.Geteuid()) + ")",
			Advice:  advice,
			Err:     err,
		}
	}
	return err
}
