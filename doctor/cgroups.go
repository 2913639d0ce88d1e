package doctor

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
)

// strictControllers are the limits the strict model puts on every run.
var strictControllers = []string{"memory", "pids"}

// cgroupFacts are what the cgroup filesystem said.
type cgroupFacts struct {
	mode string
	// detectErr is cgroups.Detect's error, if any.
	detectErr error
	// where maps memory, pids and cpu to "v2 <dir>" or "v1 <dir>"; a
	// controller absent from every hierarchy is absent from the map.
	where map[string]string
	// v2Limits: the strict controllers live on cgroup2 (a unified host).
	v2Limits bool
	// cpuUsage is where CPU time is read ("" when nowhere).
	cpuUsage string
	// kill is how the tree is killed.
	kill string
	// denied are the directories or files this process cannot write, with
	// why; creatable is true when there are none and every strict
	// controller was found.
	denied    []string
	creatable bool
	rofs      bool
	// notDelegated are strict controllers missing from this (non-root)
	// process's own v2 cgroup.controllers.
	notDelegated []string
	euid         int
}

// writable is faccessat(W_OK) with the effective ids, so a read-only mount
// answers EROFS even for root.
func writable(p string) error {
	return unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS)
}

func cgroupsLive() cgroupFacts {
	h, err := cgroups.Detect()
	if err != nil {
		return cgroupFacts{mode: string(cgroups.Unavailable), detectErr: err, euid: os.Geteuid()}
	}
	return cgroupFactsOf(h, os.Geteuid(), writable)
}

