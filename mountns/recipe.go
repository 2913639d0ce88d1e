package mountns

import (
	"fmt"
	"os"
	"path/filepath"

	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// ClaimGroup is one directory a run's placeholders may be made in, as the
// registry protocol (Claim) holds it: its registry directory, and the
// placeholders of the view that lie in it.
type ClaimGroup struct {
	Parent, Dir  string
	Placeholders []string
}

// ClaimPlan lists what Claim would claim for v, for a maker that follows
// the same protocol without this package (the spawn stage's runner): the
// registry directory (made here when missing) and, for each directory a
// placeholder of v could be made in, its group and the placeholders v
// covers there. The maker takes the groups' locks shared and their decide
// locks exclusively, as Claim does, and then checks that each placeholder
// is missing (it makes and records it) or a recorded one: anything else
// means the view decided from the host is no longer the one to build.
func (v *View) ClaimPlan() (registry string, groups []ClaimGroup, err error) {
	parents := v.placeholderParents()
	if len(parents) == 0 {
		return "", nil, nil
	}
	if registry, err = runstate.Dir(registryDir); err != nil {
		return "", nil, fmt.Errorf("placeholder registry: %w", err)
	}
	index := map[string]int{}
	for _, parent := range parents {
		index[parent] = len(groups)
		groups = append(groups, ClaimGroup{Parent: parent, Dir: groupDir(registry, parent)})
	}
	for _, p := range v.Placeholders {
		i, ok := index[filepath.Dir(p)]
		if !ok {
			return "", nil, fmt.Errorf("placeholder %s: not in a claimed directory", p)
		}
		groups[i].Placeholders = append(groups[i].Placeholders, p)
	}
	return registry, groups, nil
}

// AdoptClaims takes over the claims a maker took for groups (ClaimPlan):
// the lock fds, one per group in order, each held shared, and the
// placeholders it made or found recorded (locks, as the guardian has them).
// Release then gives them up as Claim's would be.
func AdoptClaims(groups []ClaimGroup, fds []int, locks []spawn.GuardedLock) (*Claims, error) {
	if len(fds) != len(groups) {
		return nil, fmt.Errorf("placeholder claims: %d locks for %d groups", len(fds), len(groups))
	}
	c := &Claims{byParent: map[string]*claimGroup{}}
	for i, gr := range groups {
		g := &claimGroup{parent: gr.Parent, dir: gr.Dir, lock: os.NewFile(uintptr(fds[i]), filepath.Join(gr.Dir, "lock")),
			known: map[string]spawn.GuardedDir{}}
		if i < len(locks) {
			for _, d := range locks[i].Placeholders {
				g.known[d.Path] = d
			}
		}
		c.groups = append(c.groups, g)
		c.byParent[gr.Parent] = g
	}
	return c, nil
}
