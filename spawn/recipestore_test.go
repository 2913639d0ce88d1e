package spawn_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
	"sandbox-executable/recipestore"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// recipeBase makes a fresh state directory for runstate and the C lookup:
// a private one (t.TempDir's own is 0755, which the C lookup refuses).
func recipeBase(t *testing.T) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	runstate.Base = base
	spawn.SetRecipeBaseC(base)
	t.Cleanup(func() {
		runstate.Base = ""
		spawn.SetRecipeBaseC("")
	})
	return base
}

func randomKey(t *testing.T) (k [32]byte) {
	t.Helper()
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRecipeLookupRoundTrip: what Go stores, C finds, bodies of any size
// up to the cap; a body over it is refused.
func TestRecipeLookupRoundTrip(t *testing.T) {
	recipeBase(t)
	for _, n := range []int{0, 1, 63, 64, 1000, 1 << 20, recipestore.MaxBody} {
		key := randomKey(t)
		body := make([]byte, n)
		rand.Read(body)
		if err := recipestore.Store(key, body); err != nil {
			t.Fatal(err)
		}
		if got, ok := spawn.LookupRecipeC(key); !ok || !bytes.Equal(got, body) {
			t.Fatalf("C lookup of a %d-byte body: %t, %d bytes", n, ok, len(got))
		}
		if _, ok := spawn.LookupRecipeC(randomKey(t)); ok {
			t.Fatal("C lookup of a key never stored: a hit")
		}
	}
	if err := recipestore.Store(randomKey(t), make([]byte, recipestore.MaxBody+1)); err == nil {
		t.Error("a body over MaxBody was stored")
	}
}

// TestRecipeLookupRefusesTampering: every change to an entry, the key
// file or the directories that a sandboxed program (the same user) or
// another user could make is a miss.
func TestRecipeLookupRefusesTampering(t *testing.T) {
	otherUID := 4242421
	type env struct {
		base, recipes, entry, keyFile string
		key, other                    [32]byte
	}
	flip := func(off int) func(t *testing.T, e env) {
		return func(t *testing.T, e env) {
			b, err := os.ReadFile(e.entry)
			if err != nil {
				t.Fatal(err)
			}
			if off < 0 {
				off += len(b)
			}
			b[off] ^= 1
			if err := os.WriteFile(e.entry, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		change func(t *testing.T, e env)
		root   bool // needs root (chown)
		lookup func(e env) [32]byte
	}{
		{name: "magic", change: flip(0)},
		{name: "length", change: flip(8)},
		{name: "stored key", change: flip(12)},
		{name: "mac", change: flip(44)},
		{name: "mac's last byte", change: flip(75)},
		{name: "body's first byte", change: flip(76)},
		{name: "body's last byte", change: flip(-1)},
		{name: "truncated", change: func(t *testing.T, e env) { must(t, os.Truncate(e.entry, 100)) }},
		{name: "a byte appended", change: func(t *testing.T, e env) {
			f, err := os.OpenFile(e.entry, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = f.Write([]byte{0})
			must(t, err)
			must(t, f.Close())
		}},
		{name: "header only", change: func(t *testing.T, e env) { must(t, os.Truncate(e.entry, 76)) }},
		{name: "empty", change: func(t *testing.T, e env) { must(t, os.Truncate(e.entry, 0)) }},
		{name: "entry mode 0644", change: func(t *testing.T, e env) { must(t, os.Chmod(e.entry, 0o644)) }},
		{name: "entry mode 0604", change: func(t *testing.T, e env) { must(t, os.Chmod(e.entry, 0o604)) }},
		{name: "entry another user's", root: true, change: func(t *testing.T, e env) { must(t, os.Chown(e.entry, otherUID, -1)) }},
		{name: "entry a symbolic link to a good copy", change: func(t *testing.T, e env) {
			cp := filepath.Join(e.base, "copy")
			must(t, os.Rename(e.entry, cp))
			must(t, os.Symlink(cp, e.entry))
		}},
		{name: "entry a directory", change: func(t *testing.T, e env) {
			must(t, os.Remove(e.entry))
			must(t, os.Mkdir(e.entry, 0o700))
		}},
		{name: "entry a fifo", change: func(t *testing.T, e env) {
			must(t, os.Remove(e.entry))
			must(t, unix.Mkfifo(e.entry, 0o600))
		}},
		{name: "entry under another key's name", lookup: func(e env) [32]byte { return e.other }, change: func(t *testing.T, e env) {
			must(t, os.Link(e.entry, filepath.Join(e.recipes, hex.EncodeToString(e.other[:]))))
		}},
		{name: "removed", change: func(t *testing.T, e env) { must(t, recipestore.Remove(e.key)) }},
		{name: "another key file", change: func(t *testing.T, e env) {
			k := make([]byte, 32)
			rand.Read(k)
			must(t, os.WriteFile(e.keyFile, k, 0o600))
		}},
		{name: "key file a byte longer", change: func(t *testing.T, e env) {
			k, err := os.ReadFile(e.keyFile)
			must(t, err)
			must(t, os.WriteFile(e.keyFile, append(k, 0), 0o600))
		}},
		{name: "key file mode 0644", change: func(t *testing.T, e env) { must(t, os.Chmod(e.keyFile, 0o644)) }},
		{name: "key file another user's", root: true, change: func(t *testing.T, e env) { must(t, os.Chown(e.keyFile, otherUID, -1)) }},
		{name: "key file a symbolic link to it", change: func(t *testing.T, e env) {
			cp := filepath.Join(e.base, "key.copy")
			must(t, os.Rename(e.keyFile, cp))
			must(t, os.Symlink(cp, e.keyFile))
		}},
		{name: "key file gone", change: func(t *testing.T, e env) { must(t, os.Remove(e.keyFile)) }},
		{name: "recipes mode 0750", change: func(t *testing.T, e env) { must(t, os.Chmod(e.recipes, 0o750)) }},
		{name: "recipes mode 0701", change: func(t *testing.T, e env) { must(t, os.Chmod(e.recipes, 0o701)) }},
		{name: "recipes another user's", root: true, change: func(t *testing.T, e env) { must(t, os.Chown(e.recipes, otherUID, -1)) }},
		{name: "recipes a symbolic link to it", change: func(t *testing.T, e env) {
			must(t, os.Rename(e.recipes, e.recipes+".real"))
			must(t, os.Symlink(e.recipes+".real", e.recipes))
		}},
		{name: "state directory mode 0750", change: func(t *testing.T, e env) { must(t, os.Chmod(e.base, 0o750)) }},
		{name: "state directory mode 0707", change: func(t *testing.T, e env) { must(t, os.Chmod(e.base, 0o707)) }},
		{name: "state directory another user's", root: true, change: func(t *testing.T, e env) { must(t, os.Chown(e.base, otherUID, -1)) }},
		{name: "state directory's parent writable by others", change: func(t *testing.T, e env) { must(t, os.Chmod(filepath.Dir(e.base), 0o777)) }},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				testcap.Skipf(t, testcap.Root, "needs root to chown")
			}
			parent := t.TempDir()
			base := filepath.Join(parent, "state")
			must(t, os.Mkdir(base, 0o700))
			runstate.Base = base
			spawn.SetRecipeBaseC(base)
			t.Cleanup(func() { runstate.Base = ""; spawn.SetRecipeBaseC(""); os.Chmod(parent, 0o700) })
			e := env{base: base, recipes: filepath.Join(base, "recipes"), keyFile: filepath.Join(base, "key"), key: randomKey(t), other: randomKey(t)}
			e.entry = filepath.Join(e.recipes, hex.EncodeToString(e.key[:]))
			body := []byte(`{"recipe":"` + c.name + `"}`)
			must(t, recipestore.Store(e.key, body))
			if got, ok := spawn.LookupRecipeC(e.key); !ok || !bytes.Equal(got, body) {
				t.Fatalf("before the change: C lookup %t %q", ok, got)
			}
			c.change(t, e)
			key := e.key
			if c.lookup != nil {
				key = c.lookup(e)
			}
			if got, ok := spawn.LookupRecipeC(key); ok {
				t.Errorf("C lookup: a hit (%q)", got)
			}
		})
	}
}

// TestRecipeStoreIsBounded: up to MaxEntries every entry stays; the store
// that makes one more removes the oldest down to PrunedTo; stale temporary
// files go too, and fresh ones stay.
func TestRecipeStoreIsBounded(t *testing.T) {
	base := recipeBase(t)
	recipes := filepath.Join(base, "recipes")
	var keys [][32]byte
	for i := 0; i < recipestore.MaxEntries; i++ {
		k := randomKey(t)
		keys = append(keys, k)
		if err := recipestore.Store(k, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		// Distinct times, oldest first, whatever the clock's grain.
		mt := time.Unix(1_000_000+int64(i), 0)
		if err := os.Chtimes(filepath.Join(recipes, hex.EncodeToString(k[:])), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	stale, fresh := filepath.Join(recipes, ".tmp-stale"), filepath.Join(recipes, ".tmp-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	for _, k := range keys {
		if _, ok := spawn.LookupRecipeC(k); !ok {
			t.Fatalf("with %d entries, one stored was removed", recipestore.MaxEntries)
		}
	}
	last := randomKey(t)
	if err := recipestore.Store(last, []byte("last")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(recipes)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			n++
		}
	}
	if n != recipestore.PrunedTo {
		t.Errorf("%d entries, want %d", n, recipestore.PrunedTo)
	}
	for i, k := range append(keys, last) {
		_, ok := spawn.LookupRecipeC(k)
		if want := i > recipestore.MaxEntries-recipestore.PrunedTo; ok != want {
			t.Errorf("entry %d (stored %d from the last): found %t, want %t", i, len(keys)-i, ok, want)
		}
	}
	if names[".tmp-stale"] || !names[".tmp-fresh"] {
		t.Errorf("temporary files left: stale %t, fresh %t (want false, true)", names[".tmp-stale"], names[".tmp-fresh"])
	}
}

// TestRecipeStoreConcurrent: runs storing the same key at once all
// succeed, and what stays is one of them, whole.
func TestRecipeStoreConcurrent(t *testing.T) {
	recipeBase(t)
	key := randomKey(t)
	bodies := map[string]bool{}
	errs := make(chan error)
	for i := 0; i < 16; i++ {
		body := bytes.Repeat([]byte{byte('a' + i)}, 100_000+i)
		bodies[string(body)] = true
		go func() { errs <- recipestore.Store(key, body) }()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	got, ok := spawn.LookupRecipeC(key)
	if !ok || !bodies[string(got)] {
		t.Fatalf("after concurrent stores: %t, %d bytes", ok, len(got))
	}
	ents, _ := os.ReadDir(filepath.Join(runstate.Base, "recipes"))
	if len(ents) != 1 {
		t.Errorf("%d files in recipes, want the one entry", len(ents))
	}
}

// TestRecipeLookupLocations: without a base set, the C lookup finds the
// state directory where runstate puts it, for root and for another user
// with and without a private /run/user/UID, and with /tmp/sandbox-executable-UID
// taken by another user (then in the home directory /etc/passwd names, or
// nowhere without one), and refuses it when it or its parent fails
// runstate's checks. Each case runs in a child with its own mount namespace
// and fresh tmpfs on /run and /tmp (and its own /etc/passwd).
func TestRecipeLookupLocations(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: a mount namespace, and another user")
	}
	for _, c := range []string{"root", "user-tmp", "user-runtime", "user-squatted", "user-squatted-runtime", "user-squatted-homeless"} {
		t.Run(c, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRecipeLookupLocationsChild$", "-test.v")
			cmd.Env = append(os.Environ(), "SE_RECIPE_LOCATION="+c)
			cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
			out, err := cmd.CombinedOutput()
			if err != nil {
				if strings.Contains(string(out), "SKIP:") {
					testcap.Skipf(t, testcap.Namespaces, "%s", out)
				}
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(string(out), "--- PASS: TestRecipeLookupLocationsChild") {
				t.Fatalf("the child did not pass:\n%s", out)
			}
		})
	}
}

const locationUID = 4242423

// TestRecipeLookupLocationsChild is a case of TestRecipeLookupLocations.
func TestRecipeLookupLocationsChild(t *testing.T) {
	c := os.Getenv("SE_RECIPE_LOCATION")
	if c == "" {
		t.Skip("run by TestRecipeLookupLocations")
	}
	for _, m := range []struct{ dir, mode string }{{"/run", "0755"}, {"/tmp", "1777"}} {
		if err := unix.Mount("tmpfs", m.dir, "tmpfs", 0, "mode="+m.mode); err != nil {
			t.Skipf("SKIP: tmpfs on %s: %v", m.dir, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	uid := locationUID
	var base, parent string
	home := "/run/home"
	tmpPlace := fmt.Sprintf("/tmp/sandbox-executable-%d", uid)
	if strings.HasPrefix(c, "user-squatted") {
		// Another user makes the /tmp place first.
		must(os.Mkdir(tmpPlace, 0o700))
		must(os.Chown(tmpPlace, uid+1, uid+1))
		passwd := "root:x:0:0:root:/root:/bin/sh\n"
		if c != "user-squatted-homeless" {
			passwd += fmt.Sprintf("someone:x:%d:%d::%s:/bin/sh\n", uid, uid, home)
			must(os.Mkdir(home, 0o755))
			must(os.Chown(home, uid, uid))
		}
		must(os.WriteFile("/run/passwd", []byte(passwd), 0o644))
		must(unix.Mount("/run/passwd", "/etc/passwd", "", unix.MS_BIND, ""))
	}
	switch c {
	case "root":
		uid, base, parent = 0, "/run/sandbox-executable", "/run"
	case "user-tmp":
		base, parent = tmpPlace, "/tmp"
	case "user-runtime", "user-squatted-runtime":
		runtime := fmt.Sprintf("/run/user/%d", uid)
		must(os.Mkdir("/run/user", 0o755))
		must(os.Mkdir(runtime, 0o700))
		must(os.Chown(runtime, uid, uid))
		base, parent = runtime+"/sandbox-executable", runtime
	case "user-squatted":
		base, parent = home+"/.local/state/sandbox-executable", home+"/.local/state"
	}
	if uid != 0 {
		must(syscall.Setresgid(uid, uid, uid))
		must(syscall.Setresuid(uid, uid, uid))
	}
	key, body := randomKey(t), []byte("body for "+c)
	if c == "user-squatted-homeless" {
		// No place the user owns: refused, saying why.
		if err := recipestore.Store(key, body); err == nil || !strings.Contains(err.Error(), tmpPlace+" is another user's") {
			t.Fatalf("no place for the state: Store %v, want a refusal naming %s", err, tmpPlace)
		}
		if _, ok := spawn.LookupRecipeC(key); ok {
			t.Error("the C lookup found a state directory where there is none")
		}
		return
	}
	must(recipestore.Store(key, body))
	if strings.HasPrefix(c, "user-squatted") {
		if m := runstate.Moved(); !strings.Contains(m, tmpPlace+" is another user's (uid "+strconv.Itoa(uid+1)+")") {
			t.Errorf("runstate.Moved() = %q, want it to name %s and its owner", m, tmpPlace)
		}
		// The home place is protected wherever the state lies, and made
		// in advance, 0700 all the way down from the home directory.
		dirs, err := runstate.Protected()
		if err != nil || !slices.Contains(dirs, home+"/.local/state/sandbox-executable") || slices.Contains(dirs, tmpPlace) {
			t.Errorf("runstate.Protected() = %v, %v: want the home place, never the other user's", dirs, err)
		}
		for _, d := range []string{home + "/.local", home + "/.local/state", home + "/.local/state/sandbox-executable"} {
			if fi, err := os.Lstat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v, want a directory of mode 0700", d, fi, err)
			}
		}
	}
	entry := filepath.Join(base, "recipes", hex.EncodeToString(key[:]))
	if _, err := os.Lstat(entry); err != nil {
		t.Fatalf("the entry is not where runstate puts it: %v", err)
	}
	hit := func(what string, want bool) {
		t.Helper()
		got, ok := spawn.LookupRecipeC(key)
		if ok != want || (ok && !bytes.Equal(got, body)) {
			t.Errorf("%s: C lookup %t (%q), want %t", what, ok, got, want)
		}
	}
	hit("as stored", true)
	for _, d := range []string{base, filepath.Join(base, "recipes")} {
		for _, mode := range []os.FileMode{0o750, 0o705, 0o711} {
			must(os.Chmod(d, mode))
			hit(fmt.Sprintf("%s mode %04o", d, mode), false)
		}
		must(os.Chmod(d, 0o700))
		hit(d+" mode 0700 again", true)
	}
	switch c {
	case "root":
		must(os.Chmod(parent, 0o777))
		hit("/run writable by all, not sticky", false)
		must(unix.Chmod(parent, 0o1777))
		hit("/run writable by all, sticky", true)
	case "user-runtime":
		// No longer private: the user's state is looked for in /tmp,
		// where there is none.
		must(os.Chmod(parent, 0o750))
		hit("/run/user/UID mode 0750", false)
		must(os.Chmod(parent, 0o700))
		hit("/run/user/UID mode 0700 again", true)
	}
}
