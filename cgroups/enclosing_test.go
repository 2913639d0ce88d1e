package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEnclosingLimits: the tightest memory.max and pids.max from this
// process's cgroup up to the mount's root; memory only where swap cannot
// carry it past the limit.
func TestEnclosingLimits(t *testing.T) {
	mnt := t.TempDir()
	for dir, files := range map[string]map[string]string{
		"":     {"memory.max": "max\n", "pids.max": "max\n"},
		"a":    {"memory.max": "268435456\n", "pids.max": "max\n", "memory.swap.max": "max\n"},
		"a/b":  {"memory.max": "1073741824\n", "pids.max": "40\n"},
		"a/b/": {},
	} {
		if err := os.MkdirAll(filepath.Join(mnt, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range files {
			if err := os.WriteFile(filepath.Join(mnt, dir, f), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := &Host{Mode: Unified, V2: &Hierarchy{Mount: mnt, Root: "/", Own: "/a/b"}}
	swaps := filepath.Join(t.TempDir(), "swaps")
	old := procSwaps
	t.Cleanup(func() { procSwaps = old })
	procSwaps = swaps

	// No swap in use: both limits count.
	if err := os.WriteFile(swaps, []byte("Filename\tType\tSize\tUsed\tPriority\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := EnclosingLimits(h)
	if e.MemoryBytes != 256<<20 || e.MemoryAt != filepath.Join(mnt, "a") || e.Pids != 40 || e.PidsAt != filepath.Join(mnt, "a/b") {
		t.Errorf("no swap: %+v", e)
	}
	// Swap in use and no memory.swap.max of 0: memory does not count.
	if err := os.WriteFile(swaps, []byte("Filename\tType\tSize\tUsed\tPriority\n/swapfile file 1048572 0 -2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := EnclosingLimits(h); e.MemoryBytes != 0 || e.Pids != 40 {
		t.Errorf("swap on: %+v", e)
	}
	// ... unless swap is capped at 0 on the way up.
	if err := os.WriteFile(filepath.Join(mnt, "a", "memory.swap.max"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := EnclosingLimits(h); e.MemoryBytes != 256<<20 {
		t.Errorf("swap capped: %+v", e)
	}
	if e := EnclosingLimits(&Host{Mode: Hybrid}); e != (Enclosing{}) {
		t.Errorf("no cgroup2: %+v", e)
	}
}
