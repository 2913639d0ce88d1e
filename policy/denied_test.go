package policy

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }

func TestResolveLenient(t *testing.T) {
	d := realDir(t)
	mkdirs(t, d+"/a/b", d+"/target")
	writeFile(t, d+"/file", "x")
	symlink(t, d+"/a/b", d+"/lnk")            // absolute link to a dir
	symlink(t, "a/b", d+"/rel")               // relative link
	symlink(t, d+"/nowhere/x", d+"/dangling") // dangling link
	symlink(t, "lnk", d+"/chain")             // link to a link
	symlink(t, d+"/loop2", d+"/loop1")        // loop
	symlink(t, d+"/loop1", d+"/loop2")        // loop
	symlink(t, d+"/target", d+"/a/b/up")      // nested link
	symlink(t, "../target/new", d+"/a/dang")  // relative dangling link

	for _, tt := range []struct {
		in   string
		want canonical
	}{
		{d, canonical{Path: d, Exists: true}},
		{"/", canonical{Path: "/", Exists: true}},
		{d + "/a/./b/", canonical{Path: d + "/a/b", Exists: true}},
		{d + "/lnk", canonical{Path: d + "/a/b", Exists: true, Link: d + "/lnk"}},
		{d + "/rel", canonical{Path: d + "/a/b", Exists: true, Link: d + "/rel"}},
		{d + "/chain", canonical{Path: d + "/a/b", Exists: true, Link: d + "/chain"}},
		{d + "/lnk/missing/deeper", canonical{Path: d + "/a/b/missing/deeper"}},
		{d + "/lnk/..", canonical{Path: d + "/a", Exists: true}},       // ".." after a link is the target's parent
		{d + "/missing/../a", canonical{Path: d + "/a", Exists: true}}, // ".." climbs out of what is missing
		{d + "/missing/../lnk/x", canonical{Path: d + "/a/b/x"}},       // and resolution resumes
		{d + "/missing/deeper/../../lnk", canonical{Path: d + "/a/b", Exists: true, Link: d + "/lnk"}},
		{d + "/missing/x/..", canonical{Path: d + "/missing"}}, // still beneath the missing part
		{d + "/dangling", canonical{Path: d + "/nowhere/x", Link: d + "/dangling"}},
		{d + "/a/dang", canonical{Path: d + "/target/new", Link: d + "/a/dang"}},
		{d + "/lnk/up/f", canonical{Path: d + "/target/f"}},
		{d + "/file/below", canonical{Path: d + "/file/below"}}, // ENOTDIR: cannot exist
	} {
		got, err := resolveLenient(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("resolveLenient(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{d + "/loop1", "relative", d + "/a\x00"} {
		if got, err := resolveLenient(in); err == nil {
			t.Errorf("resolveLenient(%q) = %+v, want an error", in, got)
		}
	}
}

func TestResolveSensitivePaths(t *testing.T) {
	e := newTestEnv(t)
	secrets := filepath.Join(e.dir, "vault", "secrets")
	mkdirs(t, secrets)
	symlink(t, secrets, filepath.Join(e.home, ".ssh")) // ~/.ssh is a symlink

	sensitive := []SensitivePath{
		{Path: "~/.ssh", BlockRead: true, BlockWrite: true},
		{Path: "~", BlockRead: false, BlockWrite: true},
		{Path: e.ws + "/not/yet", BlockRead: true, BlockWrite: false},
		{Path: "/etc/../etc/shadow-like-missing", BlockRead: false, BlockWrite: false},
	}
	pol := wsPolicy(e.ws)
	pol.SensitivePaths = &sensitive
	plan := mustResolve(t, e.input(pol))

	wantRead := []DeniedPath{
		{Path: secrets, Source: "sensitive_paths[0]", Given: "~/.ssh", Exists: true},
		{Path: e.ws + "/not/yet", Source: "sensitive_paths[2]"},
	}
	if !reflect.DeepEqual(plan.Filesystem.ReadDenied, wantRead) {
		t.Errorf("read denied\n got %+v\nwant %+v", plan.Filesystem.ReadDenied, wantRead)
	}
	wantWrite := []DeniedPath{
		{Path: secrets, Source: "sensitive_paths[0]", Given: "~/.ssh", Exists: true},
		{Path: e.home + "/.ssh", Source: "sensitive_paths[0] (the symlink itself)", Given: "~/.ssh", Exists: true},
		{Path: e.home, Source: "sensitive_paths[1]", Given: "~", Exists: true},
	}
	for _, name := range protectedNames {
		wantWrite = append(wantWrite, DeniedPath{Path: e.ws + "/" + name, Source: "protected_metadata"})
	}
	if !reflect.DeepEqual(plan.Filesystem.WriteDenied, wantWrite) {
		t.Errorf("write denied\n got %+v\nwant %+v", plan.Filesystem.WriteDenied, wantWrite)
	}

	t.Run("empty list blocks nothing", func(t *testing.T) {
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		if len(plan.Filesystem.ReadDenied) != 0 || len(plan.Filesystem.WriteDenied) != 4 {
			t.Fatalf("got %+v / %+v", plan.Filesystem.ReadDenied, plan.Filesystem.WriteDenied)
		}
	})
	t.Run("nil list means the defaults", func(t *testing.T) {
		pol := wsPolicy(e.ws)
		pol.SensitivePaths = nil
		plan := mustResolve(t, e.input(pol))
		if len(plan.Filesystem.ReadDenied) != 25 || plan.Filesystem.ReadDenied[0].Path != secrets {
			t.Fatalf("got %+v", plan.Filesystem.ReadDenied)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct{ path, want string }{
			{"relative/x", `--sandbox-policy: sensitive_paths[0].path: "relative/x": not an absolute path (only "~", "~/..." and absolute paths can be denied)`},
			{"~user/.ssh", `--sandbox-policy: sensitive_paths[0].path: "~user/.ssh": not an absolute path (only "~", "~/..." and absolute paths can be denied)`},
			{"", `--sandbox-policy: sensitive_paths[0].path: "": not an absolute path (only "~", "~/..." and absolute paths can be denied)`},
			{"/a\x00b", `--sandbox-policy: sensitive_paths[0].path: "/a\x00b": contains a NUL byte`},
			{"~/\x00", `--sandbox-policy: sensitive_paths[0].path: "~/\x00": contains a NUL byte`},
		} {
			pol := wsPolicy(e.ws)
			pol.SensitivePaths = &[]SensitivePath{{Path: tt.path, BlockRead: true, BlockWrite: true}}
			if got := resolveError(t, e.input(pol)); got != tt.want {
				t.Errorf("%q:\n got %s\nwant %s", tt.path, got, tt.want)
			}
		}
	})
}

func TestResolveTildeHome(t *testing.T) {
	e := newTestEnv(t)
	other := filepath.Join(e.dir, "pwhome")
	mkdirs(t, other)
	pol := wsPolicy(e.ws)
	pol.SensitivePaths = &[]SensitivePath{{Path: "~/.aws", BlockRead: true}}
	for _, tt := range []struct {
		name    string
		environ []string
		passwd  func() (string, error)
		want    string // denied path, or error substring when it starts with "--"
	}{
		{"HOME", []string{"HOME=" + e.home}, nil, e.home + "/.aws"},
		{"HOME with trailing slash", []string{"HOME=" + e.home + "/"}, nil, e.home + "/.aws"},
		{"first HOME wins", []string{"HOME=" + e.home, "HOME=" + other}, nil, e.home + "/.aws"},
		{"relative HOME falls back to passwd", []string{"HOME=rel"}, func() (string, error) { return other, nil }, other + "/.aws"},
		{"empty HOME falls back to passwd", []string{"HOME="}, func() (string, error) { return other, nil }, other + "/.aws"},
		{"unset HOME falls back to passwd", nil, func() (string, error) { return other, nil }, other + "/.aws"},
		{"no home at all", nil, func() (string, error) { return "", errors.New("user: unknown userid 4242") },
			"--sandbox-policy: sensitive_paths[0].path: cannot expand ~: $HOME is unset, empty or relative and the password database gave no home: user: unknown userid 4242"},
		{"relative passwd home", nil, func() (string, error) { return "home", nil },
			`--sandbox-policy: sensitive_paths[0].path: cannot expand ~: $HOME is unset, empty or relative and the password database's home "home" is not absolute`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := e.input(pol)
			in.Environ, in.PasswdHome = tt.environ, tt.passwd
			if strings.HasPrefix(tt.want, "--") {
				if got := resolveError(t, in); got != tt.want {
					t.Fatalf("got  %s\nwant %s", got, tt.want)
				}
				return
			}
			plan := mustResolve(t, in)
			if got := plan.Filesystem.ReadDenied[0]; got.Path != tt.want || got.Given != "~/.aws" {
				t.Fatalf("got %+v", got)
			}
		})
	}
	t.Run("a HOME other than the password database's: both are denied", func(t *testing.T) {
		in := e.input(pol)
		in.Environ, in.PasswdHome = []string{"HOME=" + e.home}, func() (string, error) { return other, nil }
		var got []string
		for _, d := range mustResolve(t, in).Filesystem.ReadDenied {
			got = append(got, d.Path)
		}
		if !reflect.DeepEqual(got, []string{e.home + "/.aws", other + "/.aws"}) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("passwd is not consulted without ~", func(t *testing.T) {
		pol := wsPolicy(e.ws)
		pol.SensitivePaths = &[]SensitivePath{{Path: "/x", BlockRead: true}}
		in := e.input(pol)
		in.Environ = nil
		in.PasswdHome = func() (string, error) { t.Fatal("PasswdHome called"); return "", nil }
		mustResolve(t, in)
	})
}

func TestResolveProtectedMetadata(t *testing.T) {
	e := newTestEnv(t)
	main := filepath.Join(e.dir, "main")
	commonGit := filepath.Join(main, ".git")
	wtGit := filepath.Join(commonGit, "worktrees", "wt")
	mkdirs(t, wtGit, filepath.Join(main, ".vtcode"))
	writeFile(t, filepath.Join(wtGit, "commondir"), "../..\n")
	// The workspace is a worktree: .git is a file naming its git dir
	// relatively; the linked git dir names the common dir.
	rel, err := filepath.Rel(e.ws, wtGit)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.ws, ".git"), "gitdir: "+rel+"\n")

	plan := mustResolve(t, e.input(wsPolicy(e.ws, main)))
	want := []DeniedPath{
		{Path: e.ws + "/.git", Source: "protected_metadata", Exists: true},
		{Path: wtGit, Source: "protected_metadata (gitdir of " + e.ws + "/.git)", Given: rel, Exists: true},
		{Path: commonGit, Source: "protected_metadata (commondir of " + wtGit + ")", Given: "../..", Exists: true},
		{Path: e.ws + "/.vtcode", Source: "protected_metadata"},
		{Path: e.ws + "/.codex", Source: "protected_metadata"},
		{Path: e.ws + "/.agents", Source: "protected_metadata"},
		// main/.git is the common dir, already listed.
		{Path: main + "/.vtcode", Source: "protected_metadata", Exists: true},
		{Path: main + "/.codex", Source: "protected_metadata"},
		{Path: main + "/.agents", Source: "protected_metadata"},
	}
	if !reflect.DeepEqual(plan.Filesystem.WriteDenied, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", plan.Filesystem.WriteDenied, want)
	}

	t.Run("absolute gitdir, no commondir, CRLF", func(t *testing.T) {
		e := newTestEnv(t)
		sub := filepath.Join(e.dir, "modules", "sub")
		mkdirs(t, sub)
		writeFile(t, filepath.Join(e.ws, ".git"), "gitdir: "+sub+"\r\n")
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		if got := plan.Filesystem.WriteDenied[1]; got != (DeniedPath{Path: sub, Source: "protected_metadata (gitdir of " + e.ws + "/.git)", Exists: true}) {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("missing gitdir is denied anyway", func(t *testing.T) {
		e := newTestEnv(t)
		writeFile(t, filepath.Join(e.ws, ".git"), "gitdir: ../gone")
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		if got := plan.Filesystem.WriteDenied[1]; got.Path != e.dir+"/gone" || got.Exists {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("not a gitdir file", func(t *testing.T) {
		e := newTestEnv(t)
		writeFile(t, filepath.Join(e.ws, ".git"), "something else")
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		if len(plan.Filesystem.WriteDenied) != 4 {
			t.Fatalf("got %+v", plan.Filesystem.WriteDenied)
		}
	})
	t.Run("symlinked .git: target and link", func(t *testing.T) {
		e := newTestEnv(t)
		elsewhere := filepath.Join(e.dir, "elsewhere.git")
		mkdirs(t, elsewhere)
		symlink(t, elsewhere, filepath.Join(e.ws, ".git"))
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		got := plan.Filesystem.WriteDenied[:2]
		want := []DeniedPath{
			{Path: elsewhere, Source: "protected_metadata", Given: e.ws + "/.git", Exists: true},
			{Path: e.ws + "/.git", Source: "protected_metadata (the symlink itself)", Exists: true},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("a FIFO named .git is not read", func(t *testing.T) {
		e := newTestEnv(t)
		if err := mkfifo(filepath.Join(e.ws, ".git")); err != nil {
			t.Skip(err)
		}
		plan := mustResolve(t, e.input(wsPolicy(e.ws)))
		if len(plan.Filesystem.WriteDenied) != 4 {
			t.Fatalf("got %+v", plan.Filesystem.WriteDenied)
		}
	})
	t.Run("every writable root", func(t *testing.T) {
		e := newTestEnv(t)
		other := filepath.Join(e.dir, "other")
		mkdirs(t, other)
		plan := mustResolve(t, e.input(wsPolicy(e.ws, other)))
		if len(plan.Filesystem.WriteDenied) != 8 || plan.Filesystem.WriteDenied[4].Path != other+"/.git" {
			t.Fatalf("got %+v", plan.Filesystem.WriteDenied)
		}
	})
}

func TestReadSmallRegularFile(t *testing.T) {
	d := realDir(t)
	writeFile(t, d+"/small", "gitdir: x")
	writeFile(t, d+"/big", strings.Repeat("x", maxGitFile+1))
	symlink(t, d+"/small", d+"/link")
	if s, ok := readSmallRegularFile(d + "/small"); !ok || s != "gitdir: x" {
		t.Errorf("small: %q %v", s, ok)
	}
	for _, p := range []string{d + "/big", d + "/link", d, d + "/missing"} {
		if _, ok := readSmallRegularFile(p); ok {
			t.Errorf("%s was read", p)
		}
	}
}

// TestWritableRootInsideGitRefused: a root (or the cwd) in a .git directory
// would make hooks writable whatever <root>/.git protection says.
func TestWritableRootInsideGitRefused(t *testing.T) {
	e := newTestEnv(t)
	hooks := filepath.Join(e.ws, ".git", "hooks")
	mkdirs(t, hooks)
	for _, root := range []string{filepath.Join(e.ws, ".git"), hooks} {
		got := resolveError(t, e.input(wsPolicy(root)))
		if !strings.Contains(got, "writable_roots[0].root") || !strings.Contains(got, "inside a .git directory") {
			t.Errorf("%s: %s", root, got)
		}
	}
	in := e.input(wsPolicy(e.ws))
	in.PolicyCwd = hooks
	if got := resolveError(t, in); !strings.HasPrefix(got, "--sandbox-policy-cwd: ") || !strings.Contains(got, "inside a .git directory") {
		t.Errorf("cwd: %s", got)
	}
	// A directory merely named like one is not a .git directory.
	other := filepath.Join(e.ws, "x.git")
	mkdirs(t, other)
	mustResolve(t, e.input(wsPolicy(other)))
}
