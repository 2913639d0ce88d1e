package hostfacts

import (
	"errors"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
)

// Everything in this file is doctor's (Diagnosis.CgroupAccess): no run
// decides from it, so its reads are not recorded (fsdeps; the guard test's
// allowlist says so).

// StrictControllers are the limits the strict model puts on every run.
var StrictControllers = []string{"memory", "pids"}

// CgroupAccess is what this process may do with the host's cgroups, looked
// at where cgroups.New would put a run's group (cgroups.PlaceV2, PlaceV1),
// with faccessat(2) for the effective ids: nothing is created.
type CgroupAccess struct {
	// Where maps memory, pids and cpu to "v2 <dir>" or "v1 <dir>"; a
	// controller absent from every hierarchy is absent from the map.
	Where map[string]string
	// V2Limits: the strict controllers live on cgroup2.
	V2Limits bool
	// CPUUsage is where CPU time is read ("" when nowhere).
	CPUUsage string
	// Kill is how the tree is killed.
	Kill string
	// Denied are the directories or files this process cannot write, each
	// with why; ReadOnly is true when one of them is on a read-only mount.
	Denied   []string
	ReadOnly bool
	// NotDelegated are strict controllers missing from this (non-root)
	// process's own v2 cgroup.controllers.
	NotDelegated []string
	// Creatable is true when nothing is denied or missing: a group can be
	// made where New puts it.
	Creatable bool
}

// writable is faccessat(W_OK) with the effective ids, so a read-only mount
// answers EROFS even for root.
func writable(p string) error {
	return unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS)
}

// CgroupAccessOf looks at a detected host for a process with effective
// uid euid, with access as the permission test (faccessat W_OK in Probe;
// tests give their own).
func CgroupAccessOf(h *cgroups.Host, euid int, access func(string) error) CgroupAccess {
	f := CgroupAccess{Where: map[string]string{}}
	if h.Mode == cgroups.Unavailable {
		return f
	}
	v1need := map[*cgroups.Hierarchy]bool{}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if h.V2 != nil && h.V2.Has(c) {
			f.Where[c] = "v2 " + h.V2.Mount
			if slices.Contains(StrictControllers, c) {
				f.V2Limits = true
			}
		} else if v := h.V1For(c); v != nil {
			f.Where[c] = "v1 " + v.Mount
			if slices.Contains(StrictControllers, c) {
				v1need[v] = true
			}
		}
	}
	var v2own string
	if h.V2 != nil {
		v2own, _ = cgroups.OwnDir(h.V2)
		f.CPUUsage = "v2 cpu.stat"
	} else {
		if v := h.V1For("freezer"); v != nil {
			v1need[v] = true
		}
		if v := h.V1For("cpuacct"); v != nil {
			v1need[v] = true
			f.CPUUsage = "v1 cpuacct"
		}
	}
	f.Kill = killMethod(h, v2own)

	deny := func(p string) {
		err := access(p)
		if err == nil {
			return
		}
		if errors.Is(err, unix.EROFS) {
			f.ReadOnly = true
		}
		var errno unix.Errno
		if errors.As(err, &errno) {
			f.Denied = append(f.Denied, p+" ("+errnoName(errno)+")")
		} else {
			f.Denied = append(f.Denied, p+" ("+err.Error()+")")
		}
	}
	if h.V2 != nil {
		pl, _ := cgroups.PlaceV2(h.V2, "", euid)
		if pl.Shared {
			dir := pl.Parent // made on demand in Top
			if _, err := os.Stat(dir); err != nil {
				dir = pl.Top
			}
			deny(dir)
			if f.V2Limits {
				deny(pl.Top + "/cgroup.subtree_control")
			}
		} else if pl.Parent == "" {
			f.Denied = append(f.Denied, "own cgroup2 directory (outside the mounted part of the hierarchy)")
		} else {
			deny(pl.Parent)
			deny(pl.Parent + "/cgroup.procs")
			if f.V2Limits {
				deny(pl.Top + "/cgroup.subtree_control")
				have, _ := os.ReadFile(pl.Parent + "/cgroup.controllers")
				for _, c := range StrictControllers {
					if !slices.Contains(strings.Fields(string(have)), c) {
						f.NotDelegated = append(f.NotDelegated, c)
					}
				}
			}
		}
	}
	for i := range h.V1 {
		v := &h.V1[i]
		if !v1need[v] {
			continue
		}
		pl, err := cgroups.PlaceV1(v, "")
		if err != nil {
			f.Denied = append(f.Denied, v.Mount+" (own cgroup outside the mounted part)")
			continue
		}
		deny(pl.Parent)
	}
	f.Creatable = len(f.Denied) == 0 && len(f.NotDelegated) == 0
	return f
}

// killMethod says how the helper would end the tree.
func killMethod(h *cgroups.Host, v2own string) string {
	if h.V2 != nil {
		// The root cgroup has no cgroup.kill: look at a non-root one.
		cands := []string{h.V2.Mount + "/" + cgroups.DefaultV2Parent}
		if v2own != "" && v2own != h.V2.Mount {
			cands = append([]string{v2own}, cands...)
		}
		if ents, err := os.ReadDir(h.V2.Mount); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					cands = append(cands, h.V2.Mount+"/"+e.Name())
					break
				}
			}
		}
		for _, c := range cands {
			if _, err := os.Stat(c + "/cgroup.kill"); err == nil {
				return "cgroup.kill"
			}
		}
		for _, c := range cands {
			if _, err := os.Stat(c + "/cgroup.freeze"); err == nil {
				return "v2 freeze, SIGKILL each task, thaw (no cgroup.kill: before 5.14)"
			}
		}
	}
	if h.V1For("freezer") != nil {
		return "v1 freezer: freeze, SIGKILL each task, thaw"
	}
	return "SIGKILL each task listed (no freezer: racy against forks)"
}

// errnoName is unix.ErrnoName, but with the name the system call manuals
// use for EOPNOTSUPP (ENOTSUP on Linux has the same number).
func errnoName(e unix.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	return unix.ErrnoName(e)
}