// cgroupFactsOf decides from a detected host, with access as the
// permission test (injected for tests). Where it looks is where cgroups.New
// puts a group (cgroups.PlaceV2, PlaceV1).
func cgroupFactsOf(h *cgroups.Host, euid int, access func(string) error) cgroupFacts {
	f := cgroupFacts{mode: string(h.Mode), where: map[string]string{}, euid: euid}
	if h.Mode == cgroups.Unavailable {
		return f
	}
	v1need := map[*cgroups.Hierarchy]bool{}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if h.V2 != nil && h.V2.Has(c) {
			f.where[c] = "v2 " + h.V2.Mount
			if slices.Contains(strictControllers, c) {
				f.v2Limits = true
			}
		} else if v := h.V1For(c); v != nil {
			f.where[c] = "v1 " + v.Mount
			if slices.Contains(strictControllers, c) {
				v1need[v] = true
			}
		}
	}
	var v2own string
	if h.V2 != nil {
		v2own, _ = cgroups.OwnDir(h.V2)
		f.cpuUsage = "v2 cpu.stat"
	} else {
		if v := h.V1For("freezer"); v != nil {
			v1need[v] = true
		}
		if v := h.V1For("cpuacct"); v != nil {
			v1need[v] = true
			f.cpuUsage = "v1 cpuacct"
		}
	}
	f.kill = killMethod(h, v2own)

	deny := func(p string) {
		err := access(p)
		if err == nil {
			return
		}
		if errors.Is(err, unix.EROFS) {
			f.rofs = true
		}
		var errno unix.Errno
		if errors.As(err, &errno) {
			f.denied = append(f.denied, p+" ("+errnoName(errno)+")")
		} else {
			f.denied = append(f.denied, p+" ("+err.Error()+")")
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
			if f.v2Limits {
				deny(pl.Top + "/cgroup.subtree_control")
			}
		} else if pl.Parent == "" {
			f.denied = append(f.denied, "own cgroup2 directory (outside the mounted part of the hierarchy)")
		} else {
			deny(pl.Parent)
			deny(pl.Parent + "/cgroup.procs")
			if f.v2Limits {
				deny(pl.Top + "/cgroup.subtree_control")
				have, _ := os.ReadFile(pl.Parent + "/cgroup.controllers")
				for _, c := range strictControllers {
					if !slices.Contains(strings.Fields(string(have)), c) {
						f.notDelegated = append(f.notDelegated, c)
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
		dir := pl.Parent
		if err != nil {
			f.denied = append(f.denied, v.Mount+" (own cgroup outside the mounted part)")
			continue
		}
		deny(dir)
	}
	f.creatable = len(f.denied) == 0 && len(f.notDelegated) == 0
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

func cgroupsItem(f cgroupFacts, h Host) Item {
	it := Item{ID: "cgroups", Title: "cgroup for memory, pids and CPU accounting", Strict: true}
	if f.mode == string(cgroups.Unavailable) {
		it.Status = StatusMissing
		it.Detail = "no cgroup filesystem mounted"
		if f.detectErr != nil {
			it.Detail = "cannot read the cgroup layout: " + f.detectErr.Error()
		}
		it.Fix = "mount cgroup2: mount -t cgroup2 none /sys/fs/cgroup (or run where one is mounted)"
		return it
	}
	var parts []string
	var absent []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if w, ok := f.where[c]; ok {
			parts = append(parts, c+" "+w)
		} else {
			absent = append(absent, c)
		}
	}
	it.Detail = f.mode + ": " + strings.Join(parts, ", ")
	if len(absent) > 0 {
		it.Detail += "; no " + strings.Join(absent, ", ")
	}
	if f.cpuUsage == "" {
		it.Notes = append(it.Notes, "CPU usage: no accounting (neither cgroup2 cpu.stat nor a v1 cpuacct hierarchy)")
	} else {
		it.Notes = append(it.Notes, "CPU usage from "+f.cpuUsage+"; kill: "+f.kill)
	}
	if _, ok := f.where["cpu"]; !ok {
		it.Notes = append(it.Notes, "no cpu controller: --cpu-quota cannot be enforced")
	}

	var missingCtl []string
	for _, c := range strictControllers {
		if _, ok := f.where[c]; !ok {
			missingCtl = append(missingCtl, c)
		}
	}
	switch {
	case len(missingCtl) > 0:
		it.Status = StatusMissing
		it.Notes = append(it.Notes, "the "+strings.Join(missingCtl, " and ")+" controller is in no mounted hierarchy")
		it.Fix = "boot a kernel with CONFIG_MEMCG=y and CONFIG_CGROUP_PIDS=y and without cgroup_disable= on its command line; on cgroup2 enable them: echo '+memory +pids' > /sys/fs/cgroup/cgroup.subtree_control"
	case !f.creatable:
		it.Status = StatusMissing
		who := "root"
		if f.euid != 0 {
			who = "uid " + strconv.Itoa(f.euid)
		}
		var why []string
		if len(f.denied) > 0 {
			why = append(why, "not writable: "+strings.Join(f.denied, ", "))
		}
		if len(f.notDelegated) > 0 {
			why = append(why, "controllers not delegated to its cgroup: "+strings.Join(f.notDelegated, ", "))
		}
		it.Notes = append(it.Notes, who+" cannot create a group: "+strings.Join(why, "; "))
		it.Fix = cgroupFix(f, h)
	case f.cpuUsage == "":
		it.Status = StatusDegraded
		it.Fix = "mount the v1 cpuacct hierarchy (mount -t cgroup -o cpuacct cpuacct /sys/fs/cgroup/cpuacct) or cgroup2"
	default:
		it.Status = StatusOK
		who := "as root"
		if f.euid != 0 {
			who = "delegated to uid " + strconv.Itoa(f.euid)
		}
		it.Notes = append(it.Notes, "a group can be created ("+who+")")
	}
	return it
}

func cgroupFix(f cgroupFacts, h Host) string {
	if f.rofs {
		return "the cgroup filesystem is read-only here (a container): give it a writable cgroup tree (docker run --privileged --cgroupns=private ...), or run sandbox-executable on the host"
	}
	systemdRun := "systemd-run --user --scope -p Delegate=yes sandbox-executable ..."
	if !h.Systemd {
		systemdRun += " (needs a systemd user manager; systemd is not running here)"
	}
	if f.euid != 0 && !f.v2Limits {
		// memory and pids are v1 controllers: systemd delegates only
		// cgroup2 to users.
		return "run as root (sudo sandbox-executable ...); a user can only be delegated cgroup2 controllers, and memory/pids are on v1 here: boot with systemd.unified_cgroup_hierarchy=1, then " + systemdRun
	}
	return "run as root (sudo sandbox-executable ...), or in a delegated cgroup: " + systemdRun
}
