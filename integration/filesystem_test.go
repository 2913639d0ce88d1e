package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// denied reports whether a probe verdict is a refusal a sandbox may give for
// a write outside the roots: Landlock answers EACCES (EXDEV for a rename or
// link it refuses to reparent), a read-only mount EROFS, and mknod EPERM.
// secretDenied reports whether a probe's verdict is a read the sandbox
// refused: ENOENT beneath a masked directory (an empty tmpfs), EACCES from
// a mask's mode or from Landlock, EPERM.
func secretDenied(v string) bool {
	return v == "ENOENT" || v == "EACCES" || v == "EPERM"
}

func denied(v string) bool {
	switch v {
	case "EACCES", "EROFS", "EXDEV", "EPERM":
		return true
	}
	return false
}

// TestWriteBoundary: in both filesystem modes, every kind of write inside a
// root works and the same write outside fails, leaving the outside file as
// it was.
func TestWriteBoundary(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			pol := wsPolicy(t, w.root)
			opts := fsOpts(t, mode)
			// Landlock-only mode narrows the root's top level (a protected
			// .git lies there): work in a subdirectory, as its users must.
			in := w.root
			if mode == "landlock" {
				in = filepath.Join(w.root, "src")
			}
			victim := filepath.Join(w.out, "victim")
			sb := func(argv ...string) string {
				t.Helper()
				r := w.sandbox(t, pol, opts, append([]string{probe}, argv...)...)
				if r.stderr != "" && r.code == 0 && !strings.HasPrefix(r.stderr, "sandbox-executable: degraded") {
					t.Errorf("%v: unexpected stderr %q", argv, r.stderr)
				}
				return probeResult(r)
			}
			mustOK := func(argv ...string) {
				t.Helper()
				if v := sb(argv...); v != "ok" {
					t.Errorf("inside the root %v: got %s, want ok", argv, v)
				}
			}
			mustDeny := func(argv ...string) {
				t.Helper()
				if v := sb(argv...); !denied(v) {
					t.Errorf("outside the root %v: got %s, want a permission error", argv, v)
				}
			}

			// Inside.
			mustOK("create", filepath.Join(in, "new"))
			mustOK("append", filepath.Join(in, "new"))
			mustOK("write", filepath.Join(in, "new"), "content")
			mustOK("truncate", filepath.Join(in, "new"))
			mustOK("rename", filepath.Join(in, "new"), filepath.Join(in, "renamed"))
			mustOK("mkdir", filepath.Join(in, "dir"))
			mustOK("rename", filepath.Join(in, "renamed"), filepath.Join(in, "dir", "moved"))
			mustOK("link", filepath.Join(in, "dir", "moved"), filepath.Join(in, "hard"))
			mustOK("symlink", "dir/moved", filepath.Join(in, "sym"))
			mustOK("chmod", filepath.Join(in, "hard"))
			mustOK("unlink", filepath.Join(in, "hard"))
			mustOK("mkfifo", filepath.Join(in, "fifo"))
			mustOK("write", "/dev/null")

			// Outside.
			mustDeny("create", filepath.Join(w.out, "new"))
			mustDeny("append", victim)
			mustDeny("write", victim, "overwritten")
			mustDeny("otrunc", victim)
			if truncateStopped(t, mode) {
				mustDeny("truncate", victim)
			}
			mustDeny("rename", filepath.Join(in, "dir", "moved"), filepath.Join(w.out, "moved-out"))
			mustDeny("rename", victim, filepath.Join(in, "stolen"))
			mustDeny("link", victim, filepath.Join(in, "hardlink-to-outside"))
			mustDeny("mkdir", filepath.Join(w.out, "d"))
			mustDeny("unlink", victim)
			// A device node in a root would be a door to the device.
			mustDeny("mknod", filepath.Join(in, "null"))
			// A symlink inside the root that points outside gives no write
			// access outside: Landlock and the mounts check the target.
			mustOK("symlink", victim, filepath.Join(in, "to-victim"))
			mustDeny("write", filepath.Join(in, "to-victim"), "through the link")
			if mode == "exact" {
				// Metadata: only the read-only view stops it.
				mustDeny("chmod", victim)
			}

			if got := readFile(t, victim); got != "original\n" {
				t.Errorf("outside file changed: %q", got)
			}
			if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("outside file mode changed: %v %v", st.Mode(), err)
			}
			for _, n := range []string{"new", "d", "moved-out"} {
				if _, err := os.Lstat(filepath.Join(w.out, n)); err == nil {
					t.Errorf("%s was created outside the root", n)
				}
			}
		})
	}
}

