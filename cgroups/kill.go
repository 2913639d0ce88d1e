package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killSet is the one way this package ends processes: those of some
// cgroup directories, each the way its hierarchy allows. A cgroup2
// directory: cgroup.kill (5.14+), else freeze, SIGKILL each, thaw. A v1
// freezer directory: freeze, SIGKILL each, thaw. Any other v1 directory
// (nothing stops forks there): SIGKILL every task listed, again until it is
// empty. Group.Kill and CleanupStale use it; Cleanup gives a guardian the
// same plan as paths.
type killSet struct {
	v2, freezer, listed []string
}

// kill ends every process of k, cgroup2 first (on a hybrid host it holds
// every process), then the freezer groups, then the listed ones. It does
// not wait for the kernel to finish them off, except that listed
// directories are signalled until they are empty or ctx ends.
func (k killSet) kill(ctx context.Context) error {
	var errs []error
	for _, d := range k.v2 {
		errs = append(errs, v2Kill(ctx, d))
	}
	for _, d := range k.freezer {
		errs = append(errs, freezeKill(d))
	}
	if len(k.listed) > 0 {
		errs = append(errs, killTree(ctx, k.listed, false))
	}
	return errors.Join(errs...)
}

// waitEmpty returns once no process is left in k's directories, or with
// ctx's error (wrapped, one per directory still busy).
func (k killSet) waitEmpty(ctx context.Context) error {
	var errs []error
	for _, d := range k.v2 {
		if err := v2WaitEmpty(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("cgroups: wait for %s to empty: %w", d, err))
		}
	}
	for _, d := range append(slices.Clip(k.freezer), k.listed...) {
		err := pollWait(ctx, func() (bool, error) {
			p, err := treePids(d)
			return len(p) == 0, err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroups: wait for %s to empty: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// v2Kill kills every process in dir and below: cgroup.kill (5.14+), else
// freeze, SIGKILL each, thaw.
func v2Kill(ctx context.Context, dir string) error {
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
	kerr := killTree(ctx, []string{dir}, frozen)
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
// is enough, otherwise it repeats until the cgroups are empty or ctx ends
// (processes may fork while the first ones die).
func killTree(ctx context.Context, dirs []string, frozen bool) error {
	if frozen {
		return killOnce(dirs)
	}
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
		if ctx.Err() != nil {
			return errors.New("cgroups: kill " + strings.Join(dirs, " ") + ": " + strconv.Itoa(n) + " processes still there: " + context.Cause(ctx).Error())
		}
		time.Sleep(time.Millisecond)
	}
}

// killLoopLimit bounds Group.Kill's SIGKILL loop where nothing stops forks.
const killLoopLimit = 2 * time.Second

// KillTree ends a run's whole tree: through g where there is a group (every
// process of the run is in it) and its Kill works, else by SIGKILL to each
// pid members lists (a run without a cgroup finds its processes another
// way: a child subreaper's descendants). g may be nil.
func KillTree(g Group, members func() []int) error {
	if g != nil {
		if err := g.Kill(); err == nil {
			return nil
		}
	}
	for _, p := range members() {
		_ = unix.Kill(p, unix.SIGKILL) // gone already: fine
	}
	return nil
}
