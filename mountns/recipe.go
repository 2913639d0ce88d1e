package mountns

import (
	"fmt"
	"path/filepath"

	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// ClaimGroup is one directory a run's placeholders may be made in, as the
// registry protocol (Claim) holds it: its registry directory, and the
// placeholders of the view that lie in it.
type ClaimGroup struct {
	Parent, Dir  string
	ParentID     spawn.Ident // what Parent was when decided
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
		groups = append(groups, ClaimGroup{Parent: parent, Dir: groupDir(registry, parent), ParentID: v.ident(parent)})
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
