package cgroups

import "path"

// Placement is where New puts a run's group in one hierarchy. It is the one
// answer to "where does a group go" that New, CleanupStale and the doctor
// share.
type Placement struct {
	// Parent is the directory the group is made in.
	Parent string
	// Top is the highest directory whose cgroup.subtree_control New may
	// write to enable controllers (never above it).
	Top string
	// Shared: Parent is <mount>/DefaultV2Parent, shared by every root
	// supervisor, made on demand and never removed.
	Shared bool
	// Delegated: Parent is this process's own cgroup, which must have been
	// delegated to it (a non-root user).
	Delegated bool
	// Explicit: Parent comes from Options.Parent; missing directories are
	// created (and removed with the group when then empty).
	Explicit bool
}

// PlaceV2 says where New puts a cgroup2 group: under parent (a path inside
// the hierarchy) when it is given; else, for root (euid 0), under
// <mount>/DefaultV2Parent; else inside this process's own cgroup (OwnDir).
func PlaceV2(hier *Hierarchy, parent string, euid int) (Placement, error) {
	switch {
	case parent != "":
		dir, err := hier.Dir(parent)
		return Placement{Parent: dir, Top: hier.Mount, Explicit: true}, err
	case euid == 0:
		return Placement{Parent: hier.Mount + "/" + DefaultV2Parent, Top: hier.Mount, Shared: true}, nil
	}
	dir, err := OwnDir(hier)
	return Placement{Parent: dir, Top: dir, Delegated: true}, err
}

// PlaceV1 says where New puts a group in the v1 hierarchy hier: under
// parent when it is given, else inside this process's own cgroup there.
func PlaceV1(hier *Hierarchy, parent string) (Placement, error) {
	if parent != "" {
		dir, err := hier.Dir(parent)
		return Placement{Parent: dir, Top: hier.Mount, Explicit: true}, err
	}
	dir, err := hier.Dir(hier.Own)
	return Placement{Parent: dir, Top: dir}, err
}

// OwnDir is this process's own cgroup directory in hier, skipping the leaf
// (SupervisorLeaf) a delegated supervisor moves itself into (see New).
func OwnDir(hier *Hierarchy) (string, error) {
	own := hier.Own
	if path.Base(own) == SupervisorLeaf {
		own = path.Dir(own) // moved there by an earlier New
	}
	return hier.Dir(own)
}
