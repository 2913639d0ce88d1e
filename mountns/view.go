// Package mountns builds the program's exact view of the filesystem in a
// mount namespace of its own: the same tree as the host's, but read-only
// outside the writable roots, with read-denied paths masked (an empty,
// unreadable directory, or a file that cannot be opened) and write-denied
// paths inside the roots bound read-only. It only decides: the result is a
// list of operations for the spawn stage, which runs them in the child
// before Landlock is applied (Landlock forbids mount changes afterwards).
//
// A denied name that does not exist yet cannot carry a mount. Where the
// program could create it (inside a writable root), a placeholder directory
// is created on the host before the run and covered; placeholders are shared
// between concurrent sandboxes and removed by the last one (see registry.go).
package mountns

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/policy"
	"sandbox-executable/spawn"
)

// Options are the facts about the run the view depends on.
type Options struct {
	// Privileged is true when the helper has CAP_SYS_ADMIN: the child gets
	// a mount namespace only. Otherwise it also gets a user namespace that
	// maps UID and GID to themselves, so the program keeps its identity.
	Privileged bool
	UID, GID   int
	// Cwd is the program's working directory, re-entered after the mounts
	// so that it resolves to the new view.
	Cwd string
	// ExtraWritable are writable directories besides the Plan's roots.
	ExtraWritable []string
	// PrivateTmp is the program's private temp dir, made empty on the host
	// for the run ("" for none): a tmpfs of PrivateTmpBytes, mode 0700,
	// owned by UID and GID, is mounted on it, so that what the program
	// writes there is bounded in all (ENOSPC past the size), is charged to
	// the memory cgroup of the process that writes it (the run's), never
	// reaches the host's directory, and is gone with the namespace.
	PrivateTmp      string
	PrivateTmpBytes uint64
	// ScratchCaches are directories given a throwaway copy-on-write view
	// (see scratchCaches): an overlay whose lower layer is the host's
	// directory and whose upper layer lives on a tmpfs of PrivateTmpBytes,
	// hidden under the private temp dir, so the program reads the host's
	// files and its writes go nowhere. They need PrivateTmp (the tmpfs is
	// mounted there first) and the exact view.
	ScratchCaches []string
	// KeepLayers asks the child to send the scratch caches' layers (the
	// tmpfs that holds each cache's upper directory at "<i>/upper", i
	// its index in ScratchCaches) to the runner (spawn.OpenAndHandOver), after the
	// proxy's listener if there is one: what the run added to a cache can
	// then be written back once the program is gone (--persist-cache).
	KeepLayers bool
	// Network asks for a network namespace of the program's own
	// (CLONE_NEWNET) with its loopback up.
	Network bool
	// Proxy, with Network, asks the child to listen on 127.0.0.1:Port in
	// that namespace and send the socket to the runner (spawn.ListenAndHandOver).
	Proxy *ProxyListener
	// Isolate gives the program a process world of its own: PID, IPC, UTS
	// and cgroup namespaces, an init as PID 1, a fresh /proc that shows
	// only the namespace's processes, and a minimal /dev.
	Isolate bool
	// Terminal says a standard descriptor of the program is a pty of the
	// host's devpts: the private /dev binds that devpts, so that the
	// terminal keeps its name. Without one, the program's /dev/pts is a
	// devpts instance of its own, and the caller's terminal (which a
	// program in a session of its own could otherwise open by its name
	// and read) is not in its /dev.
	Terminal bool
}

// ProxyListener is where the proxy's listener is made.
type ProxyListener struct {
	Port uint16
}

