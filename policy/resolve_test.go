package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeSyscalls is a SyscallTable for tests: present names are known, the
// value says whether they are native.
type fakeSyscalls map[string]bool

func (f fakeSyscalls) Lookup(name string) (native, known bool) {
	native, known = f[name]
	return native, known
}

// testSyscalls knows VT Code's list and the strict model's system calls as
// native, except umount (known on other architectures only).
func testSyscalls() fakeSyscalls {
	t := fakeSyscalls{}
	for _, n := range BlockedSyscalls {
		t[n] = true
	}
	for _, n := range []string{"clone", "clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ioctl", "open_by_handle_at", "socket", "prctl", "chmod",
		"pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "chroot",
		"fanotify_init", "syslog", "clock_adjtime", "sethostname", "setdomainname", "vhangup", "pidfd_getfd", "quotactl_fd"} {
		t[n] = true
	}
	t["umount"] = false
	return t
}

// realDir returns t.TempDir() with symlinks resolved.
func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	mkdirs(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	mkdirs(t, filepath.Dir(link))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// testEnv is a temp tree with a home and a workspace, and an Input for a
// policy with them.
type testEnv struct {
	dir, home, ws string
}

func newTestEnv(t *testing.T) testEnv {
	t.Helper()
	d := realDir(t)
	e := testEnv{dir: d, home: filepath.Join(d, "home"), ws: filepath.Join(d, "ws")}
	mkdirs(t, e.home, e.ws)
	confineSharedDirs(t, d)
	// The host's git configuration is not the test's.
	prevSystem := systemGitConfig
	systemGitConfig = filepath.Join(d, "etc", "gitconfig")
	t.Cleanup(func() { systemGitConfig = prevSystem })
	return e
}

func (e testEnv) input(pol SandboxPolicy) Input {
	return Input{
		Policy:     pol,
		Seccomp:    pol.DerivedSeccompProfile(),
		Limits:     pol.DerivedResourceLimits(),
		ProcessCwd: e.ws,
		Environ:    []string{"HOME=" + e.home, "PATH=/usr/bin:/bin"},
		Syscalls:   testSyscalls(),
		PasswdHome: func() (string, error) { return "", errors.New("no password database in tests") },
		Names:      cliNames,
	}
}

// cliNames names the sources as the CLI does (cmd/sandbox-executable), so
// the messages tested here are the ones users see.
func cliNames(s Source) string {
	switch s {
	case SourcePolicy:
		return "--sandbox-policy"
	case SourcePolicyCwd:
		return "--sandbox-policy-cwd"
	case SourceSeccompProfile:
		return "--seccomp-profile"
	case SourceResourceLimits:
		return "--resource-limits"
	}
	return s.String()
}

// wsPolicy is a workspace_write policy with the given roots, no temp dirs
// and no sensitive paths.
func wsPolicy(roots ...string) SandboxPolicy {
	p := SandboxPolicy{Kind: KindWorkspaceWrite, ResourceLimits: DefaultResourceLimits(), SeccompProfile: StrictSeccompProfile(),
		ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true, SensitivePaths: &[]SensitivePath{}}
	for _, r := range roots {
		p.WritableRoots = append(p.WritableRoots, WritableRoot{Root: r})
	}
	return p
}

func mustResolve(t *testing.T, in Input) *Plan {
	t.Helper()
	p, err := Resolve(in)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return p
}

// resolveError resolves in, which must fail, and returns the message.
func resolveError(t *testing.T, in Input) string {
	t.Helper()
	_, err := Resolve(in)
	if err == nil {
		t.Fatal("Resolve succeeded")
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Arg == "" {
		t.Fatalf("error %v (%T) is not a *policy.Error with Arg", err, err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("error is not one line: %q", err)
	}
	return err.Error()
}

func TestResolveReadOnly(t *testing.T) {
	e := newTestEnv(t)
	plan := mustResolve(t, e.input(SandboxPolicy{Kind: KindReadOnly}))
	if plan.Policy != KindReadOnly || plan.PolicyCwd != e.ws {
		t.Fatalf("policy %q cwd %q", plan.Policy, plan.PolicyCwd)
	}
	if len(plan.Filesystem.WritableRoots) != 0 {
		t.Fatalf("read_only has writable roots: %+v", plan.Filesystem.WritableRoots)
	}
	if !reflect.DeepEqual(plan.Filesystem.WritableDevices, []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}) {
		t.Fatalf("devices %q", plan.Filesystem.WritableDevices)
	}
	// The defaults: 17 home entries + 8 VT Code directories, read and write.
	if n := len(plan.Filesystem.ReadDenied); n != 25 {
		t.Fatalf("%d read-denied paths: %+v", n, plan.Filesystem.ReadDenied)
	}
	first := plan.Filesystem.ReadDenied[0]
	if first != (DeniedPath{Path: e.home + "/.ssh", Source: "default_sensitive_paths", Given: "~/.ssh"}) {
		t.Fatalf("first denied %+v", first)
	}
	last := plan.Filesystem.ReadDenied[24]
	if last.Path != e.home+"/.vtcode" || last.Given != "" {
		t.Fatalf("last denied %+v", last)
	}
	if !reflect.DeepEqual(plan.Filesystem.ReadDenied, plan.Filesystem.WriteDenied) {
		t.Fatal("the defaults must block reading and writing alike")
	}
	if plan.Network.Mode != NetworkNone || plan.Limits != (Limits{MemoryBytes: 512 << 20, Pids: 64, FileSizeBytes: 1024 << 20, CPUSeconds: 60, TimeoutSeconds: 120, TimeoutRule: "timeout_secs 120"}) {
		t.Fatalf("network %+v limits %+v", plan.Network, plan.Limits)
	}
	if len(plan.Notes) != 0 {
		t.Fatalf("notes %q", plan.Notes)
	}
}

func TestResolveReadOnlyIgnoresExcludeFlags(t *testing.T) {
	e := newTestEnv(t)
	in := e.input(SandboxPolicy{Kind: KindReadOnly})
	in.Environ = append(in.Environ, "TMPDIR="+e.dir)
	if plan := mustResolve(t, in); len(plan.Filesystem.WritableRoots) != 0 {
		t.Fatalf("roots %+v", plan.Filesystem.WritableRoots)
	}
}

func TestResolvePolicyCwd(t *testing.T) {
	e := newTestEnv(t)
	sub := filepath.Join(e.ws, "sub")
	mkdirs(t, sub)
	symlink(t, e.ws, filepath.Join(e.dir, "link"))
	writeFile(t, filepath.Join(e.dir, "file"), "x")

	for _, tt := range []struct{ policyCwd, processCwd, want string }{
		{"", e.ws, e.ws},
		{sub, e.ws, sub},
		{"sub", e.ws, sub},
		{"./sub/../sub/", e.ws, sub},
		{filepath.Join(e.dir, "link", "sub"), "/", sub},
	} {
		in := e.input(SandboxPolicy{Kind: KindReadOnly})
		in.PolicyCwd, in.ProcessCwd = tt.policyCwd, tt.processCwd
		if got := mustResolve(t, in).PolicyCwd; got != tt.want {
			t.Errorf("PolicyCwd %q in %q: got %q, want %q", tt.policyCwd, tt.processCwd, got, tt.want)
		}
	}

	for _, tt := range []struct{ policyCwd, processCwd, want string }{
		{filepath.Join(e.dir, "missing"), e.ws, "--sandbox-policy-cwd: " + e.dir + "/missing: no such file or directory"},
		{filepath.Join(e.dir, "file"), e.ws, "--sandbox-policy-cwd: " + e.dir + "/file: not a directory"},
		{"rel", "", `--sandbox-policy-cwd: "rel" is relative and the process working directory is not known as an absolute path`},
		{"", "", "--sandbox-policy-cwd: not given, and the process working directory is unknown"},
		{"/a\x00b", e.ws, `--sandbox-policy-cwd: "/a\x00b": contains a NUL byte`},
	} {
		in := e.input(SandboxPolicy{Kind: KindReadOnly})
		in.PolicyCwd, in.ProcessCwd = tt.policyCwd, tt.processCwd
		if got := resolveError(t, in); got != tt.want {
			t.Errorf("PolicyCwd %q: got %q, want %q", tt.policyCwd, got, tt.want)
		}
	}
}

func TestResolveWritableRoots(t *testing.T) {
	e := newTestEnv(t)
	real := filepath.Join(e.dir, "real")
	mkdirs(t, real)
	symlink(t, real, filepath.Join(e.dir, "alias"))

	in := e.input(wsPolicy(filepath.Join(e.dir, "alias"), e.ws+"/", real))
	plan := mustResolve(t, in)
	want := []WritablePath{
		{Path: real, Source: "writable_roots[0]", Given: e.dir + "/alias"},
		{Path: e.ws, Source: "writable_roots[1]", Given: e.ws + "/"},
	}
	if !reflect.DeepEqual(plan.Filesystem.WritableRoots, want) {
		t.Fatalf("got  %+v\nwant %+v", plan.Filesystem.WritableRoots, want)
	}

	t.Run("cwd appended unless present", func(t *testing.T) {
		in := e.input(wsPolicy(real))
		plan := mustResolve(t, in)
		want := []WritablePath{{Path: real, Source: "writable_roots[0]"}, {Path: e.ws, Source: "policy_cwd"}}
		if !reflect.DeepEqual(plan.Filesystem.WritableRoots, want) {
			t.Fatalf("got %+v", plan.Filesystem.WritableRoots)
		}
	})

	t.Run("not there yet", func(t *testing.T) {
		// Its parent exists: the run makes it (only it) at its start.
		plan := mustResolve(t, e.input(wsPolicy(e.dir+"/new")))
		got := plan.Filesystem.WritableRoots[0]
		if got.Path != real+"/new" && got.Path != e.dir+"/new" || !got.Create {
			t.Fatalf("got %+v, want %s/new to be created", got, e.dir)
		}
		if _, err := os.Stat(e.dir + "/new"); err == nil {
			t.Errorf("resolving made the directory: only the run may")
		}
		for _, bad := range []string{e.dir + "/new/..", e.dir + "/./new"} {
			if _, err := Resolve(e.input(wsPolicy(bad))); err == nil {
				t.Errorf("root %q resolved: a missing root with . or .. must be an error", bad)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct{ root, want string }{
			{e.dir + "/missing/below", "--sandbox-policy: writable_roots[0].root: " + e.dir + "/missing/below: no such file or directory"},
			{"relative/dir", `--sandbox-policy: writable_roots[0].root: "relative/dir": not an absolute path (writable roots must be absolute)`},
			{"", `--sandbox-policy: writable_roots[0].root: "": not an absolute path (writable roots must be absolute)`},
			{e.ws + "\x00", `--sandbox-policy: writable_roots[0].root: "` + e.ws + `\x00": contains a NUL byte`},
		} {
			if got := resolveError(t, e.input(wsPolicy(tt.root))); got != tt.want {
				t.Errorf("root %q:\n got %q\nwant %q", tt.root, got, tt.want)
			}
		}
		// The index names the bad entry.
		got := resolveError(t, e.input(wsPolicy(e.ws, e.dir+"/nope/nope")))
		if !strings.HasPrefix(got, "--sandbox-policy: writable_roots[1].root: ") {
			t.Errorf("got %q", got)
		}
	})
}

// TestResolveTempRoots: the exclude_* flags never make /tmp or $TMPDIR
// writable (VT Code never reads them; Codex's reading would widen the
// policies that send false), and a false flag is noted.
func TestResolveTempRoots(t *testing.T) {
	e := newTestEnv(t)
	tmpdir := filepath.Join(e.dir, "tmpdir")
	mkdirs(t, tmpdir)
	for _, flags := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		pol := wsPolicy(e.ws)
		pol.ExcludeSlashTmp, pol.ExcludeTmpdirEnvVar = flags[0], flags[1]
		for _, env := range []string{"TMPDIR=" + tmpdir, "TMPDIR=/", "TMPDIR=/tmp"} {
			in := e.input(pol)
			in.Environ = append(in.Environ, env)
			plan := mustResolve(t, in)
			want := []WritablePath{{Path: e.ws, Source: "writable_roots[0]"}}
			if !reflect.DeepEqual(plan.Filesystem.WritableRoots, want) {
				t.Errorf("flags %v, %s: roots %+v", flags, env, plan.Filesystem.WritableRoots)
			}
			noted := strings.Contains(strings.Join(plan.Notes, " "), "exclude_slash_tmp / exclude_tmpdir_env_var false: ignored")
			if noted != (!flags[0] || !flags[1]) {
				t.Errorf("flags %v: notes %q", flags, plan.Notes)
			}
		}
	}
}

func TestResolveWritableDevices(t *testing.T) {
	e := newTestEnv(t)
	in := e.input(SandboxPolicy{Kind: KindReadOnly})
	in.TerminalDevices = []string{"/dev/pts/3", "/dev/tty", "/dev/pts/3", ""}
	got := mustResolve(t, in).Filesystem.WritableDevices
	if want := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts/3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestResolveRefusesUnconfinedKinds(t *testing.T) {
	e := newTestEnv(t)
	for _, k := range []Kind{KindDangerFullAccess, KindExternalSandbox, ""} {
		got := resolveError(t, e.input(SandboxPolicy{Kind: k}))
		if !strings.HasPrefix(got, "--sandbox-policy: type: only `read_only` and `workspace_write` can be enforced") {
			t.Errorf("%q: %s", k, got)
		}
	}
}

// TestResolveFixtures resolves the contract's policies against temp trees
// standing in for their roots.
func TestResolveFixtures(t *testing.T) {
	e := newTestEnv(t)
	for _, name := range fixtureNames(t, "policy-*.json") {
		data := readFixture(t, name)
		pol, err := DecodePolicy(data)
		if err != nil {
			continue // danger/external
		}
		t.Run(name, func(t *testing.T) {
			for i := range pol.WritableRoots {
				r := filepath.Join(e.dir, "roots", pol.WritableRoots[i].Root)
				mkdirs(t, r)
				pol.WritableRoots[i].Root = r
			}
			in := e.input(*pol)
			if pol.Kind == KindWorkspaceWrite {
				in.SeccompFrom, in.LimitsFrom = SourcePolicy, SourcePolicy
			}
			plan, err := Resolve(in)
			if name == "policy-workspace_write_full.json" {
				// It blocks "custom_syscall", which no architecture has.
				if err == nil || !strings.Contains(err.Error(), `seccomp_profile.blocked_syscalls[31]: "custom_syscall" is not a system call on any architecture`) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if plan.Policy != pol.Kind || plan.Limits.TimeoutSeconds == 0 {
				t.Fatalf("plan %+v", plan)
			}
		})
	}
}

// TestResolveNULFromJSON: "\u0000" decodes (serde accepts it) but no path
// may contain it.
func TestResolveNULFromJSON(t *testing.T) {
	e := newTestEnv(t)
	for _, tt := range []struct{ json, want string }{
		{`{"type":"workspace_write","writable_roots":[{"root":"` + e.ws + `\u0000x"}]}`,
			`--sandbox-policy: writable_roots[0].root: "` + e.ws + `\x00x": contains a NUL byte`},
		{`{"type":"workspace_write","writable_roots":[{"root":"` + e.ws + `"}],"sensitive_paths":[{"path":"~/\u0000"}]}`,
			`--sandbox-policy: sensitive_paths[0].path: "~/\x00": contains a NUL byte`},
	} {
		pol, err := DecodePolicy([]byte(tt.json))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got := resolveError(t, e.input(*pol)); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestRootKind(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{dir: "", file: "not a directory", "/proc": "on procfs", "/sys": "on sysfs"} {
		if got := rootKind(path); (want == "") != (got == "") || !strings.HasPrefix(got, want) {
			t.Errorf("rootKind(%s) = %q, want %q...", path, got, want)
		}
	}
}

// resolveLenient is statMemo.resolveLenient without a memo.
func resolveLenient(p string) (canonical, error) {
	return (*statMemo)(nil).resolveLenient(p)
}
