package mountns

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
	"sandbox-executable/runstate"
)

// regFixture is a private registry and a workspace whose protected names
// do not exist; view builds the exact view a run of the workspace decides.
func regFixture(t *testing.T, names ...string) (ws string, view func() *View) {
	t.Helper()
	runstate.Base = t.TempDir()
	t.Cleanup(func() { runstate.Base = "" })
	ws = t.TempDir()
	p := &policy.Plan{}
	p.Filesystem.WritableRoots = []policy.WritablePath{{Path: ws}}
	for _, n := range names {
		p.Filesystem.WriteDenied = append(p.Filesystem.WriteDenied, policy.DeniedPath{Path: filepath.Join(ws, n)})
	}
	return ws, func() *View {
		t.Helper()
		v, err := Build(p, Options{Privileged: true})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func claim(t *testing.T, v *View) (*View, *Claims) {
	t.Helper()
	w, c, err := Claim(v)
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestPlaceholdersAreSharedAndRemovedByTheLastUser(t *testing.T) {
	ws, view := regFixture(t, ".codex", ".git")
	ph, real := filepath.Join(ws, ".codex"), filepath.Join(ws, ".git")
	mk(t, ws, ".git/HEAD")

	a, ca := claim(t, view())
	if !slices.Equal(a.Placeholders, []string{ph}) || !exists(ph) {
		t.Fatalf("placeholders %v; %s made: %v", a.Placeholders, ph, exists(ph))
	}
	// A second run decides with the first one's placeholder in place: it
	// is a placeholder to it too, not a directory of the user's.
	b, cb := claim(t, view())
	if !slices.Equal(b.Placeholders, []string{ph}) {
		t.Errorf("the second run's placeholders %v", b.Placeholders)
	}
	ca.Release()
	if !exists(ph) {
		t.Fatalf("placeholder removed while another run still claims it")
	}
	cb.Release()
	if exists(ph) {
		t.Errorf("placeholder left behind after the last user")
	}
	if !exists(filepath.Join(real, "HEAD")) {
		t.Errorf("a real .git was removed")
	}
}

// TestPlaceholderTheUserTookOverStays: a placeholder written into from
// outside, or made again by the user after it was removed, is the user's.
func TestPlaceholderTheUserTookOverStays(t *testing.T) {
	ws, view := regFixture(t, ".codex", ".git")
	git, codex := filepath.Join(ws, ".git"), filepath.Join(ws, ".codex")
	_, c := claim(t, view())
	// git init outside the sandbox, into the placeholder.
	mk(t, ws, ".git/HEAD")
	// An empty directory that is not the one recorded: removed and made
	// again (it may even get the same inode number).
	if err := os.Remove(codex); err != nil {
		t.Fatal(err)
	}
	mk(t, ws, ".codex/")
	c.Release()
	if !exists(filepath.Join(git, "HEAD")) || !exists(codex) {
		t.Fatalf("the user's directories were removed")
	}
	// Their records are gone: a later run takes them for the user's.
	w, c2 := claim(t, view())
	if len(w.Placeholders) != 0 {
		t.Errorf("the user's directories taken for placeholders: %v", w.Placeholders)
	}
	c2.Release()
	if !exists(codex) {
		t.Errorf("the user's empty directory was removed")
	}
}

// TestNoUserDirectoryAfterRemovalIsTakenForOne: the user's own empty
// directory, made after the last run removed its placeholder, stays.
func TestNoUserDirectoryAfterRemovalIsTakenForOne(t *testing.T) {
	ws, view := regFixture(t, ".vtcode")
	ph := filepath.Join(ws, ".vtcode")
	_, c := claim(t, view())
	c.Release()
	mk(t, ws, ".vtcode/")
	w, c2 := claim(t, view())
	c2.Release()
	if len(w.Placeholders) != 0 || !exists(ph) {
		t.Errorf("placeholders %v, the user's directory there: %v", w.Placeholders, exists(ph))
	}
}

// TestNestedPlaceholderIsRecognized: a placeholder made for a deeper
// denied path (ws/secrets for ws/secrets/token) is recognized by a second
// run, which covers it too instead of making ws/secrets/token inside it.
func TestNestedPlaceholderIsRecognized(t *testing.T) {
	ws, view := regFixture(t, "secrets/token")
	ph := filepath.Join(ws, "secrets")
	a, ca := claim(t, view())
	b, cb := claim(t, view())
	if !slices.Equal(a.Placeholders, []string{ph}) || !slices.Equal(b.Placeholders, []string{ph}) {
		t.Errorf("placeholders %v and %v, want %s", a.Placeholders, b.Placeholders, ph)
	}
	ca.Release()
	cb.Release()
	if exists(ph) {
		t.Errorf("placeholder left behind")
	}
}

// TestPlaceholdersUnderConcurrency: under any interleaving of claims and
// releases, a placeholder exists for as long as any run claims it, and
// nothing is left after the last.
func TestPlaceholdersUnderConcurrency(t *testing.T) {
	ws, view := regFixture(t, ".agents", ".git")
	phs := []string{filepath.Join(ws, ".agents"), filepath.Join(ws, ".git")}
	var wg sync.WaitGroup
	errs := make(chan string, 256)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				v, err := Build(view().plan, Options{Privileged: true})
				if err != nil {
					errs <- err.Error()
					return
				}
				w, c, err := Claim(v)
				if err != nil {
					errs <- err.Error()
					return
				}
				if len(w.Placeholders) != 2 {
					errs <- "placeholders " + strings.Join(w.Placeholders, " ")
				}
				for _, ph := range phs {
					var st unix.Stat_t
					if unix.Lstat(ph, &st) != nil {
						errs <- ph + " missing while claimed"
					}
				}
				c.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, ph := range phs {
		if exists(ph) {
			t.Errorf("%s left behind", ph)
		}
	}
}

// TestSweepRemovesWhatACrashLeft: placeholders whose run died without
// releasing (its locks closed with it) are removed by the sweep, unless
// another run claims them.
func TestSweepRemovesWhatACrashLeft(t *testing.T) {
	ws, view := regFixture(t, ".codex")
	ph := filepath.Join(ws, ".codex")
	_, crashed := claim(t, view())
	for _, g := range crashed.groups {
		g.lock.Close() // the supervisor and its guardian die
	}
	_, live := claim(t, view())
	SweepStale()
	if !exists(ph) {
		t.Fatalf("the sweep removed a claimed placeholder")
	}
	for _, g := range live.groups {
		g.lock.Close()
	}
	SweepStale()
	if exists(ph) {
		t.Errorf("the sweep left a placeholder nobody claims")
	}
}