// View is the decided mount namespace.
type View struct {
	// Privileged repeats Options.Privileged.
	Privileged     bool
	NamespaceFlags uintptr
	// UnshareFlags are made after the child joined its cgroup (a cgroup
	// namespace rooted there); Init says the child is the PID namespace's
	// init (spawn.Recipe.Init).
	UnshareFlags uintptr
	Init         bool
	Ops          []spawn.Op
	// Placeholders are names to create on the host before the run (and
	// remove after it) so that a mount can cover them.
	Placeholders []string
	// Masked, ReadOnly and Narrowed are for reports.
	Masked   []string
	ReadOnly []string
	Narrowed []Narrowing
	// ScratchCaches are the caches given a throwaway overlay.
	ScratchCaches []string
	// KeepsLayers says the child sends their layers (Options.KeepLayers).
	KeepsLayers bool
	// LateReadDenied are the read-denied paths that do not exist and that
	// the program cannot create (outside the writable roots): no mount can
	// cover them, so Landlock must keep them unreadable should someone
	// outside create them during the run (landlock.Options.LateReadDenied).
	LateReadDenied []string
	// MaskedFiles are the read-denied files the view masks: a mask covers
	// the directory entry it was mounted on, and a file replaced on the
	// host during the run (an editor's or npm's write to a temporary file
	// renamed over it) is a new entry no mount covers, so Landlock must
	// keep the name unreadable too (landlock.Options.MaskedFiles).
	MaskedFiles []string
	// LateWriteDenied are the write-denied paths the view leaves to
	// Landlock (landlock.Options.LateWriteDenied): in a root holding a
	// writable git directory (--allow-git-commit), whose top level
	// Landlock splits anyway, those in the git directory (a placeholder
	// where git looks for a file, commondir, would stop git) and those
	// that do not exist (a placeholder made and removed by every run
	// would change the root's listing, on which the split depends).
	LateWriteDenied []string

	opts    Options      // what the view was built for
	exact   bool         // the filesystem view (Build), not only the isolation (Isolation)
	plan    *policy.Plan // the Plan it was built for (exact views)
	roots   []string     // the Plan's writable roots
	masks   []spawn.Op   // the mounts that deny, decided once by Build
	devices []string     // the device nodes of the private /dev, as found on the host
	hostPts bool         // the host's /dev/pts is bound (Options.Terminal, and the host has one)
}

// Devices are the nodes of the program's /dev, bound from the host's when
// they exist there: what bubblewrap's --dev gives. No block device, no
// console, no kernel log, no memory device.
var Devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// hiddenBy are the trees a private /proc and /dev replace: nothing of the
// host's in them needs masking.
var hiddenBy = []string{"/dev", "/proc"}

// Narrowing is a name the program cannot create although the policy does
// not deny it, because a denied path that does not exist yet lies beneath it.
type Narrowing struct {
	Path   string
	Effect string
}

// Mount attribute and flag values used by the operations.
const (
	maskFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
)

// Build decides the view for p. Where placeholders are concerned the
// runner checks the decision under its claims: each must still be missing
// (it makes it) or a recorded placeholder, else the run does not start.
func Build(p *policy.Plan, o Options) (*View, error) {
	v := &View{Privileged: o.Privileged, opts: o, exact: true, plan: p}
	for _, r := range p.Filesystem.WritableRoots {
		v.roots = append(v.roots, r.Path)
	}
	if err := v.decideMasks(peekRegistered()); err != nil {
		return nil, err
	}
	v.findDevices()
	if err := v.assemble(); err != nil {
		return nil, err
	}
	return v, nil
}

// writable returns the view's writable directories (outermost first) and a
// test for being inside one.
func (v *View) writable() ([]string, func(string) bool) {
	roots := outermost(append(append([]string(nil), v.roots...), v.opts.ExtraWritable...))
	return roots, func(path string) bool {
		for _, r := range roots {
			if policy.Within(path, r) {
				return true
			}
		}
		return false
	}
}

// placeholderParents lists every directory a placeholder of the view could
// be made in, whatever exists by the time it is decided: for each denied
// path inside a writable root, its parent and every ancestor up to the root
// (a placeholder is the first missing component on the way to a denied
// path, beneath the root, which exists).
func (v *View) placeholderParents() []string {
	if !v.exact {
		return nil
	}
	roots, inRoot := v.writable()
	isRoot := func(p string) bool { return slices.Contains(roots, p) }
	seen := map[string]bool{}
	var out []string
	add := func(d string) {
		for c := d; !isRoot(c) && c != "/" && inRoot(c); c = filepath.Dir(c) {
			parent := filepath.Dir(c)
			if !seen[parent] {
				seen[parent] = true
				out = append(out, parent)
			}
		}
	}
	for _, d := range v.plan.Filesystem.ReadDenied {
		add(d.Path)
	}
	for _, d := range v.plan.Filesystem.WriteDenied {
		if !inGitRoot(d.Path, v.plan.Filesystem.GitDirs) {
			add(d.Path)
		}
	}
	sort.Strings(out)
	return out
}

// Isolation decides a mount namespace that changes nothing of the
// filesystem the program sees but /proc and /dev (o.Isolate), for the
// Landlock-only filesystem mode: the process isolation without the exact
// view.
func Isolation(o Options) (*View, error) {
	v := &View{Privileged: o.Privileged, opts: o}
	v.findDevices()
	if err := v.assemble(); err != nil {
		return nil, err
	}
	return v, nil
}

