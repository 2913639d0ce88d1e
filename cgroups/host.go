package cgroups

import (
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
)

// Host describes the cgroup layout of this machine as this process sees it.
// Detect fills it; New and CleanupStale only read it, so one Host may be
// shared by concurrent calls.
type Host struct {
	// Mode is the layout: Unified, Hybrid, Legacy or Unavailable.
	Mode Mode `json:"mode"`
	// V2 is the cgroup2 hierarchy, nil when none is mounted.
	V2 *Hierarchy `json:"v2,omitempty"`
	// V1 are the mounted v1 hierarchies, named ones ("name=systemd")
	// included, in /proc/self/cgroup order.
	V1 []Hierarchy `json:"v1,omitempty"`
}

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	// ID is the hierarchy ID of /proc/self/cgroup (0 for cgroup2).
	ID int `json:"id"`
	// Controllers are, for v1, the controllers bound to the hierarchy
	// ("cpu", "cpuacct", "name=systemd"; co-mounted ones together); for v2,
	// those available at the mount (its cgroup.controllers).
	Controllers []string `json:"controllers"`
	// Mount is the mountpoint ("/sys/fs/cgroup/memory").
	Mount string `json:"mount"`
	// Root is the cgroup mounted there (the root field of mountinfo), "/"
	// unless only part of the hierarchy is mounted.
	Root string `json:"root"`
	// Own is this process's cgroup in the hierarchy, from /proc/self/cgroup
	// ("/process_api/0df0...").
	Own string `json:"own"`
}

// Has reports whether controller c is bound to (v1) or available in (v2) the
// hierarchy.
func (h *Hierarchy) Has(c string) bool { return slices.Contains(h.Controllers, c) }

// Dir maps a cgroup path inside the hierarchy ("/a/b") to its directory
// ("/sys/fs/cgroup/pids/a/b"). It fails when the path lies outside the part
// of the hierarchy that is mounted.
func (h *Hierarchy) Dir(cgroupPath string) (string, error) {
	p := path.Clean("/" + cgroupPath)
	root := path.Clean("/" + h.Root)
	rel := p
	if root != "/" {
		if p != root && !strings.HasPrefix(p, root+"/") {
			return "", errors.New("cgroups: cgroup " + p + " is outside the part of the hierarchy mounted at " + h.Mount + " (" + root + ")")
		}
		rel = p[len(root):]
	}
	if rel == "/" || rel == "" {
		return h.Mount, nil
	}
	return h.Mount + rel, nil
}

// V1For returns the v1 hierarchy that carries controller c, nil when none
// does.
func (h *Host) V1For(c string) *Hierarchy {
	for i := range h.V1 {
		if h.V1[i].Has(c) {
			return &h.V1[i]
		}
	}
	return nil
}

// Detect reads /proc/self/mountinfo and /proc/self/cgroup (and, for cgroup2,
// the controllers at its mount) and describes the host. No cgroup at all is
// not an error: the Host's Mode is then Unavailable. The host decides a
// run: mountinfo (the mount namespace's, the same for every process in it)
// and the controllers are recorded (fsdeps); /proc/self/cgroup, this
// process's own, is in the recipe's key.
func Detect() (*Host, error) {
	mi, err := fsdeps.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, pathErr("read", "/proc/self/mountinfo", bareErr(err))
	}
	pc, err := fsdeps.ReadProcSelf("/proc/self/cgroup", "this process's cgroups")
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, pathErr("read", "/proc/self/cgroup", bareErr(err))
	}
	h := buildHost(parseMountinfo(string(mi)), parseProcCgroup(string(pc)))
	if h.V2 != nil {
		// A failure leaves the list empty: New then finds no v2
		// controller and says which one it missed.
		if b, err := fsdeps.ReadFile(h.V2.Mount + "/cgroup.controllers"); err == nil {
			h.V2.Controllers = strings.Fields(string(b))
		}
	}
	return h, nil
}

// bareErr is the errno inside a filesystem error (pathErr names the path).
func bareErr(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// cgroupMount is one cgroup or cgroup2 line of mountinfo.
type cgroupMount struct {
	v2    bool
	root  string
	point string
	opts  []string // super options, for v1 the controllers among them
}

// parseMountinfo picks the cgroup and cgroup2 mounts out of a
// /proc/<pid>/mountinfo text.
func parseMountinfo(text string) []cgroupMount {
	var out []cgroupMount
	for line := range strings.Lines(text) {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		post = strings.TrimSpace(post)
		fstype, rest, _ := strings.Cut(post, " ")
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		_, super, _ := strings.Cut(rest, " ") // source, super options
		out = append(out, cgroupMount{
			v2:    fstype == "cgroup2",
			root:  unescapeMount(f[3]),
			point: unescapeMount(f[4]),
			opts:  strings.Split(strings.TrimSpace(super), ","),
		})
	}
	return out
}

// unescapeMount undoes the octal escapes (\040 and friends) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroup is one line of /proc/<pid>/cgroup.
type procCgroup struct {
	id          int
	controllers []string // empty for the v2 line
	path        string
}

// parseProcCgroup parses a /proc/<pid>/cgroup text.
func parseProcCgroup(text string) []procCgroup {
	var out []procCgroup
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		var ctrls []string
		if f[1] != "" {
			ctrls = strings.Split(f[1], ",")
		}
		out = append(out, procCgroup{id: id, controllers: ctrls, path: strings.TrimSuffix(f[2], " (deleted)")})
	}
	return out
}

// buildHost joins mounts and the process's cgroups into a Host. Pure.
func buildHost(mounts []cgroupMount, own []procCgroup) *Host {
	h := &Host{Mode: Unavailable}
	for _, pc := range own {
		if pc.id == 0 && len(pc.controllers) == 0 {
			if m, ok := pickMount(mounts, pc, true); ok {
				h.V2 = &Hierarchy{ID: 0, Mount: m.point, Root: m.root, Own: pc.path}
			}
			continue
		}
		if m, ok := pickMount(mounts, pc, false); ok {
			h.V1 = append(h.V1, Hierarchy{ID: pc.id, Controllers: pc.controllers, Mount: m.point, Root: m.root, Own: pc.path})
		}
	}
	if h.V2 == nil && len(own) == 0 {
		// No /proc/self/cgroup (unusual): take a cgroup2 mount as is.
		for _, m := range mounts {
			if m.v2 {
				h.V2 = &Hierarchy{Mount: m.point, Root: m.root, Own: "/"}
				break
			}
		}
	}
	v1ctl := false
	for _, v := range h.V1 {
		for _, c := range v.Controllers {
			if !strings.HasPrefix(c, "name=") {
				v1ctl = true
			}
		}
	}
	switch {
	case h.V2 != nil && v1ctl:
		h.Mode = Hybrid
	case h.V2 != nil:
		h.Mode = Unified
	case v1ctl:
		h.Mode = Legacy
	}
	return h
}

// pickMount finds the mount of a hierarchy, preferring one whose root holds
// the process's own cgroup (a bind mount of a sub-tree may come first).
func pickMount(mounts []cgroupMount, pc procCgroup, v2 bool) (cgroupMount, bool) {
	var found cgroupMount
	ok := false
	for _, m := range mounts {
		if m.v2 != v2 {
			continue
		}
		if !v2 && !containsAll(m.opts, pc.controllers) {
			continue
		}
		if under(pc.path, m.root) {
			return m, true
		}
		if !ok {
			found, ok = m, true
		}
	}
	return found, ok
}

// under reports whether cgroup path p is root or below it.
func under(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root+"/")
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func missingFrom(have, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}
