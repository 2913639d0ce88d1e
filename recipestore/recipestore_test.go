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

// TestStoreLookupRemove: a stored body is found under its key only, with
// the format the package documents; Remove makes it a miss, twice.
func TestStoreLookupRemove(t *testing.T) {
	dir := base(t)
	var key, other [KeySize]byte
	key[0], other[0] = 1, 2
	if _, err := Lookup(key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lookup before any store: %v, want a miss", err)
	}
	body := []byte("recipe")
	if err := Store(key, body); err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(key)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("lookup: %q, %v", got, err)
	}
	if _, err := Lookup(other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lookup of another key: %v, want a miss", err)
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
		if _, err := Lookup(key); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("lookup after Remove: %v, want a miss", err)
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