// findDevices lists the Devices that exist on the host as character
// devices, the ones the private /dev can bind.
func (v *View) findDevices() {
	if !v.opts.Isolate {
		return
	}
	for _, d := range Devices {
		if fi, err := fsdeps.Stat("/dev/" + d); err == nil && fi.IsCharDevice() {
			v.devices = append(v.devices, d)
		}
	}
	if v.opts.Terminal {
		_, err := fsdeps.Stat("/dev/pts/ptmx")
		v.hostPts = err == nil
	}
}

// assemble writes the view's operations from its options and decisions:
// namespaces, the read-only tree with the writable roots cloned back, the
// private /dev and /proc, then the masks.
func (v *View) assemble() error {
	o := v.opts
	v.NamespaceFlags = unix.CLONE_NEWNS
	v.UnshareFlags, v.Init = 0, false
	v.Ops, v.ScratchCaches, v.KeepsLayers = nil, nil, false
	op := func(x spawn.Op) { v.Ops = append(v.Ops, x) }

	if !o.Privileged {
		v.NamespaceFlags |= unix.CLONE_NEWUSER
		op(spawn.WriteFile("/proc/self/setgroups", "deny", "user namespace: setgroups deny"))
		op(spawn.WriteFile("/proc/self/uid_map", fmt.Sprintf("%d %d 1", o.UID, o.UID), "user namespace: uid map"))
		op(spawn.WriteFile("/proc/self/gid_map", fmt.Sprintf("%d %d 1", o.GID, o.GID), "user namespace: gid map"))
	}
	if o.Isolate {
		v.NamespaceFlags |= unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
		v.UnshareFlags = unix.CLONE_NEWCGROUP
		v.Init = true
	}
	if o.Network {
		v.NamespaceFlags |= unix.CLONE_NEWNET
		op(spawn.LoopbackUp("bring up the loopback interface"))
		if o.Proxy != nil {
			op(spawn.ListenAndHandOver(o.Proxy.Port, "listen for the proxy on 127.0.0.1"))
		}
	}
	// Nothing done here may propagate back to the host.
	op(spawn.MakePrivate("/", "make / private"))

	// Writable roots keep their own mount trees (with whatever was
	// read-only in them still read-only): clone them before everything is
	// made read-only, attach the clones back afterwards, shallowest first.
	var roots []string
	if v.exact {
		roots = outermost(append(append([]string(nil), v.roots...), o.ExtraWritable...))
	}
	if n := len(v.devices) + 1; len(roots)+n > spawn.MaxSlots {
		return fmt.Errorf("mountns: %d writable roots; at most %d can be mounted", len(roots), spawn.MaxSlots-n)
	}
	for i, r := range roots {
		op(spawn.CloneTree(spawn.Slot(i), r, "clone writable root "+r).Taking(v.ident(r), spawn.Ident{}))
	}
	if v.exact {
		op(spawn.SetReadOnly("/", true, "make everything read-only"))
	}
	if o.Isolate {
		v.privateDevAndProc(len(roots))
	}
	for i, r := range roots {
		op(spawn.AttachTree(spawn.Slot(i), r, "writable root "+r).Taking(v.ident(r), spawn.Ident{}))
	}
	if v.exact && o.PrivateTmp != "" {
		v.scratchCaches()
	}
	if o.PrivateTmp != "" {
		// Over whatever is there (a read-only view, a root, the scratch
		// caches' staging tmpfs, which is the stage's own): on top.
		id := v.ident(o.PrivateTmp)
		if len(v.ScratchCaches) > 0 {
			id = spawn.AnyIdent
		}
		op(spawn.MountNew("tmpfs", o.PrivateTmp, unix.MS_NOSUID|unix.MS_NODEV,
			fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", o.PrivateTmpBytes, o.UID, o.GID), "private temp dir "+o.PrivateTmp).Taking(spawn.Ident{}, id))
	}
	for _, m := range v.masks {
		if o.Isolate && underAny(maskedPath(m), hiddenBy) {
			continue // not in the private /dev or /proc at all
		}
		op(m)
	}

	// The working directory was looked up before the mounts: look it up
	// again so that it is the new view's.
	if o.Cwd != "" {
		op(spawn.Chdir(o.Cwd, "re-enter working directory "+o.Cwd).Taking(v.ident(o.Cwd), spawn.Ident{}))
	}
	return nil
}

// scratchCaches adds the overlays of Options.ScratchCaches: a tmpfs
// (bounded, charged to the memory cgroup of the process that writes it) is
// mounted on the private temp dir, each cache gets an upper and a work
// directory in it and an overlay over the cache itself, and then the
// private temp dir's own tmpfs is mounted over the staging one, which hides
// the upper layers from the program (overlayfs keeps its own references).
// Nothing is written on the host: the layers die with the namespace.
func (v *View) scratchCaches() {
	o := v.opts
	if len(o.ScratchCaches) == 0 {
		return
	}
	op := func(x spawn.Op) { v.Ops = append(v.Ops, x) }
	stage := o.PrivateTmp
	op(spawn.MountNew("tmpfs", stage, unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", o.PrivateTmpBytes, o.UID, o.GID), "scratch cache layers").Taking(spawn.Ident{}, v.ident(stage)))
	extra := ""
	if !o.Privileged {
		// trusted.* extended attributes are not the user namespace's.
		extra = ",userxattr"
	}
	for i, dir := range o.ScratchCaches {
		layer := fmt.Sprintf("%s/%d", stage, i)
		op(spawn.Mkdir(layer, 0o700, "scratch layer for "+dir))
		op(spawn.Mkdir(layer+"/upper", 0o755, "scratch layer for "+dir))
		op(spawn.Mkdir(layer+"/work", 0o700, "scratch layer for "+dir))
		// The lower directory is the cache itself, given as the
		// descriptor the stage checked (lowerdir=/proc/self/fd/N).
		op(spawn.MountNew("overlay", dir, unix.MS_NOSUID|unix.MS_NODEV,
			fmt.Sprintf("upperdir=%s/upper,workdir=%s/work%s", layer, layer, extra), "scratch cache "+dir).
			Taking(spawn.Ident{}, v.ident(dir)).LowerIsTarget())
		v.ScratchCaches = append(v.ScratchCaches, dir)
	}
	if o.KeepLayers {
		// Before the private temp dir's tmpfs hides the layers.
		op(spawn.OpenAndHandOver(stage, "hand the scratch layers over (--persist-cache)"))
		v.KeepsLayers = true
	}
}

// privateDevAndProc adds the operations that replace /dev with a tmpfs
// holding only the host's Devices (bound, so that they stay the same
// devices with the same Landlock rules), the host's devpts where the
// program's stdio is one of its ptys (the caller's terminal keeps its
// name, so tty, ttyname and job control work as outside; otherwise a new
// devpts instance: Options.Terminal), a /dev/shm of its own and
// the usual links, read-only; and /proc with a procfs of the child's PID
// namespace, read-only as the rest of the view. Device mounts are cloned
// into slots from slot on.
func (v *View) privateDevAndProc(slot int) {
	op := func(x spawn.Op) { v.Ops = append(v.Ops, x) }
	const dirFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	for i, d := range v.devices {
		op(spawn.CloneTree(spawn.Slot(slot+i), "/dev/"+d, "clone /dev/"+d).Taking(v.ident("/dev/"+d), spawn.Ident{}))
	}
	ptsSlot := slot + len(v.devices)
	if v.hostPts {
		op(spawn.CloneTree(spawn.Slot(ptsSlot), "/dev/pts", "clone /dev/pts").Taking(v.ident("/dev/pts"), spawn.Ident{}))
	}
	op(spawn.MountNew("tmpfs", "/dev", dirFlags, "mode=0755,size=64k,nr_inodes=64", "private /dev").Taking(spawn.Ident{}, v.ident("/dev")))
	for i, d := range v.devices {
		op(spawn.CreateFile("/dev/"+d, 0o666, "create /dev/"+d))
		op(spawn.AttachTree(spawn.Slot(slot+i), "/dev/"+d, "bind /dev/"+d))
	}
	op(spawn.Mkdir("/dev/pts", 0o755, "create /dev/pts"))
	if v.hostPts {
		op(spawn.AttachTree(spawn.Slot(ptsSlot), "/dev/pts", "bind /dev/pts"))
	} else {
		op(spawn.MountNew("devpts", "/dev/pts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620", "private /dev/pts"))
	}
	op(spawn.Mkdir("/dev/shm", 0o755, "create /dev/shm"))
	op(spawn.MountNew("tmpfs", "/dev/shm", dirFlags, "mode=1777,size=64m", "private /dev/shm"))
	for _, l := range [][2]string{{"pts/ptmx", "ptmx"}, {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}} {
		op(spawn.Symlink(l[0], "/dev/"+l[1], "link /dev/"+l[1]))
	}
	op(spawn.RemountBind("/dev", unix.MS_RDONLY|dirFlags, "make /dev read-only"))
	op(spawn.MountNew("proc", "/proc", unix.MS_RDONLY|dirFlags, "", "private /proc").Taking(spawn.Ident{}, v.ident("/proc")))
}

// ident is what the host path p must be when the stage takes it (see
// spawn.Ident): the file the decision saw, or a placeholder the run makes;
// a path that does not exist yet (the shared temp dir, made by the run) is
// only kept from being a link.
func (v *View) ident(p string) spawn.Ident {
	if slices.Contains(v.Placeholders, p) {
		return spawn.PlaceholderIdent
	}
	st, err := fsdeps.Lstat(p)
	if err != nil {
		return spawn.AnyIdent
	}
	return spawn.FileIdent(st.Dev(), st.Ino())
}

// maskedPath is the path a mask operation covers.
func maskedPath(op spawn.Op) string { return op.Target() }

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if policy.Within(path, d) {
			return true
		}
	}
	return false
}

// decideMasks looks at each denied path on the host and
// decides the mount that denies it (v.masks), with the placeholders that
// mounts over missing names need; registered tells which existing
// directories are placeholders (of this run or another).
func (v *View) decideMasks(registered func(string) bool) error {
	p, o := v.plan, v.opts
	_, inRoot := v.writable()
	isRoot := func(path string) bool {
		return slices.Contains(v.roots, path) || slices.Contains(o.ExtraWritable, path)
	}
	target := func(path string) (string, targetKind, error) { return maskTarget(path, inRoot, isRoot, registered) }
	op := func(x spawn.Op) { v.masks = append(v.masks, x) }

	// Read-denied paths: masked wherever they exist; where they do not,
	// only a writable root could bring them into being.
	masked := map[string]bool{}
	for _, d := range p.Filesystem.ReadDenied {
		target, kind, err := target(d.Path)
		if err != nil {
			return err
		}
		if kind == targetNone {
			if !coveredBy(d.Path, masked) {
				v.LateReadDenied = append(v.LateReadDenied, d.Path)
			}
			continue
		}
		if masked[target] || coveredBy(target, masked) {
			continue
		}
		switch kind {
		case targetPlaceholder:
			v.addPlaceholder(target, d.Path)
			fallthrough
		case targetDir:
			op(spawn.MountNew("tmpfs", target, maskFlags, "mode=000,size=4k,nr_inodes=1", "mask "+target).Taking(spawn.Ident{}, v.ident(target)))
		case targetFile:
			null := v.ident("/dev/null")
			op(spawn.Bind("/dev/null", target, false, "mask "+target).Taking(null, v.ident(target)))
			op(spawn.RemountBind(target, maskFlags, "mask "+target+" read-only").Taking(spawn.Ident{}, null))
			v.MaskedFiles = append(v.MaskedFiles, target)
		}
		masked[target] = true
		v.Masked = append(v.Masked, target)
	}

	// Write-denied paths only matter inside a writable root: everything
	// else is read-only already. In a root holding a writable git
	// directory some are Landlock's alone (LateWriteDenied).
	for _, d := range p.Filesystem.WriteDenied {
		if !inRoot(d.Path) || masked[d.Path] || coveredBy(d.Path, masked) {
			continue
		}
		if inGitDir(d.Path, p.Filesystem.GitDirs) {
			v.LateWriteDenied = append(v.LateWriteDenied, d.Path)
			continue
		}
		target, kind, err := target(d.Path)
		if err != nil {
			return err
		}
		switch kind {
		case targetNone:
			continue
		case targetPlaceholder:
			if inGitRoot(d.Path, p.Filesystem.GitDirs) {
				v.LateWriteDenied = append(v.LateWriteDenied, d.Path)
				continue
			}
			v.addPlaceholder(target, d.Path)
		}
		if masked[target] {
			continue
		}
		masked[target] = true
		id := v.ident(target)
		op(spawn.Bind(target, target, true, "bind "+target).Taking(id, id))
		op(spawn.SetReadOnly(target, true, "make "+target+" read-only").Taking(id, spawn.Ident{}))
		v.ReadOnly = append(v.ReadOnly, target)
	}
	// Daemons' unix sockets are not masked here: the supervisor decides
	// each connect when it is made (see the supervisor's socket choice),
	// so a socket bound after the start, or deleted before the mounts,
	// changes nothing.
	v.masks = append(v.pins(masked, inRoot), v.masks...)
	return nil
}

// pins are the binds, each directory onto itself, that keep the masks'
// paths where they are: a mount follows its directory entry, so were a
// directory between a writable root and a mount's target renamed (or
// removed once emptied), the target's path would be free to make anew
// inside the root: a new hooks directory or included config file, which
// git then reads on the host, a file where a denied one was. A mount
// point cannot be renamed, removed or renamed over (EBUSY), and a root is
// one already (AttachTree). So every directory strictly between a target
// and the deepest root holding it is bound onto itself (recursively: what
// is mounted beneath stays), shallowest first, before the masks.
func (v *View) pins(targets map[string]bool, inRoot func(string) bool) []spawn.Op {
	roots := append(append([]string(nil), v.roots...), v.opts.ExtraWritable...)
	seen := map[string]bool{}
	var dirs []string
	for t := range targets {
		if !inRoot(t) {
			continue
		}
		deepest := ""
		for _, r := range roots {
			if policy.Within(t, r) && len(r) > len(deepest) {
				deepest = filepath.Clean(r)
			}
		}
		for d := filepath.Dir(t); deepest != "" && policy.Beneath(d, deepest) && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs) // a recipe is the same, byte for byte, each time it is decided
	dirs = outermost(dirs)
	ops := make([]spawn.Op, 0, len(dirs))
	for _, d := range dirs {
		id := v.ident(d)
		ops = append(ops, spawn.Bind(d, d, true, "pin "+d+" (a directory above a mount cannot be renamed)").Taking(id, id))
	}
	return ops
}

func (v *View) addPlaceholder(target, denied string) {
	for _, p := range v.Placeholders {
		if p == target {
			return
		}
	}
	v.Placeholders = append(v.Placeholders, target)
	if target != denied {
		v.Narrowed = append(v.Narrowed, Narrowing{Path: target,
			Effect: "cannot be created: the denied path " + denied + " would lie beneath it"})
	}
}

type targetKind int

const (
	targetNone        targetKind = iota // nothing to mount: it does not exist and cannot be created
	targetDir                           // an existing directory
	targetFile                          // an existing non-directory
	targetPlaceholder                   // missing, inside a writable root: a placeholder directory
)

// maskTarget finds where a mount must go to deny path: the path itself when
// it exists; else, when the program could create it (inside a writable
// root), the first missing component on the way to it, beneath the root. A
// registered placeholder counts as missing: it is one, made by this run or
// another (registered is asked only of existing directories).
func maskTarget(path string, inRoot, isRoot func(string) bool, registered func(string) bool) (string, targetKind, error) {
	fi, err := fsdeps.Lstat(path)
	if err == nil {
		if fi.IsDir() {
			if inRoot(path) && !isRoot(path) && registered(path) {
				return path, targetPlaceholder, nil
			}
			return path, targetDir, nil
		}
		if fi.IsSymlink() {
			// The Plan's paths are canonical; a symlink here appeared
			// since it was made.
			return "", 0, fmt.Errorf("mountns: %s: became a symbolic link after it was resolved", path)
		}
		return path, targetFile, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = errno // as unix.Lstat gave it
		}
		return "", 0, fmt.Errorf("mountns: %s: %w", path, err)
	}
	if !inRoot(path) {
		return "", targetNone, nil
	}
	// Walk up towards the root to the first missing component.
	first := path
	for dir := filepath.Dir(path); dir != "/" && inRoot(dir) && !isRoot(dir); dir = filepath.Dir(dir) {
		if fi, err := fsdeps.Lstat(dir); err == nil && (!fi.IsDir() || !registered(dir)) {
			break
		}
		first = dir
	}
	return first, targetPlaceholder, nil
}

// outermost sorts paths shallowest first, dropping duplicates.
func outermost(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") < strings.Count(out[j], "/") })
	return out
}

// inGitDir reports whether p lies in one of the writable git directories.
func inGitDir(p string, dirs []policy.GitDir) bool {
	for _, g := range dirs {
		if policy.Within(p, g.Path) {
			return true
		}
	}
	return false
}

// inGitRoot reports whether p lies in a root that holds a writable git
// directory.
func inGitRoot(p string, dirs []policy.GitDir) bool {
	for _, g := range dirs {
		if policy.Within(p, g.Root) {
			return true
		}
	}
	return false
}

func coveredBy(p string, set map[string]bool) bool {
	for d := range set {
		if policy.Beneath(p, d) {
			return true
		}
	}
	return false
}
