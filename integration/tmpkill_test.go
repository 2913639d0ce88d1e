package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledRunsTempDirGoes: nothing of a run killed with SIGKILL stays in
// the helper's TMPDIR (issue 26, item 7b). Where the run has no mount
// namespace (here: a container's seccomp profile, Landlock-only mode,
// degraded) its private TMPDIR is a directory on the host the program
// writes into; after kill -9 of the helper the guardian removes it with
// everything in it, a read-only tree as Go's module cache leaves one
// included, and never follows a link out of it (the file the link names
// stays). As root and as an unprivileged user; whether the guardian is
// done is polled for, generously. (Its SIGKILL reaches the helper itself:
// unshare(1) and the launcher exec it.)
func TestKilledRunsTempDirGoes(t *testing.T) {
	isoNeedRoot(t)
	needLandlock(t)
	isoNeedTools(t, "sh", "sleep", "chmod", "ln")
	// Whose state directory is the test's alone: a sweep of another
	// run's (which removes what it finds stale) cannot do the guardian's
	// work here. Root's is bound over /run/sandbox-executable in a mount
	// namespace of the test's; the other user is one of the test's own.
	rootState := t.TempDir()
	if err := os.Chmod(rootState, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sandbox-executable", 0o700); err != nil {
		t.Fatal(err)
	}
	other := 64000 + os.Getpid()%1000
	t.Cleanup(func() { os.RemoveAll("/tmp/sandbox-executable-" + strconv.Itoa(other)) })
	for _, u := range []isoUser{isoRoot, {name: "user", cred: &syscall.Credential{Uid: uint32(other), Gid: uint32(other)}}} {
		t.Run(u.name, func(t *testing.T) {
			uid := 0
			if u.cred != nil {
				uid = int(u.cred.Uid)
			}
			w := isoWorkspace(t, u)
			// A TMPDIR of the test's own for the helper: its runs' temp
			// dirs are made there, and nothing else is.
			tmpRoot := filepath.Join(w.out, "tmp")
			mustMkdir(t, tmpRoot)
			if err := os.Chmod(tmpRoot, 0o1777); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(w.out, "victim")
			via, env := ctrVia(t, ctrCond{seccomp: true}, uid)
			if uid == 0 {
				via = append([]string{"unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
					`mount --bind "$0" /run/sandbox-executable && exec "$@"`, rootState}, via...)
			}
			script := `mkdir -p "$TMPDIR/mod/pkg@v1/sub" && echo data > "$TMPDIR/mod/pkg@v1/sub/f.go" && echo data > "$TMPDIR/top" &&
				chmod -R a-w "$TMPDIR/mod" && ln -s "$0" "$TMPDIR/link" &&
				echo "$TMPDIR" > src/tmpdir.new && mv src/tmpdir.new src/tmpdir && exec sleep 600`
			args := append(isoArgs(t, w, "landlock", "--allow-degraded"), "/bin/sh", "-c", script, victim)
			out := filepath.Join(t.TempDir(), "output")
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(via[0], append(append(via[1:], binary), args...)...)
			cmd.Env = append(append([]string{"LANG=C", "TMPDIR=" + tmpRoot}, isoEnv(w)...), env...)
			cmd.Dir = w.root
			cmd.Stdout, cmd.Stderr = f, f
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			started.Store(cmd.Process.Pid, true)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			defer func() { _ = cmd.Process.Kill(); <-done }()
			ready := filepath.Join(w.root, "src", "tmpdir")
			waitFile(t, ready, cmd, out)
			tmp := strings.TrimSpace(readFile(t, ready))
			if filepath.Dir(tmp) != tmpRoot {
				t.Fatalf("the private TMPDIR is %s, not in the helper's TMPDIR %s", tmp, tmpRoot)
			}
			if _, err := os.Stat(filepath.Join(tmp, "mod", "pkg@v1", "sub", "f.go")); err != nil {
				t.Fatalf("without a mount namespace the program's temp files are on the host: %v", err)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			if !isoPoll(30*time.Second, func() bool { _, err := os.Lstat(tmp); return os.IsNotExist(err) }) {
				var left []string
				_ = filepath.Walk(tmp, func(p string, _ os.FileInfo, _ error) error { left = append(left, p); return nil })
				t.Errorf("30 s after kill -9 of the helper its private TMPDIR is still there, with %q", left)
			}
			if got := readFile(t, victim); got != "original\n" {
				t.Errorf("the file a link in the temp dir named: %q", got)
			}
			if ents, _ := os.ReadDir(tmpRoot); len(ents) != 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("the helper's TMPDIR holds %v", names)
			}
		})
	}
}
