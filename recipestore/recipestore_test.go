package recipestore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sandbox-executable/runstate"
)

func base(t *testing.T) string {
	t.Helper()
	runstate.Base = t.TempDir()
	t.Cleanup(func() { runstate.Base = "" })
	return runstate.Base
}

// TestStoreRemove: a stored body is written in the format the package
// documents (what C looks up: spawn's recipestore_test.go); Remove
// removes it, twice.
func TestStoreRemove(t *testing.T) {
	dir := base(t)
	var key [KeySize]byte
	key[0] = 1
	body := []byte("recipe")
	if err := Store(key, body); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "recipes", name(key)))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := runstate.LookupKey()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte("SERECIP1\x06\x00\x00\x00"), key[:]...)
	want = append(want, mac(secret, want, body)...)
	want = append(want, body...)
	if !bytes.Equal(raw, want) {
		t.Errorf("entry:\n%x\nwant\n%x", raw, want)
	}
	st, err := os.Stat(filepath.Join(dir, "recipes", name(key)))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v, %v; want 0600", st.Mode(), err)
	}
	for range 2 {
		if err := Remove(key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "recipes", name(key))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the entry after Remove: %v, want it gone", err)
		}
	}
}

// TestRemoveWithoutDirectory: nothing stored yet is nothing to remove.
func TestRemoveWithoutDirectory(t *testing.T) {
	base(t)
	if err := Remove([KeySize]byte{}); err != nil {
		t.Fatal(err)
	}
}
