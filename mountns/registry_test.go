package mountns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// registryFixture gives a fresh registry, a workspace and the group
// directory of the workspace's placeholders, as the runner lays it out.
func registryFixture(t *testing.T) (ws, group string) {
	t.Helper()
	runstate.Base = t.TempDir()
	t.Cleanup(func() { runstate.Base = "" })
	reg, err := runstate.Dir(registryDir)
	if err != nil {
		t.Fatal(err)
	}
	ws = t.TempDir()
	group = groupDir(reg, ws)
	if err := os.MkdirAll(group, 0o700); err != nil {
		t.Fatal(err)
	}
	return ws, group
}

// recordPlaceholder writes path's record as the runner does.
func recordPlaceholder(t *testing.T, group, path string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
	if err := os.Symlink(text, spawn.PlaceholderRecordPath(group, path)); err != nil {
		t.Fatal(err)
	}
}

// A run makes a placeholder and records it under the group's decide lock.
// A decision that looks in between must wait for the record, not take the
// directory for the user's: it would bind a directory its last run is
// about to remove, and fail at start-up with ESTALE.
func TestPeekWaitsForARunDeciding(t *testing.T) {
	ws, group := registryFixture(t)
	lock, err := os.OpenFile(filepath.Join(group, "decide"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ph := filepath.Join(ws, ".vtcode")
	if err := os.Mkdir(ph, 0o700); err != nil {
		t.Fatal(err)
	}
	answer := make(chan bool, 1)
	go func() { answer <- peekRegistered()(ph) }()
	select {
	case got := <-answer:
		t.Fatalf("the decision answered %v while a run was between making %s and recording it", got, ph)
	case <-time.After(200 * time.Millisecond):
	}
	recordPlaceholder(t, group, ph)
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if !<-answer {
		t.Errorf("%s, made and recorded by a run, was taken for the user's directory", ph)
	}
}

// A placeholder its last run removed (with its record) after the decision
// saw it is missing now: it counts as a placeholder, not the user's.
func TestPeekTakesARemovedPlaceholderAsMissing(t *testing.T) {
	ws, _ := registryFixture(t)
	ph := filepath.Join(ws, ".codex")
	if peekRegistered()(ph) != true {
		t.Errorf("%s, gone, was taken for the user's directory", ph)
	}
	user := filepath.Join(ws, ".agents")
	if err := os.Mkdir(user, 0o755); err != nil {
		t.Fatal(err)
	}
	fsdeps.Reset()
	if peekRegistered()(user) {
		t.Errorf("%s, the user's own and unrecorded, was taken for a placeholder", user)
	}
	// What the decision read of the user's directory must not change when
	// something writes into it (git, into .git): its ctime is neither
	// recorded nor, as here where it is recent, a taint.
	for _, d := range fsdeps.Deps() {
		if d.Path == user && d.Flags&fsdeps.FlagCtime != 0 {
			t.Errorf("the decision depends on the ctime of %s, the user's own directory: every write into it ends the warm path", user)
		}
	}
	for _, why := range fsdeps.Tainted() {
		if strings.Contains(why, user) {
			t.Errorf("the decision is tainted by the user's own directory: %s", why)
		}
	}
}

// A recorded placeholder is one; a directory at its name that does not
// match the record (made since by the user) is not.
func TestPeekMatchesTheRecord(t *testing.T) {
	ws, group := registryFixture(t)
	ph := filepath.Join(ws, ".git")
	if err := os.Mkdir(ph, 0o700); err != nil {
		t.Fatal(err)
	}
	recordPlaceholder(t, group, ph)
	if !peekRegistered()(ph) {
		t.Errorf("%s, recorded, was not taken for a placeholder", ph)
	}
	if err := os.Chmod(ph, 0o755); err != nil { // its ctime moves
		t.Fatal(err)
	}
	if peekRegistered()(ph) {
		t.Errorf("%s, changed since it was recorded, was taken for a placeholder", ph)
	}
}

// Runs come and go in one directory while a decision looks: the next run
// makes and records a placeholder under the decide lock, the last removes
// it and its record (the runner's own removal, through the stale sweep).
// The decision must read the record and the directory as one state: it
// reads under the decide lock, shared, and removals take it too. Before,
// a decision only waited for the lock, then read: the next run could make
// its placeholder between the two reads, or the rmdir could change the
// directory's ctime before its name went, and the decision took a
// placeholder for the user's directory (a bind the runs' end made stale:
// "setup: bind .codex: stale file handle").
func TestPeekReadsOneStateWhileRunsComeAndGo(t *testing.T) {
	ws, group := registryFixture(t)
	if err := os.Symlink(ws, filepath.Join(group, "dir")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock", "decide"} {
		if err := os.WriteFile(filepath.Join(group, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	decide, err := os.OpenFile(filepath.Join(group, "decide"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer decide.Close()
	reg := filepath.Dir(group)
	ph := filepath.Join(ws, ".codex")
	rec := spawn.PlaceholderRecordPath(group, ph)
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for made := 0; ; made++ {
			select {
			case <-stop:
				if made < 10 {
					done <- fmt.Errorf("only %d placeholders made and removed meanwhile", made)
				}
				done <- nil
				return
			default:
			}
			if err := unix.Flock(int(decide.Fd()), unix.LOCK_EX); err != nil {
				done <- err
				return
			}
			var st unix.Stat_t
			err := unix.Mkdir(ph, 0o700)
			if err == nil {
				err = unix.Lstat(ph, &st)
			}
			if err == nil {
				err = os.Symlink(fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec), rec)
			}
			unix.Flock(int(decide.Fd()), unix.LOCK_UN)
			if err != nil {
				done <- err
				return
			}
			spawn.SweepPlaceholders(reg)
			if _, err := os.Lstat(ph); err == nil {
				done <- fmt.Errorf("the sweep left %s", ph)
				return
			}
		}
	}()
	peek := peekRegistered()
	wrong := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && wrong == 0; {
		if !peek(ph) {
			wrong++
		}
		fsdeps.Reset()
	}
	close(stop)
	err = <-done
	if wrong > 0 {
		t.Fatalf("a placeholder that runs made and removed was taken for the user's directory")
	}
	if err != nil {
		t.Fatal(err)
	}
}
