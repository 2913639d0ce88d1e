package cgroups

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultV2Parent is the directory name, under the cgroup2 mount, of the
// subtree a root supervisor puts its groups in. It is shared by every
// supervisor and never removed.
const DefaultV2Parent = "sandbox-executable"

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

// permError turns a permission failure into an *UnavailableError that
// says where and how to fix it; other errors pass unchanged.
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
