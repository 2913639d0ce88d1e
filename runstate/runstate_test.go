package runstate

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestLocationIgnoresTheEnvironment: where the state goes depends on the
// user alone; XDG_RUNTIME_DIR, TMPDIR, HOME and XDG_STATE_HOME are never
// looked at.
func TestLocationIgnoresTheEnvironment(t *testing.T) {
	for _, env := range [][4]string{{"", "", "", ""}, {"/run/user/4242", "/var/tmp", "/", "/tmp"}, {t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()}} {
		t.Setenv("XDG_RUNTIME_DIR", env[0])
		t.Setenv("TMPDIR", env[1])
		t.Setenv("HOME", env[2])
		t.Setenv("XDG_STATE_HOME", env[3])
		if p := where(0, true); p.Dir != "/run/sandbox-executable" || len(p.Later) != 0 {
			t.Errorf("root, env %q: %+v", env, p)
		}
		// No runtime directory of its own (none exists for this uid),
		// nor a line in /etc/passwd.
		const uid = 4242424
		if p := where(uid, true); p.Dir != "/tmp/sandbox-executable-"+strconv.Itoa(uid) || len(p.Later) != 0 {
			t.Errorf("user without a runtime directory, env %q: %+v", env, p)
		}
	}
	// A user whose /run/user/UID is private gets it, with /tmp as a place
	// that must also be protected.
	if st, err := os.Stat("/run/user/" + strconv.Itoa(os.Geteuid())); err == nil && st.Mode().Perm() == 0o700 && os.Geteuid() != 0 {
		uid := strconv.Itoa(os.Geteuid())
		if p := where(os.Geteuid(), true); p.Dir != "/run/user/"+uid+"/sandbox-executable" || len(p.Later) == 0 || p.Later[0] != "/tmp/sandbox-executable-"+uid {
			t.Errorf("user with a runtime directory: %+v", p)
		}
	}
}

func TestDirIsPrivate(t *testing.T) {
	Base = t.TempDir()
	t.Cleanup(func() { Base = "" })
	dir, err := Dir("bpf")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("%s: %v %v", dir, st.Mode(), err)
	}
	// Refused: a link, a directory others may enter, a file.
	if err := os.Symlink(t.TempDir(), filepath.Join(Base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(Base, "open"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(Base, "open"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(Base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for sub, want := range map[string]string{"link": "not a directory", "open": "mode 0755", "file": "not a directory"} {
		if _, err := Dir(sub); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", sub, err, want)
		}
	}
}

func TestParentMustNotLetOthersReplaceIt(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := ensure(filepath.Join(open, "state"), os.Geteuid()); err == nil || !strings.Contains(err.Error(), "not sticky") {
		t.Errorf("a world-writable parent without the sticky bit: %v", err)
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := ensure(filepath.Join(open, "state2"), os.Geteuid()); err != nil {
		t.Errorf("a sticky parent (/tmp): %v", err)
	}
}

func TestKey(t *testing.T) {
	Base = t.TempDir()
	t.Cleanup(func() { Base = "" })
	k1, err := Key()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := Key()
	if err != nil || !bytes.Equal(k1, k2) || len(k1) != KeySize || bytes.Equal(k1, make([]byte, KeySize)) {
		t.Fatalf("key not stable: %x %x %v", k1, k2, err)
	}
	path := filepath.Join(Base, keyName)
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st.Mode(), err)
	}
	// A key others could read, or of the wrong size, or a link, is
	// replaced by a new one.
	for _, spoil := range []func(){
		func() { os.Chmod(path, 0o644) },
		func() { os.WriteFile(path, []byte("short"), 0o600) },
		func() {
			os.Remove(path)
			os.Symlink("/dev/zero", path)
		},
	} {
		before, _ := os.ReadFile(path)
		spoil()
		k, err := Key()
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 || bytes.Equal(k, before) {
			t.Errorf("spoiled key kept: %v %v", st.Mode(), err)
		}
	}
	// Concurrent first runs agree on one key.
	Base = t.TempDir()
	var wg sync.WaitGroup
	keys := make([][]byte, 16)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], _ = Key()
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != KeySize || !bytes.Equal(k, keys[0]) {
			t.Fatalf("concurrent first runs made different keys")
		}
	}
	if ents, _ := os.ReadDir(Base); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

func TestProtected(t *testing.T) {
	Base = t.TempDir()
	t.Cleanup(func() { Base = "" })
	dirs, err := Protected()
	if err != nil || len(dirs) != 1 || dirs[0] != Base {
		t.Errorf("%v %v", dirs, err)
	}
}

// TestLookupMakesNothing: what --explain uses finds the directory and the
// key when they are there and makes neither when they are not.
func TestLookupMakesNothing(t *testing.T) {
	Base = filepath.Join(t.TempDir(), "state")
	t.Cleanup(func() { Base = "" })
	if _, err := Lookup("bpf"); err == nil {
		t.Errorf("Lookup found a missing directory")
	}
	if _, err := LookupKey(); err == nil {
		t.Errorf("LookupKey found a missing key")
	}
	if _, err := os.Lstat(Base); !os.IsNotExist(err) {
		t.Fatalf("a lookup made the state directory: %v", err)
	}
	if got := Locations(); len(got) != 1 || got[0] != Base {
		t.Errorf("Locations %v", got)
	}
	if err := os.Mkdir(Base, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := Key()
	if err != nil {
		t.Fatal(err)
	}
	if dir, err := Dir("bpf"); err != nil {
		t.Fatal(err)
	} else if got, err := Lookup("bpf"); err != nil || got != dir {
		t.Errorf("Lookup %q %v, want %q", got, err, dir)
	}
	if got, err := LookupKey(); err != nil || !bytes.Equal(got, key) {
		t.Errorf("LookupKey: %v", err)
	}
}
