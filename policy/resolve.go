package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
)

// Resolve turns a decoded policy and its context into a Plan: canonical
// paths, the network mode, the seccomp rules, the limits and the program's
// environment. It reads nothing but in and the filesystem. Every error
// about the input is an *Error naming the argument (and the field) the
// problem came from; only a nil in.Syscalls, a programming error, is not.
func Resolve(in Input) (*Plan, error) {
	r := &resolver{
		in:   in,
		env:  environ(in.Environ),
		memo: newStatMemo(),
	}
	r.seccomp = r.newSource(in.SeccompFrom, SourceSeccompProfile, "seccomp_profile")
	r.limits = r.newSource(in.LimitsFrom, SourceResourceLimits, "resource_limits")
	return r.resolve()
}

// resolver holds the state of one Resolve call.
type resolver struct {
	in      Input
	env     environ
	seccomp source
	limits  source
	plan    Plan

	homeDone bool
	homePath string
	homeErr  error
	// otherHome, computed once.
	otherDone bool
	other     string

	// cwdLinks are the symlinks the policy cwd's resolution followed.
	cwdLinks []string
	// sharedDirs caches sharedDirKind by directory.
	sharedDirs map[string]string
	// memo remembers the lstat and readlink answers of this call.
	memo *statMemo
}

func (r *resolver) resolve() (*Plan, error) {
	p := &r.plan
	p.Policy = r.in.Policy.Kind
	if p.Policy != KindReadOnly && p.Policy != KindWorkspaceWrite {
		return nil, r.policyErr("type", "only `read_only` and `workspace_write` can be enforced, got "+tick(string(p.Policy)))
	}
	if r.in.Syscalls == nil {
		return nil, errors.New("policy.Resolve: Input.Syscalls is nil")
	}
	cwd, err := r.policyCwd()
	if err != nil {
		return nil, err
	}
	p.PolicyCwd = cwd
	if err := r.filesystem(); err != nil {
		return nil, err
	}
	if err := r.network(); err != nil {
		return nil, err
	}
	if err := r.seccompRules(); err != nil {
		return nil, err
	}
	if err := r.resourceLimits(); err != nil {
		return nil, err
	}
	r.environment()
	r.goBuildVCS()
	return p, nil
}

// note records one narrowing decision.
func (r *resolver) note(sentence string) {
	r.plan.Notes = append(r.plan.Notes, sentence)
}

// policyErr is an error in the policy at the given JSON path.
func (r *resolver) policyErr(path, msg string) *Error {
	return &Error{Source: SourcePolicy, Arg: r.in.name(SourcePolicy), Path: path, Msg: msg}
}

// home returns the home directory for "~", computed once.
func (r *resolver) home() (string, error) {
	if !r.homeDone {
		r.homePath, r.homeErr = homeDir(r.env, r.in.PasswdHome)
		r.homeDone = true
	}
	return r.homePath, r.homeErr
}

// otherHome returns the password database's home when it differs from the
// one "~" expands to ($HOME), else "". VT Code expands "~" with its own
// $HOME, which the helper's environment need not share (an MCP server's
// environment may set HOME): secrets under either home are denied.
func (r *resolver) otherHome() string {
	if r.otherDone {
		return r.other
	}
	r.otherDone = true
	h, err := r.home()
	if err != nil || r.in.PasswdHome == nil {
		return ""
	}
	pw, err := r.in.PasswdHome()
	if err != nil || pw == "" || !filepath.IsAbs(pw) || filepath.Clean(pw) == filepath.Clean(h) {
		return ""
	}
	r.other = pw
	return pw
}

// source says where a JSON value came from, for error messages: the input
// and the path of the value inside it.
type source struct {
	src    Source
	arg    string // how the caller names src
	prefix string // "", "seccomp_profile"
}

// newSource makes the source of Input.SeccompFrom or Input.LimitsFrom:
// SourcePolicy means the copy embedded in the policy (at embedded), unset
// means def.
func (r *resolver) newSource(from, def Source, embedded string) source {
	if from == SourceUnset {
		from = def
	}
	s := source{src: from, arg: r.in.name(from)}
	if from == SourcePolicy {
		s.prefix = embedded
	}
	return s
}

// err is an error about the value at sub (a path relative to the value).
func (s source) err(sub, msg string) *Error {
	return &Error{Source: s.src, Arg: s.arg, Path: joinPath(s.prefix, sub), Msg: msg}
}