// TestReadOnlyPolicyWritesNothing: read_only allows writing /dev/null only.
func TestReadOnlyPolicyWritesNothing(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			opts := fsOpts(t, mode)
			for _, p := range []string{filepath.Join(w.root, "new"), filepath.Join(w.root, "src", "new"), filepath.Join(w.out, "new"), filepath.Join(os.TempDir(), "se-read-only-"+filepath.Base(w.root)+strconv.Itoa(os.Getpid()))} {
				if v := probeResult(w.sandbox(t, roPolicy, opts, probe, "create", p)); !denied(v) {
					t.Errorf("read_only create %s: got %s", p, v)
				}
			}
			if v := probeResult(w.sandbox(t, roPolicy, opts, probe, "write", "/dev/null")); v != "ok" {
				t.Errorf("read_only write /dev/null: %s", v)
			}
			r := w.sandbox(t, roPolicy, opts, probe, "read", filepath.Join(w.root, "src", "main.c"))
			if !strings.HasPrefix(r.stdout, "ok int main") {
				t.Errorf("read_only read: %v", r)
			}
		})
	}
}

// TestSecretsStayUnreadable: the default sensitive paths under a fake HOME
// cannot be read by any tool, in every mode; the rest of HOME can.
func TestSecretsStayUnreadable(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			opts := fsOpts(t, mode)
			for _, pol := range []string{roPolicy, wsPolicy(t, w.root)} {
				secrets := []string{filepath.Join(w.home, ".ssh", "id_rsa"), filepath.Join(w.home, ".aws", "credentials"), filepath.Join(w.home, ".netrc")}
				for _, s := range secrets {
					if r := w.sandbox(t, pol, opts, probe, "read", s); r.code != 1 || !secretDenied(probeResult(r)) {
						t.Errorf("%s: %v, want the probe refused (ENOENT behind a mask, EACCES)", s, r)
					}
				}
				script := `cat "$1"; cp "$1" "$2/copy" && cat "$2/copy"; tar cf - "$3" 2>/dev/null | tar tvf - 2>/dev/null | grep -c id_rsa; find "$3" -type f -exec cat {} + 2>/dev/null; python3 -c 'import sys; print(open(sys.argv[1]).read())' "$1" 2>/dev/null; true`
				scratch := filepath.Join(w.root, "src")
				r := w.sandbox(t, pol, opts, "/bin/sh", "-c", script, "sh", secrets[0], scratch, filepath.Join(w.home, ".ssh"))
				if strings.Contains(r.stdout, "PRIVATE KEY") {
					t.Errorf("a tool read the key: %v", r)
				}
				// The same tools do read a file that is not secret (cat,
				// find and python at least; cp needs a writable scratch).
				notes := filepath.Join(w.home, "docs", "notes.txt")
				r = w.sandbox(t, pol, opts, "/bin/sh", "-c", script, "sh", notes, scratch, filepath.Join(w.home, "docs"))
				if strings.Count(r.stdout, "readable notes") < 3 {
					t.Errorf("the tools cannot read a plain file either, so they show nothing: %v", r)
				}
				r = w.sandbox(t, pol, opts, "cat", filepath.Join(w.home, "docs", "notes.txt"))
				if r.stdout != "readable notes\n" {
					t.Errorf("the rest of HOME is not readable: %v", r)
				}
				// Through a symlink the secret stays denied.
				// The link must exist (ENOENT counts as denied), and a link of
				// the same kind to a plain file must read (so a refusal is the
				// secret's, not the link's).
				link, plain := filepath.Join(w.out, "key-link"), filepath.Join(w.out, "notes-link")
				for l, target := range map[string]string{link: secrets[0], plain: notes} {
					if err := os.Remove(l); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					if err := os.Symlink(target, l); err != nil {
						t.Fatal(err)
					}
				}
				if r := w.sandbox(t, pol, opts, probe, "read", plain); !strings.HasPrefix(r.stdout, "ok readable notes") {
					t.Errorf("a plain file through a symlink: %v", r)
				}
				if r := w.sandbox(t, pol, opts, probe, "read", link); r.code != 1 || !secretDenied(probeResult(r)) {
					t.Errorf("secret through a symlink: %v", r)
				}
			}
		})
	}
}

// TestExcludeFlagsDoNotWiden: exclude_slash_tmp and exclude_tmpdir_env_var
// false (serde's default, and what VT Code sends for read_only commands
// granted extra roots) make neither /tmp nor $TMPDIR writable.
func TestExcludeFlagsDoNotWiden(t *testing.T) {
	w := newWorkspace(t)
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"exclude_slash_tmp": false, "exclude_tmpdir_env_var": false})
	slashTmp := filepath.Join("/tmp", "sandbox-executable-test-"+strconv.Itoa(os.Getpid()))
	t.Cleanup(func() { os.Remove(slashTmp) })
	for _, mode := range fsModes {
		args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, fsOpts(t, mode)...)
		sb := func(argv ...string) result {
			return run(t, runOpts{env: append(w.env(), "TMPDIR="+w.out), dir: w.root}, append(append(args, "--"), argv...)...)
		}
		// (In src: Landlock-only mode narrows the root's top level.)
		if r := sb(probe, "create", filepath.Join(w.root, "src", "inside-"+mode)); probeResult(r) != "ok" {
			t.Fatalf("%s: write inside the root: %v", mode, r)
		}
		for _, target := range []string{filepath.Join(w.out, "via-tmpdir-"+mode), slashTmp} {
			if r := sb(probe, "create", target); !denied(probeResult(r)) {
				t.Errorf("%s: wrote %s: %v", mode, target, r)
			}
		}
	}
}
