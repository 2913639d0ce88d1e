package cgroups

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// How a group's processes are ended, per cgroup version.

// v2Kill kills every process in dir and below: cgroup.kill (5.14+), else
// freeze, SIGKILL each, thaw.
func v2Kill(dir string) error {
	err := writeFile(dir+"/cgroup.kill", "1")
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	if _, statErr := os.Stat(dir); statErr != nil {
		return err // the group itself is gone
	}
	frozen, ferr := writeIfExists(dir+"/cgroup.freeze", "1")
	if ferr != nil {
		return ferr
	}
	kerr := killTree([]string{dir}, frozen)
	if frozen {
		if terr := writeFile(dir+"/cgroup.freeze", "0"); terr != nil && kerr == nil {
			kerr = terr
		}
	}
	return kerr
}

// freezeKill ends every process in the freezer cgroup dir: freeze, SIGKILL
// each task, thaw. If the freeze does not settle (a task in uninterruptible
// sleep), the round is repeated a few times so nothing forked meanwhile
// escapes.
func freezeKill(dir string) error {
	state := dir + "/freezer.state"
	for round := 0; round < 3; round++ {
		if err := writeFile(state, "FROZEN"); err != nil {
			return err
		}
		frozen := false
		for i := 0; i < 50; i++ {
			b, err := readFile(state)
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(b)) == "FROZEN" {
				frozen = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		kerr := killOnce([]string{dir})
		if err := writeFile(state, "THAWED"); err != nil {
			return errors.Join(kerr, err)
		}
		if kerr != nil || frozen {
			return kerr
		}
	}
	return nil
}

// killOnce sends SIGKILL to every process listed in dirs and their child
// cgroups.
func killOnce(dirs []string) error {
	for _, d := range dirs {
		pids, err := treePids(d)
		if err != nil {
			return err
		}
		for _, p := range pids {
			if err := unix.Kill(p, unix.SIGKILL); err != nil && err != unix.ESRCH {
				return pathErr("kill pid "+strconv.Itoa(p)+" in", d, err)
			}
		}
	}
	return nil
}

// killTree sends SIGKILL to every process in dirs; with frozen set one round
// is enough, otherwise it repeats until the cgroups are empty, for at most
// killLoopLimit (processes may fork while the first ones die).
func killTree(dirs []string, frozen bool) error {
	if frozen {
		return killOnce(dirs)
	}
	deadline := time.Now().Add(killLoopLimit)
	for {
		if err := killOnce(dirs); err != nil {
			return err
		}
		n := 0
		for _, d := range dirs {
			p, err := treePids(d)
			if err != nil {
				return err
			}
			n += len(p)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("cgroups: kill " + strings.Join(dirs, " ") + ": " + strconv.Itoa(n) + " processes still there after " + killLoopLimit.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// killLoopLimit bounds the SIGKILL loop used without a freezer.
const killLoopLimit = 2 * time.Second