// where names the source for a sentence ("--sandbox-policy: seccomp_profile"
// in the CLI's words).
func (s source) where() string {
	if s.prefix == "" {
		return s.arg
	}
	return s.arg + ": " + s.prefix
}

// policyCwd resolves the policy's working directory (or the process's
// working directory): it must exist and be a directory.
func (r *resolver) policyCwd() (string, error) {
	arg := r.in.name(SourcePolicyCwd)
	given := r.in.PolicyCwd
	if given == "" {
		given = r.in.ProcessCwd
		if given == "" {
			return "", &Error{Source: SourcePolicyCwd, Arg: arg, Msg: "not given, and the process working directory is unknown"}
		}
	}
	if strings.IndexByte(given, 0) >= 0 {
		return "", &Error{Source: SourcePolicyCwd, Arg: arg, Msg: quote(given) + ": contains a NUL byte"}
	}
	if !filepath.IsAbs(given) {
		if !filepath.IsAbs(r.in.ProcessCwd) {
			return "", &Error{Source: SourcePolicyCwd, Arg: arg, Msg: quote(given) + " is relative and the process working directory is not known as an absolute path"}
		}
		given = filepath.Join(r.in.ProcessCwd, given)
	}
	cwd, links, err := r.memo.resolveExisting(given)
	if err != nil {
		return "", &Error{Source: SourcePolicyCwd, Arg: arg, Msg: err.Error()}
	}
	r.cwdLinks = links
	if fi, err := fsdeps.Stat(cwd); err != nil || !fi.IsDir() {
		return "", &Error{Source: SourcePolicyCwd, Arg: arg, Msg: plain(given) + ": not a directory"}
	}
	return cwd, nil
}

// filesystem fills Plan.Filesystem.
func (r *resolver) filesystem() error {
	fsys := &r.plan.Filesystem
	roots, err := r.writableRoots()
	if err != nil {
		return err
	}
	fsys.WritableRoots = roots
	fsys.WritableDevices = r.writableDevices()
	var read, write deniedList
	if err := r.denySensitive(&read, &write); err != nil {
		return err
	}
	if err := r.protectMetadata(roots, &write); err != nil {
		return err
	}
	if err := r.protectHooks(roots, &write); err != nil {
		return err
	}
	if err := r.liftDenials(&read, &write); err != nil {
		return err
	}
	if err := r.changedDenials(roots, &read, &write); err != nil {
		return err
	}
	fsys.ReadDenied = read.list
	fsys.WriteDenied = write.list
	fsys.ScratchCaches = r.scratchCaches()
	return nil
}

