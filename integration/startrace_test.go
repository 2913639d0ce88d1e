package integration

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStartupNeverFollowsASwappedRoot: a writable root nested in another
// root that a program of another run can rename (VT Code's MCP server over
// [ws] beside exec runs over [ws, ws/sub]) is swapped, again and again, with
// a symbolic link to the user's HOME while runs start over it. No run may
// write through it into HOME: each either mounts the root the decision
// saw, or refuses (exit 125, naming the path). The swapping is done here,
// outside any sandbox (what another run's program does to its own
// workspace), paced so that many decisions see the directory and their
// start-up the link. Root and nobody, both filesystem modes, cold and warm.
func TestStartupNeverFollowsASwappedRoot(t *testing.T) {
	users := isoAnyUser(t)
	starts := 40
	if testing.Short() {
		starts = 15
	}
	for _, u := range users {
		for _, mode := range fsModes {
			for _, warm := range []string{"off", "on"} {
				t.Run(u.name+"/"+mode+"/warm-"+warm, func(t *testing.T) {
					w := isoWorkspace(t, u)
					sub := filepath.Join(w.root, "sub")
					link := filepath.Join(w.root, "sublink")
					mustMkdir(t, sub)
					victim := filepath.Join(w.home, ".bashrc")
					write(t, victim, "original\n")
					if err := os.Symlink(w.home, link); err != nil {
						t.Fatal(err)
					}
					if u.cred != nil {
						for _, p := range []string{sub, link, victim} {
							_ = os.Lchown(p, int(u.cred.Uid), int(u.cred.Gid))
						}
					}
					var stop atomic.Bool
					done := make(chan int)
					go func() {
						swaps := 0
						for !stop.Load() {
							if unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
								swaps++
							}
							time.Sleep(time.Duration(200+swaps%7*150) * time.Microsecond)
						}
						done <- swaps
					}()
					pol := wsPolicy(t, w.root, sub)
					args := []string{"--sandbox-policy-cwd", sub, "--sandbox-policy", pol}
					args = append(append(args, fsOpts(t, mode)...), "--", "/bin/sh", "-c", `echo pwned > "$0/.bashrc"`, sub)
					env := isoEnv(w)
					if warm == "off" {
						env = append(env, "SANDBOX_EXECUTABLE_WARM=off")
					}
					var ran, refused int
					for i := 0; i < starts; i++ {
						r := runOnce(t, runOpts{env: env, dir: w.root, cred: u.cred}, args...)
						switch {
						case r.code == 0:
							ran++
						case r.code == 125 || r.code == 2:
							refused++
						}
						if b, _ := os.ReadFile(victim); string(b) != "original\n" {
							stop.Store(true)
							<-done
							t.Fatalf("start %d wrote into HOME through the swapped root: .bashrc is %q now (%v)", i, b, r)
						}
						if r.code != 0 && r.code != 2 && !strings.Contains(r.stderr, sub) && !strings.Contains(r.stderr, "symbolic link") {
							t.Logf("start %d: %v", i, r)
						}
					}
					stop.Store(true)
					swaps := <-done
					t.Logf("%d starts: %d ran, %d refused or failed to write; %d swaps", starts, ran, refused, swaps)
				})
			}
		}
	}
}

// TestHomeInsideTheWorkspace: with HOME inside a writable root and none of
// the secret directories there yet (~/.config/vtcode/auth beneath the
// denied ~/.config/vtcode, and so on), every run starts, cold and warm: the
// directories on the way to a placeholder that does not exist are no
// reason to refuse. The secrets' places stay denied.
func TestHomeInsideTheWorkspace(t *testing.T) {
	for _, warm := range []string{"off", "on"} {
		t.Run("warm-"+warm, func(t *testing.T) {
			w := newWorkspace(t)
			w.home = filepath.Join(w.root, "home")
			mustMkdir(t, w.home)
			pol := wsPolicy(t, w.root)
			opts := []string{"SANDBOX_EXECUTABLE_WARM=" + warm}
			for i := 0; i < 2; i++ { // the second run warm when it may be
				r := run(t, runOpts{env: append(w.env(), opts...), dir: w.root}, "--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--",
					"/bin/sh", "-c", `mkdir -p "$HOME/.config/gh" && echo token > "$HOME/.config/gh/hosts.yml"; echo ran`)
				if r.code != 0 || !strings.Contains(r.stdout, "ran") {
					t.Fatalf("run %d: %v", i, r)
				}
				if _, err := os.Stat(filepath.Join(w.home, ".config", "gh", "hosts.yml")); err == nil {
					t.Fatalf("run %d wrote ~/.config/gh/hosts.yml", i)
				}
			}
		})
	}
}
