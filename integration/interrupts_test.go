package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSignalsToTheHelperChangeNoAnswer: the helper's threads take signals at
// any moment (the Go runtime preempts a goroutine with SIGURG; a signal
// sent to the helper goes to whichever thread does not block it), and none
// changes what a mediated call returns. With every thread of the helper
// sent SIGURG over and over, each of 400 files made in .git (the
// supervisor makes them, with --allow-git-commit, and hands the descriptor
// over) gives a new descriptor that writes that file, and each of 200
// connects to a socket in the workspace (the supervisor makes them)
// connects. Before SendFD answered apart from adding the descriptor, an
// interrupted hand-over made open return 0, the program's standard input:
// git wrote its index there ("write error: Bad file descriptor"). Exact
// and Landlock-only mode, root and nobody; with -short (the emulated
// guests, there for their kernels' seccomp) root in exact mode.
func TestSignalsToTheHelperChangeNoAnswer(t *testing.T) {
	users, modes := isoAnyUser(t), fsModes
	opens, connects, every := 400, 200, 50*time.Microsecond
	if testing.Short() {
		users, modes = users[:1], modes[:1]
		opens, connects, every = 100, 50, time.Millisecond
	}
	for _, u := range users {
		for _, mode := range modes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				sock := filepath.Join(w.root, "s.sock")
				hostServer(t, nil, "unixserve", sock)
				if err := os.Chmod(sock, 0o777); err != nil {
					t.Fatal(err)
				}
				args := append(append([]string{"--allow-git-commit"}, fsOpts(t, mode)...), "--no-project-files")
				if u.cred != nil {
					args = append(args, "--memory", "unlimited", "--pids", "unlimited", "--cpu", "unlimited")
				}
				script := probe + " opens .git " + strconv.Itoa(opens) + " && " + probe + " unixconnectloop " + sock + " " + strconv.Itoa(connects)
				var sent atomic.Int64
				r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred, whileRunning: signalThreads(every, &sent)},
					append(args, "--", "/bin/sh", "-c", script)...)
				if r.code != 0 || !strings.HasPrefix(r.stdout, "ok\nok ") {
					t.Fatalf("under %d signals: %v", sent.Load(), r)
				}
				if sent.Load() == 0 {
					t.Fatal("no signal reached the helper")
				}
			})
		}
	}
}

// signalThreads returns a runOpts.whileRunning that sends SIGURG to every
// thread of the helper, again after each pause, until it has exited,
// counting the signals sent. The helper is reaped only once that stopped,
// so no signal goes to another process under a reused pid.
func signalThreads(pause time.Duration, sent *atomic.Int64) func(pid int) func() {
	return func(pid int) func() {
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return func() {}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer unix.Close(pidfd)
			task := "/proc/" + strconv.Itoa(pid) + "/task"
			for {
				exited := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
				if n, _ := unix.Poll(exited, 0); n > 0 {
					return
				}
				ents, _ := os.ReadDir(task)
				for _, e := range ents {
					if tid, err := strconv.Atoi(e.Name()); err == nil && unix.Tgkill(pid, tid, unix.SIGURG) == nil {
						sent.Add(1)
					}
				}
				time.Sleep(pause)
			}
		}()
		return func() { <-done }
	}
}