// writableRoots returns, for workspace_write, the policy's roots and the
// policy cwd, canonical and de-duplicated (first source wins). read_only has
// none. A root or cwd reached through a symlink a sandboxed program could
// have planted is refused (see refusePlantedLinks).
func (r *resolver) writableRoots() ([]WritablePath, error) {
	pol := &r.in.Policy
	if pol.Kind != KindWorkspaceWrite {
		return []WritablePath{}, nil
	}
	roots := []WritablePath{}
	seen := map[string]bool{}
	add := func(path, source, given string) {
		if seen[path] {
			return
		}
		seen[path] = true
		roots = append(roots, WritablePath{Path: path, Source: source, Given: givenIfDifferent(given, path)})
	}
	var traces []grantTrace
	// grant adds one root as given (root), where it came from (source),
	// with fail making an error that names it.
	grant := func(root, source string, fail func(msg string) *Error) error {
		if strings.IndexByte(root, 0) >= 0 {
			return fail(quote(root) + ": contains a NUL byte")
		}
		if !filepath.IsAbs(root) {
			return fail(quote(root) + ": not an absolute path (writable roots must be absolute)")
		}
		c, links, err := r.memo.resolveExisting(root)
		create := false
		if err != nil {
			// A root that does not exist yet, below a parent that does
			// (VT Code grants fs_write on a directory a command is about
			// to make): the helper makes that one directory at the start.
			pc, plinks, ok := missingRoot(root)
			if !ok {
				return fail(err.Error())
			}
			c, links, create = pc, plinks, true
		}
		traces = append(traces, grantTrace{links: links, fail: fail})
		if inGitDir(c) {
			return fail(plain(c) + ": inside a .git directory; a writable root there would make the repository's hooks and config writable, which the protected metadata forbids")
		}
		if !create {
			if msg := rootKind(c); msg != "" {
				return fail(plain(c) + ": " + msg)
			}
		}
		add(c, source, root)
		if create {
			roots[len(roots)-1].Create = true
		}
		return nil
	}
	for i, wr := range pol.WritableRoots {
		at := "writable_roots[" + strconv.Itoa(i) + "]"
		if err := grant(wr.Root, at, func(msg string) *Error { return r.policyErr(at+".root", msg) }); err != nil {
			return nil, err
		}
	}
	if ch := r.in.Changes; ch != nil {
		for _, w := range ch.Writable {
			from := w.From
			root, err := expandTilde(w.Path, r.home)
			if err != nil {
				return nil, changeErr(from, "cannot expand ~: "+err.Error())
			}
			if err := grant(root, from, func(msg string) *Error { return changeErr(from, msg) }); err != nil {
				return nil, err
			}
		}
	}
	cwdGiven := r.in.PolicyCwd
	if cwdGiven == "" {
		cwdGiven = r.in.ProcessCwd
	}
	if inGitDir(r.plan.PolicyCwd) {
		return nil, &Error{Source: SourcePolicyCwd, Arg: r.in.name(SourcePolicyCwd), Msg: plain(r.plan.PolicyCwd) + ": inside a .git directory; as a writable root it would make the repository's hooks and config writable, which the protected metadata forbids"}
	}
	add(r.plan.PolicyCwd, "policy_cwd", cwdGiven)
	traces = append(traces, grantTrace{links: r.cwdLinks, fail: func(msg string) *Error {
		return &Error{Source: SourcePolicyCwd, Arg: r.in.name(SourcePolicyCwd), Msg: msg}
	}})
	if err := r.refusePlantedLinks(roots, traces); err != nil {
		return nil, err
	}
	if !pol.ExcludeSlashTmp || !pol.ExcludeTmpdirEnvVar {
		// Codex reads false as "/tmp and $TMPDIR are writable"; VT Code
		// never reads these flags, and sends false by default and for
		// read_only commands granted extra write roots: reading them
		// Codex's way would widen those policies to the host's /tmp (its
		// daemons' sockets included) or wherever $TMPDIR points.
		r.note("exclude_slash_tmp / exclude_tmpdir_env_var false: ignored, as VT Code ignores them; /tmp and $TMPDIR are not made writable (the program gets a private TMPDIR when its temp dir is not writable).")
	}
	return roots, nil
}

// inGitDir reports whether the canonical path p is a .git directory or lies
// in one. (Other protected names are not refused as root components:
// Codex keeps its worktrees under ~/.codex.)
func inGitDir(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// standardDevices are writable in every policy.
var standardDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// writableDevices returns the standard devices and the helper's terminals.
func (r *resolver) writableDevices() []string {
	devs := append([]string(nil), standardDevices...)
	for _, t := range r.in.TerminalDevices {
		if t != "" && !containsString(devs, t) {
			devs = append(devs, t)
		}
	}
	return devs
}

// missingRoot resolves a writable root whose last component does not exist
// while its parent does, as a directory: the canonical path it will have,
// and the links followed to its parent. A root with "." or ".." in it, or
// whose parent is missing too, is not one.
func missingRoot(root string) (string, []string, bool) {
	for _, part := range strings.Split(root, "/") {
		if part == "." || part == ".." {
			return "", nil, false
		}
	}
	clean := filepath.Clean(root)
	if clean == "/" {
		return "", nil, false
	}
	if _, err := fsdeps.Lstat(clean); !errors.Is(err, fs.ErrNotExist) {
		return "", nil, false
	}
	parent, links, err := resolveExisting(filepath.Dir(clean))
	if err != nil {
		return "", nil, false
	}
	if st, err := fsdeps.Stat(parent); err != nil || !st.IsDir() {
		return "", nil, false
	}
	return filepath.Join(parent, filepath.Base(clean)), links, true
}

// Filesystems a writable root cannot be on: the kernel's views of itself.
var pseudoFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "procfs",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.BPF_FS_MAGIC:        "bpffs",
}

// rootKind says why an existing path cannot be a writable root ("" when
// it can): it must be a directory, on a filesystem that holds files.
func rootKind(path string) string {
	st, err := fsdeps.Stat(path)
	if err != nil {
		return errnoText(err)
	}
	if !st.IsDir() {
		return "not a directory (a writable root is a directory the program may write in)"
	}
	if fsType, err := fsdeps.Statfs(path); err == nil {
		if name, ok := pseudoFS[fsType]; ok {
			return "on " + name + ", the kernel's own view of itself, which cannot be a writable root"
		}
	}
	return ""
}
